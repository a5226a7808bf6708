// A canary with cookie affinity on main, end to end: the real process (--manifests) → compile →
// the `backend` stage (canary step, then affinity) → four real pods on 127.0.0.1 that answer
// with their name. Expectations follow ingress-nginx: rootfs/etc/nginx/lua/balancer.lua
// route_to_alternative_balancer (a cookie naming main's backend keeps main, one naming the
// canary's keeps the canary, before header, cookie and weight), balancer/sticky.lua
// (is_affinitized compares the cookie's backend part), controller.go mergeAlternativeBackend
// (the canary copies main's affinity unless its affinity-canary-behavior is `legacy`) and
// test/e2e/annotations/canary.go (the sticky and legacy cases, weight 50).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compile } from "../../src/compile/compile.ts";
import type { ExplainResult } from "../../src/compile/explain-types.ts";
import { lookup } from "../../src/table/lookup.ts";
import { DEFAULT_COMPILE_CONFIG } from "../compile/config.ts";
import { loadFixture } from "../compile/snapshot.ts";
import { startBackend, startPortico, type Backend, type Portico } from "./harness.ts";
import { ingress, ingressClass, service, slice, yamlDocs } from "./objects.ts";

const A = "nginx.ingress.kubernetes.io/";
let dir: string;
let portico: Portico;
const pods: Backend[] = [];

/** One EndpointSlice per pod, so a Service has several endpoints on 127.0.0.1. */
const podSlices = (svc: string, ports: number[]) =>
  ports.map((port, i) => ({
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: { name: `${svc}-${i}`, namespace: "shop", labels: { "kubernetes.io/service-name": svc } },
    addressType: "IPv4",
    ports: [{ name: "http", port }],
    endpoints: [{ addresses: ["127.0.0.1"], conditions: { ready: true } }],
  }));

const mainIngress = (name: string, host: string) =>
  ingress("shop", name, [{ host, paths: [{ path: "/", service: "main" }] }], {
    annotations: { [`${A}affinity`]: "cookie", [`${A}session-cookie-name`]: "SID" },
  });
const canaryIngress = (name: string, host: string, extra: Record<string, string>) =>
  ingress("shop", name, [{ host, paths: [{ path: "/", service: "canary" }] }], {
    annotations: { [`${A}canary`]: "true", [`${A}canary-weight`]: "50", [`${A}canary-by-header`]: "X-Canary", ...extra },
  });

beforeAll(async () => {
  for (const n of ["main-a", "main-b", "canary-a", "canary-b"]) pods.push(startBackend(n));
  const ports = (prefix: string) => pods.filter((p) => p.name.startsWith(prefix)).map((p) => p.port);
  dir = mkdtempSync(join(tmpdir(), "portico-canary-affinity-"));
  const objs = [
    ingressClass(),
    service("shop", "main"),
    ...podSlices("main", ports("main-")),
    service("shop", "canary"),
    ...podSlices("canary", ports("canary-")),
    mainIngress("sticky-main", "sticky.test"),
    canaryIngress("sticky-canary", "sticky.test", {}),
    mainIngress("legacy-main", "legacy.test"),
    canaryIngress("legacy-canary", "legacy.test", { [`${A}affinity-canary-behavior`]: "legacy" }),
  ];
  writeFileSync(join(dir, "all.yaml"), objs.map((o) => `---\n${JSON.stringify(o)}\n`).join(""));
  portico = await startPortico(["--manifests", dir, "--log-level", "warn", "--access-log", "off"]);
});

