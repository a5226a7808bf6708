// The Gateways' own listeners (serving/gateway-ports.ts): opened and closed as the table lists
// them, a port someone else holds logged and tried again after a back-off (never a throw, never
// a stop of the other ports), a port left by an HTTPS Gateway taken at once by an HTTP one
// while the first still drains, and a request there asked of that Gateway's rules only.
import { afterEach, describe, expect, test } from "bun:test";
import { lookup } from "../../src/table/lookup.ts";
import { assembleTable } from "../../src/table/build.ts";
import type { GatewayPort, RouteTable } from "../../src/table/types.ts";
import { createGatewayPortListeners, type GatewayPortListeners } from "../../src/serving/gateway-ports.ts";
import { freePort } from "../e2e/harness.ts";
import { captureLogger } from "../fake-apiserver/fixtures.ts";
import { testConfig } from "../proxy/helpers.ts";
import { createCertificate } from "../tls/pki.ts";
import { eventually } from "../wait.ts";

const EMPTY = assembleTable([], null, 0);
const withPorts = (ports: number[], https: number[] = []): RouteTable =>
  Object.freeze({ ...EMPTY, gatewayPorts: new Map(ports.map((p): [number, GatewayPort] => [p, { gateway: "apps/gw", declared: 80, https: https.includes(p), routes: null }])) });

let listeners: GatewayPortListeners | null = null;
afterEach(async () => {
  await listeners?.stop(true);
  listeners = null;
});

async function status(port: number): Promise<number | string> {
  try {
    const r = await fetch(`http://127.0.0.1:${port}/`, { headers: { host: "example.com", connection: "close" } });
    await r.text();
    return r.status;
  } catch (e) {
    return (e as { code?: string }).code ?? String(e);
  }
}

describe("Gateway port listeners", () => {
  test("open what the table lists, close what it drops; a held port is logged and taken after a back-off", async () => {
    const config = testConfig();
    const log = captureLogger();
    let table: RouteTable = EMPTY;
    const cert = createCertificate({ subjectCN: "gw.example", sans: ["gw.example"] });
    const tls = { entries: [{ cert: cert.certPem, key: cert.keyPem, ciphers: config.tlsCiphers, secureOptions: 0 }], fingerprint: "f" };
    listeners = createGatewayPortListeners({ config, log, hostname: "127.0.0.1", reusePort: false, retryMs: 20, table: () => table, deps: { config, lookup, log }, tls: () => tls });
    const [a, b] = [freePort(), freePort()];
    // b is held by someone else.
    const holder = Bun.listen({ hostname: "127.0.0.1", port: b, socket: { data() {} } });
    table = withPorts([a, b]);
    expect(() => listeners!.fit(table)).not.toThrow();
    expect([...listeners.ports.keys()]).toEqual([a]);
    expect(log.lines.some((l) => l.level === "error" && l.fields?.port === b)).toBe(true);
    // The Gateway's port: no route attached, so 404 (never an Ingress's or another Gateway's answer).
    expect(await status(a)).toBe(404);
    holder.stop(true);
    // Taken by the retry, with no table change.
    await eventually(() => listeners!.ports.has(b), 5_000, "the released port taken");
    expect(await status(b)).toBe(404);
    // Dropped from the table: closed.
    table = withPorts([b]);
    listeners.fit(table);
    expect([...listeners.ports.keys()]).toEqual([b]);
    expect(await status(a)).toBe("ECONNREFUSED");
    // No Gateway port at all: nothing listens.
    table = EMPTY;
    listeners.fit(table);
    expect(listeners.ports.size).toBe(0);
    // An HTTPS Gateway's port, then the same port for an HTTP one: taken at once.
    table = withPorts([a], [a]);
    listeners.fit(table);
    expect(listeners.ports.get(a)).toEqual({ https: true });
    table = withPorts([a]);
    listeners.fit(table);
    expect(listeners.ports.get(a)).toEqual({ https: false });
    expect(await status(a)).toBe(404);
  });
});
