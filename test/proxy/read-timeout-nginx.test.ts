// proxy-read-timeout as nginx's one read timer. nginx (src/http/ngx_http_upstream.c) arms
// `ngx_add_timer(upstream->read, u->conf->read_timeout)` while it waits for the response head,
// again after every read of an unbuffered body (ngx_http_upstream_process_non_buffered_request;
// ngx_event_pipe.c for a buffered one), and for an upgraded connection on every event of either
// side (ngx_http_upstream_process_upgraded). On expiry after the head was sent the connection is
// closed: the client's body ends truncated; a tunnel quiet both ways is closed. So the annotation
// bounds the head, each gap of a body and a quiet WebSocket (docs/design.md "Upstream timeouts").
import { afterAll, expect, test } from "bun:test";
import net from "node:net";
import { createNginxSettings } from "../../src/runtime/nginx-settings.ts";
import { makeBackend, makeTable, optionsOf, quietLog, startProxy, testConfig } from "./helpers.ts";
import { namedBackend, rawBackend, type RawBackendConn } from "./raw.ts";
import { eventually } from "../wait.ts";
import { closeCode } from "./ws-frames.ts";

const N = "nginx.ingress.kubernetes.io/";
const cleanup: Array<() => unknown> = [];
afterAll(async () => {
  for (const f of cleanup.reverse()) await f();
});

const HEAD = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n";

/** A pod that answers a chunked head and one chunk, then `rest` after `restAfterMs` (never when null). */
async function stallingPod(restAfterMs: number | null) {
  const pod = await rawBackend((_req, conn: RawBackendConn) => {
    conn.socket.write(`${HEAD}5\r\nhello\r\n`);
    if (restAfterMs !== null) setTimeout(() => conn.socket.end("6\r\n world\r\n0\r\n\r\n"), restAfterMs);
    return null;
  });
  cleanup.push(() => pod.stop());
  return pod;
}

/** A raw client: what came back and whether the proxy closed the connection. */
function rawClient(port: number, bytes: string) {
  const got = { text: "", closed: false };
  const sock = net.connect(port, "127.0.0.1", () => sock.write(bytes));
  sock.on("data", (d: Buffer) => { got.text += d.toString("latin1"); });
  sock.on("close", () => { got.closed = true; });
  sock.on("error", () => {});
  cleanup.push(() => sock.destroy());
  return got;
}

const GET = "GET /stream HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
const bodyOf = (raw: string) => raw.slice(raw.indexOf("\r\n\r\n") + 4);

test("proxy-read-timeout 1: a body silent after its first chunk is cut after the read timeout (no last chunk)", async () => {
  const pod = await stallingPod(null);
  // The flags' own idle time (5 min) would hold it: the annotation must set the body's.
  const p = startProxy(makeTable([{ host: null, backend: makeBackend([pod.port]), options: optionsOf({ [`${N}proxy-read-timeout`]: "1" }) }]));
  cleanup.push(() => p.stop());
  const got = rawClient(p.port, GET);
  await eventually(() => got.closed, 10_000, "the proxy to close the silent body's connection");
  expect(got.text.startsWith("HTTP/1.1 200 OK\r\n")).toBe(true);
  // The chunk the pod sent, and no terminating `0\r\n\r\n`: a truncated transfer (RFC 9112 §7.1).
  expect(bodyOf(got.text)).toBe("5\r\nhello\r\n");
  await eventually(() => p.records.length === 1, 5_000, "the access record");
  expect(p.records[0]).toMatchObject({ status: 200, error: "StreamIdle" });
});

