// proxy-buffering as nginx does it (docs/design.md "Response buffering"): a pod on a raw socket
// writes its answer a piece at a time, when the test says, and the client's raw bytes are read
// after each piece. The exact points are nginx's, read from its source and seen with nginx 1.22.1
// on loopback (proxy_buffer_size 4k, proxy_buffers 4 4k, proxy_http_version 1.1, as ingress-nginx
// renders them):
// - ngx_event_pipe.c ngx_event_pipe_read_upstream hands a buffer on only when it is full
//   (`if (n >= size)` ... input_filter), when it holds all the body still due (`p->length`), or
//   at the upstream's end (`p->upstream_eof`); the first buffer is proxy_buffer_size's, which the
//   pod's status line and header block already fill in part (u->buffer, p->preread_bufs). nginx
//   sent 4054 body bytes of a Content-Length answer whose head took 42 bytes, after the pod had
//   sent 5005.
// - ngx_http_upstream.c ngx_http_upstream_send_response: the header is sent without a flush, so
//   it waits in the write filter (postpone_output) with the body: nothing reaches the client
//   before the first buffer.
// - ngx_http_upstream.c ngx_http_upstream_process_buffering: X-Accel-Buffering `yes` / `no`
//   (any case) turns buffering on / off for the answer (nginx.tmpl sets no proxy_ignore_headers).
// - ngx_http_proxy_module.c ngx_http_proxy_input_filter_init / ngx_http_proxy_chunked_filter: a
//   chunked answer's p->length is what the chunk parser needs next, so a read that completes a
//   chunk goes out at once.
import { afterEach, expect, test } from "bun:test";
import type net from "node:net";
import { constants, gunzipSync } from "node:zlib";
import type { Config } from "../../src/config/types.ts";
import type { RouteOptions } from "../../src/table/types.ts";
import { eventually } from "../wait.ts";
import { makeBackend, makeTable, optionsOf, startProxy, type TestProxy } from "./helpers.ts";
import { chunkedData, rawBackend, rawClient, type RawClient } from "./raw.ts";

const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

const N = "nginx.ingress.kubernetes.io/";
const X = "x".repeat(5000);
// The rest of a 99999-byte body: above the 64 KiB that Portico reads whole whatever the
// buffering (docs/design.md "Request framing and bodies"), and a head as long as nginx's 20000.
const Y = "y".repeat(99999 - 5005);

interface Setup {
  readonly proxy: TestProxy;
  /** One GET on a new connection; resolves with the client and the pod's socket for it. */
  get(extraHead?: string): Promise<{ client: RawClient; pod: net.Socket }>;
}

async function setup(options: Partial<RouteOptions>, config: Partial<Config> = {}): Promise<Setup> {
  const waiting: ((s: net.Socket) => void)[] = [];
  // The pod answers nothing by itself: the test writes each piece on its socket.
  const pod = await rawBackend((req) => {
    waiting.shift()?.(req.socket);
    return null;
  });
  cleanup.push(() => pod.stop());
  const proxy = startProxy(makeTable([{ host: null, backend: makeBackend([pod.port]), options }]), config);
  cleanup.push(() => proxy.stop());
  return {
    proxy,
    async get(extraHead = "") {
      const sock = new Promise<net.Socket>((resolve) => waiting.push(resolve));
      const client = await rawClient(proxy.port);
      cleanup.push(() => client.destroy());
      client.write(`GET / HTTP/1.1\r\nHost: a.test\r\n${extraHead}\r\n`);
      return { client, pod: await sock };
    },
  };
}

/** The client's raw bytes split at the end of the head; body null while the head is incomplete. */
function split(raw: string): { head: string; body: string | null } {
  const end = raw.indexOf("\r\n\r\n");
  return end < 0 ? { head: raw, body: null } : { head: raw.slice(0, end), body: raw.slice(end + 4) };
}

/** The body data received so far (Portico relays a streamed answer chunked, as nginx does for a closed one). */
function bodySoFar(raw: string): string {
  const { head, body } = split(raw);
  if (body === null) return "";
  return /\r\ntransfer-encoding: chunked/i.test(head) ? chunkedData(body) : body;
}

/** Waits until the client holds at least `n` body bytes, and returns what it holds then. */
async function bodyOf(c: RawClient, n: number, what: string): Promise<string> {
  await eventually(() => bodySoFar(c.data()).length >= n, 10_000, what);
  return bodySoFar(c.data());
}

