// WebSocket backpressure: a client that stops reading while the backend keeps
// sending makes the proxy close the pair once its buffer bound is passed; data is never
// dropped silently with the connection left open.
import { afterAll, expect, test } from "bun:test";
import net from "node:net";
import { WS_BUFFER_LIMIT } from "../../src/proxy/upstream/websocket.ts";
import { makeBackend, makeTable, startProxy } from "./helpers.ts";
import { eventually } from "../wait.ts";

const MSG = new Uint8Array(64 * 1024);
let sent = 0;
let backendClosed: number | null = null;
const backend = Bun.serve<object>({
  hostname: "127.0.0.1", port: 0,
  fetch(req, server) {
    return server.upgrade(req, { data: {} }) ? undefined : new Response("no", { status: 400 });
  },
  websocket: {
    backpressureLimit: 1024 * 1024 * 1024,
    open(ws) {
      const pump = () => {
        // Keep the backend's own buffer small so the pile-up happens in the proxy.
        while (backendClosed === null && sent < 8 * WS_BUFFER_LIMIT && ws.getBufferedAmount() < 1024 * 1024) {
          ws.send(MSG);
          sent += MSG.byteLength;
        }
        if (backendClosed === null && sent < 8 * WS_BUFFER_LIMIT) setTimeout(pump, 5);
      };
      pump();
    },
    message() {},
    close(_ws, code) {
      backendClosed = code;
    },
  },
});
const proxy = startProxy(makeTable([{ host: null, backend: makeBackend([backend.port as number]) }]));
afterAll(async () => {
  await proxy.stop();
  await backend.stop(true);
});

test("a client that stops reading gets the pair closed, not frames dropped", async () => {
  const sock = net.connect(proxy.port, "127.0.0.1");
  sock.on("error", () => {});
  let clientClosed = false;
  sock.on("close", () => { clientClosed = true; });
  await new Promise<void>((r) => sock.once("connect", () => r()));
  sock.write("GET /flood HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n");
  // Read the 101, then stop reading altogether.
  await new Promise<void>((r) => sock.once("data", () => r()));
  sock.pause();
  await eventually(() => backendClosed !== null, 10_000, "the backend side closed");
  console.log(`[figure] WS backpressure: backend had sent ${(sent / 1048576).toFixed(0)} MB when the proxy closed the pair (bound ${WS_BUFFER_LIMIT / 1048576} MB + socket buffers); close code at backend ${backendClosed}`);
  expect(sent).toBeLessThan(8 * WS_BUFFER_LIMIT);
  sock.resume();
  await eventually(() => clientClosed, 3_000, "the client side closed");
  sock.destroy();
});
