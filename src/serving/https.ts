// The HTTPS listener --http2 asks for: node:http2 serving h2 and HTTP/1.1 on one port
// (http2/listener.ts), or Bun.serve serving HTTP/1.1 only (tls/listener.ts). Both take the
// same proxy handler and the same certificate entries (docs/design.md, "HTTP/2 and gRPC").
import type { Config } from "../config/types.ts";
import type { Logger } from "../log/logger.ts";
import { createH2Listener, type HttpsListener } from "../http2/listener.ts";
import type { serveOptions } from "../proxy/listener.ts";
import { createTlsListener, type RotationInfo } from "../tls/listener.ts";

export function createHttpsListener(o: {
  readonly config: Config;
  readonly log: Logger;
  readonly hostname: string;
  readonly port: number;
  readonly handler: () => ReturnType<typeof serveOptions>;
  /** Other processes (our workers) bind the port too. */
  readonly shared: boolean;
  /** A shutdown drain began: HTTP/2 connections get GOAWAY where HTTP/1.1 gets Connection: close. */
  readonly draining: () => boolean;
  readonly hooks?: { onRotation?(info: RotationInfo): void; onAbuse?(reason: string): void };
}): HttpsListener {
  const common = { hostname: o.hostname, port: o.port, handler: o.handler, log: o.log, hooks: o.hooks ?? {} };
  // The Bun.serve listener always binds with SO_REUSEPORT: a rotation starts its next server
  // on the same port. The HTTP/2 listener never starts a second server, so it needs the option
  // only when workers share the port (serving/ports.ts).
  return o.config.http2 ? createH2Listener({ ...common, reusePort: o.shared, draining: o.draining, headerTimeoutMs: o.config.clientHeaderTimeoutMs }) : createTlsListener(common);
}
