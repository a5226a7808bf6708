// Upstream failures: refused → 502 fast, hang → 504 at the deadline,
// retry on another endpoint, recovery after back-off, no retry for bodies, aborted transfers.
import { afterAll, expect, test } from "bun:test";
import { createBalancer } from "../../src/proxy/upstream/balancer.ts";
import { createProxyHandler } from "../../src/proxy/pipeline/handler.ts";
import { startHttpListener } from "../../src/proxy/pipeline/listener.ts";
import { lookup } from "../../src/table/lookup.ts";
import { echoBackend, makeBackend, makeTable, quietLog, rawRequest, startProxy, statusLine, testConfig } from "./helpers.ts";
import { eventually } from "../wait.ts";

const cleanup: Array<() => unknown> = [];
afterAll(async () => {
  for (const f of cleanup.reverse()) await f();
});

/** A port nobody listens on (bound then released). */
async function deadPort(): Promise<number> {
  const s = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") });
  const p = s.port as number;
  await s.stop(true);
  return p;
}

test("refused upstream → 502 from the failed connect, and POST is not retried", async () => {
  const dead = await deadPort();
  const retries: string[] = [];
  const p = startProxy(makeTable([{ host: null, backend: makeBackend([dead]) }]), {}, { onUpstreamRetry: (_b, r) => retries.push(r) });
  cleanup.push(() => p.stop());
  const r = await fetch(p.url + "/x");
  expect(r.status).toBe(502);
  expect(await r.text()).toBe("bad gateway\n");
  // The answer comes from the refused connect, not from a deadline.
  expect(p.records.at(-1)).toMatchObject({ status: 502, error: "UpstreamConnect" });
  retries.length = 0;
  const post = await fetch(p.url + "/x", { method: "POST", body: "data" });
  expect(post.status).toBe(502);
  expect(retries).toEqual([]);
  expect(p.records.at(-1)).toMatchObject({ status: 502, error: "UpstreamConnect" });
});

test("hanging upstream → 504 at the response deadline", async () => {
  const hang = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {}, open() {} } });
  cleanup.push(() => hang.stop(true));
  const p = startProxy(makeTable([{ host: null, backend: makeBackend([hang.port]), options: { responseTimeoutMs: 400 } }]));
  cleanup.push(() => p.stop());
  const r = await fetch(p.url + "/slow");
  expect(r.status).toBe(504);
  expect(await r.text()).toBe("gateway timeout\n");
  // The response deadline answered it (the backend never writes a byte).
  expect(p.records.at(-1)).toMatchObject({ status: 504, error: "UpstreamTimeout" });
});

test("retry goes to another endpoint; a recovered endpoint is used again", async () => {
  const live = echoBackend("live");
  cleanup.push(() => live.stop());
  let other = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("other") });
  const otherPort = other.port as number;
  let now = 0;
  const balancer = createBalancer(() => now);
  const retries: string[] = [];
  const table = makeTable([{ host: null, backend: makeBackend([otherPort, live.port]) }]);
  const handler = createProxyHandler({
    config: testConfig(), table: () => table, lookup, log: quietLog, scheme: "http", balancer,
    hooks: { onUpstreamRetry: (_b, why) => retries.push(why) },
  });
  const server = startHttpListener({ hostname: "127.0.0.1", port: 0, handler });
  cleanup.push(() => server.stop(true));
  const url = `http://127.0.0.1:${server.port}/r`;
  // Both endpoints answer (and are "warm": no connect probe before the request).
  for (let i = 0; i < 4; i++) expect((await fetch(url)).status).toBe(200);
  // One goes away: the GET that reaches it is refused by fetch and retried on the other.
  await other.stop(true);
  for (let i = 0; i < 4; i++) expect((await fetch(url)).status).toBe(200);
  expect(retries).toEqual(["connect"]);
  expect(balancer.isBackedOff(`127.0.0.1:${otherPort}`)).toBe(true);
  // It comes back; after the back-off it receives traffic again.
  other = Bun.serve({ hostname: "127.0.0.1", port: otherPort, fetch: () => new Response("other") });
  cleanup.push(() => other.stop(true));
  now += 60_000;
  const bodies = new Set<string>();
  for (let i = 0; i < 4; i++) bodies.add(await (await fetch(url)).text());
  expect(bodies.has("other")).toBe(true);
});

test("client abort before response headers aborts the upstream request", async () => {
  let aborted = false;
  let arrived = false;
  const slow = Bun.serve({
    hostname: "127.0.0.1", port: 0, idleTimeout: 0,
    async fetch(req) {
      arrived = true;
      req.signal.addEventListener("abort", () => { aborted = true; });
      await Bun.sleep(3_000); // a slow backend on purpose: the client aborts while it waits
      return new Response("late");
    },
  });
  cleanup.push(() => slow.stop(true));
  const p = startProxy(makeTable([{ host: null, backend: makeBackend([slow.port as number]) }]));
  cleanup.push(() => p.stop());
  const ac = new AbortController();
  const pending = fetch(p.url + "/", { signal: ac.signal }).catch(() => null);
  await eventually(() => arrived, 5_000, "the request reaching the backend");
  ac.abort();
  await pending;
  await eventually(() => aborted, 5_000, "the upstream request aborted");
});

