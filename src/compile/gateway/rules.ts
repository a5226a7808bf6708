// One HTTPRoute's rules, compiled once whatever it attaches to (apis/v1 httproute_types.go):
// matches with the spec's defaults, filters in order, weighted backendRefs. A backendRef that
// cannot be used (another kind, a Service that does not exist, another namespace without a
// ReferenceGrant) keeps its weight and answers 500 for its share of the rule's requests
// (HTTPBackendRef: "requests that would have been sent to an invalid backend MUST receive a
// 500"), so exactly the affected rules fail and the valid rules keep serving.
import type { HTTPRoute, HTTPRouteFilter } from "../../model/gateway.ts";
import { GATEWAY_GROUP } from "../../model/kinds.ts";
import { FIELD_VALUE, FRAMING, TOKEN } from "../../policy/headers.ts";
import type { Service } from "../../model/schemas.ts";
import type { Snapshot } from "../../store/types.ts";
import type { Backend } from "../../table/types.ts";
import { serviceRef, type BackendRef, type ResolvedBackend } from "../backends.ts";
import type { GatewayMatch, HeaderMatch } from "../../table/types.ts";
import { cond, referenceAllowed, type Condition } from "./attach.ts";
import { compileHeaderPattern, compilePathRegex } from "../../regex/index.ts";
import type { AccessFlags } from "../access.ts";
import { NO_FLAGS, POLICY_KIND, resolveExtension, type ExtensionProblem, type RuleExtension } from "./extension.ts";

export interface CompiledMatch extends GatewayMatch {
  /** The path as written ("/" when none): explain and the synthetic route show it. */
  readonly written: string;
}

export interface HeaderModifier {
  readonly set: readonly HeaderMatch[];
  readonly add: readonly HeaderMatch[];
  /** Lowercased names. */
  readonly remove: readonly string[];
}

export interface Redirect {
  readonly scheme: "http" | "https" | null;
  readonly hostname: string | null;
  readonly port: number | null;
  readonly statusCode: RedirectCode;
  /** ReplaceFullPath, or ReplacePrefixMatch of the matched prefix; null keeps the path. */
  readonly path: PathModifier | null;
}

/** HTTPRequestRedirectFilter.statusCode: the CRD's enum (301 and 302 core, 303, 307, 308 Extended). */
export type RedirectCode = 301 | 302 | 303 | 307 | 308;
const REDIRECT_CODES: ReadonlySet<number> = new Set([301, 302, 303, 307, 308]);

/** HTTPPathModifier. */
export interface PathModifier {
  readonly type: "ReplaceFullPath" | "ReplacePrefixMatch";
  readonly value: string;
}

/** HTTPURLRewriteFilter: the Host and the path sent to the backend (null keeps the request's). */
export interface Rewrite {
  readonly hostname: string | null;
  readonly path: PathModifier | null;
}

/** HTTPCORSFilter, checked: what the gateway-cors policy takes (kinds/cors.ts GATEWAY_CORS). */
export interface Cors {
  readonly origins: readonly string[];
  readonly methods: readonly string[];
  readonly headers: readonly string[];
  readonly expose: readonly string[];
  readonly credentials: boolean;
  readonly maxAge: number;
}

/** RequestMirror: where a copy of the request goes, and how often. */
export interface Mirror {
  /** `host:port` of the mirror Service's ready endpoints (empty: nothing to send to). */
  readonly endpoints: readonly string[];
  /** Percent of requests mirrored (HTTPRequestMirrorFilter percent or fraction; 100 by default). */
  readonly percent: number;
}

/** HTTPRouteTimeouts in ms; 0 disables (the zero duration), null is unset. */
export interface Timeouts {
  readonly requestMs: number | null;
  readonly backendRequestMs: number | null;
}

/** A Gateway API Duration (GEP-2257: `^([0-9]{1,5}(h|m|s|ms)){1,4}$`) in ms, or null. */
export function parseDuration(text: string): number | null {
  if (!/^([0-9]{1,5}(h|m|s|ms)){1,4}$/.test(text)) return null;
  let ms = 0;
  for (const [, n, unit] of text.matchAll(/([0-9]+)(ms|h|m|s)/g)) ms += Number(n) * (unit === "h" ? 3_600_000 : unit === "m" ? 60_000 : unit === "s" ? 1000 : 1);
  return ms;
}