test("proxy-read-timeout 1 with proxy-buffering on: the buffering path waits at most the read timeout too", async () => {
  // ngx_event_pipe re-arms the same read_timeout between reads when buffering; on expiry the
  // answer ends without its last chunk (docs/design.md "Response buffering": the holder touches
  // the relay's idle watchdog). The pod's one write completes a chunk, which nginx's chunked
  // filter hands on at once with the head (as test/proxy/response-buffering.test.ts pins for the
  // same answer): the client has the 200 and that chunk, then the cut.
  const pod = await stallingPod(null);
  const p = startProxy(makeTable([{ host: null, backend: makeBackend([pod.port]), options: optionsOf({ [`${N}proxy-read-timeout`]: "1", [`${N}proxy-buffering`]: "on" }) }]));
  cleanup.push(() => p.stop());
  const got = rawClient(p.port, GET);
  await eventually(() => got.closed, 10_000, "the proxy to end the held answer");
  expect(got.text.startsWith("HTTP/1.1 200 OK\r\n")).toBe(true);
  expect(bodyOf(got.text)).toBe("5\r\nhello\r\n");
  await eventually(() => p.records.length === 1, 5_000, "the access record");
  expect(p.records[0]).toMatchObject({ status: 200, error: "StreamIdle" });
});

test("portico.dev/response-timeout, the Portico name, sets the body's idle time too", async () => {
  const pod = await stallingPod(null);
  const p = startProxy(makeTable([{ host: null, backend: makeBackend([pod.port]), options: optionsOf({ "portico.dev/response-timeout": "1s" }) }]));
  cleanup.push(() => p.stop());
  const got = rawClient(p.port, GET);
  await eventually(() => got.closed, 10_000, "the proxy to close the silent body's connection");
  expect(bodyOf(got.text)).toBe("5\r\nhello\r\n");
});

test("portico.dev/stream-idle-timeout set beside proxy-read-timeout wins for the body", async () => {
  // A 1.5 s gap: past the read timeout (1 s), within the stream idle time (20 s).
  const pod = await stallingPod(1_500);
  const options = optionsOf({ [`${N}proxy-read-timeout`]: "1", "portico.dev/stream-idle-timeout": "20s" });
  expect([options.responseTimeoutMs, options.streamIdleTimeoutMs]).toEqual([1_000, 20_000]);
  const p = startProxy(makeTable([{ host: null, backend: makeBackend([pod.port]), options }]));
  cleanup.push(() => p.stop());
  const got = rawClient(p.port, GET);
  await eventually(() => got.closed, 10_000, "the whole body");
  expect(bodyOf(got.text)).toBe("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n");
  await eventually(() => p.records.length === 1, 5_000, "the access record");
  expect(p.records[0]!.error).toBeNull();
});

test("without the annotation the flags apply: --response-timeout bounds the head only, --stream-idle-timeout the gaps", async () => {
  const pod = await stallingPod(1_500);
  // Not compat: Portico's own split (README "Timeouts"), a 1 s head deadline and a 20 s idle time.
  const p = startProxy(makeTable([{ host: null, backend: makeBackend([pod.port]) }]), { responseTimeoutMs: 1_000, streamIdleTimeoutMs: 20_000 });
  cleanup.push(() => p.stop());
  const got = rawClient(p.port, GET);
  await eventually(() => got.closed, 10_000, "the whole body");
  expect(bodyOf(got.text)).toBe("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n");
});

test("the ConfigMap key proxy-read-timeout 1 sets both flags: a silent body is cut after 1 s", async () => {
  // ingress-nginx's ConfigMap sets proxy_read_timeout for every location (nginx.tmpl), the same
  // one timer; a flag given on the command line still wins (docs/design.md "ingress-nginx's ConfigMap").
  const ref = { namespace: "ingress-nginx", name: "ingress-nginx-controller" };
  const settingsWith = (explicit: Set<"streamIdleTimeoutMs">) => {
    const s = createNginxSettings({ base: testConfig(), explicit, ref, log: quietLog, onDiagnostics: () => {}, onCompileConfig: () => {} });
    s.update({ apiVersion: "v1", kind: "ConfigMap", metadata: ref, data: { "proxy-read-timeout": "1" } });
    return s.config;
  };
  expect(settingsWith(new Set(["streamIdleTimeoutMs"]))).toMatchObject({ responseTimeoutMs: 1_000, streamIdleTimeoutMs: 300_000 });
  const c = settingsWith(new Set());
  expect([c.responseTimeoutMs, c.streamIdleTimeoutMs]).toEqual([1_000, 1_000]);
  const pod = await stallingPod(null);
  const p = startProxy(makeTable([{ host: null, backend: makeBackend([pod.port]) }]), { responseTimeoutMs: c.responseTimeoutMs, streamIdleTimeoutMs: c.streamIdleTimeoutMs });
  cleanup.push(() => p.stop());
  const got = rawClient(p.port, GET);
  await eventually(() => got.closed, 10_000, "the proxy to close the silent body's connection");
  expect(bodyOf(got.text)).toBe("5\r\nhello\r\n");
});

