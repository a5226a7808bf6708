// Hostile HTTP/2 frames from a raw client: rapid reset (CVE-2023-44487), header-list and
// CONTINUATION floods, streams past SETTINGS_MAX_CONCURRENT_STREAMS. Each ends with another
// client's request succeeding: the process stays responsive. Loopback only, bounded counts.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { MAX_CLIENT_RESETS_PER_SECOND, MAX_CONCURRENT_STREAMS, MAX_HEADER_LIST_SIZE } from "../../src/http2/limits.ts";
import { makeBackend, makeTable } from "../proxy/helpers.ts";
import { FRAME, frame, headerBlock, headersFrame, hpack, rawH2, rstFrame } from "./frames.ts";
import { h2Request, h2Session, startTlsProxy, type TlsProxy } from "./helpers.ts";
import { eventually } from "../wait.ts";

let hits = 0;
let release!: () => void;
let gate = new Promise<void>((r) => (release = r));
const backend = Bun.serve({
  hostname: "127.0.0.1", port: 0, idleTimeout: 0,
  async fetch(req) {
    hits++;
    if (new URL(req.url).pathname === "/hold") await gate;
    return new Response("ok");
  },
});
let proxy: TlsProxy;
const abuse: string[] = [];
beforeAll(() => {
  // large-client-header-buffers at `4 16k`, the most Bun.serve's 64 KiB head takes over HTTP/1.1.
  proxy = startTlsProxy(makeTable([{ host: null, backend: makeBackend([backend.port as number]) }]), { onAbuse: (r) => abuse.push(r), config: { largeClientHeaderBuffers: { number: 4, size: 16_384 } } });
});
afterAll(async () => {
  release();
  await proxy.stop();
  await backend.stop(true);
});

const GET = (path: string) => [[":method", "GET"], [":scheme", "https"], [":authority", "a.test"], [":path", path]] as const;

async function stillServes(): Promise<void> {
  const s = await h2Session(proxy.port);
  try {
    const r = await h2Request(s, { ":path": "/after" });
    expect(r.status).toBe(200);
    expect(String(r.body)).toBe("ok");
  } finally {
    s.close();
  }
}

test("rapid reset: a client cancelling streams in a loop gets GOAWAY ENHANCE_YOUR_CALM, few reach the handler", async () => {
  const c = await rawH2(proxy.port);
  const before = proxy.records.length;
  const streams = 5_000;
  const batch: Buffer[] = [];
  for (let i = 0; i < streams; i++) {
    const id = 1 + 2 * i;
    batch.push(headersFrame(id, GET("/hold")), rstFrame(id));
  }
  c.write(Buffer.concat(batch));
  await eventually(() => c.goaway() !== null);
  expect(c.goaway()).toBe(0xb); // ENHANCE_YOUR_CALM
  expect(abuse).toEqual(["rapid-reset"]); // counted: portico_http2_connections_closed_total
  await eventually(() => c.closed);
  // Every stream the handler took has ended (aborted with its client).
  await eventually(() => proxy.handler.inflight.count === 0);
  // Streams that reached the handler (each is an access record: ClientClosed). Bun's own flood
  // guard stops a session after ~1,000; ours acts at MAX_CLIENT_RESETS_PER_SECOND.
  const reached = proxy.records.length - before;
  expect(reached).toBeGreaterThan(0);
  expect(reached).toBeLessThanOrEqual(MAX_CLIENT_RESETS_PER_SECOND + MAX_CONCURRENT_STREAMS);
  await stillServes();
});

/** `n` fields of `size` bytes each (names x-f0, x-f1, …), after the request's pseudo-fields. */
const fields = (path: string, n: number, size: number) => [...GET(path), ...Array.from({ length: n }, (_, i) => [`x-f${i}`, "a".repeat(size)] as const)];

