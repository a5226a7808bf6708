// HTTP → HTTPS redirect and HSTS (README "Ingress semantics", TLS).
import type { Config } from "../config/types.ts";
import type { Route } from "../table/types.ts";

/** True when a plain-HTTP request to this route must be redirected to HTTPS. */
export function wantsHttpsRedirect(scheme: "http" | "https", route: Route): boolean {
  return scheme === "http" && ((route.tls && route.options.sslRedirect) || route.options.forceSslRedirect);
}

/**
 * 308 (RFC 9110 §15.4.9: keeps method and body) to the same host and path on the HTTPS port.
 * The host is the validated routing name and the path the normalised one, so nothing
 * unvalidated reaches the Location header. Null when there is no host to redirect to (an
 * HTTP/1.0 request without Host): `https:///evil.example/x` has an empty authority, and
 * browsers (the WHATWG URL parser skips the extra slashes) read it as https://evil.example/x,
 * an open redirect; the caller answers 400 instead.
 */
export function httpsRedirect(config: Config, hostname: string, pathAndQuery: string, extra: Record<string, string>): Response | null {
  if (hostname === "" || pathAndQuery.charCodeAt(0) !== 0x2f) return null;
  const port = config.httpsPort === 443 ? "" : `:${config.httpsPort}`;
  return new Response(null, {
    status: 308,
    headers: { location: `https://${hostname}${port}${pathAndQuery}`, "content-length": "0", ...extra },
  });
}

/** RFC 6797 §6.1: max-age, then the includeSubDomains and preload directives ingress-nginx adds when asked. */
export function hstsValue(config: Config, route: Route): string | null {
  if (!config.hsts || !route.options.hsts) return null;
  return `max-age=${config.hstsMaxAge}${config.hstsIncludeSubdomains ? "; includeSubDomains" : ""}${config.hstsPreload ? "; preload" : ""}`;
}
