// --access-log-template's $upstream_* for the requests that do not go through fetch: gRPC and
// h2c backends (upstream/grpc.ts) and WebSocket handshakes (upstream/websocket.ts). nginx keeps
// one ngx_http_upstream_state_t per peer tried whatever the module (grpc_pass as proxy_pass:
// ngx_http_upstream_connect pushes it), writes each variable as one value per attempt joined by
// ", ", a failed attempt with the 502 (504: a timeout) of ngx_http_upstream_next, and an
// error_page's request to another upstream after " : " (ngx_http_upstream.c,
// ngx_http_upstream_addr_variable and ngx_http_upstream_status_variable). Real listeners and
// pods on 127.0.0.1; a port nothing listens on stands for an endpoint whose connect fails.
import { afterEach, describe, expect, test } from "bun:test";
import http2 from "node:http2";
import type net from "node:net";
import type { AccessRecord } from "../../src/log/access.ts";
import { compileLogTemplate } from "../../src/log/template.ts";
import type { RouteErrorPages } from "../../src/table/types.ts";
import { buildTable } from "../../src/table/build.ts";
import { freePort } from "../e2e/harness.ts";
import { startEchoServer, echoClient, unary } from "../grpc/server.ts";
import { startTlsProxy } from "../http2/helpers.ts";
import { eventually } from "../wait.ts";
import { makeBackend, makeRoute, makeTable, startProxy, type TestProxy } from "./helpers.ts";
import { rawBackend, rawClient, statuses, wsUpgrade } from "./raw.ts";

const FORMAT = "$upstream_addr|$upstream_status";
const line = compileLogTemplate(FORMAT, "default");
const config = { accessLogTemplate: FORMAT, accessLog: "stdout" as const };

const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

