import { afterAll, describe, expect, test } from "bun:test";
import { createAdminApp, type AdminDeps, type ExplainQuery } from "../../src/admin/app.ts";
import { createReadiness } from "../../src/admin/readiness.ts";
import { Registry } from "../../src/admin/registry.ts";
import { createInstruments } from "../../src/admin/instruments.ts";
import { silentLogger } from "../../src/log/logger.ts";
import type { SerializedTable } from "../../src/table/serialize.ts";
import { parseExposition, sampleValue } from "./expo-parser.ts";
import { accessRecord } from "./records.ts";

function setup(over: Partial<AdminDeps> = {}) {
  const readiness = createReadiness(["Ingress", "Service"]);
  const registry = new Registry();
  const inst = createInstruments(registry, { version: "1.2.3" });
  const explained: ExplainQuery[] = [];
  const errors: string[] = [];
  let table: SerializedTable | null = null;
  const deps: AdminDeps = {
    ready: readiness.check,
    metrics: () => registry.expose(),
    routes: () => table,
    explain: (q) => {
      explained.push(q);
      return { query: q, match: null };
    },
    logger: { ...silentLogger, error: (msg) => void errors.push(msg) },
    ...over,
  };
  const app = createAdminApp(deps);
  return { app, readiness, inst, explained, errors, setTable: (t: unknown) => void (table = t as SerializedTable) };
}

describe("admin endpoints", () => {
  test("/healthz is 200 ok while running", async () => {
    const res = await setup().app.request("/healthz");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    expect(await res.text()).toBe("ok");
    expect(res.headers.get("cache-control")).toBe("no-store");
  });

  test("/readyz flips on initial sync and on drain", async () => {
    const { app, readiness } = setup();
    let res = await app.request("/readyz");
    expect(res.status).toBe(503);
    expect(res.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    expect(await res.text()).toBe("not ready: not synced: Ingress, Service");
    readiness.synced("Ingress");
    res = await app.request("/readyz");
    expect(await res.text()).toBe("not ready: not synced: Service");
    readiness.synced("Service");
    res = await app.request("/readyz");
    expect(res.status).toBe(503);
    expect(await res.text()).toBe("not ready: no route table yet");
    readiness.tableLive();
    res = await app.request("/readyz");
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("ok");
    readiness.draining();
    res = await app.request("/readyz");
    expect(res.status).toBe(503);
    expect(await res.text()).toBe("not ready: draining");
    // Health stays up while draining: the process still runs.
    expect((await app.request("/healthz")).status).toBe(200);
  });

  test("/metrics serves a strict text format 0.0.4 exposition", async () => {
    const { app, inst } = setup();
    inst.observeRequest(accessRecord({ method: "GET", status: 200, bytesIn: 0, bytesOut: 10, durationMs: 3, ingress: "ns/web", service: "ns/web:80" }));
    const res = await app.request("/metrics");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
    const fams = parseExposition(await res.text());
    expect(sampleValue(fams, "portico_build_info", { version: "1.2.3" })).toBe(1);
    expect(sampleValue(fams, "portico_requests_total", { ingress: "web", namespace: "ns", service: "ns/web:80", method: "GET", status_class: "2xx" })).toBe(1);
  });

  test("/metrics failure is a short 500 and is logged", async () => {
    const { app, errors } = setup({
      metrics: () => {
        throw new Error("boom");
      },
    });
    const res = await app.request("/metrics");
    expect(res.status).toBe(500);
    expect(await res.text()).toBe("metrics unavailable");
    expect(errors).toEqual(["metrics failed"]);
  });

  test("/debug/routes is 503 before the first table, then the table as JSON", async () => {
    const { app, setTable } = setup();
    let res = await app.request("/debug/routes");
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ error: "no route table yet" });
    setTable({ generation: 4, hosts: [{ host: "foo.com", routes: [] }] });
    res = await app.request("/debug/routes");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("application/json");
    expect(await res.json()).toEqual({ generation: 4, hosts: [{ host: "foo.com", routes: [] }] });
  });

  test("/debug/explain passes the validated query through, with defaults", async () => {
    const { app, explained } = setup();
    let res = await app.request("/debug/explain?host=Foo.example.com:8443&path=/a/b%3Fc&scheme=https&extra=1");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ query: { host: "Foo.example.com:8443", path: "/a/b?c", scheme: "https" }, match: null });
    res = await app.request("/debug/explain?host=foo.com");
    expect(res.status).toBe(200);
    res = await app.request("/debug/explain?host=[::1]:80&path=/");
    expect(res.status).toBe(200);
    expect(explained).toEqual([
      { host: "Foo.example.com:8443", path: "/a/b?c", scheme: "https" },
      { host: "foo.com", path: "/", scheme: "http" },
      { host: "[::1]:80", path: "/", scheme: "http" },
    ]);
  });

  test.each([
    ["missing host", "", ["host"]],
    ["empty host", "host=", ["host"]],
    ["host with a space", "host=a%20b", ["host"]],
    ["host with a user", "host=user@evil.test", ["host"]],
    ["relative path", "host=a.com&path=x", ["path"]],
    ["control char in path", "host=a.com&path=/a%0d%0aSet-Cookie:x", ["path"]],
    ["bad scheme", "host=a.com&scheme=ftp", ["scheme"]],
    ["repeated host", "host=a.com&host=b.com", ["host"]],
    ["two bad fields", "path=nope&scheme=gopher", ["host", "path", "scheme"]],
    // Longer than explain accepts (compile/explain-types.ts EXPLAIN_LIMITS).
    ["host too long", `host=${"a".repeat(262)}`, ["host"]],
    ["path too long", `host=a.com&path=/${"a".repeat(8192)}`, ["path"]],
  ])("/debug/explain rejects %s with 400 and no echo", async (_why, query, fields) => {
    const { app, explained } = setup();
    const res = await app.request(`/debug/explain?${query}`);
    expect(res.status).toBe(400);
    const body = await res.text();
    expect(JSON.parse(body)).toEqual({ error: "invalid query", fields });
    for (const bad of ["evil", "gopher", "ftp", "Set-Cookie", "nope"]) expect(body).not.toContain(bad);
    expect(explained).toEqual([]);
  });

  test("/debug/explain failure is a 500 without details", async () => {
    const { app } = setup({
      explain: () => {
        throw new Error("secret internals");
      },
    });
    const res = await app.request("/debug/explain?host=a.com");
    expect(res.status).toBe(500);
    expect(await res.text()).not.toContain("secret");
  });

  test("unknown paths and methods are 404 without echo", async () => {
    const { app } = setup();
    const res = await app.request("/debug/<script>");
    expect(res.status).toBe(404);
    expect(await res.text()).toBe("not found");
    expect((await app.request("/healthz", { method: "POST" })).status).toBe(404);
    expect((await app.request("/metrics/")).status).toBe(404);
  });
});

describe("served by Bun.serve on a real socket", () => {
  const { app, readiness } = setup();
  const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: app.fetch });
  afterAll(() => server.stop(true));

  test("endpoints answer over HTTP", async () => {
    const base = `http://127.0.0.1:${server.port}`;
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    expect((await fetch(`${base}/readyz`)).status).toBe(503);
    readiness.synced("Ingress");
    readiness.synced("Service");
    readiness.tableLive();
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    const head = await fetch(`${base}/healthz`, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe("");
    const m = await fetch(`${base}/metrics`);
    expect(parseExposition(await m.text()).has("portico_requests_total")).toBe(true);
  });
});
