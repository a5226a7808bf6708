// Redirects Portico answers itself: HTTP → HTTPS and HSTS (README "Ingress semantics", TLS),
// and the redirect annotations' stage policies (src/annotations/redirects.ts). Each builds its
// Location as ingress-nginx does; the sources are cited where they are.
import type { Config } from "../../config/types.ts";
import { appRootParts, expandAppRoot } from "../../policy/template.ts";
import { normaliseRequestHost } from "../../request/host.ts";
import type { Route } from "../../table/types.ts";
import { ProxyError } from "../../http/errors.ts";
import { firstForwardedHost } from "../../http/headers.ts";
import type { KindOf, PolicyFlow, PolicyKind } from "./types.ts";
import * as K from "../../policy/kinds.ts";

/** True when a plain-HTTP request to this route must be redirected to HTTPS. */
export function wantsHttpsRedirect(scheme: "http" | "https", route: Route): boolean {
  // lua_ingress.lua redirect_to_https: force_no_ssl_redirect (no-tls-redirect-locations) first.
  return scheme === "http" && route.tlsRedirectExempt !== true && ((route.tls && route.options.sslRedirect) || route.options.forceSslRedirect);
}

/** `s` without one trailing "/" (ingress-nginx's Lua cuts it from the request URI string, query included). */
function cutSlash(s: string): string {
  return s.charCodeAt(s.length - 1) === 0x2f ? s.slice(0, -1) : s;
}

function redirectTo(status: number, location: string, extra: Readonly<Record<string, string>>): Response {
  return new Response(null, { status, headers: { location, "content-length": "0", ...extra } });
}

/**
 * `--http-redirect-code` (308 by default; RFC 9110 §15.4.9: keeps method and body) to
 * `https://<host><path and query>`, as ingress-nginx's lua_ingress.lua builds it: one trailing
 * "/" cut unless `preserve-trailing-slash`, and no port unless `use-port-in-redirects`, which
 * adds `:<--https-port>` even when it is 443. Without a port the client reaches the HTTPS
 * listener through the Service's 443 (the k8s/ Deployment listens on 8443 behind 443→8443).
 * The host is the validated routing name and the path the normalised one, so nothing
 * unvalidated reaches the Location header. Null when there is no host to redirect to (an
 * HTTP/1.0 request without Host): `https:///evil.example/x` has an empty authority, and
 * browsers (the WHATWG URL parser skips the extra slashes) read it as https://evil.example/x,
 * an open redirect; the caller answers 400 instead.
 */
export function httpsRedirect(
  config: Config,
  hostname: string,
  pathAndQuery: string,
  route: Route,
  extra: Readonly<Record<string, string>>,
): Response | null {
  if (hostname === "" || pathAndQuery.charCodeAt(0) !== 0x2f) return null;
  const uri = route.options.preserveTrailingSlash ? pathAndQuery : cutSlash(pathAndQuery);
  const port = route.options.usePortInRedirects ? `:${config.httpsPort}` : "";
  return redirectTo(config.httpRedirectCode, `https://${hostname}${port}${uri}`, extra);
}

/**
 * The Strict-Transport-Security value the flags give (RFC 6797 §6.1: max-age, then the
 * includeSubDomains and preload directives ingress-nginx adds when asked); the handler computes
 * it once (pipeline/route.ts).
 */
export function hstsField(config: Config): string {
  return `max-age=${config.hstsMaxAge}${config.hstsIncludeSubdomains ? "; includeSubDomains" : ""}${config.hstsPreload ? "; preload" : ""}`;
}

/**
 * The host the HTTPS redirect names: ingress-nginx's lua_ingress.lua redirect_host(), the
 * part of $best_http_host before any ":". With forwarded headers believed (use-forwarded-headers,
 * here --trusted-proxy-headers=all from a --trusted-proxies peer) rewrite() sets $best_http_host
 * to the first entry of X-Forwarded-Host (parse_x_forwarded_host), so the redirect names the
 * host the client addressed at the proxy in front (e2e test/e2e/settings/tls.go "should not use
 * ports or X-Forwarded-Host during the HTTP to HTTPS redirection": `X-Forwarded-Host:
 * example.com:80` gives `https://example.com`); otherwise the Host header's. The same first
 * entry goes upstream as Host (upstream/headers.ts). Unlike nginx, the entry must be a valid
 * Host value (RFC 9110 §7.2, the grammar the Host header is held to) and its normalised name
 * is used, so nothing unvalidated reaches Location; "" (the caller answers 400) when it is not.
 */
export function redirectHostname(flow: PolicyFlow): string {
  if (!flow.trusted) return flow.hostname;
  const first = firstForwardedHost(flow.req.headers);
  if (first === null) return flow.hostname;
  return normaliseRequestHost(first)?.hostname ?? "";
}

const APP_ROOT_PATH = /^\/[A-Za-z0-9\-._~/:$]*$/;
const REDIRECT_URL = /^[A-Za-z0-9\-._~/:,?&=]*$/;
/** The codes nginx's `return code URL` answers with a Location; any other sends the URL as the body. */
const LOCATION_CODES: ReadonlySet<number> = new Set([301, 302, 303, 307, 308]);

