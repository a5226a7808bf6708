// How a route's requests are spread over the pods: `load-balance` and `upstream-hash-by`
// (ingress-nginx's internal/ingress/annotations/{loadbalancing,upstreamhashby} and
// rootfs/etc/nginx/lua/balancer/*.lua). The proxy side is kinds/backend.ts and balancer.ts (docs/design.md,
// "Balancing and affinity").
//
// `upstream-hash-by` is an nginx variable expression in ingress-nginx, evaluated by Lua with
// access to every nginx variable (High risk). Portico reads it into a fixed list of parts and
// never evaluates anything else: `$remote_addr`, `$request_uri`, `$http_<name>`,
// `$cookie_<name>`, and literal text between them. The data plane concatenates their values.
import * as v from "valibot";
import type { StagePolicy } from "../policy/stages.ts";
import type { HashPart } from "../policy/params.ts";
import type { AffinityPolicy } from "./affinity.ts";
import { affinityStage } from "./affinity.ts";
import type { AnnotationSpec, Family } from "./spec.ts";
import { NGINX_PREFIX } from "./spec.ts";
import { Bool, Int } from "./values.ts";
import { stagePolicy } from "../policy/contract.ts";
import * as K from "../kinds/index.ts";

export interface BalancingPolicy {
  /** `load-balance`; null when not set (round robin). */
  readonly algorithm: "round_robin" | "ewma" | null;
  /** `upstream-hash-by` read into parts; null when not set. */
  readonly hashBy: readonly HashPart[] | null;
  /** `upstream-hash-by-subset-size` when `-subset` is true; 0 otherwise. */
  readonly subsetSize: number;
}

const n = (name: string): string => `${NGINX_PREFIX}${name}`;

export const LOAD_BALANCE: AnnotationSpec = {
  portico: "portico.dev/load-balance",
  nginx: [n("load-balance")],
  family: "balancing",
  default: "round_robin",
  description: "`round_robin` or `ewma` (the lower recent latency of two random pods)",
  compat: {
    kind: "differs",
    difference:
      "`ewma` scores time to response headers (ingress-nginx: to the last byte, buffered), and over the window of a backend with more endpoints than subsetting allows (docs/design.md, \"Balancing and affinity\"). `chash`, `chashsubset`, `sticky_*` (use `upstream-hash-by`, `affinity`) and any other value give an InvalidAnnotation diagnostic and round robin (ingress-nginx refuses the Ingress for an unknown value). Set per Ingress, not per Service port.",
  },
};

export const HASH_BY: AnnotationSpec = {
  portico: "portico.dev/upstream-hash-by",
  nginx: [n("upstream-hash-by")],
  family: "balancing",
  default: "none",
  description:
    "consistent hashing on `$remote_addr`, `$request_uri`, `$http_<name>`, `$cookie_<name>` (also `${name}`) and text between them, such as `$cookie_user-$http_x_tenant`",
  compat: {
    kind: "differs",
    difference:
      "Other nginx variables are refused (InvalidAnnotation, round robin; ingress-nginx evaluates any variable and refuses the Ingress for a value its character check rejects); `$binary_remote_addr` reads as `$remote_addr`. `$request_uri` is the normalised path and the query as sent. Keys land on other pods than ingress-nginx's (another ring hash, the same in every Portico replica); a pod backing off after a refused connection passes its keys to the next pod on the ring meanwhile (ingress-nginx retries the same pod).",
  },
};

export const HASH_BY_SUBSET: AnnotationSpec = {
  portico: "portico.dev/upstream-hash-by-subset",
  nginx: [n("upstream-hash-by-subset")],
  family: "balancing",
  default: "false",
  description: "`true`: a key maps to a group of pods and each request goes to a random one of them",
  compat: {
    kind: "differs",
    difference:
      "A key's group is the `-subset-size` pods that follow it on the ring (ingress-nginx: fixed groups of consecutive endpoints, padded by repetition, which reshuffle every group when one endpoint goes).",
  },
};

export const HASH_BY_SUBSET_SIZE: AnnotationSpec = {
  portico: "portico.dev/upstream-hash-by-subset-size",
  nginx: [n("upstream-hash-by-subset-size")],
  family: "balancing",
  default: "3",
  description: "pods in each group (1-1000; `0` means 3)",
  compat: { kind: "same" },
};

/** A header name as nginx's `$http_` variables spell it: `_` for `-`, any case. */
const HEADER_VAR = /^http_([0-9a-zA-Z_]+)$/;
const COOKIE_VAR = /^cookie_([0-9a-zA-Z_]+)$/;

