// Certificate rotation under load: a Secret is added, updated 10+ times and
// deleted while a strict keep-alive client, a Bun fetch client and a new-connection client
// run. Keep-alive clients must see zero failures; new-connection failures are reported.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { generateDefaultCertificate, DEFAULT_CERT_CN } from "../../src/tls/default-cert.ts";
import { createTlsListener, type TlsListener } from "../../src/tls/listener.ts";
import { createPemChecker } from "../../src/tls/pem.ts";
import { buildTlsEntries } from "../../src/tls/sni.ts";
import { createCertificate, generateKeyPair } from "./pki.ts";
import { binding, peerCertificate, quietLog, RawClient } from "./helpers.ts";
import type { ServeHandler } from "../../src/tls/listener.ts";
import { eventually } from "../wait.ts";

const HOST = "rot.test";
const settings = { minVersion: "1.2", ciphers: "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256" } as const;
const generated = generateDefaultCertificate();
const checker = createPemChecker();
const key = generateKeyPair("ecdsa");
let listener: TlsListener;
let generation = 0;
let slowStarted = 0;

function handler(): ServeHandler {
  const tag = `server-${++generation}`;
  return {
    async fetch(req, server) {
      const url = new URL(req.url);
      // A slow backend on purpose: the request must outlive the drain.
      if (url.pathname === "/slow") (slowStarted++, await Bun.sleep(400));
      if (url.pathname === "/ws" && server.upgrade(req)) return undefined;
      return new Response(tag);
    },
    websocket: { message(ws, m) { ws.send(m); } },
  };
}

beforeAll(() => {
  listener = createTlsListener({ hostname: "127.0.0.1", port: 0, handler, log: quietLog, drainMs: 300, holdoffMs: 20 }); // 300 ms: a client starved of CPU under a full suite must still get its Connection: close answer
  const built = buildTlsEntries([], generated, settings, { checker });
  listener.update(built.entries, built.fingerprint);
});
afterAll(() => listener.stop(true));

function apply(pem: { certPem: string; keyPem: string } | null, version: number): void {
  const bindings = pem ? [binding(HOST, "ns/rot", pem, `uid-rot/${version}`)] : [];
  const built = buildTlsEntries(bindings, generated, settings, { checker });
  expect(built.diagnostics).toEqual([]);
  listener.update(built.entries, built.fingerprint);
}

/** A new connection is served the certificate `cn` (its TLS handshake shows it). */
function waitForCn(cn: string): Promise<void> {
  return eventually(async () => (await peerCertificate(listener.port, HOST).then((p) => p.cn, () => "")) === cn, 5_000, `certificate ${cn} served`);
}

test("Secret added, updated 12 times, deleted: each new certificate served, keep-alive clients never fail", async () => {
  const stats = { raw: { ok: 0, fail: 0 }, fetch: { ok: 0, fail: 0 }, fresh: { ok: 0, fail: 0 }, maxAlive: 0, servers: new Set<string>() };
  let running = true;
  const raw = new RawClient(listener.port, HOST);
  const loops = [
    (async () => {
      while (running) {
        try {
          const r = await raw.request("/");
          if (r.status === 200) (stats.raw.ok++, stats.servers.add(r.body));
          else stats.raw.fail++;
        } catch {
          stats.raw.fail++;
        }
        stats.maxAlive = Math.max(stats.maxAlive, listener.alive);
      }
    })(),
    (async () => {
      while (running) {
        try {
          const r = await fetch(`https://127.0.0.1:${listener.port}/`, { headers: { host: HOST }, tls: { rejectUnauthorized: false, serverName: HOST } });
          await r.text();
          r.ok ? stats.fetch.ok++ : stats.fetch.fail++;
        } catch {
          stats.fetch.fail++;
        }
      }
    })(),
    (async () => {
      while (running) {
        const c = new RawClient(listener.port, HOST);
        try {
          (await c.request("/", { Connection: "close" })).status === 200 ? stats.fresh.ok++ : stats.fresh.fail++;
        } catch {
          stats.fresh.fail++;
        } finally {
          c.close();
        }
        await Bun.sleep(2); // pacing of the new-connection client (part of the load), not a wait
      }
    })(),
  ];

  await waitForCn(DEFAULT_CERT_CN);
  const before = listener.rotations;
  for (let v = 1; v <= 13; v++) {
    const cn = `rot-${v}`;
    apply(createCertificate({ subjectCN: cn, sans: [HOST], keyPair: key }), v); // v=1 adds the Secret
    await waitForCn(cn);
    await listener.settled();
  }
  apply(null, 14); // Secret deleted: the default certificate again
  await waitForCn(DEFAULT_CERT_CN);
  await listener.settled();
  running = false;
  await Promise.all(loops);
  raw.close();

  const rotations = listener.rotations - before;
  console.log(
    `rotation: ${rotations} rotations; ` +
      `keep-alive raw ${stats.raw.ok} ok/${stats.raw.fail} failed (${raw.connects} connections), keep-alive fetch ${stats.fetch.ok} ok/${stats.fetch.fail} failed, ` +
      `new-connection ${stats.fresh.ok} ok/${stats.fresh.fail} failed; max alive ${stats.maxAlive}`,
  );
  expect(rotations).toBe(14);
  expect(stats.raw.fail).toBe(0);
  expect(stats.fetch.fail).toBe(0);
  expect(stats.raw.ok).toBeGreaterThan(100);
  expect(stats.fresh.ok).toBeGreaterThan(20);
  // The keep-alive client was moved from server to server by Connection: close.
  expect(raw.connects).toBeGreaterThanOrEqual(rotations);
  expect(stats.servers.size).toBeGreaterThanOrEqual(rotations);
  expect(stats.maxAlive).toBeLessThanOrEqual(2);
  expect(listener.alive).toBe(1);
}, 30_000);

