// Runs a route's request-side policies (RouteOptions.stages) in the one stage order of
// policy/stages.ts, with the proxy's own HTTPS redirect and no-endpoints check at their place
// between the stages. docs/design.md, "Annotations and policies": the handler calls the
// runner only when a route has policies, so a route without any pays one null check (and the
// handler makes those two checks itself).
import { ENDPOINTS_CHECK_AFTER, HTTPS_REDIRECT_AFTER, stageIndex, type StagePolicy } from "../../policy/stages.ts";
import type { PolicyContext, PolicyFlow, PolicyKind, PolicyKinds, PolicyStep } from "./types.ts";
import * as v from "valibot";
import { ProxyError } from "../errors.ts";
import { httpsRedirect, wantsHttpsRedirect } from "./redirect.ts";

export type PolicyRunner = (stages: readonly StagePolicy[], flow: PolicyFlow) => Promise<Response | null>;

/**
 * A policy that cannot run (unknown kind, a kind filed under another stage, parameters its
 * build refuses) answers 500 to every request of the route: access control fails closed.
 */
function refuse(why: string): PolicyStep {
  return () => {
    throw new ProxyError("Internal", why);
  };
}

/**
 * The HTTPS redirect, where ingress-nginx's Lua makes it: after the location's rewrite phase
 * (so `permanent-redirect` answers plain HTTP without going through HTTPS first), before the
 * backend choice, limits and access. The same check the handler makes for routes without
 * policies.
 */
const HTTPS_REDIRECT: PolicyStep = (flow) => {
  if (!wantsHttpsRedirect(flow.scheme, flow.route)) return null;
  const r = httpsRedirect(flow.config, flow.hostname, flow.path + flow.query, flow.route, flow.responseHeaders);
  if (r === null) throw new ProxyError("BadRequest", "no host to redirect to");
  return r;
};

/**
 * 503 for a backend without endpoints once it is chosen, before limits and access (ingress-nginx's
 * balancer.lua rewrite). A route with a default-backend fallback or custom error pages leaves
 * it to the handler's own check after the stages, which sends to the fallback or answers the
 * error page (docs/design.md, "Error pages"), as it did before the stages ran it.
 */
const ENDPOINTS_CHECK: PolicyStep = (flow) => {
  const b = flow.backend;
  if (b.status === "ok" && b.endpoints.length > 0) return null;
  if (flow.route.fallback !== undefined || flow.route.errorPages !== undefined) return null;
  throw new ProxyError("NoEndpoints", b.status);
};

function stepsOf(stages: readonly StagePolicy[], kinds: PolicyKinds, ctx: PolicyContext | undefined): readonly PolicyStep[] {
  // Ordered here too, so the order holds whoever built the table. A policy of an unknown stage
  // sorts first (index -1) and refuses, so nothing is skipped.
  const at = stages.map((p, i) => ({ at: stageIndex(p.stage), i, step: stepOf(p, kinds, ctx) }));
  at.push({ at: stageIndex(HTTPS_REDIRECT_AFTER) + 0.5, i: 0, step: HTTPS_REDIRECT });
  at.push({ at: stageIndex(ENDPOINTS_CHECK_AFTER) + 0.5, i: 0, step: ENDPOINTS_CHECK });
  return at.sort((a, b) => a.at - b.at || a.i - b.i).map((s) => s.step);
}

function stepOf(p: StagePolicy, kinds: PolicyKinds, ctx: PolicyContext | undefined): PolicyStep {
  const kind = kinds.get(p.kind);
  if (kind === undefined) return refuse(`no implementation for policy kind ${JSON.stringify(p.kind)}`);
  if (kind.contract.stage !== p.stage) return refuse(`policy kind ${p.kind} belongs to stage ${kind.contract.stage}, not ${p.stage}`);
  try {
    return buildKind(kind, p.params, ctx);
  } catch (e) {
    return refuse(`policy ${p.kind}: ${String(e)}`);
  }
}

/**
 * `kind`'s step for `params`, checked first against the kind's contract (the schema the family
 * wrote them with: they crossed IPC as JSON, so they are checked again before the kind reads
 * them). Throws on parameters either refuses.
 */
export function buildKind(kind: PolicyKind, params: StagePolicy["params"], ctx?: PolicyContext): PolicyStep {
  const parsed = v.safeParse(kind.contract.schema, params);
  if (!parsed.success) throw new TypeError(v.summarize(parsed.issues));
  return kind.build(parsed.output, ctx);
}

export function createPolicyRunner(kinds: PolicyKinds, ctx?: PolicyContext): PolicyRunner {
  // Keyed by the route's frozen stages array: built once per table generation, not per request.
  const cache = new WeakMap<readonly StagePolicy[], readonly PolicyStep[]>();
  return async (stages, flow) => {
    let steps = cache.get(stages);
    if (steps === undefined) {
      steps = stepsOf(stages, kinds, ctx);
      cache.set(stages, steps);
    }
    for (const step of steps) {
      const out = step(flow);
      const answer = out instanceof Promise ? await out : out;
      if (answer !== null) return answer;
    }
    return null;
  };
}
