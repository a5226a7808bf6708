// Runs a route's request-side policies (RouteOptions.stages) in the one stage order of
// policy/stages.ts, with the proxy's own checks (the HTTPS redirect, no endpoints: written in
// proxy/pipeline/checks.ts and given to createPolicyRunner) at their place between the stages.
// docs/design.md, "Annotations and policies": the pipeline calls the runner only when a route
// has policies, so a route without any pays one null check.
import { stageIndex, type PolicyStage, type StagePolicy } from "../../policy/stages.ts";
import type { PolicyCaps, PolicyFlow, PolicyKind, PolicyKinds, PolicyStep } from "../../kinds/types.ts";
import * as v from "valibot";
import { ProxyError } from "../../http/errors.ts";

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

/** A check of the proxy's own (proxy/pipeline/checks.ts), run after the stage `after`'s policies. */
export interface BuiltInStage {
  readonly after: PolicyStage;
  readonly step: PolicyStep;
}

function stepsOf(stages: readonly StagePolicy[], kinds: PolicyKinds, caps: PolicyCaps | undefined, builtIn: readonly BuiltInStage[]): readonly PolicyStep[] {
  // Ordered here too, so the order holds whoever built the table. A policy of an unknown stage
  // sorts first (index -1) and refuses, so nothing is skipped.
  const at = stages.map((p, i) => ({ at: stageIndex(p.stage), i, step: stepOf(p, kinds, caps) }));
  for (const b of builtIn) at.push({ at: stageIndex(b.after) + 0.5, i: 0, step: b.step });
  return at.sort((a, b) => a.at - b.at || a.i - b.i).map((s) => s.step);
}

function stepOf(p: StagePolicy, kinds: PolicyKinds, caps: PolicyCaps | undefined): PolicyStep {
  const kind = kinds.get(p.kind);
  if (kind === undefined) return refuse(`no implementation for policy kind ${JSON.stringify(p.kind)}`);
  if (kind.stage !== p.stage) return refuse(`policy kind ${p.kind} belongs to stage ${kind.stage}, not ${p.stage}`);
  try {
    return buildKind(kind, p.params, caps);
  } catch (e) {
    return refuse(`policy ${p.kind}: ${String(e)}`);
  }
}

/**
 * `kind`'s step for `params`, checked first against the kind's schema (the schema the family
 * wrote them with: they crossed IPC as JSON, so they are checked again before the kind reads
 * them). Throws on parameters either refuses.
 */
export function buildKind(kind: PolicyKind, params: StagePolicy["params"], caps?: PolicyCaps): PolicyStep {
  const parsed = v.safeParse(kind.schema, params);
  if (!parsed.success) throw new TypeError(v.summarize(parsed.issues));
  return kind.build(parsed.output, caps);
}

export function createPolicyRunner(kinds: PolicyKinds, caps?: PolicyCaps, builtIn: readonly BuiltInStage[] = []): PolicyRunner {
  // Keyed by the route's frozen stages array: built once per table generation, not per request.
  const cache = new WeakMap<readonly StagePolicy[], readonly PolicyStep[]>();
  return async (stages, flow) => {
    let steps = cache.get(stages);
    if (steps === undefined) {
      steps = stepsOf(stages, kinds, caps, builtIn);
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