afterAll(async () => {
  await portico?.stop("SIGKILL");
  for (const p of pods) p.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function get(host: string, headers: Record<string, string> = {}) {
  const r = await fetch(`${portico.http}/x`, { headers: { host, ...headers } });
  const body = await r.text();
  expect(r.status).toBe(200);
  const setCookie = r.headers.get("set-cookie");
  return { pod: body.split(" ")[0]!, cookie: setCookie === null ? null : setCookie.slice(0, setCookie.indexOf(";")) };
}
const side = (pod: string) => (pod.startsWith("canary") ? "canary" : "main");

/** New clients (no cookie) until one lands on `want`: its pod and the cookie it was given. */
async function session(host: string, want: "main" | "canary"): Promise<{ pod: string; cookie: string | null }> {
  // Weight 50: 40 misses in a row happen once in 2^40 runs.
  for (let i = 0; i < 40; i++) {
    const r = await get(host);
    if (side(r.pod) === want) return r;
  }
  throw new Error(`no new client reached ${want} in 40 requests`);
}

describe("affinity-canary-behavior: sticky (the default)", () => {
  test("a client whose cookie names the canary stays on the canary, on its pod, over many requests", async () => {
    const s = await session("sticky.test", "canary");
    expect(s.cookie).toMatch(/^SID=[0-9a-f]{16}\|[0-9a-f]{32}$/);
    for (let i = 0; i < 60; i++) expect(await get("sticky.test", { cookie: s.cookie! })).toEqual({ pod: s.pod, cookie: null });
  });

  test("a client whose cookie names main stays on main, on its pod", async () => {
    const s = await session("sticky.test", "main");
    expect(s.cookie).toMatch(/^SID=/);
    for (let i = 0; i < 60; i++) expect(await get("sticky.test", { cookie: s.cookie! })).toEqual({ pod: s.pod, cookie: null });
  });

  test("the cookie's backend is checked before the header: `never` does not move a canary session, `always` does not move a main one", async () => {
    const c = await session("sticky.test", "canary");
    const m = await session("sticky.test", "main");
    for (let i = 0; i < 10; i++) {
      expect((await get("sticky.test", { cookie: c.cookie!, "x-canary": "never" })).pod).toBe(c.pod);
      expect((await get("sticky.test", { cookie: m.cookie!, "x-canary": "always" })).pod).toBe(m.pod);
    }
  });

  test("clients without a cookie are still split by the weight", async () => {
    const seen = { main: 0, canary: 0 };
    for (let i = 0; i < 100; i++) seen[side((await get("sticky.test")).pod)]++;
    // Weight 50 over 100 requests: outside 20..80 once in about 10^9 runs.
    expect(seen.canary).toBeGreaterThan(20);
    expect(seen.main).toBeGreaterThan(20);
  });
});

describe("affinity-canary-behavior: legacy", () => {
  test("the canary sets no affinity cookie, and a cookie naming the canary does not keep a client there", async () => {
    const c = await session("legacy.test", "canary");
    expect(c.cookie).toBeNull();
    // A canary cookie from the sticky host (same Service, so the same backend key).
    const stale = await session("sticky.test", "canary");
    const seen = { main: 0, canary: 0 };
    for (let i = 0; i < 100; i++) {
      const r = await get("legacy.test", { cookie: stale.cookie! });
      seen[side(r.pod)]++;
      // Main's balancer sets its cookie for a client it newly places (sticky.lua balance).
      if (side(r.pod) === "canary") expect(r.cookie).toBeNull();
    }
    expect(seen.canary).toBeGreaterThan(20);
    expect(seen.main).toBeGreaterThan(20);
  });

  test("the canary's pods are taken round robin, not by a canary cookie's key", async () => {
    const stale = await session("sticky.test", "canary");
    const seen = new Set<string>();
    for (let i = 0; i < 20; i++) {
      const r = await get("legacy.test", { cookie: stale.cookie!, "x-canary": "always" });
      expect(r.cookie).toBeNull();
      seen.add(r.pod);
    }
    expect(seen).toEqual(new Set(["canary-a", "canary-b"]));
  });

  test("a cookie naming main still keeps main: main's balancer is sticky whatever the canary says", async () => {
    const m = await session("legacy.test", "main");
    expect(m.cookie).toMatch(/^SID=/);
    for (let i = 0; i < 40; i++) expect(await get("legacy.test", { cookie: m.cookie! })).toEqual({ pod: m.pod, cookie: null });
  });
});

test("explain shows the affinity check before the rules", async () => {
  const sticky = (await (await fetch(`${portico.admin}/debug/explain?host=sticky.test&path=/x`)).json()) as ExplainResult;
  expect(sticky.match?.canary?.affinity).toEqual({ cookie: "SID", sticky: true });
  expect(sticky.match?.canary?.order).toStartWith("the affinity cookie SID naming main or the canary, then header");
  const legacy = (await (await fetch(`${portico.admin}/debug/explain?host=legacy.test&path=/x`)).json()) as ExplainResult;
  expect(legacy.match?.canary?.affinity).toEqual({ cookie: "SID", sticky: false });
});

describe("compile: the canary step first in the backend stage, with main's cookie and the canary's behaviour", () => {
  const plain = ingress("shop", "plain-main", [{ host: "plain.test", paths: [{ path: "/", service: "main" }] }]);
  const fx = loadFixture(
    yamlDocs([
      ingressClass(), service("shop", "main"), slice("shop", "main", [8080]), service("shop", "canary"), slice("shop", "canary", [8081]),
      mainIngress("sticky-main", "sticky.test"), canaryIngress("sticky-canary", "sticky.test", {}),
      mainIngress("legacy-main", "legacy.test"), canaryIngress("legacy-canary", "legacy.test", { [`${A}affinity-canary-behavior`]: "legacy" }),
      // Main without affinity: the canary's params are the rules alone.
      plain, canaryIngress("plain-canary", "plain.test", {}),
    ]),
  );
  const result = compile(fx.snapshot, DEFAULT_COMPILE_CONFIG);
  const stages = (host: string) => lookup(result.table, host, "/x")?.route.options.stages ?? [];

  test("sticky: canary (main's cookie name, sticky) then affinity", () => {
    expect(stages("sticky.test").map((p) => p.kind)).toEqual(["canary", "affinity"]);
    expect(stages("sticky.test")[0]?.params.affinity).toEqual({ cookie: "SID", sticky: true });
  });

  test("legacy, read from the canary Ingress: sticky false", () => {
    expect(stages("legacy.test").map((p) => p.kind)).toEqual(["canary", "affinity"]);
    expect(stages("legacy.test")[0]?.params.affinity).toEqual({ cookie: "SID", sticky: false });
  });

  test("without affinity on main: no affinity check", () => {
    expect(stages("plain.test").map((p) => p.kind)).toEqual(["canary"]);
    expect("affinity" in (stages("plain.test")[0]?.params ?? {})).toBe(false);
    expect(result.diagnostics.filter((d) => d.reason === "UnsupportedAnnotation" || d.reason === "InvalidAnnotation")).toEqual([]);
  });
});