async function wsPair(annotations: Record<string, string>) {
  const pod = await namedBackend("pod");
  cleanup.push(() => pod.stop());
  const p = startProxy(makeTable([{ host: null, backend: makeBackend([pod.port]), options: optionsOf(annotations) }]));
  cleanup.push(() => p.stop());
  const ws = new WebSocket(`ws://127.0.0.1:${p.port}/chat`);
  const state = { code: null as number | null };
  ws.onclose = (e) => { state.code = e.code; };
  cleanup.push(() => ws.close());
  await new Promise<void>((resolve, reject) => {
    ws.onopen = () => resolve();
    ws.onerror = () => reject(new Error("websocket failed"));
  });
  return { pod, p, ws, state };
}

test("proxy-read-timeout 1: a WebSocket quiet both ways is closed on both sides after the read timeout", async () => {
  const { pod, p, state } = await wsPair({ [`${N}proxy-read-timeout`]: "1" });
  await eventually(() => state.code !== null, 10_000, "the proxy to close the quiet WebSocket");
  // 1001 Going Away (RFC 6455 §7.4.1), to the client and in a Close frame to the pod.
  expect(state.code).toBe(1001);
  await eventually(() => closeCode(pod.hits[0]!.after) !== null, 5_000, "the pod's Close frame");
  expect(closeCode(pod.hits[0]!.after)).toBe(1001);
  await eventually(() => p.records.length === 1, 5_000, "the access record");
  expect(p.records[0]).toMatchObject({ status: 101, error: "StreamIdle" });
});

test("proxy-read-timeout 1: a WebSocket with a frame every 300 ms stays open past the read timeout", async () => {
  const { pod, ws, state } = await wsPair({ [`${N}proxy-read-timeout`]: "1" });
  // Eight frames 300 ms apart: 2.1 s, twice the read timeout, and no gap of it.
  let sent = 0;
  const t = setInterval(() => {
    if (sent < 8) ws.send(`m${sent++}`);
  }, 300);
  cleanup.push(() => clearInterval(t));
  await eventually(() => (pod.hits[0]?.after.toString("latin1").length ?? 0) > 0 && sent === 8, 10_000, "eight frames sent");
  await eventually(() => pod.hits[0]!.after.length >= 8 * (2 + 4 + 2), 5_000, "eight frames at the pod");
  clearInterval(t);
  expect(state.code).toBeNull();
  expect(ws.readyState).toBe(WebSocket.OPEN);
  expect(closeCode(pod.hits[0]!.after)).toBeNull();
});

test("proxy-read-timeout 1: frames from the pod alone every 300 ms keep the WebSocket open too", async () => {
  // ngx_http_upstream_process_upgraded re-arms the read timer on an event of either side.
  const { pod, ws, state } = await wsPair({ [`${N}proxy-read-timeout`]: "1" });
  let got = 0;
  ws.onmessage = () => { got++; };
  let sent = 0;
  // An unmasked text frame "p" from the server side (RFC 6455 §5.2).
  const t = setInterval(() => {
    if (sent < 8) { sent++; pod.hits[0]!.socket.write(Buffer.from([0x81, 0x01, 0x70])); }
  }, 300);
  cleanup.push(() => clearInterval(t));
  await eventually(() => got === 8, 10_000, "eight frames at the client");
  clearInterval(t);
  expect(state.code).toBeNull();
  expect(ws.readyState).toBe(WebSocket.OPEN);
});
