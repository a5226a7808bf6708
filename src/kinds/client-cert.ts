// Client certificates (ingress-nginx's auth-tls-*): each request to a route that names a CA is
// checked against the certificate of the connection it came on. docs/design.md, "Client
// certificates", says why the check is per request and not in the handshake: Bun's node:tls
// asks every client for a certificate (requestCert is per server, not per SNI context), and a
// request may name another host than the one its connection was negotiated for.
//
// What nginx does, and what is reproduced here (nginx 1.27, ngx_http_request.c, with the
// SERVER block of ingress-nginx's nginx.tmpl: ssl_verify_client, ssl_verify_depth):
// - ngx_http_set_virtual_server: when the server a request's Host selects verifies client
//   certificates and the connection's SNI names another host, 421 Misdirected Request. A
//   connection without SNI is not checked there; it was negotiated with the default server,
//   which asks for no certificate, so it carries none.
// - ngx_http_process_request: a certificate that failed verification is 400 "The SSL
//   certificate error" (495 inside nginx), unless `optional_no_ca` and the failure is only an
//   untrusted issuer; no certificate with `on` is 400 "No required SSL certificate was sent"
//   (496). `error_page 495 496 = URL` (auth-tls-error-page) turns both into a 302.
// - proxy_set_header ssl-client-verify ($ssl_client_verify: SUCCESS, FAILED:reason, NONE),
//   ssl-client-subject-dn / ssl-client-issuer-dn ($ssl_client_s_dn / _i_dn, RFC 2253), and
//   with auth-tls-pass-certificate-to-upstream ssl-client-cert ($ssl_client_escaped_cert).
// - auth-tls-match-cn: the server block's `if ( $ssl_client_s_dn !~ "<value>" ) { return 403
//   "client certificate unauthorized"; }` (nginx.tmpl), a server rewrite directive, so after
//   the checks above and before every location phase; a request without a certificate has
//   an empty $ssl_client_s_dn.
//
// kinds/certificate.ts registers the kind; the validity check reads the wall clock through
// PolicyCaps.now.
import { X509Certificate } from "node:crypto";
import * as v from "valibot";
import { NGINX_PAGE_TYPE, PLAIN_TYPE } from "../http/status-page.ts";
import { compileHeaderPattern } from "../regex/header-pattern.ts";
import { defineKind, needCaps } from "./define.ts";
import { refusal } from "./refusal.ts";
import { NullableStr, Str, Strings } from "./schema.ts";
import type { PolicyFlow } from "./types.ts";

/**
 * nginx's ssl_verify_client values, and `insecure_fallback`: Gateway API's AllowInsecureFallback
 * (apis/v1 gateway_types.go FrontendValidationModeType: connections are accepted "even if the
 * client certificate is not presented or fails verification"), which refuses nothing and
 * reports the verification in ssl-client-verify as `optional` does.
 */
type Mode = "on" | "off" | "optional" | "optional_no_ca" | "insecure_fallback";

/**
 * Verification failures, as OpenSSL 3 names them in X509_verify_cert_error_string (nginx puts
 * that text after "FAILED:" in $ssl_client_verify).
 */
const REASONS = {
  leafSignature: "unable to verify the first certificate",
  localIssuer: "unable to get local issuer certificate",
  selfSigned: "self-signed certificate",
  selfSignedInChain: "self-signed certificate in certificate chain",
  expired: "certificate has expired",
  notYetValid: "certificate is not yet valid",
  chainTooLong: "certificate chain too long",
  purpose: "unsupported certificate purpose",
  invalidCa: "invalid CA certificate",
} as const;
type Reason = keyof typeof REASONS;

/** nginx's ngx_ssl_verify_error_optional: the failures `optional_no_ca` lets through (an untrusted issuer). */
const OPTIONAL_NO_CA: ReadonlySet<Reason> = new Set(["leafSignature", "localIssuer", "selfSigned", "selfSignedInChain"]);

const CLIENT_AUTH = "1.3.6.1.5.5.7.3.2";

function timeProblem(c: X509Certificate, now: number): Reason | null {
  if (now < c.validFromDate.getTime()) return "notYetValid";
  if (now > c.validToDate.getTime()) return "expired";
  return null;
}

function issues(child: X509Certificate, parent: X509Certificate): boolean {
  try {
    return child.checkIssued(parent) && child.verify(parent.publicKey);
  } catch {
    return false;
  }
}

/**
 * Verify `chain` (leaf first, as sent) against the trust anchors `ca` allowing `depth` CA
 * certificates above the leaf (OpenSSL's verify depth as nginx sets it: 1 = the leaf's issuer
 * is in `ca`). Returns null when trusted, else the failure. Like OpenSSL with nginx's callback,
 * which goes on after an untrusted issuer, a validity-period failure anywhere on the path
 * is the one reported, so `optional_no_ca` does not let an expired certificate through.
 */
