// What happened to each rule path and default backend during a compile. Recorded only when
// explain asks for it (compile passes no trace), so the hot path pays nothing.
import type { Ingress } from "../model/schemas.ts";
import type { PathType, Route } from "../table/types.ts";
import type { ClassDecision } from "./class.ts";

export type PathOutcome =
  | { readonly kind: "route"; readonly route: Route }
  | { readonly kind: "invalid"; readonly reason: "InvalidHost" | "InvalidPath" | "InvalidBackend"; readonly message: string }
  | { readonly kind: "duplicate"; readonly message: string }
  | { readonly kind: "conflict"; readonly winner: string; readonly message: string };

export interface PathTrace {
  readonly ingress: Ingress;
  readonly ruleIndex: number;
  readonly pathIndex: number;
  readonly host: string | null;
  readonly rawHost: string | null;
  readonly path: string;
  readonly pathType: PathType | null;
  readonly outcome: PathOutcome;
}

export interface CompileTrace {
  readonly classes: { readonly ingress: Ingress; readonly decision: ClassDecision }[];
  readonly paths: PathTrace[];
  readonly defaults: { readonly ingress: Ingress; readonly outcome: PathOutcome }[];
}

export function newTrace(): CompileTrace {
  return { classes: [], paths: [], defaults: [] };
}
