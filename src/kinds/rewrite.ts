// The `rewrite` stage (the location's rewrite phase, after the redirects): rewrite-target
// (annotations/regex-rewrite.ts makes it) and the Gateway API's URLRewrite. Every kind of the
// stage is defined here.
//
// rewrite-target: with the captures of the regex location that matched (the lookup's Match
// carries them), the request goes upstream with the rewritten path, or is answered with
// ingress-nginx's 302 for an absolute target, or with 500 when the rewrite gives a path
// Portico does not forward (table/rewrite.ts says which, and why).
import * as v from "valibot";
import { errorBody, errorResponse } from "../http/errors.ts";
import { normaliseRequestHost } from "../request/host.ts";
import { modifyPath } from "../table/gateway.ts";
import { forwardedPrefix, rewriteRequest } from "../table/rewrite.ts";
import { defineKind } from "./define.ts";
import { NullableStr, Str } from "./schema.ts";

/**
 * rewrite-target, with x-forwarded-prefix.
 */
export const REWRITE_TARGET = defineKind("rewrite-target", "rewrite", v.object({ target: v.pipe(Str, v.minLength(1)), xForwardedPrefix: NullableStr }), (params) => {
  const { target, xForwardedPrefix } = params;
  return (flow) => {
    // No captures: the host is not in regex mode, or this location does not rewrite (its path
    // equals the target: template.go buildProxyPass leaves it alone).
    const hit = flow.match.regex;
    if (hit === undefined || hit.captures === null) return null;
    const out = rewriteRequest(target, hit.re, hit.captures, flow.query);
    if (out.kind === "redirect") {
      // ngx_http_rewrite: an http(s):// replacement is a 302 (the `break` flag keeps it one).
      return new Response(null, { status: 302, headers: { location: out.location, "content-length": "0", ...flow.responseHeaders } });
    }
    // Fail closed: a path Portico will not forward is never sent as something else.
    if (out.kind === "refused") return errorResponse("Internal", flow.responseHeaders, errorBody("Internal", flow.config.ingressNginxCompat, flow.req));
    flow.pathAndQuery = out.path + flow.query;
    // template.go buildProxyPass emits X-Forwarded-Prefix inside the rewrite branch only.
    if (xForwardedPrefix !== null) {
      const value = forwardedPrefix(xForwardedPrefix, hit.re, hit.captures);
      if (value !== null) flow.upstreamRequestHeaders = { ...flow.upstreamRequestHeaders, "x-forwarded-prefix": value };
    }
    return null;
  };
});

/**
 * URLRewrite: the Host and path sent upstream, with the prefix a ReplacePrefixMatch replaces.
 *
 * URLRewrite (HTTPURLRewriteFilter): the Host sent upstream and the path, the query kept
 * (HTTPPathModifier changes the path only). Runs in the rewrite stage, so the forwarding
 * stage's header changes still apply; X-Forwarded-Host keeps the client's Host, as
 * upstream-vhost does.
 */
export const GATEWAY_REWRITE = defineKind("gateway-rewrite", "rewrite", v.object({ hostname: NullableStr, pathType: v.nullable(v.picklist(["ReplaceFullPath", "ReplacePrefixMatch"])), pathValue: NullableStr, matchedPrefix: NullableStr }), (params) => {
  const { hostname: host, pathType, pathValue, matchedPrefix: matched } = params;
  if (host !== null && normaliseRequestHost(host) === null) throw new Error("gateway-rewrite: a host name is expected");
  return (flow) => {
    if (host !== null) flow.upstreamHost = host;
    if (pathType !== null) flow.pathAndQuery = modifyPath(flow.path, pathType, pathValue, matched) + flow.query;
    return null;
  };
});
