// Cookie session affinity (the `backend` stage kind "affinity"), as ingress-nginx's Lua does it
// (rootfs/etc/nginx/lua/balancer/sticky.lua, sticky_balanced.lua, sticky_persistent.lua):
//
// - The cookie's value is `<key>|<backend key>`. The backend key is md5hex(md5hex(name) ..
//   name) of the upstream's name `<namespace>-<service>-<port>`; it tells a canary's cookie
//   from its main's (see "With a canary" below).
// - balanced (default): the key is random and its pod is the key's owner on the consistent-hash
//   ring of every ready endpoint (ring.ts). When endpoints change, only the sessions of a pod
//   that went (or about 1/n of them, to a pod that came) move; the cookie is not reissued for
//   that, as in ingress-nginx.
// - persistent: the key is md5hex(name .. "ip:port") of the chosen pod, so the session stays on
//   that pod until it leaves the endpoints; then a new pod is chosen and the cookie reissued.
//   The same formula as ingress-nginx, so its persistent cookies keep their pods here.
// - Neither value holds a pod address in clear. Like ingress-nginx's, a persistent key is an
//   unsalted md5 of a guessable name and the address: someone who knows the Service can find
//   the pod's address by trying the cluster's pod range. Balanced keys carry nothing.
// - The cookie is set only when a pod is newly chosen (so Expires does not slide): no cookie,
//   a cookie whose pod is gone (persistent), or a failure with change-on-failure. A retry after
//   a failure goes back to the cookie's pod unless change-on-failure is true.
// - Attributes in lua-resty-cookie's order (the version ingress-nginx builds, f418d770):
//   Expires, Max-Age, Domain, Path, Secure, HttpOnly (always), SameSite. Expires is nginx's
//   cookie time (ngx_http_cookie_time: `Thu, 18-Nov-26 11:27:35 GMT`, two-digit year to 2037).
//
// With a canary: the canary step runs first in the same `backend` stage and keeps a client
// whose cookie names main's backend on main, or the canary's on the canary
// (kinds/canary.ts); this step then picks the pod within whatever flow.backend is and writes
// that backend's key, so a canary copies main's affinity as ingress-nginx's
// `affinity-canary-behavior: sticky` does. With `legacy` the canary step has set a plain
// round-robin choice for the canary and this step leaves it.
import { createHash } from "node:crypto";
import * as v from "valibot";
import type { Backend, Upstream } from "../table/types.ts";
import { cookieValue } from "./cookies.ts";
import { defineKind, needCaps } from "./define.ts";
import { ringOf, ringOwner } from "./ring.ts";
import { CookieName } from "./schema.ts";
import type { Balancer, EndpointChoice, PolicyCaps, PolicyFlow } from "./types.ts";

const md5hex = (s: string): string => createHash("md5").update(s).digest("hex");

/** ingress-nginx's upstream name for a backend: `<namespace>-<service>-<port>`. */
const upstreamName = (b: Backend): string => `${b.namespace}-${b.service}-${b.port}`;

const backendKeys = new WeakMap<Backend, string>();

/** The cookie's backend part for `b`: md5hex(md5hex(name) .. name), as ingress-nginx's sticky.lua. */
export function backendKey(b: Backend): string {
  let k = backendKeys.get(b);
  if (k === undefined) {
    const name = upstreamName(b);
    k = md5hex(md5hex(name) + name);
    backendKeys.set(b, k);
  }
  return k;
}

/** The two parts of an affinity cookie in this request (the second "" when absent), or null. */
function readAffinityCookie(req: { readonly headers: Headers }, cookieName: string): { readonly key: string; readonly backend: string } | null {
  const raw = cookieValue(req.headers.get("cookie"), cookieName);
  if (raw === null || raw === "") return null;
  const bar = raw.indexOf("|");
  return bar < 0 ? { key: raw, backend: "" } : { key: raw.slice(0, bar), backend: raw.slice(bar + 1) };
}

/** The backend key in the request's affinity cookie, for the canary step (the seam above), or null. */
export function cookieBackendKey(req: { readonly headers: Headers }, cookieName: string): string | null {
  return readAffinityCookie(req, cookieName)?.backend ?? null;
}

/** persistent mode: each endpoint under its key md5hex(name .. "ip:port"), per Backend object. */
const persistentMaps = new WeakMap<Backend, Map<string, Upstream>>();
function persistentMap(b: Backend): Map<string, Upstream> {
  let m = persistentMaps.get(b);
  if (m === undefined) {
    const name = upstreamName(b);
    m = new Map(b.endpoints.map((u) => [md5hex(name + u.authority), u] as const));
    persistentMaps.set(b, m);
  }
  return m;
}

