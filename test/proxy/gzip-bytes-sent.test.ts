// What the access line counts of a streamed compressed answer. nginx's $body_bytes_sent is
// counted by the write filter (ngx_http_write_filter_module.c), after the gzip and brotli
// filters: the bytes the client is sent, compressed; $upstream_response_length is the pod's
// body as read (u->state->response_length). Portico's JSON line writes the first as bytes_out.
// A raw pod sends a chunked text body over the size read whole (respond.ts), so the answer is
// compressed as it streams; a raw client reads the chunked answer and counts its body.
import { afterEach, describe, expect, test } from "bun:test";
import net from "node:net";
import { gunzipSync, brotliDecompressSync } from "node:zlib";
import { compileLogTemplate } from "../../src/log/template.ts";
import { eventually } from "../wait.ts";
import { makeBackend, makeTable, rawRequest, startProxy } from "./helpers.ts";
import { chunkedData, rawBackend } from "./raw.ts";

const TEXT = "line of streamed text, compressible\n".repeat(1000);
const chunk = (s: string) => `${s.length.toString(16)}\r\n${s}\r\n`;
const POD_BODY = TEXT.repeat(3);
const STREAMED = `HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n${chunk(TEXT).repeat(3)}0\r\n\r\n`;

/** The body of a chunked answer, its chunk-size lines taken out. */
const dechunk = (s: string): Buffer => Buffer.from(chunkedData(s), "latin1");

const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

describe("a streamed compressed answer's bytes sent", () => {
  test.each(["gzip", "br"])("%s: bytes_out and $body_bytes_sent are the compressed bytes the client read; $upstream_response_length the pod's", async (encoding) => {
    const pod = await rawBackend(() => STREAMED);
    cleanup.push(() => pod.stop());
    const p = startProxy(makeTable([{ host: null, backend: makeBackend([pod.port]) }]), {
      gzip: true, brotli: true, accessLogTemplate: "$body_bytes_sent|$upstream_response_length", accessLog: "stdout",
    });
    cleanup.push(() => p.stop());
    const raw = await rawRequest(p.port, `GET /stream HTTP/1.1\r\nHost: a.test\r\nAccept-Encoding: ${encoding}\r\nConnection: close\r\n\r\n`, 10_000);
    const end = raw.indexOf("\r\n\r\n");
    const head = raw.slice(0, end).toLowerCase();
    expect(head).toContain(`content-encoding: ${encoding}`);
    // Bun frames a streamed body chunked, or with Content-Length when the stream has ended before
    // the head goes out (a small compressed output may).
    const body = head.includes("transfer-encoding: chunked") ? dechunk(raw.slice(end + 4)) : Buffer.from(raw.slice(end + 4), "latin1");
    // The whole answer came: it decodes to the pod's body.
    const decoded = encoding === "gzip" ? gunzipSync(body) : brotliDecompressSync(body);
    expect(decoded.toString("latin1")).toBe(POD_BODY);
    await eventually(() => p.records.length === 1, 10_000, "the access record");
    const rec = p.records[0]!;
    expect(rec.bytesOut).toBe(body.length);
    expect(compileLogTemplate("$body_bytes_sent|$upstream_response_length", "default")(rec)).toBe(`${body.length}|${POD_BODY.length}`);
  });

  // The pod's body is cut by a reset: the meter sees the failure and finishes the request before
  // the encoder hears of it through the pipe, so the count must come from the encoder's output so
  // far, not from its end. A text of pseudo-random words: compressible, yet the deflate encoder
  // emits blocks as it goes (a repeated line would stay in its window).
  test("gzip, the pod resetting mid-body: bytes_out is the compressed bytes the client read, not 0", async () => {
    let seed = 7;
    const words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu"];
    const piece = () => {
      let t = "";
      while (t.length < 32 * 1024) {
        seed = (seed * 1103515245 + 12345) % 2147483648;
        t += words[seed % words.length] + (seed % 7 === 0 ? "\n" : " ");
      }
      return chunk(t);
    };
    let podSocket: net.Socket | null = null;
    let podDone = false;
    const pod = await rawBackend((req) => {
      const sock = req.socket;
      podSocket = sock;
      // Up to 1 MiB of body, one piece a turn, never its last chunk. (A body in one write is
      // gzip-one-write.test.ts's case: Bun's node:zlib held back a large write's output.)
      let i = 0;
      const next = () => {
        if (sock.destroyed || i++ === 32) return void (podDone = true);
        sock.write(piece(), () => setImmediate(next));
      };
      sock.write("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n", () => next());
      return null;
    });
    cleanup.push(() => pod.stop());
    const p = startProxy(makeTable([{ host: null, backend: makeBackend([pod.port]) }]), { gzip: true, accessLog: "stdout" });
    cleanup.push(() => p.stop());
    const got: Buffer[] = [];
    let closed = false;
    const s = net.connect(p.port, "127.0.0.1");
    cleanup.push(() => s.destroy());
    s.on("data", (d: Buffer) => void got.push(d));
    s.on("error", () => {});
    s.on("close", () => (closed = true));
    s.write("GET /cut HTTP/1.1\r\nHost: a.test\r\nAccept-Encoding: gzip\r\n\r\n");
    const received = () => Buffer.concat(got).toString("latin1");
    // The pod cuts once the relay is at rest: all its body sent, and what the client has read no
    // longer growing (the same count over 20 polls): the encoder has handed on all it will before
    // the cut, and Bun has written it. The count the record keeps is what was handed to Bun; only
    // at rest is that exactly what the client read, whatever the machine's load.
    let last = -1;
    let same = 0;
    await eventually(() => {
      const n = got.reduce((a, b) => a + b.length, 0);
      same = n === last ? same + 1 : 0;
      last = n;
      const r = received();
      const at = r.indexOf("\r\n\r\n");
      return podDone && at > 0 && r.length > at + 4 + 1024 && same >= 20;
    }, 20_000, "the pod's body sent and the client's count at rest", 25);
    (podSocket as unknown as net.Socket).resetAndDestroy();
    await eventually(() => closed, 10_000, "the client's connection ended");
    await eventually(() => p.records.length === 1, 10_000, "the access record");
    const raw = received();
    const end = raw.indexOf("\r\n\r\n");
    const head = raw.slice(0, end).toLowerCase();
    expect(head).toContain("content-encoding: gzip");
    expect(head).toContain("transfer-encoding: chunked");
    // Cut: never ended with the last chunk (RFC 9112 §7.1).
    expect(raw.endsWith("\r\n0\r\n\r\n")).toBe(false);
    const body = dechunk(raw.slice(end + 4));
    expect(body.length).toBeGreaterThan(1024);
    const rec = p.records[0]!;
    expect(rec.error).toBe("UpstreamAborted");
    expect(rec.bytesOut).toBe(body.length);
  });
});
