// Request validation before routing. Every failure is a 400 with a fixed body, and nothing
// reaches a backend. Bun's parser already rejects several of these (docs/design.md "Bun facts");
// each rule is still checked here so the policy is ours, not a parser detail. Host and target
// go through the normaliser explain uses too (src/request/).
import { normaliseRequestHostInto } from "../../request/host.ts";
import { normaliseTargetInto, type NormalisedTarget } from "../../request/target.ts";
import { ProxyError } from "../../http/errors.ts";
import { MIN_HEADER_BUFFER_SIZE } from "../../config/header-buffers.ts";
import { isFilteredPlainHeader, isFilteredRequestHeader, PLAIN_NAME } from "../../http/headers.ts";

export interface ValidRequest {
  /** Host header as received (forwarded unchanged, RFC 9110 §7.2), "" when absent (HTTP/1.0). */
  readonly host: string;
  /** Lowercased host name without port or trailing dot: the routing key. */
  readonly hostname: string;
  /** Port from the Host header, or null. */
  readonly port: string | null;
  /** The routed path is the forwarded path (src/request/target.ts). */
  readonly target: NormalisedTarget;
  /**
   * Names of the fields upstreamHeaders() may drop but Connection (collected in the same pass as
   * the syntax check; RequestFields.filtered).
   */
  readonly filtered: readonly string[];
}

// RFC 9110 §5.1: field-name = token; §5.6.2 tchar.
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// RFC 9110 §5.5: field values are VCHAR / obs-text / SP / HTAB; CR, LF, NUL and other CTLs are
// invalid ("a recipient ... MUST either reject the message or replace each of those characters").
const CTL = /[\x00-\x08\x0a-\x1f\x7f]/;

// An empty port ("a.test:") is the default one too (RFC 3986 §3.2.3, §6.2.3): the URL parser
// drops it from req.url's authority while Host keeps it.
function withoutDefaultPort(a: string): string {
  return a.endsWith(":80") || a.endsWith(":443") || a.endsWith(":") ? a.slice(0, a.lastIndexOf(":")) : a;
}

const NONE: readonly string[] = [];

// The field pass's running state, module-level so that visiting a field allocates no closure,
// no iterator and no [name, value] pair: Headers.forEach calls back synchronously and nothing
// in the callback validates again, so one set of variables serves every request (the same
// pattern as headers.ts scanResponseHeaders). Side by side with a for-of over the entries:
// bench/results/allocations.md.
// The same pass keeps the values the pipeline reads of a few fields, so it asks Headers for
// none of them again (Content-Length, Transfer-Encoding, Host, Connection, X-Request-ID: five
// native calls and two strings per plain GET, bench/allocations.ts; the step that moved a plain
// GET side by side, 1.03× main with the cuts before it: bench/paired.ts,
// bench/results/paired-vs-main-alloc2.md); forEach gives a repeated field joined as get() does.
let badField = false;
let filteredNow: string[] | null = null;
let hostNow: string | null = null;
let clNow: string | null = null;
let teNow: string | null = null;
let connectionNow: string | null = null;
let requestIdNow: string | null = null;
let headNow = 0;
let longestNow = 0;

/**
 * nginx reads each header line into one of its large_client_header_buffers (ingress-nginx:
 * `4 8k`) and answers 400 "Request Header Or Cookie Too Large" to a line that does not fit, its
 * CRLF included, or to a head past the last buffer (ngx_http_request.c
 * ngx_http_alloc_large_header_buffer; measured on nginx 1.22: 8,192 bytes pass, 8,193 get 400,
 * whatever the whitespace). Bun hands over the name and the trimmed value only, so a line is
 * counted as `name: value` CRLF, the one space RFC 9110 §5.6.3 prefers. The pass sums the lines
 * and keeps the longest for admit.ts; a value Bun joined from repeated lines (", ", or "; " for
 * Cookie) may come from short lines and is never the longest (it still counts in the sum, a
 * little short: one name for all its lines). A line no longer than the smallest buffer size
 * nginx accepts (MIN_HEADER_BUFFER_SIZE) fits any configuration, joined or not: it skips that check.
 */
const FIELD_LINE_EXTRA = ": \r\n".length;

function visitField(v: string, k: string): void {
  const line = k.length + v.length + FIELD_LINE_EXTRA;
  headNow += line;
  if (line > longestNow && (line <= MIN_HEADER_BUFFER_SIZE || !(v.includes(", ") || (k === "cookie" && v.includes("; "))))) longestNow = line;
  switch (k) {
    case "host":
      hostNow = v;
      break;
    case "content-length":
      clNow = v;
      break;
    case "transfer-encoding":
      teNow = v;
      break;
    case "connection":
      connectionNow = v;
      break;
    case "x-request-id":
      requestIdNow = v;
      break;
  }
  // Nearly every name is letters, digits and "-": one test then says it is a token and that
  // nginx would not ignore it, and the cheaper filter list applies. Another name must still be
  // a token, and is then filtered by the full rule (isFilteredRequestHeader, nginx's
  // ignore_invalid_headers: such a name always is); the rare path pays for the second test.
  if (PLAIN_NAME.test(k)) {
    if (CTL.test(v)) badField = true;
    // Connection is kept as its value (connectionField), which upstreamHeaders takes instead.
    else if (k !== "connection" && isFilteredPlainHeader(k)) (filteredNow ??= []).push(k);
  } else if (!TOKEN.test(k) || CTL.test(v)) badField = true;
  else if (isFilteredRequestHeader(k)) (filteredNow ??= []).push(k);
}

