// /debug/* answers only the peers --debug-allow names (loopback by default); /healthz, /readyz
// and /metrics answer every peer that reaches the admin port (the kubelet, Prometheus). Real
// Bun.serve listeners, raw request lines for the spellings a router might read as a debug path,
// and the whole process for the flag.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { networkInterfaces, tmpdir } from "node:os";
import { join } from "node:path";
import { createAdminApp, guardAdmin } from "../../src/admin/app.ts";
import { createReadiness } from "../../src/admin/readiness.ts";
import { cidrMatcher } from "../../src/config/cidr.ts";
import { startPortico, type Portico } from "../e2e/harness.ts";
import { ingressClass, yamlDocs } from "../e2e/objects.ts";

const LOOPBACK = ["127.0.0.0/8", "::1/128"];
const readiness = createReadiness([]);
readiness.tableLive();
const app = createAdminApp({
  ready: readiness.check,
  metrics: () => "portico_up 1\n",
  routes: () => ({ routeCount: 0, hosts: [{ host: "secret.tenant.test", routes: [] }], defaultRoute: null, backends: [] }),
  explain: () => ({ outcome: "route" }),
});
const servers: { stop(force: boolean): unknown }[] = [];
afterAll(() => {
  for (const s of servers) s.stop(true);
});

function adminOn(hostname: string, allow: readonly string[]): number {
  const s = Bun.serve({ hostname, port: 0, reusePort: false, development: false, fetch: guardAdmin(app.fetch, cidrMatcher(allow)) });
  servers.push(s);
  return s.port as number;
}

/** The status of one raw request line (the target exactly as written). */
function statusOf(host: string, port: number, target: string): Promise<number> {
  return new Promise((resolve, reject) => {
    let got = "";
    const sock = net.connect(port, host, () => sock.write(`GET ${target} HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n\r\n`));
    sock.on("data", (d: Buffer) => (got += d.toString("latin1")));
    sock.on("close", () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(got)?.[1] ?? 0)));
    sock.on("error", reject);
  });
}

const PUBLIC = ["/healthz", "/readyz", "/metrics", "/metrics?x=1"];
// Every way a router or a normaliser might still read as a debug endpoint.
const DEBUG = [
  "/debug/routes", "/debug/explain?host=a.test", "/%64ebug/routes", "/debug%2froutes", "//debug/routes",
  "/DEBUG/routes", "/debug/routes/", "/healthz/../debug/routes", "/./debug/routes", "/metrics/../debug/routes",
  "http://admin/debug/routes", "/nope",
  // A public path first, then a way back out that a router might resolve and the guard not.
  "/healthz%23/../debug/routes", "/healthz;/../debug/routes", "/metrics/..%2fdebug/routes", "/metrics\\..\\debug\\routes",
  "/healthz/%2e%2e/debug/routes", "/debug/routes/..;/../metrics", "/metrics%00",
];

describe("a peer --debug-allow does not name", () => {
  // 127.0.0.1 is the only peer a loopback test has: name some other network.
  const port = adminOn("127.0.0.1", ["192.0.2.0/24"]);

  test.each(PUBLIC)("%s is answered", async (target) => {
    expect(await statusOf("127.0.0.1", port, target)).toBe(200);
  });

  test.each(DEBUG)("%s is refused with 403", async (target) => {
    expect(await statusOf("127.0.0.1", port, target)).toBe(403);
  });

  test("a target that resolves to a public path gets that path's answer, never a debug one", async () => {
    for (const target of ["/debug/routes/../../metrics", "/debug/routes%3f/../../metrics", "/debug/routes%23/../../metrics", "/debug/routes\\..\\..\\metrics"]) {
      const got = await new Promise<string>((resolve, reject) => {
        let raw = "";
        const sock = net.connect(port, "127.0.0.1", () => sock.write(`GET ${target} HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n\r\n`));
        sock.on("data", (d: Buffer) => (raw += d.toString("latin1")));
        sock.on("close", () => resolve(raw));
        sock.on("error", reject);
      });
      expect({ target, line: got.slice(0, got.indexOf("\r\n")) }).toEqual({ target, line: "HTTP/1.1 200 OK" });
      expect(got).toContain("portico_up 1");
      expect(got).not.toContain("secret.tenant.test");
    }
  });

  test("the refusal says why, and repeats nothing of the request", async () => {
    const res = await fetch(`http://127.0.0.1:${port}/debug/routes`);
    expect(res.status).toBe(403);
    expect(res.headers.get("cache-control")).toBe("no-store");
    const body = await res.text();
    expect(body).toContain("--debug-allow");
    expect(body).not.toContain("routes");
  });
});

describe("loopback peers (the default)", () => {
  test("IPv4 and IPv6 loopback read /debug/*", async () => {
    const v4 = adminOn("127.0.0.1", LOOPBACK);
    expect(await statusOf("127.0.0.1", v4, "/debug/routes")).toBe(200);
    const res = await fetch(`http://127.0.0.1:${v4}/debug/routes`);
    expect(((await res.json()) as { hosts: { host: string }[] }).hosts.map((h) => h.host)).toEqual(["secret.tenant.test"]);
    const v6 = adminOn("::1", LOOPBACK);
    expect(await statusOf("::1", v6, "/debug/routes")).toBe(200);
  });
});

// A peer that really is not loopback: this host's own non-loopback address (the kernel keeps
// the connection on the host), when it has one.
const external = Object.values(networkInterfaces()).flat().find((a) => a && !a.internal && a.family === "IPv4")?.address;
test.skipIf(external === undefined)("a peer on a non-loopback address gets health and metrics, never /debug/*, by default", async () => {
  const port = adminOn(external!, LOOPBACK);
  expect(await statusOf(external!, port, "/healthz")).toBe(200);
  expect(await statusOf(external!, port, "/metrics")).toBe(200);
  expect(await statusOf(external!, port, "/debug/routes")).toBe(403);
  expect(await statusOf(external!, port, "/debug/explain?host=a.test")).toBe(403);
});

describe("the process", () => {
  const dir = mkdtempSync(join(tmpdir(), "portico-debug-"));
  writeFileSync(join(dir, "all.yaml"), yamlDocs([ingressClass()]));
  const started: Portico[] = [];
  afterAll(async () => {
    for (const p of started) await p.stop("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  test("by default a loopback peer reads /debug/routes; --debug-allow naming another network refuses it, health and metrics stay", async () => {
    const open = await startPortico(["--manifests", dir, "--access-log", "off"]);
    started.push(open);
    expect((await fetch(`${open.admin}/debug/routes`)).status).toBe(200);
    const closed = await startPortico(["--manifests", dir, "--access-log", "off", "--debug-allow", "192.0.2.0/24"]);
    started.push(closed);
    expect((await fetch(`${closed.admin}/debug/routes`)).status).toBe(403);
    expect((await fetch(`${closed.admin}/debug/explain?host=a.test`)).status).toBe(403);
    for (const path of ["/healthz", "/readyz", "/metrics"]) expect((await fetch(`${closed.admin}${path}`)).status).toBe(200);
  });

  test("a --debug-allow entry it cannot match as written stops start-up with exit 2, naming the flag", async () => {
    const p = await startPortico(["--manifests", dir, "--debug-allow", "fe80::1%eth0/64"], { ready: false });
    started.push(p);
    expect(await p.proc.exited).toBe(2);
    expect(p.lines.join("\n")).toContain('portico: --debug-allow: expected IPv4/IPv6 CIDRs separated by commas (e.g. 127.0.0.0/8,::1); "fe80::1%eth0/64" has a zone index');
  });
});
