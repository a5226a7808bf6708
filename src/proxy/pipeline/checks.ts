// The proxy's own checks, written once as ordinary stages: the policy runner places them
// between a route's policies where ingress-nginx makes them (policy/stages.ts,
// HTTPS_REDIRECT_AFTER and ENDPOINTS_CHECK_AFTER; docs/design.md, "Annotations and policies"),
// and a route without policies runs the HTTPS redirect alone (policies.ts).
import { ENDPOINTS_CHECK_AFTER, HTTPS_REDIRECT_AFTER } from "../../policy/stages.ts";
import type { Backend } from "../../table/types.ts";
import { ProxyError } from "../../http/errors.ts";
import { httpsRedirect, redirectHostname, wantsHttpsRedirect } from "../../kinds/redirect.ts";
import type { BuiltInStage } from "../policies/run.ts";
import type { PolicyFlow } from "../../kinds/types.ts";

export function hasEndpoints(b: Backend): boolean {
  return b.status === "ok" && b.endpoints.length > 0;
}

/**
 * The HTTPS redirect, where ingress-nginx's Lua makes it: after the location's rewrite phase
 * (so `permanent-redirect` answers plain HTTP without going through HTTPS first), before the
 * backend choice, limits and access.
 */
export function httpsRedirectStage(flow: PolicyFlow): Response | null {
  if (!wantsHttpsRedirect(flow.scheme, flow.route)) return null;
  const r = httpsRedirect(flow.config, redirectHostname(flow), flow.path + flow.query, flow.route, flow.responseHeaders);
  if (r === null) throw new ProxyError("BadRequest", "no host to redirect to");
  return r;
}

/**
 * 503 for a backend without endpoints once it is chosen, before limits and access (ingress-nginx's
 * balancer.lua rewrite). A route with a default-backend fallback or custom error pages leaves
 * it to the backend choice after the stages (choose.ts), which sends to the fallback or arms
 * the error page (docs/design.md, "Error pages").
 */
export function endpointsStage(flow: PolicyFlow): null {
  if (hasEndpoints(flow.backend) || flow.route.fallback !== undefined || flow.route.errorPages !== undefined) return null;
  throw new ProxyError("NoEndpoints", flow.backend.status);
}

export const BUILT_IN_STAGES: readonly BuiltInStage[] = [
  { after: HTTPS_REDIRECT_AFTER, step: httpsRedirectStage },
  { after: ENDPOINTS_CHECK_AFTER, step: endpointsStage },
];
