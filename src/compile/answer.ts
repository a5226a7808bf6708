// What the proxy answers to one request on the route a lookup chose, predicted without sending
// it: the route's stage policies walked in the order src/proxy/policies/run.ts runs them, with the
// HTTPS redirect and the no-endpoints check at their places between the stages, then the
// pipeline's own default-backend fallback and error pages (src/proxy/pipeline/choose.ts, error-pages.ts). Each kind's
// answer is the one its implementation gives (src/kinds/registry.ts lists them) to a request with
// no credentials, no Origin, no cookies or special headers, on the scheme's default port, from
// a client address explain is told (or, when none is given, an address in no list).
// docs/design.md, "Annotations and policies" and "Explain".
import type { CanaryRules } from "../policy/params.ts";
import { appRootParts, expandAppRoot } from "../policy/template.ts";
import type { TemplatePart } from "../policy/template.ts";
import { accessListMatcher, parseCidrList } from "../config/cidr.ts";
import { compileHeaderPattern } from "../regex/header-pattern.ts";
import type { Config } from "../config/types.ts";
import { signinTemplate } from "../kinds/external-auth.ts";
import { cutSlash } from "../kinds/redirect.ts";
import { LOCATION_CODES } from "../kinds/redirects.ts";
import { POLICY_KINDS } from "../kinds/registry.ts";
import { ENDPOINTS_CHECK_AFTER, HTTPS_REDIRECT_AFTER, stageIndex, type PolicyStage, type StagePolicy } from "../policy/stages.ts";
import { forwardedPrefix, rewriteRequest } from "../table/rewrite.ts";
import { gatewayRedirectCode, modifyPath } from "../table/gateway.ts";
import { DEFAULT_BACKEND_SLOT } from "../table/routes.ts";
import type { Backend, GlobalHeaders, Match, Route } from "../table/types.ts";
import { compileBlockList } from "../regex/block-pattern.ts";
import { PORTICO_SERVER } from "../http/headers.ts";
import { gzipAnswer, type AnswerEncoding } from "../http/gzip.ts";
import { VERSION } from "./upstream-tls.ts";

/**
 * The stage of every kind, from the one registry of kinds (kinds/registry.ts) the proxy's runners
 * are paired with (a test holds the two equal). A policy of another kind, or filed under
 * another stage, makes the proxy's runner answer 500 for every request of the route.
 */
export const KIND_STAGES: Readonly<Record<string, PolicyStage>> = Object.freeze(Object.fromEntries([...POLICY_KINDS].map(([id, k]) => [id, k.stage])));

export type AnswerKind = "proxied" | "redirect" | "challenge" | "refused" | "depends";

/** What the proxy answers (explain's `response`). */
export interface PredictedAnswer {
  /**
   * proxied: a pod answers; redirect: Portico answers a 3xx (Location when the code carries
   * one); challenge: 401 asking for credentials; refused: Portico answers an error status;
   * depends: another service decides (external authentication).
   */
  readonly kind: AnswerKind;
  /** The status Portico answers with; null when a pod or the auth service decides it. */
  readonly status: number | null;
  readonly location?: string;
  /** Why, in words: the check or policy that answers, and what it read. */
  readonly cause: string;
  /** Which step answered: a policy kind, "https-redirect", "endpoints", "no-route", or "proxy". */
  readonly by: string;
  /** proxied (or depends, once the auth service lets it through): the backend ids the request may go to (two for a weighted canary). */
  readonly backends?: readonly string[];
  /** challenge: the realm of `WWW-Authenticate: Basic realm="…"`. */
  readonly realm?: string;
  /** A source-range allow list: only clients in these ranges get past it. */
  readonly allowedClients?: readonly string[];
  /** Checks passed on the way that another request could fail (another client, a credential, a preflight). */
  readonly notes: readonly string[];
  /**
   * proxied, or depends once the auth service lets it through: what the route's policies make of
   * the request the backend receives (a weighted rule's choices: only when they agree).
   */
  readonly upstream?: UpstreamRequest;
  /**
   * The fields Portico sets on the answer, by lowercased name (null: removed): on a pod's
   * answer the route's response-headers and custom-headers (replacing the pod's), then on every
   * answer add-headers and --server-header=portico's Server (proxy/pipeline/handler.ts). A
   * value with nginx variables differs per request: it is named in `notes`, not here.
   */
  readonly headers?: Readonly<Record<string, string | null>>;
  /**
   * The auth service the request is sent to before the pod (`depends`, or a route whose
   * no-auth-locations path skips it: absent), and where it comes from: the Ingress's own
   * auth-url, or the global one (--global-auth-url, ingress-nginx's ConfigMap global-auth-url)
   * that an Ingress without auth-url and without enable-global-auth: "false" takes.
   */
  readonly auth?: AuthOrigin;
  /**
   * proxied to an HTTPS or GRPCS pod: the TLS Portico speaks to it (proxy/upstream/forward.ts),
   * without the Secret's keys: proxy-ssl-* (the OpenSSL cipher text and the versions as
   * written), or, without proxy-ssl-secret, the pod's certificate unchecked, with SNI the
   * backend's name.
   */
  readonly upstreamTls?: UpstreamTlsView;
  /**
   * With use-gzip or enable-brotli, for a pod's answer (proxied, or depends once the auth
   * service lets it through): what the relay's compression (http/gzip.ts) does with this
   * request's Accept-Encoding.
   */
  readonly compression?: CompressionView;
}

/** explain's `response.compression`. */
export interface CompressionView {
  /**
   * The Content-Encoding of a pod's answer that both filters take (status 200, text/html, no
   * Content-Length) for this Accept-Encoding: br (ngx_brotli runs first), gzip, or null.
   */
  readonly encoding: AnswerEncoding | null;
  /** Vary: Accept-Encoding on every answer a filter takes, whatever the client accepts (gzip_vary, with use-gzip). */
  readonly vary: boolean;
  readonly gzip: { readonly level: number; readonly minLength: number; readonly types: readonly string[]; readonly disable: string | null } | null;
  readonly brotli: { readonly level: number; readonly minLength: number; readonly types: readonly string[] } | null;
  /** Which of the pod's answers a filter takes at all. */
  readonly when: string;
}

/**
 * The request a backend receives, as far as the route decides it (kinds/rewrite.ts,
 * kinds/forwarding.ts): the rest (X-Forwarded-*, X-Request-ID...) is the same for every route
 * (http/headers.ts).
 */