/**
 * app-root: exactly `/` gets 302 to `$scheme://$http_host<path>` (nginx.tmpl writes this in
 * the server block): the connection's scheme, the Host header as received, and the nginx
 * variables in the path expanded (annotations/redirects.ts expandAppRoot: `$is_args$args`
 * keeps the query, which is otherwise dropped).
 * A request without Host would get `http:///path`; it gets 400 instead (httpsRedirect says why).
 */
export const APP_ROOT: KindOf<typeof K.APP_ROOT> = {
  contract: K.APP_ROOT,
  build(params) {
    const path = params.path;
    const parts = typeof path === "string" && APP_ROOT_PATH.test(path) ? appRootParts(path) : null;
    if (parts === null) throw new Error("app-root: a path is expected");
    return (flow) => {
      if (flow.path !== "/") return null;
      if (flow.host === "") throw new ProxyError("BadRequest", "no host to redirect to");
      const to = expandAppRoot(parts, { path: flow.path, query: flow.query, scheme: flow.connectionScheme, httpHost: flow.host, host: flow.hostname });
      return redirectTo(302, `${flow.connectionScheme}://${flow.host}${to}`, flow.responseHeaders);
    };
  },
};

/**
 * The port the client addressed: a trusted proxy's X-Forwarded-Port, else the Host header's,
 * else the scheme's default. ingress-nginx's ngx_srv_redirect.lua writes X-Forwarded-Port
 * under use-forwarded-headers, else the port nginx listens on, which is the port clients use
 * in its usual deployment; here that port is the Service's, which only the client knows.
 */
function addressedPort(flow: PolicyFlow): string {
  if (flow.trusted) {
    const p = flow.req.headers.get("x-forwarded-port");
    if (p !== null && /^[0-9]{1,5}$/.test(p)) return p;
  }
  return flow.port ?? (flow.scheme === "https" ? "443" : "80");
}

/**
 * The www redirect (from-to-www-redirect): every request for the other name gets
 * `--http-redirect-code` to `<scheme>://<host>:<port><path and query, one trailing / cut>`,
 * always with a port (ingress-nginx's ngx_srv_redirect.lua and the e2e test
 * fromtowwwredirect.go: `http://fromtowwwredirect.bar.com:80/foo`).
 */
export const WWW_REDIRECT: KindOf<typeof K.WWW_REDIRECT> = {
  contract: K.WWW_REDIRECT,
  build(params) {
    const to = params.to;
    if (typeof to !== "string" || normaliseRequestHost(to)?.hostname !== to) throw new Error("www redirect: a host name is expected");
    return (flow) => {
      const location = `${flow.scheme}://${to}:${addressedPort(flow)}${cutSlash(flow.path + flow.query)}`;
      return redirectTo(flow.config.httpRedirectCode, location, flow.responseHeaders);
    };
  },
};

/**
 * nginx's port_in_redirect for a Location it makes absolute: the port the connection came in
 * on, left out when it is the scheme's default (ngx_http_header_filter_module.c), and only
 * with `use-port-in-redirects` (ingress-nginx sets `port_in_redirect off` otherwise).
 */
function portInRedirect(flow: PolicyFlow): string {
  if (!flow.route.options.usePortInRedirects) return "";
  const p = flow.localPort;
  return p === (flow.connectionScheme === "https" ? 443 : 80) ? "" : `:${p}`;
}

/**
 * permanent-redirect / temporal-redirect: nginx's `return <code> <url>` (nginx.tmpl). For 301,
 * 302, 303, 307 and 308 the URL is the Location, made absolute when it starts with "/" (the
 * connection's scheme and the request's host, as nginx's header filter does) unless
 * relative-redirects; any other code sends the URL as a text/html body without Location
 * (ngx_http_send_response). The request's query is not added.
 */
export const REDIRECT: KindOf<typeof K.REDIRECT> = {
  contract: K.REDIRECT,
  build(params) {
    const { url, code, relative } = params;
    if (typeof url !== "string" || !REDIRECT_URL.test(url)) throw new Error("redirect: bad URL");
    if (typeof code !== "number" || !Number.isInteger(code) || code < 300 || code > 308) throw new Error("redirect: bad code");
    if (typeof relative !== "boolean") throw new Error("redirect: bad relative flag");
    if (!LOCATION_CODES.has(code)) {
      return (flow) => new Response(code === 304 ? null : url, { status: code, headers: { "content-type": "text/html", ...flow.responseHeaders } });
    }
    const absolute = url.charCodeAt(0) === 0x2f && !relative;
    return (flow) => {
      if (!absolute) return redirectTo(code, url, flow.responseHeaders);
      if (flow.hostname === "") throw new ProxyError("BadRequest", "no host to redirect to");
      return redirectTo(code, `${flow.connectionScheme}://${flow.hostname}${portInRedirect(flow)}${url}`, flow.responseHeaders);
    };
  },
};
