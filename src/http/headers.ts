// Header rewriting between client and upstream. Pure (no I/O): the proxy and the policy kinds
// (src/kinds/) both build header blocks with it.
import type { ServerHeader } from "../config/types.ts";
import { VERSION } from "../version.ts";

/** One HTTPHeaderFilter: `set` replaces, `add` appends (`old,new`), `remove` deletes; names lowercased. */
export interface HeaderEdit {
  readonly set: readonly (readonly [string, string])[];
  readonly add: readonly (readonly [string, string])[];
  readonly remove: readonly string[];
}

/**
 * Portico's Server field under --server-header=portico (ingress-nginx's server-tokens: true):
 * product and version as RFC 9110 §10.2.4 has it, naming Portico, never nginx.
 */
export const PORTICO_SERVER = `portico/${VERSION}`;

// RFC 9110 §7.6.1: Connection, and the fields it lists, are hop-by-hop; Proxy-Connection,
// Keep-Alive, TE, Transfer-Encoding and Upgrade are named there as ones a proxy must not
// forward. Trailer (RFC 9110 §6.6.2) describes this hop's framing. Proxy-Authorization and
// Proxy-Authenticate (RFC 9110 §11.7) are addressed to the proxy, not the origin.
// Bun strips none of them in either direction (measured; docs/design.md, "Bun facts measured here").
const HOP_BY_HOP = new Set([
  "connection",
  "proxy-connection",
  "keep-alive",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "proxy-authorization",
  "proxy-authenticate",
]);

// The upstream response fields nginx's proxy module does not pass to the client unless
// proxy_pass_header names them (ngx_http_proxy_module, proxy_hide_header: "Date", "Server",
// "X-Pad" and "X-Accel-..."; the list in ngx_http_proxy_hide_headers is the five below). nginx
// sends its own Date; ingress-nginx sets no proxy_pass_header but Server
// (allow-backend-server-header). Date and Server are dealt with by name (downstreamHeaders);
// these are the ones a scan looks for. nginx's grpc module passes X-Pad; Portico drops it from a
// gRPC answer too (a field no gRPC server sends).
const NGINX_HIDDEN = new Set([
  "x-pad",
  "x-accel-expires",
  "x-accel-redirect",
  "x-accel-limit-rate",
  "x-accel-buffering",
  "x-accel-charset",
]);

/** Whether a (lower-cased) field name is hop-by-hop or addressed to the proxy (HOP_BY_HOP). */
export const isHopByHop = (k: string): boolean => HOP_BY_HOP.has(k);

// Set by us from what we saw; a client-supplied value is a spoof unless it came through a
// trusted proxy (upstreamHeaders: its X-Forwarded-For gives the client address, and with
// --trusted-proxy-headers=all its -Proto, -Port and first -Host are kept).
const FORWARDED = new Set(["x-forwarded-for", "x-forwarded-proto", "x-forwarded-host", "x-forwarded-port", "x-real-ip", "forwarded"]);

// RFC 9110 §5.1 field-name = token.
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

const SANE_ID = /^[A-Za-z0-9._-]{1,200}$/;

/**
 * Names listed in Connection (RFC 9110 §7.6.1), lowercased, or null when none. Every listed
 * field is removed before forwarding except Host: it is not this hop's but the next one's
 * authority (RFC 9110 §7.2), which a proxy always sends (ingress-nginx: proxy_set_header Host
 * $best_http_host). Removed, fetch put the pod's own address there, so a client could make a
 * vhost-routing pod serve another host than the one Portico routed by. The fields Portico sets
 * itself (X-Forwarded-*, X-Real-IP, X-Request-ID) are set after the list is applied.
 */
function connectionListed(h: Headers): Set<string> | null {
  const c = h.get("connection");
  if (c === null) return null;
  const out = new Set<string>();
  for (const part of c.split(",")) {
    const n = part.trim().toLowerCase();
    if (n !== "") out.add(n);
  }
  return out;
}

/**
 * Keep a sane client X-Request-ID (≤ 200 of [A-Za-z0-9._-]); otherwise a fresh one, 32 hex
 * digits as ingress-nginx's $req_id falls back to nginx's $request_id (nginx.tmpl map
 * $http_x_request_id $req_id; nginx: 16 random bytes in hexadecimal).
 */
