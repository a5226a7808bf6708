// The `cors` stage (src/annotations/cors.ts parses the annotations). What it sends is
// ingress-nginx's template CORS block (rootfs/etc/nginx/template/nginx.tmpl, "CORS", at
// dbb11b92): for an allowed Origin, Access-Control-Allow-Origin (the Origin, or `*`),
// -Allow-Credentials when on, -Allow-Methods, -Allow-Headers, -Expose-Headers when set and
// -Max-Age, with more_set_headers, so on every status and replacing what the backend sent; a
// preflight gets 204 with those, `Content-Type: text/plain charset=UTF-8` and
// `Content-Length: 0`, before authentication and access checks (the location's rewrite phase).
//
// Also the Gateway API's CORS filter and ResponseHeaderModifier, which run in this stage too.
import * as v from "valibot";
import type { HeaderEdit } from "../http/headers.ts";
import { defineKind } from "./define.ts";
import { Strings, Str, NullableStr, Pair, editableFields } from "./schema.ts";
import type { PolicyFlow, PolicyStep } from "./types.ts";


interface Wildcard {
  /** `scheme://` */
  readonly prefix: string;
  /** `.rest.of.host[:port]` */
  readonly suffix: string;
}

/** One DNS label as buildOriginRegex's `[A-Za-z0-9\-]+` (the Origin is lower-cased first). */
const LABEL = /^[a-z0-9-]+$/;

/**
 * Whether `origin` is allowed: equal to an entry, or to a `*.` entry with exactly one label in
 * place of the `*`; case-insensitive as nginx's `~*`. Unlike ingress-nginx's regex, which is
 * anchored only at the end, the whole Origin must match, so `https://x.evil.com/https://a.com`
 * or `https://evil-null` are not taken for `https://a.com` or `null`.
 */
function originMatcher(entries: readonly string[]): (origin: string) => boolean {
  const exact = new Set<string>();
  const wild: Wildcard[] = [];
  for (const e of entries) {
    const star = e.indexOf("://*.");
    if (star < 0) exact.add(e);
    else wild.push({ prefix: e.slice(0, star + 3), suffix: e.slice(star + 4) });
  }
  return (origin) => {
    const o = origin.toLowerCase();
    if (exact.has(o)) return true;
    for (const w of wild) {
      if (o.length > w.prefix.length + w.suffix.length && o.startsWith(w.prefix) && o.endsWith(w.suffix)) {
        if (LABEL.test(o.slice(w.prefix.length, o.length - w.suffix.length))) return true;
      }
    }
    return false;
  };
}

/** enable-cors and its options. */
const CORS_PARAMS = v.strictObject({
  enabled: v.literal(true),
  origins: v.union([v.literal("*"), Strings]),
  methods: Str,
  headers: Str,
  expose: NullableStr,
  credentials: v.boolean(),
  maxAge: v.number(),
});

function build(p: v.InferOutput<typeof CORS_PARAMS>): PolicyStep {
  const any = p.origins === "*";
  const allowed = any ? null : originMatcher(p.origins as string[]);
  // The headers after Access-Control-Allow-Origin, in the template's order; fixed per route.
  const rest: [string, string][] = [];
  if (p.credentials) rest.push(["access-control-allow-credentials", "true"]);
  rest.push(["access-control-allow-methods", p.methods], ["access-control-allow-headers", p.headers]);
  if (p.expose !== null) rest.push(["access-control-expose-headers", p.expose]);
  rest.push(["access-control-max-age", String(p.maxAge)]);

  return (flow) => {
    const origin = flow.req.headers.get("origin");
    // In `*` mode ingress-nginx sets $http_origin to `*` and the headers go on every answer,
    // with or without an Origin; with a list, only when the Origin matches.
    let allow: string | null;
    if (allowed === null) allow = "*";
    else allow = origin !== null && allowed(origin) ? origin : null;
    // With a list the answer depends on Origin, matching or not, so a shared cache must key on
    // it (Fetch standard, "CORS protocol and HTTP caches"); ingress-nginx sends no Vary.
    const add: Record<string, string> = {};
    if (allowed !== null) add.vary = "Origin";
    if (allow !== null) {
      add["access-control-allow-origin"] = allow;
      for (const [k, val] of rest) add[k] = val;
    }
    // A preflight (Fetch standard: OPTIONS with Origin and Access-Control-Request-Method) is
    // answered here; any other OPTIONS goes to the backend like any request.
    if (allow !== null && flow.req.method === "OPTIONS" && origin !== null && flow.req.headers.has("access-control-request-method")) {
      return new Response(null, {
        status: 204,
        headers: { ...flow.responseHeaders, ...add, "content-type": "text/plain charset=UTF-8", "content-length": "0" },
      });
    }
    if (allowed === null && allow === null) return null;
    // Portico's own later answers (401, 403, 503...) carry them, as more_set_headers does on
    // every status; the proxied answer gets them through upstreamResponseHeaders.
    attach(flow, add);
    return null;
  };
}

