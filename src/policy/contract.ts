// One policy kind's contract, written once (docs/design.md, "Annotations and policies"): its id
// (StagePolicy.kind), the stage it runs in, and the valibot schema of its parameters, whose
// output type is the parameter type both sides use. An annotation family or the compiler
// writes a policy with stagePolicy(contract, params), typed by it; the proxy's runner checks the
// table's params against the same schema (they crossed IPC as JSON) before the kind's build
// sees them, and refuses the route (500) when they do not pass: access control fails closed.
import type * as v from "valibot";
import type { PolicyStage, StagePolicy } from "./stages.ts";

export interface KindContract<P = unknown> {
  readonly id: string;
  readonly stage: PolicyStage;
  readonly schema: v.GenericSchema<unknown, P>;
}

/** The parameter type of a contract. */
export type ParamsOf<K> = K extends KindContract<infer P> ? P : never;

// The contracts defineKind made, so a registry can pick them out of a module's exports
// (policy/registry.ts) without a hand-kept list.
const DEFINED = new WeakSet<object>();

export function defineKind<S extends v.GenericSchema>(id: string, stage: PolicyStage, schema: S): KindContract<v.InferOutput<S>> {
  const kind = Object.freeze({ id, stage, schema: schema as v.GenericSchema<unknown, v.InferOutput<S>> });
  DEFINED.add(kind);
  return kind;
}

/** Was `x` made by defineKind? */
export const isKindContract = (x: unknown): x is KindContract => typeof x === "object" && x !== null && DEFINED.has(x);

/** `T` with every array and object in it read-only: what a family may hand to stagePolicy. */
export type DeepReadonly<T> = T extends readonly (infer U)[]
  ? readonly DeepReadonly<U>[]
  : T extends object
    ? { readonly [K in keyof T]: DeepReadonly<T[K]> }
    : T;

/** The one way a policy is written: stage and id from the contract, parameters of its type. */
export function stagePolicy<P>(kind: KindContract<P>, params: DeepReadonly<P>): StagePolicy {
  return { stage: kind.stage, kind: kind.id, params: params as StagePolicy["params"] };
}
