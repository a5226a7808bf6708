// Bun's keep-alive pool for fetch holds 64 idle connections per process (docs/design.md,
// "Performance notes"): past 64 requests in flight, a freed connection is closed while the pool
// is full and a later request opens a new one. Portico holds requests past the 64th until one
// frees (src/proxy/upstream/pool-gate.ts), for a bounded time, so a slow backend holding its
// connections never stalls another backend's requests. Both through a real Portico in its own
// process (its own fetch pool) with real backends, clients over h2c (many streams, one
// connection). The gate holds only while Portico's thread is busy; here it is told to hold
// always (PORTICO_TEST_GATE_HOLDS), so what is tested does not depend on the machine's load.
import { afterAll, beforeAll, expect, test } from "bun:test";
import http2 from "node:http2";
import { eventually } from "../wait.ts";
import { h2Fetch } from "../http2/client.ts";
import { spawnProxyProcess } from "./helpers.ts";

/** Requests per wave: more than Bun's 64 pooled connections, fewer than the 128 streams Bun.serve advertises. */
const WAVE = 100;
const WAVES = 4;
const SLOW = 70;
const FAST = 20;

// The fast backend: in each wave it holds requests until 64 wait (the most the gate lets
// through at once), then answers them and every later one at once. So without the gate all
// WAVE requests of a wave are in flight upstream together, whatever the machine's speed.
const conns = new Set<number>();
let holding = false;
let held: Array<() => void> = [];
const fast = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch(req, server) {
    conns.add(server.requestIP(req)?.port ?? -1);
    if (!holding) return new Response("fast");
    return new Promise<Response>((resolve) => {
      held.push(() => resolve(new Response("fast")));
      if (held.length < 64) return;
      holding = false;
      for (const f of held) f();
      held = [];
    });
  },
});

// The slow backend: holds every request until the test lets them go.
const slowHeld: Array<() => void> = [];
const slow = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  idleTimeout: 0,
  fetch: () => new Promise<Response>((resolve) => slowHeld.push(() => resolve(new Response("slow")))),
});

const procs: Array<ReturnType<typeof Bun.spawn>> = [];
const sessions: http2.ClientHttp2Session[] = [];
// Two Portico processes: one whose gate never gives up waiting (the waves below measure the
// pool alone, however slowly a loaded machine runs them), one with the shipped bound.
let waves: http2.ClientHttp2Session;
let bounded: http2.ClientHttp2Session;

async function startPortico(env: Record<string, string>): Promise<http2.ClientHttp2Session> {
  const { proc, port } = await spawnProxyProcess({ PORTICO_TEST_BACKEND_PORT: String(fast.port), PORTICO_TEST_SLOW_PORT: String(slow.port), PORTICO_TEST_GATE_HOLDS: "1", ...env });
  procs.push(proc);
  const session = await new Promise<http2.ClientHttp2Session>((resolve, reject) => {
    const s = http2.connect(`http://127.0.0.1:${port}`);
    s.once("connect", () => resolve(s));
    s.once("error", reject);
    s.on("error", () => {});
  });
  sessions.push(session);
  return session;
}

beforeAll(async () => {
  waves = await startPortico({ PORTICO_TEST_GATE_WAIT_MS: "600000" });
  bounded = await startPortico({});
});

afterAll(async () => {
  for (const f of slowHeld.splice(0)) f();
  for (const s of sessions) s.close();
  for (const p of procs) p.kill("SIGTERM");
  for (const p of procs) await p.exited;
  await fast.stop(true);
  await slow.stop(true);
});

async function get(session: http2.ClientHttp2Session, path: string): Promise<{ status: number; body: string }> {
  const r = await h2Fetch(session, path, { headers: { host: "pool.test" } });
  return { status: r.status, body: await r.text() };
}

test(`${WAVES} waves of ${WAVE} requests in flight: the upstream connections are reused, not opened again each wave`, async () => {
  for (let w = 0; w < WAVES; w++) {
    holding = true;
    const answers = await Promise.all(Array.from({ length: WAVE }, () => get(waves, "/")));
    expect(answers.filter((a) => a.status !== 200 || a.body !== "fast")).toEqual([]);
  }
  // Without the gate: WAVE connections in the first wave, then in each later one the WAVE - 64
  // that the full pool closed are opened again (100 + 3 × 36 = 208). With it, 64 carry every
  // wave (this process's gate never lets its waiters go on its own); 80 leaves room for a few
  // pooled connections that closed between waves and were opened again.
  expect(conns.size).toBeLessThanOrEqual(80);
});

test(`${SLOW} requests held by a slow backend do not hold back ${FAST} requests to a fast one`, async () => {
  let slowDone = 0;
  const slowCalls = Array.from({ length: SLOW }, () => get(bounded, "/slow/poll").finally(() => slowDone++));
  // More than the pool's 64: the ones past it wait a bounded time, then go anyway.
  await eventually(() => slowHeld.length === SLOW, 10_000, `all ${SLOW} slow requests reaching the slow backend`);
  const answers = await Promise.all(Array.from({ length: FAST }, () => get(bounded, "/")));
  expect(answers.filter((a) => a.status !== 200 || a.body !== "fast")).toEqual([]);
  // Every fast answer came while the slow backend still held all of its requests.
  expect(slowDone).toBe(0);
  expect(slowHeld.length).toBe(SLOW);
  for (const f of slowHeld.splice(0)) f();
  const slowAnswers = await Promise.all(slowCalls);
  expect(slowAnswers.filter((a) => a.status !== 200 || a.body !== "slow")).toEqual([]);
});