test("a burst of updates is one rotation with the latest certificate; an unchanged set is none", async () => {
  const before = listener.rotations;
  let last = createCertificate({ subjectCN: "burst-100", sans: [HOST], keyPair: key });
  for (let v = 100; v < 120; v++) apply((last = createCertificate({ subjectCN: `burst-${v}`, sans: [HOST], keyPair: key })), v);
  await listener.settled();
  expect(listener.rotations - before).toBe(1);
  expect((await peerCertificate(listener.port, HOST)).cn).toBe("burst-119");
  // The Secret written again with the same tls.crt and tls.key (a label, an annotation: a new
  // resourceVersion): the same set by content, so the listener is not restarted.
  for (let v = 120; v < 125; v++) apply(last, v);
  await listener.settled();
  expect(listener.rotations - before).toBe(1);
});

test("during a drain: an in-flight request completes, the old server marks responses Connection: close, upgrades are untouched", async () => {
  // Three connections pinned to the current server before the rotation.
  const pinned = new RawClient(listener.port, HOST);
  const upgrading = new RawClient(listener.port, HOST);
  const slow = new RawClient(listener.port, HOST);
  const first = await pinned.request("/");
  expect((await upgrading.request("/")).body).toBe(first.body);
  expect((await slow.request("/")).body).toBe(first.body);
  expect(first.headers.connection).toBeUndefined();
  const slowBefore = slowStarted;
  const slowDone = slow.request("/slow"); // 400 ms, longer than the 300 ms drain
  await eventually(() => slowStarted > slowBefore, 5_000, "the slow request in flight");
  apply(createCertificate({ subjectCN: "drain", sans: [HOST], keyPair: key }), 200);
  await eventually(() => listener.alive === 2, 5_000, "the rotation (old server draining next to the new one)");
  const marked = await pinned.request("/");
  expect(marked.body).toBe(first.body); // still the old server...
  expect(marked.headers.connection).toBe("close"); // ...asking the client to move on
  const upgrade = await upgrading.request("/ws", { Upgrade: "websocket", Connection: "Upgrade", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version": "13" });
  expect(upgrade.status).toBe(101);
  expect(upgrade.headers.connection?.toLowerCase()).toBe("upgrade");
  upgrading.close();
  const slowRes = await slowDone;
  expect(slowRes.status).toBe(200);
  expect(slowRes.body).toBe(first.body);
  slow.close();
  pinned.close();
  await listener.settled();
  expect(listener.alive).toBe(1);
  const after = new RawClient(listener.port, HOST);
  expect((await after.request("/")).body).not.toBe(first.body);
  expect(after.peer).toBe("drain");
  after.close();
});