export interface UpstreamRequest {
  /** The request-target's path: rewrite-target's or URLRewrite's, else the routed path (the query as sent follows it). */
  readonly path: string;
  /** The Host field: upstream-vhost's or URLRewrite's hostname, or null for the client's own. */
  readonly host: string | null;
  /**
   * The fields the route's policies set, by lowercased name: X-Forwarded-Prefix of a rewrite,
   * portico.dev/request-headers, RequestHeaderModifier (null: removed). Each replaces the
   * client's field of that name.
   */
  readonly headers: Readonly<Record<string, string | null>>;
}

/** explain's `response.upstreamTls`. */
export interface UpstreamTlsView {
  /** proxy-ssl-secret, or null: none, so nothing is checked and no client certificate is sent. */
  readonly secret: string | null;
  readonly verify: boolean;
  /** proxy-ssl-verify-depth (null without proxy-ssl-secret). */
  readonly depth: number | null;
  /** The name checked in the pod's certificate (proxy-ssl-name, else nginx's `upstream_balancer`), or null when nothing is checked. */
  readonly name: string | null;
  /** The SNI sent (proxy-ssl-server-name on), or null: none. */
  readonly sni: string | null;
  readonly clientCertificate: boolean;
  /** The TLS 1.2 suites offered, names separated by colons: what proxy-ssl-ciphers (an OpenSSL cipher string, default DEFAULT) selects; or null: the TLS library's defaults. */
  readonly ciphers: string | null;
  /** proxy-ssl-protocols as versions, or null: the TLS library's defaults. */
  readonly protocols: readonly ("TLSv1.2" | "TLSv1.3")[] | null;
}

/** explain's `response.auth`. */
export interface AuthOrigin {
  /** "auth-url": the Ingress's annotation; "global-auth-url": the global settings (compile/global-auth.ts). */
  readonly source: "auth-url" | "global-auth-url";
  /** The URL as written (variables as `$name`). */
  readonly url: string;
  /** Where the auth service's 401 redirects (auth-signin or global-auth-signin, with its redirect parameter), or null. */
  readonly signin: string | null;
  /** The Ingress whose route asks it. */
  readonly ingress: string;
  /** Why this one, in words. */
  readonly from: string;
  /** The fields of its 2xx answer copied onto the request to the pod (auth-response-headers, global-auth-response-headers). */
  readonly responseHeaders: readonly string[];
  /** The fields set on the request to it from auth-proxy-set-headers' ConfigMap (values may be per request). */
  readonly requestHeaders: readonly string[];
}

/**
 * What the matched route's Ingress says of the global auth (template.go shouldApplyGlobalAuth),
 * when --global-auth-url is set: "global" (it takes the global policy), "own" (its auth-url
 * replaces it), "opted-out" (enable-global-auth: "false"). compile/explain.ts reads it from the
 * Ingress's plan; absent: no global auth is set, or the route has no Ingress.
 */
export interface RouteAuth {
  readonly global: "global" | "own" | "opted-out";
  readonly ingress: string;
}

export interface AnswerRequest {
  /** Normalised (compile/explain.ts normaliseRequest). */
  readonly host: string;
  readonly path: string;
  readonly scheme: "http" | "https";
  /** The client's address, or null: one in no list. */
  readonly client: string | null;
  /** The request's Accept-Encoding, or null/absent: none. */
  readonly acceptEncoding?: string | null;
  /** The request's User-Agent, or null/absent: none (nginx's empty $http_user_agent). */
  readonly userAgent?: string | null;
}

/** The flags the proxy's answers read (config/types.ts); defaults as the flags' own. */
export type AnswerConfig = Partial<
  Pick<
    Config,
    | "httpRedirectCode" | "httpsPort" | "blockCidrs" | "blockUserAgents" | "blockReferers" | "serverHeader" | "useProxyProtocol" | "proxyProtocolTrusted"
    | "gzip" | "gzipLevel" | "gzipMinLength" | "gzipTypes" | "gzipDisable" | "brotli" | "brotliLevel" | "brotliMinLength" | "brotliTypes"
  >
> & {
  /** The table's add-headers and proxy-set-headers (RouteTable.globalHeaders). */
  readonly globalHeaders?: GlobalHeaders | null;
};

const defaultPort = (scheme: "http" | "https"): string => (scheme === "https" ? "443" : "80");

/** A template as its annotation wrote it, variables shown as `$name`. */
function templateText(parts: readonly TemplatePart[]): string {
  return parts.map((p) => (typeof p === "string" ? p : `$${p.v}`)).join("");
}


interface BackendFacts {
  readonly id: string;
  readonly status: string;
  readonly endpoints: number;
}

const facts = (b: Backend): BackendFacts => ({ id: b.id, status: b.status, endpoints: b.endpoints.length });
const serves = (b: BackendFacts): boolean => b.status === "ok" && b.endpoints > 0;

type Step = { readonly at: number; readonly i: number; readonly policy: StagePolicy | null; readonly own: "https-redirect" | "endpoints" | null };

/** The route's steps in the runner's order (proxy/policies/run.ts stepsOf). */
function stepsOf(stages: readonly StagePolicy[] | null): Step[] {
  const at: Step[] = (stages ?? []).map((p, i) => ({ at: stageIndex(p.stage), i, policy: p, own: null }));
  at.push({ at: stageIndex(HTTPS_REDIRECT_AFTER) + 0.5, i: 0, policy: null, own: "https-redirect" });
  at.push({ at: stageIndex(ENDPOINTS_CHECK_AFTER) + 0.5, i: 0, policy: null, own: "endpoints" });
  return at.sort((a, b) => a.at - b.at || a.i - b.i);
}

const str = (v: unknown): string | null => (typeof v === "string" ? v : null);
const list = (v: unknown): string[] | null => (Array.isArray(v) && v.every((x) => typeof x === "string") ? (v as string[]) : null);

/**
 * The answer the proxy gives `req` on `match` (a lookup's answer for it). Pure: reads the
 * route, its backends and their endpoint counts as the table holds them.
 */