export interface WeightedBackend {
  /** Null: an invalid backendRef (its share of requests answers 500). */
  readonly backend: Backend | null;
  readonly weight: number;
  /** HTTPBackendRef.filters' RequestHeaderModifier: applied after the rule's, for this backend only. */
  readonly requestHeaders: HeaderModifier | null;
  /** HTTPBackendRef.filters' ResponseHeaderModifier: applied after the rule's, for this backend's answers only. */
  readonly responseHeaders: HeaderModifier | null;
  /** HTTPBackendRef.filters' RequestRedirect: this backend's share of requests is redirected. */
  readonly redirect: Redirect | null;
  /** HTTPBackendRef.filters' URLRewrite: applied after the rule's, for this backend only. */
  readonly rewrite: Rewrite | null;
}

/** A backendRef that cannot be used: its share answers 500, its filters never run. */
const invalidBackend = (weight: number): WeightedBackend => ({ backend: null, weight, requestHeaders: null, responseHeaders: null, redirect: null, rewrite: null });

export interface CompiledRule {
  /** The route; `kind` is set for a GRPCRoute (an HTTPRoute of the same name is another route). */
  readonly route: { readonly namespace: string; readonly name: string; readonly kind?: "GRPCRoute" };
  readonly ruleIndex: number;
  readonly matches: readonly CompiledMatch[];
  readonly requestHeaders: HeaderModifier | null;
  readonly responseHeaders: HeaderModifier | null;
  readonly redirect: Redirect | null;
  readonly rewrite: Rewrite | null;
  readonly timeouts: Timeouts | null;
  readonly cors: Cors | null;
  readonly mirrors: readonly Mirror[];
  readonly backends: readonly WeightedBackend[];
  /** Sum of the weights; 0 with backends = every request answers 500 (all weights 0 too). */
  readonly totalWeight: number;
  /** Why the whole rule answers 500 (an unsupported filter), or null. */
  readonly invalid: string | null;
  /** The IngressNginxPolicy an ExtensionRef filter names, resolved (compile/gateway/extension.ts), or null. */
  readonly extension: RuleExtension | null;
  /** Why the rule answers 500 for an ExtensionRef that cannot be resolved (ResolvedRefs False), or null. */
  readonly unresolved: string | null;
}

export interface CompiledRoute {
  readonly rules: readonly CompiledRule[];
  /** ResolvedRefs for every parent (RouteConditionReason). */
  readonly resolvedRefs: Condition;
  /** Set when a value is not supported: Accepted becomes False with this condition. */
  readonly unsupported: Condition | null;
  /** What the IngressNginxPolicies the rules name said of their annotations (extension.ts), once each. */
  readonly problems: readonly ExtensionProblem[];
  /**
   * Rules left out of `rules` because the spec makes them invalid (an HTTPPathModifier
   * ReplacePrefixMatch on a rule whose match is not a PathPrefix): each `Rule N: why`, in rule
   * order. table.ts routeWork turns them into the route's status (PartiallyInvalid, or
   * Accepted=False when no rule is left).
   */
  readonly dropped: readonly string[];
}

const ns = (o: { metadata: { namespace?: string | undefined } }) => o.metadata.namespace ?? "default";

// The CRD validates these for objects from the API server; --manifests objects have not been
// through it, and a value the proxy cannot put in a header must never reach it.
/** A DNS name (RFC 1123) as Gateway API's PreciseHostname. */
const HOSTNAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** Path characters HTTPPathMatch and HTTPPathModifier allow (RFC 3986 pchar and "/"). */
const PATH = /^\/(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|%[0-9a-fA-F]{2})*$/;

// FRAMING (policy/headers.ts): on the answer those fields frame the relay; on the request Bun's
// fetch sends Connection, Upgrade, Keep-Alive, TE and Trailer as given (measured on 1.4.5), so
// `Upgrade` with `Connection: upgrade` would ask the backend to switch protocols on a pooled
// connection.

