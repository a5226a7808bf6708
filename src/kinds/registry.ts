// The one registry of policy kinds: every kind the stage modules export (index.ts), by id.
// It is what the compiler's kinds are checked against (compile/stages.ts, explain's stages in
// compile/answer.ts) and what the proxy's runner runs (proxy/policies/run.ts), so a kind the
// compiler can emit always has its runner: they are one object (define.ts). A kind is added
// in the module of its stage and nowhere else; the annotation families are registered apart,
// in annotations/registry.ts, which sits above this folder (docs/design.md, "Layout").
import { isPolicyKind } from "./define.ts";
import * as K from "./index.ts";
import type { PolicyKind, PolicyKinds } from "./types.ts";

/** Every kind among `values`, by id; two kinds with one id are a programming error. */
export function kindMap(values: readonly unknown[]): PolicyKinds {
  const out = new Map<string, PolicyKind>();
  for (const x of values) {
    if (!isPolicyKind(x)) continue;
    if (out.has(x.id)) throw new Error(`two policy kinds are named ${JSON.stringify(x.id)}`);
    out.set(x.id, x);
  }
  return out;
}

/** The kinds Portico implements, by id (StagePolicy.kind). */
export const POLICY_KINDS: PolicyKinds = kindMap(Object.values(K));
