// limit-rate and limit-rate-after through a real proxy: a raw-socket pod sends a body of known
// size at once, and the client reads it through Portico, noting when each piece arrives.
// ingress-nginx at dbb11b92: ratelimit/main.go reads both as ints, template.go buildRateLimit
// writes `limit_rate <n>k;` / `limit_rate_after <n>k;` (KiB), and nginx's write filter lets out
// at most limit_rate × (seconds since the request started + 1) bytes past limit_rate_after
// (ngx_http_write_filter_module.c). The checks are bounds that load can only make safer: the
// bytes the client holds at its time t never exceed what the rate allows by t (the client's t
// starts before the proxy's), and the last byte cannot come before the rate allows it.
// nginx paces only a buffered answer: ngx_http_upstream_send_response (ngx_http_upstream.c, the
// `!u->buffering` branch) sets `r->limit_rate = 0`, so with proxy_buffering off, ingress-nginx's
// default, limit_rate paces nothing; the pod's X-Accel-Limit-Rate
// (ngx_http_upstream_process_limit_rate) sets the rate of a buffered answer. Seen with nginx
// 1.22.1 on loopback: 32 KiB with `limit_rate 8k` took 4 s buffered, 0.03 s unbuffered. An
// unpaced answer shows without timing: a body declared at most 64 KiB keeps its Content-Length
// only when it is not paced (docs/design.md "Response bandwidth").
import { afterEach, describe, expect, test } from "bun:test";
import type { Config } from "../../src/config/types.ts";
import type { RouteOptions } from "../../src/table/types.ts";
import { makeBackend, makeTable, optionsOf, startProxy } from "./helpers.ts";
import { rawBackend, type RawBackend } from "./raw.ts";
import { eventually } from "../wait.ts";
import net from "node:net";

const N = "nginx.ingress.kubernetes.io/";
const KIB = 1024;
/** proxy-buffering on: the answers nginx paces. */
const ON = { [`${N}proxy-buffering`]: "on" };
const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

