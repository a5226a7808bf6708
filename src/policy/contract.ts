// One policy kind's contract (docs/design.md, "Annotations and policies"): its id
// (StagePolicy.kind), the stage it runs in, and the valibot schema of its parameters, whose
// output type is the parameter type both sides use. Each kind (kinds/define.ts defineKind) is
// one, with its build beside it. An annotation family or the compiler writes a policy with
// stagePolicy(kind, params), typed by it; the proxy's runner checks the table's params against
// the same schema (they crossed IPC as JSON) before the kind's build sees them, and refuses
// the route (500) when they do not pass: access control fails closed.
import type * as v from "valibot";
import type { PolicyStage, StagePolicy } from "./stages.ts";

export interface KindContract<P = unknown> {
  readonly id: string;
  readonly stage: PolicyStage;
  readonly schema: v.GenericSchema<unknown, P>;
}

/** The parameter type of a contract. */
export type ParamsOf<K> = K extends KindContract<infer P> ? P : never;

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
