// The command line as a user meets it: help, version, bad flags, explain, SIGTERM drain.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, startBackend, startPortico, type Backend } from "./harness.ts";
import { startFakeApiServer } from "../fake-apiserver.ts";
import { ingress, ingressClass, kubeconfig, service, slice, yamlDocs } from "./objects.ts";
import { eventually } from "../wait.ts";

const ROOT = join(import.meta.dir, "..", "..");
const cmd = process.env.PORTICO_BIN ? [process.env.PORTICO_BIN] : [process.execPath, join(ROOT, "src", "main.ts")];

function runCli(args: string[]): { code: number; stdout: string; stderr: string } {
  const r = Bun.spawnSync([...cmd, ...args], { stdin: "ignore", env: { ...process.env, PORTICO_HTTP_PORT: "" } });
  return { code: r.exitCode, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

let dir: string;
let backend: Backend;
beforeAll(() => {
  backend = startBackend("slow");
  dir = mkdtempSync(join(tmpdir(), "portico-cli-"));
  writeFileSync(
    join(dir, "app.yaml"),
    yamlDocs([
      ingressClass(),
      service("app", "slow"),
      slice("app", "slow", [backend.port]),
      ingress("app", "slow", [{ host: "app.test", paths: [{ path: "/", service: "slow" }, { path: "/v1", type: "Exact", service: "slow" }] }]),
      ingress("other", "foreign", [{ host: "app.test", paths: [{ path: "/x", service: "slow" }] }], { className: "nginx" }),
    ]),
  );
});
afterAll(() => {
  backend.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("flags", () => {
  test("--help lists the stable flags and exits 0", () => {
    const r = runCli(["--help"]);
    expect(r.code).toBe(0);
    for (const f of ["--kubeconfig", "--context", "--manifests", "--http-port", "--https-port", "--admin-port", "--bind", "--ingress-class", "--controller-name", "--watch-namespace", "--watch-ingress-without-class", "--default-ssl-certificate", "--default-backend-service", "--publish-service", "--publish-status-address", "--log-level", "--log-format"]) {
      expect(r.stdout).toContain(f);
    }
  });
  test("--version prints the version", () => {
    const r = runCli(["--version"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^portico \d+\.\d+\.\d+ \(commit \S+/);
  });
  test("a bad value exits 2 with one line naming the flag", () => {
    const r = runCli(["--http-port", "http"]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toContain("--http-port");
  });
  test("an unknown flag exits 2", () => {
    const r = runCli(["--no-such-flag"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--no-such-flag");
  });
  test("a bad PORTICO_* environment value exits 2 naming it", () => {
    const r = Bun.spawnSync([...cmd], { env: { ...process.env, PORTICO_LOG_LEVEL: "loud" } });
    expect(r.exitCode).toBe(2);
    // Named by the variable the user set, with the flag it stands for.
    expect(r.stderr.toString()).toContain('PORTICO_LOG_LEVEL (--log-level): expected debug, info, warn or error, got "loud"');
  });
});

describe("errors that name the cause", () => {
  test("--bind and --tls-ciphers are checked before anything listens: exit 2, the flag named", () => {
    for (const [args, expected] of [
      [["--bind", "notanip"], '--bind: expected an IP address of this host (0.0.0.0, ::, 127.0.0.1, ...) or localhost, got "notanip"'],
      [["--tls-ciphers", "ECDHE-RSA-AES128-GCM-SHA256:%BOGUS"], '--tls-ciphers: invalid character "%" at 29'],
      [["--manifests", "m.yaml", "--kubeconfig", "k"], "--manifests and --kubeconfig name two sources"],
    ] as const) {
      const r = runCli([...args]);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe(""); // no "starting", no "listening"
      expect(r.stderr.trim().split("\n")).toHaveLength(1);
      expect(r.stderr).toStartWith(`portico: ${expected}`);
    }
  });

  test("with no source at all, the error names --manifests too (exit 1)", () => {
    const home = mkdtempSync(join(tmpdir(), "portico-home-"));
    try {
      const env = { PATH: process.env.PATH ?? "", HOME: home };
      const ok = Bun.spawnSync([...cmd, "--workers", "1", "--bind", "127.0.0.1", "--http-port", String(freePort()), "--https-port", String(freePort()), "--admin-port", String(freePort())], { stdin: "ignore", env, timeout: 20_000 });
      expect(ok.exitCode).toBe(1);
      const failed = ok.stdout.toString().split("\n").find((l) => l.includes("start-up failed"));
      expect(failed).toContain("--kubeconfig PATH");
      expect(failed).toContain("--manifests PATH");
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  test("a malformed kubeconfig names its file; a --bind address this host does not have is named", () => {
    const bad = join(dir, "kubeconfig-broken");
    writeFileSync(bad, "apiVersion: v1\nclusters: [\n  - name: a\n");
    const ports = ["--https-port", String(freePort()), "--admin-port", String(freePort()), "--http-port", String(freePort()), "--workers", "1"];
    const r = Bun.spawnSync([...cmd, "--kubeconfig", bad, "--bind", "127.0.0.1", ...ports], { stdin: "ignore", timeout: 20_000 });
    expect(r.exitCode).toBe(1);
    expect(r.stdout.toString()).toContain(`"err":"kubeconfig ${bad}: `);

    // 192.0.2.1 (TEST-NET-1, RFC 5737) is an IP literal, so the flag passes; no host has it.
    const away = Bun.spawnSync([...cmd, "--manifests", dir, "--bind", "192.0.2.1", ...ports], { stdin: "ignore", timeout: 20_000 });
    expect(away.exitCode).toBe(1);
    expect(away.stdout.toString()).toContain('"err":"cannot listen on --bind 192.0.2.1: it is not an address of this host (EADDRNOTAVAIL)"');
  });
});

describe("an API server that does not answer", () => {
  test("is named in Portico's words (not Bun's), and leader election says it once, not every round", async () => {
    const closed = freePort(); // nothing listens there
    const kc = join(dir, "kubeconfig-refused");
    writeFileSync(kc, JSON.stringify({ clusters: [{ name: "c", cluster: { server: `http://127.0.0.1:${closed}` } }], users: [{ name: "u", user: { token: "t" } }], contexts: [{ name: "x", context: { cluster: "c", user: "u" } }], "current-context": "x" }));
    const p = await startPortico(["--kubeconfig", kc, "--election-namespace", "default", "--log-level", "debug"], { ready: false });
    try {
      const watch = await p.waitForLine(/"msg":"list\/watch failed, retrying"/);
      expect(JSON.parse(watch).err).toBe(`cannot reach the Kubernetes API server http://127.0.0.1:${closed}: connection refused (nothing listens there, or the server is down) (ECONNREFUSED)`);
      const leader = await p.waitForLine(/"msg":"leader election failing; retrying with back-off"/);
      expect(JSON.parse(leader).err).toStartWith(`cannot reach the Kubernetes API server http://127.0.0.1:${closed}: `);
      // The next failed round is logged at debug only (src/kube/leader.ts): once it is in, the
      // warning has had its chance to repeat, and did not.
      await p.waitForLine(/"msg":"leader election round failed"/, 20_000);
      expect(p.lines.filter((l) => l.includes("leader election") && l.includes('"level":"warn"')).length).toBe(1);
      expect(p.lines.some((l) => l.includes("Is the computer able to access the url"))).toBe(false);
      expect((await fetch(`${p.admin}/readyz`)).status).toBe(503);
    } finally {
      await p.stop();
    }
  });
});

describe("portico explain", () => {
  test("names the matching Ingress and rule, and the candidates that lost", () => {
    const r = runCli(["explain", "--manifests", dir, "--host", "app.test", "--path", "/v1/"]);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { outcome: string; match: { ingress: string; path: string; pathType: string }; candidates: { ingress: string; verdict: string }[] };
    expect(out.outcome).toBe("route");
    expect(out.match).toMatchObject({ ingress: "app/slow", path: "/", pathType: "Prefix" });
    const verdicts = Object.fromEntries(out.candidates.map((c) => [`${c.ingress}`, c.verdict]));
    expect(verdicts["other/foreign"]).toBe("not-our-class");
    expect(out.candidates.some((c) => c.ingress === "app/slow" && c.verdict === "path-mismatch")).toBe(true);
  });

  test("says what the proxy answers (response), with the client address given by --client", () => {
    const r = runCli(["explain", "--manifests", dir, "--host", "app.test", "--path", "/v1", "--client", "10.1.2.3"]);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { request: { client?: string }; response: { kind: string; backends: string[] }; match: { answers: string } };
    expect(out.request.client).toBe("10.1.2.3");
    expect(out.response).toMatchObject({ kind: "proxied", backends: ["app/slow:80"] });
    expect(out.match.answers).toBe("proxied");
    const bad = runCli(["explain", "--manifests", dir, "--host", "app.test", "--client", "10.1.2"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--client: expected an IP address");
  });

  test("reads the path as the proxy does: merged slashes route, a path parameter is the proxy's 400", () => {
    const merged = JSON.parse(runCli(["explain", "--manifests", dir, "--host", "app.test", "--path", "//v1"]).stdout) as { outcome: string; request: { path: string }; match: { pathType: string } };
    expect(merged.request.path).toBe("/v1");
    expect(merged.match.pathType).toBe("Exact");
    const r = runCli(["explain", "--manifests", dir, "--host", "app.test", "--path", "/v1;x=1"]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ outcome: "400", reason: "the proxy answers 400 to this request: invalid path", invalidObjects: [] });
  });

  test("a path longer than explain accepts exits 2 with one line, no stack", () => {
    const r = runCli(["explain", "--manifests", dir, "--host", "app.test", "--path", `/${"a".repeat(8192)}`]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("path longer than 8192 characters");
    expect(r.stderr).not.toContain("    at ");
  });
});

describe("portico routes", () => {
  test("--manifests: the table people read, problems after it on stderr", () => {
    const r = runCli(["routes", "--manifests", dir]);
    expect(r.code).toBe(0);
    const lines = r.stdout.split("\n");
    expect(lines[0]).toMatch(/^HOST\s+PATH\s+TYPE\s+BACKEND\s+ENDPOINTS\s+TLS\s+INGRESS\s+ANSWERS$/);
    expect(lines.find((l) => l.includes("/v1"))).toMatch(/^app\.test\s+\/v1\s+Exact\s+app\/slow:80\s+1 of 1\s+no\s+app\/slow\s+proxied$/);
    expect(lines.find((l) => / \/ /.test(l))).toMatch(/^app\.test\s+\/\s+Prefix\s+app\/slow:80\s+1 of 1\s+no\s+app\/slow\s+proxied$/);
    expect(r.stdout).toContain("1 host, 2 routes, 1 backend");
    expect(r.stdout).not.toContain("other/foreign"); // not our class: not in the table
  });

  test("against a cluster (the fake API server), and a cluster that does not answer", async () => {
    const api = await startFakeApiServer({ token: "routes-token" });
    try {
      api.create("IngressClass", ingressClass());
      api.create("Service", service("app", "slow"));
      api.create("EndpointSlice", slice("app", "slow", [backend.port]));
      api.create("Ingress", ingress("app", "listed", [{ host: "listed.test", paths: [{ path: "/", service: "slow" }, { path: "/gone", service: "missing" }] }]));
      const kc = join(dir, "kubeconfig-routes");
      writeFileSync(kc, kubeconfig(api.url, "routes-token"));
      const r = Bun.spawn([...cmd, "routes", "--kubeconfig", kc], { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
      const [out, errText, code] = await Promise.all([new Response(r.stdout).text(), new Response(r.stderr).text(), r.exited]);
      expect(code).toBe(0);
      expect(out).toMatch(/^listed\.test\s+\/\s+Prefix\s+app\/slow:80\s+1 of 1\s+no\s+app\/listed\s+proxied$/m);
      expect(out).toMatch(/^listed\.test\s+\/gone\s+Prefix\s+app\/missing:80\s+ServiceNotFound\s+no\s+app\/listed\s+503 no endpoints \(ServiceNotFound\)$/m);
      expect(errText).toContain("reason=ServiceNotFound");
      // One list per kind, then it exits (the watches the source opens are stopped).
      expect(api.requests.filter((q) => !q.watch && q.method === "GET" && q.path.endsWith("/ingresses")).length).toBe(1);
    } finally {
      await api.stop();
    }
    const closed = freePort();
    const kc = join(dir, "kubeconfig-routes-closed");
    writeFileSync(kc, kubeconfig(`http://127.0.0.1:${closed}`, "t"));
    const down = runCli(["routes", "--kubeconfig", kc]);
    expect(down.code).toBe(1);
    expect(down.stdout).toBe("");
    expect(down.stderr).toContain(`cannot reach the Kubernetes API server http://127.0.0.1:${closed}: connection refused`);
  });
});

describe("portico migrate", () => {
  const fixtures = join(ROOT, "test", "fixtures", "migrate");

  test("prints the checked-in report for the fixtures and exits 3 (some Ingresses would change)", () => {
    const cm = ["--nginx-configmap", "ingress-nginx/ingress-nginx-controller"];
    const r = runCli(["migrate", "--manifests", join(fixtures, "manifests"), ...cm]);
    expect(r.code).toBe(3);
    expect(r.stdout).toBe(readFileSync(join(fixtures, "expected-report.txt"), "utf8"));
    expect(r.stderr).toBe("");
    const j = runCli(["migrate", "--manifests", join(fixtures, "manifests"), "--output", "json", ...cm]);
    expect(j.code).toBe(3);
    expect(JSON.parse(j.stdout)).toEqual(JSON.parse(readFileSync(join(fixtures, "expected-report.json"), "utf8")));
  });

  test("exits 0 when every Ingress moves unchanged", () => {
    const clean = mkdtempSync(join(tmpdir(), "portico-migrate-"));
    writeFileSync(join(clean, "app.yaml"), yamlDocs([service("app", "web"), ingress("app", "web", [{ host: "web.test", paths: [{ path: "/", service: "web" }] }], { className: "nginx" })]));
    const r = runCli(["migrate", "--manifests", clean]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("app/web: unchanged (served as ingress-nginx serves it)");
    expect(r.stdout).toContain("Summary: 1 Ingress of class nginx; 0 of other classes ignored");
    // No --nginx-configmap: the report names the ingress-nginx defaults it assumed.
    expect(r.stdout).toContain("No --nginx-configmap: ingress-nginx's defaults were assumed. Where they differ from Portico's");
    expect(r.stdout).toContain("  proxy-body-size: ingress-nginx 1m; Portico unlimited; --ingress-nginx-compat serves\n    ingress-nginx's (--max-body-size=1m)\n");
    rmSync(clean, { recursive: true, force: true });
  });

  test("a file that does not parse counts in the summary and exits 1, in text and JSON", () => {
    const d = mkdtempSync(join(tmpdir(), "portico-migrate-"));
    writeFileSync(join(d, "app.yaml"), yamlDocs([service("app", "web"), ingress("app", "web", [{ host: "web.test", paths: [{ path: "/", service: "web" }] }], { className: "nginx" })]));
    writeFileSync(join(d, "broken.yaml"), "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: lost\n");
    const r = runCli(["migrate", "--manifests", d]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain("app/web: unchanged (served as ingress-nginx serves it)");
    expect(r.stdout).toContain("  NOT READ: 1 file that does not parse, 0 invalid objects; what they hold is not in this report:");
    expect(r.stdout).toContain(JSON.stringify(join(d, "broken.yaml")));
    const j = runCli(["migrate", "--manifests", d, "--output", "json"]);
    expect(j.code).toBe(1);
    const out = JSON.parse(j.stdout) as { summary: Record<string, number>; invalidObjects: { kind: string; name: string }[] };
    expect(out.summary).toMatchObject({ ingresses: 1, unchanged: 1, unreadableFiles: 1, invalidObjects: 0 });
    expect(out.invalidObjects).toEqual([expect.objectContaining({ kind: "ManifestFile", name: join(d, "broken.yaml") })]);
    rmSync(d, { recursive: true, force: true });
  });

  test("a missing manifests path or ConfigMap exits 1; a bad --output or --nginx-configmap exits 2", () => {
    expect(runCli(["migrate", "--manifests", join(dir, "nope")]).code).toBe(1);
    const noCm = runCli(["migrate", "--manifests", dir, "--nginx-configmap", "ingress-nginx/nope"]);
    expect(noCm.code).toBe(1);
    expect(noCm.stderr).toContain("ConfigMap ingress-nginx/nope is not in");
    const bad = runCli(["migrate", "--manifests", dir, "--output", "xml"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--output: expected text or json");
    expect(runCli(["migrate", "--manifests", dir, "--nginx-configmap", "just-a-name"]).stderr).toContain("--nginx-configmap: expected NAMESPACE/NAME");
  });
});

describe("SIGTERM drain", () => {
  test("readiness drops at once, an in-flight request completes, then the process exits 0 and refuses connections", async () => {
    const p = await startPortico(["--manifests", dir, "--shutdown-delay", "300ms", "--shutdown-grace-period", "5s"]);
    try {
      const hits = backend.hits;
      const inflight = fetch(`${p.http}/slow?ms=1200`, { headers: { host: "app.test" } });
      await eventually(() => backend.hits > hits, 5_000, "the slow request at the backend");
      p.proc.kill("SIGTERM");
      await eventually(async () => (await fetch(`${p.admin}/readyz`)).status === 503, 5_000, "readiness dropped");
      // Still serving during --shutdown-delay so load balancers can notice.
      expect((await fetch(`${p.http}/`, { headers: { host: "app.test" } })).status).toBe(200);
      const res = await inflight;
      expect(res.status).toBe(200);
      expect(await res.text()).toBe("slow /slow");
      expect(await p.proc.exited).toBe(0);
      const refused = await fetch(`${p.http}/`, { headers: { host: "app.test" } }).then(() => false, () => true);
      expect(refused).toBe(true);
    } finally {
      await p.stop("SIGKILL");
    }
  });
});
