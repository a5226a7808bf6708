// Relaying the upstream response to the client: small declared bodies buffered (to keep
// Content-Length), others streamed under the idle watchdog; the access record finished once.
import { brotliCompressSync } from "node:zlib";
import type { AnswerEncoding } from "../../http/gzip.ts";
import { brotliOptions, brotliStream, gzipStream } from "../../http/zlib-stream.ts";
import { meterResponseBody, nextTurn, type BodyEnd, type Pace } from "../pipeline/body.ts";
import { ProxyError } from "../../http/errors.ts";
import type { ResponseHeaderScan } from "../../http/headers.ts";
import type { AttemptControl } from "./forward-types.ts";
import { GRPC, isGrpc, relayedGrpcStatus } from "../../http/grpc-status.ts";
import { carryTrailers, trailersOf } from "./trailers.ts";
import type { AccessRecord } from "../types.ts";
import { createWatchdog, type Watchdog } from "./watchdog.ts";
import { lastTry } from "../../log/upstream-tries.ts";
import { BufferedBody, responseBuffering } from "./response-buffering.ts";

/** Responses declaring at most this many bytes are buffered to keep Content-Length. */
export const SMALL_BODY = 64 * 1024;

export interface RelayEnd {
  finish(status: number, error: string | null): void;
  /** Set when the body is streamed: Bun then frames it chunked ($bytes_sent, log/template.ts). */
  streamed: boolean;
  /** Switch Bun's request timer off / back on (proxy/pipeline/forward.ts explains why). */
  timerOffNow(): void;
  timerBack(): void;
}

export interface RelayInput {
  readonly up: Response;
  readonly req: Request;
  /** Response headers already filtered (downstreamHeaders). */
  readonly headers: Headers;
  readonly draining: boolean;
  readonly idleMs: number;
  readonly control: AttemptControl;
  readonly rec: AccessRecord;
  /** The request (proxy/pipeline/context.ts Exchange): its end, and Bun's request timer. */
  readonly end: RelayEnd;
  /**
   * The upstream is a gRPC backend (backend-protocol GRPC/GRPCS). Only such a response carries
   * trailers (grpc.ts) or a grpc-status worth recording; the others skip those lookups.
   */
  readonly grpc: boolean;
  /** The upstream response's fields as forward.ts scanned them (Content-Length is read there), or undefined. */
  readonly scan?: ResponseHeaderScan | undefined;
  /**
   * Compress the body so, at this level (http/gzip.ts decided, and set the fields); null or
   * absent: as it is. docs/design.md "Response compression".
   */
  readonly compress?: { readonly encoding: AnswerEncoding; readonly level: number } | null;
  /** limit-rate: the body's pace (pipeline/body.ts); null or absent: as fast as the client takes it. */
  readonly pace?: Pace | null;
  /**
   * proxy-buffering on for this answer (the route's, or the pod's X-Accel-Buffering: yes): the
   * buffer size, a streamed body being held as nginx's buffers hold it (upstream/
   * response-buffering.ts, from `scan`, which the caller then provides); null or absent: each
   * read goes out as it comes.
   */
  readonly bufferSize?: number | null;
}

/**
 * $upstream_response_length: the bytes of the pod's body read (nginx counts them as it reads,
 * u->state->response_length), not those sent to the client, which compression makes differ.
 * Only kept with --access-log-template (rec.tries is null otherwise).
 */
function upstreamLength(rec: AccessRecord, bytes: number): void {
  const t = lastTry(rec.tries);
  if (t !== null) t.length = bytes;
}

/** An upstream body that failed before any of it was sent: 502 either way, coded for the log. */
function bodyError(e: unknown): ProxyError {
  const code = (e as { code?: unknown } | null)?.code;
  const detail = `body: ${typeof code === "string" ? code : ""} ${String((e as Error)?.message ?? e)}`;
  return new ProxyError(code === "InvalidHTTPResponse" ? "UpstreamInvalid" : "UpstreamReset", detail);
}

/** grpc-status the client got from a relayed gRPC call, once its body has ended `how`. */
function relayedStatus(p: RelayInput, how: BodyEnd): number | null {
  if (!p.grpc) return null;
  const up = p.up;
  const s = relayedGrpcStatus(up.headers, trailersOf(up)?.value);
  if (s !== null || !isGrpc(up.headers)) return s;
  // Cut before the upstream's trailers: what the HTTP/2 listener tells the client instead.
  return how === "idle" ? GRPC.DEADLINE_EXCEEDED : how === "cancel" ? GRPC.CANCELLED : GRPC.UNAVAILABLE;
}

