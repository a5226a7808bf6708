// explain(): say, for one request, which route wins and why every other relevant rule path
// lost (class, host, tier, path, precedence, conflict, invalid). It reads the compile of the
// snapshot (Compiler.inspect): the plans of every Ingress, the live table, and the claim rule
// run again with a trace for the two or three host keys a request can reach, so a call costs
// one pass over the plans, not a compile. Pure like compile(); another module serves it over
// HTTP and the CLI.
import { type CanaryAffinity } from "../annotations/canary.ts";
import { type CanaryRules } from "../policy/params.ts";
import type { Diagnostic } from "../model/diagnostic.ts";
import { GRPC_CONTENT_TYPE } from "../http/grpc-status.ts";
import { normaliseRequestHost } from "../request/host.ts";
import { RejectedRequest } from "../request/rejected.ts";
import { normaliseTarget } from "../request/target.ts";
import type { Snapshot } from "../store/types.ts";
import { lookup, selectHost } from "../table/lookup.ts";
import { decodedPath } from "../table/regex.ts";
import { type RegexRoutes } from "../table/types.ts";
import { forwardedPrefix, rewriteRequest } from "../table/rewrite.ts";
import { isPathPrefix } from "../table/segments.ts";
import { passthroughRouteOf } from "../table/passthrough.ts";
import type { BackendScheme, HostRoutes, Match, Route } from "../table/types.ts";
import { blockedAnswer, DEFAULT_PROXY_PROTOCOL_TRUSTED, ownAnswer, predictAnswer, proxyProtocolNote, unknownClient, type AnswerConfig, type RouteAuth } from "./answer.ts";
import { listenerTls, ownCertificate, pemOf } from "./explain-tls.ts";
import { Compiler } from "./compile.ts";
import type { CompileConfig } from "./config.ts";
import {
  EXPLAIN_LIMITS,
  type CandidateVerdict,
  type ExplainCanary,
  type ExplainCandidate,
  type ExplainCertificate,
  type ExplainMatch,
  type ExplainRegex,
  type ExplainRequest,
  type ExplainResponse,
  type ExplainResult,
  type ExplainRewrite,
  type ExplainGrpc,
  type ExplainTable,
  type UpstreamProtocol,
} from "./explain-types.ts";
import type { GatewayPort, GatewayRoutes, RouteTable } from "../table/types.ts";
import { tlsCovers } from "../model/hosts.ts";
import { annotationsOf } from "./migrate.ts";
import type { IngressPlan, RulePath } from "./plan.ts";
import type { CompileTrace } from "./trace.ts";
import type { CertificateBinding } from "./types.ts";
import { explainGatewayRequest } from "./gateway/explain.ts";
import * as K from "../kinds/index.ts";

/** What Portico speaks to the pods for each backend-protocol (proxy/upstream/forward.ts, proxy/upstream/grpc.ts). */
const UPSTREAM_PROTOCOL: Readonly<Record<BackendScheme, UpstreamProtocol>> = { http: "h1", https: "h1+tls", grpc: "h2c", grpcs: "h2+tls", h2c: "h2c" };

export type * from "./explain-types.ts";

/**
 * The request as the proxy routes it, through the proxy's own normaliser (src/request/), so
 * explain and the proxy agree on every input. `path` is the request target as sent, escapes
 * included; a query string is dropped (it never takes part in routing). Throws
 * RejectedRequest for a request the proxy answers with 400.
 */
export function normaliseRequest(req: ExplainRequest): ExplainRequest {
  // RFC 9110 §5.5: a field value's surrounding whitespace is not part of it (the proxy's
  // parser strips it from Host).
  const host = normaliseRequestHost(req.host.trim());
  if (host === null) throw new RejectedRequest("host");
  // RFC 9110 §4.2.3: an empty path is "/" for http and https URIs.
  const target = normaliseTarget(req.path === "" ? "/" : req.path);
  if (target === null) throw new RejectedRequest("path");
  return {
    host: host.hostname,
    path: target.path,
    scheme: req.scheme,
    ...(req.client === undefined ? {} : { client: req.client }),
    ...(req.method === undefined ? {} : { method: req.method }),
    ...(req.contentType === undefined ? {} : { contentType: req.contentType }),
    ...(req.port === undefined ? {} : { port: req.port }),
    ...(req.gateway === undefined ? {} : { gateway: req.gateway }),
    ...(req.listenerPort === undefined ? {} : { listenerPort: req.listenerPort }),
    ...(req.acceptEncoding === undefined ? {} : { acceptEncoding: req.acceptEncoding }),
    ...(req.userAgent === undefined ? {} : { userAgent: req.userAgent }),
  };
}

/** RFC 9110 §9.1: a method is a token; the proxy compares it as sent (case-sensitive). */
const METHOD = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,32}$/;


/**
 * The table of the port asked (docs/design.md "Gateways with their own address"): a Gateway's
 * own port serves that Gateway's rules over no Ingress (serving/gateway-ports.ts viewOf); any
 * other port the shared table. Throws a RangeError for a Gateway or port that has none.
 */
