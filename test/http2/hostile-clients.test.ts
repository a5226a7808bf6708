// Hostile HTTP/2 clients against every listener that speaks HTTP/2. First, malformed requests
// (RFC 9113 §8.1.1, §8.2, §8.3) sent as raw frames to every listener
// that speaks HTTP/2: Bun.serve over TLS (the HTTPS port) and h2c (the plain port), and the
// node:http2 listener over TLS and h2c (the HTTPS port while a gRPC or client-certificate route
// exists; the plain port's h2c server behind the front while a gRPC route exists). Each is a
// stream error: nothing reaches the backend, and the next stream on the same connection is
// served. Connection-specific fields, `te` other than "trailers", uppercase names and bad
// pseudo-headers are malformed by §8.2.1-8.2.2 and §8.3.1 (a MUST); nginx 1.22, measured side
// by side, resets only the field characters it refuses (CR, LF, NUL, uppercase, a space or
// colon in a name) and otherwise strips connection-specific fields and forwards the request,
// or answers 400 to bad pseudo-headers. Portico follows the RFC: never forwarded.
// Then a client that asks for large answers and never opens its flow-control window
// (RFC 9113 §6.9): each stream must pull a bounded amount from its upstream, not the answer;
// and an HPACK bomb.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startH2cServer, type H2cServer } from "../../src/http2/cleartext.ts";
import { createProxyHandler } from "../../src/proxy/pipeline/handler.ts";
import { serveOptions } from "../../src/proxy/pipeline/listener.ts";
import { lookup } from "../../src/table/lookup.ts";
import { makeBackend, makeTable, quietLog, startProxy, testConfig, type TestProxy } from "../proxy/helpers.ts";
import { rawBackend, type RawBackend } from "../proxy/raw.ts";
import { eventually } from "../wait.ts";
import { FRAME, frame, headersFrame, hpack, rawH2, rawH2c, type RawH2 } from "./frames.ts";
import { startTlsProxy, type TlsProxy } from "./helpers.ts";

type Fields = ReadonlyArray<readonly [string, string]>;
const req = (path: string, extra: Fields = [], authority = "a.test"): Fields => [[":method", "GET"], [":scheme", "https"], [":authority", authority], [":path", path], ...extra];

/** Each is refused before the handler; "reset" is RST_STREAM PROTOCOL_ERROR, "400" an answer. */
const MALFORMED: ReadonlyArray<readonly [string, Fields]> = [
  ["connection", req("/m", [["connection", "keep-alive"]])],
  ["keep-alive", req("/m", [["keep-alive", "5"]])],
  ["proxy-connection", req("/m", [["proxy-connection", "keep-alive"]])],
  ["transfer-encoding", req("/m", [["transfer-encoding", "chunked"]])],
  ["upgrade", req("/m", [["upgrade", "websocket"]])],
  ["te other than trailers", req("/m", [["te", "gzip"]])],
  ["an uppercase field name", req("/m", [["X-Upper", "1"]])],
  ["CR LF in a value (a field line injected on HTTP/1.1 upstream)", req("/m", [["x-a", "b\r\nx-injected: 1"]])],
  ["NUL in a value", req("/m", [["x-a", "b\0c"]])],
  ["a space in a name", req("/m", [["x a", "1"]])],
  ["CR LF in :authority", req("/m", [], "a.test\r\nx-injected: 1")],
  ["a space and CR LF in :path (a request line injected upstream)", req("/m HTTP/1.1\r\nx-injected: 1\r\nx:")],
  ["an unknown pseudo-header", req("/m", [[":foo", "bar"]])],
  ["a pseudo-header after a regular field", [[":method", "GET"], [":scheme", "https"], ["x-a", "1"], [":authority", "a.test"], [":path", "/m"]]],
  ["two :path", req("/m", [[":path", "/n"]])],
  ["no :path", [[":method", "GET"], [":scheme", "https"], [":authority", "a.test"]]],
  ["a :path not starting with /", req("m")],
  [":status in a request", req("/m", [[":status", "200"]])],
];

const H2_PROTOCOL_ERROR = 1;
const H2_ENHANCE_YOUR_CALM = 0xb;

type Kind = "bun-tls" | "bun-h2c" | "node-tls" | "node-h2c";
const KINDS: readonly Kind[] = ["bun-tls", "bun-h2c", "node-tls", "node-h2c"];

