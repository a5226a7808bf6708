// Public shapes of the data plane: what serving/ and admin/ plug into it.
import type { Config } from "../config/types.ts";
import type { AccessRecord } from "../log/access.ts";
import type { Logger } from "../log/logger.ts";
import type { Match, RouteTable } from "../table/types.ts";
import type { PolicyKinds } from "./policies.ts";

// The record is the access log's (its fields are the documented log line); the proxy fills it.
export type { AccessRecord };

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
