// Stale listeners must never accumulate: 200 rotations, then the same number of
// file descriptors (small slack) and exactly one live server.
import { expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { generateDefaultCertificate } from "../../src/tls/default-cert.ts";
import { createTlsListener } from "../../src/tls/listener.ts";
import { createPemChecker } from "../../src/tls/pem.ts";
import { buildTlsEntries } from "../../src/tls/sni.ts";
import { createCertificate } from "./pki.ts";
import { binding, markerHandler, peerCertificate, quietLog, RawClient } from "./helpers.ts";
import { eventually } from "../wait.ts";

const fdCount = (): number => readdirSync("/proc/self/fd").length;

test.skipIf(!process.platform.startsWith("linux"))("200 rotations: no listener or file-descriptor growth", async () => {
  const settings = { minVersion: "1.2", ciphers: "ECDHE-ECDSA-AES128-GCM-SHA256" } as const;
  const checker = createPemChecker();
  const generated = generateDefaultCertificate();
  const a = createCertificate({ subjectCN: "grow-a", sans: ["grow.test"] });
  const b = createCertificate({ subjectCN: "grow-b", sans: ["grow.test"] });
  const sets = [a, b].map((pem, i) => buildTlsEntries([binding("grow.test", "ns/grow", pem, `v${i}`)], generated, settings, { checker }));
  let n = 0;
  let maxAlive = 0;
  const listener = createTlsListener({
    hostname: "127.0.0.1",
    port: 0,
    handler: markerHandler(() => `s${++n}`),
    log: quietLog,
    drainMs: 2,
    holdoffMs: 0,
    hooks: { onRotation: () => void (maxAlive = Math.max(maxAlive, listener.alive)) },
  });
  try {
    listener.update(sets[0]!.entries, sets[0]!.fingerprint);
    // Warm up (lazy allocations in the TLS stack and the client) before the baseline.
    for (let i = 1; i <= 4; i++) {
      listener.update(sets[i % 2]!.entries, sets[i % 2]!.fingerprint);
      await listener.settled();
      await peerCertificate(listener.port, "grow.test");
    }
    Bun.gc(true);
    const before = fdCount();
    const start = listener.rotations;
    maxAlive = 0;
    for (let i = 1; i <= 200; i++) {
      const set = sets[i % 2]!;
      listener.update(set.entries, set.fingerprint);
      await listener.settled();
      if (i % 20 === 0) {
        // A request now and then, so servers carry connections when they are retired.
        const c = new RawClient(listener.port, "grow.test");
        expect((await c.request("/")).status).toBe(200);
        c.close();
      }
    }
    // Retired servers' descriptors are closed once their stops have run (collected on the way).
    await eventually(() => (Bun.gc(true), fdCount() - before <= 5), 5_000, "descriptors released");
    const after = fdCount();
    console.log(`no-growth: ${listener.rotations - start} rotations, fds ${before} -> ${after}, max alive ${maxAlive}`);
    expect(listener.rotations - start).toBe(200);
    expect(maxAlive).toBe(2); // the old one drains beside the new one, never a third
    expect(listener.alive).toBe(1);
    expect(after - before).toBeLessThanOrEqual(5);
    expect((await peerCertificate(listener.port, "grow.test")).cn).toBe("grow-a"); // 200 is even: set 0
  } finally {
    await listener.stop(true);
  }
}, 30_000);
