// The WebSocket close handshake against a pod that never completes it (RFC 6455 §7.1.1: the
// endpoint that sent Close waits for the peer's; §7.1.7 lets it give up). Portico closes the
// pod's side when the client closes, or when a direction passes its buffer bound (1011); a pod
// that reads on but never answers the Close, nor closes, held that connection for good. Raw
// sockets both sides, on every listener a WebSocket reaches; loopback only.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import net from "node:net";
import { WS_CLOSE_GRACE_MS } from "../../src/proxy/upstream/websocket.ts";
import { makeBackend, makeTable, RAW_LISTENERS, startRawProxy, type RawProxy } from "./helpers.ts";
import { rawClient, wsUpgrade } from "./raw.ts";
import { eventually } from "../wait.ts";

/** A client frame (RFC 6455 §5.2): FIN, masked with a zero key (so the payload reads as sent). */
function clientFrame(opcode: number, payload: Buffer): string {
  if (payload.length > 125) throw new Error("short frames only");
  return Buffer.concat([Buffer.from([0x80 | opcode, 0x80 | payload.length, 0, 0, 0, 0]), payload]).toString("latin1");
}
const closeFrame = (code: number) => {
  const p = Buffer.alloc(2);
  p.writeUInt16BE(code);
  return clientFrame(0x8, p);
};

/** A pod that completes the handshake, reads everything after it, answers nothing, closes nothing. */
interface Deaf {
  readonly port: number;
  readonly conns: Array<{ bytes: number; closed: boolean }>;
  stop(): Promise<void>;
}
async function deafPod(): Promise<Deaf> {
  const conns: Deaf["conns"] = [];
  const sockets = new Set<net.Socket>();
  const srv = net.createServer((s) => {
    sockets.add(s);
    const c = { bytes: 0, closed: false };
    conns.push(c);
    s.on("error", () => {});
    s.on("close", () => {
      c.closed = true;
      sockets.delete(s);
    });
    let head = "";
    const onHead = (d: Buffer) => {
      head += d.toString("latin1");
      const key = /\r\nsec-websocket-key: *(\S+)/i.exec(head)?.[1];
      if (!head.includes("\r\n\r\n") || key === undefined) return;
      s.off("data", onHead);
      const accept = createHash("sha1").update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest("base64");
      s.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
      s.on("data", (more: Buffer) => (c.bytes += more.length));
    };
    s.on("data", onHead);
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", () => r()));
  return {
    port: (srv.address() as net.AddressInfo).port,
    conns,
    stop: () => new Promise<void>((r) => {
      for (const s of sockets) s.destroy();
      srv.close(() => r());
    }),
  };
}

for (const kind of RAW_LISTENERS) describe(kind, () => {
  let pod: Deaf;
  let proxy: RawProxy;
  beforeAll(async () => {
    pod = await deafPod();
    proxy = startRawProxy(kind, makeTable([{ host: null, path: "/", backend: makeBackend([pod.port]) }]));
  });
  afterAll(async () => {
    await proxy.stop();
    await pod.stop();
  });

  test("the client closes; the pod never answers Portico's Close: its connection is cut after the grace", async () => {
    const c = await rawClient(proxy.port, proxy);
    try {
      c.write(wsUpgrade("/ws"));
      await eventually(() => c.data().startsWith("HTTP/1.1 101"), 5_000, "the upgrade");
      await eventually(() => pod.conns.length === 1, 5_000, "the pod's connection");
      const conn = pod.conns[0]!;
      c.write(clientFrame(0x2, Buffer.from("hi")));
      await eventually(() => conn.bytes > 0, 5_000, "a frame relayed");
      const before = conn.bytes;
      c.write(closeFrame(1000));
      // Portico's Close (a frame of its own) reaches the pod first.
      await eventually(() => conn.bytes > before, 5_000, "Portico's Close at the pod");
      // The bound is the grace plus a loaded machine's slack, not an assertion on speed.
      await eventually(() => conn.closed, WS_CLOSE_GRACE_MS * 6, "the pod's connection ending");
      expect(conn.closed).toBe(true);
    } finally {
      c.destroy();
    }
  }, WS_CLOSE_GRACE_MS * 8);
});
