// Subsetting through the real proxy: a Service with more endpoints than the
// window is served by a window of them, and dead endpoints inside the window are skipped.
import { afterAll, expect, test } from "bun:test";
import { MAX_SUBSET } from "../../src/proxy/upstream/subset.ts";
import { makeBackend, makeTable, startProxy } from "./helpers.ts";

const cleanup: Array<() => unknown> = [];
afterAll(async () => {
  for (const f of cleanup.reverse()) await f();
});

function namedBackend(name: string) {
  const s = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response(name) });
  cleanup.push(() => s.stop(true));
  return s.port as number;
}

async function deadPort(): Promise<number> {
  const s = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") });
  const p = s.port as number;
  await s.stop(true);
  return p;
}

async function getAll(url: string, n: number, conc: number): Promise<{ statuses: number[]; bodies: string[] }> {
  const statuses: number[] = [];
  const bodies: string[] = [];
  let i = 0;
  const worker = async () => {
    while (i++ < n) {
      const r = await fetch(url);
      statuses.push(r.status);
      bodies.push(await r.text());
    }
  };
  await Promise.all(Array.from({ length: conc }, worker));
  return { statuses, bodies };
}

test("40 endpoints: one process's traffic goes to a window of them, all answered", async () => {
  const ports: number[] = [];
  for (let i = 0; i < 40; i++) ports.push(namedBackend(`ep${i}`));
  const p = startProxy(makeTable([{ host: null, backend: makeBackend(ports) }]));
  cleanup.push(() => p.stop());
  const { statuses, bodies } = await getAll(p.url + "/", 96, 8);
  expect(statuses.every((s) => s === 200)).toBe(true);
  const distinct = new Set(bodies);
  // The window slides by one endpoint every 500 ms: a slow run may see a few more.
  expect(distinct.size).toBeGreaterThanOrEqual(MAX_SUBSET);
  expect(distinct.size).toBeLessThan(MAX_SUBSET + 8);
});

test("dead endpoints inside the window are skipped once learned", async () => {
  const ports: number[] = [];
  for (let i = 0; i < 20; i++) ports.push(namedBackend(`live${i}`));
  for (let i = 0; i < 20; i++) ports.push(await deadPort());
  const p = startProxy(makeTable([{ host: null, backend: makeBackend(ports) }]));
  cleanup.push(() => p.stop());
  // Learning: the first requests meet the dead ones (probe, back-off, next endpoint).
  await getAll(p.url + "/", 40, 1);
  const { statuses, bodies } = await getAll(p.url + "/", 60, 4);
  expect(statuses.filter((s) => s !== 200)).toEqual([]);
  expect(bodies.every((b) => b.startsWith("live"))).toBe(true);
  expect(new Set(bodies).size).toBeGreaterThan(1);
});
