// What a policy kind is (docs/design.md, "Annotations and policies"): what a policy sees of a
// request (PolicyFlow), what it may call on the I/O side (PolicyCaps, implemented by
// proxy/policies/caps.ts), and the kind itself: its contract (id, stage, parameter schema) and
// the build that turns checked parameters into a step. Types only: the kind modules of this
// folder, their registry and the proxy's runner (proxy/policies/run.ts) all import it.
import type { Config } from "../config/types.ts";
import type { HashFormat } from "../policy/htpasswd.ts";
import type { KindContract } from "../policy/contract.ts";
import type { Backend, Match, Route, Upstream } from "../table/types.ts";
import type { X509Certificate } from "node:crypto";
import type { HeaderEdit } from "../http/headers.ts";
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
   * other field Portico sets on it (http/headers.ts editHeaders); null for none, so a
   * route without one pays a null check.
   */
  responseHeaderEdits: readonly HeaderEdit[] | null;
  /**
   * proxy_redirect / proxy_cookie_domain / proxy_cookie_path (kinds/proxy-rewrite.ts): edits the
   * pod's own fields before any of the above is set; null for none, so a route without them
   * pays a null check.
   */
  responseRewrite: ((h: Headers, flow: PolicyFlow) => void) | null;
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
  /**
   * Called once with the request body when the forward step has read it whole (request
   * buffering), before it goes upstream; null for none, so a route without one pays a null
   * check. Never called for a body that streams. The mirror sends its copy's body from here.
   */
  bodyTap: ((body: Uint8Array) => void) | null;
  /** The request's TLS connection (SNI, the client's certificates), or null: plain HTTP, or a listener that cannot tell. */
  readonly tls: () => ConnectionTls | null;
  /** The process log, for what a policy must tell the operator (not per request: see each kind). */
  readonly log: PolicyLog;
}

/** The part of the process's Logger (log/logger.ts) a policy uses; log/ is on the I/O side. */
export interface PolicyLog {
  warn(msg: string, fields?: Record<string, unknown>): void;
}


/**
 * What a kind may use of the I/O side besides its parameters. The kinds are pure code (no
 * clock, timer, fetch or Bun: test/import-direction.test.ts), so what needs one is handed to
 * them here. proxy/policies/caps.ts makes one per handler; the runner passes it to `build`,
 * once per route's policies, never per request, so a step holds what it needs from it.
 */
export interface PolicyCaps {
  /** The process's configuration (live: config/live.ts). */
  readonly config: Config;
  /** Wall-clock milliseconds since the epoch (a certificate's validity, a cookie's Expires). */
  readonly now: () => number;
  /** A number in [0, 1) (affinity keys); tests pass a seeded one. */
  readonly random: () => number;
  /** The process's request limiter (limit-rps, limit-rpm, limit-connections), made on first use. */
  readonly limiter: () => Limiter;
  /** Where external-auth answers are cached: the process's, or the workers' shared table. */
  readonly authCache: () => AuthCacheStore;
  /**
   * The address to connect to for an external name (proxy/upstream/external.ts): a checked IP,
   * never loopback, link-local or metadata. Throws AddressForbiddenError (http/errors.ts) when
   * every address is refused, another ProxyError when the name does not resolve in time.
   */
  readonly resolve: (u: Upstream, timeoutMs: number) => Promise<Upstream>;
  /** The pipelining guard (proxy/pipeline/body.ts) an upstream request waits for first. */
  readonly pipelineGuard: (tls: boolean) => Promise<void>;
  /** A request Portico makes itself (an auth subrequest, a mirror): fetch (node:http for a path starting with `//`, which fetch would merge: proxy/policies/caps.ts), redirects not followed, the body not decompressed. */
  readonly subrequest: (url: string, init: SubrequestInit) => Promise<Response>;
  /** A signal that aborts after `ms` (a timer), or when `also` does. */
  readonly deadline: (ms: number, also: AbortSignal | null) => AbortSignal;
  /** Does `password` match `hash` (proxy/crypt/: bcrypt and the costly formats off the event loop)? */
  readonly verifyPassword: (password: Uint8Array, hash: string, format: HashFormat) => Promise<boolean>;
  /** Is checking `format` costly enough to be queued fairly (proxy/crypt/crypt.ts)? */
  readonly isCostly: (format: HashFormat) => boolean;
}

/** What a subrequest sends. */
export interface SubrequestInit {
  readonly method: string;
  readonly headers: Headers;
  readonly signal: AbortSignal;
  /** TLS options (an https URL): Bun's `tls` fetch option. */
  readonly tls?: { readonly rejectUnauthorized: boolean; readonly serverName?: string };
  /** A body to send (a mirror's copy of a request body read whole). */
  readonly body?: Uint8Array;
}