function noBody(p: RelayInput): Response {
  const { up, headers } = p;
  p.end.timerBack();
  p.rec.grpcStatus = relayedStatus(p, "done");
  p.end.finish(up.status, null);
  return new Response(null, { status: up.status, statusText: up.statusText, headers });
}

/**
 * The client's response, synchronously when it is ready at once (no body, or a small body
 * already read whole with the headers, as a 13-byte answer always is): no promise, watchdog or
 * extra turn for the common small answer.
 */
export function relayResponse(p: RelayInput): Response | Promise<Response> {
  const { up, req, headers } = p;
  if (p.draining) headers.set("connection", "close");
  // Reading `up.body` makes Bun build a ReadableStream (~2% of a small proxied request), so a
  // bodiless response is recognised from the method and status (RFC 9110 §6.4.1: HEAD, 1xx,
  // 204, 205 and 304 carry none; Bun's fetch gives those a null body, measured on 1.4.5).
  const s = up.status;
  if (req.method === "HEAD" || s < 200 || s === 204 || s === 205 || s === 304) return noBody(p);
  const declared = p.scan === undefined ? up.headers.get("content-length") : p.scan.contentLength;
  // A paced body longer than its unpaced part streams (paced chunk by chunk), even a small one.
  if (declared !== null && Number(declared) <= SMALL_BODY && (p.pace == null || Number(declared) <= p.pace.after + p.pace.rate)) {
    // Bun answers a streamed body with chunked framing whatever the Content-Length header
    // says (measured on 1.4.5, with or without a JS stream in between); only a buffered
    // body keeps its length. Small declared bodies are therefore read whole so most API
    // responses keep their Content-Length. A body that came with the headers is there at
    // once (Bun.peek sees the read fulfilled, measured on 1.4.5); one still arriving is read
    // under the idle watchdog (readSmall).
    const read = up.arrayBuffer();
    if (Bun.peek.status(read) === "fulfilled") return smallResponse(p, Bun.peek(read) as ArrayBuffer);
    return readSmall(p, read);
  }
  return relayStream(p);
}

/**
 * The idle deadline between two reads of the pod while nothing has been sent (readSmall, and
 * heldFirst's first buffer): past it the attempt is aborted with UpstreamTimeout, which fails
 * the read waiting and gets the client a 504.
 */
function bodyIdleDog(p: RelayInput): Watchdog {
  const control = p.control;
  return createWatchdog(p.idleMs, () => control.abort(new ProxyError("UpstreamTimeout", "body idle")));
}

async function readSmall(p: RelayInput, read: Promise<ArrayBuffer>): Promise<Response> {
  const { req, end } = p;
  const dog = bodyIdleDog(p);
  // A body that trickles for long must not meet Bun's request timer (proxy/pipeline/forward.ts checkBody). A watchdog
  // nobody touches is a plain deadline on the shared ticker (no setTimeout per request).
  const long = createWatchdog(20_000, () => end.timerOffNow());
  let buf: ArrayBuffer;
  try {
    buf = await read;
  } catch (e) {
    if (e instanceof ProxyError || req.signal.aborted) throw e;
    throw bodyError(e);
  } finally {
    dog.stop();
    long.stop();
  }
  return smallResponse(p, buf);
}

function smallResponse(p: RelayInput, raw: ArrayBuffer): Response {
  const { up, headers } = p;
  // A body read whole is compressed in one call at the configured level (Bun.gzipSync, native
  // zlib; node:zlib's brotli for br, with the streamed encoder's window), so it keeps a
  // Content-Length: cheaper than a stream (bench/gzip.ts).
  const c = p.compress;
  const buf = c == null ? raw : c.encoding === "gzip" ? Bun.gzipSync(new Uint8Array(raw), { level: c.level as 1 }) : brotliCompressSync(new Uint8Array(raw), brotliOptions(c.level));
  p.rec.bytesOut = buf.byteLength;
  upstreamLength(p.rec, raw.byteLength);
  p.rec.grpcStatus = relayedStatus(p, "done");
  p.end.timerBack();
  p.end.finish(up.status, null);
  const res = new Response(buf, { status: up.status, statusText: up.statusText, headers });
  return p.grpc ? carryTrailers(up, res) : res;
}