function selectPort(table: RouteTable, req: ExplainRequest): { port: [number, GatewayPort] | null; info: ExplainTable } {
  const own = [...(table.gatewayPorts ?? [])].sort(([a], [b]) => a - b);
  let hit: [number, GatewayPort] | undefined;
  if (req.gateway !== undefined) {
    const mine = own.filter(([, g]) => g.gateway === req.gateway && (req.listenerPort === undefined || g.declared === req.listenerPort));
    if (mine.length === 0) throw new RangeError(`explain: Gateway ${req.gateway}${req.listenerPort === undefined ? "" : ` listener port ${req.listenerPort}`} has no port of its own (--gateway-ports)`);
    if (mine.length > 1) throw new RangeError(`explain: Gateway ${req.gateway} has several ports (listener ports ${mine.map(([, g]) => g.declared).join(", ")}): name one`);
    hit = mine[0];
  } else if (req.port !== undefined) hit = own.find(([p]) => p === req.port);
  if (hit !== undefined) {
    const [p, g] = hit;
    return {
      port: hit,
      info: {
        port: p,
        gateway: g.gateway,
        listenerPort: g.declared,
        note: `port ${p}: Gateway ${g.gateway}'s own port for its listener port ${g.declared} (${g.https ? "https" : "http"}); only its rules answer there, a request none matches gets 404`,
      },
    };
  }
  if (own.length === 0) return { port: null, info: { port: "shared", gateway: null, listenerPort: null, note: "the shared ports' table (--http-port, --https-port): Gateway API rules first, then the Ingresses" } };
  const listed = own.slice(0, EXPLAIN_LIMITS.candidatesPerVerdict).map(([port, g]) => ({ port, gateway: g.gateway, listenerPort: g.declared, scheme: g.https ? ("https" as const) : ("http" as const) }));
  const asked = req.port === undefined ? "" : `port ${req.port} is no Gateway's own port: `;
  return {
    port: null,
    info: {
      port: "shared",
      gateway: null,
      listenerPort: null,
      note: `${asked}the shared ports' table (--http-port, --https-port): the Ingresses only; with --gateway-ports each Gateway answers on its own ports (gatewayPorts; ask one with port= or gateway=)${own.length > listed.length ? `, ${own.length - listed.length} more not listed` : ""}`,
      gatewayPorts: listed,
    },
  };
}

/** The gRPC status of each answer grpcAnswer made, so that shaping one again keeps it. */
const GRPC_OF = new WeakMap<ExplainResponse, ExplainGrpc>();

/**
 * A gRPC call's answer when Portico answers it itself: a Trailers-Only response, HTTP 200 with
 * grpc-status and grpc-message in its headers (proxy/pipeline/answer.ts ownAnswer,
 * kinds/denied.ts gateway-error, http/grpc-status.ts). No route: NoRoute,
 * UNIMPLEMENTED (12); a rule that cannot be served (GRPCRouteRule.backendRefs: "UNAVAILABLE"),
 * or no endpoints: UNAVAILABLE (14). Anything else is left as it is.
 */
function grpcAnswer(r: ExplainResponse): { response: ExplainResponse; grpc: ExplainGrpc } {
  // An answer made here already (a weighted rule's choices are shaped one by one first).
  const known = GRPC_OF.get(r);
  if (known !== undefined) return { response: r, grpc: known };
  const own = (status: number, message: string, why: string): { response: ExplainResponse; grpc: ExplainGrpc } => {
    const response: ExplainResponse = { ...r, status: 200, cause: `${r.cause}; a gRPC call gets it as Trailers-Only grpc-status ${status} (${message})` };
    const grpc: ExplainGrpc = { status, message, note: `Portico answers this gRPC call itself: HTTP 200, content-type application/grpc, grpc-status ${status}, grpc-message "${message}" in the headers (Trailers-Only): ${why}` };
    GRPC_OF.set(response, grpc);
    return { response, grpc };
  };
  if (r.kind === "depends") {
    return { response: r, grpc: { status: null, message: null, note: "a gRPC call: the weights or the auth service decide; a share Portico answers itself gets its Trailers-Only grpc-status (see the cause)" } };
  }
  if (r.kind === "refused" && r.by === "no-route") return own(12, "no route", "no rule matches the call's path /<service>/<method> (UNIMPLEMENTED)");
  if (r.kind === "refused" && r.by === "gateway-error") return own(14, "no endpoints", "the rule's backendRefs cannot be used (UNAVAILABLE, as GRPCRouteRule.backendRefs asks)");
  if (r.kind === "refused" && r.by === "endpoints" && r.status === 503) return own(14, "no endpoints", "the backend has no endpoints (UNAVAILABLE)");
  const pod = r.kind === "proxied";
  return {
    response: r,
    grpc: { status: null, message: null, note: pod ? "a gRPC call: the pod's grpc-status is relayed (HTTP/2 to the pod when the backend speaks gRPC)" : "a gRPC call: this answer is Portico's own, sent as plain HTTP (no grpc-status)" },
  };
}

/** The compile configuration, with the flags the proxy's own redirects read (defaults when absent). */
export type ExplainConfig = CompileConfig & AnswerConfig;

/**
 * What the route's Ingress says of the global auth (template.go shouldApplyGlobalAuth), read
 * from its plan as plan.ts takesGlobalAuth reads it; null without --global-auth-url, without an
 * Ingress, or for one ingress-nginx refuses (its 503 answers first).
 */
