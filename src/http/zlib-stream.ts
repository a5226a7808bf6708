// A streamed answer's encoder for Content-Encoding br or gzip, node:zlib's, at the configured
// level, wrapped as a web stream whose memory stays bounded (docs/design.md "Response
// compression").
//
// br: at brotli-level (ngx_brotli's brotli_comp_level) with ngx_brotli's default window
// (brotli_window 512k, a 2^19-byte window; ingress-nginx's template sets none). Bun 1.4.5's
// CompressionStream("brotli") takes neither: it encodes at quality 11 with a 4 MiB window,
// measured on 1.4.5 at about 1 MiB/s of text against ~65 MiB/s at quality 4 (and no output
// before about 1.3 MiB of input), so any client asking `br` for a large streamed answer held a
// core for the whole download.
// gzip: at gzip-level (nginx's gzip_comp_level; ingress-nginx's default 1, config.go), where
// CompressionStream("gzip") takes no level and encodes at zlib's default 6. nginx's gzip_window
// and gzip_hash defaults are zlib's own (MAX_WBITS, MAX_MEM_LEVEL - 1), as node:zlib's are.
// node:zlib's encoders take both settings and run off the event loop.
//
// Each chunk of the pod's body is handed to the encoder only once the previous one was encoded
// and everything encoded so far was taken by the client's side, so what waits in Portico for a
// client that stops reading is the encoder's window and one chunk's output, whatever the
// encoder's own stream buffers would allow, and through the pipe the pod's body is no longer
// read. A reader that cancels errors the writable side, which makes pipeThrough cancel the
// pod's body (WHATWG Streams ReadableStreamPipeTo: an errored destination cancels the source);
// a pod's body that fails errors the client's.
//
// After each chunk of the pod's body the encoder is flushed (gzip: Z_SYNC_FLUSH; br:
// BROTLI_OPERATION_FLUSH) and its output handed on before the next chunk is taken, as nginx does
// with proxy_buffering off (ingress-nginx's default): every upstream read is passed on as a flush
// buffer (ngx_http_upstream.c ngx_http_upstream_non_buffered_filter, ngx_http_proxy_module.c's
// non-buffered chunked filter set `flush`), on which ngx_http_gzip_filter_module deflates with
// Z_SYNC_FLUSH and ngx_brotli encodes with BROTLI_OPERATION_FLUSH. Without it an encoder emits
// only when its buffers fill or at the end, so a pod that streams a small piece and pauses had
// that piece held here (docs/design.md "Response compression").
import { constants, createBrotliCompress, createGzip, type BrotliOptions } from "node:zlib";

/** ngx_brotli's brotli_window default (512k). */
const NGX_BROTLI_WINDOW_BITS = 19;

/** node:zlib's brotli settings for ngx_brotli at `quality`: the streamed and the one-shot encoder's. */
export function brotliOptions(quality: number): BrotliOptions {
  return { params: { [constants.BROTLI_PARAM_QUALITY]: quality, [constants.BROTLI_PARAM_LGWIN]: NGX_BROTLI_WINDOW_BITS } };
}

/**
 * Told once, when the encoded body has ended (`failed` false: every byte was handed on) or
 * failed (a reader that cancelled, a source that failed), with the bytes handed on: what the
 * client is sent of the body, nginx's $body_bytes_sent for a compressed answer (the gzip and
 * brotli filters run before the write filter that counts it, ngx_http_write_filter_module.c).
 */
export type EncodedEnd = (bytes: number, failed: boolean) => void;

/**
 * The encoder as a web stream pair, and `sent()`: the bytes handed on so far. A source that fails
 * is heard of by the encoder only later, through the pipe (pipeThrough aborts the writable side
 * a turn or more after the source errored), so whoever sees the failure first reads the count
 * here rather than wait for `ended`.
 */
export interface EncoderStream extends ReadableWritablePair<Uint8Array, Uint8Array> {
  sent(): number;
}

export function brotliStream(quality: number, ended?: EncodedEnd): EncoderStream {
  return encoderStream(createBrotliCompress(brotliOptions(quality)), constants.BROTLI_OPERATION_FLUSH, ended);
}

export function gzipStream(level: number, ended?: EncodedEnd): EncoderStream {
  return encoderStream(createGzip({ level }), constants.Z_SYNC_FLUSH, ended);
}