const CL_HEAD = "HTTP/1.1 200 OK\r\nContent-Length: 99999\r\n\r\n"; // 42 bytes: 4054 left in a 4k buffer

test("on, Content-Length 99999: the client gets the first 4k buffer less the 42-byte head once it is full, then the rest at the end", async () => {
  const s = await setup(optionsOf({ [`${N}proxy-buffering`]: "on" }));
  const { client, pod } = await s.get();
  pod.write(CL_HEAD);
  pod.write("hello");
  pod.write(X);
  // nginx 1.22.1: 4054 body bytes after the pod's 5005; the other 951 wait in the next buffer.
  const first = await bodyOf(client, 1, "the first buffer");
  expect(first).toBe(("hello" + X).slice(0, 4054));
  expect(split(client.data()).head).toStartWith("HTTP/1.1 200 OK");
  pod.write(Y);
  // The declared length is all read: everything goes (p->length reached 0).
  expect(await bodyOf(client, 99999, "the whole body")).toBe("hello" + X + Y);
  await eventually(() => s.proxy.records.length === 1, 5_000, "the access record");
  expect(s.proxy.records[0]!.bytesOut).toBe(99999);
});

test.each([false, true])("off, the pod's X-Accel-Buffering: yes: held as with on (4030 bytes: its head is 66 bytes); --ingress-nginx-compat %p", async (compat) => {
  const s = await setup({}, { ingressNginxCompat: compat });
  const { client, pod } = await s.get();
  pod.write("HTTP/1.1 200 OK\r\nContent-Length: 99999\r\nX-Accel-Buffering: yes\r\n\r\n");
  pod.write("hello");
  pod.write(X);
  expect(await bodyOf(client, 1, "the first buffer")).toBe(("hello" + X).slice(0, 4030));
  // nginx's proxy module hides the field (--ingress-nginx-compat); without it Portico passes it on.
  expect(split(client.data()).head.toLowerCase().includes("x-accel-buffering")).toBe(!compat);
  pod.write(Y);
  expect(await bodyOf(client, 99999, "the whole body")).toBe("hello" + X + Y);
});

test("on, the pod's X-Accel-Buffering: NO streams that answer, while the next one without it is held", async () => {
  const s = await setup(optionsOf({ [`${N}proxy-buffering`]: "on" }));
  const a = await s.get();
  a.pod.write("HTTP/1.1 200 OK\r\nContent-Length: 99999\r\nX-Accel-Buffering: NO\r\n\r\n");
  a.pod.write("hello");
  expect(await bodyOf(a.client, 1, "hello, unbuffered")).toBe("hello");
  const b = await s.get();
  b.pod.write(CL_HEAD + "hello");
  b.pod.write(X);
  expect(await bodyOf(b.client, 1, "the first buffer")).toBe(("hello" + X).slice(0, 4054));
});

test("on, a body the pod ends by closing: held until the buffer fills (4058: a 38-byte head), the rest at the end", async () => {
  const s = await setup(optionsOf({ [`${N}proxy-buffering`]: "on" }));
  const { client, pod } = await s.get();
  pod.write("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n");
  pod.write("hello");
  pod.write(X);
  expect(await bodyOf(client, 1, "the first buffer")).toBe(("hello" + X).slice(0, 4058));
  pod.end();
  expect(await bodyOf(client, 5005, "the rest at the pod's end")).toBe("hello" + X);
});

test("on, proxy-buffer-size 8k: the buffers are 8 KiB; later buffers go out whole", async () => {
  const s = await setup(optionsOf({ [`${N}proxy-buffering`]: "on", [`${N}proxy-buffer-size`]: "8k", [`${N}proxy-buffers-number`]: "2" }));
  const { client, pod } = await s.get();
  const body = Array.from({ length: 99999 }, (_, i) => String.fromCharCode(97 + (i % 26))).join("");
  pod.write(CL_HEAD);
  pod.write(body.slice(0, 5000));
  pod.write(body.slice(5000, 10000));
  // 8192 - 42 = 8150 in the first buffer.
  expect(await bodyOf(client, 1, "the first buffer")).toBe(body.slice(0, 8150));
  pod.write(body.slice(10000, 17000));
  // The second buffer (8150 to 16342) is full; 658 bytes wait in the third.
  expect(await bodyOf(client, 8151, "the second buffer")).toBe(body.slice(0, 16342));
  pod.write(body.slice(17000));
  expect(await bodyOf(client, 99999, "the end")).toBe(body);
});