/** Why a Request- or ResponseHeaderModifier (`what`) cannot be served, or null. */
function badModifier(what: string, m: NonNullable<HTTPRouteFilter["responseHeaderModifier"]>): string | null {
  if (!validHeaders(m.set) || !validHeaders(m.add) || !(m.remove ?? []).every((r) => TOKEN.test(r))) return `${what} names an invalid header field or value`;
  const names = [...(m.set ?? []).map((h) => h.name), ...(m.add ?? []).map((h) => h.name), ...(m.remove ?? [])];
  const framing = names.find((n) => FRAMING.has(n.toLowerCase()));
  return framing === undefined ? null : `${what} cannot change ${framing}: it frames the connection, not the message`;
}
const badResponseModifier = (m: NonNullable<HTTPRouteFilter["responseHeaderModifier"]>) => badModifier("ResponseHeaderModifier", m);
const badRequestModifier = (m: NonNullable<HTTPRouteFilter["requestHeaderModifier"]>) => badModifier("RequestHeaderModifier", m);

/** CORSOrigin as the CRD's pattern has it (apis/v1 shared_types.go). */
const CORS_ORIGIN = /(^\*$)|(^(http(s)?):\/\/(((\*\.)?([a-zA-Z0-9-]+\.)*[a-zA-Z0-9-]+|\*)(:([0-9]{1,5}))?)$)/;
/** HTTPMethodWithWildcard: the CRD's enum. */
const CORS_METHODS: ReadonlySet<string> = new Set(["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH", "*"]);

/** An HTTPCORSFilter checked as the CRD does (a --manifests object has not been through it), or why not. */
function corsFilter(c: NonNullable<HTTPRouteFilter["cors"]>): Cors | string {
  const origins = c.allowOrigins ?? [];
  const methods = c.allowMethods ?? [];
  const headers = c.allowHeaders ?? [];
  const expose = c.exposeHeaders ?? [];
  const maxAge = c.maxAge ?? 5;
  if (origins.length > 64 || !origins.every((o) => o.length <= 253 && CORS_ORIGIN.test(o))) return "CORS allowOrigins holds a value that is not an origin";
  if (!methods.every((m) => CORS_METHODS.has(m))) return "CORS allowMethods holds a value that is not a method";
  if (![...headers, ...expose].every((h) => h.length <= 256 && TOKEN.test(h))) return "CORS allowHeaders or exposeHeaders holds an invalid field name";
  // The CRD's CEL rules: `*` stands alone.
  for (const [what, xs] of [["allowOrigins", origins], ["allowMethods", methods], ["allowHeaders", headers]] as const) {
    if (xs.includes("*") && xs.length > 1) return `CORS ${what} cannot hold "*" with other values`;
  }
  if (!Number.isInteger(maxAge) || maxAge < 1 || maxAge > 2 ** 31 - 1) return "CORS maxAge is not a positive number of seconds";
  const uniq = (xs: readonly string[]) => [...new Set(xs)];
  return { origins: uniq(origins), methods: uniq(methods), headers: uniq(headers.map((h) => h.toLowerCase())), expose: uniq(expose.map((h) => h.toLowerCase())), credentials: c.allowCredentials === true, maxAge };
}

const validHeaders = (xs: readonly { name: string; value: string }[] | null | undefined): boolean =>
  (xs ?? []).every((h) => TOKEN.test(h.name) && FIELD_VALUE.test(h.value));

const headerList = (xs: readonly { name: string; value: string }[] | null | undefined): HeaderMatch[] => {
  // HTTPHeaderFilter: the first entry of a name wins over later ones.
  const out: HeaderMatch[] = [];
  for (const x of xs ?? []) {
    const name = x.name.toLowerCase();
    if (!out.some((h) => h.name === name)) out.push({ name, value: x.value });
  }
  return out;
};

function modifier(f: HTTPRouteFilter["requestHeaderModifier"]): HeaderModifier | null {
  if (!f) return null;
  return { set: headerList(f.set), add: headerList(f.add), remove: (f.remove ?? []).map((r) => r.toLowerCase()) };
}

/** An HTTPPathModifier Portico can apply, or null (a type it does not know, a value that is not a path). */
function pathModifier(p: { type: string; replaceFullPath?: string | null | undefined; replacePrefixMatch?: string | null | undefined }): PathModifier | null {
  const v = p.type === "ReplaceFullPath" ? p.replaceFullPath : p.type === "ReplacePrefixMatch" ? p.replacePrefixMatch : undefined;
  if (typeof v !== "string" || !PATH.test(v)) return null;
  return { type: p.type as PathModifier["type"], value: v };
}

