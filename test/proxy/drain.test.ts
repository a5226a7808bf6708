// Graceful shutdown through createDrain: draining reported at once, serving
// continues for the delay, then new connections are refused while an in-flight slow request
// completes; past the grace period what is left is cut.
import { afterAll, expect, test } from "bun:test";
import { createDrain } from "../../src/proxy/pipeline/drain.ts";
import { captureLogger } from "../fake-apiserver/fixtures.ts";
import { eventually } from "../wait.ts";
import { makeBackend, makeTable, startProxy } from "./helpers.ts";

// A slow backend on purpose (?ms=N): the requests a drain waits for, or cuts.
let started = 0;
let finished = 0;
const slow = Bun.serve({
  hostname: "127.0.0.1", port: 0, idleTimeout: 0,
  async fetch(req) {
    const ms = Number(new URL(req.url).searchParams.get("ms") ?? "0");
    if (ms > 0) started++;
    await Bun.sleep(ms);
    if (ms > 0) finished++;
    return new Response(`slept ${ms}`);
  },
});
afterAll(() => slow.stop(true));

test("in-flight request completes, new connections refused after the delay", async () => {
  const p = startProxy(makeTable([{ host: null, backend: makeBackend([slow.port as number]) }]));
  const log = captureLogger();
  const drain = createDrain({
    config: { shutdownDelayMs: 300, shutdownGracePeriodMs: 30_000 },
    servers: () => [p.server], handlers: [p.handler], log,
  });
  try {
    const before = started;
    const inflight = fetch(p.url + "/?ms=900").then(async (r) => ({ status: r.status, text: await r.text() }));
    await eventually(() => started > before, 5_000, "the slow request at the backend");
    const done = drain.begin();
    expect(drain.draining).toBe(true);
    expect(drain.begin()).toBe(done);
    // Still serving during the delay, now asking clients to close the connection.
    const during = await fetch(p.url + "/?ms=0");
    expect(during.status).toBe(200);
    expect(during.headers.get("connection")).toBe("close");
    // Past the delay, a new connection is refused.
    await eventually(() => fetch(p.url + "/?ms=0", { keepalive: false }).then(() => false, () => true), 10_000, "new connections refused");
    expect(await inflight).toEqual({ status: 200, text: "slept 900" });
    await done;
    // The drain ended because the request completed, long before the 30 s grace period.
    expect(log.lines.map((l) => l.msg)).toEqual(["drain: not ready, still serving", "drain: stopped accepting", "drain: done"]);
  } finally {
    await p.stop();
  }
});

test("grace period over: remaining requests are cut", async () => {
  const p = startProxy(makeTable([{ host: null, backend: makeBackend([slow.port as number]) }]));
  const log = captureLogger();
  const drain = createDrain({
    config: { shutdownDelayMs: 0, shutdownGracePeriodMs: 300 },
    servers: () => [p.server], handlers: [p.handler], log,
  });
  const before = { started, finished };
  const inflight = fetch(p.url + "/?ms=10000").then((r) => r.status, () => "cut");
  await eventually(() => started > before.started, 5_000, "the slow request at the backend");
  await drain.begin();
  // Cut by the grace period, while the backend was still working on it.
  expect(finished).toBe(before.finished);
  expect(await inflight).toBe("cut");
  expect(log.lines.map((l) => l.msg)).toEqual(["drain: not ready, still serving", "drain: stopped accepting", "drain: grace period over, closing in-flight requests", "drain: done"]);
});
