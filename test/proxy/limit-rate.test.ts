// limit-rate and limit-rate-after through a real proxy: a raw-socket pod sends a body of known
// size at once, and the client reads it through Portico, noting when each piece arrives.
// ingress-nginx at dbb11b92: ratelimit/main.go reads both as ints, template.go buildRateLimit
// writes `limit_rate <n>k;` / `limit_rate_after <n>k;` (KiB), and nginx's write filter lets out
// at most limit_rate × (seconds since the request started + 1) bytes past limit_rate_after
// (ngx_http_write_filter_module.c). The checks are bounds that load can only make safer: the
// bytes the client holds at its time t never exceed what the rate allows by t (the client's t
// starts before the proxy's), and the last byte cannot come before the rate allows it.
import { afterEach, describe, expect, test } from "bun:test";
import type { Config } from "../../src/config/types.ts";
import type { RouteOptions } from "../../src/table/types.ts";
import { makeBackend, makeTable, optionsOf, startProxy } from "./helpers.ts";
import { rawBackend, type RawBackend } from "./raw.ts";
import { eventually } from "../wait.ts";
import net from "node:net";

const N = "nginx.ingress.kubernetes.io/";
const KIB = 1024;
const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

/** A pod answering every request with `size` bytes of a repeating pattern, at once. */
async function pod(size: number, chunked = false): Promise<{ backend: RawBackend; body: string }> {
  const body = "0123456789abcdef".repeat(Math.ceil(size / 16)).slice(0, size);
  const head = chunked ? "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" : `HTTP/1.1 200 OK\r\nContent-Length: ${size}\r\n\r\n`;
  const payload = chunked ? `${size.toString(16)}\r\n${body}\r\n0\r\n\r\n` : body;
  const backend = await rawBackend(() => head + payload);
  cleanup.push(() => backend.stop());
  return { backend, body };
}

function proxyFor(port: number, options: Partial<RouteOptions>, config: Partial<Config> = {}) {
  const p = startProxy(makeTable([{ host: "a.test", backend: makeBackend([port]), options }]), config);
  cleanup.push(() => p.stop());
  return p;
}

interface Arrival {
  readonly ms: number;
  readonly bytes: number;
}

/** GET through the proxy; every piece of the body with the client's time (ms since just before the request) and the bytes held then. */
async function timedGet(url: string): Promise<{ status: number; headers: Headers; body: string; arrivals: Arrival[] }> {
  const t0 = performance.now();
  const res = await fetch(url, { headers: { host: "a.test" } });
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const arrivals: Arrival[] = [];
  const parts: Uint8Array[] = [];
  let bytes = 0;
  for (;;) {
    const r = await reader.read();
    if (r.done) break;
    bytes += r.value.byteLength;
    parts.push(r.value);
    arrivals.push({ ms: performance.now() - t0, bytes });
  }
  return { status: res.status, headers: res.headers, body: Buffer.concat(parts).toString("latin1"), arrivals };
}

/** Every arrival within after + rate × (t + 1), and the last one no earlier than the rate allows. */
function expectPaced(arrivals: readonly Arrival[], size: number, rate: number, after: number): void {
  for (const a of arrivals) expect(a.bytes).toBeLessThanOrEqual(after + rate * (a.ms / 1000 + 1));
  const last = arrivals.at(-1) as Arrival;
  expect(last.bytes).toBe(size);
  expect(last.ms / 1000).toBeGreaterThanOrEqual((size - after) / rate - 1);
}

