// proxy-ssl-* as Bun's fetch `tls` option (measured on Bun 1.4.5: cert/key are presented, ca
// with rejectUnauthorized verifies, serverName is the SNI, minVersion/maxVersion take protocol
// numbers, a cipher list BoringSSL cannot use fails the connection, and fetch pools
// connections by the whole option, so a connection made with one client certificate is not
// reused for another). docs/design.md, "TLS to the pods".
import { X509Certificate } from "node:crypto";
import { checkServerIdentity, type PeerCertificate } from "node:tls";
import type { UpstreamTls } from "../../table/types.ts";

type FetchTls = Record<string, unknown>;
const built = new WeakMap<UpstreamTls, FetchTls>();

/**
 * Whether the chain from `leaf` to a self-signed certificate through `trusted` stays within
 * OpenSSL's verify depth `depth` (levels 0..depth+1: the peer is level 0, the trust anchor at
 * most depth+1; SSL_CTX_set_verify_depth(3)). Bun does not show the certificates the pod sent
 * beside its own, so an issuer that is not in ca.crt cannot be counted: refused.
 */
export function withinDepth(leaf: X509Certificate, trusted: readonly X509Certificate[], depth: number): boolean {
  let cur = leaf;
  for (let level = 0; level <= depth + 1; level++) {
    if (level > 0 && cur.checkIssued(cur)) return true;
    const up = trusted.find((c) => c !== cur && cur.checkIssued(c) && cur.verify(c.publicKey));
    if (up === undefined) return level > 0;
    cur = up;
  }
  return false;
}

/**
 * The check of the pod's certificate once its chain verified against ca.crt: the name is
 * proxy_ssl_name's (not the address connected to), checked as nginx's ngx_ssl_check_host does
 * (subjectAltName, RFC 6125), then the depth.
 */
function identityCheck(t: UpstreamTls, ca: string): (host: string, cert: PeerCertificate) => Error | undefined {
  const trusted = (ca.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []).map((p) => new X509Certificate(p));
  return (_host, cert) => {
    const wrong = checkServerIdentity(t.checkName, cert);
    if (wrong !== undefined) return wrong;
    const raw = (cert as { raw?: Buffer }).raw;
    if (raw === undefined || !withinDepth(new X509Certificate(raw), trusted, t.depth)) return new Error(`certificate chain longer than proxy-ssl-verify-depth ${t.depth}`);
    return undefined;
  };
}

const VERSION_NAME: Readonly<Record<number, string>> = { 0x0303: "TLSv1.2", 0x0304: "TLSv1.3" };
const builtH2 = new WeakMap<UpstreamTls, FetchTls>();

/**
 * The options for `t`, made once per route option (the table holds it frozen) in one of the two
 * spellings: protocol versions as fetch's numbers or node:tls's names, SNI as `serverName` or
 * `servername`.
 */
function tlsOptions(t: UpstreamTls, cache: WeakMap<UpstreamTls, FetchTls>, version: (n: number) => unknown, sniKey: "serverName" | "servername"): FetchTls {
  const hit = cache.get(t);
  if (hit !== undefined) return hit;
  const o: FetchTls = { rejectUnauthorized: t.verify, minVersion: version(t.minVersion), maxVersion: version(t.maxVersion) };
  // Always the suites proxy-ssl-ciphers selects (DEFAULT's when unset), evaluated as OpenSSL
  // reads the string (annotations/upstream-tls.ts), never the string itself, which BoringSSL
  // would read otherwise (docs/design.md "TLS cipher strings").
  o.ciphers = t.ciphers;
  if (t.cert !== null && t.key !== null) {
    o.cert = t.cert;
    o.key = t.key;
  }
  // nginx sends SNI only with proxy_ssl_server_name on (its default is off).
  if (t.sni !== null) o[sniKey] = t.sni;
  if (t.verify && t.ca !== null) {
    o.ca = t.ca;
    o.checkServerIdentity = identityCheck(t, t.ca);
  }
  Object.freeze(o);
  cache.set(t, o);
  return o;
}

/**
 * The node:http2 connect options for `t` (GRPCS pods, h2-pool.ts), the same settings in
 * node:tls's spelling (measured on Bun 1.4.5: cert/key presented, ca and checkServerIdentity
 * applied, minVersion/maxVersion as names, servername as SNI; a cipher list BoringSSL cannot
 * use throws from connect, which the pool reports as a failed connect).
 */
export function upstreamTlsH2Options(t: UpstreamTls): FetchTls {
  return tlsOptions(t, builtH2, (n) => VERSION_NAME[n], "servername");
}

/** The fetch `tls` option for `t`. */
export function upstreamTlsOptions(t: UpstreamTls): FetchTls {
  return tlsOptions(t, built, (n) => n, "serverName");
}