/** Cookie affinity (affinity, session-cookie-*). */
const AFFINITY_PARAMS = v.object({
  mode: v.picklist(["balanced", "persistent"]),
  name: CookieName,
  path: v.nullable(v.pipe(v.string(), v.regex(/^[A-Za-z0-9._~:/,?&=-]{1,1024}$/))),
  domain: v.nullable(v.pipe(v.string(), v.regex(/^[A-Za-z0-9._-]{1,253}$/))),
  maxAge: v.nullable(v.pipe(v.number(), v.integer())),
  expires: v.nullable(v.pipe(v.number(), v.integer())),
  sameSite: v.nullable(v.picklist(["None", "Lax", "Strict"])),
  conditionalSameSiteNone: v.boolean(),
  secure: v.boolean(),
  changeOnFailure: v.boolean(),
});

export type AffinityParams = v.InferOutput<typeof AFFINITY_PARAMS>;

const WEEK = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"] as const;
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"] as const;
const two = (n: number): string => String(n).padStart(2, "0");

/**
 * The proleptic Gregorian date of a day count since 1970-01-01, by arithmetic: the pure side
 * reads no clock and makes no Date (test/import-direction.test.ts). The usual civil-calendar
 * conversion: shift to eras of 400 years (146097 days) that start on 1 March, so the leap day
 * ends a year.
 */
function civilDate(days: number): { y: number; m: number; d: number } {
  const z = days + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp < 10 ? mp + 3 : mp - 9;
  return { y: yoe + era * 400 + (m <= 2 ? 1 : 0), m, d };
}

/** nginx's ngx_http_cookie_time: `Thu, 18-Nov-26 11:27:35 GMT`; the year in full after 2037. */
export function cookieTime(epochSeconds: number): string {
  const t = Math.floor(epochSeconds);
  const days = Math.floor(t / 86400);
  const s = t - days * 86400;
  const { y, m, d } = civilDate(days);
  // 1970-01-01 was a Thursday (index 4).
  const wd = (((days + 4) % 7) + 7) % 7;
  return `${WEEK[wd]}, ${two(d)}-${MONTHS[m - 1]}-${y > 2037 ? y : two(y % 100)} ${two(Math.floor(s / 3600))}:${two(Math.floor((s % 3600) / 60))}:${two(s % 60)} GMT`;
}

/**
 * Clients that reject `SameSite=None` (ingress-nginx's util/same_site.lua, after
 * https://www.chromium.org/updates/same-site/incompatible-clients): the attribute is left out
 * for them when conditional-samesite-none is on.
 */
export function rejectsSameSiteNone(ua: string | null): boolean {
  if (ua === null) return false;
  if (ua.includes("Chrome/4") || ua.includes("Chrome/5") || ua.includes("Chrome/6")) return true;
  if (ua.includes("CPU iPhone OS 12") || ua.includes("iPad; CPU OS 12")) return true;
  return ua.includes("Macintosh") && ua.includes("Intel Mac OS X 10_14") && ua.includes("Safari") && !ua.includes("Chrome");
}

/**
 * The route's path as the cookie's Path (ingress-nginx's $location_path). A regex path may hold
 * characters that would end the attribute or the header; then `/` (ingress-nginx asks for
 * session-cookie-path on regex paths).
 */
function cookiePath(routePath: string): string {
  return /^\/[^;,\s\x00-\x1f\x7f]*$/.test(routePath) ? routePath : "/";
}

/** The Set-Cookie value, attributes in lua-resty-cookie's order. */
export function affinityCookie(p: AffinityParams, value: string, o: { path: string; https: boolean; userAgent: string | null; nowSeconds: number }): string {
  let s = `${p.name}=${value}`;
  if (p.expires !== null) s += `; Expires=${cookieTime(o.nowSeconds + p.expires)}`;
  if (p.maxAge !== null) s += `; Max-Age=${p.maxAge}`;
  if (p.domain !== null) s += `; Domain=${p.domain}`;
  s += `; Path=${p.path ?? cookiePath(o.path)}`;
  // session-cookie-secure "false" is left out of ingress-nginx's backend JSON (omitempty), so
  // the scheme decides: HTTPS always gets Secure.
  if (p.secure || o.https) s += "; Secure";
  s += "; HttpOnly";
  if (p.sameSite !== null && !(p.sameSite === "None" && p.conditionalSameSiteNone && rejectsSameSiteNone(o.userAgent))) s += `; SameSite=${p.sameSite}`;
  return s;
}

