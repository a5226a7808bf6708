// Addresses Portico never connects to on a tenant's say-so (an ExternalName Service, an auth-url):
// the fixed part of the policy, with no I/O, so the compiler can report a refused auth-url when
// the Ingress is read and the data plane (proxy/upstream/external.ts, which adds this pod's own
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
// Each IPv4 range is refused in every spelling that reaches it: IPv4-mapped, -compatible and
// -translated, NAT64 (v4Everywhere), 6to4 and NAT64's local-use prefix (embeddedIPv4).
import { isIP } from "node:net";
import { cidrMatcher } from "./cidr.ts";

/**
 * An IPv4 range in every spelling that reaches it: as written (BlockList also matches it
 * against the IPv4-mapped ::ffff:a.b.c.d, RFC 4291 §2.5.5.2), IPv4-compatible (::a.b.c.d,
 * RFC 4291 §2.5.5.1, deprecated but still parsed), IPv4-translated (::ffff:0:a.b.c.d, RFC 2765
 * §2.1, what a SIIT translator turns back into the IPv4 address) and NAT64 with the well-known
 * prefix (64:ff9b::a.b.c.d, RFC 6052 §2.1: a NAT64 gateway on the path turns it into the IPv4
 * address). The spellings whose IPv4 part is not the last 32 bits are embeddedIPv4's.
 */
export function v4Everywhere(cidr: string): string[] {
  const [address, prefix] = cidr.split("/") as [string, string];
  const v6 = 96 + Number(prefix);
  return [cidr, `::${address}/${v6}`, `::ffff:0:${address}/${v6}`, `64:ff9b::${address}/${v6}`];
}

/** An IPv6 literal (isIP 6, no zone) as its 16 bytes. */
function v6Bytes(address: string): Uint8Array {
  let text = address.toLowerCase();
  const out = new Uint8Array(16);
  // A trailing dotted quad is the last 32 bits.
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  let tail: number[] = [];
  if (quad !== null) {
    tail = quad.slice(1).map(Number);
    text = text.slice(0, quad.index);
    text = text.endsWith("::") ? text : text.slice(0, -1);
  }
  const [head, rest] = text.includes("::") ? (text.split("::") as [string, string]) : [text, null];
  const groups = (s: string) => (s === "" ? [] : s.split(":").map((g) => Number.parseInt(g, 16)));
  const front = groups(head);
  const back = rest === null ? [] : groups(rest);
  const words = 8 - tail.length / 2;
  const all = [...front, ...new Array<number>(words - front.length - back.length).fill(0), ...back];
  all.forEach((w, i) => {
    out[2 * i] = w >> 8;
    out[2 * i + 1] = w & 0xff;
  });
  tail.forEach((b, i) => (out[12 + i] = b));
  return out;
}

const quadOf = (b: Uint8Array, at: readonly number[]) => at.map((i) => b[i]).join(".");

/**
 * The IPv4 addresses an IPv6 address leads to through a translator or tunnel when they are not
 * its last 32 bits (those are v4Everywhere's): 6to4, 2002:a.b.c.d::/48 (RFC 3056 §2, a relay
 * sends it to the IPv4 address), and NAT64 with the local-use prefix 64:ff9b:1::/48 (RFC 8215),
 * where the network picks the prefix length and so where the IPv4 address sits (RFC 6052 §2.2:
 * after a /48, /56, /64 or /96 prefix, skipping bits 64-71). `strict` is false for the NAT64
 * readings: all but one of them read a zero-filled field, so they are checked against the
 * addresses that are never zero (loopback, link-local, metadata), not against 0.0.0.0/8.
 */
export function embeddedIPv4(address: string): { readonly v4: string; readonly strict: boolean }[] {
  if (isIP(address) !== 6 || address.includes("%")) return [];
  const b = v6Bytes(address);
  if (b[0] === 0x20 && b[1] === 0x02) return [{ v4: quadOf(b, [2, 3, 4, 5]), strict: true }];
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && b[4] === 0x00 && b[5] === 0x01) {
    return [[6, 7, 9, 10], [7, 9, 10, 11], [9, 10, 11, 12], [12, 13, 14, 15]].map((at) => ({ v4: quadOf(b, at), strict: false }));
  }
  return [];
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
  for (const { v4, strict } of embeddedIPv4(address)) {
    for (const [why, matches] of REFUSED) if ((strict || why !== "unspecified") && matches(v4)) return why;
  }
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
  // Every trailing dot: "localhost.." is no valid name, but a resolver that drops empty labels
  // would still answer it.
  const name = bare.toLowerCase().replace(/\.+$/, "");
  if (name === "localhost" || name.endsWith(".localhost")) return "loopback";
  if (METADATA_NAMES.has(name)) return METADATA_REASON;
  return null;
}
