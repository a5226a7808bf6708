// A request with `Upgrade` that is not a WebSocket handshake, over TLS with ALPN http/1.1.
// node:http hands such a request to the listener's 'upgrade' event with the raw socket; it is
// served as an ordinary request (RFC 9110 §7.8: a server may ignore Upgrade), as on the plain
// port: the backend sees neither Upgrade nor `Connection: upgrade`, the answer is streamed with
// backpressure, and the upstream request is aborted when the client goes. Backends here count
// the bytes they managed to write, so assertions are on what the backend observed.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import net from "node:net";
import tls from "node:tls";
import { makeBackend, makeTable } from "../proxy/helpers.ts";
import { rawBackend, statuses } from "../proxy/raw.ts";
import { startTlsProxy, type TlsProxy } from "./helpers.ts";
import { eventually } from "../wait.ts";

/** Far more than the socket buffers on both hops and any stream queue can hold. */
const BIG = 64 * 1024 * 1024;
const PIECE = Buffer.alloc(64 * 1024, 0x61);

interface BigBackend {
  readonly port: number;
  /** Request heads received. */
  readonly heads: string[];
  /** Body bytes the backend handed to its socket so far (writes stop while the socket is full). */
  written(): number;
  /** Whether the connection that carried the big body has closed. */
  closed(): boolean;
  stop(): Promise<void>;
}

/**
 * Answers `GET /big` with BIG bytes (Content-Length, or chunked when `chunked`), written only
 * while the socket takes them (waiting for 'drain'), and anything else with a short body.
 */
async function bigBackend(chunked = false): Promise<BigBackend> {
  const heads: string[] = [];
  const sockets = new Set<net.Socket>();
  let written = 0;
  let closed = false;
  const server = net.createServer((s) => {
    sockets.add(s);
    s.on("error", () => {});
    let buf = "";
    s.on("data", (d: Buffer) => {
      buf += d.toString("latin1");
      const end = buf.indexOf("\r\n\r\n");
      if (end < 0) return;
      const head = buf.slice(0, end);
      buf = buf.slice(end + 4);
      heads.push(head);
      if (!head.startsWith("GET /big ")) {
        s.write("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nsmall");
        return;
      }
      s.once("close", () => {
        closed = true;
      });
      s.write(chunked ? "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" : `HTTP/1.1 200 OK\r\nContent-Length: ${BIG}\r\n\r\n`);
      const pump = () => {
        while (written < BIG && !s.destroyed) {
          written += PIECE.length;
          if (chunked) s.write(`${PIECE.length.toString(16)}\r\n`);
          let more = s.write(PIECE);
          if (chunked) more = s.write("\r\n");
          if (!more) {
            s.once("drain", pump);
            return;
          }
        }
        if (written >= BIG && chunked && !s.destroyed) s.write("0\r\n\r\n");
      };
      pump();
    });
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  return {
    port: (server.address() as net.AddressInfo).port,
    heads,
    written: () => written,
    closed: () => closed,
    stop: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A TLS client offering only http/1.1 that sends `bytes` and never reads (paused). */
function stalledClient(port: number, bytes: string): Promise<tls.TLSSocket> {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: "127.0.0.1", port, rejectUnauthorized: false, ALPNProtocols: ["http/1.1"], servername: "a.test" }, () => {
      s.pause();
      s.write(bytes);
      resolve(s);
    });
    s.on("error", () => {});
    s.once("error", reject);
  });
}

/** Everything a TLS http/1.1 client reads after sending `bytes`, until the server closes. */
function exchange(port: number, bytes: string): Promise<Buffer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const s = tls.connect({ host: "127.0.0.1", port, rejectUnauthorized: false, ALPNProtocols: ["http/1.1"], servername: "a.test" }, () => s.write(bytes));
    const t = setTimeout(() => s.destroy(), 20_000);
    s.on("data", (d: Buffer) => chunks.push(d));
    s.on("error", () => {});
    s.on("close", () => {
      clearTimeout(t);
      resolve(Buffer.concat(chunks));
    });
  });
}

const upgradeX = (path: string) => `GET ${path} HTTP/1.1\r\nHost: a.test\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\n`;

