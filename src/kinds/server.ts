// The `server` stage: nginx runs the server block's rewrite directives before it picks the
// location (app-root, and the server ingress-nginx adds for from-to-www-redirect). Every kind
// of the stage is defined here. The table builder places both itself (table/build.ts: app-root
// answers `/` before the locations, the www twin is a host of its own), so their ids are named
// below the table, in policy/stages.ts.
import * as v from "valibot";
import { ProxyError } from "../http/errors.ts";
import { APP_ROOT_KIND, WWW_REDIRECT_KIND } from "../policy/stages.ts";
import { appRootParts, expandAppRoot } from "../policy/template.ts";
import { normaliseRequestHost } from "../request/host.ts";
import { defineKind } from "./define.ts";
import { cutSlash, redirectTo } from "./redirect.ts";
import { Str } from "./schema.ts";
import type { PolicyFlow } from "./types.ts";

const APP_ROOT_PATH = /^\/[A-Za-z0-9\-._~/:$]*$/;

/**
 * app-root: `/` redirects to `path` (nginx variables allowed: policy/template.ts).
 *
 * app-root: exactly `/` gets 302 to `$scheme://$http_host<path>` (nginx.tmpl writes this in
 * the server block): the connection's scheme, the Host header as received, and the nginx
 * variables in the path expanded (annotations/redirects.ts expandAppRoot: `$is_args$args`
 * keeps the query, which is otherwise dropped).
 * A request without Host would get `http:///path`; it gets 400 instead (httpsRedirect says why).
 */
export const APP_ROOT = defineKind(APP_ROOT_KIND, "server", v.object({ path: Str }), (params) => {
  const path = params.path;
  const parts = typeof path === "string" && APP_ROOT_PATH.test(path) ? appRootParts(path) : null;
  if (parts === null) throw new Error("app-root: a path is expected");
  return (flow) => {
    if (flow.path !== "/") return null;
    if (flow.host === "") throw new ProxyError("BadRequest", "no host to redirect to");
    const to = expandAppRoot(parts, { path: flow.path, query: flow.query, scheme: flow.connectionScheme, httpHost: flow.host, host: flow.hostname });
    return redirectTo(302, `${flow.connectionScheme}://${flow.host}${to}`, flow.responseHeaders);
  };
});

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
 * from-to-www-redirect: the host's other name redirects to `to`.
 *
 * The www redirect (from-to-www-redirect): every request for the other name gets
 * `--http-redirect-code` to `<scheme>://<host>:<port><path and query, one trailing / cut>`,
 * always with a port (ingress-nginx's ngx_srv_redirect.lua and the e2e test
 * fromtowwwredirect.go: `http://fromtowwwredirect.bar.com:80/foo`).
 */
export const WWW_REDIRECT = defineKind(WWW_REDIRECT_KIND, "server", v.object({ to: Str }), (params) => {
  const to = params.to;
  if (typeof to !== "string" || normaliseRequestHost(to)?.hostname !== to) throw new Error("www redirect: a host name is expected");
  return (flow) => {
    const location = `${flow.scheme}://${to}:${addressedPort(flow)}${cutSlash(flow.path + flow.query)}`;
    return redirectTo(flow.config.httpRedirectCode, location, flow.responseHeaders);
  };
});
