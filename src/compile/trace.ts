// What the claim rule (host-entry.ts) and the default-backend rule (defaults.ts) decided, for
// explain. Those functions take an optional trace; the compile passes none, so it pays
// nothing. Invalid rule paths need no trace: their plan keeps them (plan.ts RulePath).
import type { Route } from "../table/types.ts";
import type { IngressPlan, PathPlan } from "./plan.ts";

/** Why a valid rule path has, or has not, a route in its host. */
export type ClaimOutcome =
  | { readonly kind: "route"; readonly route: Route }
  | { readonly kind: "duplicate"; readonly message: string }
  /** Valid as written, but not servable on this host: no literal form, or a regex or rewrite Portico cannot run. */
  | { readonly kind: "invalid"; readonly message: string }
  | { readonly kind: "conflict"; readonly winner: string; readonly message: string }
  /** A canary Ingress's path, attached to main's route (`main` is main's `namespace/name`). */
  | { readonly kind: "canary"; readonly main: string; readonly route: Route }
  /** A canary Ingress's path that is not used (no main route, another canary first, invalid). */
  | { readonly kind: "canary-unused"; readonly message: string };

export type DefaultOutcome =
  | { readonly kind: "route"; readonly route: Route }
  | { readonly kind: "invalid"; readonly reason: "InvalidBackend"; readonly message: string }
  | { readonly kind: "conflict"; readonly winner: string; readonly message: string };

export interface CompileTrace {
  /** The outcome of every path plan of the hosts built with this trace. */
  readonly paths: Map<PathPlan, ClaimOutcome>;
  /** Every served spec.defaultBackend, in priority order. */
  readonly defaults: { readonly plan: IngressPlan; readonly outcome: DefaultOutcome }[];
}

export function newTrace(): CompileTrace {
  return { paths: new Map(), defaults: [] };
}