describe("limit-rate", () => {
  test('"16" (KiB per second): a 40 KiB body reaches the client no faster than 16 KiB a second, whole and in order', async () => {
    const size = 40 * KIB;
    const { backend, body } = await pod(size);
    const a = optionsOf({ [`${N}limit-rate`]: "16" });
    expect(a.limitRate).toBe(16 * KIB);
    const proxy = proxyFor(backend.port, a);
    const got = await timedGet(`${proxy.url}/big`);
    expect(got.status).toBe(200);
    expect(got.body).toBe(body);
    expectPaced(got.arrivals, size, 16 * KIB, 0);
  });

  test('with limit-rate-after "16": the first 16 KiB are not counted, the rest is paced (a chunked body too)', async () => {
    const size = 48 * KIB;
    const { backend, body } = await pod(size, true);
    const proxy = proxyFor(backend.port, optionsOf({ [`${N}limit-rate`]: "16", [`${N}limit-rate-after`]: "16" }));
    const got = await timedGet(`${proxy.url}/big`);
    expect(got.body).toBe(body);
    expectPaced(got.arrivals, size, 16 * KIB, 16 * KIB);
  });

  test("the flag's rate (the ConfigMap's limit-rate) paces a route without the annotation; the annotation's 0 turns it off", async () => {
    const size = 40 * KIB;
    const { backend, body } = await pod(size);
    const proxy = proxyFor(backend.port, {}, { limitRate: 16 * KIB, limitRateAfter: 0 });
    const got = await timedGet(`${proxy.url}/big`);
    expect(got.body).toBe(body);
    expectPaced(got.arrivals, size, 16 * KIB, 0);
    // ratelimit/main.go: a valid annotation wins over the ConfigMap's value, 0 included (no limit).
    expect(optionsOf({ [`${N}limit-rate`]: "0" }).limitRate).toBe(0);
    expect(optionsOf({ [`${N}limit-rate`]: "-5" }).limitRate).toBe(0);
  });

  test("a body within the first second's allowance keeps its Content-Length and is not held back", async () => {
    const { backend, body } = await pod(2 * KIB);
    const proxy = proxyFor(backend.port, optionsOf({ [`${N}limit-rate`]: "16" }));
    const got = await timedGet(`${proxy.url}/small`);
    expect(got.body).toBe(body);
    expect(got.headers.get("content-length")).toBe(String(2 * KIB));
  });

  test("a client that leaves during a paced body ends the request (ClientClosed, with the bytes it was sent); the proxy serves on", async () => {
    const size = 256 * KIB;
    const { backend, body } = await pod(size);
    const proxy = proxyFor(backend.port, optionsOf({ [`${N}limit-rate`]: "16" }));
    let got = 0;
    const sock = net.connect(proxy.port, "127.0.0.1", () => sock.write("GET /big HTTP/1.1\r\nHost: a.test\r\n\r\n"));
    sock.on("error", () => {});
    // The first second's allowance arrives, then the client leaves in the middle of the body.
    await new Promise<void>((resolve) =>
      sock.on("data", (d: Buffer) => {
        got += d.byteLength;
        if (got >= 8 * KIB) resolve();
      }),
    );
    sock.destroy();
    await eventually(() => proxy.records.some((r) => r.error === "ClientClosed"), 10_000);
    const rec = proxy.records.find((r) => r.error === "ClientClosed")!;
    expect(rec.bytesOut).toBeGreaterThanOrEqual(8 * KIB);
    expect(rec.bytesOut).toBeLessThan(size);
    // The next request is served whole.
    const small = await pod(KIB);
    proxy.setTable(makeTable([{ host: "a.test", backend: makeBackend([small.backend.port]), options: optionsOf({ [`${N}limit-rate`]: "16" }) }]));
    expect((await timedGet(`${proxy.url}/after`)).body).toBe(small.body);
    expect(body.length).toBe(size);
  });

  test("values ingress-nginx's parser refuses fall back to the default, with a diagnostic", async () => {
    const { parseAnnotations } = await import("../../src/compile/annotations.ts");
    for (const bad of ["16k", "1.5", " 16", "", "16\n"]) {
      const a = parseAnnotations({ [`${N}limit-rate`]: bad });
      expect(a.problems).toHaveLength(1);
      expect(a.options.limitRate).toBeNull();
    }
  });
});