test("client abort after response headers aborts the upstream (chunked and Content-Length)", async () => {
  let cancelled = 0;
  const streamer = Bun.serve({
    hostname: "127.0.0.1", port: 0, idleTimeout: 0,
    fetch() {
      let t: ReturnType<typeof setInterval>;
      return new Response(
        new ReadableStream({
          start(c) { t = setInterval(() => c.enqueue(new TextEncoder().encode("tick\n")), 20); },
          cancel() { clearInterval(t); cancelled++; },
        }),
      );
    },
  });
  cleanup.push(() => streamer.stop(true));
  // A raw backend that declares a length and trickles: the natively piped path.
  let rawClosed = false;
  const rawBe = Bun.listen({
    hostname: "127.0.0.1", port: 0,
    socket: {
      data(s) {
        s.write("HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n");
        const t = setInterval(() => { if (s.write("x".repeat(100)) < 0) clearInterval(t); }, 20);
        (s as unknown as { t: unknown }).t = t;
      },
      close(s) { rawClosed = true; clearInterval((s as unknown as { t: ReturnType<typeof setInterval> }).t); },
      open() {},
    },
  });
  cleanup.push(() => rawBe.stop(true));
  const p = startProxy(makeTable([
    { host: "chunked.test", backend: makeBackend([streamer.port as number]) },
    { host: "length.test", backend: makeBackend([rawBe.port]) },
  ]));
  cleanup.push(() => p.stop());
  for (const host of ["chunked.test", "length.test"]) {
    const ac = new AbortController();
    const r = await fetch(p.url + "/", { headers: { host }, signal: ac.signal });
    expect(r.status).toBe(200);
    const reader = r.body!.getReader();
    await reader.read();
    ac.abort();
  }
  await eventually(() => cancelled > 0 && rawClosed, 5_000, "both upstream transfers ended");
  expect(cancelled).toBe(1);
  expect(rawClosed).toBe(true);
});

test("upstream failing mid-body: the client sees a truncated transfer, never a clean end", async () => {
  const failing = Bun.listen({
    hostname: "127.0.0.1", port: 0,
    socket: {
      data(s, d) {
        const req = d.toString();
        if (req.startsWith("GET /chunked")) s.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n");
        else if (req.startsWith("GET /small")) s.write("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nhello");
        else s.write("HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\nhello");
        setTimeout(() => s.terminate(), 50);
      },
      open() {},
    },
  });
  cleanup.push(() => failing.stop(true));
  const p = startProxy(makeTable([{ host: null, backend: makeBackend([failing.port]) }]));
  cleanup.push(() => p.stop());
  for (const path of ["/chunked", "/large"]) {
    const raw = await rawRequest(p.port, `GET ${path} HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n`, 3_000);
    expect(statusLine(raw)).toBe(200);
    expect(raw).toContain("hello");
    // Bun streams with chunked framing: a clean end would be the last-chunk "0\r\n\r\n".
    expect(raw.endsWith("0\r\n\r\n")).toBe(false);
  }
  // A small declared body is read whole before answering, so its failure is still a clean 502.
  const small = await rawRequest(p.port, "GET /small HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", 3_000);
  expect(statusLine(small)).toBe(502);
  expect(small).not.toContain("hello");
});

test("stream idle timeout closes a silent chunked stream; a streaming one lives on", async () => {
  const be = Bun.serve({
    hostname: "127.0.0.1", port: 0, idleTimeout: 0,
    fetch(req) {
      const silent = req.url.endsWith("/silent");
      let t: ReturnType<typeof setInterval>;
      let n = 0;
      return new Response(new ReadableStream({
        start(c) {
          c.enqueue(new TextEncoder().encode("first\n"));
          if (!silent) t = setInterval(() => { if (++n > 12) { clearInterval(t); c.close(); } else c.enqueue(new TextEncoder().encode("more\n")); }, 50);
        },
        cancel() { clearInterval(t); },
      }));
    },
  });
  cleanup.push(() => be.stop(true));
  const p = startProxy(makeTable([{ host: null, backend: makeBackend([be.port as number]), options: { streamIdleTimeoutMs: 300 } }]));
  cleanup.push(() => p.stop());
  const silent = await rawRequest(p.port, "GET /silent HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", 10_000);
  expect(silent).toContain("first");
  expect(silent.endsWith("0\r\n\r\n")).toBe(false);
  // The idle limit ended it (not the client giving up after 10 s).
  await eventually(() => p.records.length === 1, 5_000, "the silent request's record");
  expect(p.records[0]).toMatchObject({ status: 200, error: "StreamIdle" });
  // 13 events over ~650 ms with 50 ms gaps: longer than the idle limit, never idle.
  const live = await fetch(p.url + "/live");
  expect((await live.text()).split("\n").filter((l) => l === "more").length).toBe(12);
  await eventually(() => p.records.length === 2, 5_000, "the live request's record");
  expect(p.records[1]!.error).toBeNull();
});

test("a small declared body that arrives after the headers is read whole; one that stalls past the stream idle timeout is a 504", async () => {
  // The relay takes a small body that came with the headers at once (respond.ts); one that
  // is still arriving goes through the watched read instead, and must keep both outcomes.
  const slow = Bun.listen({
    hostname: "127.0.0.1", port: 0,
    socket: {
      data(s, d) {
        s.write("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello");
        if (d.toString().startsWith("GET /late")) setTimeout(() => s.write("world"), 150);
      },
      open() {},
    },
  });
  cleanup.push(() => slow.stop(true));
  const p = startProxy(makeTable([{ host: null, backend: makeBackend([slow.port]), options: { streamIdleTimeoutMs: 500 } }]));
  cleanup.push(() => p.stop());
  const late = await rawRequest(p.port, "GET /late HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", 3_000);
  expect(statusLine(late)).toBe(200);
  expect(late.toLowerCase()).toContain("content-length: 10\r\n");
  expect(late.endsWith("\r\n\r\nhelloworld")).toBe(true);
  const stalled = await rawRequest(p.port, "GET /stall HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", 3_000);
  expect(statusLine(stalled)).toBe(504);
  expect(stalled).not.toContain("hello");
  expect(p.records.some((r) => r.status === 504 && r.error === "UpstreamTimeout")).toBe(true);
});