const NO_MATCHES: readonly HeaderMatch[] = Object.freeze([]);

/** HTTPHeaderMatch and HTTPQueryParamMatch types Portico serves (RegularExpression: table/gateway.ts). */
const VALUE_MATCH_TYPES: ReadonlySet<string> = new Set(["Exact", "RegularExpression"]);

/** A header or query parameter match as written (HTTPHeaderMatch, HTTPQueryParamMatch). */
type WrittenValueMatch = { readonly type?: string | null; readonly name: string; readonly value: string };
const NO_VALUE_MATCHES: readonly WrittenValueMatch[] = Object.freeze([]);
const unsupportedValueMatch = (h: WrittenValueMatch): boolean => !VALUE_MATCH_TYPES.has(h.type ?? "Exact");
const unrunnablePattern = (h: WrittenValueMatch): boolean => h.type === "RegularExpression" && !compileHeaderPattern(h.value).ok;

const valueMatch = (name: string, m: { type?: string | null | undefined; value: string }): HeaderMatch =>
  m.type === "RegularExpression" ? { name, value: m.value, regex: true } : { name, value: m.value };

/** HTTPHeaderMatch list: names lowercased, the first entry of a name wins. */
function headerMatches(xs: readonly { type?: string | null | undefined; name: string; value: string }[]): HeaderMatch[] {
  const out: HeaderMatch[] = [];
  for (const x of xs) {
    const name = x.name.toLowerCase();
    if (!out.some((h) => h.name === name)) out.push(valueMatch(name, x));
  }
  return out;
}

/** Shared by every route whose references resolve (conditions are never changed once made). */
const RESOLVED: Condition = Object.freeze(cond("ResolvedRefs", "True", "ResolvedRefs", "all references resolved"));

/**
 * The route kind being compiled: ReferenceGrants name it in `from`, and its backends' scheme
 * (a GRPCRoute's Services speak gRPC over HTTP/2: compile/gateway/grpcroute.ts).
 */
export interface RouteKind {
  readonly kind: "HTTPRoute" | "GRPCRoute";
  readonly scheme: "http" | "grpc";
}
export const HTTP_ROUTE_KIND: RouteKind = Object.freeze({ kind: "HTTPRoute", scheme: "http" });

/** ServicePort.appProtocol of HTTP/2 over cleartext with prior knowledge (Kubernetes API, GEP-1911). */
const H2C_APP_PROTOCOL = "kubernetes.io/h2c";

/** The appProtocol of the Service port a backendRef names by number (BackendRef.port is a PortNumber). */
function appProtocolOf(service: Service, port: number | string): string | null {
  for (const p of service.spec.ports ?? []) if (p.port === port) return p.appProtocol ?? null;
  return null;
}

/** The prefix of a redirectFilter/rewriteFilter answer that drops the rule rather than refusing it. */
const DROP = "drop:";

/**
 * An HTTPRequestRedirectFilter Portico can apply, or why not: `drop:…` when the spec makes the
 * rule invalid (ReplacePrefixMatch beside a match that is not a PathPrefix), otherwise a value
 * it does not serve (UnsupportedValue, the rule answers 500).
 */
function redirectFilter(r: NonNullable<HTTPRouteFilter["requestRedirect"]>, prefixOnly: boolean): Redirect | string {
  const scheme = r.scheme === "http" || r.scheme === "https" ? r.scheme : null;
  const code = r.statusCode ?? 302;
  if ((r.scheme != null && scheme === null) || !REDIRECT_CODES.has(code) || (r.hostname != null && !HOSTNAME.test(r.hostname.toLowerCase()))) {
    return `RequestRedirect scheme ${r.scheme ?? ""} / statusCode ${code} is not supported`;
  }
  let path: PathModifier | null = null;
  if (r.path) {
    path = pathModifier(r.path);
    if (path === null) return `RequestRedirect path type ${r.path.type} is not supported`;
    if (path.type === "ReplacePrefixMatch" && !prefixOnly) return `${DROP}RequestRedirect ReplacePrefixMatch is only valid with PathPrefix matches (HTTPPathModifier)`;
  }
  return { scheme, hostname: r.hostname ? r.hostname.toLowerCase() : null, port: r.port ?? null, statusCode: code as RedirectCode, path };
}

