// The route table: built once by compile/, frozen, swapped by one assignment in the holder.
// The data plane reads it once per request and never mutates it.
import type { StagePolicy } from "../policy/stages.ts";
import type { TemplatePart } from "../policy/template.ts";
import type { PathMatch, PathRegex, RegexLocationSet } from "../regex/index.ts";

/** One pod (or ExternalName) address a backend can send to. */
export interface Upstream {
  /** IP literal (IPv6 without brackets) or DNS name for ExternalName services. */
  readonly address: string;
  readonly port: number;
  /** Precomputed `host:port` authority (`[v6]:port`), used in the forwarding URL. */
  readonly authority: string;
  readonly ready: boolean;
  readonly serving: boolean;
  readonly terminating: boolean;
  /** Pod name from targetRef, for /debug/routes. */
  readonly target?: string | undefined;
}

export type BackendStatus =
  | "ok"
  | "ServiceNotFound"
  | "ServicePortNotFound"
  | "NoEndpoints"
  | "ExternalNameNotAllowed"
  | "Unsupported";

/**
 * How Portico speaks to a backend's pods (backend-protocol): HTTP/1.1 over TCP or TLS, or gRPC,
 * which is HTTP/2 with prior knowledge (h2c) or over TLS (ALPN h2); `h2c` is plain HTTP over
 * HTTP/2 with prior knowledge (a Gateway API backend whose Service port's appProtocol is
 * `kubernetes.io/h2c`).
 */
export type BackendScheme = "http" | "https" | "grpc" | "grpcs" | "h2c";

export interface Backend {
  /** `namespace/service:port` (port as written: number or name); the key for pools and metrics. */
  readonly id: string;
  readonly namespace: string;
  readonly service: string;
  readonly port: string;
  /** "ok" when `endpoints` is non-empty; otherwise why it answers 503. */
  readonly status: BackendStatus;
  /** Endpoints to send to: the ready ones, or serving+terminating ones when none is ready. */
  readonly endpoints: readonly Upstream[];
  /** Every endpoint seen, with conditions, for /debug/routes and explain. */
  readonly allEndpoints: readonly Upstream[];
  readonly scheme: BackendScheme;
  /** TLS server name for HTTPS upstreams: `service.namespace.svc` or the ExternalName. */
  readonly serverName: string;
  readonly externalName: boolean;
}

/** Per-route behaviour parsed from annotations (null = use the flag's value). */
export interface RouteOptions {
  readonly sslRedirect: boolean;
  readonly forceSslRedirect: boolean;
  readonly hsts: boolean;
  readonly maxBodySize: number | null;
  readonly connectTimeoutMs: number | null;
  readonly responseTimeoutMs: number | null;
  readonly streamIdleTimeoutMs: number | null;
  /** Keep a trailing `/` in the HTTPS redirect (ingress-nginx cuts one unless `preserve-trailing-slash`). */
  readonly preserveTrailingSlash: boolean;
  /** Put the port in the redirects Portico makes (`use-port-in-redirects`). */
  readonly usePortInRedirects: boolean;
  /**
   * The host's other name (`www.` added or removed) redirects to it (`from-to-www-redirect`):
   * table/build.ts turns it into HostRoutes.wwwRedirect.
   */
  readonly fromToWwwRedirect: boolean;
  /**
   * Bytes per second each response body is sent at after `limitRateAfter` bytes (limit-rate,
   * limit-rate-after); 0 = unlimited; null = the flags' (--limit-rate, --limit-rate-after).
   */
  readonly limitRate: number | null;
  readonly limitRateAfter: number | null;
  /** false: requests of this route write no access-log line (ingress-nginx's enable-access-log). */
  readonly accessLog: boolean;
  /**
   * When a failed attempt moves to another endpoint (ingress-nginx's proxy-next-upstream,
   * -tries, -timeout); null = ingress-nginx's default, `DEFAULT_RETRY` (docs/design.md,
   * "Retries"). Plain JSON data: it crosses IPC to the workers.
   */
  readonly retry: RetryPolicy | null;
  /**
   * Largest request body read whole before the upstream is contacted (client-body-buffer-size;
   * proxy-request-buffering `off` is 0: streamed); null = --request-buffer-size.
   */
  readonly requestBufferSize: number | null;
  /**
   * proxy-buffering: a streamed answer is held in buffers of proxyBufferSize bytes, as nginx's
   * proxy_buffering holds it (proxy/upstream/response-buffering.ts); null = the flags'
   * (--proxy-buffering, --proxy-buffer-size).
   */
  readonly proxyBuffering: boolean | null;
  readonly proxyBufferSize: number | null;
  /**
   * Request-side policies in stage order (policy/stages.ts), frozen; null when the route has
   * none, so the handler pays one null check (docs/design.md, "Annotations and policies").
   */
  readonly stages: readonly StagePolicy[] | null;
  /**
   * TLS to HTTPS/GRPCS pods from proxy-ssl-* (compile/upstream-tls.ts, docs/design.md "TLS to
   * the pods"); absent or null: encrypted, not verified, no client certificate.
   */
  readonly upstreamTls?: UpstreamTls | null;
}

