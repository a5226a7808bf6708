// /debug/explain and /debug/routes through the admin app, wired as runtime/run.ts wires them:
// explain() reading the compile of the live snapshot, and serializeTable(), over a snapshot
// built from a fixture; then at scale, through a real controller and runtime's explainLive.
import { afterAll, describe, expect, spyOn, test } from "bun:test";
import { join } from "node:path";
import { createAdminApp } from "../../src/admin/app.ts";
import { createReadiness } from "../../src/admin/readiness.ts";
import { Compiler } from "../../src/compile/compile.ts";
import { DEFAULT_COMPILE_CONFIG } from "../compile/config.ts";
import { explain, type ExplainResult } from "../../src/compile/explain.ts";
import { parseArgs } from "../../src/config/parse.ts";
import { createLogger } from "../../src/log/logger.ts";
import { KINDS } from "../../src/model/kinds.ts";
import { createController } from "../../src/runtime/controller.ts";
import { explainLive } from "../../src/runtime/explain.ts";
import type { StoreEvent } from "../../src/store/types.ts";
import { serializeTable } from "../../src/table/serialize.ts";
import { syntheticSnapshot } from "../compile/scale.ts";
import { loadFixture } from "../compile/snapshot.ts";

const fx = loadFixture(await Bun.file(join(import.meta.dir, "fixtures", "explain.yaml")).text());
const compiler = new Compiler(DEFAULT_COMPILE_CONFIG);
const result = compiler.compile(fx.snapshot);
const app = createAdminApp({
  ready: createReadiness([]).check,
  metrics: () => "",
  routes: () => serializeTable(result.table, 3),
  explain: (q) => explain(fx.snapshot, DEFAULT_COMPILE_CONFIG, q, compiler),
});

async function ask(query: string): Promise<ExplainResult> {
  const res = await app.request(`/debug/explain?${query}`);
  expect(res.status).toBe(200);
  return (await res.json()) as ExplainResult;
}

const verdictOf = (r: ExplainResult, ingress: string, host: string) => r.candidates.find((c) => c.ingress === ingress && c.host === host)?.verdict;

describe("/debug/explain with the real compiler", () => {
  test("match: the oldest Ingress wins, the newer one is reported as the conflict loser, SNI picks its secret", async () => {
    const r = await ask("host=exact.test&path=/app/x&scheme=https");
    expect(r.outcome).toBe("route");
    expect(r.match).toMatchObject({ ingress: "shop/old", via: "exact-host", path: "/app", pathType: "Prefix", answers: "proxied" });
    expect(r.match?.backend).toEqual({ id: "shop/web:80", status: "ok", scheme: "http", protocol: "h1", endpoints: ["10.0.0.1:8080"] });
    expect(verdictOf(r, "shop/old", "exact.test")).toBe("matched");
    const loser = r.candidates.find((c) => c.ingress === "shop/new");
    expect(loser?.verdict).toBe("conflict-loser");
    expect(loser?.reason).toContain("2024-01-01");
    expect(r.certificate).toMatchObject({ via: "exact", host: "exact.test", secret: "shop/exact-tls" });
  });

  test("acceptEncoding is the request's Accept-Encoding; a value with a control character is refused", async () => {
    expect((await ask("host=exact.test&acceptEncoding=gzip%2C%20br")).request.acceptEncoding).toBe("gzip, br");
    const bad = await app.request("/debug/explain?host=exact.test&acceptEncoding=gzip%0d");
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ error: "invalid query", fields: ["acceptEncoding"] });
  });

  test("no match: 404 with every rule's host mismatch listed", async () => {
    const r = await ask("host=nomatch.test");
    expect(r.outcome).toBe("404");
    expect(r.match).toBeNull();
    expect(r.certificate).toBeNull();
    expect(verdictOf(r, "shop/noep", "noep.test")).toBe("host-mismatch");
  });

  test("wrong class: the Ingress is not ours and the request finds no route", async () => {
    const r = await ask("host=foreign.test&path=/");
    expect(r.outcome).toBe("404");
    const c = r.candidates.find((x) => x.ingress === "shop/foreign");
    expect(c?.verdict).toBe("not-our-class");
    expect(c?.reason).toContain("example.com/other-controller");
  });

  test("no endpoints: the route matches but answers 503", async () => {
    const r = await ask("host=noep.test&path=/");
    expect(r.match).toMatchObject({ ingress: "shop/noep", answers: "503" });
    expect(r.match?.backend.status).toBe("NoEndpoints");
    expect(r.response).toMatchObject({ kind: "refused", status: 503, by: "endpoints" });
    expect(r.diagnostics.some((d) => d.name === "noep" && d.reason === "NoEndpoints")).toBe(true);
  });

  test("client: an IP address passed to the source-range checks; anything else is an invalid query", async () => {
    const r = await ask("host=exact.test&path=/app&scheme=https&client=10.0.0.1");
    expect(r.request.client).toBe("10.0.0.1");
    expect(r.response).toMatchObject({ kind: "proxied", backends: ["shop/web:80"] });
    const bad = await app.request("/debug/explain?host=exact.test&client=not-an-ip");
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ error: "invalid query", fields: ["client"] });
  });

  test("wildcard vs exact: the exact host wins over *.wild.test; another label takes the wildcard", async () => {
    const exact = await ask("host=A.wild.test:8080&path=/x");
    expect(exact.match).toMatchObject({ host: "a.wild.test", via: "exact-host" });
    expect(verdictOf(exact, "shop/wild", "*.wild.test")).toBe("host-tier-lost");
    const wild = await ask("host=b.wild.test&path=/x");
    expect(wild.match).toMatchObject({ host: "*.wild.test", via: "wildcard-host" });
    expect(verdictOf(wild, "shop/wild", "a.wild.test")).toBe("host-mismatch");
  });
});