/** An HTTPURLRewriteFilter Portico can apply, or why not (`drop:…` as for redirectFilter). */
function rewriteFilter(r: NonNullable<HTTPRouteFilter["urlRewrite"]>, prefixOnly: boolean): Rewrite | string {
  if (r.hostname != null && !HOSTNAME.test(r.hostname.toLowerCase())) return "URLRewrite hostname is not a DNS name";
  let path: PathModifier | null = null;
  if (r.path) {
    path = pathModifier(r.path);
    if (path === null) return `URLRewrite path type ${r.path.type} is not supported`;
    if (path.type === "ReplacePrefixMatch" && !prefixOnly) return `${DROP}URLRewrite ReplacePrefixMatch is only valid with PathPrefix matches (HTTPPathModifier)`;
  }
  return { hostname: r.hostname ? r.hostname.toLowerCase() : null, path };
}

export function compileRoute(
  snapshot: Snapshot,
  route: HTTPRoute,
  resolve: (ref: BackendRef) => ResolvedBackend,
  routeKind: RouteKind = HTTP_ROUTE_KIND,
  flags: AccessFlags = NO_FLAGS,
): CompiledRoute {
  const routeNs = ns(route);
  // A GRPCRoute's rules say so, so explain and /debug/routes can name the object's kind.
  const self = routeKind.kind === "GRPCRoute" ? { namespace: routeNs, name: route.metadata.name, kind: "GRPCRoute" as const } : { namespace: routeNs, name: route.metadata.name };
  let refs: Condition = RESOLVED;
  let unsupported: Condition | null = null;
  const refFail = (reason: string, message: string) => {
    if (refs.status === "True") refs = cond("ResolvedRefs", "False", reason, message);
  };
  const rules: CompiledRule[] = [];
  const problems: ExtensionProblem[] = [];
  const dropped: string[] = [];
  const told = new Set<string>();
  const specRules = route.spec.rules ?? [];
  // HTTPRouteSpec.rules defaults to one rule matching every request (with no backend: 500).
  const ruleList = specRules.length > 0 ? specRules : [{ matches: null, filters: null, backendRefs: null, timeouts: null }];
  ruleList.forEach((rule, ruleIndex) => {
    let invalid: string | null = null;
    /** Why the spec makes this rule invalid (it is left out of the table), or null. */
    let drop: string | null = null;
    const matches: CompiledMatch[] = [];
    const written = rule.matches && rule.matches.length > 0 ? rule.matches : [{ path: null, headers: null, queryParams: null, method: null }];
    // HTTPPathModifier.replacePrefixMatch: "only compatible with a `PathPrefix` HTTPRouteMatch"
    // (the CRD's CEL rules on HTTPRouteRule refuse it beside any other match type, a
    // RegularExpression one included: what such a match matched is not a prefix the spec
    // defines). A --manifests object has not been through the CRD, so it is checked here.
    const prefixOnly = written.every((m) => (m.path?.type ?? "PathPrefix") === "PathPrefix");
    for (const m of written) {
      const type = m.path?.type ?? "PathPrefix";
      const value = m.path?.value ?? "/";
      // GRPCMethod comes only from a GRPCRoute's method match without a service (grpcroute.ts).
      if (type !== "Exact" && type !== "PathPrefix" && type !== "RegularExpression" && !(type === "GRPCMethod" && routeKind.kind === "GRPCRoute")) {
        unsupported ??= cond("Accepted", "False", "UnsupportedValue", `path type ${type} is not supported`);
        continue;
      }
      if (type === "RegularExpression") {
        // Implementation-specific: ingress-nginx's use-regex path (table/gateway.ts), refused
        // here when the linear-time engine cannot run it or it is too large (src/regex/).
        const c = compilePathRegex(value);
        if (!c.ok) {
          unsupported ??= cond("Accepted", "False", "UnsupportedValue", `path regular expression ${JSON.stringify(value)} ${c.reason}`);
          continue;
        }
      } else if (!PATH.test(value) || value.includes("//")) {
        unsupported ??= cond("Accepted", "False", "UnsupportedValue", `path ${JSON.stringify(value)} is not an absolute path`);
        continue;
      }
      // Most matches have neither headers nor query parameters: their checks (and the lists
      // they would allocate, a measurable share of a full compile at 10k routes) are skipped.
      const headers = m.headers ?? NO_VALUE_MATCHES;
      const params = m.queryParams ?? NO_VALUE_MATCHES;
      if (headers.length > 0 && !headers.every((h) => TOKEN.test(h.name))) {
        unsupported ??= cond("Accepted", "False", "UnsupportedValue", "a header match names an invalid field name");
        continue;
      }
      const badHeader = headers.length + params.length === 0 ? undefined : headers.find(unsupportedValueMatch) ?? params.find(unsupportedValueMatch);
      if (badHeader) {
        unsupported ??= cond("Accepted", "False", "UnsupportedValue", `match type ${badHeader.type} is not supported`);
        continue;
      }
      const badPattern = headers.length + params.length === 0 ? undefined : headers.find(unrunnablePattern) ?? params.find(unrunnablePattern);
      if (badPattern) {
        unsupported ??= cond("Accepted", "False", "UnsupportedValue", `regular expression ${JSON.stringify(badPattern.value)} of ${badPattern.name} cannot be run (src/regex/)`);
        continue;
      }
      const query: HeaderMatch[] = [];
      for (const q of params) if (!query.some((x) => x.name === q.name)) query.push(valueMatch(q.name, q));
      matches.push({
        pathType: type,
        path: type === "PathPrefix" ? value.replace(/\/+$/, "") : value,
        written: value,
        method: m.method ?? null,
        // Most matches have none: one shared empty list (a table holds one match per rule).
        headers: (m.headers?.length ?? 0) === 0 ? NO_MATCHES : headerMatches(m.headers!),
        query: query.length === 0 ? NO_MATCHES : query,
      });
    }
    let requestHeaders: HeaderModifier | null = null;
    let responseHeaders: HeaderModifier | null = null;
    let redirect: Redirect | null = null;
    let rewrite: Rewrite | null = null;
    let cors: Cors | null = null;
    const mirrors: Mirror[] = [];
    let extension: RuleExtension | null = null;
    let unresolved: string | null = null;
    for (const f of rule.filters ?? []) {
      if (f.type === "ExtensionRef" && f.extensionRef) {
        const r = resolveExtension(snapshot, routeNs, f.extensionRef, flags);
        if (r.ok && extension !== null) invalid = `a rule names more than one ${POLICY_KIND}`;
        else if (r.ok) {
          extension = r.extension;
          if (!told.has(r.extension.key)) {
            told.add(r.extension.key);
            problems.push(...r.extension.problems);
          }
        }
        else if (r.unresolved) {
          refFail(r.reason, r.message);
          unresolved ??= r.message;
        } else invalid = r.message;
        continue;
      }
      if (f.type === "RequestHeaderModifier" && f.requestHeaderModifier) {
        const bad = badRequestModifier(f.requestHeaderModifier);
        if (bad !== null) invalid = bad;
        else requestHeaders = modifier(f.requestHeaderModifier);
      } else if (f.type === "ResponseHeaderModifier" && f.responseHeaderModifier) {
        const bad = badResponseModifier(f.responseHeaderModifier);
        if (bad !== null) invalid = bad;
        else responseHeaders = modifier(f.responseHeaderModifier);
      } else if (f.type === "CORS" && f.cors) {
        const c = corsFilter(f.cors);
        if (typeof c === "string") invalid = c;
        else cors = c;
      } else if (f.type === "RequestRedirect" && f.requestRedirect) {
        const r = redirectFilter(f.requestRedirect, prefixOnly);
        if (typeof r === "object") redirect = r;
        else if (r.startsWith(DROP)) drop ??= r.slice(DROP.length);
        else invalid = r;
      } else if (f.type === "URLRewrite" && f.urlRewrite) {
        const r = rewriteFilter(f.urlRewrite, prefixOnly);
        if (typeof r === "object") rewrite = r;
        else if (r.startsWith(DROP)) drop ??= r.slice(DROP.length);
        else invalid = r;
      } else if (f.type === "RequestMirror" && f.requestMirror) {
        const m = f.requestMirror;
        const b = m.backendRef;
        const bNs = b.namespace ?? routeNs;
        // HTTPRequestMirrorFilter.backendRef: a reference that cannot be used is dropped from
        // the Gateway with ResolvedRefs=False; the rule itself keeps serving.
        if ((b.group ?? "") !== "" || (b.kind ?? "Service") !== "Service") {
          refFail("InvalidKind", `RequestMirror backendRef ${b.group ?? ""}/${b.kind} ${b.name}: only Services are supported`);
          continue;
        }
        if (!referenceAllowed(snapshot.referenceGrants, { group: GATEWAY_GROUP, kind: routeKind.kind, namespace: routeNs }, { group: "", kind: "Service", namespace: bNs, name: b.name })) {
          refFail("RefNotPermitted", `RequestMirror Service ${bNs}/${b.name} is in another namespace and no ReferenceGrant permits it`);
          continue;
        }
        if (b.port == null || !snapshot.services.has(`${bNs}/${b.name}`)) {
          refFail("BackendNotFound", `RequestMirror Service ${bNs}/${b.name}${b.port == null ? " has no port" : " not found"}`);
          continue;
        }
        const r = resolve(serviceRef(bNs, b.name, b.port, "http"));
        if (r.backend.status === "ServicePortNotFound") {
          refFail("BackendNotFound", `RequestMirror Service ${bNs}/${b.name} has no port ${b.port}`);
          continue;
        }
        const fraction = m.fraction ? (100 * m.fraction.numerator) / (m.fraction.denominator ?? 100) : null;
        const percent = Math.min(100, m.percent ?? fraction ?? 100);
        mirrors.push({ endpoints: r.backend.endpoints.filter((e) => e.ready).map((e) => e.authority), percent });
      } else invalid = `filter ${f.type} is not supported`;
    }
    // HTTPRouteRule's CEL rule: a rule may redirect or rewrite, not both.
    if (redirect !== null && rewrite !== null) invalid ??= "RequestRedirect and URLRewrite cannot be used together";
    const backends: WeightedBackend[] = [];
    for (const b of rule.backendRefs ?? []) {
      const weight = b.weight ?? 1;
      // HTTPBackendRef.filters: RequestHeaderModifier (Extended,
      // HTTPRouteBackendRequestHeaderModification) and ResponseHeaderModifier (Extended,
      // HTTPRouteResponseHeaderModification); the other filter types there are not served: the
      // rule answers 500.
      let backendHeaders: HeaderModifier | null = null;
      let backendResponseHeaders: HeaderModifier | null = null;
      let backendRedirect: Redirect | null = null;
      let backendRewrite: Rewrite | null = null;
      for (const f of b.filters ?? []) {
        if (f.type === "RequestHeaderModifier" && f.requestHeaderModifier) {
          const bad = badRequestModifier(f.requestHeaderModifier);
          if (bad !== null) invalid ??= `a backendRef's ${bad}`;
          else backendHeaders = modifier(f.requestHeaderModifier);
        } else if (f.type === "ResponseHeaderModifier" && f.responseHeaderModifier) {
          const bad = badResponseModifier(f.responseHeaderModifier);
          if (bad !== null) invalid ??= `a backendRef's ${bad}`;
          else backendResponseHeaders = modifier(f.responseHeaderModifier);
        } else if (routeKind.kind === "HTTPRoute" && f.type === "RequestRedirect" && f.requestRedirect) {
          // HTTPRouteBackendRequestRedirect and HTTPRouteBackendURLRewrite (Extended): applied
          // "if and only if the request is being forwarded to the backend defined here"
          // (HTTPBackendRef.filters), after the rule's filters; the same checks as the rule's.
          const r = redirectFilter(f.requestRedirect, prefixOnly);
          if (typeof r === "object") backendRedirect = r;
          else if (r.startsWith(DROP)) drop ??= `a backendRef's ${r.slice(DROP.length)}`;
          else invalid ??= `a backendRef's ${r}`;
        } else if (routeKind.kind === "HTTPRoute" && f.type === "URLRewrite" && f.urlRewrite) {
          const r = rewriteFilter(f.urlRewrite, prefixOnly);
          if (typeof r === "object") backendRewrite = r;
          else if (r.startsWith(DROP)) drop ??= `a backendRef's ${r.slice(DROP.length)}`;
          else invalid ??= `a backendRef's ${r}`;
        } else invalid ??= `backendRef filter ${f.type} is not supported`;
      }
      // As on a rule (its CEL rule), a redirect and a rewrite cannot go together; nor can a
      // backendRef's redirect or rewrite follow the rule's redirect, which answers first, or a
      // backendRef's redirect follow the rule's rewrite (IncompatibleFilters' combinations).
      if (backendRedirect !== null && (backendRewrite !== null || redirect !== null || rewrite !== null)) invalid ??= "a backendRef's RequestRedirect cannot be used with another RequestRedirect or URLRewrite";
      else if (backendRewrite !== null && redirect !== null) invalid ??= "a backendRef's URLRewrite cannot follow the rule's RequestRedirect";
      const group = b.group ?? "";
      const kind = b.kind ?? "Service";
      const bNs = b.namespace ?? routeNs;
      if (group !== "" || kind !== "Service") {
        refFail("InvalidKind", `backendRef ${group}/${kind} ${b.name}: only Services are supported`);
        backends.push(invalidBackend(weight));
        continue;
      }
      if (!referenceAllowed(snapshot.referenceGrants, { group: GATEWAY_GROUP, kind: routeKind.kind, namespace: routeNs }, { group: "", kind: "Service", namespace: bNs, name: b.name })) {
        refFail("RefNotPermitted", `Service ${bNs}/${b.name} is in another namespace and no ReferenceGrant permits it`);
        backends.push(invalidBackend(weight));
        continue;
      }
      if (b.port == null) {
        refFail("UnsupportedValue", `backendRef Service ${bNs}/${b.name} has no port`);
        backends.push(invalidBackend(weight));
        continue;
      }
      const service = snapshot.services.get(`${bNs}/${b.name}`);
      if (service === undefined) {
        refFail("BackendNotFound", `Service ${bNs}/${b.name} not found`);
        backends.push(invalidBackend(weight));
        continue;
      }
      // An IngressNginxPolicy's backend-protocol sets the scheme, as on the Ingress; otherwise
      // an HTTPRoute's backend on a Service port of appProtocol kubernetes.io/h2c is called over
      // HTTP/2 with prior knowledge (GEP-1911, HTTPRouteBackendProtocolH2C).
      const r = resolve(serviceRef(bNs, b.name, b.port, extension?.scheme ?? (routeKind.scheme === "http" && appProtocolOf(service, b.port) === H2C_APP_PROTOCOL ? "h2c" : routeKind.scheme)));
      if (r.backend.status === "ServicePortNotFound") {
        refFail("BackendNotFound", `Service ${bNs}/${b.name} has no port ${b.port}`);
        backends.push(invalidBackend(weight));
        continue;
      }
      backends.push({ backend: r.backend, weight, requestHeaders: backendHeaders, responseHeaders: backendResponseHeaders, redirect: backendRedirect, rewrite: backendRewrite });
    }
    let timeouts: Timeouts | null = null;
    if (rule.timeouts && (rule.timeouts.request != null || rule.timeouts.backendRequest != null)) {
      const requestMs = rule.timeouts.request == null ? null : parseDuration(rule.timeouts.request);
      const backendRequestMs = rule.timeouts.backendRequest == null ? null : parseDuration(rule.timeouts.backendRequest);
      if ((rule.timeouts.request != null && requestMs === null) || (rule.timeouts.backendRequest != null && backendRequestMs === null)) invalid ??= "timeouts: not a Gateway API duration";
      // HTTPRouteTimeouts' CEL rule: backendRequest is no longer than a non-zero request.
      else if (requestMs !== null && requestMs > 0 && backendRequestMs !== null && backendRequestMs > requestMs) invalid ??= "timeouts: backendRequest is longer than request";
      else timeouts = { requestMs, backendRequestMs };
    }
    if (drop !== null) {
      dropped.push(`Rule ${ruleIndex}${rule.name ? ` (${rule.name})` : ""}: ${drop}`);
      return;
    }
    if (invalid !== null) unsupported ??= cond("Accepted", "False", "UnsupportedValue", invalid);
    const totalWeight = backends.reduce((n, b) => n + b.weight, 0);
    rules.push({ route: self, ruleIndex, matches, requestHeaders, responseHeaders, redirect, rewrite, timeouts, cors, mirrors, backends, totalWeight, invalid, extension, unresolved });
  });
  return { rules, resolvedRefs: refs, unsupported, problems, dropped };
}