/** What proxy-ssl-* asks of the TLS connection to a pod, with the Secret's PEM text. Plain JSON (crosses IPC). */
export interface UpstreamTls {
  /** The Secret's `namespace/name` (for logs and explain). */
  readonly secret: string;
  /** PEM client certificate chain and key (tls.crt, tls.key), or null when the Secret has none. */
  readonly cert: string | null;
  readonly key: string | null;
  /** PEM trusted certificates (ca.crt), or null when the Secret has none (then verify is false). */
  readonly ca: string | null;
  readonly verify: boolean;
  readonly depth: number;
  /** The name checked in the pod's certificate (proxy-ssl-name, else `upstream_balancer`). */
  readonly checkName: string;
  /** SNI sent (proxy-ssl-server-name on), or null. */
  readonly sni: string | null;
  /** The TLS 1.2 suites offered, names separated by colons (proxy-ssl-ciphers evaluated as OpenSSL reads it). */
  readonly ciphers: string;
  /** TLS protocol version numbers (0x0303 TLS 1.2, 0x0304 TLS 1.3), as Bun's fetch takes them. */
  readonly minVersion: number;
  readonly maxVersion: number;
}

/** proxy-next-upstream as data (src/annotations/retries.ts parses it). */
export interface RetryPolicy {
  /** `error`: the connection failed, broke, or could not carry the request. */
  readonly error: boolean;
  /** `timeout`: connecting or waiting for the response headers took too long. */
  readonly timeout: boolean;
  /** `invalid_header`: the upstream's answer is not a usable HTTP response head. */
  readonly invalidHeader: boolean;
  /** `http_500`...: upstream statuses retried (their body is discarded). */
  readonly statuses: readonly number[];
  /** `non_idempotent`: POST, LOCK and PATCH may be sent again too. */
  readonly nonIdempotent: boolean;
  /** Attempts in all, the first included; 0 = as many as there are endpoints. */
  readonly tries: number;
  /** No new attempt once this many ms have passed since the first; 0 = no limit. */
  readonly timeoutMs: number;
}

export type PathType = "Exact" | "Prefix";

