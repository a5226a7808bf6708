// Retries as ingress-nginx configures them: proxy-next-upstream (default `error timeout`),
// proxy-next-upstream-tries (default 3), proxy-next-upstream-timeout (default 0). Sources:
// ingress-nginx internal/ingress/annotations/proxy/main.go (values), controller/config/config.go
// (defaults), template.go buildNextUpstream and nginx.tmpl (the directives), and nginx's
// ngx_http_upstream_next (what each condition covers). Real Portico, real backends on
// 127.0.0.1, attempts counted per endpoint.
import { afterAll, expect, test } from "bun:test";
import { parseAnnotations } from "../../src/compile/annotations.ts";
import type { RetryPolicy } from "../../src/table/types.ts";
import { makeBackend, makeTable, startProxy } from "./helpers.ts";

const cleanup: Array<() => unknown> = [];
afterAll(async () => {
  for (const f of cleanup.reverse()) await f();
});

const N = "nginx.ingress.kubernetes.io/";

/** The route's retry policy, read from annotations as the compiler does. */
function retryOf(ann: Record<string, string>): RetryPolicy | null {
  const p = parseAnnotations(ann);
  expect(p.problems).toEqual([]);
  return p.options.retry;
}

/** A backend answering `status` with its name as the body, counting requests by method. */
function statusBackend(name: string, status: number) {
  const hits: string[] = [];
  const s = Bun.serve({
    hostname: "127.0.0.1", port: 0,
    async fetch(req) {
      hits.push(req.method);
      await req.arrayBuffer();
      return new Response(`${name} ${status}\n`.repeat(status === 200 ? 1 : 2000), { status });
    },
  });
  cleanup.push(() => s.stop(true));
  return { port: s.port as number, hits };
}

