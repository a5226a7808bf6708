// Public shapes of the data plane: what serving/ and admin/ plug into it.
import type { ConnectionTls } from "../kinds/types.ts";
import type { Config } from "../config/types.ts";
import type { AccessRecord } from "../log/access.ts";
import type { Logger } from "../log/logger.ts";
import type { Match, RouteTable } from "../table/types.ts";
import type { PolicyKinds } from "../kinds/types.ts";

// The record is the access log's (its fields are the documented log line); the proxy fills it.
export type { AccessRecord };

/** Observers (metrics, access log). Called synchronously but guarded: they never break a request. */
export interface ProxyHooks {
  onRequestDone?(r: AccessRecord): void;
  onUpstreamRetry?(backendId: string, reason: string): void;
  onUpstreamError?(backendId: string, reason: string): void;
  onWebsocket?(delta: 1 | -1): void;
}

/**
 * What the handler needs from the listener that received a request. Bun's `Server` fits as
 * is; the HTTP/2 listener (src/http2/) gives one per request, so one handler serves both
 * (docs/design.md, "HTTP/2 and gRPC").
 */
export interface RequestServer {
  requestIP(req: Request): { readonly address: string } | null;
  /** Per-request inactivity timer in seconds, 0 = off (Bun's idleTimeout; a no-op where there is none). */
  timeout(req: Request, seconds: number): void;
  /** Hand the client connection to the WebSocket handler; false when it cannot be upgraded. */
  // biome-ignore lint: `any` because Bun types `data` by the server's generic parameter.
  upgrade(req: Request, options: { data?: any; headers?: ConstructorParameters<typeof Headers>[0] }): boolean;
  /**
   * The request's TLS connection: SNI and the certificates the client sent. Absent on Bun's
   * Server, which shows neither (docs/design.md, "Bun facts"): client certificates then count
   * as not sent.
   */
  tlsOf?(req: Request): ConnectionTls | null;
  /** Wire protocol of this request; Bun's Server has none (HTTP/1.x). */
  readonly transport?: "h1" | "h2";
  /** The port it listens on (Bun's Server has it), for nginx's port_in_redirect. */
  readonly port?: number | undefined;
  /**
   * The destination port of the connection's PROXY protocol header (--use-proxy-protocol:
   * nginx's $proxy_protocol_server_port), when it named one; set by the TCP front only.
   */
  readonly proxyDestPort?: number | undefined;
  /**
   * The source of the connection's PROXY protocol header, believed or not (nginx's
   * $proxy_protocol_addr and $proxy_protocol_port, for --access-log-template); set by the TCP front only.
   */
  readonly proxySource?: { readonly address: string; readonly port: number } | undefined;
  /**
   * Whether a request for `hostname` must not be answered on this connection: set on the
   * Bun.serve side of the SNI-split HTTPS port (serving/tls-split.ts) for the hosts it does not
   * serve, which get 421 Misdirected Request (RFC 9110 §15.5.20).
   */
  readonly misdirected?: ((table: RouteTable, hostname: string) => boolean) | undefined;
}

export type LookupFn = (table: RouteTable, host: string, path: string) => Match | null;

export interface ProxyDeps {
  readonly config: Config;
  /** Returns the live table; read once per request. */
  readonly table: () => RouteTable;
  readonly lookup: LookupFn;
  readonly hooks?: ProxyHooks | undefined;
  readonly log: Logger;
  readonly scheme: "http" | "https";
  /** Implementations of the route policies (proxy/policies/run.ts); the built-in ones when absent. */
  readonly policyKinds?: PolicyKinds | undefined;
}