export interface Route {
  /** The Ingress, or the Gateway API route (`kind` set for a GRPCRoute; unset: an HTTPRoute's or an Ingress's). */
  readonly ingress: { readonly namespace: string; readonly name: string; readonly kind?: "GRPCRoute" };
  /** Host as written in the rule (lowercased), `*.foo.com`, or null for hostless rules and defaults. */
  readonly host: string | null;
  /** The rule path as written in regex mode, its routed (normalised) form otherwise; "/" for defaults. */
  readonly path: string;
  /** Effective type: ImplementationSpecific is served as Prefix, as ingress-nginx does outside regex mode. */
  readonly pathType: PathType;
  readonly declaredPathType: "Exact" | "Prefix" | "ImplementationSpecific";
  /**
   * "implicitRoot": the `/` location ingress-nginx gives every host (HostRoutes.root), sent to
   * the default backend with the host's first Ingress's policies.
   */
  readonly source: "rule" | "defaultBackend" | "globalDefault" | "implicitRoot";
  /** Indexes into spec.rules[] and rules[].http.paths[] (-1 for defaults), for explain. */
  readonly ruleIndex: number;
  readonly pathIndex: number;
  readonly backend: Backend;
  readonly options: RouteOptions;
  /** True when this route's host is listed in spec.tls of a served Ingress (redirect HTTP → HTTPS). */
  readonly tls: boolean;
  /**
   * The rule path as written starts with a no-auth-locations entry (annotations/basic-auth.ts
   * `skipsAuthentication`): basic and external authentication do not run for this route. Decided
   * on the written path, which `path` is not outside regex mode. Absent on every other route.
   */
  readonly authExempt?: true;
  /**
   * The rule path as written starts with a --no-tls-redirect-locations entry (ingress-nginx's
   * `force_no_ssl_redirect`): no HTTPS redirect, not even a forced one. Absent otherwise.
   */
  readonly tlsRedirectExempt?: true;
  /**
   * The route's Ingress sets ssl-passthrough and Portico runs with --enable-ssl-passthrough: TLS
   * connections naming its host go to the host's `/` backend undecrypted
   * (serving/passthrough.ts). Absent otherwise.
   */
  readonly sslPassthrough?: true;
  /**
   * The canary Ingress attached to this route, if any: its backend, which the route's
   * `canary` stage policy (in `options.stages`) may choose instead of `backend`
   * (docs/design.md, "Canary Ingresses"). Absent on routes without one.
   */
  readonly canary?: RouteCanary;
  /**
   * custom-http-errors (docs/design.md, "Error pages"): the statuses answered by the error
   * backend instead. Absent on routes without any, so the handler pays one check.
   */
  readonly errorPages?: RouteErrorPages;
  /**
   * The default-backend annotation's Service, when the route's own backend has no endpoints
   * and it has some: requests go there instead of getting 503 (ingress-nginx switches the
   * location's backend, controller.go createServers). Absent otherwise.
   */
  readonly fallback?: Backend;
}

export interface RouteErrorPages {
  /** Listed statuses, ascending. */
  readonly codes: readonly number[];
  /**
   * Whether a listed status from the pod is replaced (nginx's proxy_intercept_errors);
   * Portico's own listed answers (503 no endpoint, 502, 504) are replaced either way, as
   * nginx's error_page catches the errors it makes itself.
   */
  readonly intercept: boolean;
  /**
   * Where the error request goes: the default-backend annotation's Service when it has
   * endpoints, else --default-backend-service when it has some; null = neither, and the
   * answer is 404 (ingress-nginx's built-in default server).
   */
  readonly backend: Backend | null;
}

export interface RouteCanary {
  readonly ingress: { readonly namespace: string; readonly name: string };
  readonly backend: Backend;
}

/**
 * What one path key of a host entry leads to (internals of src/table/: the rest of the code
 * calls `lookup` only). Two key spaces share one map: an Exact route's key is its path as
 * written (it starts with "/"); a Prefix key is the rule's path elements joined by "/" with no
 * leading "/" ("" for "/"), so a request path yields its candidates by slicing alone. The rare
 * key found in both spaces (a Prefix rule starting with "//") holds both kinds in one slot.
 * Matches are prebuilt, so a lookup allocates nothing but candidate substrings.
 */
export interface PathSlot {
  readonly exact: Match | null;
  /** Best Prefix route with exactly these path elements (longest written path, then rank). */
  readonly prefix: Match | null;
  /** `prefix.route.path.length` (or -1): precedence counts written characters (`/foo/` beats `/foo`). */
  readonly prefixLen: number;
  /** Position of `prefix` in HostRoutes.routes: the final tie-break, lower wins. */
  readonly prefixRank: number;
}

export interface HostRoutes {
  /** `foo.com`, `*.foo.com`, or `*` for hostless rules. */
  readonly host: string;
  /**
   * Exact and Prefix routes by path key (PathSlot). One flat map per host instead of a trie of
   * maps: a lookup at 10k hosts was bound by dependent cache misses, one map per path element.
   */
  readonly paths: { readonly [key: string]: PathSlot | undefined };
  /** Whether any route is Exact (the exact probe is skipped otherwise). */
  readonly hasExact: boolean;
  /**
   * `prefixDepths[n]` is 1 when some Prefix key has n path elements ("" has 0); its length is
   * one more than the deepest. The lookup probes only those element counts, so a request
   * path of thousands of elements costs a scan, not thousands of slices and hashes.
   */
  readonly prefixDepths: Uint8Array;
  /** All routes of this host in precedence order, for /debug/routes and the reference matcher. */
  readonly routes: readonly Route[];
  /**
   * Set when the host is in ingress-nginx's regex mode (docs/design.md "Regular expressions"):
   * its locations replace `paths`, which is then empty.
   */
  readonly regex: RegexRoutes | null;
  /**
   * What a request for this host's other name (`www.` added or removed) gets when a route of
   * this host has `fromToWwwRedirect` and no host entry has that name: a route whose one
   * policy is the redirect. Exact hosts only (build.ts).
   */
  readonly wwwRedirect: Match | null;
  /**
   * app-root on a host in regex mode: what `/` answers (on a path-map host the redirect sits in
   * `paths` as an Exact `/` route instead). Null otherwise (build.ts).
   */
  readonly appRoot: Match | null;
  /**
   * The implicit `/` location (docs/design.md "The implicit root location"): what a path no
   * route of this host matches gets, instead of the bare default route, when the host's first
   * Ingress has policies that apply there. Its route's backend is a placeholder
   * (`DEFAULT_BACKEND_SLOT`): lookup puts the table's default route's backend in its place.
   * On a regex host it carries the rewrite hit of the location `/` when the first Ingress's
   * rewrite-target rewrites it. Null when there is none.
   */
  readonly root: Match | null;
}

