// Why a retiring TLS server drains for a while before it stops, although meanwhile it still
// takes some new connections (docs/design.md, "Bun facts measured here"): Bun.serve's only way to
// close its listening socket, stop(false), also ends every keep-alive connection it sees as idle,
// at once. Pinned here as measured on Bun 1.4.5, so a Bun that changes it shows up.
import { afterAll, expect, test } from "bun:test";
import { connect, type TLSSocket } from "node:tls";
import { createCertificate } from "./pki.ts";
import { listeningSockets } from "./helpers.ts";
import { eventually } from "../wait.ts";

const pem = createCertificate({ subjectCN: "stop.test", sans: ["stop.test"] });
let entered = 0;
let release: (() => void) | null = null;
const server = Bun.serve({
  hostname: "127.0.0.1", port: 0, reusePort: true, tls: { cert: pem.certPem, key: pem.keyPem },
  async fetch(req) {
    entered++;
    // Held until the test releases it: a request in flight across stop(false).
    if (new URL(req.url).pathname === "/held") await new Promise<void>((r) => (release = r));
    return new Response("ok");
  },
});
const sockets: TLSSocket[] = [];
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await server.stop(true);
});

function client(): { read: () => string; ended: () => boolean; ready: Promise<void>; socket: TLSSocket } {
  let buf = "";
  let ended = false;
  const socket = connect({ host: "127.0.0.1", port: server.port as number, servername: "stop.test", rejectUnauthorized: false });
  sockets.push(socket);
  socket.setEncoding("utf8");
  socket.on("data", (d: string) => (buf += d));
  socket.on("end", () => (ended = true));
  socket.on("close", () => (ended = true));
  socket.on("error", () => (ended = true));
  return { read: () => buf, ended: () => ended, socket, ready: new Promise((r) => socket.once("secureConnect", () => r())) };
}

test("stop(false) closes the listening socket at once, and with it every idle keep-alive connection; a request in flight is answered without Connection: close", async () => {
  const idle = client();
  await idle.ready;
  idle.socket.write("GET / HTTP/1.1\r\nHost: stop.test\r\n\r\n");
  await eventually(() => idle.read().endsWith("\r\n\r\nok"), 5_000, "the idle connection's first answer");
  const busy = client();
  await busy.ready;
  busy.socket.write("GET /held HTTP/1.1\r\nHost: stop.test\r\n\r\n");
  await eventually(() => release !== null, 5_000, "the held request in the handler");
  expect(listeningSockets(server.port as number)).toBe(1);

  const stopped = server.stop(false);
  // The listening socket is gone in the same turn: no new connection reaches this server...
  expect(listeningSockets(server.port as number)).toBe(0);
  // ...and the keep-alive connection that was idle is ended by the server, with no answer to
  // wait for: a request its client sent meanwhile would be lost, which is what the drain's
  // Connection: close answers avoid.
  await eventually(() => idle.ended(), 5_000, "the idle keep-alive connection closed by the server");
  expect(busy.ended()).toBe(false);
  release!();
  await eventually(() => busy.ended(), 5_000, "the busy connection closed after its answer");
  const head = busy.read().split("\r\n\r\n")[0]!.toLowerCase();
  expect(head.startsWith("http/1.1 200")).toBe(true);
  expect(head.includes("connection: close")).toBe(false);
  await stopped;
});
