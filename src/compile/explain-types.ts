// The JSON-able answer of explain(): why a request goes where it goes (/debug/explain,
// `portico explain`).
import type { CanaryAffinity } from "../annotations/canary.ts";
import type { CanaryRules } from "../policy/params.ts";
import type { Diagnostic } from "../model/diagnostic.ts";
import type { PredictedAnswer } from "./answer.ts";
import type { BackendScheme } from "../table/types.ts";
import type { ExplainListenerTls } from "./explain-tls.ts";

export type { ExplainListenerTls };

/** Bounds on explain's input and output, so that one call stays cheap at any cluster size. */
export const EXPLAIN_LIMITS = Object.freeze({
  /** A DNS name (253) or a bracketed IPv6 literal, with ":port". */
  host: 261,
  /** ingress-nginx's default large_client_header_buffers (4 8k) bound a request line to 8 KB. */
  path: 8192,
  /** Candidates listed per verdict; the rest are counted in `omittedCandidates`. */
  candidatesPerVerdict: 50,
});

export interface ExplainRequest {
  /** Host header or SNI name; lowercased and port-stripped here. */
  readonly host: string;
  /** Request target as sent, escapes included; normalised as the proxy does it, query dropped. */
  readonly path: string;
  readonly scheme: "http" | "https";
  /**
   * The client's address, for the source-range checks; absent: an address in no list (so an
   * allow list answers 403). Explain assumes no credentials, no Origin, no cookies and no
   * canary header, on the scheme's default port.
   */
  readonly client?: string;
  /** The request method (a token, uppercase); absent: GET. Gateway API method matches read it. */
  readonly method?: string;
  /**
   * The request's Content-Type; absent: none. `application/grpc` (alone or with `+…`/`;…`)
   * makes it a gRPC call, answered as http/grpc-status.ts answers one.
   */
  readonly contentType?: string;
  /**
   * With --gateway-ports: the Portico port the request comes in on. A Gateway's own port is
   * asked of that Gateway's rules alone (its scheme is the port's); any other port, or none,
   * is the shared ports' table (docs/design.md "Gateways with their own address").
   */
  readonly port?: number;
  /** With --gateway-ports, instead of `port`: the Gateway (`namespace/name`) whose port to ask. */
  readonly gateway?: string;
  /** With `gateway`: its listener port (the declared one); needed only when it has several. */
  readonly listenerPort?: number;
  /**
   * The request's Accept-Encoding; absent: none. `response.compression` says which encoding
   * (use-gzip, enable-brotli) a pod's answer gets for it.
   */
  readonly acceptEncoding?: string;
  /**
   * The request's User-Agent; absent: none (nginx's empty $http_user_agent). gzip-disable and
   * --block-user-agents read it, as the relay and the route step do.
   */
  readonly userAgent?: string;
}

/** Which Portico port's table explain asked (with --gateway-ports each Gateway has its own). */
export interface ExplainTable {
  /** "shared": --http-port/--https-port (Ingresses, and the Gateways unless --gateway-ports). */
  readonly port: "shared" | number;
  /** For a Gateway's own port: the Gateway, its declared listener port and scheme. */
  readonly gateway: string | null;
  readonly listenerPort: number | null;
  readonly note: string;
  /**
   * With --gateway-ports and the shared table asked: the Gateways' own ports (at most
   * EXPLAIN_LIMITS.candidatesPerVerdict; `port=` or `gateway=` asks one of them).
   */
  readonly gatewayPorts?: readonly { readonly port: number; readonly gateway: string; readonly listenerPort: number; readonly scheme: "http" | "https" }[];
}

/** A gRPC call (content-type application/grpc): how the proxy answers it. */
export interface ExplainGrpc {
  /** The gRPC status of Portico's own Trailers-Only answer (HTTP 200), or null when a pod answers. */
  readonly status: number | null;
  /** grpc-message of that answer. */
  readonly message: string | null;
  readonly note: string;
}

/**
 * What the proxy answers to the explained request (compile/answer.ts): the route's stage
 * policies walked in the proxy's order. `kind` proxied (a pod answers: `backends`), redirect
 * (`status`, `location`), challenge (401, `realm`), refused (`status` and `cause`: 503 for a
 * refused Ingress or a backend without endpoints, 403 for a source range, 400/403 for client
 * certificates, 404 for no route...), or depends (the auth service decides; with auth-signin,
 * `location` is where its 401 redirects).
 */
export type ExplainResponse = PredictedAnswer;

export type UpstreamProtocol = "h1" | "h1+tls" | "h2c" | "h2+tls";

