// serveTraffic, the one assembly of the data plane (the single process and every worker):
// both schemes through one table with one access log and the metrics, a clean shutdown, and
// the port-sharing modes (serving/ports.ts): "alone" and "first" refuse a port a stranger
// holds with SO_REUSEPORT, and leave nothing bound behind; only "join" (a sibling worker
// already listens) binds next to it.
import { afterAll, describe, expect, test } from "bun:test";
import { createInstruments } from "../../src/admin/instruments.ts";
import { Registry } from "../../src/admin/registry.ts";
import type { Config } from "../../src/config/types.ts";
import { createLogger, silentLogger, type Logger } from "../../src/log/logger.ts";
import { PortInUseError } from "../../src/serving/ports.ts";
import { serveTraffic, type PortSharing, type Serving } from "../../src/serving/serve.ts";
import { createTlsBuilder } from "../../src/serving/tls.ts";
import { createCertificate } from "../tls/pki.ts";
import { freePort } from "../e2e/harness.ts";
import { echoBackend, makeBackend, makeTable, testConfig } from "../proxy/helpers.ts";
import { eventually } from "../wait.ts";

const backend = echoBackend("web");
afterAll(() => backend.stop());
const table = makeTable([{ host: "shop.test", path: "/", backend: makeBackend([backend.port]) }]);

function start(config: Config, ports: PortSharing, chunks: string[] = [], log: Logger = silentLogger) {
  const registry = new Registry();
  const inst = createInstruments(registry, { version: "t" });
  const tls = createTlsBuilder(config, silentLogger).build([]);
  const serving = serveTraffic({ config, log, inst, table: () => table, tls: { ...tls, provisional: true }, ports, accessWrite: (c) => void chunks.push(c) });
  return { serving, registry };
}

const config = (over: Partial<Config> = {}) =>
  testConfig({ httpPort: freePort(), httpsPort: freePort(), accessLog: "stdout", tlsCiphers: "ECDHE-ECDSA-AES128-GCM-SHA256", ...over });

/** Binds 127.0.0.1:port as a stranger would: SO_REUSEPORT, same user. */
const stranger = (port: number) => Bun.serve({ hostname: "127.0.0.1", port, reusePort: true, fetch: () => new Response("stranger") });

/** True when a plain (exclusive) bind of the port succeeds now. */
function isFree(port: number): boolean {
  try {
    Bun.listen({ hostname: "127.0.0.1", port, socket: { data() {} } }).stop(true);
    return true;
  } catch {
    return false;
  }
}

test("HTTP and HTTPS through one table, one access log and the metrics; shutdown closes both and flushes the log", async () => {
  const chunks: string[] = [];
  const c = config();
  const { serving, registry } = start(c, "alone", chunks);
  const plain = await fetch(`http://127.0.0.1:${serving.ports.http}/a`, { headers: { host: "shop.test" }, redirect: "manual" });
  expect(plain.status).toBe(200);
  const secure = await fetch(`https://127.0.0.1:${serving.ports.https}/b`, { headers: { host: "shop.test" }, tls: { rejectUnauthorized: false } });
  expect(secure.status).toBe(200);
  expect(registry.expose()).toMatch(/portico_requests_total\{[^}]*status_class="2xx"\} 2/);
  await serving.shutdown();
  const lines = chunks.join("").trim().split("\n").map((l) => JSON.parse(l) as { scheme: string; path: string });
  expect(lines.map((l) => `${l.scheme} ${l.path}`)).toEqual(["http /a", "https /b"]);
  expect(isFree(c.httpPort) && isFree(c.httpsPort)).toBe(true);
});

test("a certificate rotation is logged once and counted once", async () => {
  const lines: string[] = [];
  const c = config();
  const { serving, registry } = start(c, "alone", [], createLogger({ level: "debug", format: "json", write: (l) => void lines.push(l) }));
  try {
    const pem = createCertificate({ subjectCN: "shop", sans: ["shop.test"] });
    const built = createTlsBuilder(c, silentLogger).build([{ host: "shop.test", secret: "shop/tls", cert: pem.certPem, key: pem.keyPem, version: "1", ingress: "shop/main" }]);
    serving.setTls(built.entries, built.fingerprint);
    await eventually(() => !serving.tlsProvisional, 5_000, "the real certificates served");
    expect(lines.filter((l) => /rotat/i.test((JSON.parse(l) as { msg: string }).msg))).toHaveLength(1);
    expect(registry.expose()).toContain("portico_tls_rotations_total 1");
  } finally {
    await serving.shutdown();
  }
});

describe("port sharing", () => {
  const opened: Serving[] = [];
  afterAll(async () => {
    for (const s of opened) await s.shutdown();
  });

  const refusals: [PortSharing, "http" | "https"][] = [
    ["alone", "http"],
    ["alone", "https"],
    ["first", "http"],
    ["first", "https"],
  ];
  test.each(refusals)('"%s": a stranger with SO_REUSEPORT on the %s port is refused, and nothing stays bound', async (mode, held) => {
    const c = config({ shutdownDelayMs: 0 });
    const port = held === "http" ? c.httpPort : c.httpsPort;
    const other = held === "http" ? c.httpsPort : c.httpPort;
    const s = stranger(port);
    try {
      let err: unknown = null;
      try {
        opened.push(start(c, mode).serving);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(PortInUseError);
      expect((err as Error).message).toStartWith(`port ${port} (--${held}-port) on 127.0.0.1 is in use`);
      expect(isFree(other)).toBe(true);
    } finally {
      await s.stop(true);
    }
  });

  test('"join" binds next to a listener already there (what a sibling worker does)', async () => {
    const c = config({ shutdownDelayMs: 0 });
    const first = start(c, "first").serving;
    opened.push(first);
    const sibling = start(c, "join").serving;
    opened.push(sibling);
    expect(sibling.ports).toEqual(first.ports);
  });
});
