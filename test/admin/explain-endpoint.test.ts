// /debug/explain and /debug/routes through the admin app, wired as main.ts wires them: the
// real compiler's explain() and serializeTable() over a snapshot built from a fixture.
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { createAdminApp } from "../../src/admin/app.ts";
import { createReadiness } from "../../src/admin/readiness.ts";
import { compile } from "../../src/compile/compile.ts";
import { DEFAULT_COMPILE_CONFIG } from "../../src/compile/config.ts";
import { explain, type ExplainResult } from "../../src/compile/explain.ts";
import { serializeTable } from "../../src/table/serialize.ts";
import { loadFixture } from "../compile/snapshot.ts";

const fx = loadFixture(await Bun.file(join(import.meta.dir, "fixtures", "explain.yaml")).text());
const result = compile(fx.snapshot, DEFAULT_COMPILE_CONFIG);
const app = createAdminApp({
  ready: createReadiness([]).check,
  metrics: () => "",
  routes: () => serializeTable(result.table, 3),
  explain: (q) => explain(fx.snapshot, DEFAULT_COMPILE_CONFIG, q),
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
    expect(r.match?.backend).toEqual({ id: "shop/web:80", status: "ok", scheme: "http", endpoints: ["10.0.0.1:8080"] });
    expect(verdictOf(r, "shop/old", "exact.test")).toBe("matched");
    const loser = r.candidates.find((c) => c.ingress === "shop/new");
    expect(loser?.verdict).toBe("conflict-loser");
    expect(loser?.reason).toContain("2024-01-01");
    expect(r.certificate).toMatchObject({ via: "exact", host: "exact.test", secret: "shop/exact-tls" });
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
    expect(r.diagnostics.some((d) => d.name === "noep" && d.reason === "NoEndpoints")).toBe(true);
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

test("/debug/routes serves the live table with its generation", async () => {
  const res = await app.request("/debug/routes");
  expect(res.status).toBe(200);
  const body = (await res.json()) as { generation: number; hosts: { host: string }[] };
  expect(body.generation).toBe(3);
  expect(body.hosts.map((h) => h.host)).toEqual(["a.wild.test", "exact.test", "noep.test", "*.wild.test"]);
});