export function predictAnswer(match: Match, req: AnswerRequest, config: AnswerConfig = {}, auth: RouteAuth | null = null): PredictedAnswer {
  const blocked = blockedAnswer(req, config);
  if (blocked !== null) return blocked;
  const a = stagesAnswer(match, req, config, auth);
  const notes = [...blockNotes(req, config), ...a.notes];
  const r = match.route;
  const proxied = a.kind === "proxied" && a.by === "proxy";
  if (proxied || a.kind === "depends") {
    for (const s of stepsOf(r.options.stages)) {
      const p = s.policy;
      if (p?.kind === "ingress-mirror") notes.push(`mirror-target: a copy of the request goes to ${templateText(Array.isArray(p.params.url) ? (p.params.url as unknown as TemplatePart[]) : [])}; its answer is not waited for and never reaches the client`);
      if (p?.kind === "gateway-mirror") notes.push(`HTTPRoute RequestMirror: a copy of ${typeof p.params.percent === "number" ? `${p.params.percent}% of the requests` : "the request"} goes to the mirror's pods; its answer is ignored`);
      if (p?.kind === "proxy-rewrite") {
        const what = [p.params.redirect != null ? "Location and Refresh (proxy-redirect-from/to)" : null, p.params.cookieDomain != null ? "Set-Cookie's Domain (proxy-cookie-domain)" : null, p.params.cookiePath != null ? "Set-Cookie's Path (proxy-cookie-path)" : null].filter((x) => x !== null);
        notes.push(`the pod's answer is rewritten: ${what.join(", ")}`);
      }
    }
    for (const h of config.globalHeaders?.request ?? []) if (literal(h.value) === null) notes.push(`proxy-set-headers: ${h.name} is ${templateText(h.value)}, expanded per request`);
  }
  const headers = answerHeaders(match, config, proxied, notes);
  const view = proxied ? upstreamTlsOf(r, a.backends ?? [], notes) : null;
  const upstreamTls = view === null ? {} : { upstreamTls: view };
  const squeezed = proxied || a.kind === "depends" ? compressionOf(r, a.backends ?? [], req, config, notes) : null;
  const compression = squeezed === null ? {} : { compression: squeezed };
  const upstream = a.upstream === undefined ? {} : { upstream: upstreamOf(match, req, config.globalHeaders) ?? a.upstream };
  const out: PredictedAnswer = { ...a, ...upstream, notes, ...(Object.keys(headers).length > 0 ? { headers } : {}), ...upstreamTls, ...compression };
  return unknownClient(out, req, config);
}

/**
 * use-gzip and enable-brotli for a pod's answer (proxy/pipeline/relay.ts): the relay's own
 * decision (http/gzip.ts gzipAnswer) asked of an answer both filters take, with this request's
 * Accept-Encoding and User-Agent (gzip-disable and msie6 read it). A gRPC backend's answers are
 * never compressed. Null when both are off.
 */
function compressionOf(r: Route, ids: readonly string[], req: AnswerRequest, config: AnswerConfig, notes: string[]): CompressionView | null {
  if (config.gzip !== true && config.brotli !== true) return null;
  const chosen = routeBackends(r).filter((b) => ids.includes(b.id));
  if (chosen.length > 0 && chosen.every((b) => b.scheme === "grpc" || b.scheme === "grpcs")) {
    notes.push("use-gzip/enable-brotli: a gRPC backend's answers are never compressed (grpc-encoding is the protocol's own)");
    return null;
  }
  const cfg = {
    gzip: config.gzip === true,
    gzipMinLength: config.gzipMinLength ?? 256,
    gzipTypes: config.gzipTypes ?? [],
    gzipDisable: config.gzipDisable ?? null,
    brotli: config.brotli === true,
    brotliMinLength: config.brotliMinLength ?? 20,
    brotliTypes: config.brotliTypes ?? [],
  };
  const ae = req.acceptEncoding ?? null;
  const ua = req.userAgent ?? null;
  const fields = new Headers({ "content-type": "text/html" });
  const asked: Record<string, string> = {};
  if (ae !== null) asked["accept-encoding"] = ae;
  if (ua !== null) asked["user-agent"] = ua;
  const encoding = gzipAnswer(cfg, new Request("http://explain.invalid/", { headers: asked }), 200, fields);
  return {
    encoding,
    vary: fields.get("vary") !== null,
    gzip: cfg.gzip ? { level: config.gzipLevel ?? 1, minLength: cfg.gzipMinLength, types: cfg.gzipTypes, disable: cfg.gzipDisable } : null,
    brotli: cfg.brotli ? { level: config.brotliLevel ?? 4, minLength: cfg.brotliMinLength, types: cfg.brotliTypes } : null,
    when: "a pod's answer with status 200, 403 or 404, to a request other than HEAD, without Content-Encoding, with a Content-Type the filter lists (text/html always) and no Content-Length or one not below its minimum; br before gzip, gzip-disable read on User-Agent",
  };
}

/** The backends a route may send to, by id: its own, its canary's, its default-backend fallback. */
function routeBackends(r: Route): Backend[] {
  return [r.backend, ...(r.canary === undefined ? [] : [r.canary.backend]), ...(r.fallback === undefined ? [] : [r.fallback])];
}

/**
 * The TLS to the pods of the answer's backends (proxy/upstream/forward.ts: only an `https`
 * backend, and grpcs through proxy/upstream/grpc.ts, connect over TLS; a plain one ignores
 * proxy-ssl-*, which a note says).
 */
function upstreamTlsOf(r: Route, ids: readonly string[], notes: string[]): UpstreamTlsView | null {
  const chosen = routeBackends(r).filter((b) => ids.includes(b.id));
  const overTls = chosen.filter((b) => b.scheme === "https" || b.scheme === "grpcs");
  const t = r.options.upstreamTls;
  if (overTls.length === 0) {
    if (t != null) notes.push(`proxy-ssl-* is not used: ${chosen.map((b) => b.id).join(", ")} speaks plain HTTP (backend-protocol)`);
    return null;
  }
  if (t == null) {
    // Without proxy-ssl-secret: the pod's certificate is not checked; SNI is the backend's name.
    const sni = overTls[0]?.serverName ?? null;
    return { secret: null, verify: false, depth: null, name: null, sni, clientCertificate: false, ciphers: null, protocols: null };
  }
  // The bounds are always two of VERSION's (upstream-tls.ts), so the list is the names between them.
  const protocols = (Object.keys(VERSION) as (keyof typeof VERSION)[]).filter((v) => VERSION[v] >= t.minVersion && VERSION[v] <= t.maxVersion);
  return { secret: t.secret, verify: t.verify, depth: t.depth, name: t.verify ? t.checkName : null, sni: t.sni, clientCertificate: t.cert !== null, ciphers: t.ciphers, protocols };
}

/**
 * --block-cidrs with no client address given: the address decides before anything else, so
 * the answer depends on it; what follows is the answer to a client in no blocked range.
 */
