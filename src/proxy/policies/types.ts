// The contract between the policy runner (run.ts) and the kinds (one file each here, listed in
// registry.ts): what a policy sees of a request and how a kind becomes a step. Types only, so
// every kind and the runner import it and none imports the other (docs/design.md, "Layout").
import type { Config } from "../../config/types.ts";
import type { Logger } from "../../log/logger.ts";
import type { KindContract, ParamsOf } from "../../policy/contract.ts";
import type { Backend, Match, Route } from "../../table/types.ts";
import type { EndpointChoice } from "../upstream/balancer.ts";
import type { X509Certificate } from "node:crypto";
import type { HeaderEdit } from "../../http/headers.ts";
/** What a policy sees of the request, and what a stage may change. */
export interface PolicyFlow {
  readonly req: Request;
  readonly route: Route;
  /** The lookup's answer (a regex host's carries the location and its captures: table/regex.ts). */
  readonly match: Match;
  /** The validated routing host name and normalised path the route was looked up with. */
  readonly hostname: string;
  readonly path: string;
  /** "" or "?…", as received. */
  readonly query: string;
  /** The client's scheme (X-Forwarded-Proto only from a trusted proxy). */
  readonly scheme: "http" | "https";
  /** The scheme of the connection the request came on (nginx's `$scheme`). */
  readonly connectionScheme: "http" | "https";
  /** The Host header as received (nginx's `$http_host`), "" when there is none. */
  readonly host: string;
  /** The Host header's port, or null. */
  readonly port: string | null;
  /** The port the connection came in on. */
  readonly localPort: number;
  readonly config: Config;
  /** The client's address: the peer, or what a trusted proxy reported (--trusted-proxies). */
  readonly clientIp: string;
  /**
   * Headers every answer Portico gives to this request carries (X-Request-ID...): spread them
   * into a Response a stage returns. A stage may add to them (CORS headers go on Portico's own
   * 401, 403 and 503 too).
   */
  readonly responseHeaders: Record<string, string>;
  /**
   * Headers set on the proxied response, replacing the backend's (a `vary` value is added to
   * the backend's Vary instead); null for none, so a route without them pays nothing.
   */
  upstreamResponseHeaders: Readonly<Record<string, string>> | null;
  /**
   * Gateway API ResponseHeaderModifiers for the proxied answer, applied in order after every
   * other field Portico sets on it (upstream/headers.ts editHeaders); null for none, so a
   * route without one pays a null check.
   */
  responseHeaderEdits: readonly HeaderEdit[] | null;
  /** This request's X-Request-ID. */
  readonly requestId: string;
  /** Whether the peer is a trusted proxy (--trusted-proxies): its X-Forwarded-* count. */
  readonly trusted: boolean;
  /**
   * Whether the request has a body: a Content-Length other than 0, a Transfer-Encoding, or (an
   * HTTP/2 request may carry one with neither, RFC 9113 §8.1.1) a body stream (pipeline/context.ts).
   */
  readonly hasBody: boolean;
  /** The connection's peer address (the client, or the trusted proxy in front of it). */
  readonly peer: string;
  /** X-Forwarded-For is the received list plus the peer (compute-full-forwarded-for), not the client. */
  readonly appendForwardedFor: boolean;
  /** Forward header names containing "_" (--enable-underscores-in-headers). */
  readonly underscores: boolean;
  /** The route's connect and response-header deadlines, flags applied. */
  readonly connectTimeoutMs: number;
  readonly responseTimeoutMs: number;
  /** --max-response-header-size. */
  readonly maxResponseHeaderBytes: number;
  /**
   * Fields set on the upstream request after Portico's own (a null value removes the field);
   * null for none. External authentication copies the auth answer's fields here.
   */
  upstreamRequestHeaders: Readonly<Record<string, string | null>> | null;
  /**
   * Set-Cookie lines added to the client's answer, each its own field, next to the backend's
   * (nginx's `add_header Set-Cookie`): with `always` on every answer, otherwise only on the
   * statuses add_header covers (200, 201, 204, 206, 301, 302, 303, 304, 307, 308). Null for none.
   */
  setCookies: { readonly values: readonly string[]; readonly always: boolean } | null;
  /** Path and query sent upstream: the rewrite stage may change it. */
  pathAndQuery: string;
  /** Where the request goes: the backend stage may change it. */
  backend: Backend;
  /**
   * Request fields not to send upstream (lowercased), or null: basic authentication adds
   * `authorization`, as ingress-nginx clears it for the backend.
   */
  removeHeaders: string[] | null;
  /** The Host header sent upstream instead of the client's (forwarding stage), or null. */
  upstreamHost: string | null;
  /**
   * How the backend's endpoint is chosen: null is the balancer's round robin; the backend
   * stage sets one for `load-balance: ewma`, `upstream-hash-by` or cookie affinity.
   */
  choice: EndpointChoice | null;
  /**
   * Called once when the request ends, however it ends (answered by a later stage, proxied,
   * failed, the client gone): a stage that holds something for the request's lifetime (a
   * `limit-connections` slot) gives it back here. One per request; a second holder chains.
   */
  release: (() => void) | null;
  /** The request's TLS connection (SNI, the client's certificates), or null: plain HTTP, or a listener that cannot tell. */
  readonly tls: () => ConnectionTls | null;
  /** The process log, for what a policy must tell the operator (not per request: see each kind). */
  readonly log: Logger;
}


/** What a policy implementation may read besides its parameters: the process's configuration. */
export interface PolicyContext {
  readonly config: Config;
}

/** A Response ends the request with it (403, 401, a redirect, a preflight's 204); null goes on. */
export type PolicyStep = (flow: PolicyFlow) => Response | null | Promise<Response | null>;

/**
 * An implementation of one kind of policy: its contract (policy/kinds.ts: id, stage, parameter
 * schema) and how its parameters, checked against the contract's schema, become a step.
 */
// biome-ignore lint: `any` so that a map holds kinds of every parameter type (build is a method: bivariant).
export interface PolicyKind<P = any> {
  readonly contract: KindContract<P>;
  /**
   * Called once per policy object (the steps are cached with it); may throw on bad parameters.
   * `ctx` is always given by the runner the handler makes; a kind that needs it throws without.
   */
  build(params: P, ctx?: PolicyContext): PolicyStep;
}

export type PolicyKinds = ReadonlyMap<string, PolicyKind>;

/** The runner of the kind `C` defines (its build receives the contract's parameter type). */
export type KindOf<C> = PolicyKind<ParamsOf<C>>;

/** What the listener knows of a request's TLS connection (RequestServer.tlsOf). */
export interface ConnectionTls {
  /** The SNI the client sent, or null. */
  readonly servername: string | null;
  /** The certificates the client sent, leaf first (empty: none); the handshake proved it holds the leaf's key. */
  readonly chain: readonly X509Certificate[];
}
