// Start-up probe (start to ready with 10k Ingresses, docs/design.md "Sources at start-up"):
// the same generated cluster as bench/control-plane.ts, but only the start — fake API list
// floor, start-to-ready, CPU to ready, API requests to ready (and which), RSS 1 s after ready
// and peak RSS — repeated, with medians. No edits, no load, no backend (readiness does not
// depend on endpoints answering).
//
//   bun bench/lib/startup-probe.ts [--n 10000] [--tls 500] [--runs 3] [--mode api,files] [--requests]
//
// Bounded: each start must be ready within 60 s; every process is stopped by its pid.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { BUN_HEADER_FLAG } from "../../src/config/header-buffers.ts";
import { createCertificate } from "../../test/tls/pki.ts";
import { startFakeApiServer } from "../../test/fake-apiserver.ts";
import { toYaml } from "./cluster.ts";
import { generate } from "./cp-gen.ts";
import { listEverything } from "./cp-live.ts";
import { freePorts } from "./net.ts";
import { cpuTicks, peakRssMiB, rssMiB } from "./procfs.ts";
import { addCleanup, installCleanup, logTail, runMain, start, stop } from "./procs.ts";
import { median } from "./report.ts";

const { values: f } = parseArgs({
  options: {
    n: { type: "string", default: "10000" },
    tls: { type: "string", default: "500" },
    runs: { type: "string", default: "3" },
    mode: { type: "string", default: "api,files" },
    requests: { type: "boolean", default: false },
    /** Print Portico's info log of the first run (timestamps relative to spawn). */
    timeline: { type: "boolean", default: false },
  },
});
const N = Number(f.n);
const TLS = Math.min(Number(f.tls), N);
const RUNS = Math.max(1, Math.min(10, Number(f.runs)));
const modes = (f.mode ?? "").split(",");
const ROOT = join(import.meta.dir, "..", "..");
const TOKEN = "probe-token";

async function status(url: string): Promise<number> {
  try {
    const r = await fetch(url, { headers: { host: "admin" }, signal: AbortSignal.timeout(2000) });
    await r.arrayBuffer();
    return r.status;
  } catch {
    return 0;
  }
}

interface Sample {
  readyMs: number;
  cpuS: number;
  rssMiB: number;
  peakMiB: number;
  requests?: number;
  floorMs?: number;
}

async function startAndMeasure(args: string[], dir: string, tag: string, onReady: () => void = () => {}): Promise<Sample> {
  const [http, https, admin] = freePorts(3) as [number, number, number];
  const log = join(dir, `${tag}.log`);
  const t0 = performance.now();
  const p = start(
    [process.execPath, BUN_HEADER_FLAG, join(ROOT, "src", "main.ts"), ...args, "--bind", "127.0.0.1", "--http-port", String(http), "--https-port", String(https), "--admin-port", String(admin), "--access-log", "off", "--log-level", f.timeline ? "info" : "warn", "--log-format", "json", "--workers", "1"],
    { cpus: null, cwd: ROOT, log, out: join(dir, `${tag}.out`) },
  );
  try {
    for (;;) {
      if (p.exitCode !== null) throw new Error(`portico exited ${p.exitCode}: ${await logTail(log)}`);
      if (performance.now() - t0 > 60_000) throw new Error("not ready after 60 s");
      if ((await status(`http://127.0.0.1:${admin}/readyz`)) === 200) break;
      await Bun.sleep(5);
    }
    const readyMs = performance.now() - t0;
    onReady();
    if (f.timeline && tag.endsWith("-0")) {
      const spawnedAt = Date.now() - readyMs;
      for (const line of (await Bun.file(join(dir, `${tag}.out`)).text()).split("\n")) {
        if (!line) continue;
        try {
          const j = JSON.parse(line) as Record<string, unknown>;
          const at = Date.parse(String(j.time ?? j.ts ?? ""));
          const { msg, level: _l, time: _t, ts: _s, config: _c, ...rest } = j;
          console.log(`  +${Number.isFinite(at) ? (at - spawnedAt).toFixed(0).padStart(5) : "    ?"} ms ${String(msg)} ${JSON.stringify(rest).slice(0, 160)}`);
        } catch {
          console.log(`  ${line.slice(0, 200)}`);
        }
      }
      console.log(`  +${readyMs.toFixed(0).padStart(5)} ms /readyz 200 seen by the probe`);
    }
    let ticks = 0;
    for (const t of cpuTicks(p.pid).values()) ticks += t;
    await Bun.sleep(1000);
    return { readyMs, cpuS: ticks / 100, rssMiB: rssMiB(p.pid), peakMiB: peakRssMiB(p.pid) };
  } finally {
    await stop(p);
  }
}

