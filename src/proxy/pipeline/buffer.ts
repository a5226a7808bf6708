// Request buffering (ingress-nginx's proxy-request-buffering, on by default there): the body
// is read whole, through the body meter (so --client-body-timeout, the minimum rate, the size
// limit and the framing checks of body.ts all apply), before any upstream is contacted. A slow
// client then holds no pod connection, the pod gets the body with a Content-Length, and the
// body can be sent again to another pod on a retry (docs/design.md, "Request buffering").
//
// nginx keeps what exceeds client_body_buffer_size in a temporary file; Portico runs with no
// writable disk guaranteed, so it holds bodies in memory within two bounds: the route's buffer
// size, and one budget for the whole process. A body that exceeds either is streamed, as with
// proxy-request-buffering off, and memory stays bounded whatever the number of clients.
import type { ChunkReader } from "./body.ts";

/** Bytes held by buffered request bodies, shared by every request of the process. */
export interface BodyBudget {
  /** Reserve n bytes; false (nothing reserved) when they would exceed the total. */
  take(n: number): boolean;
  give(n: number): void;
  /** Bytes reserved now. */
  readonly used: number;
  readonly total: number;
}

export function createBodyBudget(total: number): BodyBudget {
  let used = 0;
  return {
    take(n) {
      if (used + n > total) return false;
      used += n;
      return true;
    },
    give(n) {
      used = Math.max(0, used - n);
    },
    get used() {
      return used;
    },
    total,
  };
}

export interface BufferedBody {
  /** The whole body (sent with Content-Length, and again on a retry), or a stream when it did not fit. */
  readonly body: Uint8Array | ReadableStream<Uint8Array>;
  /** Gives the body's bytes back to the budget; call once the upstream request is over. Idempotent. */
  release(): void;
}

function concat(chunks: readonly Uint8Array[], n: number): Uint8Array {
  if (chunks.length === 1) return chunks[0] as Uint8Array;
  const out = new Uint8Array(n);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

/**
 * The chunks read so far, then the rest of `reader`: the fallback when a body without a
 * declared length outgrows its bound. `onPrefixSent` runs once the held chunks are handed on
 * (their reservation can go back to the budget), or when the stream ends early.
 */
function replay(held: Uint8Array[], reader: ChunkReader, onPrefixSent: () => void): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>(
    {
      async pull(ctrl) {
        const next = held.shift();
        if (next !== undefined) {
          ctrl.enqueue(next);
          if (held.length === 0) onPrefixSent();
          return;
        }
        try {
          const r = await reader.read();
          if (r.done || r.value === undefined) ctrl.close();
          else ctrl.enqueue(r.value);
        } catch (e) {
          ctrl.error(e);
        }
      },
      cancel(reason) {
        held.length = 0;
        onPrefixSent();
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}

const NOTHING = (): void => {};

/**
 * Read `body` (the metered request body) whole when it fits within `bound` bytes and the
 * budget; otherwise hand back a stream of it. With a declared length the choice is made before
 * any byte is read; a chunked body is read until it ends or outgrows the bound or the budget,
 * and then streams with what was read in front. A body the meter stops (too slow, too large,
 * badly framed) rejects with the meter's error, the reservation given back.
 */
export async function bufferRequestBody(
  body: ReadableStream<Uint8Array>,
  declared: number | null,
  bound: number,
  budget: BodyBudget,
): Promise<BufferedBody> {
  if (declared !== null && (declared > bound || !budget.take(declared))) return { body, release: NOTHING };
  let reserved = declared ?? 0;
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    budget.give(reserved);
  };
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let n = 0;
  try {
    for (;;) {
      const r = await reader.read();
      if (r.done) break;
      const c = r.value;
      if (declared === null) {
        if (n + c.byteLength > bound || !budget.take(c.byteLength)) {
          chunks.push(c);
          // The reservation covers the chunks held before this one; it goes back once they
          // are handed on to the upstream.
          return { body: replay(chunks, reader, release), release };
        }
        reserved += c.byteLength;
      }
      chunks.push(c);
      n += c.byteLength;
    }
  } catch (e) {
    release();
    throw e;
  }
  return { body: concat(chunks, n), release };
}
