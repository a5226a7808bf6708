// h2c (HTTP/2 over cleartext TCP, prior knowledge: RFC 9113 §3.3) on node:http2, for the plain
// port while the route table holds a gRPC route: Bun.serve's own h2c cannot send response
// trailers. It listens on a loopback port behind the plain port's TCP front
// (serving/plain.ts), which sends it only connections that open with the HTTP/2 preface:
// node:http2's cleartext server cannot serve HTTP/1.1 beside h2c. Streams are served exactly
// as on the HTTPS node:http2 listener (streams.ts), with the same HTTP/2 limits.
import http2, { type Http2Server } from "node:http2";
import type { Logger } from "../log/logger.ts";
import type { DrainableServer } from "./listener.ts";
import { SERVER_H2_OPTIONS } from "./limits.ts";
import { createH2Streams, noop, type H2Handler } from "./streams.ts";

export interface H2cServerOptions {
  readonly hostname: string;
  readonly handler: H2Handler;
  readonly log: Logger;
  /** An idle session is closed after this long (default 75 s, as the plain port's keep-alive). */
  readonly idleTimeoutMs?: number;
  readonly maxResetsPerSecond?: number;
  readonly draining?: () => boolean;
  readonly onAbuse?: (reason: string) => void;
}

export interface H2cServer extends DrainableServer {
  readonly port: number;
  /** Sessions open now. */
  readonly sessions: number;
}

/** Listens on hostname, port chosen by the OS, before it returns. */
export function startH2cServer(o: H2cServerOptions): H2cServer {
  let stopping = false;
  const pending = { n: 0 };
  const streams = createH2Streams({
    log: o.log, handler: () => o.handler, idleMs: o.idleTimeoutMs ?? 75_000, resets: o.maxResetsPerSecond, scheme: "http", pending,
    stopping: () => stopping, ...(o.draining ? { draining: o.draining } : {}),
    ...(o.onAbuse ? { onAbuse: o.onAbuse } : {}),
  });
  const s: Http2Server = http2.createServer({ ...SERVER_H2_OPTIONS, settings: { ...SERVER_H2_OPTIONS.settings } });
  s.on("error", (e) => o.log.error("h2c listener error", { err: String(e) }));
  s.on("sessionError", noop);
  s.on("session", streams.onSession);
  s.on("stream", streams.onStream);
  s.listen({ port: 0, host: o.hostname });
  if (!s.listening) {
    s.close();
    throw new Error(`h2c: cannot listen on ${o.hostname}`);
  }
  const addr = s.address();
  const port = addr !== null && typeof addr === "object" ? addr.port : 0;
  return {
    port,
    get sessions() {
      return streams.sessions.size;
    },
    get pendingRequests() {
      return pending.n;
    },
    async stop(closeActive = false) {
      stopping = true;
      s.close();
      // GOAWAY (RFC 9113 §6.8): streams in flight finish, the client opens new ones elsewhere.
      for (const session of streams.sessions) {
        if (closeActive) session.destroy();
        else if (!session.closed) session.close();
      }
    },
  };
}