export function requestIdFrom(id: string | null): string {
  return id !== null && SANE_ID.test(id) ? id : freshRequestId();
}

// Fresh ids are cut from a pool of random bytes (crypto.getRandomValues, refilled every
// ID_POOL requests) and written in hex: one string per request, where a UUID with its dashes
// removed made two (bench/allocations.ts). Also nginx's own $request_id for the access log's
// template when the client named the request (log/template.ts).
const ID_BYTES = 16;
const ID_POOL = 256;
const idPool = Buffer.alloc(ID_BYTES * ID_POOL);
let idNext = ID_POOL;
export function freshRequestId(): string {
  if (idNext === ID_POOL) {
    crypto.getRandomValues(idPool);
    idNext = 0;
  }
  const at = idNext++ * ID_BYTES;
  return idPool.toString("hex", at, at + ID_BYTES);
}

export interface ForwardContext {
  /** Address of the TCP peer. */
  readonly peer: string;
  /** The peer is a trusted proxy believed on X-Forwarded-Proto, -Host and -Port (--trusted-proxy-headers=all). */
  readonly trusted: boolean;
  /**
   * Append the peer to its X-Forwarded-For (trusted for the address, --compute-full-forwarded-for);
   * false: X-Forwarded-For is the client address alone. Absent: `trusted`.
   */
  readonly appendForwardedFor?: boolean;
  readonly scheme: "http" | "https";
  /** Host header as received. */
  readonly host: string;
  readonly port: string | null;
  /** A PROXY protocol header named port 443: X-Forwarded-Proto is https (lua_ingress.lua rewrite()). */
  readonly proxyHttps?: boolean;
  readonly requestId: string;
  /** Forward field names containing "_" (--enable-underscores-in-headers); dropped otherwise. */
  readonly underscores: boolean;
  /** Request fields a policy keeps from the upstream (PolicyFlow.removeHeaders), or null. */
  readonly remove?: readonly string[] | null;
  /** Fields set last (the no-endpoints fallback's, proxy/pipeline/error-pages.ts), or null. */
  readonly extra?: Readonly<Record<string, string>> | null;
  /** Host header sent upstream instead of the client's (upstream-vhost); X-Forwarded-Host keeps the client's. */
  readonly upstreamHost?: string | null;
  /**
   * The client's Connection value as the validation pass read it (null: none), with
   * `filtered`, which then need not list Connection; undefined: read from the headers.
   */
  readonly connection?: string | null;
}

/**
 * The client address: the peer, or, when the peer is a trusted proxy, the right-most
 * X-Forwarded-For entry that is not itself trusted (the left of it can be spoofed).
 */
export function clientIpOf(peer: string, xff: string | null, trusted: boolean, isTrusted: (ip: string) => boolean): string {
  if (!trusted || xff === null) return peer;
  const hops = xff.split(",").map((s) => s.trim()).filter((s) => s !== "");
  for (let i = hops.length - 1; i >= 0; i--) {
    const ip = hops[i] as string;
    if (!isTrusted(ip)) return ip;
  }
  return hops[0] ?? peer;
}

/**
 * Whether upstreamHeaders() may drop a request field of this (lowercased) name. The
 * validation pass, which visits every field anyway, collects these so the common request
 * (none of them) is copied natively instead of field by field (a per-field copy showed in
 * the profile of a small proxied request).
 */
export function isFilteredRequestHeader(k: string): boolean {
  return isFilteredPlainHeader(k) || NOT_ALNUM_DASH.test(k);
}

/** isFilteredRequestHeader() for a name already known to be letters, digits and "-" only (PLAIN_NAME). */
export function isFilteredPlainHeader(k: string): boolean {
  return HOP_BY_HOP.has(k) || FORWARDED.has(k) || ORIGINAL.has(k) || k === "x-request-id" || k === "expect" || k === "proxy" || k.startsWith("sec-websocket-") || k.startsWith("ssl-client-");
}

