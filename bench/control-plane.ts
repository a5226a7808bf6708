// Control-plane benchmark: generated clusters of 1k and 10k Ingresses (+ Services,
// EndpointSlices, 500 TLS Secrets). `bun bench/control-plane.ts --help`.
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { createCertificate } from "../test/tls/pki.ts";
import { generate } from "./lib/cp-gen.ts";
import { runOffline, type OfflineResult } from "./lib/cp-offline.ts";
import { runLive, runManifestsStart, type LiveResult } from "./lib/cp-live.ts";
import { toYaml } from "./lib/cluster.ts";
import { waitQuiet } from "./lib/procfs.ts";
import { ensureTools, versions } from "./lib/install.ts";
import { addCleanup, installCleanup, runMain, stopAll } from "./lib/procs.ts";
import { porticoAvailable, startBackend } from "./lib/systems.ts";

const HELP = `bun bench/control-plane.ts [options]
  --sizes LIST     Ingress counts (default 1000,10000)
  --httproutes     also as many HTTPRoutes as Ingresses (Gateway API, one Gateway), beside them;
                   HTTPRoute edits are timed too (every other live edit is an HTTPRoute's)
  --tls N          TLS Secrets (default 500)
  --api-metadata   give every object the metadata a real API server adds (managedFields
                   mirroring the object, creationTimestamp, generation; EndpointSlices an
                   ownerReference), as listed from a real cluster
  --edits N        change-to-served edits per size (default 200)
  --no-live        only the in-process figures (compile, lookup, memory)
  --no-files       skip the start from a --manifests file
  --workers N      Portico's --workers in the live runs (default 1)
  --edit-gap MS    pause between one edit being served and the next (default 0: back to back)
  --profile DIR    write a CPU profile (markdown) of the live Portico process into DIR
  --out FILE       report path (default bench/results/control-plane.md; use another for partial runs)`;

