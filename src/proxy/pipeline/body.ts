// Body wrappers: count bytes, enforce the body limit on streamed uploads, notice idle streams,
// and report exactly once how a response body ended.
import { ProxyError } from "../../http/errors.ts";
import { createWatchdog, type Watchdog } from "../upstream/watchdog.ts";

export interface RequestBodyOptions {
  /** Max bytes, or null for unlimited. */
  readonly limit: number | null;
  /** The declared Content-Length, or null for a chunked body. */
  readonly declared: number | null;
  /** Longest wait for one read from the client, in ms (nginx client_body_timeout). */
  readonly gapMs: number;
  /** Bytes/s the body must average once gapMs of waiting is used up (positive), or null for no minimum: see bodyMinRate. */
  readonly minRate: number | null;
  /** Whether Bun has given up on the request (its signal): then the body is not whole. */
  readonly clientGone: () => boolean;
  /**
   * The body's end is the message's end: a node listener's request (an HTTP/2 stream's
   * END_STREAM, RFC 9113 §8.1; node's HTTP/1.1 parser emits 'end' only once the chunked tail
   * and trailers are read). Nothing is parsed after it, so the turn's wait below is for
   * Bun.serve's HTTP/1.1 alone, and a request aborted after it is the client leaving (a gRPC
   * call cancelled as soon as it was sent), never bad framing.
   */
  readonly endIsFinal: boolean;
  /** Called on every chunk (keeps the response deadline from firing during a long upload). */
  readonly onProgress: () => void;
  /**
   * Called once, before the stream errors, when the body must not reach the upstream whole:
   * over the limit (BodyTooLarge), too slow (ClientBodyTimeout) or badly framed (BadFraming).
   * The caller aborts the upstream request with it.
   */
  readonly onAbort: (err: ProxyError) => void;
}

export interface MeteredBody {
  readonly stream: ReadableStream<Uint8Array>;
  bytes(): number;
}

/**
 * Resolves after the current I/O callback and the ones already queued (one event-loop turn).
 * Every caller within one turn shares one promise and one setImmediate: under load many
 * requests arrive in one poll, and a timer plus a wake-up each cost more than one shared.
 */
let turn: Promise<void> | null = null;
let endTurn: (() => void) | null = null;
// The executor and the setImmediate callback are module functions over module state: written
// as arrows inside nextTurn they were two closures and two scope objects per turn, which a
// plain sequential GET pays alone (bench/allocations.ts: 4 functions and 2 lexical
// environments per request before, 2 and 0 after; the 2 left are the promise's own resolve
// and reject).
function holdTurn(resolve: () => void): void {
  endTurn = resolve;
  setImmediate(turnEnded);
}
function turnEnded(): void {
  const resolve = endTurn as () => void;
  turn = null;
  endTurn = null;
  resolve();
}
export function nextTurn(): Promise<void> {
  return (turn ??= new Promise(holdTurn));
}

/**
 * Event-loop turns after which Bun.serve over TLS has parsed the rest of the read that held a
 * request: a request pipelined behind it in the same write aborts it on the third turn
 * (measured on 1.4.5, 39 of 39 connections; over TCP on the first). One more for margin.
 */
const TLS_PIPELINE_TURNS = 4;

/**
 * The pipelining guard (docs/design.md, "Request framing and bodies"): wait until Bun.serve has
 * parsed the rest of the client's read, so that a request it gave up on (its signal aborted)
 * is never sent upstream. One turn over TCP; TLS_PIPELINE_TURNS over TLS.
 */
export function pipelineGuard(tls: boolean): Promise<void> {
  // Over TCP the shared turn's own promise: no async frame of its own per request.
  return tls ? tlsTurns() : nextTurn();
}

async function tlsTurns(): Promise<void> {
  for (let i = 0; i < TLS_PIPELINE_TURNS; i++) await nextTurn();
}

/**
 * The client's body as the upstream's, read only when the upstream pulls (so a slow upstream
 * slows the client rather than filling memory). Besides counting and the size limit, it is
 * where a body that must not reach the upstream whole is stopped: erroring the stream makes
 * fetch drop the upstream connection without the last chunk (or short of Content-Length), so
 * the upstream sees an aborted request, never a complete one (measured on Bun 1.4.5).
 *
 * Timing (nginx client_body_timeout, plus a minimum rate in the manner of Apache
 * mod_reqtimeout's MinRate): the clock runs only while a read waits on the client, never while
 * the upstream is not pulling. One wait longer than gapMs ends the body; so does a total wait
 * over gapMs + bytes / minRate, which cuts a client trickling one byte every few seconds (each
 * gap short, the sum not) after about gapMs, while a steady upload at or above minRate never
 * meets it.
 */
