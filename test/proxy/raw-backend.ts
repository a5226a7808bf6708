// A backend on a raw socket that logs the bytes it receives: the request line as it came off
// the wire, never a parsed URL. It answers 200 with its name and closes, or completes a
// WebSocket handshake (RFC 6455 §4.2.2) and keeps the socket, logging every later byte.
import { createHash } from "node:crypto";
import net from "node:net";

export interface RawHit {
  /** The request head exactly as received (latin1). */
  readonly head: string;
  /** Its first line. */
  readonly line: string;
  /** Bytes received after the head (WebSocket frames), appended as they arrive. */
  after: Buffer;
  readonly socket: net.Socket;
}

export interface RawBackend {
  readonly name: string;
  readonly port: number;
  readonly hits: RawHit[];
  /** Request lines received so far. */
  lines(): string[];
  stop(): Promise<void>;
}

const WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

export interface RawBackendOptions {
  /** Wait this long before answering a WebSocket handshake. */
  readonly upgradeDelayMs?: number;
}

export async function rawBackend(name: string, opts: RawBackendOptions = {}): Promise<RawBackend> {
  const hits: RawHit[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((sock) => {
    sockets.add(sock);
    sock.on("close", () => sockets.delete(sock));
    sock.on("error", () => {});
    let buf = Buffer.alloc(0);
    let hit: RawHit | null = null;
    sock.on("data", (d: Buffer) => {
      if (hit !== null) {
        hit.after = Buffer.concat([hit.after, d]);
        return;
      }
      buf = Buffer.concat([buf, d]);
      const end = buf.indexOf("\r\n\r\n");
      if (end < 0) return;
      const head = buf.subarray(0, end).toString("latin1");
      hit = { head, line: head.split("\r\n")[0]!, after: buf.subarray(end + 4), socket: sock };
      hits.push(hit);
      const key = /^sec-websocket-key:\s*(\S+)/im.exec(head)?.[1];
      if (key !== undefined && /^upgrade:\s*websocket/im.test(head)) {
        const accept = createHash("sha1").update(key + WS_GUID).digest("base64");
        const answer = () =>
          sock.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
        if (opts.upgradeDelayMs) setTimeout(answer, opts.upgradeDelayMs);
        else answer();
        return;
      }
      sock.end(`HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: ${name.length}\r\nConnection: close\r\n\r\n${name}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    name,
    port: (server.address() as net.AddressInfo).port,
    hits,
    lines: () => hits.map((h) => h.line),
    async stop() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Raw bytes of a WebSocket upgrade request for `target` (RFC 6455 §4.1). */
export function wsUpgrade(target: string, host = "a.test"): string {
  return (
    `GET ${target} HTTP/1.1\r\nHost: ${host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
  );
}