function routeAuth(route: Route, plans: readonly IngressPlan[], config: CompileConfig): RouteAuth | null {
  if (config.globalAuthUrl === null || !route.ingress.name) return null;
  const key = `${route.ingress.namespace}/${route.ingress.name}`;
  const plan = plans.find((p) => p.key === key);
  if (plan === undefined || plan.annotations.denied !== null) return null;
  const ext = plan.annotations.policies.externalAuth;
  return { global: ext.enabled ? "own" : ext.global ? "global" : "opted-out", ingress: key };
}

/**
 * The host keys a request for `host` can reach: the host itself, the wildcard one label up
 * (`*.foo.com` covers exactly one extra label, as hosts.ts tlsCovers), and hostless rules.
 */
interface RequestHost {
  readonly host: string;
  readonly wildcard: string | null;
}

function requestHost(host: string): RequestHost {
  const dot = host.indexOf(".");
  return { host, wildcard: !host.startsWith("*.") && dot > 0 ? `*.${host.slice(dot + 1)}` : null };
}

function hostRelation(ruleHost: string | null, req: RequestHost): "exact-host" | "wildcard-host" | "any-host" | null {
  if (ruleHost === null) return "any-host";
  if (ruleHost === req.host) return "exact-host";
  return ruleHost === req.wildcard ? "wildcard-host" : null;
}

function pathMatches(type: "Exact" | "Prefix", rulePath: string, path: string): boolean {
  return type === "Exact" ? rulePath === path : isPathPrefix(rulePath, path);
}

/** Two routes from one rule path (explain traces a host again, so its route objects are new). */
function sameRoute(a: Route, b: Route): boolean {
  return (
    a === b ||
    (a.source === b.source &&
      a.ingress.namespace === b.ingress.namespace &&
      a.ingress.name === b.ingress.name &&
      a.ruleIndex === b.ruleIndex &&
      a.pathIndex === b.pathIndex &&
      a.host === b.host)
  );
}

function outrankReason(winner: Route, loser: { path: string; pathType: "Exact" | "Prefix" }): string {
  if (winner.path.length > loser.path.length) {
    return `${winner.pathType} ${winner.path} is longer (${winner.path.length} > ${loser.path.length} characters)`;
  }
  if (winner.pathType === "Exact" && loser.pathType === "Prefix") return `Exact ${winner.path} beats Prefix at equal length`;
  return `${winner.pathType} ${winner.path} comes first at equal precedence`;
}

/**
 * An --enable-ssl-passthrough connection (serving/passthrough.ts): copied to an endpoint of the
 * host's `/` route untouched, the pod terminating TLS; without an endpoint the front closes it.
 */
function passthroughAnswer(route: Route): ExplainResponse {
  const b = route.backend;
  const by = `ssl-passthrough (${route.ingress.namespace}/${route.ingress.name}, --enable-ssl-passthrough): the HTTPS port's front reads the ClientHello's SNI name and`;
  const none = "no rule path, policy or certificate of Portico's applies (the pod terminates TLS and answers)";
  if (b.endpoints.length === 0) {
    return { kind: "refused", status: null, by: "ssl-passthrough", cause: `${by} would copy the connection to a pod of ${b.id}, which has no endpoint: the connection is closed without an answer`, notes: [] };
  }
  return { kind: "proxied", status: null, by: "ssl-passthrough", backends: [b.id], cause: `${by} copies the connection to a pod of ${b.id} untouched; ${none}`, notes: [] };
}

/** `answers`, the one-word form of the response. */
function answersOf(r: ExplainResponse): ExplainMatch["answers"] {
  if (r.kind === "proxied" || r.kind === "depends") return r.kind;
  // An ssl-passthrough connection without an endpoint: the front closes it, no status at all.
  if (r.by === "ssl-passthrough") return "closed";
  return `${r.status ?? 500}`;
}

function describeMatch(m: Match, response: ExplainResponse): ExplainMatch {
  const r = m.route;
  const b = r.backend;
  return {
    ingress: r.ingress.name ? `${r.ingress.namespace}/${r.ingress.name}` : null,
    source: r.source,
    ruleIndex: r.ruleIndex,
    pathIndex: r.pathIndex,
    host: r.host,
    hostEntry: m.hostKey,
    via: m.via,
    path: r.path,
    pathType: r.pathType,
    declaredPathType: r.declaredPathType,
    backend: { id: b.id, status: b.status, scheme: b.scheme, protocol: UPSTREAM_PROTOCOL[b.scheme], endpoints: b.endpoints.map((u) => u.authority) },
    answers: answersOf(response),
    tls: r.tls,
    ...(r.canary === undefined ? {} : { canary: describeCanary(r) }),
  };
}

/** The canary of a route: its Ingress, its backend and the rules of its `backend`-stage policy. */
function describeCanary(r: Route): ExplainCanary {
  const c = r.canary as NonNullable<Route["canary"]>;
  const policy = r.options.stages?.find((p) => p.kind === K.CANARY.id);
  const { affinity = null, ...rest } = (policy?.params ?? {}) as CanaryRules & { affinity?: CanaryAffinity };
  const rules = policy === undefined ? null : (rest as CanaryRules);
  const b = c.backend;
  const first =
    affinity === null ? "" : affinity.sticky ? `the affinity cookie ${affinity.cookie} naming main or the canary, then ` : `the affinity cookie ${affinity.cookie} naming main, then `;
  return {
    ingress: `${c.ingress.namespace}/${c.ingress.name}`,
    backend: { id: b.id, status: b.status, scheme: b.scheme, protocol: UPSTREAM_PROTOCOL[b.scheme], endpoints: b.endpoints.map((u) => u.authority) },
    rules,
    affinity,
    order: `${first}header, then cookie, then weight (the first rule that decides wins)`,
  };
}

