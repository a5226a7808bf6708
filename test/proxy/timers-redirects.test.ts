// Timers and redirects: an annotation duration past what a timer can hold is refused, the
// stream idle timeout covers WebSockets, a redirect never carries an empty host, and an
// absolute-form target is routed and forwarded by Host. Backends are raw sockets that log
// the bytes they receive.
import { afterEach, describe, expect, test } from "bun:test";
import { compile } from "../../src/compile/compile.ts";
import { DEFAULT_COMPILE_CONFIG } from "../compile/config.ts";
import { loadFixture } from "../compile/snapshot.ts";
import { ingress, ingressClass, service, slice, yamlDocs } from "../e2e/objects.ts";
import { makeBackend, makeTable, startProxy, statusLine, type TestProxy } from "./helpers.ts";
import { firstResponse, namedBackend, type NamedBackendOptions, wsUpgrade, type RawBackend } from "./raw.ts";
import { eventually } from "../wait.ts";
import { closeCode } from "./ws-frames.ts";

const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

async function backend(name: string, opts: NamedBackendOptions = {}): Promise<RawBackend> {
  const b = await namedBackend(name, opts);
  cleanup.push(() => b.stop());
  return b;
}
function proxyOf(...args: Parameters<typeof startProxy>): TestProxy {
  const p = startProxy(...args);
  cleanup.push(() => p.stop());
  return p;
}

const headerOf = (raw: string, name: string) => new RegExp(`\\r\\n${name}: *([^\\r]*)`, "i").exec(raw)?.[1] ?? null;

describe("annotation durations", () => {
  test("a duration past 2^31-1 ms is refused with a diagnostic, and the default applies", async () => {
    // The backend completes the handshake after 150 ms. A 600h response-timeout used to be
    // accepted and armed a setTimeout Bun clamps to 1 ms: the handshake failed with 504.
    const be = await backend("slow-ws", { upgradeDelayMs: 150 });
    const docs = yamlDocs([
      ingressClass(),
      service("web", "chat"),
      slice("web", "chat", [be.port]),
      ingress("web", "chat", [{ host: "a.test", paths: [{ path: "/", service: "chat" }] }], {
        annotations: { "portico.dev/response-timeout": "600h", "portico.dev/stream-idle-timeout": "596h" },
      }),
    ]);
    const result = compile(loadFixture(docs).snapshot, DEFAULT_COMPILE_CONFIG);
    const invalid = result.diagnostics.filter((d) => d.reason === "InvalidAnnotation");
    expect(invalid).toHaveLength(1);
    expect(invalid[0]!.message).toContain("portico.dev/response-timeout");
    expect(invalid[0]!.message).toContain("at most 2147483647 ms");
    const proxy = proxyOf(result.table);
    const raw = await firstResponse(proxy, wsUpgrade("/room"));
    expect(statusLine(raw)).toBe(101);
    expect(be.lines()).toEqual(["GET /room HTTP/1.1"]);
  });
});

function openWs(port: number, path: string): Promise<WebSocket> {
  const ws = new WebSocket(`ws://127.0.0.1:${port}${path}`, { headers: { host: "a.test" } } as Bun.WebSocketOptions);
  return new Promise((resolve, reject) => {
    ws.onopen = () => resolve(ws);
    ws.onerror = () => reject(new Error("ws error"));
  });
}
const closed = (ws: WebSocket) =>
  new Promise<{ code: number; reason: string }>((resolve) => {
    ws.onclose = (e) => resolve({ code: e.code, reason: e.reason });
  });

/** Text frame from the server side: unmasked (RFC 6455 §5.1). */
const serverText = (s: string) => Buffer.concat([Buffer.from([0x81, s.length]), Buffer.from(s)]);

