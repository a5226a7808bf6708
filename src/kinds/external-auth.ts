// The `authentication` stage's external-auth kind (src/annotations/external-auth.ts parses
// the annotations). What it does is ingress-nginx's auth location and nginx's auth_request
// (rootfs/etc/nginx/template/nginx.tmpl, the `location = {{ $authPath }}` block and the
// `auth_request` lines of the main location, at dbb11b92):
//
// - The auth request carries the client's headers (proxy_pass_request_headers on) but no body
//   (proxy_pass_request_body off, Content-Length ""), X-Forwarded-Proto cleared, Host set to the
//   auth URL's host name, and X-Original-URL, X-Original-Method, X-Sent-From, X-Real-IP,
//   X-Forwarded-For (the client), X-Request-ID, X-Auth-Request-Redirect; with auth-method also
//   X-Original-URI and X-Scheme. A client's own copies of these are replaced.
// - nginx's auth_request: a 2xx answer lets the request through; 401 and 403 are the client's
//   answer (a 401 carries the auth answer's WWW-Authenticate); anything else, or no answer, is 500.
// - auth-signin turns the 401 into a 302 (buildAuthSignURL in template.go); auth-response-headers
//   are copied onto the upstream request (buildAuthResponseHeaders: proxy_set_header from
//   $upstream_http_*, so a field the auth answer lacks is removed); the auth answer's
//   Set-Cookie goes to the client (add_header Set-Cookie $auth_cookie [always]).
//
// The auth service is reached like an ExternalName upstream (external.ts): its name is
// resolved here and only a checked address is connected to, never loopback, link-local,
// unspecified, a cloud metadata service or this pod's own addresses, whatever the annotation
// says.
//
// What needs the I/O side comes through PolicyCaps: the name's resolution and check
// (proxy/upstream/external.ts), the pipelining guard, the subrequest itself (fetch, with its
// deadline) and the answer cache (the process's, or the workers' shared table).
// kinds/authentication.ts registers the kind.
import { createHash } from "node:crypto";
import * as v from "valibot";
import { isIpLiteral } from "../config/cidr.ts";
import { AddressForbiddenError, ProxyError } from "../http/errors.ts";
import { isHopByHop, scanResponseHeaders } from "../http/headers.ts";
import { ownBody } from "../http/status-page.ts";
import { ASCII_FIELD_VALUE } from "../policy/headers.ts";
import type { TemplatePart } from "../policy/template.ts";
import type { Upstream } from "../table/types.ts";
import { defineKind, needCaps } from "./define.ts";
import { NullableStr, Str, Strings } from "./schema.ts";
import type { AuthAnswer, PolicyCaps, PolicyFlow, PolicyStep, SubrequestInit } from "./types.ts";
import { prefixedVariable, remoteUser } from "./variables.ts";

const Template = v.array(v.union([v.string(), v.strictObject({ v: v.string() })]));

/** auth-url and its options (policy/template.ts holds the template parts). */
const EXTERNAL_AUTH_PARAMS = v.strictObject({
  url: v.pipe(Template, v.minLength(1)),
  method: NullableStr,
  signin: v.nullable(Template),
  redirectParam: Str,
  responseHeaders: Strings,
  requestRedirect: NullableStr,
  alwaysSetCookie: v.boolean(),
  cacheKey: v.nullable(Template),
  cacheRules: v.array(v.strictObject({ statuses: v.nullable(v.array(v.number())), ms: v.number() })),
  /**
   * auth-proxy-set-headers: the named ConfigMap's entries, set on the auth request (name,
   * value template); null while that ConfigMap is not read (compile/auth-headers.ts reads
   * it), which the runner refuses to build: never an auth request without them.
   */
  proxySetHeaders: v.nullable(v.array(v.strictObject({ name: Str, value: Template }))),
});

type Live = v.InferOutput<typeof EXTERNAL_AUTH_PARAMS>;

/**
 * nginx's default proxy_read_timeout and proxy_connect_timeout, which the auth location
 * inherits (the template sets no timeout there): the longest Portico waits for an auth answer.
 */
const AUTH_TIMEOUT_CAP_MS = 60_000;


/**
 * Fields the auth request sets itself (nginx.tmpl's auth location and the proxy's framing): a
 * client's copy is never passed (the framing names are hop-by-hop too, http/headers.ts), and an
 * auth-proxy-set-headers entry of one of these names is left out (compile/auth-headers.ts), so
 * the auth service reads the value the template sets (nginx would send both fields, the
 * template's first).
 */
