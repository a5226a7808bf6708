// ingress-nginx's proxy-buffering (nginx's proxy_buffering, proxy_buffer_size, proxy_buffers)
// and the pod's X-Accel-Buffering, for a streamed answer (docs/design.md "Response buffering").
//
// What nginx does, read from its source and confirmed against nginx 1.22.1 on loopback:
// - ngx_http_upstream_send_response: with buffering the header goes to ngx_http_send_header
//   without a flush, so the write filter keeps it (below postpone_output) until the first body
//   buffer is passed on; the body goes through the event pipe.
// - ngx_event_pipe_read_upstream reads into proxy_buffer_size's buffer (the one the header was
//   read into, so its room is the buffer less the header block) and then proxy_buffers' buffers,
//   and hands a buffer to the input filter only when it is full, when it holds all the body
//   still due (p->length: the Content-Length left), or at the upstream's end (EOF or error). A
//   buffer handed on is written to the client at once (the copy filter marks it recycled, which
//   ngx_http_write_filter treats as a flush).
// - ngx_http_proxy_input_filter_init: a chunked answer sets p->length to the few bytes the
//   chunk parser needs next, so each read that completes a chunk is handed on at once; only the
//   tail of a chunk split across reads waits. Bun's fetch decodes the chunked framing and does
//   not tell where a chunk ends, so a chunked answer's reads are handed on as they come.
// - ngx_http_upstream_process_buffering: X-Accel-Buffering `yes` (3 bytes, any case) turns
//   buffering on for this answer, `no` off, anything else changes nothing, unless
//   proxy_ignore_headers lists it (nginx.tmpl never sets proxy_ignore_headers).
// - ngx_http_upstream_send_response, non-buffered branch: `r->limit_rate = 0`, so limit_rate
//   (and the pod's X-Accel-Limit-Rate) paces only a buffered answer (accelLimitRate below).
// Where nginx reads on into its other buffers and a temp file (proxy_max_temp_file_size, 1 GiB)
// while the client is slow, Portico reads the pod only as the client takes the answer: it holds
// one buffer at most, capped at MAX_HOLD, and writes no file.
import type { ResponseHeaderScan } from "../../http/headers.ts";
import type { ChunkRead, ChunkReader } from "../pipeline/body.ts";
import type { Watchdog } from "./watchdog.ts";

/** The most one answer holds, whatever proxy-buffer-size says: Portico buffers in memory only. */
const MAX_HOLD = 1024 * 1024;

/** What a streamed answer is held with (responseBuffering). */
export interface ResponseBuffering {
  /** proxy_buffer_size (proxy_buffers' size is the same in nginx.tmpl). */
  readonly size: number;
  /** The pod's status line and header block as on the wire. */
  readonly head: number;
  /** The Content-Length; null for a body the pod ends by closing; "chunked": handed on as read. */
  readonly declared: number | null | "chunked";
}

/**
 * Whether this answer is buffered: the location's proxy_buffering (`on`), changed by the pod's
 * X-Accel-Buffering as ngx_http_upstream_process_buffering reads it: exactly `yes` or `no` in
 * any case (nginx compares the value's length first; Bun hands the value trimmed, as nginx's
 * header parser does). nginx reads each field line in turn, so of repeated ones the last `yes`
 * or `no` wins; Bun's Headers joins them with ", ", read here piece by piece.
 */
export function bufferingWanted(on: boolean, xAccel: string | null): boolean {
  if (xAccel === null) return on;
  let b = on;
  for (const piece of xAccel.toLowerCase().split(", ")) b = piece === "yes" ? true : piece === "no" ? false : b;
  return b;
}

/** ngx_atoi's limit (NGX_MAX_INT_T_VALUE on 64-bit) as a decimal string: a longer number is refused. */
const NGX_MAX_INT = "9223372036854775807";

/**
 * The pod's X-Accel-Limit-Rate as ngx_http_upstream_process_limit_rate reads it (nginx 1.27.1,
 * ingress-nginx's): bytes per second as ngx_atoi takes them (decimal digits only: no sign, no
 * unit, so `16k` and `off` change nothing), 0 meaning no limit; null when absent or refused.
 * The first field counts, a repeated one is ignored; Bun's Headers joins repeats with ", ", so
 * the text before the first ", " is the first field. nginx applies it only to a buffered answer
 * (the non-buffered branch of ngx_http_upstream_send_response sets r->limit_rate = 0 after the
 * head was read), and still counts the location's limit_rate_after before it
 * (ngx_http_write_filter). Beyond 2^53 it is capped: no limit in practice.
 */
export function accelLimitRate(value: string | null): number | null {
  if (value === null) return null;
  const comma = value.indexOf(", ");
  const v = (comma < 0 ? value : value.slice(0, comma)).replace(/^0+(?=[0-9])/, "");
  if (!/^[0-9]{1,19}$/.test(v) || (v.length === 19 && v > NGX_MAX_INT)) return null;
  return Math.min(Number(v), Number.MAX_SAFE_INTEGER);
}