/**
 * `upstream-hash-by` text → parts, or why not. ingress-nginx's character check (letters,
 * digits, `-`, `_`, `$`, `{`, `}`) first, then its Lua reading: `${name}` or `$name` (the
 * longest run of letters, digits and `_`) is a variable, anything else text.
 */
export function parseHashBy(text: string): readonly HashPart[] | string {
  if (!/^[A-Za-z0-9_${}-]{1,256}$/.test(text)) return "expected nginx variables and text of letters, digits, -, _, $, { and } (at most 256 characters)";
  const parts: HashPart[] = [];
  const re = /\$\{([0-9a-zA-Z_]+)\}|\$([0-9a-zA-Z_]+)|([^$]+)|(\$)/g;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    if (m[3] !== undefined) {
      parts.push({ text: m[3] });
      continue;
    }
    if (m[4] !== undefined) return "a `$` must start a variable name";
    const name = (m[1] ?? m[2]) as string;
    const lower = name.toLowerCase();
    if (lower === "remote_addr" || lower === "binary_remote_addr") parts.push({ var: "remote_addr" });
    else if (lower === "request_uri") parts.push({ var: "request_uri" });
    else if (HEADER_VAR.test(lower)) parts.push({ header: (HEADER_VAR.exec(lower) as RegExpExecArray)[1]!.replace(/_/g, "-") });
    else if (COOKIE_VAR.test(lower)) parts.push({ cookie: (COOKIE_VAR.exec(name) as RegExpExecArray)[1]! });
    else return `$${name} is not supported (Portico hashes on $remote_addr, $request_uri, $http_<name>, $cookie_<name> and text)`;
  }
  return Object.freeze(parts.map((p) => Object.freeze(p)));
}

const HashBy = v.pipe(
  v.string(),
  v.trim(),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    const r = parseHashBy(dataset.value);
    if (typeof r === "string") {
      addIssue({ message: r });
      return NEVER;
    }
    return r;
  }),
);

// ingress-nginx's options are case-sensitive; the ones it has and Portico does not are named.
const Algorithm = v.pipe(
  v.string(),
  v.trim(),
  v.check((s) => !["chash", "chashsubset", "sticky_balanced", "sticky_persistent"].includes(s), "not supported: use upstream-hash-by or affinity: cookie"),
  v.picklist(["round_robin", "ewma"], "expected round_robin or ewma"),
);

const SubsetSize = v.pipe(
  Int,
  v.check((k) => k >= 0 && k <= 1000, "expected 1-1000 (0 means 3)"),
  v.transform((k) => (k === 0 ? 3 : k)),
);

const NONE: BalancingPolicy = Object.freeze({ algorithm: null, hashBy: null, subsetSize: 0 });

export const BALANCING: Family<BalancingPolicy> = {
  name: "balancing",
  annotations: [LOAD_BALANCE, HASH_BY, HASH_BY_SUBSET, HASH_BY_SUBSET_SIZE],
  none: NONE,
  // Cookie affinity, when set, wins over the balancing algorithm (endpointChoiceStages).
  stages: (b, all) => endpointChoiceStages(all.affinity as AffinityPolicy, b),
  parse(r) {
    const algorithm = r.read(LOAD_BALANCE, Algorithm, "balancing round robin");
    const hashBy = r.read(HASH_BY, HashBy, "balancing round robin");
    const subset = r.value(HASH_BY_SUBSET, Bool) ?? false;
    const size = r.value(HASH_BY_SUBSET_SIZE, SubsetSize) ?? 3;
    if (algorithm.state !== "ok" && hashBy.state !== "ok") return NONE;
    return Object.freeze({
      algorithm: algorithm.state === "ok" ? algorithm.value : null,
      hashBy: hashBy.state === "ok" ? hashBy.value : null,
      subsetSize: hashBy.state === "ok" && subset ? size : 0,
    });
  },
};

/**
 * The route's one `backend` stage policy choosing endpoints, in ingress-nginx's precedence:
 * cookie affinity, then `upstream-hash-by`, then `load-balance` (rootfs/etc/nginx/lua/balancer.lua
 * get_implementation). None for round robin: the default balancer, at no cost.
 */
export function endpointChoiceStages(affinity: AffinityPolicy, balancing: BalancingPolicy): StagePolicy[] {
  if (affinity.cookie !== null) return [affinityStage(affinity.cookie)];
  if (balancing.hashBy !== null) return [stagePolicy(K.HASH, { parts: [...balancing.hashBy], subsetSize: balancing.subsetSize })];
  if (balancing.algorithm === "ewma") return [stagePolicy(K.EWMA, {})];
  return [];
}