export const AUTH_REQUEST_OWN_FIELDS: ReadonlySet<string> = new Set([
  "host", "x-request-id", "x-original-url", "x-original-method", "x-sent-from", "x-real-ip", "x-forwarded-for",
  "x-auth-request-redirect", "x-original-uri", "x-scheme", "x-forwarded-proto", "content-length", "expect",
  "connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade",
]);
// From a peer that is not a trusted proxy these are spoofs: Portico never passes them upstream
// either (headers.ts). ingress-nginx passes them to the auth service as the client sent them.
const UNTRUSTED = new Set(["x-forwarded-host", "x-forwarded-port", "forwarded"]);

/** set_escape_uri (set-misc-nginx-module, ngx_escape_uri_patched's `uri` table): bytes escaped. */
function escapeUriTable(): Uint8Array {
  const t = new Uint8Array(256);
  for (let c = 0; c < 256; c++) t[c] = c <= 0x20 || c >= 0x7f ? 1 : 0;
  for (const ch of "\"#%&+/:;<=>?[\\]^{}") t[ch.charCodeAt(0)] = 1;
  return t;
}
const ESCAPED = escapeUriTable();
const HEX = "0123456789ABCDEF";

/** `$escaped_request_uri`: the request URI escaped as set_escape_uri does (UTF-8 bytes). */
function escapeUri(s: string): string {
  let out = "";
  for (const b of new TextEncoder().encode(s)) {
    out += ESCAPED[b] ? `%${HEX[b >> 4]}${HEX[b & 15]}` : String.fromCharCode(b);
  }
  return out;
}

/** The value of one supported variable for this request (the annotation side allowed only these). */
export function variable(flow: PolicyFlow, name: string): string {
  switch (name) {
    case "host":
      return flow.hostname;
    case "http_host":
      return flow.req.headers.get("host") ?? "";
    case "scheme":
      return flow.scheme;
    case "request_uri":
      return flow.pathAndQuery;
    case "escaped_request_uri":
      return escapeUri(flow.pathAndQuery);
    case "uri":
      return flow.path;
    case "args":
      return flow.query.replace(/^\?/, "");
    case "remote_addr":
      return flow.clientIp;
    case "remote_user":
      return remoteUser(flow.req.headers) ?? "";
    case "request_method":
      return flow.req.method;
  }
  // $http_NAME, $cookie_NAME, $arg_NAME: empty when not found.
  const prefixed = prefixedVariable(name, flow.req.headers, flow.query);
  if (prefixed !== undefined) return prefixed ?? "";
  // Unreachable: the annotation parser refuses every other name. Fail closed all the same.
  throw new ProxyError("Internal", `external auth: unsupported variable $${name}`);
}

/**
 * Variables allowed in an auth-proxy-set-headers value (compile/auth-headers.ts). nginx
 * evaluates them in the auth subrequest, which shares the main request's headers, variables
 * and request URI (ngx_http_subrequest: `sr->variables = r->variables`, `sr->unparsed_uri =
 * r->unparsed_uri`; $request_method reads r->main) but has its own URI and no arguments, so
 * `$uri`, `$args` and `$arg_<name>` there name the auth location, not the client's request:
 * they are refused, with any other variable. add-headers and proxy-set-headers
 * (compile/global-headers.ts, proxy/pipeline/global-headers.ts) are expanded in the client's
 * own request, so those three name it there and are allowed (`withArgs`).
 */
const HEADER_VARIABLES: readonly string[] = ["host", "http_host", "scheme", "remote_addr", "remote_user", "request_uri", "escaped_request_uri", "request_method"];
const ARGS_VARIABLES: readonly string[] = ["uri", "args"];
const HEADER_VARIABLES_WITH_ARGS: readonly string[] = [...HEADER_VARIABLES, ...ARGS_VARIABLES];
const HEADER_PREFIXES: readonly string[] = ["http_", "cookie_"];
const HEADER_PREFIXES_WITH_ARGS: readonly string[] = [...HEADER_PREFIXES, "arg_"];
/** nginx's variable name (policy/template.ts reads the same). */
const VARIABLE_NAME = /^[A-Za-z0-9_]+$/;

/** The plain variable names a header value may use (for messages; the prefix forms come on top). */
export function headerVariableNames(withArgs: boolean): readonly string[] {
  return withArgs ? HEADER_VARIABLES_WITH_ARGS : HEADER_VARIABLES;
}

