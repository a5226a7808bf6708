// Redirects Portico answers itself: HTTP → HTTPS and HSTS (README "Ingress semantics", TLS),
// which the proxy runs as built-in stages (proxy/pipeline/checks.ts), and the redirect answer
// the server and redirects stages' kinds (kinds/server.ts, kinds/redirects.ts) build theirs
// with. Each builds its Location as ingress-nginx does; the sources are cited where they are.
import type { Config } from "../config/types.ts";
import { normaliseRequestHost } from "../request/host.ts";
import type { Route } from "../table/types.ts";
import { firstForwardedHost } from "../http/headers.ts";
import type { PolicyFlow } from "./types.ts";

/** True when a plain-HTTP request to this route must be redirected to HTTPS. */
export function wantsHttpsRedirect(scheme: "http" | "https", route: Route): boolean {
  // lua_ingress.lua redirect_to_https: force_no_ssl_redirect (no-tls-redirect-locations) first.
  return scheme === "http" && route.tlsRedirectExempt !== true && ((route.tls && route.options.sslRedirect) || route.options.forceSslRedirect);
}

/** `s` without one trailing "/" (ingress-nginx's Lua cuts it from the request URI string, query included). */
export function cutSlash(s: string): string {
  return s.charCodeAt(s.length - 1) === 0x2f ? s.slice(0, -1) : s;
}

export function redirectTo(status: number, location: string, extra: Readonly<Record<string, string>>): Response {
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
 * entry goes upstream as Host (http/headers.ts). Unlike nginx, the entry must be a valid
 * Host value (RFC 9110 §7.2, the grammar the Host header is held to) and its normalised name
 * is used, so nothing unvalidated reaches Location; "" (the caller answers 400) when it is not.
 */
export function redirectHostname(flow: PolicyFlow): string {
  if (!flow.trusted) return flow.hostname;
  const first = firstForwardedHost(flow.req.headers);
  if (first === null) return flow.hostname;
  return normaliseRequestHost(first)?.hostname ?? "";
}
