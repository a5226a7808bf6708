// Request-side policies a route carries (docs/design.md, "Annotations and policies"). The
// compiler produces them from annotations (src/annotations/); the proxy runs them
// (src/proxy/policies/run.ts). They are plain data because the table crosses IPC to the workers
// as JSON (table/wire.ts): no functions, no Infinity or NaN, no undefined.

/**
 * The stages, in the one order they run for every request: ingress-nginx's phase order, so
 * an Ingress written for it answers the same way (docs/design.md, "Annotations and policies").
 * nginx checks a client certificate when it reads the request, before any phase, and
 * ingress-nginx's server block answers 403 for a CA it cannot use before its other directives
 * ("certificate"); nginx then runs the server's rewrite directives before it picks the
 * location ("server": app-root, the www redirect); then, in the location's rewrite phase, a location denied for a bad
 * annotation answers 503, a CORS preflight 204, `permanent-`/`temporal-redirect` their
 * redirect and `rewrite-target` its rewrite; Lua then redirects to HTTPS and picks the
 * backend (503 without endpoints); the pre-access phase applies the limits, the access
 * phase the source ranges and authentication; last comes the proxying itself. So a
 * redirect or a preflight is answered before any access check, as ingress-nginx does.
 */
export const POLICY_STAGES = [
  "certificate",
  "server",
  "denied",
  "cors",
  "redirects",
  "rewrite",
  "backend",
  "limits",
  "access",
  "authentication",
  "forwarding",
  "errorPages",
] as const;

export type PolicyStage = (typeof POLICY_STAGES)[number];

/**
 * The proxy's own checks between two stages (src/proxy/policies/run.ts runs them there): the
 * HTTPS redirect after ingress-nginx's rewrite phase (`lua_ingress.lua` runs after the
 * location's rewrite directives), and the 503 for a backend without endpoints once the
 * backend is chosen (`balancer.lua`'s rewrite), both before limits and access.
 */
export const HTTPS_REDIRECT_AFTER: PolicyStage = "rewrite";
export const ENDPOINTS_CHECK_AFTER: PolicyStage = "backend";

/**
 * The ids of the two `server` stage kinds the table builder places itself (table/build.ts:
 * app-root answers `/` before the locations run, as nginx's server-level `if`; the host
 * ingress-nginx adds for from-to-www-redirect gets a route with the www redirect). Their
 * contracts are in kinds/server.ts, a folder above table/, so the ids are named here, below both.
 */
export const APP_ROOT_KIND = "app-root";
export const WWW_REDIRECT_KIND = "www-redirect";

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

/** Position of a stage in POLICY_STAGES (compile/stages.ts orders a route's stages by it). */
export const stageIndex = (s: PolicyStage): number => POLICY_STAGES.indexOf(s);

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
  // A policy that holds others (`satisfy any`'s checks) has their parameters redacted too.
  const nested = p.params[NESTED_PARAM];
  if (Array.isArray(nested)) {
    const checks = (nested as readonly { kind: string; params: StagePolicy["params"] }[]).map((c) => ({ kind: c.kind, params: redactStage({ stage: p.stage, kind: c.kind, params: c.params }).params }));
    return { ...p, params: { ...p.params, [NESTED_PARAM]: checks } };
  }
  if (!Object.keys(p.params).some((k) => SECRET_PARAMS.has(k))) return p;
  const params: Record<string, PolicyValue> = {};
  for (const [k, v] of Object.entries(p.params)) {
    const n = Array.isArray(v) ? v.length : 1;
    params[k] = SECRET_PARAMS.has(k) && v !== null ? `<redacted: ${n} ${n === 1 ? "entry" : "entries"}>` : v;
  }
  return { ...p, params };
}

/** The parameter of a policy that holds other policies (kinds/satisfy.ts `checks`). */
const NESTED_PARAM = "checks";