test("--proxy-buffering (the ConfigMap's proxy-buffering) buffers routes without the annotation; the annotation's off wins", async () => {
  const on = await setup({}, { proxyBuffering: true, proxyBufferSize: 4096 });
  const a = await on.get();
  a.pod.write(CL_HEAD + "hello");
  a.pod.write(X);
  expect(await bodyOf(a.client, 1, "the first buffer")).toBe(("hello" + X).slice(0, 4054));
  const off = await setup(optionsOf({ [`${N}proxy-buffering`]: "off" }), { proxyBuffering: true });
  const b = await off.get();
  b.pod.write(CL_HEAD + "hello");
  expect(await bodyOf(b.client, 1, "hello, unbuffered")).toBe("hello");
});

test("on, chunked: a read that completes a chunk goes out at once, as nginx's chunked filter passes it", async () => {
  const s = await setup(optionsOf({ [`${N}proxy-buffering`]: "on" }));
  const { client, pod } = await s.get();
  pod.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
  pod.write("5\r\nhello\r\n");
  expect(await bodyOf(client, 5, "the first chunk")).toBe("hello");
  pod.write("5\r\nworld\r\n0\r\n\r\n");
  expect(await bodyOf(client, 10, "the second chunk")).toBe("helloworld");
});

test("on with gzip: each buffer is compressed as it goes out, and decodes to exactly the bytes held so far", async () => {
  const s = await setup(optionsOf({ [`${N}proxy-buffering`]: "on" }), { gzip: true });
  const { client, pod } = await s.get("Accept-Encoding: gzip\r\n");
  pod.write("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 70000\r\n\r\n");
  const body = Array.from({ length: 70000 }, (_, i) => `${i % 97} `).join("").slice(0, 70000);
  pod.write(body.slice(0, 5000));
  // The head is 17 + 26 + 23 + 2 = 68 bytes: 4028 body bytes fill the first buffer.
  const decoded = () => {
    const b = bodySoFar(client.data());
    if (b === "") return "";
    try {
      return gunzipSync(Buffer.from(b, "latin1"), { finishFlush: constants.Z_SYNC_FLUSH }).toString("latin1");
    } catch {
      return "";
    }
  };
  await eventually(() => decoded().length > 0, 10_000, "the first buffer, compressed");
  expect(decoded()).toBe(body.slice(0, 4028));
  expect(split(client.data()).head.toLowerCase()).toContain("content-encoding: gzip");
  pod.write(body.slice(5000));
  await eventually(() => decoded().length === 70000, 10_000, "the whole body, compressed");
  expect(decoded()).toBe(body);
  await eventually(() => s.proxy.records.length === 1, 5_000, "the access record");
});

// The status line and fields wait with the first buffer (nginx's header stays in its write
// filter): a pod that stops before the first buffer is full has sent the client nothing, so the
// idle deadline can still answer 504 (with buffering off the 200 and "hello" are out at once).
// nginx 1.22.1 flushes its kept 200 head and closes, the held bytes dropped (its read timeout
// does not run the event pipe: ngx_http_upstream_process_upstream); Portico says what happened.
test("on: a pod that goes quiet before the first buffer is full gets the client a 504 (nothing was sent yet)", async () => {
  const s = await setup(optionsOf({ [`${N}proxy-buffering`]: "on" }), { streamIdleTimeoutMs: 300 });
  const { client, pod } = await s.get();
  pod.write(CL_HEAD + "hello");
  await eventually(() => split(client.data()).body !== null, 10_000, "an answer");
  expect(client.data()).toStartWith("HTTP/1.1 504 ");
  expect(client.data()).not.toContain("hello");
});

