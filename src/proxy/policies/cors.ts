// The `cors` stage (src/annotations/cors.ts parses the annotations). What it sends is
// ingress-nginx's template CORS block (rootfs/etc/nginx/template/nginx.tmpl, "CORS", at
// dbb11b92): for an allowed Origin, Access-Control-Allow-Origin (the Origin, or `*`),
// -Allow-Credentials when on, -Allow-Methods, -Allow-Headers, -Expose-Headers when set and
// -Max-Age, with more_set_headers, so on every status and replacing what the backend sent; a
// preflight gets 204 with those, `Content-Type: text/plain charset=UTF-8` and
// `Content-Length: 0`, before authentication and access checks (the location's rewrite phase).
import * as v from "valibot";
import type { StagePolicy } from "../../policy/stages.ts";
import type { KindOf, PolicyKind, PolicyStep } from "./types.ts";
import * as K from "../../policy/kinds.ts";
import type { ParamsOf } from "../../policy/contract.ts";


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
export function originMatcher(entries: readonly string[]): (origin: string) => boolean {
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

function build(p: ParamsOf<typeof K.CORS>): PolicyStep {
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
    Object.assign(flow.responseHeaders, add);
    flow.upstreamResponseHeaders = flow.upstreamResponseHeaders === null ? add : { ...flow.upstreamResponseHeaders, ...add };
    return null;
  };
}

export const CORS_POLICY_KIND: KindOf<typeof K.CORS> = { contract: K.CORS, build };