/**
 * CORS fields on every answer the request gets: Portico's own (401, 403, 503...), as
 * more_set_headers does on every status, and the proxied one through upstreamResponseHeaders
 * (its Vary member joins the backend's list: http/headers.ts).
 */
function attach(flow: PolicyFlow, add: Record<string, string>): void {
  Object.assign(flow.responseHeaders, add);
  flow.upstreamResponseHeaders = flow.upstreamResponseHeaders === null ? add : { ...flow.upstreamResponseHeaders, ...add };
}

export const CORS = defineKind("cors", "cors", CORS_PARAMS, build);

// --- Gateway API HTTPCORSFilter -------------------------------------------------------------
//
// The same stage and the same way of putting fields on the answers as above; the semantics
// are Gateway API's (apis/v1 httproute_types.go HTTPCORSFilter, v1.6), which differ from
// ingress-nginx's (docs/design.md "Gateway API"): a `*` in an origin's host takes any number
// of labels (nginx's exactly one); an origin without a port has its scheme's (80, 443); only a
// request with an Origin gets CORS fields; the methods, headers and max-age go on the
// preflight answer only; `*` is never sent with credentials (the Origin, the requested method
// and headers are echoed instead); a preflight from an origin not allowed is answered 204
// without CORS fields instead of going to the backend.