/** A Response ends the request with it (403, 401, a redirect, a preflight's 204); null goes on. */
export type PolicyStep = (flow: PolicyFlow) => Response | null | Promise<Response | null>;

/**
 * One kind of policy, defined once (kinds/define.ts defineKind, in the module of its stage):
 * its contract (id, stage, parameter schema: what the annotation family writes the policy
 * with) and how its parameters, checked against the schema, become a step.
 */
// biome-ignore lint: `any` so that a map holds kinds of every parameter type (build is a method: bivariant).
export interface PolicyKind<P = any> extends KindContract<P> {
  /**
   * Called once per policy object (the steps are cached with it); may throw on bad parameters.
   * `caps` is always given by the runner the handler makes; a kind that needs it throws without.
   */
  build(params: P, caps?: PolicyCaps): PolicyStep;
}

export type PolicyKinds = ReadonlyMap<string, PolicyKind>;

/**
 * How one request's endpoints are chosen when its route says so (set by a `backend` stage
 * policy). proxy/upstream/forward.ts and websocket.ts call it in place of Balancer.pick.
 */
export interface EndpointChoice {
  /** The endpoint for this attempt, never one in `exclude` unless the policy says so; null when none. */
  pick(backend: Backend, balancer: Balancer, exclude: ReadonlySet<string> | undefined): Upstream | null;
  /** The attempt on `u` got response headers (or timed out) `ms` after it was picked, connect included. */
  answered(u: Upstream, ms: number, balancer: Balancer): void;
  /** A Set-Cookie value for the client's response once an endpoint is chosen (affinity), or null. */
  setCookie(): string | null;
}

/** The proxy's endpoint balancer (proxy/upstream/balancer.ts createBalancer), as an EndpointChoice uses it. */
export interface Balancer {
  /** Next endpoint for the backend, never one in `exclude`; null when the list is empty. */
  pick(backend: Backend, exclude?: ReadonlySet<string>): Upstream | null;
  /** The endpoint refused or failed to connect. */
  failed(u: Upstream): void;
  /** The endpoint answered. */
  succeeded(u: Upstream): void;
  /** Whether the endpoint is in back-off now (for tests and /debug). */
  isBackedOff(authority: string): boolean;
  /** Whether the endpoint answered within the last WARM_MS (else connect is probed first). */
  isWarm(u: Upstream): boolean;
  /** Forget that the endpoint was warm (it timed out): the next request probes it. */
  cooled(u: Upstream): void;
  /**
   * `load-balance: ewma`: the lower-scored of two random endpoints not in `exclude` (the
   * window's, for a subset backend), preferring endpoints not backing off.
   */
  pickEwma(backend: Backend, exclude?: ReadonlySet<string>): Upstream | null;
  /** Feed an EWMA score: the endpoint answered `ms` after it was picked. */
  observe(u: Upstream, ms: number): void;
  /** The endpoint's EWMA score now (ms, decayed toward 0 while it is not used), or null if it has none. */
  ewmaScore(authority: string): number | null;
}

/** A limit of requests per period (kinds/limits.ts rateOf). */
export interface Rate {
  /** Milli-requests drained per second. */
  readonly perSecond: number;
  /** The excess allowed, in thousandths of a request. */
  readonly burst: number;
}

/** Request counting for the limits kind; proxy/policies/limiter.ts has the process's, proxy/shared/limits.ts the workers'. */
export interface Limiter {
  /** Count one request against up to two rates; false (nothing counted) when one refuses it. */
  admit(key: string, first: Rate | null, second: Rate | null): boolean;
  /** Take one of `max` connection slots; the function gives it back (once), null when none is free. */
  acquire(key: string, max: number): (() => void) | null;
  /** Keys holding rate state, and keys holding connections (for tests and memory checks). */
  readonly sizes: { readonly rates: number; readonly connections: number };
}

/** What Portico keeps of one external-auth answer (and caches). */
export interface AuthAnswer {
  readonly status: number;
  /** auth-response-headers, lower-cased, with the auth answer's value or null (absent). */
  readonly copy: Readonly<Record<string, string | null>>;
  readonly wwwAuthenticate: string | null;
  readonly setCookies: readonly string[];
}

/** Where cached auth answers live: this process's LRU, or the workers' shared table. */
export interface AuthCacheStore {
  /** The answer kept for `key`, unexpired, or undefined. */
  get(key: string): AuthAnswer | undefined;
  /** Keep the answer for `ttlMs`; false when this store cannot hold it (too large). */
  set(key: string, answer: AuthAnswer, ttlMs: number): boolean;
}

/** What the listener knows of a request's TLS connection (RequestServer.tlsOf). */
export interface ConnectionTls {
  /** The SNI the client sent, or null. */
  readonly servername: string | null;
  /** The certificates the client sent, leaf first (empty: none); the handshake proved it holds the leaf's key. */
  readonly chain: readonly X509Certificate[];
}