function selectCertificate(certs: readonly CertificateBinding[], host: string): ExplainCertificate {
  const view = (b: CertificateBinding, via: ExplainCertificate["via"]): ExplainCertificate => ({
    via,
    host: b.host,
    secret: b.secret,
    ingress: b.ingress,
    hasPem: b.cert !== null && b.key !== null,
    ...(b.matchedBy === undefined ? {} : { matchedBy: b.matchedBy }),
  });
  const unusable: { secret: string; reason: string }[] = [];
  // The default: the host "" binding (--default-ssl-certificate, a Gateway port's hostless
  // listener) when the listener's PEM check takes it, else the generated certificate
  // (tls/default-cert.ts pickDefaultCertificate).
  const fallback = (notNaming?: string): ExplainCertificate => {
    const def = certs.find((c) => c.host === "" && c.secret !== null);
    const check = def === undefined ? null : pemOf(def);
    if (def !== undefined && check !== null && !check.ok) unusable.push({ secret: def.secret as string, reason: check.reason });
    const base = def !== undefined && check?.ok === true ? view(def, "default") : { via: "generated-default" as const, host: "", secret: null, ingress: "", hasPem: false };
    return { ...base, ...(notNaming === undefined ? {} : { notNaming }), ...(unusable.length === 0 ? {} : { unusable }) };
  };
  // The listener serves the default certificate for a host whose Secret it refuses or whose
  // certificate does not name it (tls/sni.ts buildTlsEntries, ingress-nginx's createServers):
  // the same check, compile/explain-tls.ts ownCertificate.
  const chosen = (b: CertificateBinding, via: ExplainCertificate["via"]): ExplainCertificate => {
    const own = ownCertificate(b);
    if (b.matchedBy === "none") return { ...fallback(), ingress: b.ingress, matchedBy: "none" };
    if (own.served || own.why === "no-secret" || own.why === "no-pem") return view(b, via);
    if (own.why === "unusable") {
      unusable.push({ secret: b.secret as string, reason: own.reason });
      return fallback();
    }
    return fallback(b.secret as string);
  };
  const exact = certs.find((c) => c.host === host);
  if (exact) return chosen(exact, "exact");
  const wild = certs.find((c) => c.host.startsWith("*.") && tlsCovers(c.host, host));
  if (wild) return chosen(wild, "wildcard");
  return fallback();
}

/**
 * The candidates, at most EXPLAIN_LIMITS.candidatesPerVerdict of each verdict (in the order
 * found); the others are only counted. Thousands of Ingresses can share a path such as "/",
 * and each is a host-mismatch candidate: listing them all made answers of megabytes.
 */
class Candidates {
  readonly list: ExplainCandidate[] = [];
  /** Per verdict: how many were found (plain counters: this runs once per rule path). */
  readonly #found: Record<CandidateVerdict, number> = {
    matched: 0,
    "not-our-class": 0,
    invalid: 0,
    "host-mismatch": 0,
    "host-tier-lost": 0,
    "path-mismatch": 0,
    outranked: 0,
    "conflict-loser": 0,
    duplicate: 0,
    canary: 0,
    "canary-unused": 0,
  };

  /** Is there room for one more candidate with this verdict? Counts it either way. */
  room(verdict: CandidateVerdict): boolean {
    return ++this.#found[verdict] <= EXPLAIN_LIMITS.candidatesPerVerdict;
  }

  /** Candidates found but not listed, per verdict (only the verdicts that have some). */
  omitted(): Partial<Record<CandidateVerdict, number>> {
    const out: Partial<Record<CandidateVerdict, number>> = {};
    for (const [verdict, n] of Object.entries(this.#found) as [CandidateVerdict, number][]) {
      if (n > EXPLAIN_LIMITS.candidatesPerVerdict) out[verdict] = n - EXPLAIN_LIMITS.candidatesPerVerdict;
    }
    return out;
  }

  /** List one candidate (after room() said there is room). */
  push(plan: IngressPlan, rp: RulePath | null, shown: Shown, verdict: CandidateVerdict, reason: string): void {
    const ruleIndex = rp?.ruleIndex ?? -1;
    const pathIndex = rp?.pathIndex ?? -1;
    this.list.push({ ingress: plan.key, ruleIndex, pathIndex, host: shown.host, path: shown.path, pathType: shown.pathType, verdict, reason });
  }
}

/** How a candidate's rule path is shown. */
interface Shown {
  readonly host: string | null;
  readonly path: string;
  readonly pathType: string;
}

/** A rule path of an Ingress we do not serve: listed when its host or its path is relevant. */
function notOursCandidate(plan: IngressPlan, rp: RulePath, reason: () => string, req: RequestHost, path: string, out: Candidates): void {
  let host: string | null;
  let rulePath: string;
  let type: "Exact" | "Prefix" | null;
  let hostHit: boolean;
  if (rp.valid) {
    host = rp.host;
    rulePath = rp.path;
    type = rp.pathType;
    hostHit = hostRelation(rp.host, req) !== null;
  } else {
    const hostOk = rp.reason !== "InvalidHost";
    host = hostOk ? rp.host : rp.rawHost;
    rulePath = rp.checked?.path ?? rp.rawPath;
    type = rp.checked?.type ?? null;
    hostHit = hostOk && hostRelation(rp.host, req) !== null;
  }
  if (!hostHit && !(type !== null && pathMatches(type, rulePath, path))) return;
  if (out.room("not-our-class")) out.push(plan, rp, { host, path: rulePath, pathType: rp.declaredPathType }, "not-our-class", reason());
}