for (const chunked of [false, true]) describe(chunked ? "chunked upstream body" : "Content-Length upstream body", () => {
  let be: BigBackend;
  let proxy: TlsProxy;
  beforeAll(async () => {
    be = await bigBackend(chunked);
    proxy = startTlsProxy(makeTable([{ host: null, path: "/", backend: makeBackend([be.port]) }]));
  });
  afterAll(async () => {
    await proxy.stop();
    await be.stop();
  });

  test("Upgrade: x is an ordinary request: the answer, then close; the backend sees no Upgrade", async () => {
    const got = (await exchange(proxy.port, upgradeX("/small"))).toString("latin1");
    expect(statuses(got)).toEqual([200]);
    expect(got.endsWith("\r\n\r\nsmall")).toBe(true);
    expect(got.toLowerCase()).toContain("\r\nconnection: close\r\n");
    const head = be.heads.find((h) => h.startsWith("GET /small "))!.toLowerCase();
    expect(head).not.toContain("upgrade");
  });

  test("a client that never reads: the upstream read stalls well short of the body", async () => {
    const before = be.written();
    const c = await stalledClient(proxy.port, upgradeX("/big"));
    try {
      // The backend got the request and started writing.
      await eventually(() => be.written() - before > 1024 * 1024);
      // Read whole (as before), the body would be taken from the backend at loopback speed.
      // Streamed, the backend's writes stop once both hops' socket buffers are full.
      // Showing that the writes stay stopped takes a wait: the whole body is not written in 5 s.
      expect(await eventually(() => be.written() - before >= BIG, 5_000).then(() => "all written", () => "held")).toBe("held");
      expect(be.written() - before).toBeLessThan(BIG / 2);
      expect(be.closed()).toBe(false);
    } finally {
      c.destroy();
    }
    // The client left: the upstream request is aborted, its connection closed short of the body.
    await eventually(be.closed);
    expect(be.written() - before).toBeLessThan(BIG);
  });
});

test("a client that leaves mid-body: the upstream request is aborted short of the body", async () => {
  const be = await bigBackend();
  const proxy = startTlsProxy(makeTable([{ host: null, path: "/", backend: makeBackend([be.port]) }]));
  try {
    let got = 0;
    const c = tls.connect({ host: "127.0.0.1", port: proxy.port, rejectUnauthorized: false, ALPNProtocols: ["http/1.1"], servername: "a.test" }, () => c.write(upgradeX("/big")));
    c.on("error", () => {});
    c.on("data", (d: Buffer) => {
      got += d.length;
      // Leave once the answer is flowing.
      if (got >= 1024 * 1024) c.destroy();
    });
    await eventually(() => c.destroyed, 10_000);
    // The backend sees its connection dropped before it could write the whole body.
    await eventually(be.closed, 10_000);
    expect(be.written()).toBeLessThan(BIG);
    await eventually(() => proxy.records.some((r) => r.path === "/big"));
    expect(proxy.records.find((r) => r.path === "/big")!.error).toBe("ClientClosed");
  } finally {
    await proxy.stop();
    await be.stop();
  }
});

test("a client that reads gets the whole streamed body (chunked when the upstream's length is unknown)", async () => {
  const be = await bigBackend(true);
  const proxy = startTlsProxy(makeTable([{ host: null, path: "/", backend: makeBackend([be.port]) }]));
  try {
    const got = await exchange(proxy.port, upgradeX("/big"));
    const end = got.indexOf("\r\n\r\n");
    const head = got.subarray(0, end).toString("latin1").toLowerCase();
    expect(head.startsWith("http/1.1 200 ")).toBe(true);
    expect(head).toContain("\r\ntransfer-encoding: chunked");
    // De-chunk and count.
    let i = end + 4;
    let total = 0;
    for (;;) {
      const eol = got.indexOf("\r\n", i);
      const size = Number.parseInt(got.subarray(i, eol).toString("latin1"), 16);
      if (size === 0) break;
      total += size;
      i = eol + 2 + size + 2;
    }
    expect(total).toBe(BIG);
  } finally {
    await proxy.stop();
    await be.stop();
  }
});

test("a POST with Upgrade: h2c and a Content-Length body is forwarded with its body (as on Bun.serve); a chunked one is a 400", async () => {
  const be = await rawBackend();
  const proxy = startTlsProxy(makeTable([{ host: null, path: "/", backend: makeBackend([be.port]) }]));
  try {
    const sized = (await exchange(proxy.port, "POST /u HTTP/1.1\r\nHost: a.test\r\nUpgrade: h2c\r\nConnection: Upgrade, close\r\nContent-Length: 5\r\n\r\nhello")).toString("latin1");
    expect(statuses(sized)).toEqual([200]);
    const got = be.requests().find((q) => q.line.startsWith("POST /u "))!;
    expect(got.body).toBe("hello");
    expect(got.head.toLowerCase()).not.toContain("upgrade");
    const chunked = (await exchange(proxy.port, "POST /c HTTP/1.1\r\nHost: a.test\r\nUpgrade: h2c\r\nConnection: Upgrade\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")).toString("latin1");
    expect(statuses(chunked)).toEqual([400]);
    // Anything still running has reached the backend once the handler is idle.
    await eventually(() => proxy.handler.inflight.count === 0, 5_000, "the handler idle");
    expect(be.lines().some((l) => l.startsWith("POST /c "))).toBe(false);
  } finally {
    await proxy.stop();
    await be.stop();
  }
});