/** The answer each /big request gets: far more than any buffer on the way may hold. */
const BIG = 64 * 1024 * 1024;
const CHUNK = Buffer.alloc(64 * 1024, 0x78);
/** Per /big connection: bytes written, and whether the socket refuses more (its buffer full). */
const pushes: Array<{ sent: number; blocked: boolean }> = [];

let be: RawBackend;
beforeAll(async () => {
  be = await rawBackend(() => null, (head, sock) => {
    if (!head.startsWith("GET /big")) {
      sock.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
      return;
    }
    const st = { sent: 0, blocked: false };
    pushes.push(st);
    sock.write(`HTTP/1.1 200 OK\r\nContent-Length: ${BIG}\r\n\r\n`);
    const push = () => {
      st.blocked = false;
      while (st.sent < BIG && !sock.destroyed) {
        st.sent += CHUNK.length;
        if (!sock.write(CHUNK)) {
          st.blocked = true;
          sock.once("drain", push);
          return;
        }
      }
    };
    push();
  });
});
afterAll(async () => {
  await be.stop();
});

for (const kind of KINDS) describe(kind, () => {
  let connect: () => Promise<RawH2>;
  let idle: () => boolean;
  let stop: () => Promise<void>;
  beforeAll(() => {
    const table = makeTable([{ host: null, path: "/", backend: makeBackend([be.port]) }]);
    if (kind === "bun-tls" || kind === "node-tls") {
      const p: TlsProxy = startTlsProxy(table, { kind: kind === "bun-tls" ? "bunh2" : "h2" });
      connect = () => rawH2(p.port);
      idle = () => p.handler.inflight.count === 0;
      stop = p.stop;
    } else if (kind === "bun-h2c") {
      const p: TestProxy = startProxy(table);
      connect = () => rawH2c(p.port);
      idle = () => p.handler.inflight.count === 0;
      stop = p.stop;
    } else {
      const handler = createProxyHandler({ config: testConfig(), table: () => table, lookup, log: quietLog, scheme: "http" });
      const s: H2cServer = startH2cServer({ hostname: "127.0.0.1", handler: serveOptions(handler), log: quietLog });
      connect = () => rawH2c(s.port);
      idle = () => handler.inflight.count === 0;
      stop = () => s.stop(true);
    }
  });
  afterAll(() => stop());

  for (const [name, fields] of MALFORMED) {
    test(`${name}: the stream is reset PROTOCOL_ERROR, nothing upstream; the connection serves the next stream`, async () => {
      const before = be.hits.length;
      const c = await connect();
      try {
        c.write(headersFrame(1, fields));
        await eventually(() => c.resets().has(1) || c.frames.some((f) => f.type === FRAME.HEADERS && f.id === 1), 5_000, "stream 1 ended");
        expect(c.resets().get(1)).toBe(H2_PROTOCOL_ERROR);
        c.write(headersFrame(3, req("/after")));
        await eventually(() => c.frames.some((f) => f.type === FRAME.HEADERS && f.id === 3), 5_000, "stream 3 answered");
        // ":status: 200" as HPACK static index 8 (RFC 7541 Appendix A).
        expect(c.frames.find((f) => f.type === FRAME.HEADERS && f.id === 3)!.payload[0]).toBe(0x88);
        expect(c.goaway()).toBeNull();
        await eventually(idle, 5_000, "the handler idle");
        expect(be.hits.slice(before).map((q) => q.line)).toEqual(["GET /after HTTP/1.1"]);
      } finally {
        c.close();
      }
    });
  }

  // A client that never opens its window (SETTINGS_INITIAL_WINDOW_SIZE 0, no WINDOW_UPDATE)
  // cannot take a byte of DATA. Backpressure must reach the upstream read: the pods' sockets
  // fill and stop, each stream having pulled a few MiB (what Bun's fetch reads ahead, plus the
  // kernel's socket buffers: docs/bun-upstream-reports.md), never the 64 MiB answers. nginx
  // holds proxy_buffer_size per stream with ingress-nginx's proxy-buffering off.
  test("streams whose client never opens its window pull a bounded part of a 64 MiB answer; others are served", async () => {
    const streams = 8;
    const from = pushes.length;
    const c = await connect();
    try {
      c.write(frame(FRAME.SETTINGS, 0, 0, Buffer.from([0, 4, 0, 0, 0, 0]))); // INITIAL_WINDOW_SIZE 0
      c.write(Buffer.concat(Array.from({ length: streams }, (_, i) => headersFrame(1 + 2 * i, req(`/big${i}`)))));
      const mine = () => pushes.slice(from);
      // Stalled: every pod's socket full, and no byte taken since the last look (ten looks
      // apart: a reader still pulling, however slowly, moves a count in between).
      let last = "";
      let still = 0;
      await eventually(() => {
        if (mine().some((p) => p.sent >= BIG)) return true; // pulled whole: the expect below fails
        const now = mine().map((p) => `${p.sent}${p.blocked ? "b" : ""}`).join(",");
        still = mine().length === streams && mine().every((p) => p.blocked) && now === last ? still + 1 : 0;
        last = now;
        return still >= 10;
      }, 30_000, "every pod's socket full and still", 50);
      const most = Math.max(...mine().map((p) => p.sent));
      expect(most).toBeLessThan(BIG / 2);
      // Another client meanwhile.
      const other = await connect();
      other.write(headersFrame(1, req("/after")));
      await eventually(() => other.frames.some((f) => f.type === FRAME.HEADERS && f.id === 1), 5_000, "another client answered");
      other.close();
    } finally {
      c.close();
    }
    // The client gone, every stream is aborted upstream.
    await eventually(idle, 10_000, "the handler idle");
  });

  // An HPACK bomb (RFC 7541 §7.3: a decoder bounds the decoded list, not the block): one
  // 4,000-byte field added to the dynamic table, then referenced 16,000 times by one-byte
  // indexes, 64 MB decoded from 20 KB sent. Bun.serve ends the connection (GOAWAY), node:http2
  // resets the stream, both ENHANCE_YOUR_CALM; neither decodes it whole.
  test("an HPACK bomb (a 4 KB table entry indexed 16,000 times) never reaches the handler; the next connection is served", async () => {
    const before = be.hits.length;
    const value = Buffer.alloc(4000, 0x61);
    // Literal with incremental indexing, new name (RFC 7541 §6.2.1): 0x40, "x-a", then the
    // value's length as a 7-bit prefix integer (§5.1): 127 + 3873 = 127 + 33 + 30 * 128.
    const entry = Buffer.concat([Buffer.from([0x40, 3]), Buffer.from("x-a"), Buffer.from([0x7f, 33 + 128, 30]), value]);
    const block = Buffer.concat([hpack(req("/bomb")), entry, Buffer.alloc(16_000, 0x80 | 62)]); // index 62: that entry
    const parts: Buffer[] = [];
    for (let at = 0; at < block.length; at += 16_000) parts.push(block.subarray(at, at + 16_000));
    const c = await connect();
    try {
      c.write(Buffer.concat(parts.map((part, i) => i === 0 ? frame(FRAME.HEADERS, 1, 1, part) : frame(FRAME.CONTINUATION, i === parts.length - 1 ? 4 : 0, 1, part))));
      await eventually(() => c.resets().has(1) || c.goaway() !== null, 5_000, "the stream or the connection refused");
      expect(c.resets().get(1) ?? c.goaway()).toBe(H2_ENHANCE_YOUR_CALM);
      expect(c.frames.some((f) => f.type === FRAME.HEADERS && f.id === 1)).toBe(false);
    } finally {
      c.close();
    }
    const next = await connect();
    try {
      next.write(headersFrame(1, req("/after")));
      await eventually(() => next.frames.some((f) => f.type === FRAME.HEADERS && f.id === 1), 5_000, "the next connection answered");
    } finally {
      next.close();
    }
    await eventually(idle, 5_000, "the handler idle");
    expect(be.hits.slice(before).map((q) => q.line)).toEqual(["GET /after HTTP/1.1"]);
  });

  // RFC 9113 §8.3.1: a Host naming another host than :authority SHOULD be malformed. Bun.serve
  // resets it; the node:http2 listener answers 400 (request.ts). nginx 1.22 answers 400 too.
  test("a Host field naming another host than :authority is refused, never routed by either", async () => {
    const before = be.hits.length;
    const c = await connect();
    try {
      c.write(headersFrame(1, req("/m", [["host", "b.test"]])));
      await eventually(() => c.resets().has(1) || c.frames.some((f) => f.type === FRAME.HEADERS && f.id === 1), 5_000, "stream 1 ended");
      if (kind.startsWith("bun")) expect(c.resets().get(1)).toBe(H2_PROTOCOL_ERROR);
      else expect(c.frames.find((f) => f.type === FRAME.HEADERS && f.id === 1)!.payload[0]).toBe(0x8c); // 400
      await eventually(idle, 5_000, "the handler idle");
      expect(be.hits.length).toBe(before);
    } finally {
      c.close();
    }
  });
});
