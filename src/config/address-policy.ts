// Addresses Portico never connects to on a tenant's say-so (an ExternalName Service, an auth-url):
// the fixed part of the policy, with no I/O, so the compiler can report a refused auth-url when
// the Ingress is read and the data plane (proxy/external.ts, which adds this pod's own
// addresses) can refuse the same addresses after DNS. docs/design.md, "ExternalName".
//
// Refused: loopback, unspecified / "this network", link-local (169.254.0.0/16 and fe80::/10,
// where most clouds put their metadata service), and the instance-metadata and credential
// services that live outside link-local:
// - AWS: the IMDS IPv6 endpoint fd00:ec2::254 (EC2 User Guide, "Retrieve instance metadata")
//   and the EKS Pod Identity Agent's fd00:ec2::23 (EKS User Guide, "Set up the Amazon EKS Pod
//   Identity Agent"; it hands out IAM credentials);
// - Google Cloud: the metadata server's IPv6 address fd20:ce::254 (IPv6-only instances);
// - Alibaba Cloud: 100.100.100.200 (ECS instance metadata), inside 100.64.0.0/10, which stays
//   allowed otherwise (carrier-grade NAT, some VPCs);
// - Oracle Cloud: 192.0.0.192, the older OCI/Oracle Cloud metadata address;
// - Azure: 168.63.129.16, the WireServer (VM agent configuration, extension settings);
// - Scaleway: fd00:42::42, the IPv6 metadata address.
// Azure IMDS, GCP, DigitalOcean, Huawei, OpenStack, Hetzner, Tencent (169.254.0.23) and
// Scaleway's IPv4 address are all in 169.254.0.0/16, refused as link-local.
// Each IPv4 range is refused in every spelling that reaches it (v4Everywhere).
import { isIP } from "node:net";
import { cidrMatcher } from "./cidr.ts";

/**
 * An IPv4 range in every spelling that reaches it: as written (BlockList also matches it
 * against the IPv4-mapped ::ffff:a.b.c.d, RFC 4291 §2.5.5.2), IPv4-compatible (::a.b.c.d,
 * RFC 4291 §2.5.5.1, deprecated but still parsed) and NAT64 (64:ff9b::a.b.c.d, RFC 6052 §2.1:
 * a NAT64 gateway on the path turns it into the IPv4 address).
 */
export function v4Everywhere(cidr: string): string[] {
  const [address, prefix] = cidr.split("/") as [string, string];
  const v6 = 96 + Number(prefix);
  return [cidr, `::${address}/${v6}`, `64:ff9b::${address}/${v6}`];
}

export const METADATA_REASON = "a cloud instance-metadata service";

// In this order: "::1" is loopback before the IPv4-compatible 0.0.0.0/8 (::/104) holds it.
const REFUSED: readonly (readonly [reason: string, matches: (ip: string) => boolean])[] = [
  ["loopback", cidrMatcher([...v4Everywhere("127.0.0.0/8"), "::1/128"])], // RFC 1122 §3.2.1.3, RFC 4291 §2.5.3
  ["unspecified", cidrMatcher([...v4Everywhere("0.0.0.0/8"), "::/128"])], // "this host on this network", RFC 4291 §2.5.2
  ["link-local", cidrMatcher([...v4Everywhere("169.254.0.0/16"), "fe80::/10"])], // RFC 3927, RFC 4291 §2.5.6
  [
    METADATA_REASON,
    cidrMatcher([
      ...v4Everywhere("100.100.100.200/32"), ...v4Everywhere("192.0.0.192/32"), ...v4Everywhere("168.63.129.16/32"),
      "fd00:ec2::254/128", "fd00:ec2::23/128", "fd20:ce::254/128", "fd00:42::42/128",
    ]),
  ],
];

/** Why this IP literal is never connected to, whatever pod Portico runs in, or null. */
export function fixedAddressRefusal(address: string): string | null {
  // A zone id ("fe80::1%eth0") or anything odd: refuse rather than guess.
  if (address.includes("%") || isIP(address) === 0) return "not an IP address";
  for (const [why, matches] of REFUSED) if (matches(address)) return why;
  return null;
}

/**
 * Names that resolve to a refused address by definition, so a URL naming one can be refused
 * before any lookup: `localhost` and every name under it (RFC 6761 §6.3), and the cloud
 * metadata names (Google Cloud's metadata.google.internal and metadata.goog, AWS's
 * instance-data, Tencent Cloud's metadata.tencentyun.com).
 */
const METADATA_NAMES: ReadonlySet<string> = new Set(["metadata.google.internal", "metadata.goog", "instance-data", "instance-data.ec2.internal", "metadata.tencentyun.com"]);

/**
 * Why a URL's host (as WHATWG URL gives it: lower case, IPv4 normalised, IPv6 in brackets) is
 * never connected to, or null when only a lookup can tell.
 */
export function fixedHostRefusal(hostname: string): string | null {
  const bare = hostname.startsWith("[") && hostname.endsWith("]") ? hostname.slice(1, -1) : hostname;
  if (isIP(bare) !== 0) return fixedAddressRefusal(bare);
  const name = bare.toLowerCase().replace(/\.$/, "");
  if (name === "localhost" || name.endsWith(".localhost")) return "loopback";
  if (METADATA_NAMES.has(name)) return METADATA_REASON;
  return null;
}