// nginx's `ignore_invalid_headers on` (ingress-nginx: ignore-invalid-headers, default true):
// a field whose name holds anything but letters, digits and "-" ("_" too with
// underscores_in_headers on) is ignored, never passed upstream (ngx_http_parse.c
// ngx_http_parse_header_line sets r->invalid_header for any other byte; ngx_http_request.c
// ngx_http_process_request_headers then skips the line). Names are lower-cased here.
const NOT_ALNUM_DASH = /[^a-z0-9-]/;
/** A (lower-cased) name of letters, digits and "-" only: an RFC 9110 token nginx never ignores. */
export const PLAIN_NAME = /^[a-z0-9-]+$/;
const NOT_ALNUM_DASH_UNDERSCORE = /[^a-z0-9_-]/;

/** Fields upstreamHeaders() sets from the client's X-Forwarded-For and -Host, never from the client's own copies. */
const ORIGINAL = new Set(["x-original-forwarded-for", "x-original-forwarded-host"]);

/** Whether upstreamHeaders() leaves the client's field `k` (lowercased) out. */
export function dropped(k: string, ctx: ForwardContext, websocket: boolean): boolean {
  if (HOP_BY_HOP.has(k)) return true;
  if (FORWARDED.has(k) && !ctx.trusted) return true;
  if (k === "x-request-id" || k === "expect") return true;
  // httpoxy (CVE-2016-5385): a CGI-style backend turns Proxy into HTTP_PROXY; ingress-nginx
  // blanks it on every request (nginx.tmpl: proxy_set_header Proxy "").
  if (k === "proxy") return true;
  // ingress-nginx sets ssl-client-verify, -subject-dn, -issuer-dn and -cert from the verified
  // client certificate on a server with auth-tls-secret (nginx.tmpl), and passes a client's
  // own copies on every other server, where a backend that trusts them can be told `SUCCESS`
  // by anyone. A client's copies are never Portico's word: dropped on every route, from every
  // peer; on a route with client certificates, kinds/client-cert.ts sets them from the
  // certificate it verified (PolicyFlow.upstreamRequestHeaders, applied after this filter).
  if (k.startsWith("ssl-client-")) return true;
  // nginx ignores header names with underscores unless underscores_in_headers is on
  // (ingress-nginx: enable-underscores-in-headers, default false): many backends (CGI-style
  // environments, Rails, PHP) fold "-" and "_" together, so X_Forwarded_For would reach them
  // as X-Forwarded-For, the field we set, and spoof it.
  if (!ctx.underscores && k.includes("_")) return true;
  // Any other byte outside letters, digits and "-" (`X.Dot`, `X!Y`): ignored as nginx does
  // (NOT_ALNUM_DASH above). Bun.serve has already refused names that are not RFC 9110 tokens.
  if (NOT_ALNUM_DASH_UNDERSCORE.test(k)) return true;
  return websocket && k.startsWith("sec-websocket-");
}

/**
 * Headers for the upstream request. `websocket` also drops the client's Sec-WebSocket-*
 * handshake fields. `filtered`, when given, lists every field of `incoming` for which
 * isFilteredRequestHeader() holds (validateRequest collects it); without it each field is visited.
 */