/**
 * RequestBodyOptions.minRate from a configured rate, once per request where the options are
 * built: 0 (or less) is no minimum, as null is (--client-body-min-rate's "0 = no minimum";
 * config/values.ts byteRate already maps a flag's 0 to null). A 0 reaching meterRequestBody
 * would divide by it: NaN before the first byte, and every body cut at once.
 */
export function bodyMinRate(rate: number | null): number | null {
  return rate !== null && rate > 0 ? rate : null;
}

export function meterRequestBody(src: ReadableStream<Uint8Array>, o: RequestBodyOptions): MeteredBody {
  const reader = src.getReader();
  let n = 0;
  let waited = 0;
  let stopped: ProxyError | null = null;
  let ctrlRef: ReadableStreamDefaultController<Uint8Array> | null = null;
  const stop = (err: ProxyError) => {
    if (stopped !== null) return;
    stopped = err;
    o.onAbort(err);
    reader.cancel(err).catch(() => {});
    try {
      ctrlRef?.error(err);
    } catch {}
  };
  const allowedWait = (): number => {
    const byRate = o.minRate === null ? Infinity : o.gapMs + (n * 1000) / o.minRate - waited;
    return Math.min(o.gapMs, byRate);
  };
  const stream = new ReadableStream<Uint8Array>(
    {
      start(ctrl) {
        ctrlRef = ctrl;
      },
      async pull(ctrl) {
        if (stopped !== null) return;
        const allowed = allowedWait();
        if (!(allowed > 0)) {
          stop(new ProxyError("ClientBodyTimeout", `below ${o.minRate} bytes/s`));
          return;
        }
        const t0 = performance.now();
        // Armed only while this read waits on the client (a watchdog nobody touches is a deadline).
        const dog = createWatchdog(allowed, () => stop(new ProxyError("ClientBodyTimeout", `no body bytes for ${Math.round(performance.now() - t0)} ms`)));
        let r: Awaited<ReturnType<typeof reader.read>>;
        try {
          r = await reader.read();
        } finally {
          dog.stop();
          waited += performance.now() - t0;
        }
        if (stopped !== null) return;
        if (r.done) {
          // Bun reports the end of a chunked body at the last-chunk line, before it has parsed
          // the trailer section and the final CRLF, and when that tail is malformed it answers
          // 400 itself and aborts the request (measured on 1.4.5). The rest of that read is
          // parsed within the same I/O callback, so one turn later the signal says whether the
          // message really ended; only then may the upstream see the end of the body. The same
          // turn catches a request pipelined right behind the body (Bun aborts this one then).
          if (o.declared !== null && n !== o.declared) {
            stop(new ProxyError("BadFraming", `body ended at ${n} of ${o.declared} bytes`));
            return;
          }
          if (o.endIsFinal) {
            ctrl.close();
            return;
          }
          await nextTurn();
          if (stopped !== null) return;
          if (o.clientGone()) {
            stop(new ProxyError("BadFraming", "request ended badly after its body"));
            return;
          }
          ctrl.close();
          return;
        }
        n += r.value.byteLength;
        o.onProgress();
        if (o.limit !== null && n > o.limit) {
          stop(new ProxyError("BodyTooLarge", "streamed body over limit"));
          return;
        }
        ctrl.enqueue(r.value);
      },
      cancel(reason) {
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
  return { stream, bytes: () => n };
}

// Bun prints any Error a response stream fails with to stderr, stack and all, on every
// truncated transfer. Failing it with `undefined` aborts the connection the same way (no
// last-chunk; measured on 1.4.5) without the noise; the reason goes to our access record.
const SILENT = undefined;

export type BodyEnd = "done" | "cancel" | "idle" | "error";

/** One read of a byte stream (the global and node:stream/web reader types differ in name only). */
export interface ChunkRead {
  readonly done: boolean;
  readonly value?: Uint8Array | undefined;
}
export interface ChunkReader {
  read(): Promise<ChunkRead>;
  cancel(reason?: unknown): Promise<void>;
  /** Set to the body's idle deadline, for a reader that waits on several upstream reads per read (upstream/response-buffering.ts). */
  watch?: Watchdog | null;
}

/**
 * nginx's limit_rate and limit_rate_after for one response (ingress-nginx's limit-rate,
 * limit-rate-after): bytes per second, the bytes sent before it applies, and the request's
 * start (performance.now() ms).
 */
export interface Pace {
  readonly rate: number;
  readonly after: number;
  readonly start: number;
}

/** The longest pause of a paced body between two pieces: a tenth of a second's worth at a time. */
const PACE_STEP_S = 0.1;

/**
 * Wrap an upstream response body. While a read is waiting on the upstream for longer than
 * `idleMs`, the stream is errored (the client sees a truncated transfer) and the upstream
 * cancelled (--stream-idle-timeout). No cut-off while bytes flow. With `pace`, the body goes
 * out no faster than it allows (docs/design.md "Response bandwidth"); without it, no cost per
 * chunk beyond one null check.
 */
export function meterResponseBody(
  reader: ChunkReader,
  idleMs: number,
  onEnd: (how: BodyEnd, bytes: number) => void,
  /** A read already started on `reader` (respond.ts peeks at the first one), used for the first pull. */
  first: Promise<ChunkRead> | null = null,
  pace: Pace | null = null,
): ReadableStream<Uint8Array> {
  let pending = first;
  let n = 0;
  let ended = false;
  // The one timer of a paced body waiting for its next piece, and what ends the wait early.
  let timer: ReturnType<typeof setTimeout> | undefined;
  let wake: (() => void) | null = null;
  const end = (how: BodyEnd) => {
    if (ended) return;
    ended = true;
    dog.stop();
    if (wake !== null) {
      clearTimeout(timer);
      const w = wake;
      wake = null;
      w();
    }
    onEnd(how, n);
  };
  // The pacer's closures exist only for a paced body: a plain one builds neither.
  let paced: ((v: Uint8Array, ctrl: ReadableStreamDefaultController<Uint8Array>) => Promise<void>) | null = null;
  if (pace !== null) {
    const p = pace;
    const pause = (ms: number) =>
      new Promise<void>((resolve) => {
        wake = resolve;
        timer = setTimeout(() => {
          wake = null;
          resolve();
        }, ms);
      });
    // By t seconds after the request started, at most after + rate × (t + 1) bytes have gone out:
    // nginx's ngx_http_write_filter allows `limit_rate × (now − start + 1) − (sent −
    // limit_rate_after)`, a second's worth at once; here continuous rather than by whole seconds.
    // A chunk is cut into the pieces allowed, with a pause between them.
    // `n` counts what was handed to the client, so a client that leaves mid-body is logged with
    // the bytes it was sent, not those read from the pod.
    paced = async (v, ctrl) => {
      let off = 0;
      while (off < v.byteLength && !ended) {
        const t = (performance.now() - p.start) / 1000;
        const allowed = Math.floor(p.after + p.rate * (t + 1)) - n;
        if (allowed > 0) {
          const take = Math.min(allowed, v.byteLength - off);
          ctrl.enqueue(off === 0 && take === v.byteLength ? v : v.subarray(off, off + take));
          off += take;
          n += take;
          continue;
        }
        // Until a tenth of a second's worth (or the rest of the chunk) is allowed.
        const want = Math.min(v.byteLength - off, Math.max(1, Math.ceil(p.rate * PACE_STEP_S)));
        const at = (n + want - p.after) / p.rate - 1;
        await pause(Math.max(1, Math.ceil((at - t) * 1000)));
        dog.touch();
      }
    };
  }
  let ctrlRef: ReadableStreamDefaultController<Uint8Array> | null = null;
  const dog = createWatchdog(idleMs, () => {
    // A ProxyError, so a gRPC upstream (grpc.ts) can tell the client DEADLINE_EXCEEDED.
    const err = new ProxyError("UpstreamTimeout", "upstream stream idle");
    reader.cancel(err).catch(() => {});
    try {
      ctrlRef?.error(SILENT);
    } catch {}
    end("idle");
  });
  if (reader.watch !== undefined) reader.watch = dog;
  return new ReadableStream<Uint8Array>(
    {
      start(ctrl) {
        ctrlRef = ctrl;
        // A first chunk already read (it came with the upstream's head) is queued before Bun.serve
        // sees the stream: Bun then writes the answer's head corked, in one write. Left for the
        // first pull, the head goes out in pieces, the Date and framing fields Bun adds one send()
        // per fragment, over TLS one record each (measured on 1.4.5; docs/bun-upstream-reports.md
        // section 18, docs/design.md "Performance notes"). A paced body's first chunk is the
        // pacer's, and an ended body is left to pull.
        if (pending === null || paced !== null || Bun.peek.status(pending) !== "fulfilled") return;
        const r = Bun.peek(pending) as ChunkRead;
        const v = r.value;
        if (r.done || v === undefined) return;
        pending = null;
        n += v.byteLength;
        ctrl.enqueue(v);
      },
      async pull(ctrl) {
        dog.touch();
        let r: ChunkRead;
        try {
          const p = pending ?? reader.read();
          pending = null;
          r = await p;
        } catch (e) {
          // Upstream reset mid-body: erroring the stream makes Bun abort the client connection
          // rather than finish the message, so a truncated body is never mistaken for a whole one.
          if (!ended) ctrl.error(SILENT);
          end("error");
          return;
        }
        if (ended) return;
        const v = r.value;
        if (r.done || v === undefined) {
          // onEnd runs before close: the handler re-arms Bun's connection timer, which only
          // works while the response is still open.
          end("done");
          ctrl.close();
          return;
        }
        dog.touch();
        if (paced === null) {
          n += v.byteLength;
          ctrl.enqueue(v);
        } else await paced(v, ctrl);
      },
      cancel(reason) {
        end("cancel");
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}
