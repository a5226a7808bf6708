// The proxy's side of error pages with hand-built routes (the compiler's side:
// test/compile/error-pages.test.ts; the whole process: test/e2e/error-pages.test.ts). Real
// Portico handler and listener, real backends on 127.0.0.1. ingress-nginx at dbb11b92:
// nginx.tmpl ~1398-1405 (proxy_intercept_errors only with the annotation's list and without
// the opt-out; error_page for every listed code), ~671-680 (the built-in default server that
// answers 404 when no default backend is set). Every case runs over HTTP/1.1, h2 and HTTP/3.
import { afterAll, describe, expect, test } from "bun:test";
import type { Backend, RouteErrorPages } from "../../src/table/types.ts";
import { buildTable } from "../../src/table/build.ts";
import { makeBackend, makeRoute, startProxyOver, TRANSPORTS } from "./helpers.ts";

const cleanup: Array<() => unknown> = [];
afterAll(async () => {
  for (const f of cleanup.reverse()) await f();
});

function server(answer: (req: Request) => Response) {
  const heads: { method: string; url: string; code: string | null }[] = [];
  const s = Bun.serve({
    hostname: "127.0.0.1", port: 0,
    fetch(req) {
      heads.push({ method: req.method, url: new URL(req.url).pathname + new URL(req.url).search, code: req.headers.get("x-code") });
      return answer(req);
    },
  });
  cleanup.push(() => s.stop(true));
  return { port: s.port as number, heads };
}

const pod = server((req) => {
  const m = /\/status\/(\d+)/.exec(req.url);
  return new Response(`pod ${m?.[1] ?? 200}`, { status: Number(m?.[1] ?? 200) });
});
const errors = server((req) => new Response(`page ${req.headers.get("x-code")}`, { status: Number(req.headers.get("x-code")), headers: { "x-page": "1" } }));
const errorBackend: Backend = makeBackend([errors.port], { id: "default/errors:0", service: "errors" });

describe.each(TRANSPORTS)("over %s", (transport) => {
  async function proxyWith(pages: RouteErrorPages, backend = makeBackend([pod.port])) {
    const p = await startProxyOver(transport, buildTable([{ ...makeRoute({ backend }), errorPages: pages }], null));
    cleanup.push(() => p.stop());
    return p;
  }

  test("intercept off (disable-proxy-intercept-errors, no flag list): the pod's listed status is relayed", async () => {
    const p = await proxyWith({ codes: [404, 503], intercept: false, backend: errorBackend });
    const before = errors.heads.length;
    const r = await p.request("/status/404");
    expect(r.status).toBe(404);
    expect(await r.text()).toBe("pod 404");
    expect(errors.heads.length).toBe(before);
  });

  test("intercept off: Portico's own listed 503 (no endpoints) is still replaced, as error_page catches nginx's own", async () => {
    const p = await proxyWith({ codes: [503], intercept: false, backend: errorBackend }, makeBackend([]));
    const r = await p.request("/x");
    expect(r.status).toBe(503);
    expect(await r.text()).toBe("page 503");
    expect(r.headers.get("x-page")).toBe("1");
    expect(errors.heads.at(-1)).toEqual({ method: "GET", url: "/", code: "503" });
  });

  test("no error backend: 404, the answer of ingress-nginx's built-in default server", async () => {
    const p = await proxyWith({ codes: [500], intercept: true, backend: null });
    const r = await p.request("/status/500");
    expect(r.status).toBe(404);
    expect(await r.text()).toBe("no route\n");
  });

  test("HEAD: the method is kept and the error backend's status relayed without a body", async () => {
    const p = await proxyWith({ codes: [500], intercept: true, backend: errorBackend });
    const r = await p.request("/status/500", { method: "HEAD" });
    expect(r.status).toBe(500);
    expect(await r.text()).toBe("");
    expect(errors.heads.at(-1)).toEqual({ method: "HEAD", url: "/", code: "500" });
  });

  test("a pod that cannot be reached, 502 listed: the error backend answers with X-Code 502", async () => {
    const dead = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") });
    const port = dead.port as number;
    await dead.stop(true);
    const p = await proxyWith({ codes: [502], intercept: false, backend: errorBackend }, makeBackend([port]));
    const r = await p.request("/a?b=c");
    expect(r.status).toBe(502);
    expect(await r.text()).toBe("page 502");
    expect(errors.heads.at(-1)).toEqual({ method: "GET", url: "/?b=c", code: "502" });
  });
});