const { values: flags } = parseArgs({
  options: {
    sizes: { type: "string", default: "1000,10000" },
    httproutes: { type: "boolean", default: false },
    tls: { type: "string", default: "500" },
    "api-metadata": { type: "boolean", default: false },
    edits: { type: "string", default: "200" },
    "no-live": { type: "boolean", default: false },
    "no-files": { type: "boolean", default: false },
    workers: { type: "string", default: "1" },
    "edit-gap": { type: "string", default: "0" },
    profile: { type: "string" },
    out: { type: "string" },
    help: { type: "boolean", default: false },
  },
});
if (flags.help) {
  console.log(HELP);
  process.exit(0);
}
const sizes = (flags.sizes ?? "").split(",").map(Number);
const tlsCount = Number(flags.tls);
const edits = Number(flags.edits);
const workers = Number(flags.workers);
const editGapMs = Number(flags["edit-gap"]);
if (
  sizes.some((n) => !Number.isInteger(n) || n < 1 || n > 100_000) || !Number.isInteger(tlsCount) || !Number.isInteger(edits) || edits < 0 || edits > 10_000 ||
  !Number.isInteger(workers) || workers < 1 || workers > 64 || !Number.isInteger(editGapMs) || editGapMs < 0 || editGapMs > 5000
) {
  console.error("--sizes, --tls, --edits, --workers and --edit-gap take integers (sizes 1..100000, workers 1..64, gap 0..5000 ms)");
  process.exit(2);
}
const ROOT = join(import.meta.dir, "..");
const out = flags.out ?? join(import.meta.dir, "results", "control-plane.md");
const log = (msg: string) => process.stderr.write(`[cp ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

const ms = (n: number) => (Number.isFinite(n) ? `${n.toFixed(n < 10 ? 1 : 0)} ms` : "–");

async function main(): Promise<void> {
  installCleanup();
  const tools = await ensureTools(log);
  const v = versions(tools);
  const started = new Date();
  const load = loadavg().map((x) => x.toFixed(2)).join(" ");
  // One certificate for all Secrets: every host is app-<i>.bench.test.
  const cert = createCertificate({ subjectCN: "*.bench.test", sans: ["*.bench.test"] });
  const dir = mkdtempSync(join(tmpdir(), "portico-cp-"));
  chmodSync(dir, 0o755);
  addCleanup(() => rmSync(dir, { recursive: true, force: true }));
  const offline: [number, OfflineResult][] = [];
  const live: [number, LiveResult | string][] = [];
  const files: [number, Awaited<ReturnType<typeof runManifestsStart>> | string][] = [];
  try {
    const backend = await startBackend(tools, join(dir, "backend"), null, 3);
    const addresses = [0, 1, 2].map((k) => `127.0.0.${backend.ports.manyFirstOctet + k}`);
    for (const n of sizes) {
      const cluster = generate({ ingresses: n, httpRoutes: flags.httproutes ? n : 0, tlsCount: Math.min(tlsCount, n), addresses, port: backend.ports.many, cert: { cert: cert.certPem, key: cert.keyPem }, apiMetadata: flags["api-metadata"] });
      log(`${n} Ingresses${flags.httproutes ? ` and ${n} HTTPRoutes` : ""}: ${cluster.objects.length} objects; compiling in-process`);
      await waitQuiet(10_000);
      const r = runOffline(cluster, 5, Math.min(tlsCount, n));
      offline.push([n, r]);
      log(`  compile ${r.compileMedianMs.toFixed(1)} ms (cold ${r.compileColdMs.toFixed(1)}, after one edit ${r.editMedianMs.toFixed(1)}${flags.httproutes ? `, after one HTTPRoute edit ${r.routeEditMedianMs.toFixed(1)}` : ""}), lookup ${r.lookupMixNs.toFixed(0)} ns`);
      if (flags["no-live"]) continue;
      if (!porticoAvailable(ROOT)) {
        live.push([n, "src/main.ts not present"]);
        continue;
      }
      if (!flags["no-files"]) try {
        const file = join(dir, `cluster-${n}.yaml`);
        writeFileSync(file, toYaml(cluster.objects.map((x) => x.object)));
        await waitQuiet(10_000);
        const f = await runManifestsStart(file, { root: ROOT, dir: join(dir, `files-${n}`), tools, edits, loadConnections: 8, loadDelayMs: 4, log });
        files.push([n, f]);
        log(`  from --manifests: ready ${f.readyMs.toFixed(0)} ms, rss ${f.rssMiB.toFixed(0)} MiB, peak ${f.peakRssMiB.toFixed(0)} MiB`);
      } catch (e) {
        files.push([n, (e instanceof Error ? e.message : String(e)).split("\n")[0] ?? "failed"]);
      }
      try {
        await waitQuiet(10_000);
        const res = await runLive(cluster, Math.min(tlsCount, n), {
          root: ROOT, dir: join(dir, `live-${n}`), tools, edits, loadConnections: 8, loadDelayMs: 4, log, workers, editGapMs,
          ...(flags.profile ? { profileDir: join(flags.profile, `live-${n}`) } : {}),
        });
        live.push([n, res]);
        log(`  ready ${res.readyMs.toFixed(0)} ms, rss ${res.rssMiB.toFixed(0)} MiB, change-to-served p50 ${res.p50Ms.toFixed(1)} p99 ${res.p99Ms.toFixed(1)} ms${flags.httproutes ? `; HTTPRoute edits p50 ${res.routeP50Ms.toFixed(1)} p99 ${res.routeP99Ms.toFixed(1)} ms` : ""}`);
      } catch (e) {
        live.push([n, (e instanceof Error ? e.message : String(e)).split("\n")[0] ?? "failed"]);
        log(`  live run failed: ${String(e)}`);
      }
    }
    await backend.stop();
  } finally {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  }

  const lines = [
    "# Portico control-plane benchmark",
    "",
    `- date: ${started.toISOString()}; command: \`bun bench/control-plane.ts ${process.argv.slice(2).join(" ")}\``.trimEnd(),
    `- machine: ${cpus().length} × ${cpus()[0]?.model ?? "?"}; load average at start: ${load} (shared machine: other work adds noise)`,
    `- versions: bun ${v.bun}, ${v.wrk}`,
    `- cluster: N Ingresses in 50 namespaces, each host \`app-<i>.bench.test\` with 3 paths (2 Prefix, 1 Exact), its own Service and EndpointSlice (3 ready endpoints); the first ${tlsCount} Ingresses have spec.tls with their own TLS Secret (one shared ECDSA certificate for \`*.bench.test\`)` +
      (flags["api-metadata"] ? "; every object carries the metadata a real API server adds (`--api-metadata`: managedFields mirroring the object, creationTimestamp, generation; EndpointSlices an ownerReference)" : "") +
      (flags.httproutes ? "; beside them N HTTPRoutes (`--httproutes`): HTTPRoute i on host `gw-<i>.bench.test` with the same 3 paths as rules to Service i, all attached to one Gateway with a hostless HTTP listener (allowedRoutes from All); after one HTTPRoute edit = the same long-lived Compiler, one HTTPRoute replaced (a new Exact rule), median (max) of 30" : ""),
    "- compile: `compile(snapshot)` (a full compile: a fresh Compiler) in-process after validating and storing every object; cold = first call, then the median of 5; after one edit = one long-lived Compiler, one plain Ingress replaced (a new Exact path) then compiled, median (max) of 30 edits; heap = growth of the JS heap (objects + one compiled result)",
    "- workers IPC: the whole table as sent on a worker's hello (`JSON.stringify(encodeTable)`; `JSON.parse` + `decodeTable` in the worker) and one edit's delta (`encodeDelta`; `applyDelta`), medians over the same 30 edits",
    "- lookup: `lookup(table, host, path)` over 200,000 pre-generated requests (80% hits, 10% unknown host, 10% unrouted path), best of 5 passes; hits-only measured separately",
    "",
    `| Ingresses | objects | routes | load+validate | compile (cold) | compile (median) | after one edit |${flags.httproutes ? " after one HTTPRoute edit |" : ""} lookup, mix | lookup, hits | heap growth |`,
    `|---:|---:|---:|---:|---:|---:|---:|${flags.httproutes ? "---:|" : ""}---:|---:|---:|`,
    ...offline.map(([n, r]) =>
      `| ${n} | ${r.objects} | ${r.routes} | ${ms(r.loadMs)} | ${ms(r.compileColdMs)} | ${ms(r.compileMedianMs)} | ${ms(r.editMedianMs)} (${ms(r.editMaxMs)}) |${flags.httproutes ? ` ${ms(r.routeEditMedianMs)} (${ms(r.routeEditMaxMs)}) |` : ""} ${r.lookupMixNs.toFixed(0)} ns | ${r.lookupHitNs.toFixed(0)} ns | ${r.heapMiB.toFixed(1)} MiB |`),
    "",
    "| Ingresses | whole table: bytes | encode | decode (per worker) | one edit's delta: bytes | encode | apply (per worker) |",
    "|---:|---:|---:|---:|---:|---:|---:|",
    ...offline.map(([n, r]) =>
      `| ${n} | ${(r.wireFullBytes / 1e6).toFixed(1)} MB | ${ms(r.wireFullEncodeMs)} | ${ms(r.wireFullDecodeMs)} | ${(r.wireDeltaBytes / 1e3).toFixed(1)} kB | ${ms(r.wireDeltaEncodeMs)} | ${ms(r.wireDeltaDecodeMs)} |`),
    "",
    `Live: \`bun src/main.ts --kubeconfig <generated> --workers ${workers}\` against test/fake-apiserver.ts (in the benchmark process, plain HTTP, bearer token). Start-to-ready = process spawn → first 200 on /readyz (polled every 5 ms). Fake API list floor = the benchmark itself paging once through every list (limit=500) before Portico starts: the fake serves from the benchmark's own thread, so start-to-ready cannot be shorter than roughly this. RSS = VmRSS 1 s after ready. ` +
      `Change-to-served: ${edits} sequential edits${editGapMs ? ` ${editGapMs} ms apart` : " back to back"}, each replaces one random Ingress (among those without TLS: plain HTTP to a TLS host is a 308) with a new Exact path \`/edit-<k>\` on the fake, then polls that path through the proxy (1 ms apart) until it answers 200; meanwhile wrk sends to another route with 8 connections paced by a 4 ms Lua delay() (edits stop early if that load ends first; see the edits column).`,
    "",
    `| Ingresses | start to ready | fake API list floor | Portico CPU to ready | API requests to ready | RSS after ready | peak RSS | edits (failed) | change-to-served p50 | p99 | max |${flags.httproutes ? " HTTPRoute edits | p50 | p99 | max | ready → route statuses written |" : ""} background load |`,
    `|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|${flags.httproutes ? "---:|---:|---:|---:|---:|" : ""}---:|`,
    ...live.map(([n, r]) =>
      typeof r === "string"
        ? `| ${n} | not run: ${r} ||||||||||${flags.httproutes ? "|||||" : ""}`
        : `| ${n} | ${ms(r.readyMs)} | ${ms(r.listFloorMs)} | ${r.readyCpuS.toFixed(2)} s | ${r.readyRequests} | ${r.rssMiB.toFixed(0)} MiB | ${r.peakRssMiB.toFixed(0)} MiB | ${r.edits} (${r.editFailures}) | ${ms(r.p50Ms)} | ${ms(r.p99Ms)} | ${ms(r.maxMs)} |${flags.httproutes ? ` ${r.routeEdits} | ${ms(r.routeP50Ms)} | ${ms(r.routeP99Ms)} | ${ms(r.routeMaxMs)} | ${ms(r.statusMs)} |` : ""} ${r.loadRps.toFixed(0)} req/s, p99 ${ms(r.loadP99Ms)}, ${r.loadErrors} errors |`),
    "",
    "The same cluster from one `--manifests` file (no API server: Portico's own start cost):",
    "",
    "| Ingresses | start to ready | Portico CPU to ready | RSS after ready | peak RSS |",
    "|---:|---:|---:|---:|---:|",
    ...files.map(([n, r]) =>
      typeof r === "string"
        ? `| ${n} | not run: ${r} ||||`
        : `| ${n} | ${ms(r.readyMs)} | ${r.cpuS.toFixed(2)} s | ${r.rssMiB.toFixed(0)} MiB | ${r.peakRssMiB.toFixed(0)} MiB |`),
    "",
  ];
  const md = lines.join("\n");
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, md);
  console.log(md);
}

await runMain(main);
