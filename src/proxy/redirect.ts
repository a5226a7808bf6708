// HTTP → HTTPS redirect and HSTS (DESIGN §4 TLS, issue 5).
import type { Config } from "../config/types.ts";
import type { Route } from "../table/types.ts";

/** True when a plain-HTTP request to this route must be redirected to HTTPS. */
export function wantsHttpsRedirect(scheme: "http" | "https", route: Route): boolean {
  return scheme === "http" && ((route.tls && route.options.sslRedirect) || route.options.forceSslRedirect);
}

/**
 * 308 (RFC 9110 §15.4.9: keeps method and body) to the same host and path on the HTTPS port.
 * The host is the validated routing name and the path the normalised one, so nothing
 * unvalidated reaches the Location header.
 */
export function httpsRedirect(config: Config, hostname: string, pathAndQuery: string, extra: Record<string, string>): Response {
  const port = config.httpsPort === 443 ? "" : `:${config.httpsPort}`;
  return new Response(null, {
    status: 308,
    headers: { location: `https://${hostname}${port}${pathAndQuery}`, "content-length": "0", ...extra },
  });
}

export function hstsValue(config: Config, route: Route): string | null {
  return config.hsts && route.options.hsts ? `max-age=${config.hstsMaxAge}` : null;
}
