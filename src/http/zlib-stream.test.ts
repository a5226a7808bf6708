// The streamed encoders (zlib-stream.ts) on their own: the whole input at that level (brotli:
// with ngx_brotli's window, flushed after each chunk), an empty body, a reader that cancels, a
// source that fails, and a reader that stops (the source is then no longer read).
import { describe, expect, test } from "bun:test";
import { brotliDecompressSync, constants, createBrotliCompress, gunzipSync, gzipSync } from "node:zlib";
import { eventually } from "../../test/wait.ts";
import { brotliStream, gzipStream } from "./zlib-stream.ts";

/** `n` bytes of text that no window shrinks to nothing (a 32-bit LCG's words). */
function text(n: number, seed = 1): Uint8Array {
  const words: string[] = [];
  for (let len = 0; len < n; ) {
    seed = (Math.imul(seed, 1103515245) + 12345) & 0x7fffffff;
    const w = seed.toString(36);
    words.push(w);
    len += w.length + 1;
  }
  return new TextEncoder().encode(words.join(" ").slice(0, n));
}

const from = (parts: Uint8Array[]) =>
  new ReadableStream<Uint8Array>({
    pull(c) {
      const next = parts.shift();
      if (next === undefined) c.close();
      else c.enqueue(next);
    },
  });

describe("brotliStream", () => {
  // Each chunk ends with a BROTLI_OPERATION_FLUSH (ngx_brotli flushes on nginx's flush buffers),
  // which ends a meta-block there, so the bytes are no longer the one-shot call's: they are
  // node:zlib's encoder at that quality fed the same chunks, each followed by that flush.
  test("chunks in, their whole at that quality out, a flush after each chunk; an empty body too", async () => {
    const body = text(300_000);
    const parts = () => [body.subarray(0, 1), body.subarray(1, 70_000), body.subarray(70_000)];
    const out = Buffer.from(await new Response(from(parts()).pipeThrough(brotliStream(5))).arrayBuffer());
    expect(brotliDecompressSync(out).equals(Buffer.from(body))).toBe(true);
    const flushedAt = async (quality: number) => {
      const z = createBrotliCompress({ params: { [constants.BROTLI_PARAM_QUALITY]: quality, [constants.BROTLI_PARAM_LGWIN]: 19 } });
      const got: Buffer[] = [];
      z.on("data", (d: Buffer) => got.push(d));
      for (const part of parts()) {
        await new Promise<void>((resolve) => z.write(part, () => resolve()));
        await new Promise<void>((resolve) => z.flush(constants.BROTLI_OPERATION_FLUSH, () => resolve()));
      }
      await new Promise<void>((resolve) => {
        z.once("end", () => resolve());
        z.end();
      });
      return Buffer.concat(got);
    };
    expect(out.equals(await flushedAt(5))).toBe(true);
    // Another quality gives other bytes, so the comparison above holds the quality.
    expect(out.equals(await flushedAt(11))).toBe(false);
    const empty = new Uint8Array(await new Response(from([]).pipeThrough(brotliStream(4))).arrayBuffer());
    expect(brotliDecompressSync(empty).length).toBe(0);
  });

  test("a reader that cancels cancels the source", async () => {
    let cancelled: unknown = null;
    let i = 0;
    const src = new ReadableStream<Uint8Array>({
      pull(c) {
        c.enqueue(text(64 * 1024, ++i));
      },
      cancel(reason) {
        cancelled = reason ?? "cancelled";
      },
    });
    const reader = src.pipeThrough(brotliStream(4)).getReader();
    await reader.read();
    await reader.cancel(new Error("client went away"));
    await eventually(() => cancelled !== null, 5_000, "the source cancelled");
  });

  test("a source that fails errors the reader (the client's body is cut, never ended)", async () => {
    let n = 0;
    const src = new ReadableStream<Uint8Array>({
      pull(c) {
        if (++n > 40) c.error(new Error("upstream reset"));
        else c.enqueue(text(64 * 1024, n));
      },
    });
    await expect(new Response(src.pipeThrough(brotliStream(4))).arrayBuffer()).rejects.toThrow();
  });

  test("a reader that stops: the source is read no further than the encoder's window and a chunk's output", async () => {
    await expectHeldWhenUnread(brotliStream(4));
  });
});