/** `scheme://host[:port]` with the port made explicit, lowercased; null when not an origin. */
interface Origin {
  readonly scheme: string;
  readonly host: string;
  readonly port: string;
}
const ORIGIN = /^(https?):\/\/([^/:?#\s]+)(?::([0-9]{1,5}))?$/;
function parseOrigin(text: string): Origin | null {
  const m = ORIGIN.exec(text.toLowerCase());
  if (m === null) return null;
  const scheme = m[1]!;
  return { scheme, host: m[2]!, port: m[3] ?? (scheme === "https" ? "443" : "80") };
}

/** HTTPCORSFilter.allowOrigins as a test; "*" alone allows every Origin. */
function gatewayOriginMatcher(entries: readonly string[]): ((origin: string) => boolean) | null {
  const exact = new Set<string>();
  const wild: { scheme: string; suffix: string; port: string }[] = [];
  for (const e of entries) {
    const o = parseOrigin(e);
    if (o === null) throw new Error(`gateway-cors: ${JSON.stringify(e)} is not an origin`);
    if (o.host === "*") wild.push({ scheme: o.scheme, suffix: "", port: o.port });
    else if (o.host.startsWith("*.")) wild.push({ scheme: o.scheme, suffix: o.host.slice(1), port: o.port });
    else if (o.host.includes("*")) throw new Error(`gateway-cors: ${JSON.stringify(e)}: a wildcard only as the leftmost label`);
    else exact.add(`${o.scheme}://${o.host}:${o.port}`);
  }
  return (origin) => {
    const o = parseOrigin(origin);
    if (o === null) return false;
    if (exact.has(`${o.scheme}://${o.host}:${o.port}`)) return true;
    // `*.bar.com`: one or more labels of any kind in place of the `*` (a greedy match to the left).
    for (const w of wild) if (w.scheme === o.scheme && w.port === o.port && o.host.length > w.suffix.length && o.host.endsWith(w.suffix)) return true;
    return false;
  };
}

/**
 * CORS (HTTPCORSFilter): origins exact or with a left `*` (any number of labels), or ["*"];
 * methods, headers and expose lists, ["*"] for any; maxAge in seconds.
 */
const GATEWAY_CORS_PARAMS = v.strictObject({
  origins: Strings,
  methods: Strings,
  headers: Strings,
  expose: Strings,
  credentials: v.boolean(),
  maxAge: v.pipe(v.number(), v.integer(), v.minValue(1)),
});

function buildGateway(p: v.InferOutput<typeof GATEWAY_CORS_PARAMS>): PolicyStep {
  const anyOrigin = p.origins.length === 1 && p.origins[0] === "*";
  const allowed = anyOrigin ? null : gatewayOriginMatcher(p.origins);
  const anyMethod = p.methods.length === 1 && p.methods[0] === "*";
  const anyHeader = p.headers.length === 1 && p.headers[0] === "*";
  const methods = p.methods.join(", ");
  const headers = p.headers.join(", ");
  // `*` exposes every field only to a request without credentials (Fetch standard,
  // Access-Control-Expose-Headers); with credentials it would name a field `*`, so none is sent.
  const expose = p.expose.length === 0 || (p.credentials && p.expose.length === 1 && p.expose[0] === "*") ? null : p.expose.join(", ");
  const maxAge = String(p.maxAge);
  // The answer depends on the Origin unless every origin gets `*`.
  const echo = !anyOrigin || p.credentials;

  return (flow) => {
    const origin = flow.req.headers.get("origin");
    // Without an Origin the request is not a CORS request (Fetch standard, "CORS protocol").
    if (origin === null) return null;
    const preflight = flow.req.method === "OPTIONS" && flow.req.headers.has("access-control-request-method");
    const add: Record<string, string> = {};
    if (echo) add.vary = "Origin";
    if (allowed !== null && !allowed(origin)) {
      // HTTPCORSFilter.allowOrigins: a preflight from another origin gets 204 (or 200) without
      // the CORS fields, so the browser does not send the request itself.
      if (preflight) return new Response(null, { status: 204, headers: { ...flow.responseHeaders, ...add } });
      attach(flow, add);
      return null;
    }
    add["access-control-allow-origin"] = echo ? origin : "*";
    if (p.credentials) add["access-control-allow-credentials"] = "true";
    if (expose !== null) add["access-control-expose-headers"] = expose;
    if (preflight) {
      if (anyMethod) add["access-control-allow-methods"] = flow.req.headers.get("access-control-request-method")!;
      else if (methods !== "") add["access-control-allow-methods"] = methods;
      if (anyHeader) {
        const asked = flow.req.headers.get("access-control-request-headers");
        if (asked !== null) add["access-control-allow-headers"] = asked;
      } else if (headers !== "") add["access-control-allow-headers"] = headers;
      add["access-control-max-age"] = maxAge;
      return new Response(null, { status: 204, headers: { ...flow.responseHeaders, ...add } });
    }
    attach(flow, add);
    return null;
  };
}

export const GATEWAY_CORS = defineKind("gateway-cors", "cors", GATEWAY_CORS_PARAMS, buildGateway);

/**
 * ResponseHeaderModifier: set, add (`old,new`) and remove on the answer. In the cors stage,
 * before the redirects stage, so Portico's own answers for the rule (a RequestRedirect's, a
 * 500) carry the same changes as the proxied one.
 *
 * ResponseHeaderModifier (HTTPHeaderFilter on the answer): the proxied answer is changed in
 * the relay, after every field Portico sets (PolicyFlow.responseHeaderEdits), and Portico's own
 * answers for the rule (a redirect, a 500, a 502) through flow.responseHeaders now. On those a
 * Set-Cookie already there is kept rather than joined (RFC 6265 §3).
 */
export const GATEWAY_RESPONSE_HEADERS = defineKind("gateway-response-headers", "cors", v.object({ set: v.array(Pair), add: v.array(Pair), remove: Strings }), (params) => {
  const { set, add, remove } = params;
  if (!editableFields(set, add, remove)) throw new Error("gateway-response-headers: a field that cannot be changed");
  const edit: HeaderEdit = Object.freeze({ set, add, remove });
  return (flow) => {
    flow.responseHeaderEdits = flow.responseHeaderEdits === null ? [edit] : [...flow.responseHeaderEdits, edit];
    const own = flow.responseHeaders;
    for (const [n, v] of set) own[n] = v;
    for (const [n, v] of add) {
      const old = own[n];
      own[n] = old === undefined ? v : n === "set-cookie" ? old : `${old},${v}`;
    }
    for (const n of remove) delete own[n];
    return null;
  };
});
