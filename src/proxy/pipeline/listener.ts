// The plain-HTTP listener. The TLS helper reuses serveOptions() for HTTPS.
import type { Server } from "bun";
import type { ProxyHandler } from "./handler.ts";
import type { WsData } from "../upstream/websocket.ts";
import { IDLE_TIMEOUT_S } from "./keepalive.ts";

/**
 * Bun's own cap on request bodies. The default 128 MiB also applies to streamed bodies
 * (measured), so it is set explicitly and high: the real limit is ours (--max-body-size and the
 * per-Ingress annotation, which may be larger than the flag), enforced per route with 413.
 */
export const BUN_MAX_BODY = Number.MAX_SAFE_INTEGER;

export function serveOptions(handler: ProxyHandler) {
  return {
    // Bun's default follows NODE_ENV (development unless "production"): never the dev error
    // pages on a traffic port, whatever the environment says.
    development: false,
    maxRequestBodySize: BUN_MAX_BODY,
    idleTimeout: IDLE_TIMEOUT_S,
    fetch: handler.fetch,
    websocket: handler.websocket,
    error: handler.error,
    // Read by the node:http2 listener once per connection (http2/streams.ts H2Handler); Bun.serve
    // ignores it.
    refusesClient: handler.refusesClient,
  };
}

export interface HttpListenerOptions {
  readonly hostname: string;
  readonly port: number;
  readonly handler: ProxyHandler;
  readonly reusePort?: boolean;
  /**
   * h2c with prior knowledge (RFC 9113 §3.3) beside HTTP/1.1: Bun.serve gives a connection that
   * opens with the HTTP/2 preface to its own HTTP/2 server (docs/design.md, "HTTP/2 and gRPC").
   */
  readonly http2?: boolean;
}

export function startHttpListener(o: HttpListenerOptions): Server<WsData> {
  return Bun.serve<WsData>({
    ...serveOptions(o.handler),
    hostname: o.hostname,
    port: o.port,
    reusePort: o.reusePort ?? false,
    ...(o.http2 ? { http2: true } : {}),
  });
}
