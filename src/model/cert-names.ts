// The names a server certificate is matched against, one rule for the TLS layer (tls/pem.ts,
// which picks the certificate served) and explain (compile/explain.ts, which reports it).
import type { X509Certificate } from "node:crypto";

/**
 * DNS entries of subjectAltName, lowercased, one trailing dot cut; the CN only when there is no
 * DNS entry (RFC 6125 §6.4.4), as ingress-nginx's verifyHostname (internal/ingress/controller/
 * certificate.go) reads them: `len(c.DNSNames) > 0`, so a certificate with only IP SANs is
 * still matched by its CN.
 */
export function certificateNames(leaf: X509Certificate): string[] {
  const bare = (n: string) => n.toLowerCase().replace(/\.$/, "");
  const dns = (leaf.subjectAltName ?? "")
    .split(", ")
    .filter((e) => e.startsWith("DNS:"))
    .map((e) => bare(e.slice(4)));
  if (dns.length > 0) return dns;
  const cn = /(?:^|\n)CN=([^\n]*)/.exec(leaf.subject)?.[1];
  return cn ? [bare(cn)] : [];
}
