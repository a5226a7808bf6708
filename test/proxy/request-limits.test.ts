// limit-rps, limit-rpm, limit-connections, limit-burst-multiplier and limit-allowlist
// (src/kinds/limits.ts), counted as nginx's limit_req / limit_conn modules count them under
// ingress-nginx's template (`limit_req zone=… burst=rate×multiplier nodelay`, zones per
// Ingress keyed by the client address). Unit level with an injected clock, then through a real
// proxy to real backends on 127.0.0.1 with the same injected clock, over HTTP/1.1, h2 and
// HTTP/3 alike (the key is the client address, which every wire must give the same).
import { afterEach, describe, expect, test } from "bun:test";
import { parseAnnotations } from "../../src/compile/annotations.ts";
import { LIMITS, rateOf } from "../../src/kinds/limits.ts";
import { createLimiter } from "../../src/proxy/policies/limiter.ts";
import { POLICY_KINDS } from "../../src/kinds/registry.ts";
import type { PolicyKind } from "../../src/kinds/types.ts";
import type { RouteTable } from "../../src/table/types.ts";
import { makeBackend, makeTable, startProxyOver, TRANSPORTS, type TransportProxy } from "./helpers.ts";
import { testKind, withCaps } from "./helpers.ts";
import type { Limiter } from "../../src/kinds/types.ts";

/** The limits kind counting in `limiter` (a test's, with its own clock) for every route it builds. */
const limitsKind = (limiter: Limiter) => withCaps(LIMITS, { limiter: () => limiter });
import type { Config } from "../../src/config/types.ts";
import { eventually } from "../wait.ts";

const P = "nginx.ingress.kubernetes.io/";
const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

describe("the limiter (nginx's arithmetic, injected clock)", () => {
  test("limit-rps 1 with the default multiplier 5: 6 at once, then one per second", () => {
    let t = 0;
    const l = createLimiter({ now: () => t });
    const rps = rateOf(1, 1, 5);
    const admit = () => l.admit("z 10.0.0.1", rps, null);
    expect(Array.from({ length: 7 }, admit)).toEqual([true, true, true, true, true, true, false]);
    t = 999; // excess 5000 - 999 + 1000 = 5001 > burst 5000
    expect(admit()).toBe(false);
    t = 1000;
    expect(admit()).toBe(true);
    expect(admit()).toBe(false);
    t = 60_000; // drained: a full burst again
    expect(Array.from({ length: 7 }, admit)).toEqual([true, true, true, true, true, true, false]);
  });

  test("limit-rpm is nginx's r/m: rate × 1000 / 60 truncated, so 1 r/m lets one through every 62.5 s", () => {
    let t = 0;
    const l = createLimiter({ now: () => t });
    const rpm = rateOf(1, 60, 0); // burst 0
    expect(rpm).toEqual({ perSecond: 16, burst: 0 });
    expect(l.admit("k", null, rpm)).toBe(true);
    for (const at of [1, 30_000, 60_000, 62_499]) {
      t = at;
      expect(l.admit("k", null, rpm)).toBe(false);
    }
    t = 62_500;
    expect(l.admit("k", null, rpm)).toBe(true);
  });

  test("rps and rpm both apply; a request one of them refuses counts in neither", () => {
    const t = 0;
    const l = createLimiter({ now: () => t });
    const rps = rateOf(1, 1, 1); // 2 at once
    const rpm = rateOf(1, 60, 0); // 1 at once
    expect(l.admit("k", rps, rpm)).toBe(true);
    expect(l.admit("k", rps, rpm)).toBe(false); // rpm refuses; rps would have taken it
    // Had the refused request been counted under rps, its excess would now be 2000 > 1000.
    expect(l.admit("k", rps, null)).toBe(true);
    expect(l.admit("k", rps, null)).toBe(false);
  });

  test("keys are separate; the multiplier 0 means no burst", () => {
    const l = createLimiter({ now: () => 0 });
    const r = rateOf(10, 1, 0);
    expect([l.admit("a", r, null), l.admit("a", r, null), l.admit("b", r, null)]).toEqual([true, false, true]);
    expect(rateOf(0, 1, 5)).toBeNull();
  });

  test("connections: N slots per key, given back once each", () => {
    const l = createLimiter();
    const a = l.acquire("k", 2)!;
    const b = l.acquire("k", 2)!;
    expect(l.acquire("k", 2)).toBeNull();
    expect(l.acquire("other", 2)).not.toBeNull();
    a();
    a(); // twice: still one slot
    const c = l.acquire("k", 2);
    expect(c).not.toBeNull();
    expect(l.acquire("k", 2)).toBeNull();
    b();
    c!();
    expect(l.sizes.connections).toBe(1); // only "other" holds one; freed keys are dropped
  });

  test("memory is bounded: past maxClients the key seen least recently is forgotten (and starts afresh)", () => {
    const l = createLimiter({ now: () => 0, maxClients: 3 });
    const r = rateOf(1, 1, 0);
    for (const k of ["a", "b", "c"]) expect(l.admit(k, r, null)).toBe(true);
    expect(l.admit("a", r, null)).toBe(false); // a is now the most recent
    expect(l.admit("d", r, null)).toBe(true); // evicts b
    expect(l.sizes.rates).toBe(3);
    expect(l.admit("b", r, null)).toBe(true); // forgotten: a fresh bucket
    expect(l.admit("a", r, null)).toBe(false);
    for (let i = 0; i < 10_000; i++) l.admit(`client-${i}`, r, null);
    expect(l.sizes.rates).toBe(3);
  });
});

