// HTTPS upstreams (backend-protocol HTTPS): the proxy speaks TLS to the pod IP with the
// backend's serverName as SNI and does not verify the pod certificate (see forward.ts).
// Also WebSocket over TLS to the same backend.
import { afterAll, expect, test } from "bun:test";
import { generateDefaultCertificate } from "../../src/tls/default-cert.ts";
import { makeBackend, makeTable, startProxy, wsFirstReply } from "./helpers.ts";

const cert = generateDefaultCertificate();
let sawTls = false;
const backend = Bun.serve<object>({
  hostname: "127.0.0.1", port: 0,
  tls: { cert: cert.cert, key: cert.key },
  fetch(req, server) {
    sawTls = req.url.startsWith("https://");
    if (req.headers.get("upgrade") === "websocket") return server.upgrade(req, { data: {} }) ? undefined : new Response("no", { status: 400 });
    return new Response(`secure ${new URL(req.url).pathname} host=${req.headers.get("host")}`);
  },
  websocket: { message(ws, m) { ws.send(`tls-echo:${m}`); } },
});
const proxy = startProxy(makeTable([{ host: null, backend: makeBackend([backend.port as number], { scheme: "https", serverName: "svc.default.svc" }) }]));
afterAll(async () => {
  await proxy.stop();
  await backend.stop(true);
});

test("HTTP request forwarded over TLS to a self-signed pod certificate", async () => {
  const r = await fetch(proxy.url + "/x", { headers: { host: "app.test" } });
  expect(r.status).toBe(200);
  expect(await r.text()).toBe("secure /x host=app.test");
  expect(sawTls).toBe(true);
});

test("WebSocket relayed over wss to the backend", async () => {
  const msg = await wsFirstReply(`ws://127.0.0.1:${proxy.port}/ws`);
  expect(msg).toBe("tls-echo:hi");
});