// A chunked answer's first read that completes a chunk is its first buffer (nginx's chunked
// filter hands it on at once, and the head with it): a pod silent after it has had the 200 and
// that chunk sent, so the idle deadline can only cut (ngx_http_upstream_process_upstream: a read
// timeout sets p->upstream_error; ngx_http_upstream_finalize_request, the head sent, closes).
test("on, chunked: a pod silent after its first chunk: the client has the 200 and the chunk, then the cut", async () => {
  const s = await setup(optionsOf({ [`${N}proxy-buffering`]: "on" }), { streamIdleTimeoutMs: 300 });
  const { client, pod } = await s.get();
  pod.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n");
  expect(await bodyOf(client, 5, "the first chunk")).toBe("hello");
  expect(split(client.data()).head).toStartWith("HTTP/1.1 200 OK");
  await eventually(() => client.closed(), 10_000, "the cut");
  expect(bodySoFar(client.data())).toBe("hello");
  expect(client.data()).not.toContain("\r\n0\r\n");
  await eventually(() => s.proxy.records.length === 1, 5_000, "the access record");
  expect(s.proxy.records[0]).toMatchObject({ status: 200, error: "StreamIdle", bytesOut: 5 });
});

// A pod that resets: nginx drops what it holds. ngx_event_pipe_read_upstream gives the buffer
// being filled to the input filter on the read error, but p->read stays 0 in that pass, so
// ngx_event_pipe stops before ngx_event_pipe_write_to_downstream; ngx_http_upstream_finalize_request
// (u->header_sent: the head was given to the write filter) flushes what the write filter had
// and closes. nginx 1.22.1 on loopback (proxy_buffering on, 4k buffers, the pod resetting 300 ms
// after its last write): after the first buffer, the 4054 bytes sent and the cut, the 951 held
// not sent; before it, the 200 head alone and the cut.
test("on: a pod reset after the first buffer went out: the client has that buffer, then the cut; the bytes held are dropped", async () => {
  const s = await setup(optionsOf({ [`${N}proxy-buffering`]: "on" }));
  const { client, pod } = await s.get();
  pod.write(CL_HEAD + "hello" + X);
  expect(await bodyOf(client, 1, "the first buffer")).toBe(("hello" + X).slice(0, 4054));
  pod.resetAndDestroy();
  await eventually(() => client.closed(), 10_000, "the cut");
  expect(bodySoFar(client.data())).toBe(("hello" + X).slice(0, 4054));
  expect(client.data()).not.toContain("\r\n0\r\n");
  await eventually(() => s.proxy.records.length === 1, 5_000, "the access record");
  expect(s.proxy.records[0]).toMatchObject({ status: 200, error: "UpstreamAborted", bytesOut: 4054 });
});

// Before the first buffer nothing was sent, so Portico answers 502, the status that says what
// happened, where nginx sends its kept 200 head and closes (docs/design.md "Response buffering").
test("on: a pod reset before the first buffer is full gets the client a 502, none of its bytes", async () => {
  const s = await setup(optionsOf({ [`${N}proxy-buffering`]: "on" }));
  const { client, pod } = await s.get();
  pod.write(CL_HEAD + "hello");
  pod.resetAndDestroy();
  await eventually(() => split(client.data()).body !== null, 10_000, "an answer");
  expect(client.data()).toStartWith("HTTP/1.1 502 ");
  expect(client.data()).not.toContain("hello");
  await eventually(() => s.proxy.records.length === 1, 5_000, "the access record");
  expect(s.proxy.records[0]!.status).toBe(502);
});

// nginx's proxy_read_timeout is between two reads of the pod, whatever the buffers wait for
// (ngx_event_pipe.c ngx_event_pipe: the read timer is re-armed after each read); Portico's is
// --stream-idle-timeout, touched on each read of the pod while a buffer fills.
test("on: a pod that sends often enough is not cut while a buffer takes longer than the idle timeout to fill", async () => {
  const s = await setup(optionsOf({ [`${N}proxy-buffering`]: "on" }), { streamIdleTimeoutMs: 1_000 });
  const { client, pod } = await s.get();
  const body = "hello" + X + Y;
  pod.write(CL_HEAD);
  pod.write(body.slice(0, 5005));
  expect(await bodyOf(client, 1, "the first buffer")).toBe(body.slice(0, 4054));
  // 951 bytes wait in the second buffer. Then 1000 bytes every 300 ms: the second buffer fills
  // at the fourth, about 1.2 s on, each gap well inside the 1 s deadline (the pod's pace, not a
  // wait of the test).
  let at = 5005;
  const drip = setInterval(() => {
    if (at < 9005) pod.write(body.slice(at, (at += 1000)));
  }, 300);
  cleanup.push(() => clearInterval(drip));
  expect(await bodyOf(client, 4055, "the second buffer")).toBe(body.slice(0, 4054 + 4096));
  expect(client.closed()).toBe(false);
});