/**
 * The pod's body as nginx's event pipe hands it on with proxy_buffering on: held until a buffer
 * is full, the declared length is all read, or the body ends. A read of the pod that fails (a
 * reset, bad framing) fails here too, and what is held is dropped, as in nginx: on a read error
 * ngx_event_pipe_read_upstream gives the buffer being filled to the input filter, but nothing
 * was read in that pass (p->read stays 0), so ngx_event_pipe stops before writing downstream,
 * and ngx_http_upstream_finalize_request flushes only what the write filter already had (the
 * kept head) and closes (only bytes read in the same pass as the error are written; Bun's fetch
 * drops body bytes it has not yet handed to JavaScript when the connection fails, so that case
 * does not reach here). nginx 1.22.1 on loopback: a pod reset after 4054 bytes went out and
 * 951 more were held: the client got the 4054 and the cut; reset before the first buffer was
 * full: the 200 head and the cut (Portico: a 502, docs/design.md "Response buffering").
 */
export class BufferedBody implements ChunkReader {
  private held: Uint8Array[] = [];
  private heldBytes = 0;
  /** Room left in the buffer being filled, counted from its start (heldBytes < cap). */
  private cap: number;
  private readonly size: number;
  /** Chunked: each read is handed on as it comes. */
  private readonly chunked: boolean;
  /** The declared length still due; -1 for none. */
  private left: number;
  /** The pod's body ended (or cancel()): what is held goes out next. */
  private ended = false;
  /** Bytes read from the pod ($upstream_response_length counts these, not those handed on). */
  readBytes = 0;
  /**
   * The idle deadline watching the pod: touched on each of the pod's reads, since one read
   * here may wait for several (nginx's proxy_read_timeout is between two reads of the pod).
   * respond.ts sets the first read's; the metered stream (pipeline/body.ts) sets its own.
   */
  watch: Watchdog | null = null;

  constructor(
    private readonly reader: ChunkReader,
    b: ResponseBuffering,
  ) {
    this.size = Math.max(1, Math.min(b.size, MAX_HOLD));
    const room = this.size - b.head;
    this.cap = room > 0 ? room : this.size;
    this.chunked = b.declared === "chunked";
    this.left = typeof b.declared === "number" ? b.declared : -1;
  }

  async read(): Promise<ChunkRead> {
    for (;;) {
      if (this.ended) return this.heldBytes > 0 ? { done: false, value: this.take(this.heldBytes) } : { done: true };
      // A failure is thrown as it is, dropping what is held (see above).
      const r = await this.reader.read();
      this.watch?.touch();
      if (r.done || r.value === undefined) {
        this.ended = true;
        continue;
      }
      const v = r.value;
      this.readBytes += v.byteLength;
      if (this.chunked) return r;
      this.held.push(v);
      this.heldBytes += v.byteLength;
      if (this.left >= 0) {
        this.left -= v.byteLength;
        // All the body still due is in the buffer (ngx_event_pipe_read_upstream, p->length):
        // it goes out now; the next read takes the pod's end of body.
        if (this.left <= 0) return { done: false, value: this.take(this.heldBytes) };
      }
      if (this.heldBytes >= this.cap) {
        // The buffer being filled is full, and perhaps more after it: each full one goes out.
        const over = this.heldBytes - this.cap;
        const full = this.cap + over - (over % this.size);
        this.cap = this.size;
        return { done: false, value: this.take(full) };
      }
    }
  }

  cancel(reason?: unknown): Promise<void> {
    this.ended = true;
    this.held = [];
    this.heldBytes = 0;
    return this.reader.cancel(reason);
  }

  /** The first `n` held bytes as one piece; the rest stays held. */
  private take(n: number): Uint8Array {
    const held = this.held;
    if (held.length === 1 && held[0]!.byteLength === n) {
      this.held = [];
      this.heldBytes = 0;
      return held[0]!;
    }
    const out = new Uint8Array(n);
    let at = 0;
    let i = 0;
    for (; i < held.length && at < n; i++) {
      const c = held[i]!;
      const want = n - at;
      if (c.byteLength <= want) {
        out.set(c, at);
        at += c.byteLength;
      } else {
        out.set(c.subarray(0, want), at);
        held[i] = c.subarray(want);
        at = n;
        break;
      }
    }
    this.held = held.slice(i);
    this.heldBytes -= n;
    return out;
  }
}

/**
 * What a buffered answer is held with, read from the pod's head before the relay strips its
 * hop-by-hop fields (http/headers.ts downstreamHeaders edits them in place): the buffer size, the
 * head's size on the wire (the status line and the header block, `scan.bytes` as forward.ts
 * measured it for the header limit), which takes the start of the first buffer, and the framing.
 */
export function responseBuffering(up: Response, s: ResponseHeaderScan, size: number): ResponseBuffering {
  const head = `HTTP/1.1 ${up.status} ${up.statusText}\r\n`.length + s.bytes;
  const length = s.contentLength === null ? Number.NaN : Number(s.contentLength);
  const declared = s.hopByHop.includes("transfer-encoding") ? "chunked" : Number.isSafeInteger(length) && length >= 0 ? length : null;
  return { size, head, declared };
}
