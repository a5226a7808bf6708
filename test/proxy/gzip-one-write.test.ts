// A pod that sends a large body in one write and then goes quiet (a long poll, a stream that
// pauses): the client must be sent what the encoder made of it, not only the gzip header. nginx's
// gzip filter passes on each output buffer deflate fills (ngx_http_gzip_filter_module.c,
// ngx_http_gzip_filter_deflate: a full buffer is chained out before more input is taken), and
// Node's zlib hands on a write's output; Bun 1.4.5's node:zlib keeps back the output of a large
// write until the next one (docs/bun-upstream-reports.md), so the encoder is fed in slices
// (http/zlib-stream.ts).
import { afterEach, expect, test } from "bun:test";
import { brotliDecompressSync, constants, gunzipSync } from "node:zlib";
import { eventually } from "../wait.ts";
import { makeBackend, makeTable, startProxy } from "./helpers.ts";
import { chunkedData, rawBackend, rawClient } from "./raw.ts";

const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

// 256 KiB of pseudo-random words: compressible, yet deflate emits blocks as it goes (a repeated
// line would stay in its window).
let seed = 7;
const words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu"];
let text = "";
while (text.length < 256 * 1024) {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  text += words[seed % words.length] + (seed % 7 === 0 ? "\n" : " ");
}
const BODY = text.slice(0, 256 * 1024);

/** The body bytes of a chunked answer received so far (a chunk still arriving is cut). */
const dechunkSoFar = (s: string): Buffer => Buffer.from(chunkedData(s), "latin1");

/** What the gzip bytes so far decode to (a sync flush: no end of stream is expected yet). */
function decodedSoFar(raw: string): string {
  const end = raw.indexOf("\r\n\r\n");
  if (end < 0) return "";
  try {
    return gunzipSync(dechunkSoFar(raw.slice(end + 4)), { finishFlush: constants.Z_SYNC_FLUSH }).toString("latin1");
  } catch {
    return "";
  }
}

test.each(["one write with the head", "the head, then the body in one write"])(
  "gzip: a pod's 256 KiB chunked body sent in one piece, then quiet (no last chunk): the client is sent most of it compressed (%s)",
  async (how) => {
    const head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n";
    const chunk = `${BODY.length.toString(16)}\r\n${BODY}\r\n`;
    const pod = await rawBackend((req) => {
      // The connection stays open and the body unfinished: the pod has nothing more to say yet.
      if (how.startsWith("one")) req.socket.write(head + chunk);
      else req.socket.write(head, () => req.socket.write(chunk));
      return null;
    });
    cleanup.push(() => pod.stop());
    const p = startProxy(makeTable([{ host: null, backend: makeBackend([pod.port]) }]), { gzip: true });
    cleanup.push(() => p.stop());
    const c = await rawClient(p.port);
    cleanup.push(() => c.destroy());
    c.write("GET /quiet HTTP/1.1\r\nHost: a.test\r\nAccept-Encoding: gzip\r\n\r\n");
    // Half the body is well past what deflate may keep in its window and pending buffer (32 KiB
    // window); before the slicing, only the 10-byte header came.
    await eventually(() => decodedSoFar(c.data()).length >= BODY.length / 2, 5_000, "most of the body, compressed, while the pod is quiet");
    const raw = c.data();
    expect(raw.slice(0, raw.indexOf("\r\n\r\n")).toLowerCase()).toContain("content-encoding: gzip");
    expect(BODY.startsWith(decodedSoFar(raw))).toBe(true);
  },
);

// A pod that streams one small piece and pauses (a streaming API, progress output, a long poll):
// the client must be able to decode that piece at once. ingress-nginx proxies with
// proxy_buffering off, so each upstream read goes down the filters as a flush buffer
// (ngx_http_upstream.c ngx_http_upstream_non_buffered_filter; the proxy module's non-buffered
// chunked filter likewise), and ngx_http_gzip_filter_module deflates it with Z_SYNC_FLUSH
// (ngx_http_gzip_filter_deflate, ctx->flush), ngx_brotli with BROTLI_OPERATION_FLUSH. Before the
// wrapper flushed, gzip gave only its 10-byte header and br nothing until more came or the end.
const PIECE = "progress: 42 of 100 items done; next batch is being prepared by the pod now.....\n".slice(0, 100).padEnd(100, ".");

/** What the br bytes so far decode to (flushed: no end of stream is expected yet). */
function brDecodedSoFar(raw: string): string {
  const end = raw.indexOf("\r\n\r\n");
  if (end < 0) return "";
  try {
    return brotliDecompressSync(dechunkSoFar(raw.slice(end + 4)), { finishFlush: constants.BROTLI_OPERATION_FLUSH }).toString("latin1");
  } catch {
    return "";
  }
}

test.each(["gzip", "br"])("%s: a pod's one 100-byte chunk, then quiet (no last chunk): the client can decode those 100 bytes", async (coding) => {
  expect(PIECE.length).toBe(100);
  const head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n";
  const pod = await rawBackend((req) => {
    // The connection stays open and the body unfinished: the pod has nothing more to say yet.
    req.socket.write(`${head}${PIECE.length.toString(16)}\r\n${PIECE}\r\n`);
    return null;
  });
  cleanup.push(() => pod.stop());
  const p = startProxy(makeTable([{ host: null, backend: makeBackend([pod.port]) }]), { gzip: true, brotli: true });
  cleanup.push(() => p.stop());
  const c = await rawClient(p.port);
  cleanup.push(() => c.destroy());
  c.write(`GET /progress HTTP/1.1\r\nHost: a.test\r\nAccept-Encoding: ${coding}\r\n\r\n`);
  const decoded = () => (coding === "gzip" ? decodedSoFar(c.data()) : brDecodedSoFar(c.data()));
  await eventually(() => decoded().length >= PIECE.length, 5_000, `the ${coding} piece decodable while the pod is quiet`);
  const raw = c.data();
  expect(raw.slice(0, raw.indexOf("\r\n\r\n")).toLowerCase()).toContain(`content-encoding: ${coding}`);
  expect(decoded()).toBe(PIECE);
});
