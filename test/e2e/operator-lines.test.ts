// What an operator reads on a running process: access-log lines for Portico's own answers and
// failed connections, the start-up line in text format, and conflict messages.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, get, startBackend, startPortico, type Backend, type Portico } from "./harness.ts";
import { ingress, ingressClass, service, slice, yamlDocs } from "./objects.ts";
import { eventually } from "../wait.ts";

let dir: string;
let backend: Backend;
let deadPort: number;
let p: Portico;

/** The access-log record (JSON line with a request_id) for a request id we sent. */
async function accessLine(requestId: string): Promise<Record<string, unknown>> {
  const line = await p.waitForLine(new RegExp(`"request_id":"${requestId}"`), 5000);
  return JSON.parse(line) as Record<string, unknown>;
}

beforeAll(async () => {
  backend = startBackend("ok");
  deadPort = freePort(); // nothing listens there: connection refused
  dir = mkdtempSync(join(tmpdir(), "portico-lines-"));
  writeFileSync(
    join(dir, "app.yaml"),
    yamlDocs([
      ingressClass(),
      service("app", "ok"),
      slice("app", "ok", [backend.port]),
      service("app", "dead"),
      slice("app", "dead", [deadPort]),
      service("app", "none"),
      slice("app", "none", []),
      ingress("app", "web", [{ host: "app.test", paths: [{ path: "/", service: "ok" }, { path: "/dead", service: "dead" }, { path: "/none", service: "none" }] }]),
      // Same host, path and type as app/web's "/": no creationTimestamp in either file object.
      ingress("app", "zz-late", [{ host: "app.test", paths: [{ path: "/", service: "ok" }] }]),
    ]),
  );
  p = await startPortico(["--manifests", dir]);
});

