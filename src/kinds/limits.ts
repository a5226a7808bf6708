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
//   (proxy/shared/limits.ts), as nginx's workers share each zone (docs/design.md, "Limits").
//
// The counting itself is the Limiter the proxy hands the kind (PolicyCaps.limiter:
// proxy/policies/limiter.ts in one process, proxy/shared/limits.ts across workers); the rates
// and the policy are here. Every kind of the `limits` stage is defined here.
import * as v from "valibot";
import { cidrMatcher } from "../config/cidr.ts";
import type { Route } from "../table/types.ts";
import { defineKind, needCaps } from "./define.ts";
import { refusal } from "./refusal.ts";
import { Strings } from "./schema.ts";
import type { PolicyFlow, Rate } from "./types.ts";

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

/** nginx's `rate=Nr/s` or `Nr/m` and `burst=B` (nginx stores the rate ×1000 per second, truncated). */
export function rateOf(limit: number, perSeconds: 1 | 60, burstMultiplier: number): Rate | null {
  if (limit <= 0) return null;
  return { perSecond: Math.trunc((limit * 1000) / perSeconds), burst: limit * burstMultiplier * 1000 };
}

const Count = v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(2 ** 31 - 1));

/** The counters' zone: one per Ingress, as ingress-nginx's (all its hosts and paths share it). */
const zoneOf = (r: Route): string => `${r.ingress.namespace}/${r.ingress.name}`;

function refuse(flow: PolicyFlow, status: number): Response {
  return refusal(flow, status, "too many requests\n");
}

/**
 * limit-rps, limit-rpm, limit-connections, limit-burst-multiplier, limit-whitelist; `denied`
 * for a refused value. Counted in the limiter the process has when the route is built
 * (PolicyCaps.limiter: a route holds the limiter it was built with).
 */
export const LIMITS = defineKind(
  "limits",
  "limits",
  v.object({ rps: Count, rpm: Count, connections: Count, burstMultiplier: Count, allow: Strings, denied: v.boolean() }),
  (p, caps) => {
    if (p.denied) {
      // ingress-nginx refuses an Ingress with an invalid limit; serving it without the
      // limit would fail open, so its routes answer 503 as a denied location does.
      return (flow) => refusal(flow, 503, "service unavailable\n");
    }
    const exempt = cidrMatcher(p.allow);
    const rps = rateOf(p.rps, 1, p.burstMultiplier);
    const rpm = rateOf(p.rpm, 60, p.burstMultiplier);
    // Read per refusal: the status codes change live with the ConfigMap (config/live.ts).
    const { config, limiter: limiterOf } = needCaps(caps, "limits");
    const limiter = limiterOf();
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
);
