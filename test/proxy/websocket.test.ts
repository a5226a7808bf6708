// WebSocket relay: subprotocol chosen by the backend, text and binary frames,
// close codes both ways, 502 before the upgrade when the upstream is down.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { makeBackend, makeTable, rawRequest, startProxy, statusLine, type TestProxy } from "./helpers.ts";
import { eventually } from "../wait.ts";

let backendClose: { code: number; reason: string } | null = null;
let upgradeHeaders: Record<string, string> = {};
const backend = Bun.serve<{ proto: string; path: string }>({
  hostname: "127.0.0.1", port: 0,
  fetch(req, server) {
    upgradeHeaders = {};
    req.headers.forEach((v, k) => { upgradeHeaders[k] = v; });
    const offered = (req.headers.get("sec-websocket-protocol") ?? "").split(",").map((s) => s.trim());
    const proto = offered.includes("chat.v2") ? "chat.v2" : "";
    const ok = server.upgrade(req, { data: { proto, path: new URL(req.url).pathname }, headers: { "sec-websocket-protocol": proto } });
    return ok ? undefined : new Response("no", { status: 400 });
  },
  websocket: {
    open(ws) {
      // Greets and closes at once: frames and the close code arrive before the client side opens.
      if (ws.data.path === "/early") {
        ws.send("welcome");
        ws.close(4002, "early");
      }
    },
    message(ws, msg) {
      if (msg === "close-me") return ws.close(4321, "bye");
      ws.send(typeof msg === "string" ? `echo:${msg}` : msg);
    },
    close(_ws, code, reason) {
      backendClose = { code, reason };
    },
  },
});

let proxy: TestProxy;
let deadProxy: TestProxy;
beforeAll(async () => {
  proxy = startProxy(makeTable([{ host: null, backend: makeBackend([backend.port as number]) }]));
  const tmp = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") });
  const dead = tmp.port as number;
  await tmp.stop(true);
  deadProxy = startProxy(makeTable([{ host: null, backend: makeBackend([dead]) }]));
});
afterAll(async () => {
  await proxy.stop();
  await deadProxy.stop();
  await backend.stop(true);
});

function open(protocols: string[], path = "/chat?room=1"): Promise<WebSocket> {
  const ws = new WebSocket(`ws://127.0.0.1:${proxy.port}${path}`, protocols);
  ws.binaryType = "arraybuffer";
  return new Promise((resolve, reject) => {
    ws.onopen = () => resolve(ws);
    ws.onerror = () => reject(new Error("ws error"));
  });
}
function next(ws: WebSocket): Promise<string | ArrayBuffer> {
  return new Promise((resolve) => { ws.onmessage = (e) => resolve(e.data as string | ArrayBuffer); });
}
function closed(ws: WebSocket): Promise<{ code: number; reason: string }> {
  return new Promise((resolve) => { ws.onclose = (e) => resolve({ code: e.code, reason: e.reason }); });
}

test("echo with subprotocol, text and binary frames, backend close code", async () => {
  const ws = await open(["chat.v1", "chat.v2"]);
  expect(ws.protocol).toBe("chat.v2");
  expect(upgradeHeaders["x-forwarded-for"]).toBe("127.0.0.1");
  expect(upgradeHeaders["host"]).toBe(`127.0.0.1:${proxy.port}`);
  // The handshake to the pod is `ws`'s client (websocket.ts), which lists the offered
  // subprotocols with "," (an RFC 9110 §5.6.1 list either way; Bun's global client wrote ", ").
  expect(upgradeHeaders["sec-websocket-protocol"]).toBe("chat.v1,chat.v2");
  let m = next(ws);
  ws.send("hello");
  expect(await m).toBe("echo:hello");
  const bin = new Uint8Array([0, 1, 2, 250, 255]);
  m = next(ws);
  ws.send(bin);
  expect(new Uint8Array((await m) as ArrayBuffer)).toEqual(bin);
  const c = closed(ws);
  ws.send("close-me");
  expect(await c).toEqual({ code: 4321, reason: "bye" });
  await eventually(() => proxy.records.at(-1)?.websocket === true, 5_000, "the upgrade's access record");
  expect(proxy.records.at(-1)).toMatchObject({ websocket: true, status: 101 });
});

// Bun's WebSocket client (like Chrome) fails a handshake where protocols were offered and the
// server picked none ("Missing client protocol"), so that case is a 502 here, as it would be a
// client-side failure without the proxy. Without offered protocols there is none.
test("no subprotocol offered → none; client close code reaches the backend", async () => {
  const ws = await open([]);
  expect(ws.protocol).toBe("");
  backendClose = null;
  ws.close(4000, "client done");
  await eventually(() => backendClose !== null, 5_000, "the Close at the backend");
  expect(backendClose!).toEqual({ code: 4000, reason: "client done" });
});

test("upstream down → 502 before the upgrade", async () => {
  const raw = await rawRequest(
    deadProxy.port,
    "GET /chat HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
    500,
  );
  expect(statusLine(raw)).toBe(502);
});

test("frames and close sent by the backend before the client side opened are not lost", async () => {
  const ws = new WebSocket(`ws://127.0.0.1:${proxy.port}/early`);
  const got: string[] = [];
  ws.onmessage = (e) => got.push(String(e.data));
  const c = await closed(ws);
  expect(got).toEqual(["welcome"]);
  expect(c).toEqual({ code: 4002, reason: "early" });
});