/** May a header value use `$name` (see HEADER_VARIABLES)? Also checks a table that crossed IPC. */
export function headerVariableAllowed(name: string, withArgs: boolean): boolean {
  if ((withArgs ? HEADER_VARIABLES_WITH_ARGS : HEADER_VARIABLES).includes(name)) return true;
  if (!VARIABLE_NAME.test(name)) return false;
  return (withArgs ? HEADER_PREFIXES_WITH_ARGS : HEADER_PREFIXES).some((p) => name.startsWith(p) && name.length > p.length);
}

/** A header value's parts with each variable expanded for this request. */
export function render(parts: readonly TemplatePart[], flow: PolicyFlow): string {
  let out = "";
  for (const p of parts) out += typeof p === "string" ? p : variable(flow, p.v);
  return out;
}

/**
 * buildAuthSignURL (template.go): `<signin>?<param>=<scheme>://<Host><escaped URI>`, with `&`
 * when the URL already has a query, and the URL unchanged when that query already sets the
 * parameter. The query is read from the annotation text before variables are replaced, as
 * ingress-nginx reads it when it writes the configuration.
 */
export function signinTemplate(parts: readonly TemplatePart[], param: string): readonly TemplatePart[] {
  const text = parts.map((p) => (typeof p === "string" ? p : `$${p.v}`)).join("");
  const q = text.indexOf("?");
  const pairs = q < 0 ? [] : text.slice(q + 1).split("&").filter((s) => s !== "");
  // url.Values.Get: the first value given for the parameter.
  const first = pairs.find((kv) => (kv.includes("=") ? kv.slice(0, kv.indexOf("=")) : kv) === param);
  if (first !== undefined && first.includes("=") && first.slice(first.indexOf("=") + 1) !== "") return parts;
  return [...parts, `${pairs.length === 0 ? "?" : "&"}${param}=`, { v: "scheme" }, "://", { v: "http_host" }, { v: "escaped_request_uri" }];
}

/** The auth request's headers (see the top of this file). */
function authHeaders(flow: PolicyFlow, host: string, p: Live): Headers {
  const incoming = flow.req.headers;
  const listed = new Set((incoming.get("connection") ?? "").split(",").map((s) => s.trim().toLowerCase()));
  const h = new Headers();
  for (const [k, val] of incoming) {
    if (isHopByHop(k) || listed.has(k) || AUTH_REQUEST_OWN_FIELDS.has(k) || k.startsWith("ssl-client-")) continue;
    if (!flow.underscores && k.includes("_")) continue;
    if (!flow.trusted && UNTRUSTED.has(k)) continue;
    h.append(k, val);
  }
  h.set("host", host);
  h.set("x-request-id", flow.requestId);
  if (p.method !== null) {
    h.set("x-original-uri", flow.pathAndQuery);
    h.set("x-scheme", flow.scheme);
  }
  h.set("x-original-url", `${flow.scheme}://${incoming.get("host") ?? ""}${flow.pathAndQuery}`);
  h.set("x-original-method", flow.req.method);
  h.set("x-sent-from", "nginx-ingress-controller");
  h.set("x-real-ip", flow.clientIp);
  h.set("x-forwarded-for", flow.clientIp);
  h.set("x-auth-request-redirect", p.requestRedirect ?? flow.pathAndQuery);
  // auth-proxy-set-headers: `proxy_set_header NAME "VALUE"` in the auth location
  // (template.go buildAuthProxySetHeaders), after the template's own lines. proxy_set_header
  // replaces the client's field of that name, and a value that is empty once its variables
  // are expanded sends no field at all (nginx's proxy module). The compiler left out the names
  // the template sets itself (compile/auth-headers.ts).
  for (const { name } of p.proxySetHeaders ?? []) h.delete(name);
  for (const { name, value } of p.proxySetHeaders ?? []) {
    const text = render(value, flow);
    // A value built from client input ($remote_user decodes Basic credentials, which may hold
    // CR/LF or other bytes no field value may carry, RFC 9110 section 5.5) is not sent, as
    // proxy-set-headers values are not (proxy/pipeline/global-headers.ts): the field is left
    // out instead of failing the request.
    if (text !== "" && ASCII_FIELD_VALUE.test(text)) h.append(name, text);
  }
  return h;
}

/** nginx does not cache an answer that sets a cookie or says not to (proxy_cache's defaults). */
function cacheable(h: Headers): boolean {
  if (h.getSetCookie().length > 0) return false;
  const cc = (h.get("cache-control") ?? "").toLowerCase();
  if (/(^|[\s,])(no-store|no-cache|private)([\s,=]|$)/.test(cc) || /(^|[\s,])max-age\s*=\s*0+([\s,]|$)/.test(cc)) return false;
  return (h.get("vary") ?? "").trim() !== "*";
}