test("/debug/routes?format=text (or Accept: text/plain) is a table people read: host, path, type, backend, endpoints, TLS, Ingress, what requests get", async () => {
  const expected = [
    "HOST         PATH           TYPE    BACKEND            ENDPOINTS             TLS  INGRESS    ANSWERS",
    "a.wild.test  /              Prefix  shop/web:80        1 of 1                no   shop/wild  proxied",
    "exact.test   /app           Prefix  shop/web:80        1 of 1                yes  shop/old   HTTP: redirect to HTTPS; proxied",
    // ingress-nginx's implicit "/" location of a TLS host (controller.go createServers): the HTTPS redirect, then the default backend.
    "exact.test   (other paths)  -       (default backend)  -                     yes  shop/old   HTTP: redirect to HTTPS; 404 (no default backend)",
    "noep.test    /              Prefix  shop/empty:80      0 of 0 (NoEndpoints)  no   shop/noep  503 no endpoints (NoEndpoints)",
    "*.wild.test  /              Prefix  shop/web:80        1 of 1                no   shop/wild  proxied",
    "",
    "4 hosts, 4 routes, 2 backends (1 without endpoints); 1 route answering every request itself (see ANSWERS); generation 3",
    "",
  ].join("\n");
  for (const res of [await app.request("/debug/routes?format=text"), await app.request("/debug/routes", { headers: { accept: "text/plain" } })]) {
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toStartWith("text/plain");
    expect(await res.text()).toBe(expected);
  }
  // JSON stays the default (and wins when both are acceptable); another format is refused.
  expect((await app.request("/debug/routes", { headers: { accept: "text/plain, application/json" } })).headers.get("content-type")).toContain("application/json");
  expect((await app.request("/debug/routes?format=json")).headers.get("content-type")).toContain("application/json");
  expect((await app.request("/debug/routes?format=yaml")).status).toBe(400);
});

test("/debug/routes serves the live table with its generation", async () => {
  const res = await app.request("/debug/routes");
  expect(res.status).toBe(200);
  const body = (await res.json()) as { generation: number; hosts: { host: string }[] };
  expect(body.generation).toBe(3);
  expect(body.hosts.map((h) => h.host)).toEqual(["a.wild.test", "exact.test", "noep.test", "*.wild.test"]);
});

describe("/debug/explain at 4,000 Ingresses, through the controller", () => {
  const outcome = parseArgs(["--manifests", "/dev/null"], {});
  if (outcome.type !== "run") throw new Error("test config did not parse");
  const config = outcome.config;
  const controller = createController({ config, log: createLogger({ level: "error", format: "json", write: () => {} }) });
  // The objects as a source would deliver them (slices carry their Service's label).
  const snap = syntheticSnapshot(4000);
  const events: StoreEvent[] = [
    ...[...snap.ingressClasses.values()].map((object) => ({ type: "ADDED", kind: "IngressClass", object }) as const),
    ...[...snap.services.values()].map((object) => ({ type: "ADDED", kind: "Service", object }) as const),
    ...[...snap.endpointSlices].flatMap(([key, slices]) =>
      slices.map((s) => {
        const object = { ...s, metadata: { ...s.metadata, labels: { "kubernetes.io/service-name": key.split("/")[1] as string } } };
        return { type: "ADDED", kind: "EndpointSlice", object } as const;
      }),
    ),
    ...[...snap.ingresses.values()].map((object) => ({ type: "ADDED", kind: "Ingress", object }) as const),
  ];
  for (const e of events) controller.sink.apply(e);
  for (const kind of KINDS) controller.sink.synced(kind);
  const live = createAdminApp({
    ready: createReadiness([]).check,
    metrics: () => "",
    routes: () => null,
    explain: (q) => explainLive(controller, config, q),
  });
  const query = "host=app-7.example.com&path=/api/v1/items";
  afterAll(() => controller.dispose());

  test("answers from the live table's compile: nothing compiled again, the answer of a fresh compile", async () => {
    const last = controller.last;
    expect(last?.result.table.routeCount).toBe(8000);
    const compiles = spyOn(controller.compiler, "compile");
    const res = await live.request(`/debug/explain?${query}`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as ExplainResult;
    expect(body.match).toMatchObject({ ingress: "team-7/app-7", path: "/api/v1/items", pathType: "Exact" });
    const fresh = explain(last!.snapshot, config, { host: "app-7.example.com", path: "/api/v1/items", scheme: "http" });
    expect(body).toEqual(JSON.parse(JSON.stringify(fresh)));
    expect(compiles).toHaveBeenCalledTimes(0);
    compiles.mockRestore();
  });

  test("/healthz is answered while an explain is under way", async () => {
    let answered = false;
    const explained = Promise.resolve(live.request(`/debug/explain?${query}`)).then((r) => {
      answered = true;
      return r.status;
    });
    // One turn of the event loop: a walk of 8,000 rule paths takes several steps, not one.
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(answered).toBe(false);
    expect((await live.request("/healthz")).status).toBe(200);
    expect(answered).toBe(false);
    expect(await explained).toBe(200);
  });
});