export function upstreamHeaders(
  incoming: Headers,
  ctx: ForwardContext,
  clientIp: string,
  websocket = false,
  filtered?: readonly string[],
): Headers {
  let out: Headers;
  if (filtered === undefined) {
    const listed = connectionListed(incoming);
    out = new Headers();
    for (const [k, v] of incoming) {
      if ((listed?.has(k) && k !== "host") || dropped(k, ctx, websocket)) continue;
      out.append(k, v);
    }
  } else {
    out = new Headers(incoming);
    // Given the Connection value (ctx.connection), the list may leave Connection out: a client
    // that sends only `Connection: keep-alive` then needs no list (validate.ts readFields; one
    // array fewer per such request, bench/allocations.ts).
    const c = ctx.connection !== undefined ? ctx.connection : filtered.length > 0 ? incoming.get("connection") : null;
    if (c !== null) out.delete("connection");
    if (filtered.length > 0 || c !== null) {
      for (const k of filtered) if (dropped(k, ctx, websocket)) out.delete(k);
      // The common values need no set of names to build and walk: Keep-Alive is HOP_BY_HOP
      // (deleted above), and a field named Close, should one come, goes as the option names it.
      if (c === "close") out.delete("close");
      else if (c !== null && c !== "keep-alive") {
        const listed = connectionListed(incoming);
        // A listed name that is no field name cannot be present; delete() would throw on it.
        // Host stays (connectionListed says why).
        if (listed !== null) for (const n of listed) if (TOKEN.test(n) && n !== "host") out.delete(n);
      }
    }
  }
  // With `filtered`, the client's forwarded fields (FORWARDED and ORIGINAL are filtered names)
  // are known to be absent without asking Headers: the plain request makes five native calls
  // fewer here (with the calls validate.ts readFields saves, 1.026× main side by side:
  // bench/paired.ts, bench/results/paired-vs-main-alloc2.md).
  let sentXff = true;
  let sentXfh = true;
  let sentOriginal = true;
  if (filtered !== undefined) {
    sentXff = sentXfh = sentOriginal = false;
    for (const k of filtered) {
      if (k === "x-forwarded-for") sentXff = true;
      else if (k === "x-forwarded-host") sentXfh = true;
      else if (ORIGINAL.has(k)) sentOriginal = true;
    }
  }
  const xff = sentXff ? incoming.get("x-forwarded-for") : null;
  const xfh = sentXfh ? incoming.get("x-forwarded-host") : null;
  // Host is forwarded as received (RFC 9110 §7.2: the origin needs the client's authority),
  // unless the route names another (upstream-vhost, validated as a Host value when compiled).
  // With forwarded headers believed, ingress-nginx's $best_http_host is the first entry of the
  // received X-Forwarded-Host (lua_ingress.lua rewrite(), parse_x_forwarded_host), sent as both
  // Host and X-Forwarded-Host (nginx.tmpl, the location's proxy_set_header block).
  const fwdHost = ctx.trusted ? firstEntry(xfh) : null;
  // With `filtered` the native copy already holds the client's Host field, which is what
  // ctx.host is (validateRequest read both from these headers): not set again.
  if (ctx.upstreamHost != null && ctx.upstreamHost !== "") out.set("host", ctx.upstreamHost);
  else if (fwdHost !== null) out.set("host", fwdHost);
  else if (ctx.host !== "" && filtered === undefined) out.set("host", ctx.host);
  // nginx.tmpl: X-Forwarded-For is $full_x_forwarded_for ("$http_x_forwarded_for,
  // $realip_remote_addr") with compute-full-forwarded-for, else $remote_addr, the client
  // address the realip module took from a trusted peer's X-Forwarded-For (clientIp).
  const append = ctx.appendForwardedFor ?? ctx.trusted;
  const prior = append ? xff : null;
  out.set("x-forwarded-for", prior !== null && prior !== "" ? `${prior}, ${ctx.peer}` : append ? ctx.peer : clientIp);
  // The value sent is the one set here, or a trusted peer's: read back only in the second case.
  let proto = ctx.trusted ? out.get("x-forwarded-proto") : null;
  if (ctx.proxyHttps === true) out.set("x-forwarded-proto", (proto = "https"));
  else if (proto === null) out.set("x-forwarded-proto", (proto = ctx.scheme));
  // ingress-nginx sets X-Forwarded-Scheme and X-Scheme to the same $pass_access_scheme as
  // X-Forwarded-Proto on every request (nginx.tmpl, the location's proxy_set_header block;
  // test/e2e/settings/forwarded_headers.go). A client's own copies are never passed: Rack
  // and others read X-Forwarded-Scheme as the scheme the client used.
  out.set("x-forwarded-scheme", proto);
  out.set("x-scheme", proto);
  // The fields the client sent, as ingress-nginx passes them on (X-Original-Forwarded-For
  // and -Host, from $http_x_forwarded_for / $http_x_forwarded_host): absent when it sent none,
  // never the client's own X-Original-* copies.
  setOrDelete(out, "x-original-forwarded-for", xff, sentOriginal);
  setOrDelete(out, "x-original-forwarded-host", xfh, sentOriginal);
  if (fwdHost !== null) out.set("x-forwarded-host", fwdHost);
  else if (ctx.host !== "") out.set("x-forwarded-host", ctx.host);
  else out.delete("x-forwarded-host");
  if (!ctx.trusted || !out.has("x-forwarded-port")) {
    out.set("x-forwarded-port", ctx.port ?? (ctx.scheme === "https" ? "443" : "80"));
  }
  out.set("x-real-ip", clientIp);
  out.set("x-request-id", ctx.requestId);
  if (ctx.remove) for (const n of ctx.remove) out.delete(n);
  if (ctx.extra) for (const [k, v] of Object.entries(ctx.extra)) out.set(k, v);
  return out;
}