function ttlFor(rules: Live["cacheRules"], status: number): number {
  for (const r of rules) if (r.statuses === null || r.statuses.includes(status)) return r.ms;
  return 0;
}

/** An unambiguous rendering of the key's parts: each is length-prefixed. */
function keyOf(flow: PolicyFlow, id: string, parts: readonly TemplatePart[]): string {
  let k = `${id}\0${flow.hostname}\0${flow.route.ingress.namespace}/${flow.route.ingress.name}\0${flow.route.pathType}\0${flow.route.path}`;
  for (const p of parts) {
    const s = typeof p === "string" ? p : variable(flow, p.v);
    k += `\0${s.length}:${s}`;
  }
  return k;
}

// An auth-url whose name resolves only to refused addresses fails every request (500
// AuthFailed, as nginx's auth_request answers when the auth service cannot be reached); the
// operator is told once per route and address, with the reason, not once per request. A
// literal address or `localhost` is refused when the Ingress is compiled instead
// (annotations/external-auth.ts). Bounded: when full it starts afresh (a line may repeat).
const told = new Set<string>();
const tellRefused = (flow: PolicyFlow, name: string, e: AddressForbiddenError): void => {
  const r = flow.route;
  for (const { address, reason } of e.refused) {
    const key = `${r.ingress.namespace}/${r.ingress.name}\0${r.host ?? ""}\0${r.pathType}\0${r.path}\0${address}`;
    if (told.has(key)) continue;
    if (told.size >= 4_096) told.clear();
    told.add(key);
    flow.log.warn("external auth: the auth service's address is refused; Portico never connects to it", {
      ingress: `${r.ingress.namespace}/${r.ingress.name}`, host: r.host, path: r.path, authHost: name, address, reason,
    });
  }
};

