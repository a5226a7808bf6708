// connection-proxy-header through a real proxy: the Connection field a raw-socket pod
// receives. ingress-nginx at dbb11b92: annotations/connection/main.go accepts `close` or
// `keep-alive` (ValidateRegex `^(close|keep-alive)$`), nginx.tmpl writes `proxy_set_header
// Connection <value>;` in the location instead of `$connection_upgrade`, and
// test/e2e/annotations/connection.go "set connection header to keep-alive" expects the echo
// pod to report `connection=keep-alive`. The route options come from the real annotation parser.
import { afterEach, describe, expect, test } from "bun:test";
import { parseAnnotations } from "../../src/compile/annotations.ts";
import type { RouteOptions } from "../../src/table/types.ts";
import { makeBackend, makeTable, optionsOf, rawRequest, startProxy, statusLine } from "./helpers.ts";
import { fieldValues, namedBackend, OK_REPLY, rawBackend, wsUpgrade, type RawBackend } from "./raw.ts";

const N = "nginx.ingress.kubernetes.io/connection-proxy-header";
const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

async function pod(): Promise<RawBackend> {
  const b = await rawBackend(() => OK_REPLY);
  cleanup.push(() => b.stop());
  return b;
}

function proxyFor(port: number, options: Partial<RouteOptions>) {
  const p = startProxy(makeTable([{ host: "a.test", backend: makeBackend([port]), options }]));
  cleanup.push(() => p.stop());
  return p;
}


const GET = (extra = "") => `GET /c HTTP/1.1\r\nHost: a.test\r\n${extra}Connection: close\r\n\r\n`;

describe("connection-proxy-header", () => {
  test('"keep-alive" (connection.go): the pod receives Connection: keep-alive, whatever the client sent, and the annotation is served', async () => {
    const a = parseAnnotations({ [N]: "keep-alive" });
    expect(a.problems).toEqual([]);
    expect(a.unsupported).toEqual([]);
    const p = await pod();
    const proxy = proxyFor(p.port, a.options);
    expect(statusLine(await rawRequest(proxy.port, GET()))).toBe(200);
    expect(fieldValues(p.heads()[0]!, "connection")).toEqual(["keep-alive"]);
  });

  test('"close": the pod receives Connection: close, once, and the Keep-Alive a client sent is not passed on', async () => {
    const p = await pod();
    const proxy = proxyFor(p.port, optionsOf({ [N]: " close " }));
    expect(statusLine(await rawRequest(proxy.port, GET("Keep-Alive: timeout=5\r\n")))).toBe(200);
    const head = p.heads()[0]!;
    expect(fieldValues(head, "connection")).toEqual(["close"]);
    expect(fieldValues(head, "keep-alive")).toEqual([]);
    // RFC 9112 §9.6: a client that sent `close` sends no further request on that connection, so
    // the next request opens another one.
    expect(statusLine(await rawRequest(proxy.port, GET()))).toBe(200);
    expect(p.used().map((c) => c.requests.length)).toEqual([1, 1]);
  });

  test("without it the pod gets Portico's own field (Bun's fetch: keep-alive)", async () => {
    const p = await pod();
    const proxy = proxyFor(p.port, {});
    expect(statusLine(await rawRequest(proxy.port, GET()))).toBe(200);
    expect(fieldValues(p.heads()[0]!, "connection")).toEqual(["keep-alive"]);
  });

  test("a value other than close or keep-alive is refused with a diagnostic and never reaches the pod", async () => {
    for (const bad of ["upgrade", "Close", "close, x-secret", "close\r\nX-Injected: 1", "keep-alive\n", ""]) {
      const a = parseAnnotations({ [N]: bad });
      expect(a.problems).toHaveLength(1);
      expect(a.problems[0]).toContain(`${N}=${JSON.stringify(bad)}`);
      const p = await pod();
      const proxy = proxyFor(p.port, a.options);
      expect(statusLine(await rawRequest(proxy.port, GET()))).toBe(200);
      const head = p.heads()[0]!;
      expect(fieldValues(head, "connection")).toEqual(["keep-alive"]);
      expect(fieldValues(head, "x-injected")).toEqual([]);
    }
  });

  test("any other Upgrade is a plain request: `Upgrade: h2c`, or a POST asking for websocket, gets the annotation's Connection", async () => {
    // nginx.tmpl writes `proxy_set_header Connection close;` in place of `$connection_upgrade`
    // for every request of the location; Portico only spares the WebSocket handshakes its own
    // client opens (RFC 6455 §4.1: a GET with `Upgrade: websocket`). Upgrade is hop-by-hop
    // (RFC 9110 §7.8), so the pod does not get the client's.
    const p = await pod();
    const proxy = proxyFor(p.port, optionsOf({ [N]: "close" }));
    const h2c = "GET /c HTTP/1.1\r\nHost: a.test\r\nConnection: Upgrade, HTTP2-Settings, close\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n";
    expect(statusLine(await rawRequest(proxy.port, h2c))).toBe(200);
    const post = "POST /c HTTP/1.1\r\nHost: a.test\r\nConnection: Upgrade, close\r\nUpgrade: websocket\r\nContent-Length: 2\r\n\r\nhi";
    expect(statusLine(await rawRequest(proxy.port, post))).toBe(200);
    const heads = p.heads();
    expect(heads).toHaveLength(2);
    for (const head of heads) {
      expect(fieldValues(head, "connection")).toEqual(["close"]);
      expect(fieldValues(head, "upgrade")).toEqual([]);
    }
  });

  test("a WebSocket upgrade on such a route still opens (the pod's handshake keeps Connection: Upgrade)", async () => {
    const b = await namedBackend("ws");
    cleanup.push(() => b.stop());
    const proxy = proxyFor(b.port, optionsOf({ [N]: "close" }));
    const raw = await rawRequest(proxy.port, wsUpgrade("/chat"), 500);
    expect(statusLine(raw)).toBe(101);
    expect(fieldValues(b.hits[0]!.head, "connection").map((c) => c.toLowerCase())).toEqual(["upgrade"]);
  });
});
