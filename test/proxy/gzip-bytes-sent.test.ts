// What the access line counts of a streamed compressed answer. nginx's $body_bytes_sent is
// counted by the write filter (ngx_http_write_filter_module.c), after the gzip and brotli
// filters: the bytes the client is sent, compressed; $upstream_response_length is the pod's
// body as read (u->state->response_length). Portico's JSON line writes the first as bytes_out.
// A raw pod sends a chunked text body over the size read whole (respond.ts), so the answer is
// compressed as it streams; a raw client reads the chunked answer and counts its body.
import { afterEach, describe, expect, test } from "bun:test";
import { gunzipSync, brotliDecompressSync } from "node:zlib";
import { compileLogTemplate } from "../../src/log/template.ts";
import { eventually } from "../wait.ts";
import { makeBackend, makeTable, rawRequest, startProxy } from "./helpers.ts";
import { rawBackend } from "./raw.ts";

const TEXT = "line of streamed text, compressible\n".repeat(1000);
const chunk = (s: string) => `${s.length.toString(16)}\r\n${s}\r\n`;
const POD_BODY = TEXT.repeat(3);
const STREAMED = `HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n${chunk(TEXT).repeat(3)}0\r\n\r\n`;

/** The body of a chunked answer, its chunk-size lines taken out. */
function dechunk(s: string): Buffer {
  const parts: Buffer[] = [];
  let i = 0;
  for (;;) {
    const nl = s.indexOf("\r\n", i);
    if (nl < 0) break;
    const n = parseInt(s.slice(i, nl), 16);
    if (!(n > 0)) break;
    parts.push(Buffer.from(s.slice(nl + 2, nl + 2 + n), "latin1"));
    i = nl + 2 + n + 2;
  }
  return Buffer.concat(parts);
}

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
});
