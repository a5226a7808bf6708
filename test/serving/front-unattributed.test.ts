// A loopback listener behind a TCP front (src/serving/front.ts) learns who the client is only
// from the front's record of the connection (docs/design.md "SSL passthrough", "PROXY
// protocol"). A request on a connection the front holds no record of (here: one the test opens
// to the listener directly, as another local process could) has the loopback as its socket
// address; judged as that, an allow list holding 127.0.0.1 would let it in and X-Forwarded-For
// would carry 127.0.0.1. It gets 400 instead, and never reaches the handler. Real sockets: the
// front's Bun.listen, a Bun.serve on loopback, clients over TCP.
import { afterAll, beforeAll, expect, test } from "bun:test";
import net from "node:net";
import type { Server } from "bun";
import { silentLogger } from "../../src/log/logger.ts";
import type { RequestServer } from "../../src/proxy/index.ts";
import { startTcpFront, unattributed, type TcpFront } from "../../src/serving/front.ts";

let front: TcpFront;
let inner: Server<unknown>;
const seen: string[] = [];

beforeAll(() => {
  inner = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    // The composition the serving modules use (plain.ts, serve.ts, tls-split.ts, gateway-ports.ts).
    fetch(req, server) {
      const p = front.peer(server as unknown as RequestServer, req, inner.port!);
      if (p === null) return unattributed();
      const a = p.requestIP(req)?.address ?? "";
      seen.push(a);
      return new Response(a);
    },
  });
  front = startTcpFront({
    hostname: "127.0.0.1",
    port: 0,
    reusePort: false,
    log: silentLogger,
    name: "test-front",
    maxFirstBytes: 1,
    choose: () => ({ kind: "loopback", port: inner.port! }),
    firstBytesTimeoutMs: 5_000,
    connectTimeoutMs: 5_000,
    proxyProtocolTimeoutMs: 5_000,
    proxyProtocolTrusted: ["127.0.0.0/8"],
  });
});
afterAll(() => {
  front.stop(true);
  inner.stop(true);
});

/** Writes `bytes` to 127.0.0.1:port and returns everything read until the server closes (or the head's Content-Length is in). */
function exchange(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, "127.0.0.1", () => s.write(bytes));
    let got = "";
    s.on("data", (d) => {
      got += d.toString("latin1");
      const m = /\r\ncontent-length: (\d+)\r\n/i.exec(got);
      const at = got.indexOf("\r\n\r\n");
      if (m && at >= 0 && got.length >= at + 4 + Number(m[1])) {
        s.destroy();
        resolve(got);
      }
    });
    s.on("error", reject);
    s.on("close", () => resolve(got));
  });
}

const GET = "GET / HTTP/1.1\r\nHost: a.example\r\n\r\n";

test("through the front, the handler sees the PROXY header's client", async () => {
  const r = await exchange(front.port, `PROXY TCP4 203.0.113.7 192.0.2.1 40000 80\r\n${GET}`);
  expect(r.startsWith("HTTP/1.1 200 ")).toBe(true);
  expect(r.endsWith("\r\n\r\n203.0.113.7")).toBe(true);
});

test("a connection the front did not make gets 400, never the loopback as its client", async () => {
  seen.length = 0;
  const r = await exchange(inner.port!, GET);
  expect(r.startsWith("HTTP/1.1 400 ")).toBe(true);
  expect(r.endsWith("\r\n\r\n400 Bad Request\n")).toBe(true);
  expect(seen).toEqual([]);
});