/** The first entry of X-Forwarded-Host, or null when there is none (lua_ingress.lua parse_x_forwarded_host). */
export function firstForwardedHost(h: Headers): string | null {
  return firstEntry(h.get("x-forwarded-host"));
}

/** firstForwardedHost, given the field's value (or null). */
function firstEntry(v: string | null): string | null {
  if (v === null) return null;
  const comma = v.indexOf(",");
  const first = (comma < 0 ? v : v.slice(0, comma)).trim();
  return first === "" ? null : first;
}

/** `present`: `h` may hold the field already (false: known absent, nothing to delete). */
function setOrDelete(h: Headers, name: string, value: string | null, present: boolean): void {
  if (value === null || value === "") {
    if (present) h.delete(name);
  } else h.set(name, value);
}

/** What one pass over a response's header block found (scanResponseHeaders). */
export interface ResponseHeaderScan {
  /** Size of the block as it was on the wire: field lines, their CRLFs, the blank line (no status line). */
  readonly bytes: number;
  /** The HOP_BY_HOP fields present (lowercased) other than Connection; empty for most responses. */
  readonly hopByHop: readonly string[];
  /** The Connection field's value, or null. */
  readonly connection: string | null;
  /** The Content-Length field's value, or null. */
  readonly contentLength: string | null;
  /** NGINX_HIDDEN fields present (lowercased) other than Date and Server; empty for most responses. */
  readonly nginxHidden: readonly string[];
}

const NONE: readonly string[] = [];

// The pass's running state, module-level so that visiting a field allocates no closure.
// forEach calls back synchronously and nothing in the callback scans again, so one set of
// variables serves every response.
let scanBytes = 0;
let scanHop: string[] | null = null;
let scanConnection: string | null = null;
let scanLength: string | null = null;
let scanHidden: string[] | null = null;
function visitField(value: string, name: string): void {
  scanBytes += name.length + value.length + 4;
  // Connection, which most upstreams send, is kept as its value, not listed: no array for the
  // common answer (bench/allocations.ts).
  if (name === "connection") scanConnection = value;
  else if (HOP_BY_HOP.has(name)) (scanHop ??= []).push(name);
  else if (name === "content-length") scanLength = value;
  // 120: "x", so most names cost one comparison here.
  else if (name.charCodeAt(0) === 120 && NGINX_HIDDEN.has(name)) (scanHidden ??= []).push(name);
}

/**
 * One pass over an upstream response's fields, made once per proxied response: the block's
 * size (Bun's fetch takes up to 1 MiB, measured on 1.4.5; forward.ts bounds it), the
 * hop-by-hop fields present, so downstreamHeaders() deletes only those, and Content-Length for
 * the relay. Headers.forEach, which makes no object per response, measured about 1% of a
 * small proxied request cheaper than Headers.toJSON side by side (and both cheaper than
 * iterating). It joins a repeated field with ", " (two bytes where a repeated line had its own
 * name and CRLF) and gives Set-Cookie lines one by one.
 */
export function scanResponseHeaders(h: Headers): ResponseHeaderScan {
  scanBytes = 2;
  scanHop = null;
  scanConnection = null;
  scanLength = null;
  scanHidden = null;
  h.forEach(visitField);
  return { bytes: scanBytes, hopByHop: scanHop ?? NONE, connection: scanConnection, contentLength: scanLength, nginxHidden: scanHidden ?? NONE };
}

/**
 * Drop the hop-by-hop fields of `h` in place: the fixed ones and those named in Connection.
 * With a scan of `h` (scanResponseHeaders), of the fixed ones only those it saw are deleted;
 * without one every name is tried.
 */
