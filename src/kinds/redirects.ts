// The `redirects` stage (the location's rewrite phase, after CORS): permanent-redirect and
// temporal-redirect (src/annotations/redirects.ts), and the Gateway API's RequestRedirect.
// Every kind of the stage is defined here.
import * as v from "valibot";
import { ProxyError } from "../http/errors.ts";
import { gatewayRedirectCode, modifyPath } from "../table/gateway.ts";
import { defineKind } from "./define.ts";
import { redirectTo } from "./redirect.ts";
import { NullableStr, Str } from "./schema.ts";
import type { PolicyFlow } from "./types.ts";

const REDIRECT_URL = /^[A-Za-z0-9\-._~/:,?&=]*$/;
/** The codes nginx's `return code URL` answers with a Location; any other sends the URL as the body. */
export const LOCATION_CODES: ReadonlySet<number> = new Set([301, 302, 303, 307, 308]);

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
export const REDIRECT = defineKind("redirect", "redirects", v.object({ url: Str, code: v.pipe(v.number(), v.integer(), v.minValue(300), v.maxValue(308)), relative: v.boolean() }), (params) => {
  const { url, code, relative } = params;
  if (!REDIRECT_URL.test(url)) throw new Error("redirect: bad URL");
  if (!LOCATION_CODES.has(code)) {
    return (flow) => new Response(code === 304 ? null : url, { status: code, headers: { "content-type": "text/html", ...flow.responseHeaders } });
  }
  const absolute = url.charCodeAt(0) === 0x2f && !relative;
  return (flow) => {
    if (!absolute) return redirectTo(code, url, flow.responseHeaders);
    if (flow.hostname === "") throw new ProxyError("BadRequest", "no host to redirect to");
    return redirectTo(code, `${flow.connectionScheme}://${flow.hostname}${portInRedirect(flow)}${url}`, flow.responseHeaders);
  };
});

/**
 * RequestRedirect, with the listener it was reached through and the prefix a ReplacePrefixMatch replaces.
 *
 * RequestRedirect (HTTPRequestRedirectFilter): scheme, hostname and path as asked, else the
 * request's; the port as asked, else the well-known port of a changed scheme, else the
 * listener's declared port (never Portico's own socket port), left out when it is the
 * scheme's default (80 for http, 443 for https).
 */
export const GATEWAY_REDIRECT = defineKind("gateway-redirect", "redirects", v.object({
  scheme: NullableStr,
  hostname: NullableStr,
  port: v.nullable(v.number()),
  statusCode: v.nullable(v.number()),
  listenerPort: v.nullable(v.number()),
  listenerScheme: v.picklist(["http", "https"]),
  pathType: NullableStr,
  pathValue: NullableStr,
  matchedPrefix: NullableStr,
}), (params) => {
  const status = gatewayRedirectCode(params.statusCode);
  const { scheme: askedScheme, hostname: askedHost, port: askedPort, listenerPort, listenerScheme, pathType, pathValue, matchedPrefix: matched } = params;
  if (listenerPort === null) throw new Error("gateway-redirect: listenerPort expected");
  return (flow) => {
    const scheme = askedScheme ?? listenerScheme;
    const port = askedPort ?? (askedScheme !== null ? (scheme === "https" ? 443 : 80) : listenerPort);
    const host = askedHost ?? flow.hostname;
    const defaultPort = scheme === "https" ? 443 : 80;
    const path = modifyPath(flow.path, pathType, pathValue, matched);
    const authority = port === defaultPort ? host : `${host}:${port}`;
    return new Response(null, { status, headers: { ...flow.responseHeaders, location: `${scheme}://${authority}${path}${flow.query}` } });
  };
});