const routeKey = (r: Route) => `${r.ingress.namespace}/${r.ingress.name}#${r.ruleIndex}#${r.pathIndex}`;

/**
 * A regex-mode host's locations tested against one request: the first that matches (what
 * the lookup chose, via the same set), and each location on demand for the candidates.
 */
class RegexView {
  readonly uri: string | null;
  readonly first: number;
  readonly #tests: (boolean | undefined)[] = [];
  /** routeKey → indexes of that route's locations. */
  readonly byRoute = new Map<string, number[]>();

  constructor(
    readonly entry: HostRoutes,
    readonly rx: RegexRoutes,
    path: string,
  ) {
    this.uri = decodedPath(path);
    this.first = this.uri === null ? -1 : rx.set.firstMatch(this.uri);
    rx.locations.forEach((l, i) => {
      if (l.spec.route < 0) return;
      const key = routeKey(entry.routes[l.spec.route] as Route);
      const list = this.byRoute.get(key);
      if (list) list.push(i);
      else this.byRoute.set(key, [i]);
    });
  }

  test(i: number): boolean {
    let t = this.#tests[i];
    if (t === undefined) t = this.#tests[i] = this.uri !== null && (this.rx.locations[i] as RegexRoutes["locations"][number]).re.test(this.uri);
    return t;
  }

  describe(i: number): string {
    const l = this.rx.locations[i] as RegexRoutes["locations"][number];
    if (l.spec.route < 0) return `the implicit "/" location (the first Ingress's policies, then the default backend)`;
    const r = this.entry.routes[l.spec.route] as Route;
    return `location ~* "^${l.spec.path}" (${r.ingress.namespace}/${r.ingress.name}${l.spec.origin === "as-written" ? "" : `, ${l.spec.origin}`})`;
  }

  /** What explain reports of the match. */
  report(): ExplainRegex {
    const l = this.first < 0 ? null : (this.rx.locations[this.first] as RegexRoutes["locations"][number]);
    const m = l === null || this.uri === null ? null : l.re.match(this.uri);
    return {
      matchedAgainst: this.uri ?? "",
      locations: this.rx.locations.length,
      location: l === null ? null : { path: l.spec.path, origin: l.spec.origin, pattern: l.re.locationSource, index: this.first },
      groups: m?.groups ?? [],
      named: m?.named ?? {},
    };
  }
}

/** What the matched route's rewrite-target does to this request, as the proxy's rewrite stage does it. */
function explainRewrite(match: Match | null): ExplainRewrite | null {
  const hit = match?.regex;
  if (match === null || hit === undefined || hit.captures === null) return null;
  const policy = match.route.options.stages?.find((p) => p.kind === "rewrite-target");
  const target = policy?.params.target;
  if (typeof target !== "string") return null;
  const xfp = policy?.params.xForwardedPrefix;
  // Explain drops the query string; the proxy appends the request's to either outcome.
  const out = rewriteRequest(target, hit.re, hit.captures, "");
  if (out.kind === "redirect") return { target, outcome: "redirect", location: out.location, xForwardedPrefix: null };
  if (out.kind === "refused") return { target, outcome: "refused", reason: out.reason, xForwardedPrefix: null };
  const prefix = typeof xfp === "string" ? forwardedPrefix(xfp, hit.re, hit.captures) : null;
  return { target, outcome: "path", path: out.path, xForwardedPrefix: prefix };
}

