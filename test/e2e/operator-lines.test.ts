// What an operator reads on a running process: access-log lines for Portico's own answers and
// failed connections, the start-up line in text format, and conflict messages.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, get, startBackend, startPortico, type Backend, type Portico } from "./harness.ts";
import { ingress, ingressClass, service, slice, yamlDocs } from "./objects.ts";

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
