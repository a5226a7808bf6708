// Request-side policies a route carries (docs/design.md, "Annotations and policies"). The
// compiler produces them from annotations (src/annotations/); the proxy runs them
// (src/proxy/policies.ts). They are plain data because the table crosses IPC to the workers
// as JSON (table/wire.ts): no functions, no Infinity or NaN, no undefined.

/**
 * The stages, in the one order they run for every request. `denied` first: a route whose
 * access or authentication annotations cannot be applied refuses everything (503), as
 * ingress-nginx's "location denied" does at the top of the location's rewrite phase. CORS
 * next: ingress-nginx answers a preflight in the rewrite phase, before its access phase (allow
 * lists, authentication), and a browser's preflight never carries credentials. Request limits
 * next, where nginx's pre-access phase runs them (after the rewrite phase, before access), so
 * a client refused by an allow list or authentication still counts against its limits. Access
 * control comes next, so a client that may not reach a route learns nothing from its other
 * policies.
 */
export const POLICY_STAGES = [
  "denied",
  "cors",
  "limits",
  "access",
  "authentication",
  "redirects",
  "rewrite",
  "backend",
  "forwarding",
  "errorPages",
] as const;

export type PolicyStage = (typeof POLICY_STAGES)[number];

/** A value that survives JSON unchanged (finite numbers only). */
export type PolicyValue = string | number | boolean | null | readonly PolicyValue[] | { readonly [key: string]: PolicyValue };

/** One policy of one route: the stage it runs in, the implementation (`kind`), its parameters. */
export interface StagePolicy {
  readonly stage: PolicyStage;
  /** Names the proxy-side implementation, e.g. "source-range"; one stage may host several kinds. */
  readonly kind: string;
  /** Validated by the annotation family that produced the policy; frozen. */
  readonly params: { readonly [key: string]: PolicyValue };
}

/** Position of a stage in POLICY_STAGES. */
export const stageIndex = (s: PolicyStage): number => POLICY_STAGES.indexOf(s);

/** `policies` sorted by stage (stable within a stage) and frozen through, or null when there are none. */
export function orderStages(policies: readonly StagePolicy[]): readonly StagePolicy[] | null {
  if (policies.length === 0) return null;
  const sorted = policies
    .map((p, i) => [p, i] as const)
    .sort((a, b) => stageIndex(a[0].stage) - stageIndex(b[0].stage) || a[1] - b[1])
    .map(([p]) => p);
  return deepFreeze(sorted);
}

/** Freeze a JSON value and everything in it (a decoded policy must be as immutable as a compiled one). */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object") {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

/** Parameters that hold credentials (basic-auth users and hashes): never shown, only counted. */
const SECRET_PARAMS: ReadonlySet<string> = new Set(["users"]);

/**
 * `p` as /debug/routes and golden files show it: a credential parameter becomes
 * `"<redacted: N entries>"` (null stays null), so neither hashes nor user names leave the process
 * through the admin port or logs.
 */
export function redactStage(p: StagePolicy): StagePolicy {
  if (!Object.keys(p.params).some((k) => SECRET_PARAMS.has(k))) return p;
  const params: Record<string, PolicyValue> = {};
  for (const [k, v] of Object.entries(p.params)) {
    const n = Array.isArray(v) ? v.length : 1;
    params[k] = SECRET_PARAMS.has(k) && v !== null ? `<redacted: ${n} ${n === 1 ? "entry" : "entries"}>` : v;
  }
  return { ...p, params };
}