/** A pod answering every request with `size` bytes of a repeating pattern, at once; `fields`: more header lines, each ending in CRLF. */
async function pod(size: number, chunked = false, fields = ""): Promise<{ backend: RawBackend; body: string }> {
  const body = "0123456789abcdef".repeat(Math.ceil(size / 16)).slice(0, size);
  const head = chunked ? `HTTP/1.1 200 OK\r\n${fields}Transfer-Encoding: chunked\r\n\r\n` : `HTTP/1.1 200 OK\r\n${fields}Content-Length: ${size}\r\n\r\n`;
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
async function timedGet(url: string, onHead?: (res: Response) => void): Promise<{ status: number; headers: Headers; body: string; arrivals: Arrival[] }> {
  const t0 = performance.now();
  const res = await fetch(url, { headers: { host: "a.test" } });
  // Checks on the head fail before a slow body is read.
  onHead?.(res);
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
  test('"16" (KiB per second) with proxy-buffering on: a 40 KiB body reaches the client no faster than 16 KiB a second, whole and in order', async () => {
    const size = 40 * KIB;
    const { backend, body } = await pod(size);
    const a = optionsOf({ ...ON, [`${N}limit-rate`]: "16" });
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
    const proxy = proxyFor(backend.port, optionsOf({ ...ON, [`${N}limit-rate`]: "16", [`${N}limit-rate-after`]: "16" }));
    const got = await timedGet(`${proxy.url}/big`);
    expect(got.body).toBe(body);
    expectPaced(got.arrivals, size, 16 * KIB, 16 * KIB);
  });

  test("the flag's rate (the ConfigMap's limit-rate) paces a buffered route without the annotation; the annotation's 0 turns it off", async () => {
    const size = 40 * KIB;
    const { backend, body } = await pod(size);
    const proxy = proxyFor(backend.port, {}, { limitRate: 16 * KIB, limitRateAfter: 0, proxyBuffering: true });
    const got = await timedGet(`${proxy.url}/big`);
    expect(got.body).toBe(body);
    expectPaced(got.arrivals, size, 16 * KIB, 0);
    // ratelimit/main.go: a valid annotation wins over the ConfigMap's value, 0 included (no limit).
    expect(optionsOf({ [`${N}limit-rate`]: "0" }).limitRate).toBe(0);
    expect(optionsOf({ [`${N}limit-rate`]: "-5" }).limitRate).toBe(0);
  });

  test("a body within the first second's allowance keeps its Content-Length and is not held back", async () => {
    const { backend, body } = await pod(2 * KIB);
    const proxy = proxyFor(backend.port, optionsOf({ ...ON, [`${N}limit-rate`]: "16" }));
    const got = await timedGet(`${proxy.url}/small`);
    expect(got.body).toBe(body);
    expect(got.headers.get("content-length")).toBe(String(2 * KIB));
  });

  test("a client that leaves during a paced body ends the request (ClientClosed, with the bytes it was sent); the proxy serves on", async () => {
    const size = 256 * KIB;
    const { backend, body } = await pod(size);
    const proxy = proxyFor(backend.port, optionsOf({ ...ON, [`${N}limit-rate`]: "16" }));
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
    proxy.setTable(makeTable([{ host: "a.test", backend: makeBackend([small.backend.port]), options: optionsOf({ ...ON, [`${N}limit-rate`]: "16" }) }]));
    expect((await timedGet(`${proxy.url}/after`)).body).toBe(small.body);
    expect(body.length).toBe(size);
  });

  // ngx_http_upstream.c, ngx_http_upstream_send_response: `if (!u->buffering) { ...
  // r->limit_rate = 0; r->limit_rate_set = 1; ... }`, after the pod's head was read.
  test("proxy-buffering off (ingress-nginx's default): limit-rate paces nothing, annotation or ConfigMap", async () => {
    const size = 40 * KIB;
    const { backend, body } = await pod(size);
    for (const [options, config] of [
      [optionsOf({ [`${N}limit-rate`]: "1" }), {}],
      [optionsOf({ [`${N}proxy-buffering`]: "off", [`${N}limit-rate`]: "1" }), { proxyBuffering: true }],
      [{}, { limitRate: KIB }],
    ] as const) {
      const proxy = proxyFor(backend.port, options, config);
      // Not paced: the small-body path keeps the Content-Length, and the body came faster than 1 KiB a second.
      const got = await timedGet(`${proxy.url}/big`, (res) => expect(res.headers.get("content-length")).toBe(String(size)));
      expect(got.body).toBe(body);
      const last = got.arrivals.at(-1) as Arrival;
      expect(last.bytes).toBeGreaterThan(KIB * (last.ms / 1000 + 1));
    }
  });

  test("the pod's X-Accel-Buffering: yes makes an answer of an unbuffered route paced", async () => {
    const size = 40 * KIB;
    const { backend, body } = await pod(size, false, "X-Accel-Buffering: yes\r\n");
    const proxy = proxyFor(backend.port, optionsOf({ [`${N}limit-rate`]: "16" }));
    const got = await timedGet(`${proxy.url}/big`);
    expect(got.body).toBe(body);
    expect(got.headers.get("content-length")).toBeNull();
    expectPaced(got.arrivals, size, 16 * KIB, 0);
  });

  // ngx_http_upstream_process_buffering runs for each X-Accel-Buffering line: the last `yes` or `no` wins.
  test("of repeated X-Accel-Buffering fields the last yes or no decides, and with it the pacing", async () => {
    const size = 40 * KIB;
    const yes = await pod(size, false, "X-Accel-Buffering: no\r\nX-Accel-Buffering: maybe\r\nX-Accel-Buffering: yes\r\n");
    const paced = await timedGet(`${proxyFor(yes.backend.port, optionsOf({ [`${N}limit-rate`]: "16" })).url}/big`);
    expect(paced.body).toBe(yes.body);
    expect(paced.headers.get("content-length")).toBeNull();
    expectPaced(paced.arrivals, size, 16 * KIB, 0);
    const no = await pod(size, false, "X-Accel-Buffering: yes\r\nX-Accel-Buffering: no\r\n");
    const got = await timedGet(`${proxyFor(no.backend.port, optionsOf({ ...ON, [`${N}limit-rate`]: "1" })).url}/big`, (res) => expect(res.headers.get("content-length")).toBe(String(size)));
    expect(got.body).toBe(no.body);
    const { bufferingWanted } = await import("../../src/proxy/upstream/response-buffering.ts");
    expect([bufferingWanted(false, "YES"), bufferingWanted(true, "No"), bufferingWanted(true, "yes, no"), bufferingWanted(false, "no, yes, maybe"), bufferingWanted(true, "nope")]).toEqual([true, false, false, true, true]);
  });

  // ngx_http_upstream_process_limit_rate: ngx_atoi of the value (bytes per second, digits only)
  // sets r->limit_rate; a value it refuses changes nothing.
  test("X-Accel-Limit-Rate (bytes per second) replaces limit-rate for a buffered answer, limit-rate-after still counted", async () => {
    const size = 48 * KIB;
    const { backend, body } = await pod(size, false, `X-Accel-Limit-Rate: ${16 * KIB}\r\n`);
    // The route's own rate, 1 KiB a second, would take 31 s past limit-rate-after: the pod's 16 KiB a second wins.
    const proxy = proxyFor(backend.port, optionsOf({ ...ON, [`${N}limit-rate`]: "1", [`${N}limit-rate-after`]: "16" }));
    const got = await timedGet(`${proxy.url}/big`);
    expect(got.body).toBe(body);
    expectPaced(got.arrivals, size, 16 * KIB, 16 * KIB);
    const last = got.arrivals.at(-1) as Arrival;
    expect(last.bytes).toBeGreaterThan(16 * KIB + KIB * (last.ms / 1000 + 1));
  });

  test("X-Accel-Limit-Rate paces a buffered route without limit-rate, and nothing on an unbuffered one", async () => {
    const size = 40 * KIB;
    const { backend, body } = await pod(size, false, `X-Accel-Limit-Rate: ${16 * KIB}\r\n`);
    const on = await timedGet(`${proxyFor(backend.port, optionsOf(ON)).url}/big`);
    expect(on.body).toBe(body);
    expectPaced(on.arrivals, size, 16 * KIB, 0);
    const off = await timedGet(`${proxyFor(backend.port, {}).url}/big`);
    expect(off.body).toBe(body);
    expect(off.headers.get("content-length")).toBe(String(size));
  });

  test('X-Accel-Limit-Rate "0" lifts the route\'s limit; "off", "16k" and a signed number change nothing; the first of two counts', async () => {
    const size = 40 * KIB;
    const options = optionsOf({ ...ON, [`${N}limit-rate`]: "16" });
    for (const [fields, paced] of [
      ["X-Accel-Limit-Rate: 0\r\n", false],
      ["X-Accel-Limit-Rate: 0\r\nX-Accel-Limit-Rate: 1024\r\n", false],
      ["X-Accel-Limit-Rate: off\r\n", true],
      ["X-Accel-Limit-Rate: 16k\r\n", true],
      ["X-Accel-Limit-Rate: +0\r\n", true],
    ] as const) {
      const { backend, body } = await pod(size, false, fields);
      const got = await timedGet(`${proxyFor(backend.port, options).url}/big`);
      expect(got.body).toBe(body);
      if (paced) {
        expect(got.headers.get("content-length")).toBeNull();
        expectPaced(got.arrivals, size, 16 * KIB, 0);
      } else expect(got.headers.get("content-length")).toBe(String(size));
    }
  });

  test("accelLimitRate reads the value as ngx_atoi does", async () => {
    const { accelLimitRate } = await import("../../src/proxy/upstream/response-buffering.ts");
    expect(accelLimitRate(null)).toBeNull();
    expect(accelLimitRate("16384")).toBe(16384);
    expect(accelLimitRate("0")).toBe(0);
    expect(accelLimitRate("000512")).toBe(512);
    expect(accelLimitRate("9223372036854775807")).toBe(Number.MAX_SAFE_INTEGER);
    for (const bad of ["", "off", "16k", "-1", "+1", "1.5", "9223372036854775808", "99999999999999999999", "1 2"]) expect(accelLimitRate(bad)).toBeNull();
    // Bun joins a repeated field with ", ": the first one counts, as in nginx 1.23+.
    expect(accelLimitRate("100, 200")).toBe(100);
    expect(accelLimitRate("off, 200")).toBeNull();
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