describe("--stream-idle-timeout covers WebSockets", () => {
  test("a relay with no data either way is closed on both sides with 1001", async () => {
    const be = await backend("ws");
    const proxy = proxyOf(makeTable([{ host: null, backend: makeBackend([be.port]) }]), { streamIdleTimeoutMs: 300 });
    const ws = await openWs(proxy.port, "/quiet");
    const end = await closed(ws);
    expect(end).toEqual({ code: 1001, reason: "idle timeout" });
    expect(be.lines()).toEqual(["GET /quiet HTTP/1.1"]);
    // The backend got a Close frame with the same code, not a dropped socket.
    await eventually(() => closeCode(be.hits[0]!.after) !== null, 5_000, "a Close frame at the backend");
    expect(closeCode(be.hits[0]!.after)).toBe(1001);
    await eventually(() => proxy.records.length > 0, 5_000, "the access record");
    expect(proxy.records.at(-1)).toMatchObject({ status: 101, websocket: true, error: "StreamIdle" });
  });

  test("the route's own stream-idle-timeout wins over the flag", async () => {
    const be = await backend("ws");
    const table = makeTable([{ host: null, backend: makeBackend([be.port]), options: { streamIdleTimeoutMs: 300 } }]);
    const proxy = proxyOf(table, { streamIdleTimeoutMs: 300_000 });
    const ws = await openWs(proxy.port, "/quiet");
    expect(await closed(ws)).toEqual({ code: 1001, reason: "idle timeout" });
  });

  test("data in either direction keeps it open; silence then closes it", async () => {
    const be = await backend("ws");
    const proxy = proxyOf(makeTable([{ host: null, backend: makeBackend([be.port]) }]), { streamIdleTimeoutMs: 600 });
    const ws = await openWs(proxy.port, "/chat");
    let ended = false;
    const end = closed(ws).then((e) => ((ended = true), e));
    const received: string[] = [];
    ws.onmessage = (e) => received.push(String(e.data));
    // 1.2 s of client → backend frames, 100 ms apart, then 1.2 s of backend → client frames:
    // each phase is twice the idle timeout, each gap a sixth of it.
    for (let i = 0; i < 12; i++) {
      ws.send(`up${i}`);
      await Bun.sleep(100); // the client's pace on purpose: gaps under the idle timeout
    }
    expect(ended).toBe(false);
    for (let i = 0; i < 12; i++) {
      be.hits[0]!.socket.write(serverText(`down${i}`));
      await Bun.sleep(100); // the backend's pace on purpose: gaps under the idle timeout
    }
    expect(ended).toBe(false);
    expect(received).toHaveLength(12);
    expect(await end).toEqual({ code: 1001, reason: "idle timeout" });
  });
});

describe("redirects", () => {
  const redirecting = async () => {
    const be = await backend("app");
    const table = makeTable([{ host: null, backend: makeBackend([be.port]), options: { forceSslRedirect: true } }]);
    return { be, proxy: proxyOf(table, { httpsPort: 443 }) };
  };

  test("no Host (HTTP/1.0): 400, never a Location with an empty authority", async () => {
    const { be, proxy } = await redirecting();
    for (const target of ["/evil.example/x", "//evil.example/x", "/\\evil.example/x"]) {
      const raw = await firstResponse(proxy, `GET ${target} HTTP/1.0\r\n\r\n`);
      expect(statusLine(raw), target).toBe(400);
      expect(headerOf(raw, "location"), target).toBeNull();
    }
    expect(be.hits).toHaveLength(0);
  });

  test("with a Host: 308 to that host and the routed path", async () => {
    const { be, proxy } = await redirecting();
    const raw = await firstResponse(proxy, "GET //evil.example/x?q=1 HTTP/1.1\r\nHost: A.test\r\nConnection: close\r\n\r\n");
    expect(statusLine(raw)).toBe(308);
    expect(headerOf(raw, "location")).toBe("https://a.test/evil.example/x?q=1");
    expect(be.hits).toHaveLength(0);
  });
});

describe("absolute-form targets", () => {
  test("routed and forwarded by Host; the target's authority is never used", async () => {
    const a = await backend("a");
    const other = await backend("other");
    const proxy = proxyOf(makeTable([
      { host: "a.test", backend: makeBackend([a.port]) },
      { host: "other.test", backend: makeBackend([other.port]) },
    ]));
    let raw = await firstResponse(proxy, "GET http://other.test/p?q=1 HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n");
    expect(statusLine(raw)).toBe(200);
    expect(a.lines()).toEqual(["GET /p?q=1 HTTP/1.1"]);
    expect(headerOf(a.hits[0]!.head, "host")).toBe("a.test");
    // Without Host (HTTP/1.0) there is no host to route by: the authority is not one either.
    raw = await firstResponse(proxy, "GET http://other.test/p HTTP/1.0\r\n\r\n");
    expect(statusLine(raw)).toBe(404);
    expect(other.hits).toHaveLength(0);
  });
});