async function main(): Promise<void> {
  installCleanup();
  const dir = mkdtempSync(join(tmpdir(), "portico-probe-"));
  addCleanup(() => rmSync(dir, { recursive: true, force: true }));
  const cert = createCertificate({ subjectCN: "*.bench.test", sans: ["*.bench.test"] });
  const cluster = generate({ ingresses: N, tlsCount: TLS, addresses: ["127.0.0.2", "127.0.0.3", "127.0.0.4"], port: 9, cert: { cert: cert.certPem, key: cert.keyPem } });
  console.log(`${N} Ingresses, ${TLS} TLS Secrets, ${cluster.objects.length} objects; ${RUNS} run(s) per mode`);
  const report = (mode: string, xs: Sample[]) => {
    const m = (k: keyof Sample) => median(xs.map((x) => x[k] ?? Number.NaN));
    const all = (k: keyof Sample, d = 0) => xs.map((x) => (x[k] ?? Number.NaN).toFixed(d)).join(" ");
    console.log(
      `${mode}: ready ${m("readyMs").toFixed(0)} ms [${all("readyMs")}], CPU ${m("cpuS").toFixed(2)} s [${all("cpuS", 2)}], ` +
        `RSS ${m("rssMiB").toFixed(0)} MiB [${all("rssMiB")}], peak ${m("peakMiB").toFixed(0)} MiB [${all("peakMiB")}]` +
        (xs[0]?.requests !== undefined ? `, requests ${all("requests")}, list floor ${m("floorMs").toFixed(0)} ms [${all("floorMs")}]` : ""),
    );
  };

  if (modes.includes("files")) {
    const file = join(dir, "cluster.yaml");
    writeFileSync(file, toYaml(cluster.objects.map((x) => x.object)));
    const xs: Sample[] = [];
    for (let r = 0; r < RUNS; r++) xs.push(await startAndMeasure(["--manifests", file], dir, `files-${r}`));
    report("manifests", xs);
  }
  if (modes.includes("api")) {
    const xs: Sample[] = [];
    for (let r = 0; r < RUNS; r++) {
      const api = await startFakeApiServer({ token: TOKEN, bookmarkIntervalMs: 10_000 });
      try {
        const c0 = performance.now();
        for (const { kind, object } of cluster.objects) api.create(kind, object);
        const createMs = performance.now() - c0;
        const floor = await listEverything(api.url, TOKEN);
        const floor2 = await listEverything(api.url, TOKEN);
        if (r === 0) console.log(`fake: create ${createMs.toFixed(0)} ms; list floor ${floor.ms.toFixed(0)} ms, again ${floor2.ms.toFixed(0)} ms (${floor.items} items)`);
        api.requests.length = 0;
        const kc = join(dir, "kubeconfig");
        writeFileSync(kc, JSON.stringify({
          apiVersion: "v1", kind: "Config",
          clusters: [{ name: "fake", cluster: { server: api.url, "insecure-skip-tls-verify": true } }],
          users: [{ name: "probe", user: { token: TOKEN } }],
          contexts: [{ name: "fake", context: { cluster: "fake", user: "probe", namespace: "default" } }],
          "current-context": "fake",
        }));
        let requestsAtReady = 0;
        const s = await startAndMeasure(["--kubeconfig", kc], dir, `api-${r}`, () => void (requestsAtReady = api.requests.length));
        xs.push({ ...s, requests: requestsAtReady, floorMs: Math.min(floor.ms, floor2.ms) });
        if (f.requests && r === 0) {
          const counts = new Map<string, number>();
          for (const q of api.requests) {
            const k = `${q.method} ${q.path}${q.watch ? " (watch)" : q.query.includes("continue=") ? " (continue)" : ` ${q.query}`}`;
            counts.set(k, (counts.get(k) ?? 0) + 1);
          }
          for (const [k, n] of [...counts].sort()) console.log(`  ${String(n).padStart(4)} ${k}`);
        }
      } finally {
        await api.stop();
      }
    }
    report("api", xs);
  }
}

await runMain(main);