test("a header list as large as an HTTP/1.1 head Bun.serve takes reaches the handler, which applies large-client-header-buffers", async () => {
  const c = await rawH2(proxy.port);
  const from = proxy.records.length;
  const mine = () => proxy.records.slice(from);
  const rec = (path: string) => mine().find((r) => r.path === path);
  // ~60 KiB: under `4 16k` (64 KiB) as an HTTP/1.1 head, ~62 KiB as an HPACK list: relayed to
  // the pod (which may answer 431 itself when this process runs without the 64 KiB flag).
  c.write(headerBlock(1, fields("/large", 60, 1000)));
  await eventually(() => rec("/large") !== undefined);
  expect(c.resets().has(1)).toBe(false);
  expect(rec("/large")!.upstream).toBe(`127.0.0.1:${backend.port}`);
  // ~90 KiB, within the listener's limit: Portico's own check answers it (431 without
  // --ingress-nginx-compat; admit.ts), as over HTTP/1.1, and the pod never sees it.
  c.write(headerBlock(3, fields("/larger", 90, 1000)));
  // Answered before the target is read: the record has no path, only the reason.
  const tooLarge = () => mine().find((r) => r.error === "HeaderFieldsTooLarge");
  await eventually(() => tooLarge() !== undefined);
  expect(tooLarge()!.status).toBe(431);
  expect(tooLarge()!.upstream ?? null).toBeNull();
  expect(mine().map((r) => r.upstream ?? null)).toEqual([`127.0.0.1:${backend.port}`, null]);
  await eventually(() => c.frames.some((f) => f.type === FRAME.HEADERS && f.id === 3));
  expect(c.closed).toBe(false);
  c.close();
  await stillServes();
});

test.each([
  ["a list past SETTINGS_MAX_HEADER_LIST_SIZE", () => fields("/big", Math.ceil(MAX_HEADER_LIST_SIZE / 1000) + 8, 1000)],
  ["one field of 81 KiB", () => [...GET("/big"), ["x-big", "a".repeat(81 * 1024)] as const]],
])("%s ends that connection (GOAWAY) before the handler; other clients are served", async (_what, list) => {
  const c = await rawH2(proxy.port);
  const before = hits;
  const records = proxy.records.length;
  c.write(headerBlock(1, list()));
  await eventually(() => c.closed);
  // Bun's node:http2 ends the connection with COMPRESSION_ERROR here (limits.ts MAX_HEADER_LIST_SIZE).
  expect(c.goaway()).toBe(0x9);
  expect(hits).toBe(before);
  expect(proxy.records.length).toBe(records);
  await stillServes();
});

test("a CONTINUATION flood ends the connection without reaching the handler", async () => {
  const c = await rawH2(proxy.port);
  const before = hits;
  const frames: Buffer[] = [headersFrame(1, GET("/cont"), { endHeaders: false })];
  for (let i = 0; i < 5_000; i++) frames.push(frame(FRAME.CONTINUATION, 0, 1, hpack([[`x-c${i}`, "b".repeat(64)]])));
  c.write(Buffer.concat(frames));
  await eventually(() => c.closed);
  expect(c.goaway()).not.toBeNull();
  expect(hits).toBe(before);
  await stillServes();
});

test(`streams past ${MAX_CONCURRENT_STREAMS} at once are refused (REFUSED_STREAM); the others complete`, async () => {
  gate = new Promise<void>((r) => (release = r));
  const c = await rawH2(proxy.port);
  const n = MAX_CONCURRENT_STREAMS + 4;
  const batch: Buffer[] = [];
  for (let i = 0; i < n; i++) batch.push(headersFrame(1 + 2 * i, GET("/hold")));
  c.write(Buffer.concat(batch));
  await eventually(() => c.resets().size >= 4);
  expect([...c.resets().values()].every((code) => code === 7)).toBe(true); // REFUSED_STREAM
  release();
  const answered = () => c.frames.filter((f) => f.type === FRAME.HEADERS).length;
  await eventually(() => answered() === MAX_CONCURRENT_STREAMS, 10_000);
  c.close();
  await stillServes();
});