function build(p: Live, caps: PolicyCaps | undefined): PolicyStep {
  if (p.proxySetHeaders === null) throw new TypeError("auth-proxy-set-headers is not resolved (its ConfigMap was not read)");
  const { resolve, pipelineGuard, subrequest, deadline, authCache } = needCaps(caps, "external-auth");
  // The policy's part of every cache key: its parameters' digest, the same in every worker
  // (which build their routes apart) and for the same policy after a table change.
  const id = createHash("sha256").update(JSON.stringify(p)).digest("hex").slice(0, 32);
  const cache = authCache();
  const usesHost = p.url.some((x) => typeof x !== "string" && x.v === "host");
  const signin = p.signin === null ? null : signinTemplate(p.signin, p.redirectParam);

  async function ask(flow: PolicyFlow): Promise<{ answer: AuthAnswer; ttl: number }> {
    // $host in the auth service's address is the client's Host: only an exact host rule
    // pins it to a name the Ingress's owner chose. Elsewhere the client would pick the
    // server that says yes.
    if (usesHost && (flow.route.host === null || flow.route.host.startsWith("*"))) {
      throw new ProxyError("AuthFailed", "external auth: $host in auth-url on a wildcard or host-less rule");
    }
    let u: URL;
    try {
      u = new URL(render(p.url, flow));
    } catch {
      throw new ProxyError("AuthFailed", "external auth: auth-url is not a URL for this request");
    }
    const https = u.protocol === "https:";
    if (!https && u.protocol !== "http:") throw new ProxyError("AuthFailed", `external auth: scheme ${u.protocol}`);
    const name = u.hostname.startsWith("[") ? u.hostname.slice(1, -1) : u.hostname;
    const port = u.port === "" ? (https ? 443 : 80) : Number(u.port);
    const target: Upstream = { address: name, port, authority: `${u.hostname}:${port}`, ready: true, serving: true, terminating: false };
    let to: Upstream;
    try {
      to = await resolve(target, flow.connectTimeoutMs);
    } catch (e) {
      if (e instanceof AddressForbiddenError) tellRefused(flow, name, e);
      throw new ProxyError("AuthFailed", `external auth: ${e instanceof ProxyError ? `${e.code} ${e.detail}` : String(e)}`);
    }
    // proxy_ssl_server_name on; nginx verifies no upstream certificate by default
    // (proxy_ssl_verify off), and the auth location sets none: encrypted, not authenticated.
    const init: SubrequestInit = {
      method: p.method ?? "GET",
      headers: authHeaders(flow, name, p),
      // One deadline for connect and answer; the client leaving aborts it too.
      signal: deadline(Math.min(flow.responseTimeoutMs, AUTH_TIMEOUT_CAP_MS), flow.req.signal),
      ...(https ? { tls: { rejectUnauthorized: false, ...(isIpLiteral(name) ? {} : { serverName: name }) } } : {}),
    };
    // The pipelining guard (docs/design.md, "Request framing and bodies"): the handler waits
    // one turn before the backend is contacted, but the policies run before that wait, so the
    // auth service, an upstream too, gets the same wait here. Only auth-url routes pay for it.
    await pipelineGuard(flow.connectionScheme === "https");
    flow.req.signal.throwIfAborted();
    let res: Response;
    try {
      res = await subrequest(`${u.protocol}//${to.authority}${u.pathname}${u.search}`, init);
    } catch (e) {
      if (flow.req.signal.aborted) throw e;
      const code = (e as { name?: string; code?: string } | null)?.code ?? (e as Error)?.name ?? "";
      throw new ProxyError("AuthFailed", `external auth: ${code} ${String((e as Error)?.message ?? e)}`);
    }
    // nginx reads and discards the auth answer's body; Portico never needs it.
    res.body?.cancel().catch(() => {});
    if (scanResponseHeaders(res.headers).bytes > flow.maxResponseHeaderBytes) throw new ProxyError("AuthFailed", "external auth: answer header block too large");
    const copy: Record<string, string | null> = {};
    for (const h of p.responseHeaders) copy[h] = res.headers.get(h);
    const answer: AuthAnswer = {
      status: res.status,
      copy,
      wwwAuthenticate: res.headers.get("www-authenticate"),
      setCookies: res.headers.getSetCookie(),
    };
    return { answer, ttl: p.cacheKey !== null && cacheable(res.headers) ? ttlFor(p.cacheRules, res.status) : 0 };
  }

  return async (flow) => {
    // ingress-nginx's template leaves auth_request out of a no-auth-locations path too
    // (decided on the rule path as written: annotations/basic-auth.ts skipsAuthentication).
    if (flow.route.authExempt === true) return null;
    const key = p.cacheKey === null ? null : keyOf(flow, id, p.cacheKey);
    let answer = key === null ? undefined : cache.get(key);
    if (answer === undefined) {
      const asked = await ask(flow);
      answer = asked.answer;
      if (key !== null && asked.ttl > 0) cache.set(key, answer, asked.ttl);
    }
    if (answer.setCookies.length > 0) flow.setCookies = { values: answer.setCookies, always: p.alwaysSetCookie };
    const s = answer.status;
    if (s >= 200 && s < 300) {
      if (p.responseHeaders.length > 0) flow.upstreamRequestHeaders = { ...flow.upstreamRequestHeaders, ...answer.copy };
      return null;
    }
    if (s === 401 && signin !== null) return signinAnswer(signin, flow);
    if (s === 401) {
      const own = ownBody(401, "unauthorized\n", flow.config.ingressNginxCompat, flow.req);
      const h: Record<string, string> = { ...flow.responseHeaders, "content-type": own.type };
      if (answer.wwwAuthenticate !== null) h["www-authenticate"] = answer.wwwAuthenticate;
      return new Response(own.body, { status: 401, headers: h });
    }
    if (s === 403) {
      const own = ownBody(403, "forbidden\n", flow.config.ingressNginxCompat, flow.req);
      return new Response(own.body, { status: 403, headers: { ...flow.responseHeaders, "content-type": own.type } });
    }
    throw new ProxyError("AuthFailed", `external auth: the auth service answered ${s}`);
  };
}

/** error_page 401 = @signin: `return 302 <signin URL>`. */
function signinAnswer(signin: readonly TemplatePart[], flow: PolicyFlow): Response {
  return new Response(null, { status: 302, headers: { ...flow.responseHeaders, location: render(signin, flow), "content-length": "0" } });
}

/**
 * The 302 to auth-signin for a request refused with 401 (nginx's `error_page 401`, which
 * covers the location's final 401 whichever access check made it: `satisfy any` uses it,
 * kinds/satisfy.ts), or null when the policy has no auth-signin.
 */
export function signinOf(p: Pick<v.InferOutput<typeof EXTERNAL_AUTH_PARAMS>, "signin" | "redirectParam">): ((flow: PolicyFlow) => Response) | null {
  if (p.signin === null) return null;
  const signin = signinTemplate(p.signin, p.redirectParam);
  return (flow) => signinAnswer(signin, flow);
}

export const EXTERNAL_AUTH = defineKind("external-auth", "authentication", EXTERNAL_AUTH_PARAMS, build);
