// The HTTPS port's stand-in (the default certificate bound at start, before the first table)
// when the first table also hands the port to the node:http2 listener (a gRPC or
// client-certificate route, serving/https.ts): the stand-in is closed, not drained, in the turn
// the next listener takes over, so no client that /readyz let in is queued on it and reset
// when it closes (docs/design.md, "Bun facts measured here"). The kernel's own socket table
// says how many servers listen on the port.
import { afterAll, expect, test } from "bun:test";
import type { serveOptions } from "../../src/proxy/pipeline/listener.ts";
import { createHttpsListener, type SwitchingHttpsListener } from "../../src/serving/https.ts";
import { DEFAULT_CERT_CN, generateDefaultCertificate } from "../../src/tls/default-cert.ts";
import { createPemChecker } from "../../src/tls/pem.ts";
import { buildTlsEntries } from "../../src/tls/sni.ts";
import { binding, listeningSockets, peerCertificate, quietLog } from "../tls/helpers.ts";
import { createCertificate, generateKeyPair } from "../tls/pki.ts";

const HOST = "grpc.test";
const settings = { minVersion: "1.2", ciphers: "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256" } as const;
const generated = generateDefaultCertificate();
const checker = createPemChecker();
const listeners: SwitchingHttpsListener[] = [];
afterAll(async () => {
  for (const l of listeners) await l.stop(true);
});

test("a first table that hands the port to node:http2 closes the stand-in at once: one listening socket when it stops being provisional", async () => {
  // A drain far past the test's timeout: only closing the stand-in (not draining it) passes.
  const handler = (() => ({ fetch: () => new Response("ok") })) as unknown as () => ReturnType<typeof serveOptions>;
  const l = createHttpsListener({ config: { http2: true, http3: false, clientHeaderTimeoutMs: 60_000 }, log: quietLog, hostname: "127.0.0.1", port: 0, handler, draining: () => false, drainMs: 600_000 });
  listeners.push(l);
  const standIn = buildTlsEntries([], generated, settings, { checker });
  l.update(standIn.entries, standIn.fingerprint, true);
  expect(l.provisional).toBe(true);
  const port = l.port;
  expect(listeningSockets(port)).toBe(1);

  // What the single process does with its first table (runtime/local.ts apply): the
  // certificates, then the listener the table needs.
  const pem = createCertificate({ subjectCN: "first-real", sans: [HOST], keyPair: generateKeyPair("ecdsa") });
  const built = buildTlsEntries([binding(HOST, "ns/grpc", pem, "uid/g")], generated, settings, { checker });
  l.update(built.entries, built.fingerprint);
  l.useListener("node");
  expect(l.kind).toBe("node");
  expect(l.provisional).toBe(false);
  expect(listeningSockets(port)).toBe(1);
  for (let i = 0; i < 10; i++) expect((await peerCertificate(port, HOST)).cn).toBe("first-real");
});

test("a first table with no certificates of its own (the stand-in's own set) that hands the port over also closes the stand-in at once", async () => {
  const handler = (() => ({ fetch: () => new Response("ok") })) as unknown as () => ReturnType<typeof serveOptions>;
  const l = createHttpsListener({ config: { http2: true, http3: false, clientHeaderTimeoutMs: 60_000 }, log: quietLog, hostname: "127.0.0.1", port: 0, handler, draining: () => false, drainMs: 600_000 });
  listeners.push(l);
  const standIn = buildTlsEntries([], generated, settings, { checker });
  l.update(standIn.entries, standIn.fingerprint, true);
  const port = l.port;
  const same = buildTlsEntries([], generated, settings, { checker });
  l.update(same.entries, same.fingerprint);
  l.useListener("node");
  expect(l.provisional).toBe(false);
  expect(listeningSockets(port)).toBe(1);
  expect((await peerCertificate(port, HOST)).cn).toBe(DEFAULT_CERT_CN);

  // In a later turn a hand-over away from Bun.serve drains it as before (still listening for
  // the drain): it may hold clients /readyz let in.
  l.useListener("bun");
  await l.settled(); // the node:http2 listener closed (it stops accepting at once)
  expect(listeningSockets(port)).toBe(1);
  l.useListener("node");
  expect(listeningSockets(port)).toBe(2);
});
