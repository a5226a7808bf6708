// The `backend` stage: which backend and which of its endpoints (ingress-nginx's balancer.lua,
// in the rewrite phase). Every kind of the stage is defined or exported here: the canary
// (canary.ts) and cookie affinity (affinity.ts) in files of their own; `upstream-hash-by`
// (consistent hashing, ring.ts) and `load-balance: ewma` (proxy/upstream/balancer.ts) here.
// Each but the canary sets the request's EndpointChoice; proxy/upstream/forward.ts and
// websocket.ts then pick through it (docs/design.md, "Balancing and affinity").
import * as v from "valibot";
import type { HashPart } from "../policy/params.ts";
import type { Backend, Upstream } from "../table/types.ts";
import { cookieValue } from "./cookies.ts";
import { defineKind } from "./define.ts";
import { ringOf, ringWalk } from "./ring.ts";
import type { Balancer, EndpointChoice, PolicyFlow } from "./types.ts";

export { AFFINITY } from "./affinity.ts";
export { CANARY } from "./canary.ts";

const HashPartSchema = v.union([
  v.strictObject({ text: v.string() }),
  v.strictObject({ var: v.picklist(["remote_addr", "request_uri"]) }),
  v.strictObject({ header: v.pipe(v.string(), v.regex(/^[0-9a-z-]+$/)) }),
  v.strictObject({ cookie: v.pipe(v.string(), v.regex(/^[0-9a-zA-Z_]+$/)) }),
]);



/** The request's value of one part, as nginx gives its variables (a missing header or cookie is ""). */
function valueOf(p: HashPart, flow: PolicyFlow): string {
  if ("text" in p) return p.text;
  if ("var" in p) return p.var === "remote_addr" ? flow.clientIp : flow.path + flow.query;
  if ("header" in p) return flow.req.headers.get(p.header) ?? "";
  return cookieValue(flow.req.headers.get("cookie"), p.cookie, true) ?? "";
}

/** The request's hash key: its parts' values, concatenated. */
function hashKey(parts: readonly HashPart[], flow: PolicyFlow): string {
  if (parts.length === 1) return valueOf(parts[0] as HashPart, flow);
  let key = "";
  for (const p of parts) key += valueOf(p, flow);
  return key;
}

/**
 * The key's pod, or (subsets) a random usable one of the `subsetSize` pods from the key's ring
 * position. A pod this request tried already or that is backing off after a refused
 * connection is passed over for the next one on the ring, so a key's traffic moves only while
 * its pod cannot take it; when every pod is backing off, the first untried one is used anyway.
 */
export function pickByKey(backend: Backend, balancer: Balancer, key: string, subsetSize: number, exclude: ReadonlySet<string> | undefined, random: () => number): Upstream | null {
  const ring = ringOf(backend);
  let chosen: Upstream | null = null;
  let fallback: Upstream | null = null;
  let members: Upstream[] | null = null;
  let seen = 0;
  ringWalk(ring, key, (u) => {
    seen++;
    const untried = exclude === undefined || !exclude.has(u.authority);
    const ok = untried && !balancer.isBackedOff(u.authority);
    if (!ok && untried) fallback ??= u;
    if (subsetSize > 0 && seen <= subsetSize) {
      // The key's group: a random usable member once the group is complete, else walk on.
      if (ok) (members ??= []).push(u);
      return seen === subsetSize && members !== null;
    }
    if (!ok) return false;
    chosen = u;
    return true;
  });
  const group = members as Upstream[] | null;
  if (group !== null && group.length > 0) return group[Math.floor(random() * group.length)] as Upstream;
  return chosen ?? fallback;
}

class HashChoice implements EndpointChoice {
  constructor(
    private readonly key: string,
    private readonly subsetSize: number,
  ) {}
  pick(backend: Backend, balancer: Balancer, exclude: ReadonlySet<string> | undefined): Upstream | null {
    return pickByKey(backend, balancer, this.key, this.subsetSize, exclude, Math.random);
  }
  answered(): void {}
  setCookie(): string | null {
    return null;
  }
}

/**
 * upstream-hash-by (policy/params.ts HashPart); subsetSize 0 is the key's own pod, k > 0 one of k.
 */
export const HASH = defineKind("hash", "backend", v.object({ parts: v.pipe(v.array(HashPartSchema), v.minLength(1)), subsetSize: v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(1000)) }), (p) => {
  const parts = p.parts as readonly HashPart[];
  return (flow) => {
    flow.choice = new HashChoice(hashKey(parts, flow), p.subsetSize);
    return null;
  };
});

/** One shared choice: EWMA needs nothing per request beyond what the balancer keeps. */
const EWMA_CHOICE: EndpointChoice = {
  pick: (backend, balancer, exclude) => balancer.pickEwma(backend, exclude),
  answered: (u, ms, balancer) => balancer.observe(u, ms),
  setCookie: () => null,
};

/**
 * load-balance: ewma.
 */
export const EWMA = defineKind("ewma", "backend", v.object({}), () => {
  return (flow) => {
    flow.choice = EWMA_CHOICE;
    return null;
  };
});