/** What one pass over a request's fields found (readFields). */
export interface RequestFields {
  /** A field name or value breaks RFC 9110's syntax (400). */
  badField: boolean;
  /**
   * The names isFilteredRequestHeader() holds for but Connection (upstreamHeaders drops from
   * these only, given connectionField as ForwardContext.connection).
   */
  filtered: readonly string[];
  /** Host and Connection as received, or null. */
  hostField: string | null;
  cl: string | null;
  te: string | null;
  connectionField: string | null;
  requestId: string | null;
  /** The header lines' bytes, `name: value` and CRLF each, the blank line after them included. */
  headBytes: number;
  /** The longest header line, CRLF included. */
  longestField: number;
}

const fieldsNow: RequestFields = { badField: false, filtered: NONE, hostField: null, cl: null, te: null, connectionField: null, requestId: null, headBytes: 0, longestField: 0 };

/** One pass over `h`'s fields; the answer is shared, valid until the next call (copy what is kept). */
export function readFields(h: Headers): Readonly<RequestFields> {
  badField = false;
  filteredNow = hostNow = clNow = teNow = connectionNow = requestIdNow = null;
  headNow = 2;
  longestNow = 0;
  h.forEach(visitField);
  const f = fieldsNow;
  f.badField = badField;
  f.filtered = filteredNow ?? NONE;
  f.hostField = hostNow;
  f.cl = clNow;
  f.te = teNow;
  f.connectionField = connectionNow;
  f.requestId = requestIdNow;
  f.headBytes = headNow;
  f.longestField = longestNow;
  return f;
}

/** Where validateInto() puts a valid request's parts (the pipeline's Exchange is one). */
export interface ValidParts {
  host: string;
  hostname: string;
  port: string | null;
  path: string;
  query: string;
}

/** The request's fields read and checked in one call (the pipeline splits it: readFields in open, validateInto in admit). */
export function validateRequest(req: Request): ValidRequest | ProxyError {
  const o: ValidParts = { host: "", hostname: "", port: null, path: "", query: "" };
  const f = readFields(req.headers);
  const e = validateInto(req, f, o);
  return e ?? { host: o.host, hostname: o.hostname, port: o.port, target: { path: o.path, query: o.query }, filtered: f.filtered };
}

/**
 * validateRequest into `out`, which may be written in part when an error is returned: the
 * pipeline's request context takes the parts with no object per request for the result, the
 * split URL, the host or the target (four objects and a string fewer per plain GET,
 * bench/allocations.ts).
 */
export function validateInto(req: Request, f: Readonly<Omit<RequestFields, "requestId" | "connectionField">>, out: ValidParts): ProxyError | null {
  // RFC 9110 §9.3.6: CONNECT asks for a tunnel; we are a reverse proxy, not a forward proxy.
  if (req.method === "CONNECT") return new ProxyError("BadRequest", "CONNECT");

  // RFC 9110 §5.1/§5.5 field syntax (defence in depth: Bun already answers 400 to most).
  if (f.badField) return new ProxyError("BadRequest", "header syntax");
  const { cl, te, hostField: host } = f;

  // RFC 9112 §6.1: we only accept a lone `chunked` as Transfer-Encoding (any other coding
  // leaves framing to interpretation: request smuggling), and §6.3 rule 3: Transfer-Encoding
  // together with Content-Length is rejected rather than guessed.
  if (te !== null && (te.toLowerCase() !== "chunked" || cl !== null)) {
    return new ProxyError("BadRequest", "transfer-encoding");
  }
  // RFC 9110 §8.6: Content-Length = 1*DIGIT (a repeated header joined by Bun has a comma).
  if (cl !== null && !/^[0-9]{1,16}$/.test(cl)) return new ProxyError("BadRequest", "content-length");

  // RFC 9112 §3.2: a request with more than one Host field line, or an invalid Host value,
  // MUST get 400. Bun joins repeated Host lines with ", " and accepts userinfo: both fail
  // normaliseRequestHost's grammar. An HTTP/1.1 request without Host is already refused by
  // Bun; an HTTP/1.0 request without one is routed by the empty host (hostless rules, defaults).
  if (host === null) {
    out.hostname = "";
    out.port = null;
  } else if (!normaliseRequestHostInto(host, out)) return new ProxyError("BadRequest", "host");

  // targetOf(), without its object, and the authority cut out only when it is not the Host.
  const url = req.url;
  let target = url;
  let authority: string | null = null;
  const s = url.charCodeAt(0) === 0x2f ? -1 : url.indexOf("://");
  if (s >= 0) {
    const slash = url.indexOf("/", s + 3);
    const same = host !== null && slash === s + 3 + host.length && url.startsWith(host, s + 3);
    if (same) authority = host;
    else authority = slash < 0 ? url.slice(s + 3) : url.slice(s + 3, slash);
    target = slash < 0 ? "/" : url.slice(slash);
  }
  // RFC 9112 §3.2.2 says an absolute-form target's authority wins over Host. Bun 1.4.5 puts
  // Host in req.url in its place (and drops it when there is no Host), so Portico never sees
  // it: the request is routed by Host and forwarded in origin-form with that Host, which the
  // README states. This check cannot fire today; it refuses a differing authority should a
  // later Bun pass it through, rather than route by one name and forward another.
  if (authority !== null && host !== null && authority !== host) {
    const a = withoutDefaultPort(authority.toLowerCase());
    const h = withoutDefaultPort(host.toLowerCase());
    if (a !== h && a !== h.replace(/\.(:|$)/, "$1")) return new ProxyError("BadRequest", "authority");
  }

  if (!normaliseTargetInto(target, out)) return new ProxyError("BadRequest", "path");
  out.host = host ?? "";
  return null;
}