export function unknownClient(a: PredictedAnswer, req: AnswerRequest, config: AnswerConfig): PredictedAnswer {
  const cidrs = config.blockCidrs ?? [];
  if (cidrs.length === 0 || req.client !== null) return a;
  const otherwise = a.status === null ? a.kind : `${a.kind} ${a.status}`;
  return {
    ...a,
    kind: "depends",
    status: null,
    cause: `the client address decides (block-cidrs ${cidrs.join(", ")}): 403 for a client in them; for any other client: ${otherwise} (${a.cause})`,
    by: "block",
  };
}

/** A template without variables as its text; null when it has one. */
function literal(parts: readonly TemplatePart[]): string | null {
  return parts.every((p) => typeof p === "string") ? (parts as string[]).join("") : null;
}

/**
 * --block-cidrs, --block-user-agents, --block-referers (proxy/pipeline/block.ts): checked in the
 * route step, before any policy and on the catch-all too, so they answer 403 first. The
 * explained request's User-Agent is `userAgent` (none given: nginx's empty $http_user_agent), it
 * has no Referer, and its client is `client` (none given: an address in no list).
 */
export function blockedAnswer(req: AnswerRequest, config: AnswerConfig): PredictedAnswer | null {
  const a = blockedBy(req, config);
  return a === null ? null : ownAnswer(a, config);
}

/** One of Portico's own answers with the fields every answer gets (add-headers, --server-header=portico). */
export function ownAnswer(a: PredictedAnswer, config: AnswerConfig): PredictedAnswer {
  const notes = [...a.notes];
  const headers = answerHeaders(null, config, false, notes);
  return Object.keys(headers).length === 0 ? a : { ...a, notes, headers };
}

function blockedBy(req: AnswerRequest, config: AnswerConfig): PredictedAnswer | null {
  const ua = config.blockUserAgents ?? [];
  const ref = config.blockReferers ?? [];
  const cidrs = config.blockCidrs ?? [];
  const refused = (cause: string): PredictedAnswer => ({ kind: "refused", status: 403, cause, by: "block", notes: [] });
  // proxy/pipeline/block.ts tests the field's value, "" for none, with the same compiled list.
  const agent = req.userAgent ?? null;
  if (ua.length > 0 && compileBlockList(ua)?.(agent ?? "") === true) return refused(agent === null ? "block-user-agents: a request without User-Agent matches the list" : `block-user-agents: the User-Agent ${JSON.stringify(agent)} matches the list`);
  if (ref.length > 0 && compileBlockList(ref)?.("") === true) return refused("block-referers: a request without Referer matches the list");
  if (cidrs.length > 0 && req.client !== null) {
    const parsed = parseCidrList([...cidrs]);
    // A list the proxy cannot read refuses every client (proxy/pipeline/block.ts).
    if (!parsed.ok || accessListMatcher(parsed.list)(req.client)) return refused(`block-cidrs: the client ${req.client} is in ${cidrs.join(", ")}`);
  }
  return null;
}

/** What the --block-* lists would refuse that the explained request does not carry. */
function blockNotes(req: AnswerRequest, config: AnswerConfig): string[] {
  const out: string[] = [];
  if ((config.blockCidrs ?? []).length > 0 && req.client !== null) out.push(`block-cidrs: the client ${req.client} is in no blocked range`);
  if ((config.blockUserAgents ?? []).length > 0) out.push(req.userAgent == null ? "block-user-agents: 403 for a User-Agent in the list" : "block-user-agents: 403 for a User-Agent in the list; this one is in none");
  if ((config.blockReferers ?? []).length > 0) out.push("block-referers: 403 for a Referer in the list");
  return out;
}

/** The fields Portico sets on the answer (PredictedAnswer.headers). */
function answerHeaders(match: Match | null, config: AnswerConfig, proxied: boolean, notes: string[]): Record<string, string | null> {
  const out: Record<string, string | null> = {};
  const pairsOf = (v: unknown): [string, string][] => (Array.isArray(v) ? (v.filter((x) => Array.isArray(x) && typeof x[0] === "string" && typeof x[1] === "string") as [string, string][]) : []);
  if (proxied && match !== null) {
    // kinds/forwarding.ts HEADERS and CUSTOM_HEADERS: an earlier stage's field stays, the
    // repeated name of one policy joined with ", ".
    for (const s of stepsOf(match.route.options.stages)) {
      const p = s.policy;
      const pairs = p?.kind === "headers" ? pairsOf(p.params.response) : p?.kind === "custom-headers" ? pairsOf(p.params.headers) : [];
      const fixed: Record<string, string> = {};
      for (const [n, v] of pairs) {
        const k = n.toLowerCase();
        fixed[k] = fixed[k] === undefined ? v : `${fixed[k]}, ${v}`;
      }
      for (const [k, v] of Object.entries(fixed)) if (!(k in out)) out[k] = v;
    }
  }
  for (const h of config.globalHeaders?.response ?? []) {
    const v = literal(h.value);
    if (v === null) {
      notes.push(`add-headers: ${h.name} is ${templateText(h.value)}, expanded per request`);
      delete out[h.name];
      continue;
    }
    // more_set_headers with an empty value removes the field (proxy/pipeline/global-headers.ts).
    out[h.name] = v === "" ? null : v;
  }
  if (config.serverHeader === "portico") out.server = PORTICO_SERVER;
  // none (server-tokens false): the pod's Server is removed (http/headers.ts downstreamHeaders)
  // and Portico writes none of its own; an add-headers Server, set after, stays.
  else if (config.serverHeader === "none" && !("server" in out)) out.server = null;
  return out;
}

/** The auth service of an external-auth step (auth-url, or the global one per `auth`). */
function authOrigin(params: Readonly<Record<string, unknown>>, auth: RouteAuth | null, ingress: string): AuthOrigin {
  const url = templateText(Array.isArray(params.url) ? (params.url as unknown as TemplatePart[]) : []);
  const signin = Array.isArray(params.signin) ? templateText(signinTemplate(params.signin as unknown as TemplatePart[], str(params.redirectParam) ?? "rd")) : null;
  // kinds/external-auth.ts: responseHeaders copied from a 2xx, proxySetHeaders set on the auth request.
  const fields = {
    responseHeaders: list(params.responseHeaders) ?? [],
    requestHeaders: Array.isArray(params.proxySetHeaders) ? params.proxySetHeaders.map((h) => str((h as { name?: unknown } | null)?.name)).filter((n) => n !== null) : [],
  };
  if (auth?.global === "global") {
    return {
      source: "global-auth-url",
      url,
      signin,
      ingress: auth.ingress,
      from: `global-auth-url (--global-auth-url, ingress-nginx's ConfigMap key global-auth-url): ${auth.ingress} sets no auth-url and not enable-global-auth: "false"`,
      ...fields,
    };
  }
  return { source: "auth-url", url, signin, ingress, from: `the auth-url annotation of ${ingress}`, ...fields };
}

