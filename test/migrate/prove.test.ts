// `portico migrate --to gateway-api --prove`: the real command serves the set both ways with
// Portico processes of its own, asks the same sample of each and lists every request whose
// answer differs (src/runtime/prove.ts; docs/design.md, "Converting to Gateway API"). The set:
// an Ingress that converts to the same answers, a use-regex one, and one whose Service does not
// exist, which ingress-nginx answers 503 (a backend without endpoints: rootfs/etc/nginx/lua/
// lua_ingress.lua and balancer.lua, /work/shared/NGINX-COMPAT.md "the request's path") and a
// Gateway API implementation 500 (HTTPRouteRule.backendRefs: a rule whose backend is invalid
// returns a 500 status code).
import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadAll } from "js-yaml";
import { eventually } from "../wait.ts";

const ROOT = join(import.meta.dir, "..", "..");
const CMD = process.env.PORTICO_BIN ? [process.env.PORTICO_BIN] : [process.execPath, join(ROOT, "src", "main.ts")];
const dir = mkdtempSync(join(tmpdir(), "portico-prove-test-"));
// The command's own temporary folders go here, to see that it removes them.
const tmp = join(dir, "tmp");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SERVICE = `apiVersion: v1
kind: Service
metadata: { name: a, namespace: web }
spec: { ports: [{ name: http, port: 80 }] }
`;
const ingress = (name: string, host: string, path: string, service: string, ann = "") => `---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: { name: ${name}, namespace: web${ann === "" ? "" : `, annotations: { ${ann} }`} }
spec:
  ingressClassName: nginx
  rules:
    - host: ${host}
      http: { paths: [{ path: "${path}", pathType: ${path.includes("[") ? "ImplementationSpecific" : "Prefix"}, backend: { service: { name: ${service}, port: { number: 80 } } } }] }
`;
const SAME = SERVICE + ingress("plain", "plain.test", "/app", "a") + ingress("rx", "rx.test", "/api/[0-9]+", "a", `nginx.ingress.kubernetes.io/use-regex: "true"`);
const DIFFERS = SAME + ingress("gone", "gone.test", "/", "nope");

