// The streamed brotli encoder (brotli-stream.ts) on its own: the bytes node:zlib gives for the
// whole input at that quality and ngx_brotli's window, an empty body, a reader that cancels, a
// source that fails, and a reader that stops (the source is then no longer read).
import { describe, expect, test } from "bun:test";
import { brotliCompressSync, brotliDecompressSync, constants } from "node:zlib";
import { eventually } from "../../test/wait.ts";
import { brotliStream } from "./brotli-stream.ts";

const oneShot = (b: Uint8Array, quality: number) =>
  brotliCompressSync(b, { params: { [constants.BROTLI_PARAM_QUALITY]: quality, [constants.BROTLI_PARAM_LGWIN]: 19 } });

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
  test("chunks in, the one-shot encoding of their whole at that quality out; an empty body too", async () => {
    const body = text(300_000);
    const parts = [body.subarray(0, 1), body.subarray(1, 70_000), body.subarray(70_000)];
    const out = new Uint8Array(await new Response(from(parts).pipeThrough(brotliStream(5))).arrayBuffer());
    expect(Buffer.from(out).equals(oneShot(body, 5))).toBe(true);
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
    let pulled = 0;
    let i = 0;
    const src = new ReadableStream<Uint8Array>({
      pull(c) {
        const t = text(64 * 1024, ++i);
        pulled += t.length;
        c.enqueue(t);
      },
    });
    const reader = src.pipeThrough(brotliStream(4)).getReader();
    await reader.read();
    // Held: the same count over 20 polls.
    let last = -1;
    let same = 0;
    await eventually(() => {
      same = pulled === last ? same + 1 : 0;
      last = pulled;
      return same >= 20 || pulled > 64 * 1024 * 1024;
    }, 60_000, "the source no longer read", 25);
    expect(pulled).toBeLessThan(8 * 1024 * 1024);
    await reader.cancel();
  });
});
