// Request limits per client address (the `limits` stage): `limit-rps`, `limit-rpm` and
// `limit-connections`, counted as ingress-nginx's nginx counts them (ingress-nginx's template
// buildRateLimit; nginx's ngx_http_limit_req_module and ngx_http_limit_conn_module):
//
// - The key is the client address after --trusted-proxies (flow.clientIp), in a zone per
//   Ingress: every host and path of one Ingress shares its counters (ingress-nginx names the
//   zones after namespace, name and uid). Addresses in `limit-allowlist` are not counted.
// - Rates are nginx's leaky bucket in integer milli-requests: each request adds 1000 to the
//   key's excess, which drains at the rate (rpm: rate × 1000 / 60, truncated, as nginx
//   stores `r/m`); a request that would take the excess past burst × 1000 is refused at once
//   (`nodelay`: nothing is queued). burst = limit × `limit-burst-multiplier`, so with a
//   multiplier of 5 a quiet client gets 5 × limit + 1 requests at once. rps and rpm are both
//   checked (rps first, the template's order) and a refused request counts in neither.
// - Connections: requests in flight per key (nginx holds a limit_conn slot until the request
//   ends: a WebSocket holds it for its lifetime).
// - nginx runs limit_req's handler before limit_conn's (pre-access handlers run in reverse
//   order of registration, and limit_conn registers first; not pinned to a test): a request
//   refused for its rate takes no connection slot.
// - Counters are per pod, as ingress-nginx's are per replica: a single process counts here,
//   in its own memory; with --workers N every worker counts in one table in shared memory
//   (shared-limits.ts), as nginx's workers share each zone (docs/design.md, "Limits").
//
// Memory: the rate state is an LRU of at most MAX_CLIENTS keys (zone × address), about
// 180 bytes each with a long Ingress name and an IPv6 client (measured with Bun 1.4.5:
// ~12 MB at the bound). When it is full the key
// seen least recently is forgotten; that client starts again with an empty bucket, which can
// only matter when more than MAX_CLIENTS keys are active within one burst period. nginx's 5 MB
// zone holds about 40,000 keys and then refuses new clients with 500. Connection counts exist
// only for requests in flight.
import { LRUCache } from "lru-cache";
import * as v from "valibot";
import { cidrMatcher } from "../../config/cidr.ts";
import type { Route } from "../../table/types.ts";
import { refusal } from "./access.ts";
import type { KindOf, PolicyFlow, PolicyKind } from "./types.ts";
import * as K from "../../policy/kinds.ts";
import type { ParamsOf } from "../../policy/contract.ts";

/** Keys (Ingress zone × client address) whose rate state is kept. */
export const MAX_CLIENTS = 65_536;

/** One configured rate: milli-requests drained per second, and the excess allowed. */
export interface Rate {
  readonly perSecond: number;
  readonly burst: number;
}

/** nginx's `rate=Nr/s` or `Nr/m` and `burst=B` (nginx stores the rate ×1000 per second, truncated). */

/**
 * The excess after this request under one rate, in thousandths of a request (nginx's
 * ngx_http_limit_req_lookup): what is left of the last excess once the rate has drained it
 * since `last`, plus this request. The shared table (shared/limits.ts) counts with it too.
 */
export function excessAfter(excess: number, last: number, r: Rate, t: number): number {
  if (last < 0) return 0;
  const ms = Math.max(0, t - last);
  const e = excess - Math.trunc((r.perSecond * ms) / 1000) + 1000;
  return e < 0 ? 0 : e;
}

export function rateOf(limit: number, perSeconds: 1 | 60, burstMultiplier: number): Rate | null {
  if (limit <= 0) return null;
  return { perSecond: Math.trunc((limit * 1000) / perSeconds), burst: limit * burstMultiplier * 1000 };
}

/** Per key: the excess in milli-requests and the ms it was last moved at, per rate (-1: never). */
interface Bucket {
  e0: number;
  t0: number;
  e1: number;
  t1: number;
}

export interface Limiter {
  /** Count one request against up to two rates; false (nothing counted) when one refuses it. */
  admit(key: string, first: Rate | null, second: Rate | null): boolean;
  /** Take one of `max` connection slots; the function gives it back (once), null when none is free. */
  acquire(key: string, max: number): (() => void) | null;
  /** Keys holding rate state, and keys holding connections (for tests and memory checks). */
  readonly sizes: { readonly rates: number; readonly connections: number };
}