/**
 * proxy-buffering: nothing, not even the status, goes out before the first buffer does (nginx's
 * header waits in its write filter for it), so the first read is waited for whole, under the
 * idle deadline between two reads of the pod: a pod idle past it before then is a 504 (the
 * attempt aborted with UpstreamTimeout, as readSmall does), one that fails a 502.
 */
async function heldFirst(p: RelayInput, held: BufferedBody, first: Promise<unknown>): Promise<void> {
  const dog = bodyIdleDog(p);
  held.watch = dog;
  try {
    await first;
  } catch {
    // relayStream reads the failure.
  } finally {
    dog.stop();
  }
}

async function relayStream(p: RelayInput): Promise<Response> {
  const { up, req, headers, idleMs, rec, end } = p;
  if (up.body === null) return p.compress ? smallResponse(p, new ArrayBuffer(0)) : noBody(p);
  end.timerOffNow();
  end.streamed = true;
  // The status goes out with the first byte we send, so an upstream whose framing is broken
  // from the start (a bad chunk size, a reset) must be caught before that: it is a 502, as in
  // nginx ("upstream sent invalid chunked response"), not a 200 cut short. Bun's fetch has
  // parsed whatever arrived with the headers by the next event-loop turn (measured on 1.4.5),
  // so one turn is waited for, not the first chunk: a stream that starts later (server-sent
  // events) is not held back. Breakage after the status has gone out aborts the client
  // connection instead (body.ts).
  const raw = (up.body as ReadableStream<Uint8Array>).getReader();
  // relay.ts scans a buffered answer's fields whenever forward.ts did not.
  const held = p.bufferSize == null || p.scan === undefined ? null : new BufferedBody(raw, responseBuffering(up, p.scan, p.bufferSize));
  const reader = held ?? raw;
  const first = reader.read();
  let firstError: unknown = null;
  first.catch((e: unknown) => {
    firstError = e ?? new Error("upstream body failed");
  });
  if (held === null) await nextTurn();
  else await heldFirst(p, held, first);
  if (firstError !== null) {
    if (req.signal.aborted || (held !== null && firstError instanceof ProxyError)) throw firstError;
    throw bodyError(firstError);
  }
  const c = p.compress;
  const settle = (how: BodyEnd, sent: number) => {
    rec.bytesOut = sent;
    if (how === "done") end.timerBack();
    const err = how === "done" ? null : how === "cancel" ? "ClientClosed" : how === "idle" ? "StreamIdle" : "UpstreamAborted";
    rec.grpcStatus = relayedStatus(p, how);
    end.finish(up.status, err);
  };
  // Compressed: the client is sent the encoder's output, not the pod's body (nginx's
  // $body_bytes_sent counts after its gzip and brotli filters). The pod's body can end before
  // the encoder has flushed its last bytes: the request then finishes when the encoder ends.
  // A pod's body cut short (idle, reset) finishes the request at once, with the encoder's output
  // so far: the encoder hears of the failure only later, through the pipe.
  // Without compression no encoder is built and the meter's count is the bytes sent.
  let encoderEnded = false;
  let podDone = false;
  const encodedEnd = (bytes: number, failed: boolean) => {
    encoderEnded = true;
    // The encoder failed after the pod's body ended: the client left before its last bytes.
    if (podDone) settle(failed ? "cancel" : "done", bytes);
  };
  const enc = c == null ? null : c.encoding === "br" ? brotliStream(c.level, encodedEnd) : gzipStream(c.level, encodedEnd);
  const body = meterResponseBody(reader, idleMs, (how, bytes) => {
    // $upstream_response_length: a held body counts what was read of the pod, sent or not.
    upstreamLength(rec, held === null ? bytes : held.readBytes);
    if (enc === null) return settle(how, bytes);
    if (how === "done" && !encoderEnded) {
      podDone = true;
      return;
    }
    settle(how, enc.sent());
  }, first, p.pace ?? null);
  // A gRPC upstream's trailers go with the body (trailers.ts); the HTTP/2 listener sends them.
  // The metered body through node:zlib's encoder at gzip-level or brotli-level, chunk by chunk
  // (never held whole; http/zlib-stream.ts says why not CompressionStream). A client that goes
  // away cancels the compressor and through it the metered body, which ends the upstream body
  // as an uncompressed relay's cancel does (test/e2e/gzip-nginx.test.ts).
  const out = enc === null ? body : body.pipeThrough(enc);
  const res = new Response(out, { status: up.status, statusText: up.statusText, headers });
  return p.grpc ? carryTrailers(up, res) : res;
}