test("on: a pod idle past the timeout after the first buffer went out: the client's connection is cut, logged StreamIdle", async () => {
  const s = await setup(optionsOf({ [`${N}proxy-buffering`]: "on" }), { streamIdleTimeoutMs: 300 });
  const { client, pod } = await s.get();
  pod.write(CL_HEAD + "hello");
  pod.write(X);
  expect(await bodyOf(client, 1, "the first buffer")).toBe(("hello" + X).slice(0, 4054));
  await eventually(() => client.closed(), 10_000, "the cut");
  expect(bodySoFar(client.data())).toBe(("hello" + X).slice(0, 4054));
  await eventually(() => s.proxy.records.length === 1, 5_000, "the access record");
  expect(s.proxy.records[0]).toMatchObject({ status: 200, error: "StreamIdle", bytesOut: 4054 });
});

// limit-rate paces what the holder lets go (nginx's write filter limits what the pipe writes,
// ngx_http_write_filter_module.c): the bound of test/proxy/limit-rate.test.ts, bytes held by the
// client at its time t never above rate × (t + 1), which load can only make safer.
test("on with limit-rate 32k: the buffers let go are paced, and the whole body arrives", async () => {
  const rate = 32 * 1024;
  const s = await setup(optionsOf({ [`${N}proxy-buffering`]: "on", [`${N}limit-rate`]: "32" }));
  const t0 = performance.now();
  const { client, pod } = await s.get();
  pod.write(CL_HEAD + "hello" + X + Y);
  let within = true;
  const check = setInterval(() => {
    if (bodySoFar(client.data()).length > rate * ((performance.now() - t0) / 1000 + 1)) within = false;
  }, 5);
  cleanup.push(() => clearInterval(check));
  expect(await bodyOf(client, 99999, "the whole body")).toBe("hello" + X + Y);
  const elapsed = (performance.now() - t0) / 1000;
  // The sampler may not have fired before the body was whole: the bound once more on what is
  // held now, and the last byte no earlier than the rate allows (limit-rate.test.ts expectPaced).
  if (bodySoFar(client.data()).length > rate * (elapsed + 1)) within = false;
  clearInterval(check);
  expect(within).toBe(true);
  expect(elapsed).toBeGreaterThanOrEqual(99999 / rate - 1);
  await eventually(() => s.proxy.records.length === 1, 5_000, "the access record");
  expect(s.proxy.records[0]).toMatchObject({ status: 200, error: null, bytesOut: 99999 });
});

// A WebSocket handshake the pod refuses is relayed as its answer to a plain GET (docs/design.md
// "WebSocket handshakes the pod refuses"), buffered as any answer: its framing is read before
// the relay strips Transfer-Encoding, so a chunked refusal's chunk goes out at once.
test("on, a refused WebSocket handshake answered chunked: a read that completes a chunk goes out at once", async () => {
  const s = await setup(optionsOf({ [`${N}proxy-buffering`]: "on" }));
  const { client, pod } = await s.get("Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n");
  pod.write("HTTP/1.1 403 Forbidden\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n");
  expect(await bodyOf(client, 5, "the first chunk")).toBe("hello");
  expect(split(client.data()).head).toStartWith("HTTP/1.1 403 ");
  pod.write("0\r\n\r\n");
  await eventually(() => s.proxy.records.length === 1, 5_000, "the access record");
  expect(s.proxy.records[0]).toMatchObject({ status: 403, error: null, bytesOut: 5 });
});

test("on, a refused WebSocket handshake with Content-Length 99999: held as any answer (4047 bytes: its head is 49)", async () => {
  const s = await setup(optionsOf({ [`${N}proxy-buffering`]: "on" }));
  const { client, pod } = await s.get("Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n");
  pod.write("HTTP/1.1 403 Forbidden\r\nContent-Length: 99999\r\n\r\n");
  pod.write("hello");
  pod.write(X);
  expect(await bodyOf(client, 1, "the first buffer")).toBe(("hello" + X).slice(0, 4047));
  expect(split(client.data()).head).toStartWith("HTTP/1.1 403 ");
});
