// Request limits per client address (ingress-nginx's internal/ingress/annotations/ratelimit
// and its template's limit_req / limit_conn directives). The proxy side is kinds/limits.ts; the route carries them as a `limits` stage policy,
// which runs where nginx's pre-access phase does (policy/stages.ts).
import type { StagePolicy } from "../policy/stages.ts";
import { parseCidrList } from "../config/cidr.ts";
import * as v from "valibot";
import type { AnnotationSpec, Family } from "./spec.ts";
import { NGINX_PREFIX } from "./spec.ts";
import { Int } from "./values.ts";
import { stagePolicy } from "../policy/contract.ts";
import * as K from "../kinds/index.ts";

export interface LimitsPolicy {
  /** 0: no limit of that kind (ingress-nginx applies a limit only when it is above 0). */
  readonly rps: number;
  readonly rpm: number;
  readonly connections: number;
  readonly burstMultiplier: number;
  /** Canonical CIDRs whose clients are never limited. */
  readonly allow: readonly string[];
  /** A limit annotation was refused: the routes answer 503 rather than run without it. */
  readonly denied: boolean;
}

const n = (name: string): string => `${NGINX_PREFIX}${name}`;

/**
 * Counted per replica in both: ingress-nginx's nginx workers share each zone in shared memory,
 * Portico's workers one table in shared memory (proxy/shared/limits.ts).
 */
const VALID_SAME = "A valid value is served the same: counted per replica, as ingress-nginx counts (its nginx workers share one zone; Portico's workers share one table in shared memory).";
const isValid = (value: string): boolean => /^\d+$/.test(value) && v.is(Limit, value);
const REFUSED = "An invalid value makes every route of the Ingress answer 503 (ingress-nginx refuses the Ingress and keeps serving its previous version, if any).";

export const LIMIT_RPS: AnnotationSpec = {
  portico: "portico.dev/limit-rps",
  nginx: [n("limit-rps")],
  family: "limits",
  default: "0 (off)",
  description: "requests per second per client address, with a burst of `limit-burst-multiplier` times as many; past it `--limit-req-status-code`",
  compat: { kind: "differs", difference: `${REFUSED} ${VALID_SAME}` },
  sameWhen: isValid,
};

export const LIMIT_RPM: AnnotationSpec = {
  portico: "portico.dev/limit-rpm",
  nginx: [n("limit-rpm")],
  family: "limits",
  default: "0 (off)",
  description: "requests per minute per client address, with the same burst rule",
  compat: { kind: "differs", difference: `${REFUSED} ${VALID_SAME}` },
  sameWhen: isValid,
};

export const LIMIT_CONNECTIONS: AnnotationSpec = {
  portico: "portico.dev/limit-connections",
  nginx: [n("limit-connections")],
  family: "limits",
  default: "0 (off)",
  description: "requests in flight per client address (a WebSocket counts while open); past it `--limit-conn-status-code`",
  compat: { kind: "differs", difference: `${REFUSED} ${VALID_SAME}` },
  sameWhen: isValid,
};

export const LIMIT_BURST_MULTIPLIER: AnnotationSpec = {
  portico: "portico.dev/limit-burst-multiplier",
  nginx: [n("limit-burst-multiplier")],
  family: "limits",
  default: "5",
  description: "burst of `limit-rps`/`limit-rpm` as a multiple of the rate (a quiet client gets rate × multiplier + 1 at once)",
  compat: {
    kind: "differs",
    difference: "A negative value is refused and the default used (ingress-nginx writes it into nginx's configuration, which then fails to load). 0 or more is served the same.",
  },
  sameWhen: (value) => /^\d+$/.test(value) && v.is(Multiplier, value),
};

export const LIMIT_ALLOWLIST: AnnotationSpec = {
  portico: "portico.dev/limit-allowlist",
  nginx: [n("limit-allowlist"), n("limit-whitelist")],
  family: "limits",
  default: "none",
  description: "comma-separated CIDRs or addresses whose clients are never limited",
  compat: { kind: "differs", difference: `${REFUSED} A valid list is served the same.` },
  sameWhen: (value) => v.is(CidrList, value),
};

const Limit = v.pipe(v.string(), v.trim(), Int);
const Multiplier = v.pipe(v.string(), v.trim(), Int, v.minValue(0, "expected 0 or more"));
const CidrList = v.pipe(
  v.string(),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    const r = parseCidrList(dataset.value);
    if (!r.ok) {
      addIssue({ message: r.error });
      return NEVER;
    }
    return r.list;
  }),
);

const NONE: LimitsPolicy = Object.freeze({ rps: 0, rpm: 0, connections: 0, burstMultiplier: 5, allow: Object.freeze([]), denied: false });

const DENY = "every route of the Ingress answers 503";

export const LIMITS: Family<LimitsPolicy> = {
  name: "limits",
  annotations: [LIMIT_RPS, LIMIT_RPM, LIMIT_CONNECTIONS, LIMIT_BURST_MULTIPLIER, LIMIT_ALLOWLIST],
  none: NONE,
  stages: (p) => limitStages(p),
  parse(r) {
    const rps = r.read(LIMIT_RPS, Limit, DENY);
    const rpm = r.read(LIMIT_RPM, Limit, DENY);
    const connections = r.read(LIMIT_CONNECTIONS, Limit, DENY);
    const allow = r.read(LIMIT_ALLOWLIST, CidrList, DENY);
    const burstMultiplier = r.value(LIMIT_BURST_MULTIPLIER, Multiplier) ?? 5;
    const denied = [rps, rpm, connections, allow].some((x) => x.state === "invalid");
    const count = (x: typeof rps): number => (x.state === "ok" && x.value > 0 ? x.value : 0);
    const policy = {
      rps: count(rps),
      rpm: count(rpm),
      connections: count(connections),
      burstMultiplier,
      allow: allow.state === "ok" ? allow.value : NONE.allow,
      denied,
    };
    if (!denied && policy.rps === 0 && policy.rpm === 0 && policy.connections === 0) return NONE;
    return Object.freeze(policy);
  },
};

/** The route's `limits` stage policy, or none when no limit is set. */
export function limitStages(p: LimitsPolicy): StagePolicy[] {
  if (p === NONE) return [];
  return [stagePolicy(K.LIMITS, { ...p, allow: [...p.allow] })];
}
