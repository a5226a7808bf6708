// Public shapes of the data plane: what main.ts, admin/ and log/ consume.
import type { Config } from "../config/types.ts";
import type { Match, RouteTable } from "../table/types.ts";
import type { PolicyKinds } from "./policies.ts";

/** Minimal logger shape; src/log/ createLogger() satisfies it. */
export interface Logger {
  debug(msg: string, f?: Record<string, unknown>): void;
  info(msg: string, f?: Record<string, unknown>): void;
  warn(msg: string, f?: Record<string, unknown>): void;
  error(msg: string, f?: Record<string, unknown>): void;
}

/** One line of the access log, emitted once per request when its response is finished. */
export interface AccessRecord {
  /** Request start, ms since epoch. */
  time: number;
  requestId: string;
  client: string;
  method: string;
  host: string;
  path: string;
  status: number;
  bytesIn: number;
  bytesOut: number;
  durationMs: number;
  /** `ip:port` of the endpoint that answered (the last attempt), or null. */
  upstream: string | null;
  upstreamStatus: number | null;
  /** Time from the first upstream attempt to response headers. */
  upstreamMs: number | null;
  /** `namespace/name` of the Ingress that routed the request. */
  ingress: string | null;
  /** Backend id `namespace/service:port`. */
  service: string | null;
  websocket: boolean;
  /** ProxyErrorCode, "ClientClosed", "UpstreamAborted", "StreamIdle" or null. */
  error: string | null;
  scheme: "http" | "https";
}

/** Observers (metrics, access log). Called synchronously but guarded: they never break a request. */
export interface ProxyHooks {
  onRequestDone?(r: AccessRecord): void;
  onUpstreamRetry?(backendId: string, reason: string): void;
  onUpstreamError?(backendId: string, reason: string): void;
  onWebsocket?(delta: 1 | -1): void;
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
  /** Implementations of the route policies (proxy/policies.ts); the built-in ones when absent. */
  readonly policyKinds?: PolicyKinds | undefined;
}
