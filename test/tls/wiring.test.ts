// The shapes main.ts joins: compile's CertificateBinding[] in, proxy/'s serveOptions() as the
// listener's handler. Type-level checks plus one request through the pass-through options.
import { expect, test } from "bun:test";
import type { CompileResult } from "../../src/compile/types.ts";
import type { ProxyHandler } from "../../src/proxy/handler.ts";
import { serveOptions } from "../../src/proxy/listener.ts";
import { buildTlsEntries, createPemChecker, createTlsListener, generateDefaultCertificate, type ServeHandler } from "../../src/tls/index.ts";
import { createCertificate } from "../../src/tls/x509.ts";
import { quietLog, RawClient } from "./helpers.ts";

// proxy/'s Bun options are a valid listener handler (compile-time check).
const _fits: (h: ProxyHandler) => ServeHandler = (h) => serveOptions(h);
void _fits;

test("compile bindings → entries → listener; pass-through Bun options reach every server", async () => {
  const pem = createCertificate({ subjectCN: "wired", sans: ["wired.test"] });
  const certificates: CompileResult["certificates"] = [{ host: "wired.test", secret: "ns/w", cert: pem.certPem, key: pem.keyPem, version: "u/1", ingress: "ns/ing" }];
  const built = buildTlsEntries(certificates, generateDefaultCertificate(), { minVersion: "1.2", ciphers: "ECDHE-ECDSA-AES128-GCM-SHA256" }, { checker: createPemChecker() });
  const handler = (): ServeHandler => ({ fetch: async (req) => new Response(String((await req.text()).length)), maxRequestBodySize: 10 });
  const listener = createTlsListener({ hostname: "127.0.0.1", port: 0, handler, log: quietLog });
  try {
    listener.update(built.entries, built.fingerprint);
    expect(listener.servers.length).toBe(1);
    const ok = await fetch(`https://127.0.0.1:${listener.port}/`, { method: "POST", body: "12345", tls: { rejectUnauthorized: false, serverName: "wired.test" } });
    expect(await ok.text()).toBe("5");
    const big = await fetch(`https://127.0.0.1:${listener.port}/`, { method: "POST", body: "x".repeat(100), tls: { rejectUnauthorized: false, serverName: "wired.test" } });
    expect(big.status).toBe(413); // maxRequestBodySize was passed through to Bun.serve
    const c = new RawClient(listener.port, "wired.test");
    await c.request("/");
    expect(c.peer).toBe("wired");
    c.close();
    listener.freeze();
    listener.update(buildTlsEntries([], generateDefaultCertificate(), { minVersion: "1.2", ciphers: "ECDHE-ECDSA-AES128-GCM-SHA256" }, { checker: createPemChecker() }).entries, "other");
    await listener.settled();
    expect(listener.rotations).toBe(0); // frozen: shutdown started, no new listener
  } finally {
    await listener.stop(true);
  }
});
