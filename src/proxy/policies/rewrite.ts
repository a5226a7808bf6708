// The `rewrite` stage's rewrite-target policy (annotations/regex-rewrite.ts makes it): with
// the captures of the regex location that matched (the lookup's Match carries them), the
// request goes upstream with the rewritten path, or is answered with ingress-nginx's 302 for
// an absolute target, or with 500 when the rewrite gives a path Portico does not forward
// (table/rewrite.ts says which, and why).
import { forwardedPrefix, rewriteRequest } from "../../table/rewrite.ts";
import { errorBody, errorResponse } from "../../http/errors.ts";
import type { KindOf, PolicyKind } from "./types.ts";
import * as K from "../../policy/kinds.ts";

export const REWRITE_TARGET: KindOf<typeof K.REWRITE_TARGET> = {
  contract: K.REWRITE_TARGET,
  build(params) {
    const { target, xForwardedPrefix } = params;
    if (typeof target !== "string" || target === "") throw new Error("target must be a non-empty string");
    if (xForwardedPrefix !== null && typeof xForwardedPrefix !== "string") throw new Error("xForwardedPrefix must be a string or null");
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
  },
};