/** What the global auth does not do on this route, said in the notes. */
function globalAuthNotes(auth: RouteAuth | null): string[] {
  if (auth?.global === "opted-out") return [`enable-global-auth: "false" on ${auth.ingress}: the global auth service (global-auth-url) is not asked`];
  if (auth?.global === "own") return [`${auth.ingress} has its own auth-url, which replaces global-auth-url`];
  return [];
}

function stagesAnswer(match: Match, req: AnswerRequest, config: AnswerConfig, auth: RouteAuth | null): PredictedAnswer {
  const route: Route = match.route;
  const redirectCode = config.httpRedirectCode ?? 308;
  const notes: string[] = globalAuthNotes(auth);
  const ingress = `${route.ingress.namespace}/${route.ingress.name}`;
  const done = (a: Omit<PredictedAnswer, "notes">): PredictedAnswer => ({ ...a, notes });
  // Portico's own error answers that go through the pipeline's fail() (proxy/pipeline/handler.ts): the route's error pages
  // may replace the ones nginx's error_page catches (proxy/pipeline/error-pages.ts OWN: the 503 of no
  // endpoints; 500s are left as they are).
  const own500 = (by: string, cause: string): PredictedAnswer => done({ kind: "refused", status: 500, cause, by });
  let chosen: BackendFacts[] = [facts(route.backend)];
  if (route.source === "implicitRoot") {
    notes.push(
      `no path of host ${match.hostKey} matched: its implicit "/" location runs the policies of ${route.ingress.namespace}/${route.ingress.name} (the host's first Ingress), then the default backend`,
    );
  }
  for (const s of stepsOf(route.options.stages)) {
    if (s.own === "https-redirect") {
      const o = route.options;
      if (req.scheme === "http" && route.tlsRedirectExempt !== true && ((route.tls && o.sslRedirect) || o.forceSslRedirect)) {
        const uri = o.preserveTrailingSlash ? req.path : cutSlash(req.path);
        const port = o.usePortInRedirects ? `:${config.httpsPort ?? 443}` : "";
        const why = o.forceSslRedirect ? "force-ssl-redirect" : "the host is in spec.tls and ssl-redirect is on";
        return done({ kind: "redirect", status: redirectCode, location: `https://${req.host}${port}${uri}`, cause: `HTTP to HTTPS (${why})`, by: "https-redirect" });
      }
      if (req.scheme === "http" && route.tlsRedirectExempt === true) notes.push("no-tls-redirect-locations: this path is never redirected to HTTPS");
      continue;
    }
    if (s.own === "endpoints") {
      // A route with a fallback or error pages leaves the check to the handler (below).
      if (route.fallback !== undefined || route.errorPages !== undefined) continue;
      const dead = chosen.filter((b) => !serves(b));
      if (dead.length === chosen.length) return done({ kind: "refused", status: 503, cause: noEndpoints(dead), by: "endpoints" });
      if (dead.length > 0) {
        return done({ kind: "depends", status: null, cause: `the canary weight picks the backend: ${dead.map((b) => b.id).join(", ")} has no endpoints (503), ${chosen.filter(serves).map((b) => b.id).join(", ")} is proxied`, by: "endpoints", backends: chosen.filter(serves).map((b) => b.id) });
      }
      continue;
    }
    const p = s.policy as StagePolicy;
    const stage = KIND_STAGES[p.kind];
    if (stage === undefined) return own500(p.kind, `policy kind ${JSON.stringify(p.kind)} has no implementation: every request is refused`);
    if (stage !== p.stage) return own500(p.kind, `policy kind ${p.kind} filed under stage ${p.stage}: every request is refused`);
    const reason = str(p.params.reason);
    switch (p.kind) {
      case "certificate-refuse":
      case "refuse": {
        const status = typeof p.params.status === "number" ? p.params.status : 503;
        return done({ kind: "refused", status, cause: reason ?? "refused", by: p.kind });
      }
      case "denied":
        return done({ kind: "refused", status: 503, cause: reason ?? "the Ingress is refused", by: p.kind });
      case "gateway-error":
        return done({ kind: "refused", status: 500, cause: reason ?? "the HTTPRoute rule cannot be served", by: p.kind });
      case "gateway-redirect": {
        const location = gatewayRedirectLocation(p.params, req);
        if (location === null) return own500(p.kind, "gateway-redirect: listenerPort expected: every request is refused");
        const status = gatewayRedirectCode(p.params.statusCode);
        return done({ kind: "redirect", status, location, cause: `HTTPRoute RequestRedirect (${status})`, by: p.kind });
      }
      case "gateway-rewrite": {
        const path = modifyPath(req.path, str(p.params.pathType), str(p.params.pathValue), str(p.params.matchedPrefix));
        const host = str(p.params.hostname);
        notes.push(`URLRewrite: the backend receives ${path}${host === null ? "" : ` with Host ${host}`}`);
        continue;
      }
      case "header-deny": {
        // The request explained carries none of the headers: each rule is tested against ""
        // (nginx's empty $http_<name>), as kinds/denied.ts tests an absent header.
        const rules = Array.isArray(p.params.rules) ? (p.params.rules as unknown as [number, string, string, string][]) : [];
        for (const [status, name, op, pattern] of rules) {
          const c = compileHeaderPattern(op.endsWith("*") ? `(?i)${pattern}` : pattern);
          if (!c.ok) return own500(p.kind, `deny-request-headers: the pattern ${c.reason}: every request is refused`);
          if (c.re.test("") !== op.startsWith("!")) return done({ kind: "refused", status, cause: `deny-request-headers: without ${name}, the rule ${name} ${op} ${pattern} refuses the request`, by: p.kind });
        }
        notes.push(`deny-request-headers: refused when the request's ${[...new Set(rules.map((r) => r[1]))].join(", ")} meets a rule`);
        continue;
      }
      case "client-cert": {
        const ca = list(p.params.ca);
        if (ca === null || ca.length === 0) return own500(p.kind, "the client CA is not resolved: every request is refused");
        if (p.params.verify !== "on") {
          notes.push(`client certificate ${String(p.params.verify)}: checked when one is sent`);
          continue;
        }
        // A request without a client certificate (plain HTTP never carries one): kinds/client-cert.ts.
        const page = str(p.params.errorPage);
        if (page !== null && page !== "") return done({ kind: "redirect", status: 302, location: page, cause: "no client certificate sent (auth-tls-verify-client on): auth-tls-error-page", by: p.kind });
        return done({ kind: "refused", status: 400, cause: "no client certificate sent (auth-tls-verify-client on)", by: p.kind });
      }
      case "app-root": {
        const path = str(p.params.path) ?? "";
        if (req.path !== "/") {
          notes.push(`app-root: "/" is redirected to ${path}`);
          continue;
        }
        // Explain's request has no query string: `$is_args$args` expand to nothing (kinds/server.ts APP_ROOT).
        const parts = appRootParts(path);
        if (parts === null) return own500(p.kind, `app-root ${JSON.stringify(path)} cannot be expanded: every request is refused`);
        const to = expandAppRoot(parts, { path: req.path, query: "", scheme: req.scheme, httpHost: req.host, host: req.host });
        return done({ kind: "redirect", status: 302, location: `${req.scheme}://${req.host}${to}`, cause: "app-root", by: p.kind });
      }
      case "www-redirect": {
        // The port is the one the client addressed (kinds/server.ts addressedPort): the scheme's default here.
        const to = str(p.params.to) ?? "";
        return done({ kind: "redirect", status: redirectCode, location: `${req.scheme}://${to}:${defaultPort(req.scheme)}${cutSlash(req.path)}`, cause: `from-to-www-redirect: ${req.host} is the other name of ${to}`, by: p.kind });
      }
      case "cors":
        notes.push("CORS: a preflight (OPTIONS with Origin and Access-Control-Request-Method) from an allowed origin gets 204");
        continue;
      case "gateway-cors":
        // The explained request has no Origin: not a CORS request (kinds/cors.ts GATEWAY_CORS).
        notes.push("HTTPRoute CORS: a preflight (OPTIONS with Origin and Access-Control-Request-Method) gets 204, with the CORS fields when its origin is allowed");
        continue;
      case "gateway-response-headers":
        notes.push("HTTPRoute ResponseHeaderModifier: the answer's fields are set, added to or removed");
        continue;
      case "redirect": {
        const url = str(p.params.url) ?? "";
        const code = typeof p.params.code === "number" ? p.params.code : 0;
        const which = code === 301 ? "permanent-redirect" : "temporal-redirect";
        if (!LOCATION_CODES.has(code)) return done({ kind: "redirect", status: code, cause: `${which} with code ${code}: the URL is the body, no Location`, by: p.kind });
        const absolute = url.startsWith("/") && p.params.relative !== true;
        // nginx makes a "/" URL absolute with the connection's scheme and the request's host (no port on the default ports).
        return done({ kind: "redirect", status: code, location: absolute ? `${req.scheme}://${req.host}${url}` : url, cause: which, by: p.kind });
      }
      case "rewrite-target": {
        const hit = match.regex;
        const target = str(p.params.target);
        if (hit === undefined || hit.captures === null || target === null) continue;
        const out = rewriteRequest(target, hit.re, hit.captures, "");
        if (out.kind === "redirect") return done({ kind: "redirect", status: 302, location: out.location, cause: `rewrite-target ${target} is an absolute URL`, by: p.kind });
        if (out.kind === "refused") return own500(p.kind, `rewrite-target ${target}: ${out.reason}`);
        notes.push(`rewrite-target: the backend receives ${out.path}`);
        continue;
      }
      case "canary": {
        const c = route.canary;
        if (c === undefined) return own500(p.kind, "a canary policy on a route without a canary");
        const rules = p.params as unknown as CanaryRules;
        // No header, no cookie: the weight decides (kinds/canary.ts chooseCanary).
        const via: string[] = [];
        if (rules.header !== null) via.push(`header ${rules.header}`);
        if (rules.cookie !== null) via.push(`cookie ${rules.cookie}`);
        const by = via.length > 0 ? `; ${via.join(" or ")} can choose it` : "";
        if (rules.weight <= 0) {
          if (via.length > 0) notes.push(`canary ${c.ingress.namespace}/${c.ingress.name} (${c.backend.id})${by.replace(/^; /, ": ")}`);
        } else if (rules.weight >= rules.weightTotal) chosen = [facts(c.backend)];
        else {
          chosen = [facts(route.backend), facts(c.backend)];
          notes.push(`canary: ${rules.weight} of ${rules.weightTotal} requests go to ${c.backend.id}${by}`);
        }
        continue;
      }
      case "limits":
        if (p.params.denied === true) return done({ kind: "refused", status: 503, cause: "an invalid limit annotation: every request is refused", by: p.kind });
        notes.push("rate or connection limits: a client over them is refused");
        continue;
      case "source-range": {
        const allow = list(p.params.allow);
        const deny = list(p.params.deny);
        const inList = (l: string[] | null): boolean => {
          if (l === null || req.client === null) return false;
          const parsed = parseCidrList(l);
          return parsed.ok && accessListMatcher(parsed.list)(req.client);
        };
        if (deny !== null) {
          if (inList(deny)) return done({ kind: "refused", status: 403, cause: `source range: the client ${req.client} is in the deny list ${deny.join(", ")}`, by: p.kind });
          notes.push(`source range: 403 for clients in ${deny.join(", ")}`);
        }
        if (allow !== null && !inList(allow)) {
          const who = req.client === null ? "an unknown client" : `the client ${req.client}`;
          return done({ kind: "refused", status: 403, cause: `source range: 403 unless the client address is in ${allow.join(", ")} (${who})`, by: p.kind, allowedClients: allow });
        }
        continue;
      }
      case "basic-auth": {
        if (route.authExempt === true) {
          notes.push("no-auth-locations: basic authentication does not run on this path");
          continue;
        }
        const realm = str(p.params.realm) ?? "";
        if (!Array.isArray(p.params.users)) return own500(p.kind, `basic auth: the users are not resolved: every request is refused`);
        return done({ kind: "challenge", status: 401, cause: `basic authentication (Secret ${str(p.params.secret) ?? "?"}): 401 without valid credentials`, by: p.kind, realm });
      }
      case "satisfy-any": {
        // kinds/satisfy.ts: nginx's `satisfy any` over the route's source range, password and
        // auth service, in that order; the first that grants lets the request through.
        const checks = (Array.isArray(p.params.checks) ? (p.params.checks as unknown as { kind: string; params: Record<string, unknown> }[]) : []).filter(
          (c) => route.authExempt !== true || c.kind === "source-range",
        );
        if (route.authExempt === true) notes.push("no-auth-locations: only the address check of satisfy any runs on this path");
        const said: string[] = [];
        let unauthorized = false;
        let forbidden = false;
        let realm: string | null = null;
        let granted: string | null = null;
        for (const c of checks) {
          if (c.kind === "source-range") {
            const allow = list(c.params.allow);
            const deny = list(c.params.deny);
            const inList = (l: string[] | null): boolean => {
              if (l === null || req.client === null) return false;
              const parsed = parseCidrList(l);
              return parsed.ok && accessListMatcher(parsed.list)(req.client);
            };
            const who = req.client === null ? "an unknown client" : `the client ${req.client}`;
            if (inList(deny)) {
              forbidden = true;
              said.push(`the address check refuses ${who} (403)`);
            } else if (allow !== null && !inList(allow)) {
              forbidden = true;
              said.push(`the address check refuses ${who}: not in ${allow.join(", ")} (403)`);
            } else if (allow !== null) {
              granted = `satisfy any: ${who} is in ${allow.join(", ")}, which lets the request through without credentials`;
              break;
            }
            // A deny-only list that does not match declines: neither grants nor refuses.
            continue;
          }
          if (c.kind === "basic-auth") {
            if (!Array.isArray(c.params.users)) return own500(p.kind, "basic auth: the users are not resolved: every request is refused");
            unauthorized = true;
            realm = str(c.params.realm) ?? "";
            said.push(`the password check asks for credentials (401, realm ${JSON.stringify(realm)})`);
            continue;
          }
          if (c.kind === "external-auth") {
            const origin = authOrigin(c.params, auth, ingress);
            const signin = origin.signin;
            const refusedAs = unauthorized ? "401 or 403 gives 401" : "401 gives 401, 403 gives 403";
            const then = signin === null ? refusedAs : `${refusedAs}, and a 401 becomes 302 to ${signin}`;
            return done({
              kind: "depends",
              status: null,
              ...(signin === null ? {} : { location: signin }),
              cause: `satisfy any: ${said.length > 0 ? `${said.join("; ")}; ` : ""}the auth service decides (${origin.source} ${origin.url}): 2xx lets the request through, ${then}; anything else (or no answer) is 500`,
              by: p.kind,
              backends: after(route, chosen).backends,
              auth: origin,
              ...upstreamField(match, req),
            });
          }
          return own500(p.kind, `satisfy any cannot combine ${c.kind}: every request is refused`);
        }
        if (granted !== null) {
          notes.push(granted);
          continue;
        }
        if (unauthorized) return done({ kind: "challenge", status: 401, cause: `satisfy any: ${said.join("; ")}: 401 without valid credentials`, by: p.kind, realm: realm ?? "" });
        if (forbidden) return done({ kind: "refused", status: 403, cause: `satisfy any: ${said.join("; ")}`, by: p.kind });
        continue;
      }
      case "external-auth": {
        const origin = authOrigin(p.params, auth, ingress);
        if (route.authExempt === true) {
          notes.push(`no-auth-locations: external authentication (${origin.source} ${origin.url}) does not run on this path`);
          continue;
        }
        const url = Array.isArray(p.params.url) ? (p.params.url as unknown as TemplatePart[]) : [];
        // $host in the auth URL on a rule that does not pin the host: kinds/external-auth.ts refuses (500).
        if (url.some((x) => typeof x !== "string" && x.v === "host") && (route.host === null || route.host.startsWith("*"))) {
          return own500(p.kind, `${origin.source} uses $host on a wildcard or host-less rule: every request is refused`);
        }
        const signin = origin.signin;
        const then = signin === null ? "401 is passed on (with its WWW-Authenticate)" : `401 becomes 302 to ${signin}`;
        return done({
          kind: "depends",
          status: null,
          ...(signin === null ? {} : { location: signin }),
          cause: `the ${origin.source === "global-auth-url" ? "global " : ""}auth service decides (${origin.source} ${origin.url}): 2xx lets the request through, ${then}, 403 is passed on, anything else (or no answer) is 500`,
          by: p.kind,
          backends: after(route, chosen).backends,
          auth: origin,
          ...upstreamField(match, req),
        });
      }
      default:
        // Backend choice (affinity, hash, ewma) and forwarding (headers, auto-http, upstream-vhost): they never answer.
        continue;
    }
  }
  const a = after(route, chosen);
  return done({ kind: a.kind, status: a.status, cause: a.cause, by: a.by, ...(a.backends.length > 0 ? { backends: a.backends } : {}), ...(a.by === "proxy" ? upstreamField(match, req) : {}) });
}

