// Graceful shutdown through createDrain: draining reported at once, serving
// continues for the delay, then new connections are refused while an in-flight slow request
// completes; past the grace period what is left is cut.
import { afterAll, expect, test } from "bun:test";
import { createDrain } from "../../src/proxy/pipeline/drain.ts";
import { makeBackend, makeTable, quietLog, startProxy } from "./helpers.ts";

const slow = Bun.serve({
  hostname: "127.0.0.1", port: 0, idleTimeout: 0,
  async fetch(req) {
    const ms = Number(new URL(req.url).searchParams.get("ms") ?? "0");
    await Bun.sleep(ms);
    return new Response(`slept ${ms}`);
  },
});
afterAll(() => slow.stop(true));

test("in-flight request completes, new connections refused after the delay", async () => {
  const p = startProxy(makeTable([{ host: null, backend: makeBackend([slow.port as number]) }]));
  const drain = createDrain({
    config: { shutdownDelayMs: 300, shutdownGracePeriodMs: 5_000 },
    servers: () => [p.server], handlers: [p.handler], log: quietLog,
  });
  try {
    const inflight = fetch(p.url + "/?ms=900").then(async (r) => ({ status: r.status, text: await r.text() }));
    await Bun.sleep(50);
    const t0 = performance.now();
    const done = drain.begin();
    expect(drain.draining).toBe(true);
    expect(drain.begin()).toBe(done);
    // Still serving during the delay, now asking clients to close the connection.
    const during = await fetch(p.url + "/?ms=0");
    expect(during.status).toBe(200);
    expect(during.headers.get("connection")).toBe("close");
    await Bun.sleep(400);
    let refused = false;
    try {
      await fetch(p.url + "/?ms=0", { keepalive: false });
    } catch {
      refused = true;
    }
    expect(refused).toBe(true);
    expect(await inflight).toEqual({ status: 200, text: "slept 900" });
    await done;
    const ms = performance.now() - t0;
    console.log(`[figure] drain with a 900 ms request in flight finished after ${ms.toFixed(0)} ms (delay 300 ms)`);
    expect(ms).toBeLessThan(3_000);
  } finally {
    await p.stop();
  }
});

test("grace period over: remaining requests are cut", async () => {
  const p = startProxy(makeTable([{ host: null, backend: makeBackend([slow.port as number]) }]));
  const drain = createDrain({
    config: { shutdownDelayMs: 0, shutdownGracePeriodMs: 300 },
    servers: () => [p.server], handlers: [p.handler], log: quietLog,
  });
  const inflight = fetch(p.url + "/?ms=3000").then((r) => r.status, () => "cut");
  await Bun.sleep(50);
  const t0 = performance.now();
  await drain.begin();
  const ms = performance.now() - t0;
  expect(ms).toBeGreaterThanOrEqual(290);
  expect(ms).toBeLessThan(1_500);
  expect(await inflight).toBe("cut");
});
