// WebSocket ping and pong keep a tunnel open, as behind ingress-nginx. nginx relays an upgraded
// connection's bytes and re-arms proxy_read_timeout on every event of either side
// (ngx_http_upstream_process_upgraded, src/http/ngx_http_upstream.c), so a control frame counts
// as much as a data frame; applications commonly keep a WebSocket open with pings only. Portico
// relays the frames and re-arms the route's idle time on each (docs/design.md "Upstream timeouts").
import { afterAll, describe, expect, test } from "bun:test";
import { makeBackend, makeTable, optionsOf, RAW_LISTENERS, startRawProxy, type RawListener } from "./helpers.ts";
import { namedBackend } from "./raw.ts";
import { framesOf } from "./ws-frames.ts";
import { eventually } from "../wait.ts";
import { WS_BUFFER_LIMIT } from "../../src/proxy/upstream/websocket.ts";

const N = "nginx.ingress.kubernetes.io/";
const cleanup: Array<() => unknown> = [];
afterAll(async () => {
  for (const f of cleanup.reverse()) await f();
});

/** `ws`'s client (Bun's built-in one), the calls used here: it shows and sends control frames. */
interface WsClient {
  readonly readyState: number;
  readonly bufferedAmount: number;
  on(ev: "open" | "ping" | "pong", f: (data: Buffer) => void): void;
  on(ev: "message", f: (data: Buffer, isBinary: boolean) => void): void;
  on(ev: "close", f: (code: number) => void): void;
  on(ev: "error", f: (e: Error) => void): void;
  ping(data?: Buffer): void;
  pong(data?: Buffer): void;
  terminate(): void;
}
const WsCtor = (require("ws") as { WebSocket: new (url: string, protocols: string[], o: { rejectUnauthorized: boolean }) => WsClient }).WebSocket;

const PING = 0x9;
const PONG = 0xa;
const CLOSE = 0x8;

/** A raw pod behind a route with proxy-read-timeout `readTimeout` s, and a `ws` client through the proxy on `kind`. */
async function tunnel(kind: RawListener, readTimeout = "1") {
  const pod = await namedBackend("pod");
  cleanup.push(() => pod.stop());
  const p = startRawProxy(kind, makeTable([{ host: null, backend: makeBackend([pod.port]), options: optionsOf({ [`${N}proxy-read-timeout`]: readTimeout }) }]));
  cleanup.push(() => p.stop());
  // The HTTPS listener's certificate is a generated default one: not verified on loopback.
  const ws = new WsCtor(`${p.tls ? "wss" : "ws"}://127.0.0.1:${p.port}/chat`, [], { rejectUnauthorized: false });
  const seen = { code: null as number | null, pings: [] as string[], pongs: [] as string[], messages: [] as string[] };
  ws.on("close", (code) => { seen.code = code; });
  ws.on("message", (d, binary) => { seen.messages.push(`${binary ? "b" : "t"}:${d.toString("latin1")}`); });
  ws.on("ping", (d) => { seen.pings.push(d.toString("latin1")); });
  ws.on("pong", (d) => { seen.pongs.push(d.toString("latin1")); });
  cleanup.push(() => ws.terminate());
  await new Promise<void>((resolve, reject) => {
    ws.on("open", () => resolve());
    ws.on("error", (e) => reject(e));
  });
  await eventually(() => pod.hits.length === 1, 5_000, "the pod's upgraded connection");
  const atPod = () => framesOf(pod.hits[0]!.after);
  return { pod, p, ws, seen, atPod };
}

/**
 * Once the keep-alive frames stop, the tunnel is quiet, and closed after the read timeout on
 * both sides, as nginx's proxy_read_timeout ends an idle upgraded connection: the pod has seen
 * no Close until then; the client gets 1001 (Going Away, RFC 6455 §7.4.1), the pod a Close
 * frame, and the access record is the 101 ended by StreamIdle (docs/design.md "Upstream timeouts").
 */
