// The one place a route's stage list (RouteOptions.stages) is put together and ordered
// (docs/design.md, "Annotations and policies"). The suppliers hand in StagePolicy values
// written with stagePolicy() from their kind's contract: the annotation families (through
// annotationStages below), the compile steps that add what lies outside an Ingress (the
// Secrets and flags of compile/access.ts, the host-wide client certificate and the canary of
// host-entry.ts, the global relative-redirects of plan.ts), and the Gateway API filters
// (compile/gateway/table.ts). assembleStages orders them by the stage their contract names
// (policy/stages.ts POLICY_STAGES, ingress-nginx's phase order); within one stage the order
// supplied decides, which matters only where two policies of a stage can both answer (the
// first refusal in `denied`, the canary before main's affinity in `backend`).
import { refuseStage } from "../annotations/access-stages.ts";
import { FAMILIES } from "../annotations/registry.ts";
import type { Family } from "../annotations/spec.ts";
import { stagePolicy } from "../policy/contract.ts";
import { POLICY_KINDS } from "../kinds/registry.ts";
import * as K from "../kinds/index.ts";
import { deepFreeze, stageIndex, type PolicyStage, type StagePolicy } from "../policy/stages.ts";
import type { AnnotationPolicies } from "../annotations/parse.ts";

/** What a supplier hands in: one policy, a list of them, or nothing. */
export type StageSupply = StagePolicy | null | undefined | readonly StagePolicy[];

/**
 * The stage a policy runs in: its kind's (kinds/registry.ts). A kind no contract names keeps
 * the stage it was written with; the proxy refuses to run it anyway (proxy/policies/run.ts).
 */
const stageOf = (p: StagePolicy): PolicyStage => POLICY_KINDS.get(p.kind)?.stage ?? p.stage;

/**
 * A route's stage list: every policy supplied, in stage order (stable: within one stage, the
 * order supplied), frozen through; null when there is none. The only function that builds
 * RouteOptions.stages (a test holds every other module to it).
 */
export function assembleStages(...supplied: readonly StageSupply[]): readonly StagePolicy[] | null {
  const all: StagePolicy[] = [];
  for (const s of supplied) {
    if (s === null || s === undefined) continue;
    if (Array.isArray(s)) all.push(...(s as readonly StagePolicy[]));
    else all.push(s as StagePolicy);
  }
  if (all.length === 0) return null;
  const sorted = all
    .map((p, i) => [p, stageIndex(stageOf(p)), i] as const)
    .sort((a, b) => a[1] - b[1] || a[2] - b[2])
    .map(([p]) => p);
  return deepFreeze(sorted);
}

/**
 * What the annotation families supply for one Ingress, in the order of the registry
 * (annotations/registry.ts FAMILIES, where a family is added): each family's Family.stages.
 * An Ingress ingress-nginx would refuse supplies the 503 alone; an access check Portico cannot
 * run (`refusal`: a snippet, an unimplemented guard) is supplied first, so its 503 is the one a
 * request gets ahead of any other refusal or header deny rule of the route, as its diagnostic
 * says ("every request ... is refused with 503").
 */
export function annotationStages(policies: AnnotationPolicies, denied: string | null, refusal: string | null): readonly StagePolicy[] {
  if (denied !== null) return [stagePolicy(K.DENIED, { reason: denied })];
  const out: StagePolicy[] = [];
  if (refusal !== null) out.push(refuseStage(refusal));
  const all = policies as unknown as { readonly [family: string]: unknown };
  for (const [key, family] of Object.entries(FAMILIES) as [keyof typeof FAMILIES, Family<unknown>][]) {
    if (family.stages !== undefined) out.push(...family.stages(policies[key], all));
  }
  return out;
}