/** One field of add-headers or proxy-set-headers: a lowercase name and its value as a template. */
export interface GlobalHeader {
  readonly name: string;
  readonly value: readonly TemplatePart[];
}

/** ingress-nginx's add-headers and proxy-set-headers, for every request (compile/global-headers.ts). */
export interface GlobalHeaders {
  /** add-headers: set on every answer. */
  readonly response: readonly GlobalHeader[];
  /** proxy-set-headers: set on every request sent to a pod. */
  readonly request: readonly GlobalHeader[];
}

export interface RouteTable {
  readonly exact: ReadonlyMap<string, HostRoutes>;
  /** Keyed by the suffix after the wildcard label, e.g. `foo.com` for `*.foo.com`. */
  readonly wildcard: ReadonlyMap<string, HostRoutes>;
  /** Rules with no host. */
  readonly any: HostRoutes | null;
  /** Winning spec.defaultBackend, else --default-backend-service, else null (404). */
  readonly defaultRoute: Route | null;
  /** `defaultRoute` wrapped once as a Match (via "default"), so lookup allocates nothing. */
  readonly defaultMatch: Match | null;
  /** Number of routes, for logs. */
  readonly routeCount: number;
  /** Exact host entries with a wwwRedirect: lookup probes the other name only when some exist. */
  readonly wwwRedirects: number;
  /**
   * server-alias: more names for a host entry, by name → host key (`foo.com`, `*.foo.com`), as
   * the compiler decided them (compile/aliases.ts); `aliases` resolves them to this table's
   * entries. Asked after the exact hosts and before the wildcards (nginx's exact names).
   */
  readonly aliasKeys: ReadonlyMap<string, string>;
  readonly aliases: ReadonlyMap<string, HostRoutes>;
  /**
   * Gateway API rules (table/gateway.ts), asked before the entries above; absent or null when
   * no HTTPRoute is attached, so Ingress-only tables cost one property check per request.
   */
  readonly gateway?: GatewayRoutes | null;
  /**
   * With --gateway-ports: each Gateway's own ports, by Portico port (docs/design.md "Gateways
   * with their own address"). A request on one of them is asked of that Gateway's rules only;
   * `gateway` above then holds none. Absent or null otherwise, and the listeners are chosen
   * per port when the table changes, never per request.
   */
  readonly gatewayPorts?: ReadonlyMap<number, GatewayPort> | null;
  /** add-headers and proxy-set-headers; absent or null when neither sets a field (one property check per request). */
  readonly globalHeaders?: GlobalHeaders | null;
}

/** One port of one Gateway (--gateway-ports). */
export interface GatewayPort {
  /** The Gateway, `namespace/name`. */
  readonly gateway: string;
  /** The listener port the Gateway declares: its Service's port, and what redirects use. */
  readonly declared: number;
  readonly https: boolean;
  /** That Gateway's rules on that port; null while none is attached (every request: 404). */
  readonly routes: GatewayRoutes | null;
}

export interface Match {
  readonly route: Route;
  /** Which host entry matched: the exact host, the wildcard (`*.foo.com`), `*`, or the default. */
  readonly hostKey: string;
  readonly via: "exact-host" | "wildcard-host" | "any-host" | "default";
  /** Set when a regex-mode host's location matched (table/regex.ts). */
  readonly regex?: RegexHit;
}