function stripHopByHop(h: Headers, scan?: ResponseHeaderScan): void {
  if (scan !== undefined && scan.hopByHop.length === 0 && scan.connection === null) return;
  const c = scan === undefined ? h.get("connection") : scan.connection;
  if (scan !== undefined && c !== null) h.delete("connection");
  // `keep-alive`, what most upstreams send, names Keep-Alive, which the loop below deletes as
  // HOP_BY_HOP anyway: no list to split for the common answer.
  if (c === "close") h.delete("close");
  else if (c !== null && c !== "keep-alive") {
    for (const part of c.split(",")) {
      const n = part.trim();
      // A listed name that is no field name cannot be present; delete() would throw on it.
      if (TOKEN.test(n)) h.delete(n);
    }
  }
  for (const n of scan?.hopByHop ?? HOP_BY_HOP) h.delete(n);
}

/**
 * Headers for the client response: hop-by-hop removed (`scan`: what scanResponseHeaders found
 * in `upstream`), Set-Cookie lines kept separate.
 * Edits the upstream response's Headers in place and returns them: copying them field by field
 * into a new Headers was ~6% of a small proxied request. Bun's fetch
 * Response headers are mutable (measured on 1.4.5); should that change, the copy is the fallback.
 */
export function downstreamHeaders(
  upstream: Headers,
  requestId: string,
  hsts: string | null,
  added: Readonly<Record<string, string>> | null = null,
  scan?: ResponseHeaderScan,
  server: ServerHeader = "backend",
  nginxHidden = false,
): Headers {
  let out = upstream;
  try {
    stripHopByHop(out, scan);
  } catch {
    out = new Headers(upstream);
    stripHopByHop(out, scan);
  }
  // --server-header: the pod's field (Portico's default), none (ingress-nginx's server-tokens
  // false: nginx's proxy module hides the pod's and nginx.tmpl's `more_clear_headers Server`
  // clears nginx's own), or Portico's (server-tokens true: nginx's own, the pod's hidden).
  if (server === "none") out.delete("server");
  else if (server === "portico") out.set("server", PORTICO_SERVER);
  // --ingress-nginx-compat: the other fields nginx's proxy module hides (NGINX_HIDDEN). Without
  // the pod's Date the listener writes its own, as nginx does (Bun.serve, node:http and
  // node:http2 each add Date to an answer that has none; measured on 1.4.5).
  if (nginxHidden) {
    out.delete("date");
    for (const n of scan?.nginxHidden ?? NGINX_HIDDEN) out.delete(n);
  }
  out.set("x-request-id", requestId);
  if (hsts !== null) out.set("strict-transport-security", hsts);
  if (added !== null) addHeaders(out, added);
  return out;
}

/**
 * A route policy's headers on a proxied response (the CORS stage's): each replaces the
 * backend's field, as nginx's more_set_headers does, except Vary, whose member is added to the
 * backend's list unless it is there already or the list is `*` (RFC 9110 §12.5.5).
 */
function addHeaders(out: Headers, added: Readonly<Record<string, string>>): void {
  for (const [k, val] of Object.entries(added)) {
    if (k !== "vary") {
      out.set(k, val);
      continue;
    }
    const prior = out.get("vary");
    if (prior === null || prior.trim() === "") out.set("vary", val);
    else {
      const members = prior.split(",").map((m) => m.trim().toLowerCase());
      if (!members.includes("*") && !members.includes(val.toLowerCase())) out.set("vary", `${prior}, ${val}`);
    }
  }
}

/**
 * Gateway API HTTPHeaderFilters on an answer's fields, in order (HTTPHeaderFilter: set
 * replaces, add appends to the value there is as `old,new`, the conformance test's
 * expectation and equivalent to a second field line by RFC 9110 §5.3, remove deletes). A
 * Set-Cookie added is a line of its own: cookies cannot be joined by commas (RFC 6265 §3).
 * The names are checked when compiled: never hop-by-hop nor Content-Length, which frame the relay.
 */
export function editHeaders(out: Headers, edits: readonly HeaderEdit[]): void {
  for (const e of edits) {
    for (const [k, v] of e.set) out.set(k, v);
    for (const [k, v] of e.add) {
      if (k === "set-cookie") {
        out.append(k, v);
        continue;
      }
      const old = out.get(k);
      out.set(k, old === null ? v : `${old},${v}`);
    }
    for (const k of e.remove) out.delete(k);
  }
}