async function closesOnceQuiet({ p, seen, atPod }: Awaited<ReturnType<typeof tunnel>>): Promise<void> {
  expect(atPod().some((f) => f.op === CLOSE)).toBe(false);
  await eventually(() => seen.code !== null, 10_000, "the proxy to close the tunnel once the keep-alive stopped");
  expect(seen.code).toBe(1001);
  await eventually(() => atPod().some((f) => f.op === CLOSE), 5_000, "the pod's Close frame");
  await eventually(() => p.records.length === 1, 5_000, "the access record");
  expect(p.records[0]).toMatchObject({ status: 101, error: "StreamIdle" });
}

/** Calls `f(i)` for i = 0..count-1, 300 ms apart; resolves after the last. */
function every300ms(count: number, f: (i: number) => void): Promise<void> {
  return new Promise((resolve) => {
    let i = 0;
    const t = setInterval(() => {
      f(i++);
      if (i === count) {
        clearInterval(t);
        resolve();
      }
    }, 300);
    cleanup.push(() => clearInterval(t));
  });
}

// Both listeners a WebSocket reaches: Bun.serve, and the HTTP/2 listener's HTTP/1.1 side.
for (const kind of RAW_LISTENERS) describe(kind, () => {
  test("proxy-read-timeout 1: a pod pinging every 300 ms keeps a data-less WebSocket open, and the client's pongs reach it", async () => {
    const t = await tunnel(kind);
    const { pod, ws, seen, atPod } = t;
    // Eight pings 300 ms apart: 2.4 s with no data frame, twice the read timeout, no gap of it.
    // An unmasked Ping with payload "k<i>" from the server side (RFC 6455 §5.5.2).
    await every300ms(8, (i) => pod.hits[0]!.socket.write(Buffer.from([0x89, 0x02, 0x6b, 0x30 + i])));
    expect(seen.code).toBeNull();
    expect(ws.readyState).toBe(1);
    // The pod's pings reach the client as nginx's tunnel passes them, and the client's own
    // answers (RFC 6455 §5.5.3: the Ping's payload) reach the pod.
    await eventually(() => seen.pings.length === 8, 10_000, "eight pings at the client");
    expect(seen.pings).toEqual(["k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7"]);
    await eventually(() => atPod().filter((f) => f.op === PONG).length === 8, 5_000, "eight pongs at the pod");
    expect(atPod().filter((f) => f.op === PONG).map((f) => f.payload)).toEqual(["k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7"]);
    await closesOnceQuiet(t);
  });

  test("proxy-read-timeout 1: a client pinging every 300 ms keeps a data-less WebSocket open, and its pings reach the pod", async () => {
    const t = await tunnel(kind);
    const { ws, seen, atPod } = t;
    await every300ms(8, (i) => {
      if (ws.readyState === 1) ws.ping(Buffer.from(`c${i}`));
    });
    expect(seen.code).toBeNull();
    expect(ws.readyState).toBe(1);
    await eventually(() => atPod().filter((f) => f.op === PING).length === 8, 10_000, "eight pings at the pod");
    expect(atPod().filter((f) => f.op === PING).map((f) => f.payload)).toEqual(["c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7"]);
    // Each ping is answered (Bun answers it at once; the pod's own pongs are relayed too).
    await eventually(() => seen.pongs.length >= 8, 5_000, "the client's pongs");
    await closesOnceQuiet(t);
  });

  test("a pod's pong to a relayed ping reaches the client with its payload", async () => {
    const { pod, ws, seen, atPod } = await tunnel(kind);
    ws.ping(Buffer.from("hi"));
    await eventually(() => atPod().some((f) => f.op === PING && f.payload === "hi"), 5_000, "the ping at the pod");
    // Bun's own answer carries the same payload; the pod's, a distinct one, shows the relay.
    pod.hits[0]!.socket.write(Buffer.from([0x8a, 0x03, 0x70, 0x6f, 0x64]));
    await eventually(() => seen.pongs.includes("pod"), 5_000, "the pod's pong at the client");
    expect(seen.pongs).toContain("hi");
  });

  // Empty payloads are ordinary (RFC 6455 §5.5.2: a Ping "MAY include Application data"; §5.6:
  // a data frame may be 0 bytes): gorilla/websocket's WriteMessage(PingMessage, nil) and ws's
  // ping() send them, and nginx's byte tunnel passes them like any other frame. Bun's
  // ServerWebSocket answers 0 for an empty frame it sent, the same as for one it dropped
  // (docs/design.md "The WebSocket relay"): such a frame must not close the pair.
  test("a pod's empty ping, pong and data frames reach the client and the tunnel stays open", async () => {
    const { pod, ws, seen, atPod } = await tunnel(kind, "60");
    const s = pod.hits[0]!.socket;
    s.write(Buffer.from([0x89, 0x00])); // Ping, no payload
    s.write(Buffer.from([0x8a, 0x00])); // Pong, no payload
    s.write(Buffer.from([0x82, 0x00])); // binary message, 0 bytes
    s.write(Buffer.from([0x81, 0x00])); // text message, 0 bytes
    s.write(Buffer.from([0x81, 0x03, 0x65, 0x6e, 0x64])); // "end": everything before it was relayed
    await eventually(() => seen.messages.length === 3 || seen.code !== null, 10_000, "the pod's frames at the client");
    expect(seen.code).toBeNull();
    expect(seen.messages).toEqual(["b:", "t:", "t:end"]);
    expect(seen.pings).toEqual([""]);
    expect(seen.pongs).toEqual([""]);
    // The client's answer to the empty ping reaches the pod, and nothing closed the pod's side.
    await eventually(() => atPod().some((f) => f.op === PONG), 5_000, "the client's pong at the pod");
    expect(atPod().filter((f) => f.op === PONG).map((f) => f.payload)).toEqual([""]);
    expect(atPod().some((f) => f.op === CLOSE)).toBe(false);
    expect(ws.readyState).toBe(1);
    // And the other way: the client's empty ping and pong reach the pod.
    ws.ping();
    ws.pong();
    await eventually(() => atPod().some((f) => f.op === PING), 5_000, "the client's empty ping at the pod");
    expect(atPod().filter((f) => f.op === PING).map((f) => f.payload)).toEqual([""]);
    await eventually(() => atPod().filter((f) => f.op === PONG).length === 2, 5_000, "the client's empty pong at the pod");
    expect(seen.code).toBeNull();
  });

  // The relay's bound on what waits for the pod (docs/design.md "proxy-send-timeout") holds
  // for control frames as for data: a client pinging a pod that reads nothing gets the pair
  // closed with 1011 (RFC 6455 §7.4.1), not a queue that grows as long as it pings.
  for (const op of ["ping", "pong"] as const) test(`a client flooding ${op}s to a pod that reads nothing gets the pair closed at the buffer bound`, async () => {
    const { pod, ws, seen } = await tunnel(kind, "60");
    pod.hits[0]!.socket.pause();
    const payload = Buffer.alloc(125, 0x70); // the largest control payload (RFC 6455 §5.5)
    // Four times the bound, far past it plus the loopback socket buffers; sent in slices as the
    // client's own queue drains, so the pile-up is in the proxy.
    const most = Math.ceil((4 * WS_BUFFER_LIMIT) / payload.length);
    let sent = 0;
    await new Promise<void>((resolve) => {
      const pump = () => {
        while (sent < most && seen.code === null && ws.readyState === 1 && ws.bufferedAmount < 1024 * 1024) {
          // Unsolicited pongs are allowed (RFC 6455 §5.5.3) and relayed as pings are.
          if (op === "ping") ws.ping(payload);
          else ws.pong(payload);
          sent++;
        }
        if (sent >= most || seen.code !== null || ws.readyState !== 1) resolve();
        else setTimeout(pump, 1);
      };
      pump();
    });
    await eventually(() => seen.code !== null, 10_000, "the proxy to close the client's side");
    expect(seen.code).toBe(1011);
    expect(sent).toBeLessThan(most);
  });
});
