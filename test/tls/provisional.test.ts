// The stand-in certificate set served before the first route table (--workers 1 binds the HTTPS
// port at start-up with the default certificate only). The first real set must replace it at
// once: no holdoff, and no drain, because a draining server still accepts new connections and
// would hand some of them the stand-in certificate after /readyz already said ready.
import { afterAll, expect, test } from "bun:test";
import { DEFAULT_CERT_CN, generateDefaultCertificate } from "../../src/tls/default-cert.ts";
import { createTlsListener, type ServeHandler, type TlsListener, type TlsListenerOptions } from "../../src/tls/listener.ts";
import { createPemChecker } from "../../src/tls/pem.ts";
import { buildTlsEntries } from "../../src/tls/sni.ts";
import { createCertificate, generateKeyPair } from "./pki.ts";
import { binding, listeningSockets, peerCertificate, quietLog } from "./helpers.ts";

const HOST = "first.test";
const settings = { minVersion: "1.2", ciphers: "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256" } as const;
const generated = generateDefaultCertificate();
const checker = createPemChecker();
const handler = (): ServeHandler => ({ fetch: () => new Response("ok") });
const listeners: TlsListener[] = [];
afterAll(async () => {
  for (const l of listeners) await l.stop(true);
});

// Holdoff and drain far longer than the bound below: only the stand-in rule can meet it.
function make(hooks: TlsListenerOptions["hooks"] = {}): TlsListener {
  const l = createTlsListener({ hostname: "127.0.0.1", port: 0, handler, log: quietLog, drainMs: HOLD_MS, holdoffMs: HOLD_MS, hooks });
  listeners.push(l);
  const standIn = buildTlsEntries([], generated, settings, { checker });
  l.update(standIn.entries, standIn.fingerprint, true);
  return l;
}

// Holdoff and drain far past any test's timeout: a settled() that resolves did not wait for
// either (stop(true) in afterAll clears both timers).
const HOLD_MS = 600_000;

test("the first real certificate set replaces the stand-in at once, and no new connection sees the stand-in after", async () => {
  const l = make();
  expect(l.provisional).toBe(true);
  expect((await peerCertificate(l.port, HOST)).cn).toBe(DEFAULT_CERT_CN);

  const pem = createCertificate({ subjectCN: "first-real", sans: [HOST], keyPair: generateKeyPair("ecdsa") });
  const built = buildTlsEntries([binding(HOST, "ns/first", pem, "uid/1")], generated, settings, { checker });
  l.update(built.entries, built.fingerprint);
  expect(l.provisional).toBe(true); // until the new server listens

  await l.settled(); // not the holdoff, nor the drain
  expect(l.provisional).toBe(false);
  expect(l.rotations).toBe(1);
  expect(l.alive).toBe(1); // the stand-in server is gone, not draining
  // Every new connection now gets the real certificate (a draining stand-in would take some).
  for (let i = 0; i < 20; i++) expect((await peerCertificate(l.port, HOST)).cn).toBe("first-real");
});

test("a first table without certificates keeps the stand-in (the same set) and ends the provisional state", async () => {
  const l = make();
  const same = buildTlsEntries([], generated, settings, { checker });
  l.update(same.entries, same.fingerprint);
  expect(l.provisional).toBe(false);
  expect(l.rotations).toBe(0);
  expect((await peerCertificate(l.port, HOST)).cn).toBe(DEFAULT_CERT_CN);
});

test("a real set that is replaced by the stand-in's own set before it rotates ends the provisional state", async () => {
  const l = make();
  const pem = createCertificate({ subjectCN: "brief", sans: [HOST], keyPair: generateKeyPair("ecdsa") });
  const brief = buildTlsEntries([binding(HOST, "ns/brief", pem, "uid/b")], generated, settings, { checker });
  l.update(brief.entries, brief.fingerprint); // a rotation is now pending
  const back = buildTlsEntries([], generated, settings, { checker });
  l.update(back.entries, back.fingerprint); // the latest wins: the stand-in's own set
  await l.settled();
  expect(l.rotations).toBe(0);
  expect(l.provisional).toBe(false); // or /readyz would wait for a rotation that never comes
  expect((await peerCertificate(l.port, HOST)).cn).toBe(DEFAULT_CERT_CN);
});

test("after the first rotation, later updates wait for the holdoff again", async () => {
  const l = make();
  const key = generateKeyPair("ecdsa");
  const first = buildTlsEntries([binding(HOST, "ns/a", createCertificate({ subjectCN: "a", sans: [HOST], keyPair: key }), "uid/a")], generated, settings, { checker });
  l.update(first.entries, first.fingerprint);
  await l.settled();
  const second = buildTlsEntries([binding(HOST, "ns/a", createCertificate({ subjectCN: "b", sans: [HOST], keyPair: key }), "uid/b")], generated, settings, { checker });
  l.update(second.entries, second.fingerprint);
  let settled = false;
  void l.settled().then(() => (settled = true));
  expect((await peerCertificate(l.port, HOST)).cn).toBe("a");
  expect(settled).toBe(false); // held by the holdoff
});

// The turn that ends the provisional state (and so lets /readyz say ready) must also take the
// stand-in out of the port's SO_REUSEPORT group: while it listens the kernel queues some new
// connections on it, and those are reset when it closes (docs/design.md, "Bun facts measured
// here"). Read from the kernel's socket table in that very turn, from the rotation hook.
test("when the stand-in is replaced, it no longer listens in the same turn that ends the provisional state", async () => {
  const seen: Array<{ provisional: boolean; listening: number }> = [];
  const l = make({ onRotation: () => void seen.push({ provisional: l.provisional, listening: listeningSockets(l.port) }) });
  expect(listeningSockets(l.port)).toBe(1);
  const pem = createCertificate({ subjectCN: "kept", sans: [HOST], keyPair: generateKeyPair("ecdsa") });
  const built = buildTlsEntries([binding(HOST, "ns/kept", pem, "uid/k")], generated, settings, { checker });
  l.update(built.entries, built.fingerprint);
  await l.settled();
  expect(seen).toEqual([{ provisional: false, listening: 1 }]);
  expect((await peerCertificate(l.port, HOST)).cn).toBe("kept");
});
