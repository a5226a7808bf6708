// The names a server certificate is matched against, one rule for the TLS layer (model/pem-check.ts and
// tls/sni.ts, which pick the certificate served), the compiler (compile/tls.ts, the second pass
// of extractTLSSecretName) and explain (compile/explain.ts, which reports it).
import type { X509Certificate } from "node:crypto";
import { tlsCovers } from "./hosts.ts";

/**
 * The `*.` name one label above `host` (`a.foo.com` -> `*.foo.com`), or null for a name with no
 * dot, or one that is itself a wildcard. The SNI tables of Bun.serve and node:tls match a `*.`
 * entry for any one first label (RFC 6125 §6.4.3), so this is the entry that would catch `host`.
 */
export const wildcardOf = (host: string): string | null => {
  const dot = host.indexOf(".");
  return dot > 0 && !host.startsWith("*.") ? `*${host.slice(dot)}` : null;
};

/** Does one of a certificate's names (maybe `*.x`, one whole first label: RFC 6125 §6.4.3) cover `host`? */
export const namesCover = (names: readonly string[], host: string): boolean => names.some((n) => tlsCovers(n, host));

/**
 * DNS entries of subjectAltName, lowercased, one trailing dot cut; the CN only when there is no
 * DNS entry (RFC 6125 §6.4.4), as ingress-nginx's verifyHostname (internal/ingress/controller/
 * certificate.go) reads them: `len(c.DNSNames) > 0`, so a certificate with only IP SANs is
 * still matched by its CN.
 */
export function certificateNames(leaf: X509Certificate): string[] {
  const dns = dnsNames(leaf);
  if (dns.length > 0) return dns;
  const cn = /(?:^|\n)CN=([^\n]*)/.exec(leaf.subject)?.[1];
  return cn ? [bare(cn)] : [];
}

const bare = (n: string) => n.toLowerCase().replace(/\.$/, "");

/**
 * The DNS entries of subjectAltName only, lowercased, one trailing dot cut: what Go's x509
 * VerifyHostname reads (it ignores the CN), as ingress-nginx's extractTLSSecretName calls it
 * when no spec.tls entry lists the host.
 */
export function dnsNames(leaf: X509Certificate): string[] {
  return (leaf.subjectAltName ?? "")
    .split(", ")
    .filter((e) => e.startsWith("DNS:"))
    .map((e) => bare(e.slice(4)));
}