/**
 * The request the backend receives on `match`, as the route's request-changing policies leave
 * it, walked in the runner's order (the explained request has no fields of its own); null when
 * a rewrite answers instead of forwarding. Read apart from the answer's walk, so that an answer
 * that depends on the auth service says what the request becomes once it lets it through.
 */
export function upstreamOf(match: Match, req: Pick<AnswerRequest, "path">, global: GlobalHeaders | null = null): UpstreamRequest | null {
  let path = req.path;
  let host: string | null = null;
  let headers: Record<string, string | null> = {};
  // proxy-set-headers, set in the route step before the policies (proxy/pipeline/route.ts): an
  // empty value sends no field. Values with variables are said in the answer's notes.
  for (const h of global?.request ?? []) {
    const v = literal(h.value);
    if (v !== null) headers[h.name] = v === "" ? null : v;
  }
  const pairsOf = (v: unknown): [string, string][] => (Array.isArray(v) ? (v.filter((x) => Array.isArray(x) && typeof x[0] === "string" && typeof x[1] === "string") as [string, string][]) : []);
  for (const s of stepsOf(match.route.options.stages)) {
    const p = s.policy;
    if (p === null) continue;
    switch (p.kind) {
      case "gateway-rewrite": {
        // URLRewrite (kinds/rewrite.ts GATEWAY_REWRITE).
        path = modifyPath(req.path, str(p.params.pathType), str(p.params.pathValue), str(p.params.matchedPrefix));
        host = str(p.params.hostname) ?? host;
        break;
      }
      case "rewrite-target": {
        const hit = match.regex;
        const target = str(p.params.target);
        if (hit === undefined || hit.captures === null || target === null) break;
        const out = rewriteRequest(target, hit.re, hit.captures, "");
        if (out.kind !== "path") return null;
        path = out.path;
        // template.go buildProxyPass sends X-Forwarded-Prefix in the rewrite branch only (kinds/rewrite.ts REWRITE_TARGET).
        const xfp = str(p.params.xForwardedPrefix);
        const prefix = xfp === null ? null : forwardedPrefix(xfp, hit.re, hit.captures);
        if (prefix !== null) headers = { ...headers, "x-forwarded-prefix": prefix };
        break;
      }
      case "upstream-vhost":
        host = str(p.params.host) ?? host;
        break;
      case "headers": {
        // A field an earlier stage set stays; these fill in the other names, a repeated name
        // joined with ", " (kinds/forwarding.ts HEADERS).
        const fixed: Record<string, string> = {};
        for (const [n, v] of pairsOf(p.params.request)) {
          const k = n.toLowerCase();
          fixed[k] = fixed[k] === undefined ? v : `${fixed[k]}, ${v}`;
        }
        headers = { ...fixed, ...headers };
        break;
      }
      case "gateway-request-headers": {
        // RequestHeaderModifier (kinds/forwarding.ts GATEWAY_REQUEST_HEADERS): set, add to what an earlier
        // filter set (the explained request has no field of its own), remove.
        const out = { ...headers };
        for (const [n, v] of pairsOf(p.params.set)) out[n] = v;
        for (const [n, v] of pairsOf(p.params.add)) out[n] = out[n] == null ? v : `${out[n]},${v}`;
        for (const n of list(p.params.remove) ?? []) out[n] = null;
        headers = out;
        break;
      }
    }
  }
  return { path, host, headers };
}