export interface ExplainMatch {
  readonly ingress: string | null;
  readonly source: "rule" | "defaultBackend" | "globalDefault" | "implicitRoot";
  readonly ruleIndex: number;
  readonly pathIndex: number;
  readonly host: string | null;
  readonly hostEntry: string;
  readonly via: "exact-host" | "wildcard-host" | "any-host" | "default";
  readonly path: string;
  readonly pathType: "Exact" | "Prefix";
  readonly declaredPathType: string;
  readonly backend: {
    readonly id: string;
    readonly status: string;
    readonly scheme: BackendScheme;
    /** The wire to the pods: HTTP/1.1 (h1), over TLS, or HTTP/2 for gRPC (h2c, h2+tls). */
    readonly protocol: UpstreamProtocol;
    readonly endpoints: readonly string[];
  };
  /**
   * What the proxy answers, in one word: "proxied" when a pod answers, "depends" when the auth
   * service decides, else Portico's status ("503", "302", "401", "403"...). The same as the
   * result's `response` (kind and status), which says why.
   */
  readonly answers: "proxied" | "depends" | "closed" | `${number}`;
  readonly tls: boolean;
  /** The route's canary, when a canary Ingress is attached to it. */
  readonly canary?: ExplainCanary;
}

export interface ExplainCanary {
  readonly ingress: string;
  readonly backend: ExplainMatch["backend"];
  /** null only if the route lost its canary policy (never from the compiler). */
  readonly rules: CanaryRules | null;
  /** The check before the rules when main has cookie affinity (sticky: a canary cookie counts too), or null. */
  readonly affinity: CanaryAffinity | null;
  readonly order: string;
}

/** How a host in ingress-nginx's regex mode matched the request (docs/design.md "Regular expressions"). */
export interface ExplainRegex {
  /** The path the locations ran on: the routed path with every escape decoded, as nginx's $uri. */
  readonly matchedAgainst: string;
  /** The host's locations, in the order they were tried. */
  readonly locations: number;
  /** The first location that matched, or null (the default route answers). */
  readonly location: {
    /** The regex after `^`, as written in the Ingress (or as location expansion derived it). */
    readonly path: string;
    readonly origin: "as-written" | "slash-added" | "exact-copy" | "implicit-root";
    /** What runs: RE2 syntax, case-insensitive. */
    readonly pattern: string;
    /** Its position in the order tried (0 is first). */
    readonly index: number;
  } | null;
  /** `$0` (the whole match), `$1`… of the path's own regex ("" when a group took no part). */
  readonly groups: readonly string[];
  readonly named: Readonly<Record<string, string>>;
}

/** What the matched route's rewrite-target does to this request. */
export interface ExplainRewrite {
  readonly target: string;
  readonly outcome: "path" | "redirect" | "refused";
  /** outcome "path": the path the backend receives (the query string is appended as received). */
  readonly path?: string;
  /** outcome "redirect": the Location of the 302 (the query string is appended as received). */
  readonly location?: string;
  /** outcome "refused": why the proxy answers 500. */
  readonly reason?: string;
  /** X-Forwarded-Prefix sent with the rewritten request, or null. */
  readonly xForwardedPrefix: string | null;
}

export type CandidateVerdict =
  | "matched"
  | "not-our-class"
  | "invalid"
  | "host-mismatch"
  | "host-tier-lost"
  | "path-mismatch"
  | "outranked"
  | "conflict-loser"
  | "duplicate"
  /** A canary Ingress's path attached to the main route. */
  | "canary"
  /** A canary Ingress's path that is not used (no main route, another canary first, invalid). */
  | "canary-unused";

export interface ExplainCandidate {
  readonly ingress: string;
  /** -1 for spec.defaultBackend. */
  readonly ruleIndex: number;
  readonly pathIndex: number;
  readonly host: string | null;
  readonly path: string;
  readonly pathType: string;
  readonly verdict: CandidateVerdict;
  readonly reason: string;
}

export interface ExplainCertificate {
  /** Binding host that SNI selects: exact, then `*.suffix`, then "" (default). */
  readonly via: "exact" | "wildcard" | "default" | "generated-default";
  readonly host: string;
  readonly secret: string | null;
  readonly ingress: string;
  readonly hasPem: boolean;
  /**
   * The spec.tls Secret passed over because its certificate does not name the host (its DNS
   * SANs, or its CN without them), as ingress-nginx's createServers does; the default serves.
   */
  readonly notNaming?: string;
  /**
   * Secrets the listener refuses by its PEM check (model/pem-check.ts: a key that does not
   * match the certificate, a certificate or key that does not parse...), with its reason: the
   * host's own, then --default-ssl-certificate's; the next certificate in line serves.
   */
  readonly unusable?: readonly { readonly secret: string; readonly reason: string }[];
  /**
   * Why this Secret: absent when a spec.tls entry of `ingress` lists the host; "certificate"
   * when none does and it is the first spec.tls Secret of `ingress` whose certificate names the
   * host (ingress-nginx's extractTLSSecretName, second pass: `tls: [{secretName: x}]` without
   * hosts); "none" when `ingress` has spec.tls but no entry lists or names the host, so the
   * default certificate serves it and the host is still a TLS host (createServers).
   */
  readonly matchedBy?: "certificate" | "none";
}

