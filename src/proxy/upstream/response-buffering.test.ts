// The buffer arithmetic of response-buffering.ts against a pod body fed by hand, and the pod's
// X-Accel-Buffering as ngx_http_upstream_process_buffering reads it (test/proxy/
// response-buffering.test.ts drives the same through the proxy with a raw-socket pod).
import { expect, test } from "bun:test";
import type { ChunkRead, ChunkReader } from "../pipeline/body.ts";
import { scanResponseHeaders } from "../../http/headers.ts";
import { BufferedBody, bufferingWanted, responseBuffering } from "./response-buffering.ts";

/** A pod body whose reads are answered when the test says; counts the reads asked for. */
function fakePod() {
  const asked: ((r: ChunkRead) => void)[] = [];
  let cancelled: unknown = null;
  // As a stream's reader: once cancelled, every read, waiting or new, is the end.
  const reader: ChunkReader = {
    read: () => (cancelled !== null ? Promise.resolve({ done: true }) : new Promise<ChunkRead>((resolve) => asked.push(resolve))),
    cancel: async (reason) => {
      cancelled = reason ?? "cancelled";
      for (const r of asked.splice(0)) r({ done: true });
    },
  };
  return {
    reader,
    asked: () => asked.length,
    /** Answer the oldest read waiting (there is one once read() has been asked). */
    send(s: string | null) {
      const r = asked.shift();
      if (r === undefined) throw new Error("no read waiting");
      r(s === null ? { done: true } : { done: false, value: new TextEncoder().encode(s) });
    },
    cancelled: () => cancelled,
  };
}

const text = (r: ChunkRead) => (r.done ? null : new TextDecoder().decode(r.value));
/** Lets the body's awaits run: each answered read is taken before the next is asked. */
const settle = () => new Promise<void>((r) => setImmediate(r));

test("X-Accel-Buffering: exactly yes or no, any case; anything else keeps the location's setting", () => {
  expect(bufferingWanted(false, "yes")).toBe(true);
  expect(bufferingWanted(false, "YeS")).toBe(true);
  expect(bufferingWanted(true, "no")).toBe(false);
  expect(bufferingWanted(true, "NO")).toBe(false);
  for (const v of [null, "", "y", "1", "true", "off", "yes please", "no,"]) {
    expect(bufferingWanted(true, v)).toBe(true);
    expect(bufferingWanted(false, v)).toBe(false);
  }
});

test("the head as on the wire takes the first buffer's start; the framing comes from the fields", () => {
  const cl = new Response(null, { status: 200, headers: { "content-length": "99999" } });
  // "HTTP/1.1 200 \r\n" (Response has no reason phrase here) + "content-length: 99999\r\n" + "\r\n".
  expect(responseBuffering(cl, scanResponseHeaders(cl.headers), 4096)).toEqual({ size: 4096, head: 15 + 23 + 2, declared: 99999 });
  const ch = new Response(null, { status: 200, headers: { "transfer-encoding": "chunked" } });
  expect(responseBuffering(ch, scanResponseHeaders(ch.headers), 8192).declared).toBe("chunked");
  const none = new Response(null, { status: 200 });
  expect(responseBuffering(none, scanResponseHeaders(none.headers), 4096).declared).toBeNull();
});

test("Content-Length: held until the first buffer (size less the head) is full; then whole buffers; the rest once the length is read", async () => {
  const pod = fakePod();
  const body = new BufferedBody(pod.reader, { size: 10, head: 4, declared: 25 });
  const first = body.read();
  await settle();
  pod.send("abc");
  await settle();
  // 3 of the first buffer's 6 bytes: the body asked the pod for more and handed nothing on.
  expect(pod.asked()).toBe(1);
  expect(Bun.peek.status(first)).toBe("pending");
  pod.send("defghijklmnopqrs");
  // 19 read: the first buffer (6) and one whole buffer after it (10); 3 wait in the third.
  expect(text(await first)).toBe("abcdefghijklmnop");
  const second = body.read();
  await settle();
  pod.send("tuvw");
  await settle();
  expect(Bun.peek.status(second)).toBe("pending");
  pod.send("xy");
  // 25 bytes, the declared length: out at once, before the pod's end of body.
  expect(text(await second)).toBe("qrstuvwxy");
  expect(body.readBytes).toBe(25);
  const end = body.read();
  await settle();
  pod.send(null);
  expect((await end).done).toBe(true);
});

test("a body the pod ends by closing: what is held goes out at the end; chunked: each read as it comes", async () => {
  const closed = fakePod();
  const a = new BufferedBody(closed.reader, { size: 4096, head: 40, declared: null });
  const r = a.read();
  await settle();
  closed.send("hello");
  await settle();
  closed.send(null);
  expect(text(await r)).toBe("hello");
  expect((await a.read()).done).toBe(true);
  const chunked = fakePod();
  const b = new BufferedBody(chunked.reader, { size: 4096, head: 40, declared: "chunked" });
  const c = b.read();
  await settle();
  chunked.send("hi");
  expect(text(await c)).toBe("hi");
});

test("a head larger than the buffer leaves the first buffer no room: the next whole buffer is the first out", async () => {
  const pod = fakePod();
  const body = new BufferedBody(pod.reader, { size: 4, head: 9, declared: null });
  const r = body.read();
  await settle();
  pod.send("abcdef");
  expect(text(await r)).toBe("abcd");
});

test("at most 1 MiB is held whatever the size", async () => {
  const pod = fakePod();
  const body = new BufferedBody(pod.reader, { size: 64 * 1024 * 1024, head: 0, declared: null });
  const r = body.read();
  await settle();
  pod.send("x".repeat(1024 * 1024 + 1));
  expect((await r).value?.byteLength).toBe(1024 * 1024);
});

test("each of the pod's reads touches the deadline watching it, though the read waits for a whole buffer", async () => {
  const pod = fakePod();
  const body = new BufferedBody(pod.reader, { size: 4096, head: 0, declared: null });
  let touched = 0;
  body.watch = { touch: () => touched++, stop: () => {} };
  const r = body.read();
  await settle();
  pod.send("abc");
  await settle();
  pod.send("def");
  await settle();
  expect(touched).toBe(2);
  expect(Bun.peek.status(r)).toBe("pending");
  pod.send(null);
  expect(text(await r)).toBe("abcdef");
});

test("cancel drops what is held and cancels the pod's body", async () => {
  const pod = fakePod();
  const body = new BufferedBody(pod.reader, { size: 4096, head: 0, declared: null });
  const r = body.read();
  await settle();
  pod.send("abc");
  await settle();
  await body.cancel("gone");
  expect(pod.cancelled()).toBe("gone");
  // What was held is dropped: the waiting read ends with nothing handed on.
  expect((await r).done).toBe(true);
});