/** A backend that answers 200 with its name, optionally after `hold` resolves. */
function backend(name: string, hold?: () => Promise<void>) {
  let hits = 0;
  const s = Bun.serve({
    hostname: "127.0.0.1", port: 0,
    async fetch() {
      hits++;
      if (hold) await hold();
      return new Response(name);
    },
  });
  cleanup.push(() => s.stop(true));
  return { port: s.port as number, hits: () => hits };
}

const stagesOf = (ann: Record<string, string>) => parseAnnotations(Object.fromEntries(Object.entries(ann).map(([k, v]) => [P + k, v]))).options.stages;

describe.each(TRANSPORTS)("through a real proxy, over %s", (transport) => {
  async function proxy(table: RouteTable, kinds: ReadonlyMap<string, PolicyKind>, config: Partial<Config> = {}): Promise<TransportProxy> {
    const p = await startProxyOver(transport, table, config, {}, "http", kinds);
    cleanup.push(() => p.stop());
    return p;
  }

  test("past the burst: --limit-req-status-code with the request id; the clock frees it; the backend never sees a refused request", async () => {
    let t = 0;
    const kinds = new Map([...POLICY_KINDS, ["limits", limitsKind(createLimiter({ now: () => t }))]]);
    const b = backend("b");
    const table = makeTable([{ host: "l.test", backend: makeBackend([b.port]), options: { stages: stagesOf({ "limit-rps": "1", "limit-burst-multiplier": "2" }) } }]);
    const p = await proxy(table, kinds, { limitReqStatusCode: 429 });
    const get = () => p.request("/", { headers: { host: "l.test" } });
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await get()).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    const refused = await get();
    expect(refused.status).toBe(429);
    expect(refused.headers.get("x-request-id")).toMatch(/^[0-9a-f]{32}$/);
    expect(await refused.text()).toBe("too many requests\n");
    expect(b.hits()).toBe(3);
    t = 1000;
    expect((await get()).status).toBe(200);
    expect((await get()).status).toBe(429);
  });

  test("one zone per Ingress: its hosts and paths share the counters; another Ingress counts apart", async () => {
    const t = 0;
    const kinds = new Map([...POLICY_KINDS, ["limits", limitsKind(createLimiter({ now: () => t }))]]);
    const b = backend("b");
    const stages = stagesOf({ "limit-rpm": "1", "limit-burst-multiplier": "1" }); // 2 at once
    const table = makeTable([
      { host: "a.test", backend: makeBackend([b.port]), options: { stages }, name: "shop" },
      { host: "b.test", path: "/x", backend: makeBackend([b.port]), options: { stages }, name: "shop" },
      { host: "c.test", backend: makeBackend([b.port]), options: { stages }, name: "blog" },
    ]);
    const p = await proxy(table, kinds);
    const get = async (host: string, path = "/") => (await p.request(path, { headers: { host } })).status;
    expect([await get("a.test"), await get("b.test", "/x"), await get("a.test"), await get("b.test", "/x")]).toEqual([200, 200, 503, 503]);
    expect([await get("c.test"), await get("c.test"), await get("c.test")]).toEqual([200, 200, 503]);
  });

  test("limit-allowlist: listed clients are never counted; the key is the address after --trusted-proxies", async () => {
    const kinds = new Map([...POLICY_KINDS, ["limits", limitsKind(createLimiter({ now: () => 0 }))]]);
    const b = backend("b");
    const table = makeTable([
      { host: "l.test", backend: makeBackend([b.port]), options: { stages: stagesOf({ "limit-rpm": "1", "limit-burst-multiplier": "0", "limit-allowlist": "10.9.0.0/16" }) } },
    ]);
    const p = await proxy(table, kinds, { trustedProxies: ["127.0.0.1/32"] });
    const from = async (xff: string) => (await p.request("/", { headers: { host: "l.test", "x-forwarded-for": xff } })).status;
    expect([await from("10.9.1.1"), await from("10.9.1.1"), await from("10.9.1.1")]).toEqual([200, 200, 200]);
    expect([await from("203.0.113.7"), await from("203.0.113.7"), await from("203.0.113.8")]).toEqual([200, 503, 200]);
  });

  test("limit-connections: requests in flight per client; the slot comes back however a request ends", async () => {
    const kinds = new Map<string, PolicyKind>([
      ...POLICY_KINDS,
      ["limits", limitsKind(createLimiter())],
      // A later stage that refuses some requests: a refused request must give its slot back.
      ["deny-probe", testKind("access", () => (flow) => (flow.path === "/deny" ? new Response("no", { status: 403 }) : null))],
    ]);
    let release!: () => void;
    let gate = new Promise<void>((r) => (release = r));
    const slow = backend("slow", () => gate);
    const stages = [...stagesOf({ "limit-connections": "1" })!, { stage: "access" as const, kind: "deny-probe", params: {} }];
    const dead = makeBackend([1], { id: "default/dead:80" }); // nothing listens on port 1
    const table = makeTable([
      { host: "c.test", backend: makeBackend([slow.port]), options: { stages } },
      { host: "c.test", path: "/dead", backend: dead, options: { stages } },
    ]);
    const p = await proxy(table, kinds, { limitConnStatusCode: 503 });
    const get = (path = "/") => p.request(path, { headers: { host: "c.test" } });
    const first = get();
    await eventually(() => slow.hits() > 0, 5_000, "the first request at the backend");
    const second = await get();
    expect(second.status).toBe(503);
    expect(await second.text()).toBe("too many requests\n");
    release();
    expect((await first).status).toBe(200);
    gate = Promise.resolve();
    expect((await get()).status).toBe(200);
    expect((await get("/deny")).status).toBe(403); // took the slot, refused later: slot back
    expect((await get("/dead")).status).toBe(502); // failed upstream: slot back
    expect((await get()).status).toBe(200);
    expect(slow.hits()).toBe(3);
  });

  test("an invalid limit annotation: every request of the Ingress answers 503, the backend is never reached", async () => {
    const b = backend("b");
    const table = makeTable([{ host: "bad.test", backend: makeBackend([b.port]), options: { stages: stagesOf({ "limit-rps": "10r/s" }) } }]);
    const p = await proxy(table, POLICY_KINDS);
    for (let i = 0; i < 3; i++) expect((await p.request("/", { headers: { host: "bad.test" } })).status).toBe(503);
    expect(b.hits()).toBe(0);
  });
});