describe("gzipStream", () => {
  // gzip-level 1 is ingress-nginx's default (config.go GzipLevel); CompressionStream("gzip")
  // encodes at zlib's default 6 whatever the level. Unlike brotli's, Bun's zlib does not give a
  // stream fed in pieces the one-shot call's bytes (measured on 1.4.5: its blocks end where
  // input and output buffers do, a few bytes apart at level 1 and at 6), so the level is read
  // from the header (RFC 1952 §2.3.1 XFL: 4, "compressor used fastest algorithm", is what zlib
  // writes for level 1 alone; 0 at 6) and from the size, the one-shot's within that framing.
  test.each([1, 6])("level %p: chunks in, their whole gzipped at that level out; an empty body too", async (level) => {
    const body = new TextEncoder().encode("line of streamed text, compressible\n".repeat(1000) + new TextDecoder().decode(text(200_000, level)));
    const parts = [body.subarray(0, 1), body.subarray(1, 70_000), body.subarray(70_000)];
    const out = Buffer.from(await new Response(from(parts).pipeThrough(gzipStream(level))).arrayBuffer());
    expect(gunzipSync(out).equals(Buffer.from(body))).toBe(true);
    expect(out[8]).toBe(level === 1 ? 4 : 0);
    const at = (l: number) => gzipSync(body, { level: l }).length;
    expect(Math.abs(out.length - at(level))).toBeLessThan(256);
    // What the two levels give differs by far more than that framing.
    expect(Math.abs(at(1) - at(6))).toBeGreaterThan(10_000);
    const empty = new Uint8Array(await new Response(from([]).pipeThrough(gzipStream(level))).arrayBuffer());
    expect(gunzipSync(empty).length).toBe(0);
  });

  test("a reader that stops: the source is read no further than the encoder's window and a chunk's output", async () => {
    await expectHeldWhenUnread(gzipStream(1));
  });
});

/**
 * An endless source piped through `encoder` whose reader takes one chunk and stops: the source
 * must stop being pulled (the same count over 20 polls) well short of what it could give.
 */
async function expectHeldWhenUnread(encoder: ReadableWritablePair<Uint8Array, Uint8Array>): Promise<void> {
  let pulled = 0;
  let i = 0;
  const src = new ReadableStream<Uint8Array>({
    pull(c) {
      const t = text(64 * 1024, ++i);
      pulled += t.length;
      c.enqueue(t);
    },
  });
  const reader = src.pipeThrough(encoder).getReader();
  await reader.read();
  let last = -1;
  let same = 0;
  await eventually(() => {
    same = pulled === last ? same + 1 : 0;
    last = pulled;
    return same >= 20 || pulled > 64 * 1024 * 1024;
  }, 60_000, "the source no longer read", 25);
  expect(pulled).toBeLessThan(8 * 1024 * 1024);
  await reader.cancel();
}

describe("the encoded end", () => {
  test("told once with the output's bytes when the encoder ends, and with failed when the reader cancels", async () => {
    const ends: [number, boolean][] = [];
    const enc = gzipStream(1, (n, failed) => ends.push([n, failed]));
    const out = new Uint8Array(await new Response(from([text(100_000)]).pipeThrough(enc)).arrayBuffer());
    await eventually(() => ends.length === 1, 5_000, "the end told");
    expect(ends).toEqual([[out.length, false]]);
    // The running count, readable at any time, agrees with the end's.
    expect(enc.sent()).toBe(out.length);
    const cancelled: [number, boolean][] = [];
    const r = from([text(100_000), text(100_000, 2)]).pipeThrough(brotliStream(4, (n, failed) => cancelled.push([n, failed]))).getReader();
    await r.read();
    await r.cancel();
    await eventually(() => cancelled.length === 1, 5_000, "the cancel told");
    expect(cancelled[0]![1]).toBe(true);
  });
});
