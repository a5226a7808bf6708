// The shapes forward.ts and grpc.ts share (one forwards HTTP/1.1 with fetch, the other gRPC
// over node:http2): types only, so neither imports the other's types back.
import type { Backend, RetryPolicy, Upstream, UpstreamTls } from "../../table/types.ts";
import type { ProxyError } from "../../http/errors.ts";
import type { UpstreamTry } from "../../log/upstream-tries.ts";
import type { ProxyHooks } from "../types.ts";
import type { Balancer, EndpointChoice } from "../../kinds/types.ts";
import type { ExternalResolver } from "./external.ts";
import type { SlotHolder } from "./pool-gate.ts";
import type { ResponseHeaderScan } from "../../http/headers.ts";
import type { Watchdog } from "./watchdog.ts";

export interface ForwardInput {
  readonly method: string;
  /** Normalised path plus raw query: the routed path is the forwarded path. */
  readonly pathAndQuery: string;
  readonly headers: Headers;
  /** A stream is sent once; a buffered body (proxy-request-buffering) can be sent again. */
  readonly body: ReadableStream<Uint8Array> | Uint8Array | null;
  /**
   * Whether the method may be sent twice without `non_idempotent`: all but POST, LOCK and
   * PATCH, as nginx decides (ngx_http_upstream_next refuses those once the request was sent).
   */
  readonly idempotent: boolean;
  /** The route's proxy-next-upstream policy; null = DEFAULT_RETRY. */
  readonly retry: RetryPolicy | null;
  readonly backend: Backend;
  readonly clientSignal: AbortSignal;
  /** Aborted when shutdown gives up on in-flight requests. */
  readonly stopSignal: AbortSignal;
  /**
   * The request's one abort switch, handed to fetch: the caller aborts it when the client
   * leaves or shutdown gives up; the deadline and the body limit abort it through `control`.
   * (One controller per request instead of AbortSignal.any([client, stop, attempt]), which
   * measured ~2.8 µs, ~4% of a small proxied request.)
   */
  readonly signal: AbortSignal;
  readonly responseTimeoutMs: number;
  readonly connectTimeoutMs: number;
  /** Largest upstream response header block, in bytes (--max-response-header-size). */
  readonly maxHeaderBytes: number;
  readonly balancer: Balancer;
  /** The route's way of choosing endpoints (backend stage), or null for the balancer's round robin. */
  readonly choice?: EndpointChoice | null;
  readonly hooks?: ProxyHooks | undefined;
  /** Resolves and checks ExternalName upstreams; default: the process-wide one. */
  readonly external?: ExternalResolver | undefined;
  /**
   * Receives each endpoint as it is picked (the access record), so a request whose connection
   * failed still logs the endpoint it tried, not null.
   */
  readonly record?: { upstream: string | null; tries?: UpstreamTry[] | null } | undefined;
  /**
   * The request, which holds its slot of Bun's keep-alive pool (pool-gate.ts) from its first
   * `fetch` to an `http://` upstream until it ends (Exchange.finish gives it back); undefined:
   * not gated.
   */
  readonly slot?: SlotHolder | undefined;
  /** proxy-ssl-* for an HTTPS pod (docs/design.md, "TLS to the pods"); absent or null: none. */
  readonly upstreamTls?: UpstreamTls | null | undefined;
}

export interface ForwardResult {
  readonly response: Response;
  /** The upstream connected to (for an ExternalName, the checked IP rather than the name). */
  readonly upstream: Upstream;
  readonly upstreamMs: number;
  /** The response's fields (scanResponseHeaders), for downstreamHeaders and the relay; undefined: not scanned. */
  readonly scan?: ResponseHeaderScan;
}

/** Live handle on the current attempt, so the body meter can push the deadline or abort it. */
export interface AttemptControl {
  touch(): void;
  abort(err: ProxyError): void;
}

export type RequestControl = AttemptControl & {
  bind(dog: Watchdog): void;
  renew(): AbortSignal;
  abort(err: unknown): void;
  /** The response-header deadline fired: aborts the attempt with UpstreamTimeout. */
  fire(): void;
};