function verifyChain(chain: readonly X509Certificate[], ca: readonly X509Certificate[], depth: number, now: number): Reason | null {
  const leaf = chain[0];
  if (leaf === undefined) return "leafSignature";
  const path: X509Certificate[] = [leaf];
  const pool = chain.slice(1);
  let trusted = false;
  let untrusted: Reason | null = null;
  let cur = leaf;
  for (;;) {
    // A CA certificate itself presented as the client's is trusted as it stands (OpenSSL).
    if (ca.some((a) => a.raw.equals(cur.raw))) {
      trusted = true;
      break;
    }
    const anchor = ca.find((a) => issues(cur, a));
    if (anchor !== undefined) {
      path.push(anchor);
      trusted = true;
      break;
    }
    const next = pool.find((p) => !path.includes(p) && issues(cur, p));
    if (next === undefined || path.length > 100) {
      const selfSigned = issues(cur, cur);
      untrusted = selfSigned ? (path.length === 1 ? "selfSigned" : "selfSignedInChain") : path.length === 1 ? "leafSignature" : "localIssuer";
      break;
    }
    if (!next.ca) return "invalidCa";
    path.push(next);
    cur = next;
  }
  for (const c of path) {
    const t = timeProblem(c, now);
    if (t !== null) return t;
  }
  if (untrusted !== null) return untrusted;
  if (trusted && path.length - 1 > depth) return "chainTooLong";
  // OpenSSL's "sslclient" purpose: an extended key usage, when present, must allow clientAuth.
  const eku = leaf.keyUsage;
  if (Array.isArray(eku) && eku.length > 0 && !eku.includes(CLIENT_AUTH) && !eku.includes("2.5.29.37.0")) return "purpose";
  return null;
}