/** Attempts at a random balanced key whose pod is usable (ingress-nginx's MAX_UPSTREAM_CHECKS_COUNT). */
const NEW_KEY_TRIES = 20;

/** What an affinity choice uses of the capabilities: random keys and pods, the wall clock for Expires. */
type AffinityDeps = Pick<PolicyCaps, "random" | "now">;

class AffinityChoice implements EndpointChoice {
  /** The cookie's pod (undefined until the first pick resolves it). */
  private sticky: Upstream | null | undefined = undefined;
  /** The cookie to send: set when a pod is newly chosen. */
  private issued: string | null = null;

  constructor(
    private readonly p: AffinityParams,
    private readonly flow: PolicyFlow,
    private readonly cookieKey: string | null,
    private readonly deps: AffinityDeps,
  ) {}

  pick(backend: Backend, balancer: Balancer, exclude: ReadonlySet<string> | undefined): Upstream | null {
    if (this.sticky === undefined) this.sticky = this.cookieKey === null ? null : this.find(backend, this.cookieKey);
    const failed = exclude !== undefined && exclude.size > 0;
    if (this.sticky !== null && !(failed && this.p.changeOnFailure)) return this.sticky;
    const fresh = this.p.mode === "balanced" ? this.newBalanced(backend, balancer, exclude) : this.newPersistent(backend, balancer, exclude);
    if (fresh === null) return null;
    this.issued = affinityCookie(this.p, `${fresh.key}|${backendKey(backend)}`, {
      path: this.flow.route.path,
      https: this.flow.scheme === "https",
      userAgent: this.flow.req.headers.get("user-agent"),
      nowSeconds: Math.floor(this.deps.now() / 1000),
    });
    return fresh.u;
  }

  answered(): void {}

  setCookie(): string | null {
    return this.issued;
  }

  private find(backend: Backend, key: string): Upstream | null {
    return this.p.mode === "balanced" ? ringOwner(ringOf(backend), key) : (persistentMap(backend).get(key) ?? null);
  }

  /** A random key whose pod was not tried and is not backing off; then one not tried. */
  private newBalanced(backend: Backend, balancer: Balancer, exclude: ReadonlySet<string> | undefined): { u: Upstream; key: string } | null {
    const ring = ringOf(backend);
    for (const healthy of [true, false]) {
      for (let i = 0; i < NEW_KEY_TRIES; i++) {
        const key = randomKey(this.deps.random);
        const u = ringOwner(ring, key);
        if (u === null) return null;
        if (exclude?.has(u.authority)) continue;
        if (healthy && balancer.isBackedOff(u.authority)) continue;
        return { u, key };
      }
    }
    return null;
  }

  /** A random pod not tried and not backing off (else not tried), under its persistent key. */
  private newPersistent(backend: Backend, balancer: Balancer, exclude: ReadonlySet<string> | undefined): { u: Upstream; key: string } | null {
    const untried = backend.endpoints.filter((u) => !exclude?.has(u.authority));
    const healthy = untried.filter((u) => !balancer.isBackedOff(u.authority));
    const from = healthy.length > 0 ? healthy : untried;
    if (from.length === 0) return null;
    const u = from[Math.floor(this.deps.random() * from.length)] as Upstream;
    return { u, key: md5hex(upstreamName(backend) + u.authority) };
  }
}

/** 64 random bits as 16 hex digits: carries nothing about the pod or the process. */
function randomKey(random: () => number): string {
  const hi = Math.floor(random() * 2 ** 32).toString(16).padStart(8, "0");
  const lo = Math.floor(random() * 2 ** 32).toString(16).padStart(8, "0");
  return hi + lo;
}

/** Cookie affinity (affinity, session-cookie-*): the `backend` stage's endpoint choice by cookie. */
export const AFFINITY = defineKind("affinity", "backend", AFFINITY_PARAMS, (p, caps) => {
  const deps: AffinityDeps = needCaps(caps, "affinity");
  return (flow) => {
    // An earlier step of the stage chose already: the canary step, sending a client to a
    // canary without affinity (`affinity-canary-behavior: legacy`).
    if (flow.choice !== null) return null;
    flow.choice = new AffinityChoice(p, flow, readAffinityCookie(flow.req, p.name)?.key ?? null, deps);
    return null;
  };
});