export interface LimiterOptions {
  /** Milliseconds, monotonic; default performance.now. Tests inject their own. */
  readonly now?: () => number;
  readonly maxClients?: number;
}

export function createLimiter(opts: LimiterOptions = {}): Limiter {
  const now = opts.now ?? (() => performance.now());
  const rates = new LRUCache<string, Bucket>({ max: opts.maxClients ?? MAX_CLIENTS });
  const conns = new Map<string, number>();

  return {
    admit(key, first, second) {
      const t = Math.floor(now());
      const b = rates.get(key);
      if (b === undefined) {
        rates.set(key, { e0: 0, t0: first ? t : -1, e1: 0, t1: second ? t : -1 });
        return true;
      }
      const e0 = first ? excessAfter(b.e0, b.t0, first, t) : 0;
      if (first && e0 > first.burst) return false;
      const e1 = second ? excessAfter(b.e1, b.t1, second, t) : 0;
      if (second && e1 > second.burst) return false;
      if (first) {
        b.e0 = e0;
        b.t0 = t;
      }
      if (second) {
        b.e1 = e1;
        b.t1 = t;
      }
      return true;
    },
    acquire(key, max) {
      const n = conns.get(key) ?? 0;
      if (n >= max) return null;
      conns.set(key, n + 1);
      let held = true;
      return () => {
        if (!held) return;
        held = false;
        const left = (conns.get(key) ?? 1) - 1;
        if (left <= 0) conns.delete(key);
        else conns.set(key, left);
      };
    },
    get sizes() {
      return { rates: rates.size, connections: conns.size };
    },
  };
}


export type LimitsParams = ParamsOf<typeof K.LIMITS>;

/** The counters' zone: one per Ingress, as ingress-nginx's (all its hosts and paths share it). */
const zoneOf = (r: Route): string => `${r.ingress.namespace}/${r.ingress.name}`;

function refuse(flow: PolicyFlow, status: number): Response {
  return refusal(flow, status, "too many requests\n");
}

/**
 * The `limits` policy kind over one limiter (a test's with its own clock), or over whatever
 * limiter the process has when a route is built (the process's: see useProcessLimiter).
 */
export function limitsKind(limiterOf: Limiter | (() => Limiter)): KindOf<typeof K.LIMITS> {
  return {
    contract: K.LIMITS,
    build(p, ctx) {
      const limiter = typeof limiterOf === "function" ? limiterOf() : limiterOf;
      if (p.denied) {
        // ingress-nginx refuses an Ingress with an invalid limit; serving it without the
        // limit would fail open, so its routes answer 503 as a denied location does.
        return (flow) => refusal(flow, 503, "service unavailable\n");
      }
      const exempt = cidrMatcher(p.allow);
      const rps = rateOf(p.rps, 1, p.burstMultiplier);
      const rpm = rateOf(p.rpm, 60, p.burstMultiplier);
      if (ctx === undefined) throw new Error("the limits policy needs the configuration (its status codes)");
      // Read per refusal: the status codes change live with the ConfigMap (config/live.ts).
      const { config } = ctx;
      const conns = p.connections;
      return (flow) => {
        const ip = flow.clientIp;
        if (exempt(ip)) return null;
        const key = `${zoneOf(flow.route)} ${ip}`;
        if ((rps !== null || rpm !== null) && !limiter.admit(key, rps, rpm)) return refuse(flow, config.limitReqStatusCode);
        if (conns > 0) {
          const release = limiter.acquire(key, conns);
          if (release === null) return refuse(flow, config.limitConnStatusCode);
          const before = flow.release;
          flow.release = before === null ? release : () => (before(), release());
        }
        return null;
      };
    },
  };
}

/**
 * The process's limiter: both listeners' handlers (HTTP and HTTPS) count in it. In a single
 * process it is an in-memory one, created on first use (nothing when no route has limits).
 */
let processLimiter: Limiter | null = null;

/**
 * A worker counts in the pod's shared table instead (workers/worker.ts calls this before it
 * builds any route: a route holds the limiter it was built with).
 */
export function useProcessLimiter(limiter: Limiter): void {
  processLimiter = limiter;
}

export const LIMITS_KIND: PolicyKind = limitsKind(() => (processLimiter ??= createLimiter()));
