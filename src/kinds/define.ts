// A policy kind, defined once (docs/design.md, "Annotations and policies"): its id
// (StagePolicy.kind), the stage it runs in, the valibot schema of its parameters (whose output
// type is the parameter type the annotation family writes with stagePolicy and the build
// reads) and the build. A kind is written in the module of its stage (kinds/<stage>.ts) and
// is registered by being exported there: kinds/registry.ts collects what defineKind made.
import type * as v from "valibot";
import type { PolicyStage } from "../policy/stages.ts";
import type { PolicyCaps, PolicyKind, PolicyStep } from "./types.ts";

// The kinds defineKind made, so the registry can pick them out of a module's exports without
// a hand-kept list.
const DEFINED = new WeakSet<object>();

export function defineKind<S extends v.GenericSchema>(
  id: string,
  stage: PolicyStage,
  schema: S,
  build: (params: v.InferOutput<S>, caps?: PolicyCaps) => PolicyStep,
): PolicyKind<v.InferOutput<S>> {
  const kind: PolicyKind<v.InferOutput<S>> = Object.freeze({ id, stage, schema: schema as v.GenericSchema<unknown, v.InferOutput<S>>, build });
  DEFINED.add(kind);
  return kind;
}

/** Was `x` made by defineKind? */
export const isPolicyKind = (x: unknown): x is PolicyKind => typeof x === "object" && x !== null && DEFINED.has(x);

/** The capabilities a kind needs, or the error that refuses its route (the runner answers 500). */
export function needCaps(caps: PolicyCaps | undefined, id: string): PolicyCaps {
  if (caps === undefined) throw new Error(`the ${id} policy needs the proxy's capabilities`);
  return caps;
}
