// Request validation before routing (issue 3 point 2). Every failure is a 400 with a fixed body,
// and nothing reaches a backend. Bun's parser already rejects several of these (measured, see
// DESIGN §5); each rule is still checked here so the policy is ours, not a parser detail.
import { ProxyError } from "./errors.ts";
import { isFilteredRequestHeader } from "./headers.ts";
import { normalizeTarget, type NormalizedTarget } from "./normalize.ts";

export interface ValidRequest {
  /** Host header as received (forwarded unchanged, RFC 9110 §7.2), "" when absent (HTTP/1.0). */
  readonly host: string;
  /** Lowercased host name without port or trailing dot: the routing key (DESIGN §4). */
  readonly hostname: string;
  /** Port from the Host header, or null. */
  readonly port: string | null;
  readonly target: NormalizedTarget;
  /** Names of the fields upstreamHeaders() may drop (collected in the same pass as the syntax check). */
  readonly filtered: readonly string[];
}

// RFC 3986 §3.2.2 reg-name restricted to DNS-style names (letters, digits, "-", "_", dots),
// which also covers IPv4address. Userinfo ("@"), commas (Bun joins a repeated Host with ", "),
// spaces and every other character are refused.
const REG_NAME = /^[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?)*\.?$/i;
// RFC 3986 §3.2.2 IP-literal (IPv6 only; no zone ids, no IPvFuture).
const IP_LITERAL = /^\[[0-9a-f:.]{2,45}\]$/i;
const PORT = /^[0-9]{1,5}$/;
// RFC 9110 §5.1: field-name = token; §5.6.2 tchar.
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// RFC 9110 §5.5: field values are VCHAR / obs-text / SP / HTAB; CR, LF, NUL and other CTLs are
// invalid ("a recipient ... MUST either reject the message or replace each of those characters").
const CTL = /[\x00-\x08\x0a-\x1f\x7f]/;

function splitHost(host: string): { name: string; port: string | null } | null {
  let name = host;
  let port: string | null = null;
  const colon = host.lastIndexOf(":");
  if (colon >= 0 && host.indexOf("]", colon) < 0) {
    name = host.slice(0, colon);
    port = host.slice(colon + 1);
    if (!PORT.test(port) || Number(port) > 65535) return null;
  }
  if (name.length === 0 || name.length > 253) return null;
  if (name.startsWith("[")) {
    if (!IP_LITERAL.test(name)) return null;
  } else if (!REG_NAME.test(name)) {
    return null;
  }
  return { name, port };
}

/** Path (and query) part of Bun's `req.url`: it is absolute (`http://authority/path`) or a bare path. */
export function targetOf(url: string): { authority: string | null; target: string } {
  if (url.charCodeAt(0) === 0x2f) return { authority: null, target: url };
  const s = url.indexOf("://");
  if (s < 0) return { authority: null, target: url };
  const slash = url.indexOf("/", s + 3);
  if (slash < 0) return { authority: url.slice(s + 3), target: "/" };
  return { authority: url.slice(s + 3, slash), target: url.slice(slash) };
}

function withoutDefaultPort(a: string): string {
  return a.endsWith(":80") || a.endsWith(":443") ? a.slice(0, a.lastIndexOf(":")) : a;
}

export function validateRequest(req: Request): ValidRequest | ProxyError {
  // RFC 9110 §9.3.6: CONNECT asks for a tunnel; we are a reverse proxy, not a forward proxy.
  if (req.method === "CONNECT") return new ProxyError("BadRequest", "CONNECT");

  // RFC 9110 §5.1/§5.5 field syntax (defence in depth: Bun already answers 400 to most).
  const filtered: string[] = [];
  for (const [k, v] of req.headers) {
    if (!TOKEN.test(k) || CTL.test(v)) return new ProxyError("BadRequest", "header syntax");
    if (isFilteredRequestHeader(k)) filtered.push(k);
  }

  // RFC 9112 §6.1: we only accept a lone `chunked` as Transfer-Encoding (any other coding
  // leaves framing to interpretation: request smuggling), and §6.3 rule 3: Transfer-Encoding
  // together with Content-Length is rejected rather than guessed.
  const te = req.headers.get("transfer-encoding");
  const cl = req.headers.get("content-length");
  if (te !== null && (te.toLowerCase() !== "chunked" || cl !== null)) {
    return new ProxyError("BadRequest", "transfer-encoding");
  }
  // RFC 9110 §8.6: Content-Length = 1*DIGIT (a repeated header joined by Bun has a comma).
  if (cl !== null && !/^[0-9]{1,16}$/.test(cl)) return new ProxyError("BadRequest", "content-length");

  // RFC 9112 §3.2: a request with more than one Host field line, or an invalid Host value,
  // MUST get 400. Bun joins repeated Host lines with ", " and accepts userinfo: both fail the
  // grammar below. An HTTP/1.1 request without Host is already refused by Bun; an HTTP/1.0
  // request without one is routed by the empty host (hostless rules, defaults).
  const host = req.headers.get("host");
  let hostname = "";
  let port: string | null = null;
  if (host !== null) {
    const parts = splitHost(host);
    if (parts === null) return new ProxyError("BadRequest", "host");
    hostname = parts.name.toLowerCase();
    if (hostname.endsWith(".")) hostname = hostname.slice(0, -1);
    port = parts.port;
  }

  const { authority, target } = targetOf(req.url);
  // RFC 9112 §3.2.2: with an absolute-form target the authority there wins over Host; we
  // route by Host, so the two must agree or the request is refused. (Bun 1.4.5 rebuilds
  // req.url from Host and drops the absolute-form authority, so today this cannot differ;
  // the check keeps the rule if that changes.)
  if (authority !== null && host !== null && authority !== host) {
    const a = withoutDefaultPort(authority.toLowerCase());
    const h = withoutDefaultPort(host.toLowerCase());
    if (a !== h && a !== h.replace(/\.(:|$)/, "$1")) return new ProxyError("BadRequest", "authority");
  }

  const normalized = normalizeTarget(target);
  if (normalized === null) return new ProxyError("BadRequest", "path");
  return { host: host ?? "", hostname, port, target: normalized, filtered };
}