/** A rule path of a served Ingress: why it won or lost for this request (nothing when irrelevant). */
function ruleCandidate(
  plan: IngressPlan,
  rp: RulePath,
  trace: CompileTrace,
  req: RequestHost,
  path: string,
  match: Match | null,
  chosen: string | null,
  regex: RegexView | null,
  out: Candidates,
): void {
  if (!rp.valid) {
    // Shown as far as it was checked: the path is known valid only when the backend failed.
    const checked = rp.reason === "InvalidBackend" ? rp.checked : null;
    const rulePath = checked?.path ?? rp.rawPath;
    const relevant = hostRelation(rp.host, req) !== null || (checked !== null && pathMatches(checked.type, rulePath, path));
    if (!relevant || !out.room("invalid")) return;
    const shown = { host: rp.reason === "InvalidHost" ? rp.rawHost : rp.host, path: rulePath, pathType: checked?.type ?? rp.declaredPathType };
    out.push(plan, rp, shown, "invalid", `${rp.reason}: ${rp.message}`);
    return;
  }
  const type = rp.pathType;
  const rel = hostRelation(rp.host, req);
  const pathHit = pathMatches(type, rp.path, path);
  if (rel === null) {
    // The common case at scale (every Ingress with a "/" path): count it, build nothing more.
    if (pathHit && out.room("host-mismatch")) out.push(plan, rp, rp, "host-mismatch", `host ${rp.host} does not match ${req.host}`);
    return;
  }
  // Its host key is one that inspect() traced (hostRelation accepts no other).
  const o = trace.paths.get(rp);
  if (o === undefined) throw new Error(`explain: host ${rp.host ?? "*"} was not traced`);
  const hostKey = rp.host ?? "*";
  // On the chosen host in regex mode the path is shown as written: it is the regex.
  const rx = regex !== null && chosen === hostKey ? regex : null;
  const shown: Shown = rx === null ? rp : { host: rp.host, path: rp.rawPath, pathType: rp.pathType };
  let verdict: CandidateVerdict;
  let reason: string;
  if (o.kind === "duplicate") [verdict, reason] = ["duplicate", o.message];
  else if (o.kind === "conflict") [verdict, reason] = ["conflict-loser", o.message];
  else if (o.kind === "invalid") [verdict, reason] = ["invalid", o.message];
  else if (chosen !== hostKey) {
    [verdict, reason] = ["host-tier-lost", `host entry ${chosen} was chosen first (exact host > wildcard > no host); there is no fallthrough`];
  } else if (o.kind === "canary-unused") {
    // In regex mode an unused canary path has no location to test: it is listed as it is.
    [verdict, reason] = rx === null && !pathHit ? pathMismatch(type, rp.path, path) : ["canary-unused", o.message];
  } else if (rx !== null) {
    // A canary's route is main's route: it applies where main's locations match.
    [verdict, reason] = regexVerdict(rx, o.route, match, rp.rawPath);
    if (o.kind === "canary" && verdict !== "path-mismatch") [verdict, reason] = canaryVerdict(o.main, verdict === "matched", type, rp.rawPath);
  } else if (!pathHit) [verdict, reason] = pathMismatch(type, rp.path, path);
  else if (o.kind === "canary") {
    [verdict, reason] = canaryVerdict(o.main, match !== null && sameRoute(match.route, o.route), type, rp.path);
  } else if (match !== null && sameRoute(match.route, o.route)) {
    [verdict, reason] = ["matched", `host via ${match.via}, ${type} ${rp.path} is the best path`];
  } else {
    [verdict, reason] = ["outranked", match !== null ? outrankReason(match.route, o.route) : "another route won"];
  }
  if (out.room(verdict)) out.push(plan, rp, shown, verdict, reason);
}

function pathMismatch(type: Route["pathType"], rulePath: string, path: string): [CandidateVerdict, string] {
  const how = type === "Exact" ? "Exact needs the whole path, case and trailing slash included" : "Prefix matches whole path elements";
  return ["path-mismatch", `${type} ${rulePath} does not match ${path} (${how})`];
}

/** A canary Ingress's path attached to main's route (`main`: main's `namespace/name`). */
function canaryVerdict(main: string, matched: boolean, type: Route["pathType"], rulePath: string): [CandidateVerdict, string] {
  const which = matched ? "the matched route" : "another route";
  return ["canary", `canary of ${main}'s ${type} ${rulePath}, ${which}: the backend stage may send the request to it`];
}

/** Matched, path-mismatch or outranked, for a route of a host in regex mode. */
function regexVerdict(rx: RegexView, route: Route, match: Match | null, rawPath: string): [CandidateVerdict, string] {
  const locs = rx.byRoute.get(routeKey(route)) ?? [];
  const uri = JSON.stringify(rx.uri ?? "");
  const hit = locs.find((i) => rx.test(i));
  if (hit === undefined) {
    const tried = locs.map((i) => `~* "^${(rx.rx.locations[i] as RegexRoutes["locations"][number]).spec.path}"`).join(", ");
    return ["path-mismatch", `regex mode: no location of ${JSON.stringify(rawPath)} (${tried}) matches ${uri} (case-insensitive, anchored at the start only)`];
  }
  if (match !== null && match.via !== "default" && sameRoute(match.route, route)) {
    return ["matched", `regex mode: ${rx.describe(rx.first)} is the first of ${rx.rx.locations.length} locations to match ${uri}`];
  }
  return [
    "outranked",
    `regex mode: ${rx.describe(hit)} matches ${uri}, but ${rx.describe(rx.first)} comes first (ingress-nginx tries the longest location first, equal lengths in reverse byte order, and takes the first match)`,
  ];
}

/**
 * Rule paths (or diagnostics) looked at between two pauses of explainSteps: about a
 * millisecond of work before the JIT has warmed up to it.
 */
const STEP = 2000;

/**
 * Explain one request against `snapshot`. `compiler` (one made with `config`) is the
 * controller's, which has compiled that snapshot already; without it, a new one compiles it.
 * Throws a RangeError for a host or path beyond EXPLAIN_LIMITS.
 */
export function explain(snapshot: Snapshot, config: ExplainConfig, request: ExplainRequest, compiler: Compiler = new Compiler(config)): ExplainResult {
  const steps = explainSteps(snapshot, config, request, compiler);
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
  }
}

/**
 * explain() in steps: it pauses (yields) after every STEP rule paths, so that a caller on an
 * event loop can let other work run between steps; at 10,000 Ingresses the whole walk takes
 * several milliseconds before the JIT warms up. Everything it reads is fixed when it starts
 * (plans and tables are immutable; the plan lists are copied), so a compile that runs during
 * a pause does not change the answer.
 */