/** One annotation of the matched route's Ingress and how Portico serves it (the migration report's reading). */
export interface ExplainAnnotation {
  readonly name: string;
  readonly value: string;
  /** same, differs, not-served (ingress-nginx acted on it, Portico does not), portico, unknown. */
  readonly status: string;
  /** The registry's words for it. */
  readonly text: string;
}

export interface ExplainResult {
  readonly request: ExplainRequest;
  /**
   * "route": a rule matched; "implicit-root": no rule of the host matched, and the host's
   * implicit `/` location applies its first Ingress's policies before the default backend
   * (docs/design.md "The implicit root location"); "default": the default route; "404": nothing;
   * "passthrough": an HTTPS connection --enable-ssl-passthrough copies to the pods of the host's
   * `/` route untouched (docs/design.md "SSL passthrough"): the pod terminates TLS, no Ingress
   * rule applies, and `certificate` and `tls` are not Portico's to say.
   */
  readonly outcome: "route" | "implicit-root" | "default" | "404" | "passthrough";
  /** What the proxy answers to this request, and why. */
  readonly response: ExplainResponse;
  readonly match: ExplainMatch | null;
  /** Host entry chosen before any path is looked at (null: none; the default route applies). */
  readonly hostEntry: string | null;
  /** Set when that host entry is in ingress-nginx's regex mode. */
  readonly regex: ExplainRegex | null;
  /** Set when the matched route rewrites this request (rewrite-target). */
  readonly rewrite: ExplainRewrite | null;
  /** Every rule path whose host or path is relevant to this request, and why it won or lost. */
  readonly candidates: readonly ExplainCandidate[];
  /** Candidates past EXPLAIN_LIMITS.candidatesPerVerdict, counted per verdict (empty when none). */
  readonly omittedCandidates: Readonly<Partial<Record<CandidateVerdict, number>>>;
  /** For https: the certificate the SNI name selects (null for an ssl-passthrough host: the pod's own serves). */
  readonly certificate: ExplainCertificate | null;
  /**
   * For https: the rest of what the listener negotiates for the SNI name (compile/explain-tls.ts):
   * the TLS 1.2 cipher list of the entry it selects (the host's ssl-ciphers or --tls-ciphers), the
   * versions and the key-exchange groups. Absent for http.
   */
  readonly tls?: ExplainListenerTls;
  /** Diagnostics of the Ingresses named in `match` and `candidates`. */
  readonly diagnostics: readonly Diagnostic[];
  /**
   * The ingress-nginx (and portico.dev) annotations of the matched route's Ingress, with their
   * registry status: which of them shaped this request, and which ingress-nginx would have
   * acted on while Portico does not. Empty without a matched Ingress.
   */
  readonly annotations: readonly ExplainAnnotation[];
  /**
   * Set when a Gateway API rule answers the request (they are asked before the Ingress rules,
   * docs/design.md "Gateway API"): which listener, HTTPRoute, rule and match, and where its
   * requests go. Absent otherwise.
   */
  readonly gateway?: ExplainGateway;
  /** The port's table explain asked, and why that one. */
  readonly table: ExplainTable;
  /**
   * With --use-proxy-protocol: a connection without a PROXY header gets no answer at all; the
   * `response` is for one whose header names `request.client`, from a peer in `trusted`.
   */
  readonly proxyProtocol?: { readonly withoutHeader: "closed"; readonly trusted: readonly string[]; readonly httpsPort: 443 };
  /** Set when the request is a gRPC call (its content type): Portico's own answers are Trailers-Only. */
  readonly grpc?: ExplainGrpc;
}

/** The Gateway API rule that answers a request (compile/gateway/explain.ts). */
export interface ExplainGateway {
  /** The scheme of Portico's port the request came in on: "http" or "https" listeners. */
  readonly port: "http" | "https";
  /** The most specific listener hostname matching the host ("*": a listener without one). */
  readonly listenerHostname: string;
  /** The route hostname the rule was found under ("*": a route without hostnames). */
  readonly routeHostname: string;
  /** Each Gateway listener that attaches the route with that hostname. */
  readonly listeners: readonly { readonly gateway: string; readonly listener: string; readonly port: number; readonly protocol: string }[];
  /** The route's kind: a GRPCRoute is served as the HTTPRoute it converts to (compile/gateway/grpcroute.ts). */
  readonly kind: "HTTPRoute" | "GRPCRoute";
  /** `namespace/name` of the route. */
  readonly route: string;
  readonly ruleIndex: number;
  readonly matchIndex: number;
  readonly match: {
    readonly pathType: "Exact" | "PathPrefix" | "RegularExpression" | "GRPCMethod";
    readonly path: string;
    readonly method: string | null;
    readonly headers: readonly string[];
    readonly queryParams: readonly string[];
  };
  /** The rule's choices by weight (weight-0 backendRefs are left out); `answers` as ExplainMatch's. */
  readonly choices: readonly { readonly backend: string; readonly weight: number; readonly answers: ExplainMatch["answers"] }[];
  /** What explain assumed of the request: matching also reads the method, headers and query. */
  readonly assumed: string;
}
