// `portico migrate --to gateway-api`: the served Ingresses (Compiler.inspect, the same view the
// migration report reads) written as Gateway API v1 objects (v1.6 standard channel): one
// GatewayClass and Gateway, an HTTPRoute (a GRPCRoute for backend-protocol GRPC/GRPCS) per
// Ingress host, ReferenceGrants for certificates in other namespaces. Every annotation of ours
// on an Ingress gets one note saying how it was carried (docs/design.md, "Converting to
// Gateway API"): a Gateway API field, an implementation-specific one, Portico's extension, or
// nothing, never silently. Pure: runtime/migrate.ts reads the objects and prints.
import { ANNOTATIONS, NGINX_PREFIX, PORTICO_PREFIX, scanSnippet } from "./annotations.ts";
import type { BackendRef } from "./backends.ts";
import type { Inspection } from "./compile.ts";
import { regexModeCause } from "./host-entry.ts";
import { needsRewrite } from "../regex/index.ts";
import type { CorsPolicy } from "../annotations/cors.ts";
import type { IngressPlan, PathPlan } from "./plan.ts";
import { FAMILIES } from "../annotations/registry.ts";
import { namesOf } from "../annotations/spec.ts";
import { FROM_TO_WWW_REDIRECT } from "../annotations/redirects.ts";

export interface GatewayTarget {
  /** The Gateway's name and namespace, and the GatewayClass's controllerName. */
  readonly gatewayName: string;
  readonly gatewayNamespace: string;
  readonly controllerName: string;
  /** --http-redirect-code: the status of the HTTP → HTTPS redirect. */
  readonly httpRedirectCode: number;
  /**
   * The Strict-Transport-Security value Portico's HTTPS answers carry for an Ingress (--hsts,
   * --hsts-max-age, --hsts-include-subdomains, --hsts-preload: ingress-nginx's hsts keys), or
   * null when off. Gateway API has no HSTS field: it is a ResponseHeaderModifier.
   */
  readonly hsts?: string | null;
}

/**
 * How one annotation is carried:
 * - gateway-api: a standard-channel field that does the same (`text` names any difference);
 * - implementation-specific: a standard field whose meaning the spec leaves to each
 *   implementation (RegularExpression matches);
 * - portico-extension: the Portico policy object the route's rules name in an ExtensionRef
 *   filter (an implementation that does not know it answers 500 for those rules, as the spec
 *   requires for an unresolved ExtensionRef: access control fails closed);
 * - not-expressible: nothing carries it; the Gateway API form behaves as if it were absent.
 */
export type CarriedAs = "gateway-api" | "implementation-specific" | "portico-extension" | "not-expressible";

export interface ConversionNote {
  /** `namespace/name` of the Ingress. */
  readonly ingress: string;
  readonly annotation: string;
  readonly value: string;
  readonly carriedAs: CarriedAs;
  readonly text: string;
}

export interface GatewayConversion {
  readonly objects: readonly Record<string, unknown>[];
  readonly notes: readonly ConversionNote[];
}

const GATEWAY_API = "gateway.networking.k8s.io/v1";
const GATEWAY_BETA = "gateway.networking.k8s.io/v1beta1";
/** Portico's extension kind: the annotations a Gateway API form cannot say, as written on the Ingress. */
export const PORTICO_POLICY_GROUP = "portico.dev";
export const PORTICO_POLICY_KIND = "IngressNginxPolicy";
const PORTICO_POLICY_VERSION = "portico.dev/v1alpha1";

const MAX_RULES = 16;

const n = (s: string) => `${NGINX_PREFIX}${s}`;
const ours = (k: string) => k.startsWith(NGINX_PREFIX) || k.startsWith(PORTICO_PREFIX);

/** Names of ours that are read by some implemented family (the registry). */
const KNOWN = new Set(ANNOTATIONS.flatMap((s) => [...(s.portico ? [s.portico] : []), ...s.nginx]));
const SNIPPETS = new Set([n("configuration-snippet"), n("server-snippet"), n("auth-snippet"), n("stream-snippet"), n("modsecurity-snippet")]);