export function* explainSteps(
  snapshot: Snapshot,
  config: ExplainConfig,
  request: ExplainRequest,
  compiler: Compiler = new Compiler(config),
): Generator<void, ExplainResult, void> {
  if (request.host.length > EXPLAIN_LIMITS.host) throw new RangeError(`explain: host longer than ${EXPLAIN_LIMITS.host} characters`);
  if (request.path.length > EXPLAIN_LIMITS.path) throw new RangeError(`explain: path longer than ${EXPLAIN_LIMITS.path} characters`);
  if (request.method !== undefined && !METHOD.test(request.method)) throw new RangeError("explain: method is not an HTTP method token");
  if (request.contentType !== undefined && (request.contentType.length > 256 || /[\u0000-\u001f\u007f]/.test(request.contentType))) throw new RangeError("explain: content type is not a header value");
  if (request.acceptEncoding !== undefined && (request.acceptEncoding.length > 256 || /[\u0000-\u001f\u007f]/.test(request.acceptEncoding))) throw new RangeError("explain: accept encoding is not a header value");
  if (request.userAgent !== undefined && (request.userAgent.length > 512 || /[\u0000-\u001f\u007f]/.test(request.userAgent))) throw new RangeError("explain: user agent is not a header value");
  const norm = normaliseRequest(request);
  const host = requestHost(norm.host);
  const view = compiler.inspect(snapshot, host.wildcard === null ? [norm.host, "*"] : [norm.host, host.wildcard, "*"]);
  const { result, trace } = view;
  const selected = selectPort(result.table, norm);
  const ownPort = selected.port?.[1] ?? null;
  // A Gateway's own port has the scheme of its listeners, whatever was asked.
  const req: ExplainRequest = ownPort === null ? norm : { ...norm, scheme: ownPort.https ? "https" : "http" };
  const asked = { method: req.method ?? "GET", contentType: req.contentType ?? null };
  const grpcCall = asked.contentType !== null && GRPC_CONTENT_TYPE.test(asked.contentType);
  // Later compiles update the compiler's lists in place.
  const ignored = view.ignored.slice();
  const served = view.served.slice();
  // On a Gateway's own port no Ingress answers (serving/gateway-ports.ts).
  const match = ownPort === null ? lookup(result.table, req.host, req.path) : null;
  const entry = ownPort === null ? selectHost(result.table, req.host) : null;
  const chosen = entry?.host ?? null;
  const regex = entry?.regex ? new RegexView(entry, entry.regex, req.path) : null;
  const rewrite = explainRewrite(match);
  const answerReq = { host: req.host, path: req.path, scheme: req.scheme, client: req.client ?? null, acceptEncoding: req.acceptEncoding ?? null, userAgent: req.userAgent ?? null };
  // The Gateway API rules are asked before the Ingress table, as the proxy does (docs/design.md
  // "Gateway API"); the Ingress candidates are still listed, and lose to the Gateway rule.
  // What the table adds to every request and answer (add-headers, proxy-set-headers).
  const answerConfig = { ...config, globalHeaders: result.table.globalHeaders ?? null };
  const gwRoutes: GatewayRoutes | null = ownPort !== null ? ownPort.routes : (result.table.gateway ?? null);
  const only = ownPort === null ? null : { gateway: ownPort.gateway, declared: ownPort.declared };
  const shape = grpcCall ? (a: ExplainResponse) => grpcAnswer(a).response : undefined;
  const gw = gwRoutes !== null ? explainGatewayRequest(gwRoutes, result.gateway, answerReq, answerConfig, asked, only, shape) : null;
  // --block-* answer 403 in the route step, whatever route (Gateway, Ingress or none) matched.
  const blocked = blockedAnswer(answerReq, answerConfig);
  const http: ExplainResponse =
    blocked !== null
      ? blocked
      : gw !== null
        ? gw.response
        : match === null
          ? unknownClient(
              ownAnswer({
                kind: "refused",
                status: 404,
                cause: ownPort !== null ? `no rule of Gateway ${ownPort.gateway} on this port matches (no Ingress is served on a Gateway's own port)` : "no rule matches and there is no default backend",
                by: "no-route",
                notes: [],
              }, answerConfig),
              answerReq,
              config,
            )
            : predictAnswer(match, answerReq, answerConfig, routeAuth(match.route, served, config));
  // --enable-ssl-passthrough: the HTTPS port's front reads the SNI name before anything else
  // (serving/passthrough.ts, the same table/passthrough.ts rule), so for a passthrough host no
  // block list, Gateway rule, Ingress rule or policy of Portico's is ever asked.
  const through = ownPort === null && req.scheme === "https" ? passthroughRouteOf(result.table, req.host) : null;
  const grpc = grpcCall && through === null ? grpcAnswer(http) : null;
  const shaped = through !== null ? passthroughAnswer(through) : (grpc?.response ?? http);
  const pp = proxyProtocolNote(config);
  const response = pp === null ? shaped : { ...shaped, notes: [...shaped.notes, pp] };

  const out = new Candidates();
  let budget = STEP;
  // A Gateway's own port serves no Ingress: none is a candidate there.
  if (ownPort !== null) {
    ignored.length = 0;
    served.length = 0;
  }
  for (const plan of ignored) {
    const reason = () => {
      const decision = view.classify(plan);
      // --disable-catch-all refuses an Ingress of our class: say that, not "not our class".
      return decision.rule === "disable-catch-all" ? `not served (--disable-catch-all): ${decision.reason}` : `not our class (${decision.rule}): ${decision.reason}`;
    };
    for (const rp of plan.rulePaths) notOursCandidate(plan, rp, reason, host, req.path, out);
    if ((budget -= plan.rulePaths.length) <= 0) {
      yield;
      budget = STEP;
    }
  }
  for (const plan of served) {
    for (const rp of plan.rulePaths) ruleCandidate(plan, rp, trace, host, req.path, match, chosen, regex, out);
    if ((budget -= plan.rulePaths.length) <= 0) {
      yield;
      budget = STEP;
    }
  }
  const asDefault: Shown = { host: null, path: "/", pathType: "defaultBackend" };
  for (const { plan, outcome: o } of ownPort === null ? trace.defaults : []) {
    let verdict: CandidateVerdict;
    let reason: string;
    if (o.kind === "route") {
      const viaRoot = match !== null && match.route.source === "implicitRoot" && match.route.backend.id === o.route.backend.id;
      const used = match !== null && (viaRoot || sameRoute(match.route, o.route));
      verdict = used ? "matched" : "outranked";
      reason = viaRoot
        ? "no rule matched; the host's implicit \"/\" location sends the request to the winning spec.defaultBackend"
        : used
          ? "no rule matched; the winning spec.defaultBackend answers"
          : "spec.defaultBackend is used only when no rule matches";
    } else if (o.kind === "conflict") [verdict, reason] = ["conflict-loser", o.message];
    else [verdict, reason] = ["invalid", `${o.reason}: ${o.message}`];
    if (out.room(verdict)) out.push(plan, null, asDefault, verdict, reason);
  }

  // What answers before any Ingress rule: the Ingress candidate that matched is outranked by it.
  const before =
    through !== null
      ? "ssl-passthrough: the connection is copied to the pod untouched before any request is read; no rule path applies over TLS"
      : gw === null
        ? null
        : `${gw.gateway.kind} ${gw.gateway.route} answers first: Gateway API rules are asked before Ingress rules`;
  const candidates = before === null ? out.list : out.list.map((c) => (c.verdict === "matched" ? { ...c, verdict: "outranked" as const, reason: before } : c));
  const involved = new Set(candidates.map((c) => c.ingress));
  if (match?.route.ingress.name) involved.add(`${match.route.ingress.namespace}/${match.route.ingress.name}`);
  const diagnostics: Diagnostic[] = [];
  for (const d of result.diagnostics) {
    if (d.kind === "Ingress" && involved.has(`${d.namespace}/${d.name}`)) diagnostics.push(d);
    // The matched route's own (a GRPCRoute's under its kind), and the Gateways that attach it there.
    if (gw !== null && d.kind === gw.gateway.kind && gw.gateway.route === `${d.namespace}/${d.name}`) diagnostics.push(d);
    if (gw !== null && d.kind === "Gateway" && gw.gateway.listeners.some((l) => l.gateway === `${d.namespace}/${d.name}`)) diagnostics.push(d);
    // A route left out on this host because an Ingress names it (compile/gateway/ingress-hosts.ts).
    if (d.reason === "RouteHostHeldByIngress" && d.message.startsWith(`hostname ${req.host} `)) diagnostics.push(d);
    if (--budget <= 0) {
      yield;
      budget = STEP;
    }
  }
  const matchedRoute = through ?? (gw === null ? (match?.route ?? null) : null);
  const matched = matchedRoute?.ingress.name ? `${matchedRoute.ingress.namespace}/${matchedRoute.ingress.name}` : null;
  const plan = matched === null ? undefined : served.find((p) => p.key === matched);
  const annotations = (plan === undefined ? [] : annotationsOf(plan)).map(({ name, value, status, text }) => ({ name, value, status, text }));
  // The certificates of the port asked: a Gateway's own HTTPS port serves its listeners' (and
  // as its default its hostless listener's) with the listener settings alone, no Ingress's
  // ssl-ciphers (serving/tls.ts buildPortTls); the shared port the compile's, Gateway
  // listeners' included (compile.ts). A passthrough connection meets no certificate of Portico's.
  const certs = ownPort === null ? result.certificates : (result.gatewayPortCertificates?.get(selected.port![0]) ?? []);
  const hostTls = ownPort === null ? result.hostTls : undefined;
  const terminated = req.scheme === "https" && through === null;
  return {
    request: req,
    outcome: through !== null ? "passthrough" : gw !== null ? "route" : match === null ? "404" : match.via === "default" ? "default" : match.route.source === "implicitRoot" ? "implicit-root" : "route",
    response,
    match: through !== null ? describeMatch({ route: through, hostKey: req.host, via: "exact-host" }, response) : gw !== null ? describeMatch(gw.match, response) : match ? describeMatch(match, response) : null,
    hostEntry: chosen,
    regex: gw !== null || through !== null ? null : (regex?.report() ?? null),
    rewrite: gw !== null || through !== null ? null : rewrite,
    candidates,
    omittedCandidates: out.omitted(),
    certificate: terminated ? selectCertificate(certs, req.host) : null,
    ...(terminated ? { tls: listenerTls(req.host, certs, hostTls, config) } : {}),
    diagnostics,
    annotations,
    ...(gw === null || through !== null ? {} : { gateway: gw.gateway }),
    table: selected.info,
    ...(pp === null ? {} : { proxyProtocol: { withoutHeader: "closed" as const, trusted: config.proxyProtocolTrusted ?? DEFAULT_PROXY_PROTOCOL_TRUSTED, httpsPort: 443 as const } }),
    ...(grpc === null ? {} : { grpc: grpc.grpc }),
  };
}
