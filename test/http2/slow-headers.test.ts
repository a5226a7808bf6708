// Slow request heads (slowloris) on the HTTPS listener's HTTP/1.1 side: a client trickling its
// header block is disconnected once --client-header-timeout has passed since the head began
// (nginx client_header_timeout), while other clients on the same listener are served, an idle
// keep-alive connection is left to its idle timeout, and a slow body is left to
// --client-body-timeout. Raw TLS sockets, a raw backend, short timeouts, bounded waits,
// loopback only (docs/design.md, "Request framing and bodies").
import { afterAll, beforeAll, expect, test } from "bun:test";
import tls from "node:tls";
import { makeBackend, makeTable } from "../proxy/helpers.ts";
import { rawBackend, statuses, type RawBackend } from "../proxy/raw.ts";
import { startTlsProxy, type TlsProxy } from "./helpers.ts";
import { eventually } from "../wait.ts";

const HEAD_MS = 500;
let be: RawBackend;
let proxy: TlsProxy;
beforeAll(async () => {
  be = await rawBackend();
  proxy = startTlsProxy(makeTable([{ host: null, path: "/", backend: makeBackend([be.port]) }]), {
    config: { clientHeaderTimeoutMs: HEAD_MS, clientBodyTimeoutMs: 2_000, clientBodyMinRate: null },
  });
});
afterAll(async () => {
  await proxy.stop();
  await be.stop();
});

interface TlsClient {
  write(bytes: string): void;
  data(): string;
  closed(): boolean;
  destroy(): void;
}

/** A TLS connection offering only http/1.1; resolves once the handshake is done. */
function connect(): Promise<TlsClient> {
  return new Promise((resolve, reject) => {
    let data = "";
    let closed = false;
    const s = tls.connect({ host: "127.0.0.1", port: proxy.port, rejectUnauthorized: false, ALPNProtocols: ["http/1.1"], servername: "a.test" }, () => {
      if (s.alpnProtocol !== "http/1.1") return reject(new Error(`ALPN gave ${s.alpnProtocol}`));
      resolve({
        write: (b) => {
          if (!closed && !s.destroyed) s.write(Buffer.from(b, "latin1"));
        },
        data: () => data,
        closed: () => closed,
        destroy: () => s.destroy(),
      });
    });
    s.on("data", (d: Buffer) => (data += d.toString("latin1")));
    s.on("close", () => (closed = true));
    s.on("error", (e) => {
      closed = true;
      reject(e);
    });
  });
}

/** Write `bytes` one byte per `every` ms until written or the connection closes; returns bytes sent. */
async function trickle(c: TlsClient, bytes: string, every: number): Promise<number> {
  let i = 0;
  for (; i < bytes.length && !c.closed(); i++) {
    c.write(bytes[i]!);
    await Bun.sleep(every); // the trickling client's pace, the behaviour under test
  }
  return i;
}

// 40 header bytes at one per 50 ms take 2 s, four times the deadline: never finished in time.
const SLOW_HEAD = `GET /slow HTTP/1.1\r\nHost: a.test\r\nX-Pad: ${"p".repeat(40)}\r\n\r\n`;
const slowSeen = () => be.requests().filter((q) => q.head.startsWith("GET /slow ")).length;

test("a head trickled byte by byte is cut; a client on the same listener meanwhile is served", async () => {
  const slow = await connect();
  const fast = await connect();
  try {
    const trickling = trickle(slow, SLOW_HEAD, 50);
    fast.write("GET /fast HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n");
    await eventually(fast.closed, 5_000);
    expect(statuses(fast.data())).toEqual([200]);
    const sent = await trickling;
    expect(slow.closed()).toBe(true);
    // Cut while trickling, not after the head was complete; nothing reached the backend.
    expect(sent).toBeLessThan(SLOW_HEAD.length);
    expect(slowSeen()).toBe(0);
  } finally {
    slow.destroy();
    fast.destroy();
  }
});

test("a connection that sends nothing after the handshake is cut", async () => {
  const c = await connect();
  try {
    await eventually(c.closed, 5_000);
    expect(c.data()).toBe("");
  } finally {
    c.destroy();
  }
});

test("keep-alive: idle between requests is not a head; the next head trickled is cut", async () => {
  const c = await connect();
  try {
    c.write("GET /k1 HTTP/1.1\r\nHost: a.test\r\n\r\n");
    await eventually(() => statuses(c.data()).length === 1);
    // Idle four deadlines long, on purpose: only the idle timeout (75 s) applies between requests.
    await Bun.sleep(4 * HEAD_MS);
    expect(c.closed()).toBe(false);
    c.write("GET /k2 HTTP/1.1\r\nHost: a.test\r\n\r\n");
    await eventually(() => statuses(c.data()).length === 2);
    expect(statuses(c.data())).toEqual([200, 200]);
    // The third request's head trickles: cut, counted from its first byte.
    const sent = await trickle(c, SLOW_HEAD, 50);
    expect(c.closed()).toBe(true);
    expect(sent).toBeLessThan(SLOW_HEAD.length);
    expect(slowSeen()).toBe(0);
  } finally {
    c.destroy();
  }
});

test("a slow body after a prompt head is left to --client-body-timeout: served whole", async () => {
  const c = await connect();
  try {
    c.write("POST /body HTTP/1.1\r\nHost: a.test\r\nContent-Length: 10\r\nConnection: close\r\n\r\n");
    // 10 bytes over 2 s: four header deadlines, each gap under the body timeout.
    for (let i = 0; i < 10; i++) {
      c.write("b");
      await Bun.sleep(200); // the slow body's pace, the behaviour under test
    }
    await eventually(c.closed, 5_000);
    expect(statuses(c.data())).toEqual([200]);
    expect(be.requests().find((q) => q.head.startsWith("POST /body "))?.body).toBe("b".repeat(10));
  } finally {
    c.destroy();
  }
});

test("200 trickling clients at once are all cut while other requests are served", async () => {
  const N = 200;
  const clients: TlsClient[] = [];
  let ticks = 0;
  // One byte per client every 100 ms, at most 100 ticks (10 s), so a failure ends too.
  const timer = setInterval(() => {
    if (++ticks > 100) return;
    for (const c of clients) c.write("x");
  }, 100);
  try {
    for (let i = 0; i < N; i++) {
      const c = await connect();
      c.write("GET /slow HTTP/1.1\r\nHost: a.test\r\nX-Pad: ");
      clients.push(c);
    }
    let served = 0;
    let sent = 0;
    for (let round = 0; round < 100 && (round < 3 || !clients.every((c) => c.closed())); round++) {
      const rs = await Promise.all(
        Array.from({ length: 5 }, async () => {
          const c = await connect();
          c.write("GET /fast HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n");
          // A client still open after 5 s counts as not served (its statuses are what is asserted).
          await eventually(c.closed, 5_000).catch(() => undefined);
          c.destroy();
          return statuses(c.data());
        }),
      );
      sent += rs.length;
      served += rs.filter((s) => s.length === 1 && s[0] === 200).length;
    }
    expect(served).toBe(sent);
    await eventually(() => clients.every((c) => c.closed()), 10_000);
    // Closed by the listener, unanswered, while still trickling.
    expect(ticks).toBeLessThan(100);
    expect(clients.filter((c) => c.data() !== "")).toHaveLength(0);
    expect(slowSeen()).toBe(0);
  } finally {
    clearInterval(timer);
    for (const c of clients) c.destroy();
  }
}, 60_000);