/** nginx's NGX_ESCAPE_URI_COMPONENT: every byte but ALPHA, DIGIT, "-", ".", "_", "~" as %XX. */
function escapeComponent(s: string): string {
  let out = "";
  for (const b of Buffer.from(s, "utf8")) {
    const unreserved = (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) || b === 0x2d || b === 0x2e || b === 0x5f || b === 0x7e;
    out += unreserved ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/**
 * A name in RFC 2253 form as nginx's $ssl_client_s_dn gives it (X509_NAME_print_ex with
 * XN_FLAG_RFC2253): the last RDN first, "," between RDNs, "+" inside one, bytes above 0x7E
 * and controls as \XX. node:crypto's multi-line form is already escaped for RFC 2253 special
 * characters (it prints with ASN1_STRFLGS_ESC_2253 and ESC_CTRL), one RDN a line.
 */
function rfc2253(multiline: string): string {
  const rdns = multiline.split("\n").filter((l) => l !== "").reverse();
  let out = rdns.map((l) => l.replaceAll(" + ", "+")).join(",");
  out = out.replace(/[^\x20-\x7e]/gu, (ch) => [...Buffer.from(ch, "utf8")].map((b) => `\\${b.toString(16).toUpperCase().padStart(2, "0")}`).join(""));
  return out;
}

/**
 * nginx's `return 403 "client certificate unauthorized"`: the text itself is the body, under
 * the default_type (ingress-nginx's `default-type`, text/html) with --ingress-nginx-compat;
 * Portico's own answers are text/plain otherwise.
 */
function unauthorized(flow: PolicyFlow): Response {
  const type = flow.config.ingressNginxCompat ? NGINX_PAGE_TYPE : PLAIN_TYPE;
  return new Response("client certificate unauthorized", {
    status: 403,
    headers: { ...flow.responseHeaders, "content-type": type, "cache-control": "no-store" },
  });
}

function sameHost(sni: string, host: string): boolean {
  const a = sni.toLowerCase().replace(/\.$/, "");
  const b = host.toLowerCase().replace(/\.$/, "");
  return a === b;
}

function mode(v: unknown): Mode {
  if (v === "on" || v === "off" || v === "optional" || v === "optional_no_ca" || v === "insecure_fallback") return v;
  throw new TypeError("verify is not on, off, optional, optional_no_ca or insecure_fallback");
}

const HEADERS = ["ssl-client-cert", "ssl-client-verify", "ssl-client-subject-dn", "ssl-client-issuer-dn"] as const;

/**
 * auth-tls-*: `ca` is null until compile/access.ts reads the Secret (the runner then refuses).
 *
 * `{ verify, depth, errorPage, passCertificate, secret, ca: PEM[] }`. `ca: null` (the Secret not
 * resolved) or anything malformed throws, and the runner answers 500: fails closed.
 */
export const CLIENT_CERT = defineKind("client-cert", "certificate", v.object({
  verify: v.picklist(["on", "off", "optional", "optional_no_ca", "insecure_fallback"]),
  depth: v.pipe(v.number(), v.integer(), v.minValue(1)),
  errorPage: NullableStr,
  passCertificate: v.boolean(),
  /** auth-tls-match-cn: a pattern the subject DN must match (checked when compiled), or null. */
  matchCn: NullableStr,
  secret: Str,
  ca: v.nullable(Strings),
}), (params, caps) => {
  const { now } = needCaps(caps, "client-cert");
  const verify = mode(params.verify);
  const depth = params.depth;
  if (typeof depth !== "number" || !Number.isInteger(depth) || depth < 1) throw new TypeError("depth is not a positive integer");
  const pemList = params.ca;
  if (!Array.isArray(pemList) || pemList.length === 0 || !pemList.every((p) => typeof p === "string")) throw new TypeError("no CA certificates");
  const ca = (pemList as string[]).map((p) => new X509Certificate(p));
  const errorPage = typeof params.errorPage === "string" && params.errorPage !== "" ? params.errorPage : null;
  const pass = params.passCertificate === true;
  // The compiler checked the pattern (annotations/client-certs.ts); one that no longer
  // compiles throws here and the runner answers 500 rather than skip the check.
  let matchCn: ((dn: string) => boolean) | null = null;
  if (typeof params.matchCn === "string") {
    const c = compileHeaderPattern(params.matchCn);
    if (!c.ok) throw new TypeError(`matchCn ${c.reason}`);
    matchCn = c.re.test;
  } else if (params.matchCn !== null && params.matchCn !== undefined) throw new TypeError("matchCn is not a string");

  const fail = (flow: PolicyFlow, message: string): Response =>
    errorPage !== null
      ? new Response(null, { status: 302, headers: { ...flow.responseHeaders, location: errorPage, "cache-control": "no-store" } })
      : refusal(flow, 400, `${message}\n`, {}, message);

  return (flow) => {
    const tls = flow.tls();
    // 421 before anything (ngx_http_set_virtual_server): this host's certificate rules must
    // not be met on a connection negotiated for another name (HTTP/2 connection reuse, or a
    // client sending one SNI and another Host). RFC 9110 §15.5.20: the client may retry on
    // a new connection.
    if (verify !== "off" && tls !== null && tls.servername !== null && !sameHost(tls.servername, flow.hostname)) {
      return refusal(flow, 421, "Misdirected Request\n");
    }
    // Plain HTTP: nginx checks no certificate on its HTTP listener, but the server block's
    // match-cn `if` runs there too, with an empty $ssl_client_s_dn, before the location's
    // HTTPS redirect: 403 unless the pattern matches "".
    if (tls === null && matchCn !== null && !matchCn("")) return unauthorized(flow);
    // No SNI: nginx negotiated with its default server, which asks for no certificate; the
    // request carries none, whatever the client may have sent. Plain HTTP carries none too.
    const leafChain = verify === "off" || tls === null || tls.servername === null ? [] : tls.chain;
    const set: Record<string, string> = {};
    let subject = "";
    if (leafChain.length === 0) {
      if (verify === "on") return fail(flow, "No required SSL certificate was sent");
      set["ssl-client-verify"] = "NONE";
    } else {
      const why = verifyChain(leafChain, ca, depth, now());
      if (why !== null && verify !== "insecure_fallback" && !(verify === "optional_no_ca" && OPTIONAL_NO_CA.has(why))) return fail(flow, "The SSL certificate error");
      const leaf = leafChain[0] as X509Certificate;
      set["ssl-client-verify"] = why === null ? "SUCCESS" : `FAILED:${REASONS[why]}`;
      subject = rfc2253(leaf.subject);
      set["ssl-client-subject-dn"] = subject;
      set["ssl-client-issuer-dn"] = rfc2253(leaf.issuer);
      if (pass) set["ssl-client-cert"] = escapeComponent(leaf.toString());
    }
    if (matchCn !== null && !matchCn(subject)) return unauthorized(flow);
    // What the client sent under these names never reaches the pods: nginx's
    // proxy_set_header replaces them, and drops a field whose value is empty.
    const fields: Record<string, string | null> = {};
    for (const h of HEADERS) fields[h] = set[h] ?? null;
    flow.upstreamRequestHeaders = { ...flow.upstreamRequestHeaders, ...fields };
    return null;
  };
});

const parsedCas = new WeakMap<readonly string[], readonly X509Certificate[] | null>();

/** A stage's CA PEMs parsed, kept per array; null when one does not parse (nothing is trusted then). */
function parsedCa(pems: readonly string[]): readonly X509Certificate[] | null {
  let v = parsedCas.get(pems);
  if (v === undefined) {
    try {
      v = pems.map((p) => new X509Certificate(p));
    } catch {
      v = null;
    }
    parsedCas.set(pems, v);
  }
  return v;
}

/**
 * Whether the certificates a client presented (leaf first) verify against one of `checks`
 * (each a CA list and a depth, as a client-cert stage's params), as this kind verifies them per
 * request. The node:http2 listener asks it once per connection for a Gateway API listener in
 * AllowValidOnly mode (table/client-certs.ts strictClientCas), and closes the connection when
 * it says no. No certificate is never trusted.
 */
export function clientChainTrusted(checks: readonly { readonly ca: readonly string[]; readonly depth: number }[], chain: readonly X509Certificate[], now: number): boolean {
  if (chain.length === 0) return false;
  for (const c of checks) {
    const ca = parsedCa(c.ca);
    if (ca !== null && ca.length > 0 && verifyChain(chain, ca, c.depth, now) === null) return true;
  }
  return false;
}