afterAll(async () => {
  await p?.stop();
  backend?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("access log", () => {
  test("Portico's own 404, 503 and 400 answers log the bytes the client got", async () => {
    const notFound = await get(p.http, "nowhere.test", "/", { headers: { "x-request-id": "own-404" } });
    expect(notFound.status).toBe(404);
    expect((await accessLine("own-404")).bytes_out).toBe(Buffer.byteLength(notFound.body));
    expect(Buffer.byteLength(notFound.body)).toBeGreaterThan(0);

    const unavailable = await get(p.http, "app.test", "/none", { headers: { "x-request-id": "own-503" } });
    expect(unavailable.status).toBe(503);
    expect((await accessLine("own-503")).bytes_out).toBe(Buffer.byteLength(unavailable.body));

    // A HEAD answer has no body: 0 is right there.
    const head = await fetch(`${p.http}/`, { method: "HEAD", headers: { host: "nowhere.test", "x-request-id": "own-head" } });
    expect(head.status).toBe(404);
    expect((await accessLine("own-head")).bytes_out).toBe(0);
  });

  test("a 400 for a bad request logs its body size", async () => {
    // A Host header that is not a host name: rejected before routing.
    const bad = await fetch(`${p.http}/`, { headers: { host: "bad host", "x-request-id": "own-400" } });
    const body = await bad.text();
    expect(bad.status).toBe(400);
    const rec = await accessLine("own-400");
    expect(rec.status).toBe(400);
    expect(rec.bytes_out).toBe(Buffer.byteLength(body));
  });

  test("a failed connection logs the endpoint it tried, not null", async () => {
    const r = await get(p.http, "app.test", "/dead", { headers: { "x-request-id": "dead-502" } });
    expect(r.status).toBe(502);
    const rec = await accessLine("dead-502");
    expect(rec).toMatchObject({ status: 502, upstream: `127.0.0.1:${deadPort}`, upstream_status: null, error: "UpstreamConnect" });
    expect(rec.bytes_out).toBe(Buffer.byteLength(r.body));
  });
});

describe("log lines", () => {
  test("a PathConflict between manifest objects says what decided it, not 'created 1970'", async () => {
    const line = await p.waitForLine(/"reason":"PathConflict"/);
    expect(line).toContain("app/web (no creationTimestamp), which wins over app/zz-late (no creationTimestamp)");
    expect(line).toContain("alphabetical namespace/name order decides");
    expect(line).not.toContain("1970");
  });

  test("the text-format starting line reads as key=value, not an escaped JSON blob", async () => {
    const t = await startPortico(["--manifests", dir, "--log-format", "text", "--trusted-proxies", "10.0.0.0/8,fd00::/8"]);
    try {
      const line = await t.waitForLine(/ INFO starting /);
      expect(line).toContain(` config.httpPort=${t.ports.http} `);
      expect(line).toContain(" config.bind=127.0.0.1 ");
      expect(line).toContain(" config.trustedProxies=10.0.0.0/8,fd00::/8 ");
      expect(line).toContain(` config.manifests=${dir} `);
      expect(line).not.toContain('\\"');
      expect(line).not.toContain("config={");
    } finally {
      await t.stop();
    }
  });
});

describe("a readable route listing", () => {
  test("/debug/routes?format=text on the admin port, and a short summary at start-up", async () => {
    const res = await fetch(`${p.admin}/debug/routes?format=text`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toStartWith("text/plain");
    const text = await res.text();
    expect(text.split("\n")[0]).toMatch(/^HOST\s+PATH\s+TYPE\s+BACKEND\s+ENDPOINTS\s+TLS\s+INGRESS\s+ANSWERS$/);
    expect(text).toMatch(/^app\.test\s+\/none\s+Prefix\s+app\/none:80\s+0 of 0 \(NoEndpoints\)\s+no\s+app\/web\s+503 no endpoints \(NoEndpoints\)$/m);
    expect(text).toMatch(/^app\.test\s+\/dead\s+Prefix\s+app\/dead:80\s+1 of 1\s+no\s+app\/web\s+proxied$/m);
    const byAccept = await fetch(`${p.admin}/debug/routes`, { headers: { accept: "text/plain" } });
    expect(await byAccept.text()).toBe(text);
    // The JSON form is unchanged for programs.
    expect(((await (await fetch(`${p.admin}/debug/routes`)).json()) as { routeCount: number }).routeCount).toBe(3);

    const serving = JSON.parse(await p.waitForLine(/"msg":"serving"/)) as { level: string; table: string[] };
    expect(serving.level).toBe("info");
    expect(serving.table).toContain("app.test/ Prefix → app/ok:80 (1 endpoint)");
    expect(serving.table).toContain("app.test/none Prefix → app/none:80 (503: NoEndpoints)");
  });
});

describe("what each applied configuration changed", () => {
  test("objects added, updated and removed, routes gained and lost, and why an Ingress is not served (once)", async () => {
    const m = join(dir, "changes");
    mkdirSync(m);
    const base = [ingressClass(), service("app", "ok"), slice("app", "ok", [backend.port])];
    const web = (path: string) => ingress("app", "web", [{ host: "web.test", paths: [{ path, service: "ok" }] }]);
    writeFileSync(join(m, "base.yaml"), yamlDocs(base));
    writeFileSync(join(m, "web.yaml"), yamlDocs([web("/v1")]));
    const q = await startPortico(["--manifests", m, "--access-log", "off"]);
    try {
      const applied = (generation: number) => q.waitForLine(new RegExp(`"msg":"configuration applied","generation":${generation},`));
      const rec = async (generation: number) => JSON.parse(await applied(generation)) as Record<string, unknown>;
      // The first table: counts only.
      expect(await rec(1)).not.toHaveProperty("added");

      writeFileSync(join(m, "web.yaml"), yamlDocs([web("/v2")]));
      expect(await rec(2)).toMatchObject({ updated: ["Ingress app/web"], routesGained: ["web.test/v2 Prefix → app/ok:80"], routesLost: ["web.test/v1 Prefix → app/ok:80"] });

      // Two Ingresses of other classes: added, and each says once why it is not served.
      writeFileSync(join(m, "others.yaml"), yamlDocs([
        ingress("app", "theirs", [{ host: "n.test", paths: [{ path: "/", service: "ok" }] }], { className: "nginx" }),
        ingress("app", "classless", [{ host: "c.test", paths: [{ path: "/", service: "ok" }] }], { className: null }),
      ]));
      const g3 = await rec(3);
      expect(g3).toMatchObject({ added: ["Ingress app/classless", "Ingress app/theirs"] });
      expect(g3).not.toHaveProperty("routesGained");
      const theirs = JSON.parse(await q.waitForLine(/"msg":"Ingress not served".*"name":"theirs"/));
      expect(theirs.why).toContain("IngressClass nginx");
      const classless = JSON.parse(await q.waitForLine(/"msg":"Ingress not served".*"name":"classless"/));
      expect(classless.why).toContain("--watch-ingress-without-class is off");
      // ingress-nginx's class without --ingress-nginx-compat: the flag is named, once.
      const hint = JSON.parse(await q.waitForLine(/"msg":"Ingresses of class nginx are not served/));
      expect(hint).toMatchObject({ level: "warn", namespace: "app", name: "theirs" });
      expect(hint.msg).toContain("--ingress-nginx-compat");

      // Another change elsewhere: the not-served Ingresses are not repeated.
      writeFileSync(join(m, "web.yaml"), yamlDocs([web("/v3")]));
      await rec(4);
      expect(q.lines.filter((l) => l.includes('"msg":"Ingress not served"'))).toHaveLength(2);
      expect(q.lines.filter((l) => l.includes('"msg":"Ingresses of class nginx are not served'))).toHaveLength(1);

      // Removed objects, and the routes they took.
      writeFileSync(join(m, "web.yaml"), "# nothing here now\n");
      expect(await rec(5)).toMatchObject({ removed: ["Ingress app/web"], routesLost: ["web.test/v3 Prefix → app/ok:80"] });
      await eventually(async () => (await get(q.http, "web.test", "/v3")).status === 404, 5000);
    } finally {
      await q.stop();
    }
  });
});
