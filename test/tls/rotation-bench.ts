// Rotation cost with 1, 100 and 5,000 certificates.
//   bun test/tls/rotation-bench.ts [sizes...]      (or PORTICO_TLS_BENCH=1 bun test test/tls)
// Measures: PEM checks cold (first sight of every Secret) and warm (LRU hits), the time
// Bun.serve takes to build the SNI contexts and listen (it blocks the event loop), and the
// whole rotation from update() to the new server listening, minus the holdoff.
import type { CertificateBinding } from "../../src/compile/types.ts";
import { generateDefaultCertificate } from "../../src/tls/default-cert.ts";
import { createTlsListener, type RotationInfo } from "../../src/tls/listener.ts";
import { createPemChecker } from "../../src/tls/pem.ts";
import { buildTlsEntries } from "../../src/tls/sni.ts";
import { createCertificate } from "./pki.ts";
import { markerHandler, peerCertificate, quietLog } from "./helpers.ts";
import { eventually } from "../wait.ts";

export interface BenchRow {
  readonly certificates: number;
  readonly mintMs: number;
  readonly buildColdMs: number;
  readonly buildWarmMs: number;
  readonly firstServeMs: number;
  readonly rotationServeMs: number;
  readonly rotationTotalMs: number;
  readonly rssDeltaMiB: number;
}

const settings = { minVersion: "1.2", ciphers: "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256" } as const;

export async function benchRotation(n: number): Promise<BenchRow> {
  const t0 = performance.now();
  const bindings: CertificateBinding[] = [];
  for (let i = 0; i < n; i++) {
    const host = `h${i}.bench.test`;
    const m = createCertificate({ subjectCN: host, sans: [host] }); // a fresh P-256 key each
    bindings.push({ host, secret: `bench/s${i}`, cert: m.certPem, key: m.keyPem, version: `uid${i}/1`, ingress: "bench/web" });
  }
  const mintMs = performance.now() - t0;
  const generated = generateDefaultCertificate();
  const checker = createPemChecker(Math.max(10_000, 2 * n));

  let t = performance.now();
  const cold = buildTlsEntries(bindings, generated, settings, { checker });
  const buildColdMs = performance.now() - t;
  if (cold.diagnostics.length > 0 || cold.entries.length !== n + 1) throw new Error("bench certificates did not all check");

  const holdoffMs = 10;
  let last: RotationInfo | null = null;
  const rss0 = process.memoryUsage().rss;
  const listener = createTlsListener({ hostname: "127.0.0.1", port: 0, handler: markerHandler(() => "b"), log: quietLog, drainMs: 50, holdoffMs, hooks: { onRotation: (i) => void (last = i) } });
  try {
    t = performance.now();
    listener.update(cold.entries, cold.fingerprint);
    const firstServeMs = performance.now() - t;

    // One Secret updated: every other check is a cache hit.
    const changed = createCertificate({ subjectCN: "changed", sans: ["h0.bench.test"] });
    const next = bindings.map((b, i) => (i === 0 ? { ...b, cert: changed.certPem, key: changed.keyPem, version: "uid0/2" } : b));
    t = performance.now();
    const warm = buildTlsEntries(next, generated, settings, { checker });
    const buildWarmMs = performance.now() - t;
    const t1 = performance.now();
    listener.update(warm.entries, warm.fingerprint);
    await eventually(() => listener.rotations >= 1, 10_000, "the rotation", 1); // a 1 ms step: the figure is the time to it
    const rotationTotalMs = buildWarmMs + (performance.now() - t1) - holdoffMs;
    const rotationServeMs = (last as RotationInfo | null)?.serveMs ?? Number.NaN;
    await listener.settled();
    const rssDeltaMiB = (process.memoryUsage().rss - rss0) / 1048576;

    // The rotated set really is served.
    if ((await peerCertificate(listener.port, "h0.bench.test")).cn !== "changed") throw new Error("rotated certificate not served");
    const probe = `h${n - 1}.bench.test`;
    if (n > 1 && (await peerCertificate(listener.port, probe)).cn !== probe) throw new Error("last certificate not served");
    return { certificates: n, mintMs, buildColdMs, buildWarmMs, firstServeMs, rotationServeMs, rotationTotalMs, rssDeltaMiB };
  } finally {
    await listener.stop(true);
  }
}

export function formatRow(r: BenchRow): string {
  const f = (x: number): string => x.toFixed(1).padStart(8);
  return `${String(r.certificates).padStart(6)} certs | mint ${f(r.mintMs)} ms | check cold ${f(r.buildColdMs)} ms | check warm ${f(r.buildWarmMs)} ms | first Bun.serve ${f(r.firstServeMs)} ms | rotation Bun.serve ${f(r.rotationServeMs)} ms | rotation total ${f(r.rotationTotalMs)} ms | rss +${r.rssDeltaMiB.toFixed(0)} MiB`;
}

if (import.meta.main) {
  const sizes = process.argv.slice(2).map(Number).filter((x) => x > 0);
  for (const n of sizes.length ? sizes : [1, 100, 5000]) {
    // eslint-disable-next-line no-console -- a script's output
    console.log(formatRow(await benchRotation(n)));
  }
}