/** An h2c pod (HTTP/2 with prior knowledge, RFC 9113 §3.3) answering every request `status`. */
async function h2cPod(status: number): Promise<number> {
  const srv = http2.createServer((_req, res) => {
    res.writeHead(status, { "content-type": "text/plain" });
    res.end(`pod ${status}`);
  });
  const sessions = new Set<http2.ServerHttp2Session>();
  srv.on("session", (s) => {
    sessions.add(s);
    s.on("close", () => sessions.delete(s));
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", () => r()));
  cleanup.push(() => new Promise<void>((r) => {
    for (const s of sessions) s.destroy();
    srv.close(() => r());
  }));
  return (srv.address() as net.AddressInfo).port;
}

/** The error backend: answers every error request 200 "page". */
async function errorPod(): Promise<number> {
  const pod = await rawBackend(() => "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\npage");
  cleanup.push(() => pod.stop());
  return pod.port;
}

function proxyWith(route: Parameters<typeof makeRoute>[0], pages?: RouteErrorPages): TestProxy {
  const p = startProxy(buildTable([{ ...makeRoute(route), ...(pages ? { errorPages: pages } : {}) }], null), config);
  cleanup.push(() => p.stop());
  return p;
}

/** The line of the next request's record, after `send` made it. */
async function lineOf(records: AccessRecord[], send: () => Promise<unknown>): Promise<string> {
  const before = records.length;
  await send();
  await eventually(() => records.length > before, 5_000, "the access record");
  return line(records[before]!);
}

describe("h2c backends", () => {
  test("an answer an error page takes: the pod's attempt, ` : `, then the error backend's", async () => {
    const pod = await h2cPod(503);
    const err = await errorPod();
    const p = proxyWith(
      { backend: makeBackend([pod], { scheme: "h2c" }) },
      { codes: [503], intercept: true, backend: makeBackend([err], { id: "default/errors:80", service: "errors" }) },
    );
    const got = await lineOf(p.records, async () => {
      const r = await fetch(`${p.url}/x`);
      expect([r.status, await r.text()]).toEqual([200, "page"]);
    });
    expect(got).toBe(`127.0.0.1:${pod} : 127.0.0.1:${err}|503 : 200`);
  });

  test("a refused connect before the live pod: both attempts, 502 for the failed one", async () => {
    const live = await h2cPod(200);
    const dead = freePort();
    const p = proxyWith({ backend: makeBackend([dead, live], { scheme: "h2c" }) });
    // The balancer's round robin starts each request at the next endpoint: within a few
    // requests one starts at the dead one and moves on.
    for (let i = 0; i < 6; i++) {
      const got = await lineOf(p.records, async () => expect((await fetch(`${p.url}/x`)).status).toBe(200));
      if (got === `127.0.0.1:${live}|200`) continue;
      expect(got).toBe(`127.0.0.1:${dead}, 127.0.0.1:${live}|502, 200`);
      return;
    }
    throw new Error("no request started at the dead endpoint");
  });
});

describe("gRPC backends", () => {
  test("a call whose only endpoint refuses the connection: its address and 502 (Portico's UNAVAILABLE)", async () => {
    const dead = freePort();
    const p = startTlsProxy(makeTable([{ host: "dead.test", backend: makeBackend([dead], { scheme: "grpc" }) }]), { hosts: ["dead.test"], kind: "serving", config });
    cleanup.push(() => p.stop());
    const c = echoClient(p.port, "dead.test");
    cleanup.push(() => c.close());
    const got = await lineOf(p.records, async () => expect((await unary(c, { text: "x" })).err?.details).toBe("upstream connect failed"));
    expect(got).toBe(`127.0.0.1:${dead}|502`);
  });

  test("a dead endpoint before a live one: both attempts", async () => {
    const echo = await startEchoServer();
    cleanup.push(() => echo.stop());
    const dead = freePort();
    const p = startTlsProxy(makeTable([{ host: "retry.test", backend: makeBackend([dead, echo.port], { scheme: "grpc" }) }]), { hosts: ["retry.test"], kind: "serving", config });
    cleanup.push(() => p.stop());
    const c = echoClient(p.port, "retry.test");
    cleanup.push(() => c.close());
    for (let i = 0; i < 6; i++) {
      const got = await lineOf(p.records, async () => expect((await unary(c, { text: String(i) })).err).toBeNull());
      if (got === `127.0.0.1:${echo.port}|200`) continue;
      expect(got).toBe(`127.0.0.1:${dead}, 127.0.0.1:${echo.port}|502, 200`);
      return;
    }
    throw new Error("no call started at the dead endpoint");
  });
});

describe("WebSocket handshakes", () => {
  test("a connect that fails, taken by an error page: the failed attempt, ` : `, then the error backend's", async () => {
    const dead = freePort();
    const err = await errorPod();
    const p = proxyWith(
      { backend: makeBackend([dead]) },
      { codes: [502], intercept: true, backend: makeBackend([err], { id: "default/errors:80", service: "errors" }) },
    );
    const got = await lineOf(p.records, async () => {
      const c = await rawClient(p.port);
      try {
        c.write(wsUpgrade("/chat"));
        await eventually(() => c.data().endsWith("page") || c.closed(), 5_000, "the error page");
        expect(statuses(c.data())).toEqual([200]);
      } finally {
        c.destroy();
      }
    });
    expect(got).toBe(`127.0.0.1:${dead} : 127.0.0.1:${err}|502 : 200`);
  });

  // An upgraded connection's attempt answered 101; nginx counts no response body for a tunnel
  // (ngx_http_upstream_process_upgraded adds to bytes_received only), so its length is 0.
  test("a dead endpoint before one that upgrades: both attempts, 502 then 101", async () => {
    const live = Bun.serve({
      hostname: "127.0.0.1", port: 0,
      fetch: (req, server) => (server.upgrade(req) ? undefined : new Response("no", { status: 400 })),
      websocket: { message() {} },
    });
    cleanup.push(() => live.stop(true));
    const dead = freePort();
    const p = proxyWith({ backend: makeBackend([dead, live.port as number]) });
    const lengths = compileLogTemplate("$upstream_response_length", "default");
    for (let i = 0; i < 6; i++) {
      const before = p.records.length;
      const ws = new WebSocket(`ws://127.0.0.1:${p.port}/chat`);
      await new Promise<void>((resolve, reject) => {
        ws.onopen = () => resolve();
        ws.onerror = () => reject(new Error("handshake failed"));
      });
      ws.close();
      await eventually(() => p.records.length > before, 5_000, "the access record");
      const rec = p.records[before]!;
      const got = line(rec);
      if (got === `127.0.0.1:${live.port}|101`) continue;
      expect(got).toBe(`127.0.0.1:${dead}, 127.0.0.1:${live.port}|502, 101`);
      expect(lengths(rec)).toBe("0, 0");
      return;
    }
    throw new Error("no handshake started at the dead endpoint");
  });
});