const upstreamField = (match: Match, req: Pick<AnswerRequest, "path">): { upstream?: UpstreamRequest } => {
  const u = upstreamOf(match, req);
  return u === null ? {} : { upstream: u };
};

function noEndpoints(dead: readonly BackendFacts[]): string {
  return `no endpoints: ${dead.map((b) => `${b.id} ${b.status === "ok" ? "NoEndpoints" : b.status}`).join(", ")}`;
}

/** After the stages: the default-backend fallback, the no-endpoints 503 and the error pages that replace it (proxy/pipeline/choose.ts, error-pages.ts). */
function after(route: Route, chosen: readonly BackendFacts[]): { kind: AnswerKind; status: number | null; cause: string; by: string; backends: string[] } {
  const out = chosen.map((b) => {
    if (route.fallback !== undefined && b.id === route.backend.id && b.status !== "ok") return { b: facts(route.fallback), via: `default-backend ${route.fallback.id} (${b.id} has none)` };
    return { b, via: null as string | null };
  });
  const live = out.filter((x) => serves(x.b));
  if (live.length > 0) {
    const via = live.map((x) => x.via).filter((v) => v !== null);
    return { kind: "proxied", status: null, cause: via.length > 0 ? `proxied to ${via.join(", ")}` : "proxied", by: "proxy", backends: live.map((x) => x.b.id) };
  }
  const pages = route.errorPages;
  // The implicit "/" location without a default backend (table/routes.ts NOT_FOUND_PAGES).
  if (route.source === "implicitRoot" && route.backend.id === DEFAULT_BACKEND_SLOT.id) {
    return { kind: "refused", status: 404, cause: "no rule matches and there is no default backend", by: "no-route", backends: [] };
  }
  const cause = noEndpoints(out.map((x) => x.b));
  if (pages !== undefined && pages.codes.includes(503)) {
    if (pages.backend === null) return { kind: "refused", status: 404, cause: `${cause}; custom-http-errors 503 with no error backend: 404`, by: "endpoints", backends: [] };
    return { kind: "proxied", status: null, cause: `${cause}; custom-http-errors: the error backend answers the 503`, by: "endpoints", backends: [pages.backend.id] };
  }
  return { kind: "refused", status: 503, cause, by: "endpoints", backends: [] };
}

