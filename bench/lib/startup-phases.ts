// Where Portico's start goes, phase by phase, in one process: the generated 10k cluster as a
// --manifests file → ManifestSource into a Store → compile → TLS entries. Prints wall time,
// CPU time, RSS, JS heap and peak RSS (VmHWM) after each phase.
//
//   bun bench/lib/startup-phases.ts [--n 10000] [--tls 500] [--gc]
//
// --gc runs a full GC before each reading (heap figures then show what is kept, not garbage).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { heapStats } from "bun:jsc";
import { compile } from "../../src/compile/compile.ts";
import { parseArgs as parseFlags } from "../../src/config/parse.ts";
import { ManifestSource } from "../../src/files/manifests.ts";
import { createLogger } from "../../src/log/logger.ts";
import { KINDS } from "../../src/model/kinds.ts";
import { Store } from "../../src/store/store.ts";
import { generateDefaultCertificate } from "../../src/tls/default-cert.ts";
import { createPemChecker } from "../../src/tls/pem.ts";
import { buildTlsEntries } from "../../src/tls/sni.ts";
import { createCertificate } from "../../test/tls/pki.ts";
import { toYaml } from "./cluster.ts";
import { generate } from "./cp-gen.ts";

const { values: f } = parseArgs({ options: { n: { type: "string", default: "10000" }, tls: { type: "string", default: "500" }, gc: { type: "boolean", default: false }, file: { type: "string" } } });
const N = Number(f.n);

function status(field: string): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(readFileSync("/proc/self/status", "utf8"));
  return m ? Number(m[1]) / 1024 : 0;
}

const dir = mkdtempSync(join(tmpdir(), "portico-phases-"));
try {
  let file = f.file;
  if (!file) {
    const cert = createCertificate({ subjectCN: "*.bench.test", sans: ["*.bench.test"] });
    const cluster = generate({ ingresses: N, tlsCount: Math.min(N, Number(f.tls)), addresses: ["127.0.0.2", "127.0.0.3", "127.0.0.4"], port: 9, cert: { cert: cert.certPem, key: cert.keyPem } });
    file = join(dir, "cluster.yaml");
    writeFileSync(file, toYaml(cluster.objects.map((x) => x.object)));
  }
  Bun.gc(true);
  // The generator's garbage is gone: the figures below start from here.
  let t = performance.now();
  let cpu = process.cpuUsage();
  const base = { rss: status("VmRSS"), hwm: status("VmHWM") };
  console.log(`file ${(Bun.file(file).size / 1048576).toFixed(1)} MiB; before: RSS ${base.rss.toFixed(0)} MiB, peak so far ${base.hwm.toFixed(0)} MiB (the generator's)`);
  const mark = (phase: string) => {
    if (f.gc) Bun.gc(true);
    const now = performance.now();
    const c = process.cpuUsage(cpu);
    console.log(
      `${phase.padEnd(22)} ${(now - t).toFixed(0).padStart(5)} ms wall ${((c.user + c.system) / 1000).toFixed(0).padStart(5)} ms CPU | RSS ${status("VmRSS").toFixed(0).padStart(4)} MiB heap ${(heapStats().heapSize / 1048576).toFixed(0).padStart(4)} MiB peak ${status("VmHWM").toFixed(0).padStart(4)} MiB`,
    );
    t = performance.now();
    cpu = process.cpuUsage();
  };

  const log = createLogger({ level: "error", format: "json", write: () => {} });
  const parsed = parseFlags(["--manifests", file], {});
  if (parsed.type !== "run") throw new Error("config");
  const config = parsed;
  const store = new Store();
  const src = new ManifestSource({ path: file, log });
  await src.start(store);
  mark("load (read+parse+store)");
  const snap = store.snapshot();
  const result = compile(snap, config.config);
  mark("compile (cold)");
  const entries = buildTlsEntries(result.certificates, generateDefaultCertificate(log), { minVersion: config.config.tlsMinVersion, ciphers: config.config.tlsCiphers }, { checker: createPemChecker() });
  mark("tls entries");
  console.log(`objects ${KINDS.map((k) => `${k} ${store.count(k)}`).join(", ")}; routes ${result.table.routeCount}; certificates ${result.certificates.length}; tls entries ${entries.entries.length}`);
  await src.stop();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