/**
 * The most handed to the encoder in one write: node:zlib's own chunk size (zlib.constants
 * Z_DEFAULT_CHUNK, 16 KiB), with which Bun 1.4.5's encoder hands on what it made before the next
 * write (measured: 256 KiB of text in 16 KiB writes gave 58526 of 62490 bytes before the end).
 */
const ENCODER_SLICE = 16 * 1024;

/** What the wrapper uses of a node:zlib encoder (a Transform stream). */
interface Encoder {
  write(chunk: Uint8Array, cb: (error?: Error | null) => void): boolean;
  flush(kind: number, cb: () => void): void;
  end(): void;
  destroy(): void;
  on(event: "data", f: (d: Buffer) => void): unknown;
  on(event: "error", f: (e: unknown) => void): unknown;
  once(event: "end", f: () => void): unknown;
}

/** `flushKind`: the encoder's flush that ends each chunk's output on a byte the client can decode. */
function encoderStream(z: Encoder, flushKind: number, ended?: EncodedEnd): EncoderStream {
  let out: ReadableStreamDefaultController<Uint8Array> | null = null;
  let bytes = 0;
  let told = false;
  const tell = (failed: boolean) => {
    if (told) return;
    told = true;
    ended?.(bytes, failed);
  };
  let sink: WritableStreamDefaultController | null = null;
  let failed: unknown = null;
  // The one write waiting (WritableStream runs them one at a time): for its chunk to be
  // encoded (`encoded`), then for the reader to take the output (`taken`).
  let encoded: (() => void) | null = null;
  let taken: (() => void) | null = null;
  const call = (f: (() => void) | null) => f?.();
  const woken = () => {
    const w = taken;
    taken = null;
    call(w);
  };
  const fail = (e: unknown) => {
    if (failed !== null) return;
    failed = e ?? new Error("compressed stream failed");
    try {
      out?.error(failed);
    } catch {}
    try {
      sink?.error(failed);
    } catch {}
    z.destroy();
    tell(true);
    const e2 = encoded;
    encoded = null;
    call(e2);
    woken();
  };
  z.on("data", (d: Buffer) => {
    try {
      out?.enqueue(new Uint8Array(d.buffer, d.byteOffset, d.byteLength));
      bytes += d.byteLength;
    } catch {}
  });
  z.once("end", () => {
    try {
      out?.close();
    } catch {}
    if (failed === null) tell(false);
  });
  // Every error, not only the first: an EventEmitter without an error listener throws, which
  // would end the process (a second one may come from a write that was under way at a cancel).
  z.on("error", fail);
  const readable = new ReadableStream<Uint8Array>(
    {
      start(c) {
        out = c;
      },
      pull() {
        woken();
      },
      cancel(reason) {
        fail(reason ?? new Error("compressed body cancelled"));
      },
    },
    { highWaterMark: 1 },
  );
  const writable = new WritableStream<Uint8Array>({
    start(c) {
      sink = c;
    },
    async write(chunk) {
      if (failed !== null) throw failed;
      // In slices: Bun 1.4.5's node:zlib keeps back the output of a large write (a 256 KiB one
      // gave only the 10-byte gzip header) until the next write or the end, where Node's hands
      // it on; a pod that sends its body in one piece and then goes quiet would leave the client
      // with nothing (docs/bun-upstream-reports.md, docs/design.md "Response compression").
      for (let at = 0; at < chunk.byteLength && failed === null; at += ENCODER_SLICE) {
        const slice = at === 0 && chunk.byteLength <= ENCODER_SLICE ? chunk : chunk.subarray(at, at + ENCODER_SLICE);
        await new Promise<void>((resolve) => {
          encoded = resolve;
          z.write(slice, () => {
            encoded = null;
            resolve();
          });
        });
      }
      // The chunk's output, all of it decodable now, before the next chunk is taken (above).
      // Measured on Bun 1.4.5: the flush's output is emitted before its callback runs.
      if (failed === null) {
        await new Promise<void>((resolve) => {
          encoded = resolve;
          z.flush(flushKind, () => {
            encoded = null;
            resolve();
          });
        });
      }
      while (failed === null && (out?.desiredSize ?? 1) <= 0) await new Promise<void>((resolve) => (taken = resolve));
      if (failed !== null) throw failed;
    },
    close() {
      z.end();
    },
    abort(reason) {
      fail(reason ?? new Error("upstream body aborted"));
    },
  });
  return { readable, writable, sent: () => bytes };
}