/** The `rewrite-target: /$2` on `<prefix>(/|$)(.*)` idiom: a prefix replaced by a literal. */
const CAPTURE_IDIOM = /^(\/[A-Za-z0-9._~!&'*+,;=:@%/-]*?)\(\/\|\$\)\(\.\*\)$/;
const LITERAL_PATH = /^\/[A-Za-z0-9._~!&'*+,;=:@%/-]*$/;
/** A target whose only variables are captures `$1`…`$9`, for a path without groups (see rewriteFor). */
const CAPTURES_ONLY = /^\/(?:[A-Za-z0-9._~!&'*+,;=:@%/-]|\$[1-9])*$/;
/** PreciseHostname (apis/v1 shared_types.go): what URLRewrite and RequestRedirect take as hostname. */
const PRECISE_HOSTNAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** Every name of a family's annotations (Portico's and ingress-nginx's). */
const familyNames = (f: keyof typeof FAMILIES): string[] => FAMILIES[f].annotations.flatMap((s) => namesOf(s));
/**
 * The HTTPS redirect family: said by the HTTP listener's redirect routes and the HSTS
 * modifier, never copied into the policy (the policy's rule cannot act on the listener:
 * compile/gateway/extension.ts would answer 500).
 */
const TLS_REDIRECT_NAMES: ReadonlySet<string> = new Set(familyNames("tlsRedirect"));
/** custom-http-errors, default-backend, disable-proxy-intercept-errors: see the error pages' note. */
const ERROR_PAGE_NAMES: ReadonlySet<string> = new Set(familyNames("errorPages"));
/** The canary family: read on a canary Ingress only (its rules fold into the main route). */
const CANARY_NAMES: ReadonlySet<string> = new Set(familyNames("canary"));

/**
 * An absolute rewrite-target (`https://host[:port]/path`, no query, no captures) as a
 * RequestRedirect 302, or null when it is not one RequestRedirect can say.
 */
function absoluteTarget(target: string): Record<string, unknown> | null {
  if (!/^https?:\/\//i.test(target) || target.includes("?") || target.includes("#")) return null;
  let u: URL;
  try {
    u = new URL(target);
  } catch {
    return null;
  }
  if (!PRECISE_HOSTNAME.test(u.hostname) || !LITERAL_PATH.test(u.pathname)) return null;
  return { scheme: u.protocol.slice(0, -1), hostname: u.hostname, ...(u.port !== "" ? { port: Number(u.port) } : {}), path: { type: "ReplaceFullPath", replaceFullPath: u.pathname }, statusCode: 302 };
}

/** DNS-1123 label from a host or name, for listener and object names. */
function slug(s: string): string {
  const t = s.toLowerCase().replace(/^\*\./, "wildcard.").replace(/[^a-z0-9-]+/g, "-").replace(/^-+|-+$/g, "");
  return (t === "" ? "x" : t).slice(0, 63).replace(/-+$/, "");
}

function backendRefOf(b: BackendRef, weight?: number): Record<string, unknown> | null {
  if (b.kind !== "service") return null;
  const ref: Record<string, unknown> = { name: b.name };
  // A named Service port has no backendRef form (BackendObjectReference.port is a number).
  if (typeof b.port !== "number") return null;
  ref.port = b.port;
  if (weight !== undefined) ref.weight = weight;
  return ref;
}

/**
 * The HTTPS redirect's note. RequestRedirect keeps the path; ingress-nginx cuts one trailing `/`
 * from the request URI unless preserve-trailing-slash (its lua_ingress.lua; NGINX-COMPAT.md 1.4),
 * so `/docs/` goes to `https://h/docs/` here and to `https://h/docs` there.
 */
const sslRedirectText = (t: GatewayTarget, preserve = false): string =>
  `an HTTPRoute on the HTTP listener answers RequestRedirect scheme https, ${t.httpRedirectCode}, for the TLS hosts (none when off)${preserve ? " and keeps the path, as preserve-trailing-slash asks" : "; it keeps a trailing `/` ingress-nginx cuts (as with preserve-trailing-slash: `/docs/` → `https://h/docs/`, not `https://h/docs`; `/` → `https://h/`, not `https://h`)"}`;

const refusingOf = (plan: IngressPlan): boolean => plan.annotations.problems.some((p) => p.includes("refused with 503"));

const listOf = (s: string): string[] => s.split(",").map((x) => x.trim()).filter((x) => x !== "");

/** CORSOrigin (apis/v1 shared_types.go, v1.6): http or https, a `*.` leftmost label at most, a port. */
const CORS_ORIGIN = /^(\*|https?:\/\/((\*\.)?([a-zA-Z0-9-]+\.)*[a-zA-Z0-9-]+|\*)(:[0-9]{1,5})?)$/;
/** HTTPMethodWithWildcard's enum. */
const CORS_METHODS: ReadonlySet<string> = new Set(["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"]);
/** An HTTP field name (RFC 9110 §5.1, token), as HTTPHeaderName. */
const FIELD_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * ingress-nginx's CORS annotations as an HTTPCORSFilter (v1.6 standard channel), and what the
 * CRD cannot hold: an origin that is `null` or of another scheme than http/https (ingress-nginx
 * takes any lower-case scheme), a method outside the enum, a max-age under 1 s.
 */
function corsFilterOf(c: CorsPolicy): { filter: Record<string, unknown> | null; lost: string[] } {
  const lost: string[] = [];
  let origins: string[];
  if (c.origins === "*") origins = ["*"];
  else {
    origins = [];
    for (const o of c.origins) {
      if (CORS_ORIGIN.test(o) && o !== "*") origins.push(o);
      else lost.push(`origin ${JSON.stringify(o)} (allowOrigins takes http and https origins only)`);
    }
  }
  const methods: string[] = [];
  for (const m of listOf(c.methods).map((x) => x.toUpperCase())) {
    if (CORS_METHODS.has(m)) methods.push(m);
    else lost.push(`method ${JSON.stringify(m)} (not in allowMethods' enum)`);
  }
  const fields = (v: string, what: string): string[] => {
    const out: string[] = [];
    for (const h of listOf(v)) {
      if (FIELD_NAME.test(h) && h !== "*") out.push(h);
      else if (h === "*") return ["*"];
      else lost.push(`${what} ${JSON.stringify(h)} (not a field name)`);
    }
    return out;
  };
  const headers = fields(c.headers, "header");
  const expose = c.expose === null ? [] : fields(c.expose, "exposed header");
  let maxAge = c.maxAge;
  if (maxAge < 1) {
    lost.push(`max-age ${maxAge} (maxAge is at least 1: written as 1)`);
    maxAge = 1;
  }
  if (maxAge > 2 ** 31 - 1) maxAge = 2 ** 31 - 1;
  if (origins.length === 0) return { filter: null, lost };
  const filter: Record<string, unknown> = {
    allowOrigins: origins,
    ...(methods.length > 0 ? { allowMethods: methods } : {}),
    ...(headers.length > 0 ? { allowHeaders: headers } : {}),
    ...(expose.length > 0 ? { exposeHeaders: expose } : {}),
    ...(c.credentials ? { allowCredentials: true } : {}),
    maxAge,
  };
  return { filter, lost };
}

/**
 * How the CORS filter answers differently from ingress-nginx's CORS block for these values
 * (its template's CORS location code; Gateway API's HTTPCORSFilter; the Fetch standard's CORS
 * protocol), one clause per difference, so the note states each one.
 */
function corsDifferences(c: CorsPolicy): string[] {
  const any = c.origins === "*";
  const out: string[] = [];
  if (any) out.push("only a request with an Origin gets CORS fields (ingress-nginx's `*` mode puts them on every answer, with or without Origin)");
  if (any && c.credentials) out.push("Access-Control-Allow-Origin echoes the Origin, with `Vary: Origin` (ingress-nginx adds none), where ingress-nginx sends `*` with `Access-Control-Allow-Credentials: true` (which a browser refuses for a credentialed request: the Gateway API form lets it through)");
  out.push(`an answer that is not a preflight carries Access-Control-Allow-Origin${c.credentials ? ", -Allow-Credentials" : ""}${c.expose !== null ? " and -Expose-Headers" : ""} only; ingress-nginx adds -Allow-Methods, -Allow-Headers and -Max-Age to it too`);
  out.push("the preflight's 204 has no `Content-Type: text/plain charset=UTF-8`");
  out.push("Access-Control-Allow-Headers is sent lower-cased and joined with `, ` (ingress-nginx sends the annotation's text as written)");
  if (!any) {
    out.push("a preflight from an Origin not allowed is answered 204 without CORS fields (ingress-nginx proxies it to the backend)");
    out.push("an answer to a request with an Origin carries `Vary: Origin` (ingress-nginx adds none; Portico serving the Ingress adds it to every answer)");
    if (c.origins.some((o) => o.includes("://*."))) out.push("`*.` stands for one or more labels (ingress-nginx: exactly one)");
    out.push("an Origin without a port equals one with its scheme's (`https://a.test:443` is `https://a.test`; ingress-nginx compares the text)");
  }
  out.push("as with Portico serving the Ingress, only a real preflight (OPTIONS with Origin and Access-Control-Request-Method) is answered 204; ingress-nginx answers every OPTIONS from an allowed Origin");
  return out;
}

/** gRPC's request path is `/<service>/<method>` (gRPC over HTTP/2, "Path"). */
const GRPC_NAME = /^[A-Za-z_][A-Za-z0-9_.]*$/;
/** GRPCRouteFilterType in the v1.6 standard channel. */
const GRPC_FILTERS: ReadonlySet<string> = new Set(["RequestHeaderModifier", "ResponseHeaderModifier", "RequestMirror", "ExtensionRef"]);

/**
 * An HTTPRoute's rules as GRPCRoute rules: a path `/` (any method), `/<service>` or
 * `/<service>/` as a prefix (every method of the service), `/<service>/<method>` exactly. Other
 * paths have no GRPCMethodMatch form and are left out with a note; so are the filters a
 * GRPCRoute does not take (URLRewrite, RequestRedirect, CORS).
 */
function grpcRules(rules: readonly Record<string, unknown>[], lost: (text: string) => void): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const rule of rules) {
    const matches = (rule.matches as { path: { type: string; value: string }; headers?: unknown[] }[] | undefined) ?? [];
    const grpcMatches: Record<string, unknown>[] = [];
    for (const m of matches) {
      const { type, value } = m.path;
      const parts = value.split("/").slice(1);
      let method: Record<string, unknown> | null | undefined;
      if (type === "PathPrefix" && value === "/") method = null;
      else if (type === "PathPrefix" && parts.length <= 2 && GRPC_NAME.test(parts[0] ?? "") && (parts[1] ?? "") === "") method = { type: "Exact", service: parts[0] };
      else if (type === "Exact" && parts.length === 2 && GRPC_NAME.test(parts[0] ?? "") && GRPC_NAME.test(parts[1] ?? "")) method = { type: "Exact", service: parts[0], method: parts[1] };
      if (method === undefined) {
        lost(`path ${JSON.stringify(value)} (${type}) is not a gRPC service or method: a GRPCRoute cannot match it, and the rule is left out`);
        continue;
      }
      grpcMatches.push({ ...(method !== null ? { method } : {}), ...(m.headers ? { headers: m.headers } : {}) });
    }
    if (grpcMatches.length === 0 && matches.length > 0) continue;
    const all = (rule.filters as { type: string }[] | undefined) ?? [];
    const filters = all.filter((f) => GRPC_FILTERS.has(f.type));
    for (const f of all) if (!GRPC_FILTERS.has(f.type)) lost(`a GRPCRoute takes no ${f.type} filter: left out of the rule`);
    const only = grpcMatches.every((m) => Object.keys(m).length === 0);
    out.push({ ...(only ? {} : { matches: grpcMatches }), ...(filters.length > 0 ? { filters } : {}), backendRefs: rule.backendRefs ?? [] });
  }
  return out;
}


/** Converts the served Ingresses of `view`. */
export function toGatewayApi(view: Inspection, target: GatewayTarget): GatewayConversion {
  const notes: ConversionNote[] = [];
  const objects: Record<string, unknown>[] = [];
  const routes: Record<string, unknown>[] = [];
  const grants = new Map<string, Set<string>>();
  const gw = { name: target.gatewayName, namespace: target.gatewayNamespace };

  // Listeners: one HTTP listener for every host, one HTTPS listener per TLS host (the oldest
  // Ingress naming a host decides its certificate, as the Ingress compile does for spec.tls).
  const https = new Map<string, string>();
  const listeners: Record<string, unknown>[] = [{ name: "http", protocol: "HTTP", port: 80, allowedRoutes: { namespaces: { from: "All" } } }];
  const main = view.served.filter((p) => p.annotations.policies.canary.kind === "none");
  const canaries = view.served.filter((p) => p.annotations.policies.canary.kind === "canary");
  // The main Ingresses by host key, in priority order, and the aliases by host key: built once,
  // since each Ingress's hosts ask for them (a scan of every Ingress per host made the
  // conversion quadratic; bench/migrate-scale.ts).
  const mainByHost = new Map<string, IngressPlan[]>();
  const mainPosition = new Map<IngressPlan, number>();
  main.forEach((x, i) => {
    mainPosition.set(x, i);
    for (const h of x.hosts.keys()) {
      const list = mainByHost.get(h);
      if (list === undefined) mainByHost.set(h, [x]);
      else list.push(x);
    }
  });
  const plansOfHost = (hostKey: string): readonly IngressPlan[] => mainByHost.get(hostKey) ?? [];
  const aliasesByHost = new Map<string, string[]>();
  for (const [alias, h] of view.result.table.aliasKeys) {
    const list = aliasesByHost.get(h);
    if (list === undefined) aliasesByHost.set(h, [alias]);
    else list.push(alias);
  }
  for (const list of aliasesByHost.values()) list.sort();
  for (const plan of main) {
    for (const t of plan.tls) {
      if (t.secretName === null) continue;
      for (const host of t.hosts) {
        if (https.has(host)) continue;
        const name = `https-${slug(host)}`;
        https.set(host, name);
        const ref: Record<string, unknown> = { kind: "Secret", name: t.secretName };
        if (plan.namespace !== gw.namespace) {
          ref.namespace = plan.namespace;
          const s = grants.get(plan.namespace) ?? new Set<string>();
          s.add(t.secretName);
          grants.set(plan.namespace, s);
        }
        listeners.push({ name, hostname: host, protocol: "HTTPS", port: 443, tls: { mode: "Terminate", certificateRefs: [ref] }, allowedRoutes: { namespaces: { from: "All" } } });
      }
    }
  }

  // A canary's paths, by host and path, for the main route that repeats them.
  const canaryOf = new Map<string, { plan: IngressPlan; path: PathPlan }>();
  for (const plan of canaries) {
    for (const [, paths] of plan.hosts) for (const p of paths) canaryOf.set(`${p.host ?? "*"}|${p.pathType}|${p.path}`, { plan, path: p });
  }
  const usedCanaries = new Set<IngressPlan>();
  /** The other names from-to-www-redirect routes were written for (the first Ingress of a name writes it). */
  const wwwWritten = new Set<string>();
  /** host|path claim → the Ingress whose rule serves it (main is in priority order). */
  const claimed = new Map<string, string>();

  for (const plan of main) {
    const ingKey = plan.key;
    const ann = plan.ingress.metadata.annotations ?? {};
    const note = (annotation: string, carriedAs: CarriedAs, text: string) => notes.push({ ingress: ingKey, annotation, value: ann[annotation] ?? "", carriedAs, text });
    const pol = plan.annotations.policies;
    const handled = new Set<string>();
    const grpc = plan.annotations.scheme === "grpc" || plan.annotations.scheme === "grpcs";

    // Redirects: one filter for every path of the Ingress.
    let redirect: Record<string, unknown> | null = null;
    const r = pol.redirects.redirect;
    if (r !== null) {
      const name = ann[n("temporal-redirect")] ? n("temporal-redirect") : n("permanent-redirect");
      let u: URL | null = null;
      try {
        u = new URL(r.url);
      } catch {
        u = null;
      }
      if (u !== null && (u.protocol === "http:" || u.protocol === "https:") && u.search === "" && u.hash === "" && [301, 302, 303, 307, 308].includes(r.code)) {
        redirect = { scheme: u.protocol.slice(0, -1), hostname: u.hostname, path: { type: "ReplaceFullPath", replaceFullPath: u.pathname }, statusCode: r.code };
        if (u.port !== "") redirect.port = Number(u.port);
        note(name, "gateway-api", `RequestRedirect ${r.code} to ${u.protocol}//${u.host}${u.pathname}; ingress-nginx drops the request's query string, RequestRedirect keeps it`);
      } else note(name, "not-expressible", "RequestRedirect cannot send a query string, a fragment or a relative Location; the redirect is left out");
      handled.add(name);
      for (const c of ["permanent-redirect-code", "temporal-redirect-code"].map(n)) if (ann[c] !== undefined) {
        handled.add(c);
        note(c, redirect === null ? "not-expressible" : "gateway-api", "RequestRedirect statusCode");
      }
    }

    // rewrite-target and use-regex.
    const rw = pol.regexRewrite;
    const rewriteFor = (p: PathPlan): { match: Record<string, unknown>; rewrite: Record<string, unknown> | null; redirect?: Record<string, unknown> } | null => {
      const target = rw.rewriteTarget;
      // ingress-nginx writes no `rewrite` for a location whose path is the target
      // (template.go needsRewrite): such a path is matched, not rewritten.
      if (!needsRewrite({ path: p.rawPath, rewriteTarget: target })) return null;
      const idiom = CAPTURE_IDIOM.exec(p.rawPath);
      const t = /^(\/[A-Za-z0-9._~!&'*+,;=:@%/-]*?)\/?\$2$/.exec(target);
      if (idiom !== null && t !== null) {
        const prefix = idiom[1] === "" ? "/" : (idiom[1] as string);
        return { match: { type: "PathPrefix", value: prefix }, rewrite: { type: "ReplacePrefixMatch", replacePrefixMatch: t[1] === "" ? "/" : t[1] } };
      }
      if (CAPTURES_ONLY.test(target) && LITERAL_PATH.test(p.rawPath)) {
        // nginx's `rewrite` replaces the whole URI when the location's regex matches; a rewrite
        // puts the host in regex mode, so the location is `~* "^<path>"`: a RegularExpression
        // match (ReplaceFullPath takes any match type, unlike ReplacePrefixMatch). A literal
        // path has no groups, so each `$N` of the target is empty (nginx's script engine copies
        // a capture only when the match has it: ngx_http_script_copy_capture_code), and the
        // target is a literal path once they are taken out.
        const literal = target.replace(/\$[1-9]/g, "");
        if (literal.startsWith("/")) return { match: { type: "RegularExpression", value: p.rawPath }, rewrite: { type: "ReplaceFullPath", replaceFullPath: literal } };
      }
      // An absolute http(s) target: nginx's `rewrite` answers 302 to it, the query string
      // appended (ngx_http_rewrite_module: "If a replacement string starts with http:// or
      // https://, the processing stops and the redirect is returned"): RequestRedirect 302,
      // which keeps the query string too. Only a target without captures or a query.
      const abs = LITERAL_PATH.test(p.rawPath) && !target.includes("$") ? absoluteTarget(target) : null;
      if (abs !== null) return { match: { type: "RegularExpression", value: p.rawPath }, rewrite: null, redirect: abs };
      return { match: { type: "RegularExpression", value: p.rawPath }, rewrite: null };
    };
    /** Does the rule of `p` say its rewrite-target without the extension? */
    const rewriteSaid = (p: PathPlan): boolean => {
      const x = rewriteFor(p);
      return x === null || x.rewrite !== null || x.redirect !== undefined;
    };
    let rewriteCarried: CarriedAs | null = null;
    let rewriteRedirects = false;
    let regexUsed = false;

    // Headers set on the request and the response (portico.dev/request-headers, response-headers).
    // A configuration-snippet of header settings only (more_set_headers, more_set_input_headers,
    // proxy_set_header with literal values: snippet-scan.ts reads them, and each sets its field
    // on every answer or request as the modifiers do) is said by the header modifiers; one with
    // anything else, or a stated difference (add_header), stays not expressible.
    const snippetText = ann[n("configuration-snippet")];
    let snippetHeaders: { request: [string, string][]; response: [string, string][] } | null = null;
    if (snippetText !== undefined && !refusingOf(plan)) {
      const scan = scanSnippet(snippetText, "location");
      const ok = scan.error === null && scan.directives.length > 0 && scan.directives.every((d) => d.note === null && d.actions.length > 0 && d.actions.every((a) => a.kind === "request-header" || a.kind === "response-header"));
      if (ok) {
        snippetHeaders = { request: [], response: [] };
        for (const d of scan.directives) for (const a of d.actions) if (a.kind === "request-header" || a.kind === "response-header") (a.kind === "request-header" ? snippetHeaders.request : snippetHeaders.response).push([a.name, a.value]);
        handled.add(n("configuration-snippet"));
        const what = [snippetHeaders.request.length > 0 ? "RequestHeaderModifier" : "", snippetHeaders.response.length > 0 ? "ResponseHeaderModifier" : ""].filter((x) => x !== "").join(" and ");
        note(n("configuration-snippet"), "gateway-api", `its directives only set header fields to literal values: ${what} set on every rule (Portico serving the Ingress does not run the snippet: the migration report names the portico.dev annotations that do the same)`);
      }
    }
    // The annotations' fields first, then the snippet's (a later `set` of one name wins, as a later more_set_headers does).
    const byName = (xs: readonly (readonly [string, string])[]) => [...new Map(xs.map(([k, v]) => [k.toLowerCase(), [k, v] as [string, string]])).values()];
    const reqHeaders = byName([...pol.headers.request, ...(snippetHeaders?.request ?? [])]);
    const resHeaders = byName([...pol.headers.response, ...(snippetHeaders?.response ?? [])]);

    // CORS: the standard channel's CORS filter (v1.6 HTTPCORSFilter).
    let cors: Record<string, unknown> | null = null;
    let corsLost: string[] = [];
    if (pol.cors.enabled) {
      const c = corsFilterOf(pol.cors);
      cors = c.filter;
      corsLost = c.lost;
    }

    // x-forwarded-prefix: ingress-nginx sends it with the requests it rewrites, which here are
    // the rules with a URLRewrite; a value with `$1`… needs the regex captures (the extension).
    const xfpName = ann[`${PORTICO_PREFIX}x-forwarded-prefix`] !== undefined ? `${PORTICO_PREFIX}x-forwarded-prefix` : n("x-forwarded-prefix");
    const allRewritesGateway = rw.rewriteTarget === "" || [...plan.hosts.values()].flat().every((p) => rewriteFor(p)?.rewrite !== null && rewriteFor(p)?.redirect === undefined);
    const xfp = rw.xForwardedPrefix !== null && !rw.xForwardedPrefix.includes("$") && allRewritesGateway ? rw.xForwardedPrefix : null;
    if (rw.xForwardedPrefix !== null && (xfp !== null || rw.rewriteTarget === "")) {
      handled.add(xfpName);
      if (xfp !== null && rw.rewriteTarget !== "") note(xfpName, "gateway-api", "RequestHeaderModifier set X-Forwarded-Prefix on the rules with a URLRewrite (ingress-nginx sends it only with the requests it rewrites)");
      else note(xfpName, "gateway-api", "no rewrite-target: ingress-nginx sends no X-Forwarded-Prefix, and nothing is written");
    }

    // Host settings (the hosts family) and error pages: what Gateway API says of them, so none
    // reaches the policy, whose rule cannot apply them (compile/gateway/extension.ts answers 500).
    const hp = pol.hosts;
    const present = (name: string) => [`${PORTICO_PREFIX}${name}`, n(name)].filter((k) => ann[k] !== undefined);
    // upstream-vhost: URLRewrite hostname "replaces the Host header value during forwarding"
    // (HTTPURLRewriteFilter), as ingress-nginx's `proxy_set_header Host` does; a value with a
    // port is no PreciseHostname and stays in the policy.
    const vhost = hp.upstreamVhost !== null && !grpc && PRECISE_HOSTNAME.test(hp.upstreamVhost) ? hp.upstreamVhost : null;
    if (vhost !== null) {
      for (const k of present("upstream-vhost")) {
        handled.add(k);
        note(k, "gateway-api", `URLRewrite hostname ${vhost} on every rule: the Host the backend gets (X-Forwarded-Host keeps the client's, as in ingress-nginx)`);
      }
    }
    // server-alias: the aliases the compile gave a host (compile/aliases.ts: the first Ingress
    // of the host that sets them counts; an alias that is an Ingress host, or an earlier host's
    // alias, is dropped as ingress-nginx does). An alias names the whole server, so the routes
    // of every Ingress of the host take it.
    const aliasesOf = (hostKey: string): readonly string[] => aliasesByHost.get(hostKey) ?? [];
    for (const k of present("server-alias")) {
      handled.add(k);
      const given = [...plan.hosts.keys()].flatMap(aliasesOf).filter((a) => hp.aliases.includes(a));
      note(k, given.length > 0 ? "gateway-api" : "not-expressible", given.length > 0 ? `more hostnames on the host's routes (${given.join(", ")}); a TLS host's HTTPS route is on its own listener, whose hostname an alias is not: an alias is redirected to HTTPS there, and answered over HTTPS only where a listener's certificate covers it` : "no alias is served (each is an Ingress host, another host's alias, or not a host name): nothing is written");
    }
    // service-upstream: backendRefs name a Service, and the implementation picks its endpoints.
    for (const k of present("service-upstream")) {
      handled.add(k);
      note(k, hp.serviceUpstream ? "not-expressible" : "gateway-api", hp.serviceUpstream ? "backendRefs send to the Service's endpoints, not its ClusterIP (kube-proxy): the same answers, but the balancing and the retries across pods are the Gateway's" : "false: backendRefs send to the Service's endpoints, as ingress-nginx does");
    }
    // custom-http-errors, default-backend, disable-proxy-intercept-errors: ingress-nginx serves
    // the listed statuses, and a Service without endpoints, from another Service
    // (NGINX-COMPAT.md); an HTTPRoute rule has no fallback backend nor error interception.
    for (const k of Object.keys(ann).sort()) {
      if (!ERROR_PAGE_NAMES.has(k)) continue;
      handled.add(k);
      note(k, "not-expressible", k === n("default-backend")
        ? "Gateway API has no fallback backend: when the path's Service has no endpoints the rule answers 500 (HTTPRouteRule.backendRefs) where ingress-nginx proxies to this Service; a Service with endpoints answers the same"
        : k === n("custom-http-errors")
          ? "Gateway API does not intercept a backend's answer: the backend's own error answer is passed through where ingress-nginx answers these statuses from the default backend"
          : "Gateway API intercepts no error answer: nothing to turn off");
    }

    // canary-* on an Ingress that is no canary (`canary` not true): ingress-nginx reads none of
    // them (its canary parser returns before them), so nothing is written.
    for (const k of Object.keys(ann).sort()) {
      if (!CANARY_NAMES.has(k)) continue;
      handled.add(k);
      note(k, "gateway-api", "this Ingress is no canary (`canary` is not true): ingress-nginx ignores its canary annotations, and nothing is written");
    }

    // What stays: Portico's extension for what Portico serves, a note for what nothing serves.
    const extension: Record<string, string> = {};
    const unsupported = new Set(plan.annotations.unsupported);
    const known = (k: string) => KNOWN.has(k) && !unsupported.has(k);
    for (const k of Object.keys(ann).sort()) {
      if (!ours(k)) continue;
      if (SNIPPETS.has(k)) {
        if (handled.has(k)) continue;
        note(k, "not-expressible", `snippets run nginx configuration; neither Gateway API nor Portico runs it (the migration report names the annotations that replace what it understands)${refusingOf(plan) ? `; Portico refuses this Ingress for it (503), so the rules name ${PORTICO_POLICY_KIND} ${plan.namespace}/${plan.name} and fail closed` : ""}`);
        continue;
      }
      if (!known(k)) {
        note(k, "not-expressible", unsupported.has(k) && KNOWN.has(k) ? "Portico does not implement this annotation and Gateway API has no field for it" : "neither Gateway API nor Portico reads this annotation");
        continue;
      }
    }
    const gatewayNames = new Set<string>([
      n("ssl-redirect"), n("force-ssl-redirect"), `${PORTICO_PREFIX}ssl-redirect`, n("app-root"), n("use-regex"), `${PORTICO_PREFIX}use-regex`, n("rewrite-target"), `${PORTICO_PREFIX}rewrite-target`,
      `${PORTICO_PREFIX}request-headers`, `${PORTICO_PREFIX}response-headers`, n("backend-protocol"), `${PORTICO_PREFIX}backend-protocol`,
      n("preserve-trailing-slash"), `${PORTICO_PREFIX}preserve-trailing-slash`, `${PORTICO_PREFIX}hsts`,
      n("enable-cors"), n("cors-allow-origin"), n("cors-allow-methods"), n("cors-allow-headers"), n("cors-expose-headers"), n("cors-allow-credentials"), n("cors-max-age"),
      ...TLS_REDIRECT_NAMES, ...namesOf(FROM_TO_WWW_REDIRECT),
    ]);
    for (const [k, v] of Object.entries(ann)) {
      if (!ours(k) || SNIPPETS.has(k) || !known(k) || handled.has(k) || gatewayNames.has(k)) continue;
      extension[k] = v;
    }
    // A rewrite only Portico's regex rewrite can do goes to the extension with the regex mode it needs.
    if (rw.rewriteTarget !== "" && [...plan.hosts.values()].flat().some((p) => !rewriteSaid(p))) {
      for (const k of [n("rewrite-target"), `${PORTICO_PREFIX}rewrite-target`, n("use-regex"), `${PORTICO_PREFIX}use-regex`]) if (ann[k] !== undefined) extension[k] = ann[k];
    }
    // A snippet or access check Portico refuses the Ingress for (503, docs/design.md "Annotations
    // and policies") must not become an open route: the rules name the extension, which an
    // implementation that cannot run it answers with 500.
    const refusing = refusingOf(plan);
    if (refusing) for (const k of Object.keys(ann)) if (SNIPPETS.has(k) || (ours(k) && !known(k) && unsupported.has(k))) extension[k] = ann[k] as string;
    const scheme = plan.annotations.scheme;
    if (scheme === "https" || scheme === "grpcs") {
      const bp = ann[`${PORTICO_PREFIX}backend-protocol`] !== undefined ? `${PORTICO_PREFIX}backend-protocol` : n("backend-protocol");
      extension[bp] = ann[bp] ?? "";
    }
    const refusedHere = plan.annotations.denied !== null;
    if (refusedHere) note("", "not-expressible", `ingress-nginx refuses this Ingress (${plan.annotations.denied}); its routes are not written`);

    const extFilter = Object.keys(extension).length > 0 ? { type: "ExtensionRef", extensionRef: { group: PORTICO_POLICY_GROUP, kind: PORTICO_POLICY_KIND, name: plan.name } } : null;
    const filtersFor = (extra: Record<string, unknown> | null): Record<string, unknown>[] => {
      const f: Record<string, unknown>[] = [];
      if (extFilter) f.push(extFilter);
      if (redirect !== null) {
        f.push({ type: "RequestRedirect", requestRedirect: redirect });
        return f;
      }
      const set = reqHeaders.map(([name, value]) => ({ name, value }));
      if (extra !== null && xfp !== null) set.push({ name: "X-Forwarded-Prefix", value: xfp });
      if (set.length > 0) f.push({ type: "RequestHeaderModifier", requestHeaderModifier: { set } });
      if (resHeaders.length > 0) f.push({ type: "ResponseHeaderModifier", responseHeaderModifier: { set: resHeaders.map(([name, value]) => ({ name, value })) } });
      if (cors !== null && !grpc) f.push({ type: "CORS", cors });
      if (extra !== null || vhost !== null) f.push({ type: "URLRewrite", urlRewrite: { ...(vhost !== null ? { hostname: vhost } : {}), ...(extra !== null ? { path: extra } : {}) } });
      return f;
    };
    let hstsNoted = false;
    /** ssl-redirect's default, said once per Ingress like an annotation. */
    let sslRedirectNoted = false;
    let policyWritten = false;
    const wwwRoutes: string[] = [];
    let defaultNoted = false;
    const defaultRef = plan.defaultBackend !== null && plan.defaultBackend.ok ? backendRefOf(plan.defaultBackend.ref) : null;
    if (plan.defaultBackend !== null && defaultRef === null) note("", "not-expressible", "spec.defaultBackend names a Service port by name or a resource; backendRefs take a Service and a port number: it is left out");
    // Hosts of spec.tls without a secretName are served by ingress-nginx with its default
    // certificate; a Gateway HTTPS listener needs a certificateRef (GatewayTLSConfig).
    for (const t of plan.tls) if (t.secretName === null && t.hosts.length > 0) note("", "not-expressible", `spec.tls ${JSON.stringify(t.hosts)} has no secretName (ingress-nginx's default certificate): a Gateway HTTPS listener needs a certificateRef, so ${t.hosts.length === 1 ? "this host is" : "these hosts are"} served on the HTTP listener only, without the HTTPS redirect`);
    for (const [hostKey, paths] of plan.hosts) {
      const host = hostKey === "*" ? null : hostKey;
      if (refusedHere) break;
      // ingress-nginx puts the whole host in regex mode when any of its Ingresses asks for it
      // (template.go enforceRegexModifier): every path of every Ingress there is a `~*` location.
      const regexCause = regexModeCause(hostKey, plansOfHost(hostKey));
      const regexHost = regexCause !== null;
      if (regexCause !== null && regexCause.plan !== plan && !rw.useRegex && rw.rewriteTarget === "" && paths.length > 0) {
        note("", "implementation-specific", `host ${hostKey === "*" ? "(any host)" : hostKey} is in ingress-nginx's regex mode (Ingress ${regexCause.plan.key} ${regexCause.why}): this Ingress's paths are RegularExpression matches too, as ingress-nginx writes them (\`~* "^<path>"\`)`);
      }
      // A `*.` TLS host covers exactly one more label (as ingress-nginx's certificate match, SNI).
      const tlsListener = host === null ? undefined : (https.get(host) ?? (host.includes(".") ? https.get(`*${host.slice(host.indexOf("."))}`) : undefined));
      const tr = pol.tlsRedirect;
      const toHttps = tlsListener !== undefined && (tr.sslRedirect || tr.forceSslRedirect);
      const rules: Record<string, unknown>[] = [];
      if (pol.redirects.appRoot !== null && redirect === null) {
        rules.push({
          matches: [{ path: { type: "Exact", value: "/" } }],
          filters: [...(extFilter ? [extFilter] : []), { type: "RequestRedirect", requestRedirect: { path: { type: "ReplaceFullPath", replaceFullPath: pol.redirects.appRoot }, statusCode: 302 } }],
        });
      }
      let lostPaths = 0;
      for (const p of paths) {
        // Two Ingresses with one path on a host: ingress-nginx serves the older one's location
        // (the compile's claim, PathConflict); Gateway API would pick between the two rules by
        // the routes' creation time, which applying them together does not decide.
        const claim = `${hostKey}|${regexHost ? p.rawClaimKey : p.claimKey}`;
        const owner = claimed.get(claim);
        if (owner !== undefined && owner !== plan.key) {
          note("", "gateway-api", `path ${JSON.stringify(p.rawPath)} on ${hostKey === "*" ? "any host" : hostKey}: Ingress ${owner} is older and serves it, as in ingress-nginx; this Ingress's rule for it is not written`);
          lostPaths++;
          continue;
        }
        claimed.set(claim, plan.key);
        let match: Record<string, unknown>;
        let rewrite: Record<string, unknown> | null = null;
        let pathRedirect: Record<string, unknown> | null = null;
        const rwr = rewriteFor(p);
        if (rwr !== null) {
          match = rwr.match;
          rewrite = rwr.rewrite;
          pathRedirect = rwr.redirect ?? null;
          if (pathRedirect !== null) rewriteRedirects = true;
          const carried: CarriedAs = rewrite !== null || pathRedirect !== null ? "gateway-api" : "portico-extension";
          if (rewriteCarried === null || carried === "portico-extension") rewriteCarried = carried;
          if (match.type === "RegularExpression") regexUsed = true;
        } else if (rw.useRegex || regexHost) {
          // ingress-nginx writes every path of a regex-mode Ingress, Exact ones included, as
          // `~* "^<path>"` (its template's buildLocation): a literal one is a prefix regex too.
          match = { type: "RegularExpression", value: p.rawPath };
          regexUsed = true;
        } else match = { type: p.pathType === "Exact" ? "Exact" : "PathPrefix", value: p.path };
        const ref = backendRefOf(p.backend);
        const canary = canaryOf.get(`${hostKey}|${p.pathType}|${p.path}`);
        const backendRefs: Record<string, unknown>[] = [];
        if (ref !== null) backendRefs.push(ref);
        if (canary !== undefined && canary.plan.annotations.policies.canary.kind === "canary" && ref !== null) {
          usedCanaries.add(canary.plan);
          const cr = canary.plan.annotations.policies.canary.rules;
          const cref = backendRefOf(canary.path.backend);
          if (cref !== null) {
            if (canary.plan.namespace !== plan.namespace) cref.namespace = canary.plan.namespace;
            if (cr.header !== null && (cr.headerValue !== null || cr.headerPattern === null)) {
              rules.push({ matches: [{ ...{ path: match }, headers: [{ type: "Exact", name: cr.header, value: cr.headerValue ?? "always" }] }], filters: filtersFor(rewrite), backendRefs: [cref] });
              if (cr.headerValue === null) rules.push({ matches: [{ path: match, headers: [{ type: "Exact", name: cr.header, value: "never" }] }], filters: filtersFor(rewrite), backendRefs: [ref] });
            } else if (cr.header !== null && cr.headerPattern !== null) {
              rules.push({ matches: [{ path: match, headers: [{ type: "RegularExpression", name: cr.header, value: cr.headerPattern }] }], filters: filtersFor(rewrite), backendRefs: [cref] });
            }
            if (cr.weight > 0) {
              backendRefs[0] = { ...ref, weight: cr.weightTotal - cr.weight };
              backendRefs.push({ ...cref, weight: cr.weight });
            }
          }
        }
        if (pathRedirect !== null && redirect === null) rules.push({ matches: [{ path: match }], filters: [...(extFilter ? [extFilter] : []), { type: "RequestRedirect", requestRedirect: pathRedirect }] });
        else rules.push({ matches: [{ path: match }], filters: filtersFor(rewrite), ...(redirect === null ? { backendRefs } : {}) });
        if (ref === null) note("", "not-expressible", `path ${JSON.stringify(p.rawPath)}: its backend names a Service port by name or a resource; backendRefs take a Service and a port number`);
      }
      // spec.defaultBackend: ingress-nginx's root location of each host of the Ingress that no
      // Ingress gives a Prefix `/` path (controller.go createServers), with the Ingress's annotations.
      if (defaultRef !== null && !plansOfHost(hostKey).some((x) => (x.hosts.get(hostKey) ?? []).some((pp) => pp.pathType === "Prefix" && pp.path === "/"))) {
        rules.push({ matches: [{ path: { type: "PathPrefix", value: "/" } }], ...(redirect === null ? { filters: filtersFor(null), backendRefs: [defaultRef] } : { filters: filtersFor(null) }) });
        if (!defaultNoted) note("", "gateway-api", "spec.defaultBackend: a PathPrefix `/` rule to it on each of the Ingress's hosts without a `/` path (ingress-nginx's root location there)");
        defaultNoted = true;
      }
      // The host's implicit `/` location carries its first Ingress's annotations when no
      // Ingress has a Prefix `/` path (controller.go createServers): with a redirect, every
      // other path of the host redirects too, which a PathPrefix `/` rule says exactly.
      const hostPlans = plansOfHost(hostKey);
      const noRoot = !hostPlans.some((x) => (x.hosts.get(hostKey) ?? []).some((pp) => pp.pathType === "Prefix" && pp.path === "/"));
      const where = hostKey === "*" ? "the hostless rules" : hostKey;
      if (redirect !== null && defaultRef === null && hostPlans[0] === plan && noRoot) {
        rules.push({ matches: [{ path: { type: "PathPrefix", value: "/" } }], filters: filtersFor(null) });
        note("", "gateway-api", `the implicit \`/\` location of ${where}, which carries this Ingress's redirect in ingress-nginx: a PathPrefix \`/\` rule with the same RequestRedirect`);
      } else if (defaultRef === null && hostPlans[0] === plan && noRoot && extFilter !== null) {
        note("", "not-expressible", `the implicit \`/\` location of ${where}: ingress-nginx applies this Ingress's annotations there (an authentication challenge, a source-range 403...) before its default backend's 404, so every other path of the host answers as they do; the Gateway API form answers 404 there`);
      }
      // Gateway API merges the rules of every route whose hostnames match a request, so a path
      // no rule of this host takes goes to a `*.` or hostless route's rules; ingress-nginx
      // answers it from the host's own server (its default backend: 404).
      if (host !== null && noRoot && defaultRef === null && !(redirect !== null && hostPlans[0] === plan)) {
        const wild = host.includes(".") ? `*${host.slice(host.indexOf("."))}` : null;
        // (A catch-all Ingress's spec.defaultBackend takes them in both: the default route.)
        const wider = [plansOfHost("*")[0], wild === null ? undefined : plansOfHost(wild)[0]]
          .filter((x): x is IngressPlan => x !== undefined)
          .sort((a, b) => (mainPosition.get(a) as number) - (mainPosition.get(b) as number))[0];
        if (wider !== undefined && hostPlans[0] === plan) note("", "not-expressible", `a path of ${host} no rule of the host takes is answered by the rules of Ingress ${wider.key}'s route (${wider.hosts.has("*") ? "without hostnames" : wild}) under Gateway API, which merges the routes of every matching hostname; ingress-nginx answers it 404 from the host's own server`);
      }
      // HSTS on the HTTPS answers, as ingress-nginx sends it on every answer of a TLS server
      // (its hsts ConfigMap keys; Portico's --hsts flags): a ResponseHeaderModifier on a route
      // that only the HTTPS listener takes. A route on both listeners would send it over HTTP.
      const hsts = target.hsts ?? null;
      if (hsts !== null && pol.tlsRedirect.hsts && tlsListener !== undefined) {
        if (toHttps) {
          for (const rule of rules) {
            const filters = ((rule.filters as Record<string, unknown>[] | undefined) ?? []).slice();
            const i = filters.findIndex((f) => f.type === "ResponseHeaderModifier");
            const field = { name: "Strict-Transport-Security", value: hsts };
            if (i < 0) filters.push({ type: "ResponseHeaderModifier", responseHeaderModifier: { set: [field] } });
            else {
              const m = filters[i]!.responseHeaderModifier as { set?: { name: string; value: string }[] };
              filters[i] = { type: "ResponseHeaderModifier", responseHeaderModifier: { ...m, set: [...(m.set ?? []), field] } };
            }
            rule.filters = filters;
          }
          if (!hstsNoted) note("", "gateway-api", `HSTS (\`Strict-Transport-Security: ${hsts}\` on every HTTPS answer, ingress-nginx's hsts default): a ResponseHeaderModifier set on each rule of the HTTPS route; an HTTPS answer no rule of the host's routes gives (a 404, a route without hostnames) carries none`);
        } else if (!hstsNoted) note("", "not-expressible", `HSTS (\`Strict-Transport-Security: ${hsts}\` on HTTPS answers): the route takes both listeners (no HTTPS redirect), and a ResponseHeaderModifier would send it over HTTP too; it is left out`);
        hstsNoted = true;
      }
      for (const rule of rules) if ((rule.filters as unknown[] | undefined)?.length === 0) delete rule.filters;
      // Every path served by older Ingresses: no route (one without rules would match every request).
      if (rules.length === 0 && lostPaths === paths.length) continue;
      const base = plan.hosts.size > 1 ? `${plan.name}-${slug(hostKey === "*" ? "any" : hostKey)}` : plan.name;
      const parent = (sectionName?: string) => ({ group: "gateway.networking.k8s.io", kind: "Gateway", namespace: gw.namespace, name: gw.name, ...(sectionName ? { sectionName } : {}) });
      const metadata = { name: base, namespace: plan.namespace, annotations: { "portico.dev/converted-from": `Ingress ${plan.key}` } };
      // A route holds at most 16 rules (HTTPRouteSpec.rules, GRPCRouteSpec.rules: MaxItems=16).
      // Precedence between rules is decided across every route of a hostname by their matches
      // (HTTPRouteRule), so the rest go into more routes without changing which rule wins.
      const written = grpc ? grpcRules(rules, (text) => note("", "not-expressible", text)) : rules;
      for (let i = 0; i === 0 || i < written.length; i += MAX_RULES) {
        routes.push({
          apiVersion: GATEWAY_API,
          kind: grpc ? "GRPCRoute" : "HTTPRoute",
          metadata: i === 0 ? metadata : { ...metadata, name: `${base}-${i / MAX_RULES + 1}` },
          spec: {
            parentRefs: toHttps ? [parent(tlsListener)] : [parent()],
            ...(host !== null ? { hostnames: [host, ...aliasesOf(hostKey)] } : {}),
            rules: written.slice(i, i + MAX_RULES),
          },
        });
      }
      if (toHttps && ![n("ssl-redirect"), n("force-ssl-redirect"), `${PORTICO_PREFIX}ssl-redirect`, `${PORTICO_PREFIX}force-ssl-redirect`].some((k) => k in ann)) {
        // On by default in ingress-nginx: said once per Ingress, like an annotation.
        if (!sslRedirectNoted) note(n("ssl-redirect"), "gateway-api", `(not set: true by default) ${sslRedirectText(target, pol.tlsRedirect.preserveTrailingSlash)}`);
        sslRedirectNoted = true;
      }
      if (toHttps) {
        // The HTTP → HTTPS redirect of a TLS host (ingress-nginx's ssl-redirect, on by default).
        routes.push({
          apiVersion: GATEWAY_API,
          kind: "HTTPRoute",
          metadata: { ...metadata, name: `${base}-to-https` },
          spec: { parentRefs: [parent("http")], hostnames: [host, ...aliasesOf(hostKey)], rules: [{ filters: [{ type: "RequestRedirect", requestRedirect: { scheme: "https", statusCode: target.httpRedirectCode } }] }] },
        });
      }
      // from-to-www-redirect: ingress-nginx adds a server for the other name (`www.X` ↔ `X`)
      // that redirects to this host with http-redirect-code, unless that name is an Ingress
      // host (NGINX-COMPAT.md 1.3): a route of the other name whose one rule is that redirect.
      if (pol.redirects.fromToWww && host !== null && !host.startsWith("*.")) {
        const other = host.startsWith("www.") ? host.slice(4) : `www.${host}`;
        if (!mainByHost.has(other) && !wwwWritten.has(other) && !view.result.table.aliasKeys.has(other)) {
          wwwWritten.add(other);
          routes.push({
            apiVersion: GATEWAY_API,
            kind: "HTTPRoute",
            metadata: { ...metadata, name: `${base}-from-${other.startsWith("www.") ? "www" : "apex"}` },
            spec: { parentRefs: [parent()], hostnames: [other], rules: [{ filters: [{ type: "RequestRedirect", requestRedirect: { hostname: host, statusCode: target.httpRedirectCode } }] }] },
          });
          wwwRoutes.push(other);
        }
      }
      // One policy per Ingress, however many hosts it has (a served Ingress's name is its own).
      if (Object.keys(extension).length > 0 && !policyWritten) {
        policyWritten = true;
        objects.push({ apiVersion: PORTICO_POLICY_VERSION, kind: PORTICO_POLICY_KIND, metadata: { name: plan.name, namespace: plan.namespace }, spec: { annotations: { ...extension } } });
      }
    }

    // An Ingress with spec.defaultBackend and no rules is ingress-nginx's catch-all server `_`:
    // a route without hostnames, which takes what no other route's rules take.
    if (plan.hosts.size === 0 && defaultRef !== null && !refusedHere) {
      routes.push({
        apiVersion: GATEWAY_API,
        kind: grpc ? "GRPCRoute" : "HTTPRoute",
        metadata: { name: plan.name, namespace: plan.namespace, annotations: { "portico.dev/converted-from": `Ingress ${plan.key}` } },
        spec: {
          parentRefs: [{ group: "gateway.networking.k8s.io", kind: "Gateway", namespace: gw.namespace, name: gw.name }],
          rules: [{ ...(filtersFor(null).length > 0 ? { filters: grpc ? filtersFor(null).filter((f) => GRPC_FILTERS.has(f.type as string)) : filtersFor(null) } : {}), ...(redirect === null ? { backendRefs: [defaultRef] } : {}) }],
        },
      });
      note("", "gateway-api", "spec.defaultBackend without rules (ingress-nginx's catch-all server): a route without hostnames, which every host's requests reach when no other rule matches them");
      if (Object.keys(extension).length > 0) objects.push({ apiVersion: PORTICO_POLICY_VERSION, kind: PORTICO_POLICY_KIND, metadata: { name: plan.name, namespace: plan.namespace }, spec: { annotations: { ...extension } } });
    }

    // One note per annotation of ours, in name order.
    for (const k of Object.keys(ann).sort()) {
      if (!ours(k) || SNIPPETS.has(k) || !known(k) || handled.has(k)) continue;
      if (k in extension && (k.endsWith("/rewrite-target") || k.endsWith("/use-regex"))) {
        note(k, "portico-extension", `a rewrite with captures other than the \`<prefix>(/|$)(.*)\` → \`/$2\` idiom has no URLRewrite form: carried with the regex mode it needs in ${PORTICO_POLICY_KIND} ${plan.namespace}/${plan.name}`);
        continue;
      }
      if (k in extension) {
        note(k, "portico-extension", `no Gateway API field does this; carried in ${PORTICO_POLICY_KIND} ${plan.namespace}/${plan.name}, named by an ExtensionRef filter on each rule`);
        continue;
      }
      if (k === n("ssl-redirect") || k === n("force-ssl-redirect") || k === `${PORTICO_PREFIX}ssl-redirect` || k === `${PORTICO_PREFIX}force-ssl-redirect`) note(k, "gateway-api", sslRedirectText(target, pol.tlsRedirect.preserveTrailingSlash));
      else if (k === n("app-root")) note(k, "gateway-api", "RequestRedirect 302 on an Exact / match");
      else if (namesOf(FROM_TO_WWW_REDIRECT).includes(k)) {
        note(k, "gateway-api", !pol.redirects.fromToWww ? "off: nothing to write"
          : wwwRoutes.length > 0 ? `an HTTPRoute for ${wwwRoutes.join(", ")} whose RequestRedirect sends to this Ingress's host, ${target.httpRedirectCode}, keeping the scheme and path; the Location carries no \`:80\`/\`:443\` (ingress-nginx writes the port) and keeps a trailing \`/\` ingress-nginx cuts`
          : "the other name is an Ingress host (or an alias, or a wildcard host): ingress-nginx writes no redirect there, and none is written");
      }
      else if (k === `${PORTICO_PREFIX}hsts`) note(k, "gateway-api", pol.tlsRedirect.hsts ? "HSTS on: see the HSTS note of this Ingress (none without a TLS host)" : "HSTS off for this Ingress: no Strict-Transport-Security modifier is written");
      else if (k === n("preserve-trailing-slash") || k === `${PORTICO_PREFIX}preserve-trailing-slash`)
        note(k, "gateway-api", pol.tlsRedirect.preserveTrailingSlash ? "RequestRedirect keeps the path as it is, which is what `true` asks of the HTTPS redirect" : "`false`: the HTTPS redirect's RequestRedirect keeps the trailing `/` ingress-nginx cuts (see ssl-redirect)");
      else if (k === n("rewrite-target") || k === `${PORTICO_PREFIX}rewrite-target`)
        note(k, rewriteCarried ?? "gateway-api", rewriteCarried === "portico-extension" ? "a rewrite with captures other than the `(/|$)(.*)` → `/$2` idiom has no URLRewrite form; the path is a RegularExpression match without the rewrite (not expressible)" : rewriteRedirects ? "an absolute http(s) target, which nginx answers with a 302 to it (the query string appended): RequestRedirect 302 on a RegularExpression match of the path, which keeps the query string" : "URLRewrite: ReplaceFullPath on a RegularExpression match of the path for a literal target, ReplacePrefixMatch for the `(/|$)(.*)` → `/$2` idiom, which needs a PathPrefix match: that one is case-sensitive and whole-segment where nginx's regex location is neither (`^/foo(/|$)` also takes `/FOO/x`), and ranks before the host's RegularExpression matches whatever its length");
      else if (k === n("use-regex") || k === `${PORTICO_PREFIX}use-regex`) note(k, regexUsed ? "implementation-specific" : "gateway-api", regexUsed ? "RegularExpression path matches, whose dialect the spec leaves to each implementation: Portico matches them as ingress-nginx matches a use-regex path (PCRE syntax on RE2, anchored at the start only, case-insensitive, after every Exact and PathPrefix match, the longer pattern first); another implementation may match other paths" : "the paths are literal: Exact/PathPrefix matches");
      else if (k === n("enable-cors")) {
        if (grpc) note(k, "not-expressible", "a GRPCRoute takes no CORS filter");
        else if (!pol.cors.enabled) note(k, "gateway-api", "CORS is off: nothing to write");
        else if (cors === null) note(k, "not-expressible", `no origin of cors-allow-origin can be written in allowOrigins (${corsLost.join("; ")}): no CORS filter is written`);
        else note(k, "gateway-api", `the CORS filter (HTTPCORSFilter, standard in v1.6) on every rule. Differences: ${corsDifferences(pol.cors).join("; ")}`);
      } else if (k.startsWith(n("cors-"))) {
        const mine = corsLost.filter((l) => (k === n("cors-allow-origin") ? l.startsWith("origin ") : k === n("cors-allow-methods") ? l.startsWith("method ") : k === n("cors-allow-headers") ? l.startsWith("header ") : k === n("cors-expose-headers") ? l.startsWith("exposed header ") : k === n("cors-max-age") ? l.startsWith("max-age ") : false));
        const field = { "cors-allow-origin": "allowOrigins", "cors-allow-methods": "allowMethods", "cors-allow-headers": "allowHeaders", "cors-expose-headers": "exposeHeaders", "cors-allow-credentials": "allowCredentials", "cors-max-age": "maxAge" }[k.slice(NGINX_PREFIX.length)] ?? "the CORS filter";
        if (grpc || cors === null || !pol.cors.enabled) note(k, grpc || pol.cors.enabled ? "not-expressible" : "gateway-api", grpc ? "a GRPCRoute takes no CORS filter" : !pol.cors.enabled ? "enable-cors is not true: no effect in ingress-nginx, nothing written" : "no CORS filter is written (see enable-cors)");
        else if (mine.length > 0) note(k, "gateway-api", `the CORS filter's ${field}, without what it cannot hold: ${mine.join("; ")} (left out; see enable-cors for the other differences)`);
        else note(k, "gateway-api", `the CORS filter's ${field} (see enable-cors for the differences)`);
      }
      else if (k === `${PORTICO_PREFIX}request-headers`) note(k, "gateway-api", "RequestHeaderModifier set");
      else if (k === `${PORTICO_PREFIX}response-headers`) note(k, "gateway-api", "ResponseHeaderModifier set");
      else if (k === n("backend-protocol") || k === `${PORTICO_PREFIX}backend-protocol`) note(k, "gateway-api", grpc ? "a GRPCRoute (its rules match every method: ingress-nginx's paths have no gRPC form)" : "plain HTTP backendRefs");
    }
  }

  // A canary not written into a main route, and the canary annotations of the used ones.
  for (const plan of canaries) {
    const ann = plan.ingress.metadata.annotations ?? {};
    const rules = plan.annotations.policies.canary.kind === "canary" ? plan.annotations.policies.canary.rules : null;
    for (const k of Object.keys(ann).sort()) {
      if (!ours(k)) continue;
      const carried: CarriedAs =
        !usedCanaries.has(plan) ? "not-expressible"
        : k === n("canary-by-cookie") ? "not-expressible"
        : k === n("canary-by-header-pattern") ? "implementation-specific"
        : k === n("canary") || k === n("canary-weight") || k === n("canary-weight-total") || k === n("canary-by-header") || k === n("canary-by-header-value") ? "gateway-api"
        : "not-expressible";
      const text = !usedCanaries.has(plan) ? "no main route repeats this canary's host and path: it is not written"
        : k === n("canary-by-cookie") ? "a cookie's value cannot be matched by Gateway API (only whole headers)"
        : carried === "gateway-api" ? `the main route's rules: ${rules && rules.weight > 0 ? "weighted backendRefs" : "no weight"}${rules?.header ? `, a rule matching header ${rules.header}` : ""}`
        : carried === "implementation-specific" ? "a RegularExpression header match (implementation-specific)"
        : "a canary's other annotations are not used (ingress-nginx uses only its backend)";
      notes.push({ ingress: plan.key, annotation: k, value: ann[k] ?? "", carriedAs: carried, text });
    }
  }

  objects.unshift(
    { apiVersion: GATEWAY_API, kind: "GatewayClass", metadata: { name: target.gatewayName }, spec: { controllerName: target.controllerName } },
    { apiVersion: GATEWAY_API, kind: "Gateway", metadata: { name: gw.name, namespace: gw.namespace }, spec: { gatewayClassName: target.gatewayName, listeners } },
  );
  for (const [ns, names] of grants) {
    objects.push({
      apiVersion: GATEWAY_BETA,
      kind: "ReferenceGrant",
      metadata: { name: `${slug(gw.namespace)}-gateway-certificates`, namespace: ns },
      spec: { from: [{ group: "gateway.networking.k8s.io", kind: "Gateway", namespace: gw.namespace }], to: [...names].sort().map((name) => ({ group: "", kind: "Secret", name })) },
    });
  }
  return { objects: [...objects, ...routes], notes };
}