async function run(yaml: string, ...extra: string[]): Promise<{ code: number; out: string; err: string }> {
  const file = join(dir, `set-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, yaml);
  mkdirSync(tmp, { recursive: true });
  const p = Bun.spawn([...CMD, "migrate", "--to", "gateway-api", "--manifests", file, ...extra], { stdout: "pipe", stderr: "pipe", cwd: ROOT, env: { ...process.env, TMPDIR: tmp } });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, out, err };
}

const UNAVAILABLE = { location: null, fields: ["cache-control: no-store", "content-type: text/html"], received: null };

test("--output json: a proof field lists exactly the requests whose answers differ, and the exit status is 3", async () => {
  const r = await run(DIFFERS, "--prove", "--output", "json");
  expect(r.err).toBe("");
  expect(r.code).toBe(3);
  const j = JSON.parse(r.out) as { proof: { asked: number; same: number; differ: unknown[] } };
  // plain.test: /app, /app/x, /appx, /APP; rx.test: /api/, /api/x, /api/1, /api/1/x, /API/1, /apix, /API/; gone.test: /, /x.
  expect(j.proof.asked).toBe(13);
  expect(j.proof.same).toBe(11);
  expect(j.proof.differ).toEqual([
    { request: { scheme: "http", host: "gone.test", path: "/", method: "GET", headers: {}, why: 'web/gone "/"' }, ingress: { status: 503, ...UNAVAILABLE }, gateway: { status: 500, ...UNAVAILABLE }, notes: [] },
    { request: { scheme: "http", host: "gone.test", path: "/x", method: "GET", headers: {}, why: 'web/gone "/"' }, ingress: { status: 503, ...UNAVAILABLE }, gateway: { status: 500, ...UNAVAILABLE }, notes: [] },
  ]);
  // Everything it started is stopped and its temporary folders are gone.
  expect(readdirSync(tmp).filter((f) => f.startsWith("portico-prove-"))).toEqual([]);
});

test("text: the YAML as without --prove, then the proof as comment lines naming each differing request", async () => {
  const [proved, plain] = [await run(DIFFERS, "--prove"), await run(DIFFERS)];
  expect(proved.code).toBe(3);
  expect(plain.code).toBe(0);
  expect(proved.out.startsWith(plain.out)).toBe(true);
  // Still YAML `kubectl apply` takes: the same objects.
  expect(loadAll(proved.out)).toEqual(loadAll(plain.out));
  expect(proved.out.slice(plain.out.length)).toBe(
    [
      "# portico-proof: asked 13, same 11, differ 2",
      '#   GET http://gone.test/  [web/gone "/"]',
      "#     Ingress: 503",
      "#     Gateway: 500",
      "#     notes: none for this host",
      '#   GET http://gone.test/x  [web/gone "/"]',
      "#     Ingress: 503",
      "#     Gateway: 500",
      "#     notes: none for this host",
      "",
    ].join("\n"),
  );
});

test("a set whose every answer is the same: no differences, and the conversion's own exit status (0)", async () => {
  const r = await run(SAME, "--prove", "--output", "json");
  expect(r.code).toBe(0);
  expect((JSON.parse(r.out) as { proof: unknown }).proof).toEqual({ asked: 11, same: 11, differ: [] });
});

test("--prove goes with --to gateway-api and --manifests: otherwise a bad flag (exit 2)", async () => {
  const noTo = Bun.spawnSync([...CMD, "migrate", "--prove", "--manifests", join(ROOT, "test", "fixtures", "migrate", "manifests")], { cwd: ROOT });
  expect(noTo.exitCode).toBe(2);
  expect(noTo.stderr.toString()).toBe("portico: --prove goes with --to gateway-api\n");
  const noManifests = Bun.spawnSync([...CMD, "migrate", "--to", "gateway-api", "--prove"], { cwd: ROOT, env: { ...process.env, KUBECONFIG: "/nonexistent" } });
  expect(noManifests.exitCode).toBe(2);
  expect(noManifests.stderr.toString()).toBe("portico: --prove needs --manifests\n");
});

/** The processes whose command line names `needle` (Linux /proc). */
function processesNaming(needle: string): number[] {
  const out: number[] = [];
  for (const pid of readdirSync("/proc").filter((f) => /^\d+$/.test(f))) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, "latin1").includes(needle)) out.push(Number(pid));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

test("SIGTERM while the proof runs: the Porticos and backends it started are stopped and its folder removed", async () => {
  // The first request of the sample is for an Ingress of another class: both sides answer it
  // 404, so the proof waits there for both to serve the set, long enough to be signalled.
  const own = join(dir, "signal");
  mkdirSync(own, { recursive: true });
  const file = join(own, "set.yaml");
  writeFileSync(file, SERVICE + ingress("other", "other.test", "/", "a").replace("ingressClassName: nginx", "ingressClassName: other") + ingress("plain", "plain.test", "/app", "a"));
  const p = Bun.spawn([...CMD, "migrate", "--to", "gateway-api", "--prove", "--manifests", file], { stdout: "pipe", stderr: "pipe", cwd: ROOT, env: { ...process.env, TMPDIR: own } });
  try {
    // Both Porticos of the proof run: their --manifests are in the command's temporary folder.
    await eventually(() => processesNaming(`${own}/portico-prove-`).length === 2, 20_000, "the proof's two Porticos");
    p.kill("SIGTERM");
    expect(await p.exited).toBe(143);
    await eventually(() => processesNaming(`${own}/portico-prove-`).length === 0, 10_000, "the proof's Porticos stopped");
    expect(readdirSync(own).filter((f) => f.startsWith("portico-prove-"))).toEqual([]);
  } finally {
    p.kill("SIGKILL");
    for (const pid of processesNaming(`${own}/portico-prove-`)) process.kill(pid, "SIGKILL");
  }
});

test("SIGKILL of the command: the Porticos it started stop too (their IPC channel closes), though no cleanup of its own runs", async () => {
  // As above, the proof waits on the other-class Ingress's 404, long enough to be killed.
  const own = join(dir, "killed");
  mkdirSync(own, { recursive: true });
  const file = join(own, "set.yaml");
  writeFileSync(file, SERVICE + ingress("other", "other.test", "/", "a").replace("ingressClassName: nginx", "ingressClassName: other") + ingress("plain", "plain.test", "/app", "a"));
  const p = Bun.spawn([...CMD, "migrate", "--to", "gateway-api", "--prove", "--manifests", file], { stdout: "ignore", stderr: "ignore", cwd: ROOT, env: { ...process.env, TMPDIR: own } });
  let children: number[] = [];
  try {
    await eventually(() => (children = processesNaming(`${own}/portico-prove-`)).length === 2, 20_000, "the proof's two Porticos");
    p.kill("SIGKILL");
    expect(await p.exited).toBe(137);
    // Each child is gone (or a zombie its new parent has not reaped yet: no command line left).
    await eventually(() => processesNaming(`${own}/portico-prove-`).length === 0, 20_000, "the proof's Porticos gone after their parent was killed");
    expect(children.length).toBe(2);
  } finally {
    p.kill("SIGKILL");
    for (const pid of processesNaming(`${own}/portico-prove-`)) process.kill(pid, "SIGKILL");
  }
});

test("--manifests alone, with no cluster anywhere (no KUBECONFIG, no ~/.kube, no in-cluster service variables): the proof runs", async () => {
  const home = join(dir, "no-cluster-home");
  mkdirSync(home, { recursive: true });
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("KUBE") && !k.startsWith("PORTICO_")) env[k] = v;
  env.HOME = home;
  env.TMPDIR = tmp;
  mkdirSync(tmp, { recursive: true });
  const file = join(dir, "no-cluster.yaml");
  writeFileSync(file, SAME);
  const p = Bun.spawn([...CMD, "migrate", "--to", "gateway-api", "--prove", "--output", "json", "--manifests", file], { stdout: "pipe", stderr: "pipe", cwd: ROOT, env });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  expect(err).toBe("");
  expect(code).toBe(0);
  expect((JSON.parse(out) as { proof: unknown }).proof).toEqual({ asked: 11, same: 11, differ: [] });
});

test("the proof reads the files the command read: an editor's dotfile copy that does not parse is skipped by both", async () => {
  const own = join(dir, "dotfile");
  mkdirSync(own, { recursive: true });
  writeFileSync(join(own, "set.yaml"), SAME);
  writeFileSync(join(own, ".set.yaml"), "kind: [\n");
  mkdirSync(tmp, { recursive: true });
  const p = Bun.spawn([...CMD, "migrate", "--to", "gateway-api", "--prove", "--output", "json", "--manifests", own], { stdout: "pipe", stderr: "pipe", cwd: ROOT, env: { ...process.env, TMPDIR: tmp } });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  expect(err).toBe("");
  expect(code).toBe(0);
  expect((JSON.parse(out) as { proof: unknown }).proof).toEqual({ asked: 11, same: 11, differ: [] });
});
