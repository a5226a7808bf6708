// What the TLS listener does with the handler's options and with freeze(): the Bun options the
// proxy passes (maxRequestBodySize here) reach every server it starts, and once frozen (a
// shutdown began) no update starts a new server.
import { expect, test } from "bun:test";
import { generateDefaultCertificate } from "../../src/tls/default-cert.ts";
import { createTlsListener, type ServeHandler } from "../../src/tls/listener.ts";
import { createPemChecker } from "../../src/tls/pem.ts";
import { buildTlsEntries } from "../../src/tls/sni.ts";
import { createCertificate } from "./pki.ts";
import { binding, quietLog } from "./helpers.ts";

const settings = { minVersion: "1.2", ciphers: "ECDHE-ECDSA-AES128-GCM-SHA256" } as const;
const checker = createPemChecker();
const generated = generateDefaultCertificate();
const tls = { rejectUnauthorized: false, serverName: "opts.test" };

test("a handler's Bun options reach the server; a frozen listener starts no new server", async () => {
  const pem = createCertificate({ subjectCN: "opts", sans: ["opts.test"] });
  const first = buildTlsEntries([binding("opts.test", "ns/opts", pem)], generated, settings, { checker });
  const handler = (): ServeHandler => ({ fetch: async (req) => new Response(String((await req.text()).length)), maxRequestBodySize: 10 });
  const listener = createTlsListener({ hostname: "127.0.0.1", port: 0, handler, log: quietLog, holdoffMs: 0, drainMs: 0 });
  try {
    listener.update(first.entries, first.fingerprint);
    const ok = await fetch(`https://127.0.0.1:${listener.port}/`, { method: "POST", body: "12345", tls });
    expect(await ok.text()).toBe("5");
    // Bun's own default would take 100 bytes: 413 shows the handler's limit was applied.
    const big = await fetch(`https://127.0.0.1:${listener.port}/`, { method: "POST", body: "x".repeat(100), tls });
    expect(big.status).toBe(413);

    listener.freeze();
    const other = buildTlsEntries([], generated, settings, { checker });
    listener.update(other.entries, other.fingerprint);
    await listener.settled();
    expect(listener.rotations).toBe(0);
    expect(listener.fingerprint).toBe(first.fingerprint);
  } finally {
    await listener.stop(true);
  }
});