/**
 * The Location proxy/gateway.ts GATEWAY_REDIRECT answers (HTTPRequestRedirectFilter): scheme,
 * hostname and path as asked, else the request's; the port as asked, else the well-known port
 * of a changed scheme, else the listener's declared port, left out when it is the scheme's
 * default. Null when the params lack the listener's port (the proxy refuses to build it).
 */
export function gatewayRedirectLocation(params: StagePolicy["params"], req: Pick<AnswerRequest, "host" | "path">): string | null {
  const askedScheme = str(params.scheme);
  const askedHost = str(params.hostname);
  const askedPort = typeof params.port === "number" ? params.port : null;
  const listenerPort = typeof params.listenerPort === "number" ? params.listenerPort : null;
  if (listenerPort === null) return null;
  const scheme = askedScheme ?? (params.listenerScheme === "https" ? "https" : "http");
  const port = askedPort ?? (askedScheme !== null ? (scheme === "https" ? 443 : 80) : listenerPort);
  const host = askedHost ?? req.host;
  const path = modifyPath(req.path, str(params.pathType), str(params.pathValue), str(params.matchedPrefix));
  const authority = port === (scheme === "https" ? 443 : 80) ? host : `${host}:${port}`;
  return `${scheme}://${authority}${path}`;
}

/** --proxy-protocol-trusted when not given: ingress-nginx's proxy-real-ip-cidr default, every IPv4 peer (config/flags.ts). */
export const DEFAULT_PROXY_PROTOCOL_TRUSTED: readonly string[] = Object.freeze(["0.0.0.0/0"]);

/**
 * --use-proxy-protocol (ingress-nginx's use-proxy-protocol; serving/front.ts): every connection
 * on both traffic ports must open with a PROXY header, or it is closed unanswered (nginx's
 * "broken header"). The header's source is the client address when the connection's peer is in
 * --proxy-protocol-trusted (nginx.tmpl set_real_ip_from), and a destination port of 443 makes
 * a plain connection's request https (lua_ingress.lua rewrite()). Null when off.
 */
export function proxyProtocolNote(config: AnswerConfig): string | null {
  if (config.useProxyProtocol !== true) return null;
  const trusted = config.proxyProtocolTrusted ?? DEFAULT_PROXY_PROTOCOL_TRUSTED;
  return `use-proxy-protocol: a connection that does not open with a PROXY header is closed without an answer; this is the answer to one whose header names the client${trusted.length > 0 ? ` (believed from a peer in ${trusted.join(", ")}; from another peer the peer is the client)` : " (no peer is believed: the connection's peer is the client)"}, and a header's destination port 443 makes a plain connection's request https`;
}