// The regex-mode host (table/regex.ts runs it) and the Gateway API part (table/gateway.ts runs
// it) are declared here with Route and Match, which they refer to and which refer to them.

/** One regex location of a host, as data. */
export interface RegexLocationSpec {
  /** The regex written after `^` (the Ingress path, or a form location expansion derived from it). */
  readonly path: string;
  /** Which of ingress-nginx's location expansions this is (regex/locations.ts). */
  readonly origin: "as-written" | "slash-added" | "exact-copy" | "implicit-root";
  /** Index in the host's HostRoutes.routes; -1 for the implicit "/" location (the default route). */
  readonly route: number;
  /** The rewrite stage needs this location's captures (its Ingress's rewrite-target applies to it). */
  readonly captures: boolean;
}

/** What a regex-mode lookup adds to its Match (the rewrite stage and explain read it). */
export interface RegexHit {
  /** The location's regex (after `^`). */
  readonly location: string;
  readonly re: PathRegex;
  /** The captures of the path matched, when the location's spec asked for them; else null. */
  readonly captures: PathMatch | null;
}

export interface RegexLocation {
  readonly spec: RegexLocationSpec;
  readonly re: PathRegex;
  /** Prebuilt Match (captures null); null for the implicit "/" location. */
  readonly match: (Match & { readonly regex: RegexHit }) | null;
}

export interface RegexRoutes {
  readonly specs: readonly RegexLocationSpec[];
  /** Compiled, in the same order as `specs`. */
  readonly locations: readonly RegexLocation[];
  readonly set: RegexLocationSet;
}

export interface HeaderMatch {
  /** Lowercased for headers (RFC 9110 §5.1); as written for query parameters (case-sensitive). */
  readonly name: string;
  readonly value: string;
  /** A RegularExpression match (`value` is the pattern: table/gateway.ts); absent for Exact. */
  readonly regex?: true;
}

export interface GatewayMatch {
  /** GRPCMethod: a GRPCRoute method match without a service (compile/gateway/grpcroute.ts). */
  readonly pathType: "Exact" | "PathPrefix" | "RegularExpression" | "GRPCMethod";
  /** Exact and RegularExpression: as written. PathPrefix: without a trailing `/` ("" for `/`). GRPCMethod: `/<method>`. */
  readonly path: string;
  readonly method: string | null;
  readonly headers: readonly HeaderMatch[];
  readonly query: readonly HeaderMatch[];
}

/** One way a request can go: a prebuilt Match (its route carries the rule's policies). */
export interface WeightedMatch {
  readonly match: Match;
  readonly weight: number;
}

export interface GatewayEntry {
  readonly match: GatewayMatch;
  /** Where matching requests go, by weight (one entry with weight 1 for redirects and errors). */
  readonly choices: readonly WeightedMatch[];
  readonly totalWeight: number;
}

export interface GatewayHosts {
  /** Entries by route hostname; each list in precedence order. */
  readonly exact: ReadonlyMap<string, readonly GatewayEntry[]>;
  /** Wildcard route hostnames (`*.foo.com`), most specific first. */
  readonly wildcards: readonly (readonly [string, readonly GatewayEntry[]])[];
  readonly any: readonly GatewayEntry[] | null;
  /**
   * Hosts an Ingress names (docs/design.md "Gateway API", "Ingress and HTTPRoute on one host"):
   * for those, the entries of the routes in the owning Ingresses' namespaces only, flattened in
   * the order above (compile/gateway/ingress-hosts.ts). Absent or null when no such host is
   * served differently here.
   */
  readonly held?: GatewayHeld | null;
}

/** A listener's entry lists for the hosts an Ingress names, already filtered by namespace. */
export interface GatewayHeld {
  /** By request host: an Ingress host, an alias, a route or listener hostname an Ingress wildcard covers. */
  readonly exact: ReadonlyMap<string, readonly GatewayEntry[]>;
  /** By the suffix after one label, as an Ingress wildcard (`foo.com` for `*.foo.com`). */
  readonly wildcard: ReadonlyMap<string, readonly GatewayEntry[]>;
}

export interface GatewayRoutes {
  /** By listener hostname (`*` for none), for Portico's HTTP and HTTPS listeners. */
  readonly http: ReadonlyMap<string, GatewayHosts>;
  readonly https: ReadonlyMap<string, GatewayHosts>;
}
