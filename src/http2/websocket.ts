// WebSocket upgrades (RFC 6455) arriving over HTTP/1.1 on the HTTP/2 listener. HTTP/2 itself
// carries none here (no RFC 8441 extended CONNECT: SETTINGS_ENABLE_CONNECT_PROTOCOL stays 0,
// so browsers open an HTTP/1.1 connection for them). The proxy's relay (proxy/upstream/websocket.ts) is
// written against Bun's ServerWebSocket; this bridge gives it the same calls (send, ping, pong,
// close, terminate) and handlers (open, message, ping, pong, close) over a `ws` server socket,
// so the relay, its limits and its close-code rules stay one code path. Under Bun, `ws` is Bun's built-in implementation (it resolves
// before node_modules), which accepts the raw socket node:http2 hands to 'upgrade'.
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import type { WebSocketHandler } from "bun";
import { WS_BUFFER_LIMIT } from "../proxy/upstream/websocket.ts";

interface WsSocket {
  readonly bufferedAmount: number;
  send(data: string | ArrayBuffer | Uint8Array): void;
  ping(data: Buffer): void;
  pong(data: Buffer): void;
  close(code?: number, reason?: string): void;
  terminate(): void;
  on(ev: "message", f: (data: Buffer, isBinary: boolean) => void): void;
  on(ev: "ping" | "pong", f: (data: Buffer) => void): void;
  on(ev: "close", f: (code: number, reason: Buffer) => void): void;
  on(ev: "error", f: (e: unknown) => void): void;
}

interface WsServer {
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, cb: (ws: WsSocket) => void): void;
  on(ev: "headers", f: (lines: string[], req: IncomingMessage) => void): void;
}

type WsServerCtor = new (o: {
  noServer: true;
  perMessageDeflate: boolean;
  maxPayload: number;
  handleProtocols: (offered: Set<string>, req: IncomingMessage) => string | false;
}) => WsServer;

/** Bun.serve's default maxPayloadLength, so both listeners accept the same messages. */
const MAX_MESSAGE = 16 * 1024 * 1024;

/** The ServerWebSocket calls proxy/upstream/websocket.ts makes, over a `ws` socket. */
class BridgedSocket {
  constructor(
    private readonly ws: WsSocket,
    readonly data: unknown,
  ) {}
  /**
   * Bun's ServerWebSocket contract, so the relay reads both listeners alike (its `dropped`):
   * the bytes sent, and so 0 for an empty frame that was sent, as Bun; 0 and the socket closed
   * when the frame was not queued (past the backpressure limit), as Bun.serve's
   * closeOnBackpressureLimit does, so an empty frame dropped still ends the pair. Control frames
   * (RFC 6455 §5.5.2, §5.5.3) the relay passes on too: `ws` sends nothing and throws nothing
   * once the socket is closing (measured on 1.4.5), as Bun's.
   */
  send(f: string | ArrayBuffer | Uint8Array): number {
    return this.queue(typeof f === "string" ? Buffer.byteLength(f) : f.byteLength, () => this.ws.send(f));
  }
  ping(data: Buffer): number {
    return this.queue(data.byteLength, () => this.ws.ping(data));
  }
  pong(data: Buffer): number {
    return this.queue(data.byteLength, () => this.ws.pong(data));
  }
  private queue(bytes: number, write: () => void): number {
    if (this.ws.bufferedAmount > WS_BUFFER_LIMIT) {
      this.ws.close(1011, "backpressure");
      return 0;
    }
    write();
    return bytes;
  }
  close(code?: number, reason?: string): void {
    this.ws.close(code, reason);
  }
  terminate(): void {
    this.ws.terminate();
  }
}

interface Pending {
  readonly headers: Headers;
  readonly protocol: string;
}

export interface WsBridge {
  /** Complete the handshake on `socket` and hand the socket to `handler` (its open/message/close). */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, data: unknown, headers: Headers): boolean;
}

export function createWsBridge(handler: WebSocketHandler<unknown>): WsBridge {
  const { WebSocketServer } = require("ws") as { WebSocketServer: WsServerCtor };
  const pending = new WeakMap<IncomingMessage, Pending>();
  const wss = new WebSocketServer({
    noServer: true,
    // Bun.serve does not negotiate permessage-deflate for us either (perMessageDeflate off).
    perMessageDeflate: false,
    maxPayload: MAX_MESSAGE,
    // The subprotocol the backend chose, or none (proxy/upstream/websocket.ts).
    handleProtocols: (offered, req) => {
      const p = pending.get(req)?.protocol ?? "";
      return p !== "" && offered.has(p) ? p : false;
    },
  });
  wss.on("headers", (lines, req) => {
    const p = pending.get(req);
    if (p === undefined) return;
    p.headers.forEach((v, k) => {
      if (k !== "sec-websocket-protocol") lines.push(`${k}: ${v}`);
    });
  });
  const h = handler;
  return {
    upgrade(req, socket, head, data, headers) {
      pending.set(req, { headers, protocol: headers.get("sec-websocket-protocol") ?? "" });
      try {
        wss.handleUpgrade(req, socket, head, (ws) => {
          const client = new BridgedSocket(ws, data) as unknown as Parameters<NonNullable<typeof h.open>>[0];
          ws.on("error", () => {});
          ws.on("message", (m, binary) => void h.message?.(client, binary ? (m as Buffer<ArrayBuffer>) : m.toString("utf8")));
          // `ws` answers a client's ping itself, as Bun.serve does, and then reports it.
          ws.on("ping", (d) => void h.ping?.(client, d));
          ws.on("pong", (d) => void h.pong?.(client, d));
          ws.on("close", (code, reason) => void h.close?.(client, code, reason.toString("utf8")));
          void h.open?.(client);
        });
      } catch {
        return false;
      }
      return true;
    },
  };
}