/** Accepts, reads, never answers; counts the request heads it receives. */
function hangBackend() {
  let heads = 0;
  const l = Bun.listen({
    hostname: "127.0.0.1", port: 0,
    socket: {
      data(_s, d) {
        if (/^[A-Z]+ \//.test(d.toString("latin1"))) heads++;
      },
    },
  });
  cleanup.push(() => l.stop(true));
  return { port: l.port, heads: () => heads };
}

/** A port nobody listens on (bound then released): connections are refused. */
async function deadPort(): Promise<number> {
  const s = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") });
  const p = s.port as number;
  await s.stop(true);
  return p;
}

function proxyFor(ports: number[], options: Record<string, unknown>) {
  const retries: string[] = [];
  const p = startProxy(makeTable([{ host: null, backend: makeBackend(ports), options }]), {}, { onUpstreamRetry: (_b, r) => retries.push(r) });
  cleanup.push(() => p.stop());
  return { ...p, retries };
}

test("no annotation: ingress-nginx's `error timeout`: a 502 from a pod is relayed, not retried", async () => {
  // http_502 is not in the default list (config.go ProxyNextUpstream "error timeout").
  const bs = [statusBackend("a", 502), statusBackend("b", 502), statusBackend("c", 502)];
  const p = proxyFor(bs.map((b) => b.port), {});
  const r = await fetch(p.url + "/x");
  expect(r.status).toBe(502);
  expect(/^[abc] 502\n/.test(await r.text())).toBe(true);
  expect(bs.map((b) => b.hits.length).sort()).toEqual([0, 0, 1]);
  expect(p.retries).toEqual([]);
});

test("no annotation: a response deadline moves a GET to another pod (`timeout`), up to 3 tries, one per pod", async () => {
  // Four pods that never answer: tries 3 (config.go ProxyNextUpstreamTries) → exactly three
  // attempts, on three different pods, then 504.
  const hs = [hangBackend(), hangBackend(), hangBackend(), hangBackend()];
  const p = proxyFor(hs.map((h) => h.port), { responseTimeoutMs: 200 });
  const r = await fetch(p.url + "/slow");
  expect(r.status).toBe(504);
  expect(hs.map((h) => h.heads()).sort()).toEqual([0, 1, 1, 1]);
  expect(p.retries).toEqual(["timeout", "timeout"]);
  expect(p.records.at(-1)).toMatchObject({ status: 504, error: "UpstreamTimeout" });
});

test("no annotation: two silent pods and a live one: every GET is answered by the live one", async () => {
  const hs = [hangBackend(), hangBackend()];
  const live = statusBackend("live", 200);
  const p = proxyFor([...hs.map((h) => h.port), live.port], { responseTimeoutMs: 200 });
  for (let i = 0; i < 3; i++) {
    const r = await fetch(p.url + "/x");
    expect(r.status).toBe(200);
    expect(await r.text()).toBe("live 200\n");
  }
  expect(live.hits).toEqual(["GET", "GET", "GET"]);
});

test("no annotation: refused connects move any request, POST with a body too (nothing was sent)", async () => {
  // `error` covers a failed connect; nginx moves on from it whatever the method, as the
  // request never reached a pod.
  const dead = [await deadPort(), await deadPort()];
  const live = statusBackend("live", 200);
  const p = proxyFor([...dead, live.port], {});
  for (let i = 0; i < 3; i++) {
    const r = await fetch(p.url + "/x", { method: "POST", body: "payload" });
    expect(r.status).toBe(200);
  }
  expect(live.hits).toEqual(["POST", "POST", "POST"]);
});

test("http_502 with tries 2: two attempts on two pods, the last answer relayed whole", async () => {
  const retry = retryOf({ [`${N}proxy-next-upstream`]: "error timeout http_502", [`${N}proxy-next-upstream-tries`]: "2" });
  const bs = [statusBackend("a", 502), statusBackend("b", 502), statusBackend("c", 502)];
  const p = proxyFor(bs.map((b) => b.port), { retry });
  const r = await fetch(p.url + "/x");
  expect(r.status).toBe(502);
  const body = await r.text();
  // The first answer (its 12 kB body cancelled) never reaches the client: one pod's body only.
  expect(/^(a|b|c) 502\n$/.test(body.slice(0, 6))).toBe(true);
  expect(body).toBe(body.slice(0, 6).repeat(2000));
  expect(bs.map((b) => b.hits.length).sort()).toEqual([0, 1, 1]);
  expect(p.retries).toEqual(["http_502"]);
});

/** Send one request; say which pods saw it (by their status) and what the client got. */
async function once(p: { url: string }, sick: { hits: string[] }, ok: { hits: string[] }, init: RequestInit) {
  const before = [sick.hits.length, ok.hits.length];
  const r = await fetch(p.url + "/x", init);
  await r.arrayBuffer();
  return { status: r.status, sick: sick.hits.length - (before[0] as number), ok: ok.hits.length - (before[1] as number) };
}

test("http_503: a GET that meets a 503 is answered by the other pod; a POST is never sent twice", async () => {
  const retry = retryOf({ [`${N}proxy-next-upstream`]: "http_503" });
  const sick = statusBackend("sick", 503);
  const ok = statusBackend("ok", 200);
  const p = proxyFor([sick.port, ok.port], { retry });
  for (let i = 0; i < 4; i++) {
    const o = await once(p, sick, ok, {});
    // Whichever pod round robin picks first, the healthy one answers, once.
    expect(o.status).toBe(200);
    expect(o.ok).toBe(1);
    expect(o.sick).toBeLessThanOrEqual(1);
  }
  // POST, LOCK and PATCH are never resent without `non_idempotent` (ngx_http_upstream_next):
  // one pod sees each, and its answer is the client's.
  for (const init of [{ method: "POST", body: "b" }, { method: "POST" }, { method: "POST" }, { method: "PATCH" }]) {
    const o = await once(p, sick, ok, init);
    expect(o.sick + o.ok).toBe(1);
    expect(o.status).toBe(o.sick === 1 ? 503 : 200);
  }
});

test("non_idempotent: a POST is resent, with its body when the body was buffered (the default), never when it streamed", async () => {
  const retry = retryOf({ [`${N}proxy-next-upstream`]: "http_503 non_idempotent" });
  expect(retry?.nonIdempotent).toBe(true);
  const sick = statusBackend("sick", 503);
  const ok = statusBackend("ok", 200);
  const p = proxyFor([sick.port, ok.port], { retry });
  let sawSickFirst = 0;
  for (const init of [{ method: "POST" }, { method: "POST" }, { method: "POST", body: "b" }, { method: "POST", body: "b" }]) {
    const o = await once(p, sick, ok, init);
    expect(o.status).toBe(200);
    expect(o.ok).toBe(1);
    sawSickFirst += o.sick;
  }
  expect(sawSickFirst).toBeGreaterThan(0);
  // proxy-request-buffering off: the body streams and is not kept, so it is sent once
  // (nginx's ngx_http_upstream_next refuses an unbuffered body the same way).
  const streamed = proxyFor([sick.port, ok.port], { retry, requestBufferSize: 0 });
  for (let i = 0; i < 4; i++) {
    const o = await once(streamed, sick, ok, { method: "POST", body: "b" });
    expect(o.sick + o.ok).toBe(1);
    expect(o.status).toBe(o.sick === 1 ? 503 : 200);
  }
});

test("off: no retry at all, neither after a deadline nor after a refused connect", async () => {
  const retry = retryOf({ [`${N}proxy-next-upstream`]: "off" });
  const hs = [hangBackend(), hangBackend()];
  const p = proxyFor(hs.map((h) => h.port), { retry, responseTimeoutMs: 200 });
  expect((await fetch(p.url + "/x")).status).toBe(504);
  expect(hs.map((h) => h.heads()).sort()).toEqual([0, 1]);
  const dead = [await deadPort(), await deadPort()];
  const q = proxyFor(dead, { retry });
  expect((await fetch(q.url + "/x")).status).toBe(502);
  expect([...p.retries, ...q.retries]).toEqual([]);
});

test("tries 0: one attempt per pod, every pod once", async () => {
  const retry = retryOf({ [`${N}proxy-next-upstream`]: "http_500", [`${N}proxy-next-upstream-tries`]: "0" });
  const bs = [statusBackend("a", 500), statusBackend("b", 500), statusBackend("c", 500), statusBackend("d", 500), statusBackend("e", 500)];
  const p = proxyFor(bs.map((b) => b.port), { retry });
  expect((await fetch(p.url + "/x")).status).toBe(500);
  expect(bs.map((b) => b.hits.length)).toEqual([1, 1, 1, 1, 1]);
});

test("proxy-next-upstream-timeout: no new attempt once it has passed since the first", async () => {
  // 500 ms deadline per attempt, 900 ms budget. No third: the second attempt's deadline comes
  // 1000 ms or more after the first began (a timer never fires early), past the budget, on any
  // machine. A second: the first deadline fires at 500 ms plus the watchdog's tick and the
  // machine's lag, which has 350 ms of room before the budget is spent.
  const retry = retryOf({ [`${N}proxy-next-upstream-timeout`]: "900ms", [`${N}proxy-next-upstream-tries`]: "0" });
  expect(retry).toMatchObject({ error: true, timeout: true, tries: 0, timeoutMs: 900 });
  const hs = [hangBackend(), hangBackend(), hangBackend(), hangBackend()];
  const p = proxyFor(hs.map((h) => h.port), { retry, responseTimeoutMs: 500 });
  expect((await fetch(p.url + "/x")).status).toBe(504);
  expect(hs.map((h) => h.heads()).sort()).toEqual([0, 0, 1, 1]);
});
