// The rules that read one Ingress alone: annotations, rule host and path validation, what
// each backend names, the spec.tls hosts, and the diagnostics those give. Everything that
// depends on other objects (class, Services, Secrets, other Ingresses) is decided later, per
// host (host-entry.ts), for TLS (tls.ts) and for the default route (defaults.ts); the one
// exception is the basic-auth Secret, read with the annotations (access.ts), which the plan
// records. Objects in the store are immutable and replaced on change, so the compiler keeps one
// plan per Ingress object and plans only edited Ingresses again, or one whose basic-auth
// Secret is another object now (planIsCurrent).
import { skipsAuthentication } from "../annotations/basic-auth.ts";
import type { Diagnostic, DiagnosticReason } from "../model/diagnostic.ts";
import type { ConfigMap, HTTPIngressPath, Ingress, IngressBackend, Secret } from "../model/schemas.ts";
import type { PathType } from "../table/types.ts";
import { resolveAccess, satisfyAny, type ResolvedAccess } from "./access.ts";
import { resolveUpstreamTls, type ResolvedUpstreamTls } from "./upstream-tls.ts";
import { resolveAuthHeaders, type ConfigMapRead } from "./auth-headers.ts";
import { resolveCustomHeaders } from "./custom-headers.ts";
import { Bool, createReader, FORCE_SSL_REDIRECT, parseAnnotations, PRESERVE_TRAILING_SLASH, SSL_REDIRECT, USE_PORT_IN_REDIRECTS, type ParsedAnnotations } from "./annotations.ts";
import { assembleStages } from "./stages.ts";
import { globalAuth, type GlobalAuth } from "./global-auth.ts";
import type { CompileConfig } from "./config.ts";
import { backendRef, type BackendRef, type BackendRefResult } from "./backends.ts";
import { planErrorPages, type ErrorPagesPlan } from "./error-pages.ts";
import { normaliseHost, type HostResult } from "../model/hosts.ts";
import { compact, NONE } from "./empty.ts";
import { OneKeyMap } from "./one-key-map.ts";
import { createdMs, ingressKey, namespaceOf } from "./order.ts";
import { validatePath, type PathResult } from "./paths.ts";
import * as K from "../kinds/index.ts";
import type { KindObjects } from "../model/kinds.ts";
import { relevantEqual } from "../store/relevance.ts";
import type { StagePolicy } from "../policy/stages.ts";

/** One valid rule path (host, path and backend spec all passed their checks). */
export interface PathPlan {
  readonly valid: true;
  readonly ruleIndex: number;
  readonly pathIndex: number;
  /** Lowercased host, or null for a hostless rule. */
  readonly host: string | null;
  /** The literal (routed) form of the path, or `rawPath` when it has none (`literalProblem`). */
  readonly path: string;
  /** The path as written ("" for ImplementationSpecific is "/"): the regex in regex mode. */
  readonly rawPath: string;
  /** Why the path cannot be served on a host that is not in regex mode (compile/paths.ts), or null. */
  readonly literalProblem: string | null;
  readonly pathType: PathType;
  readonly declaredPathType: "Exact" | "Prefix" | "ImplementationSpecific";
  /** Key of the (type, literal path) claim within its host: one owner per key (host-entry.ts). */
  readonly claimKey: string;
  /** The claim key in regex mode: type and path as written, as ingress-nginx keys its locations. */
  readonly rawClaimKey: string;
  readonly backend: BackendRef;
  /** The path as written starts with a --no-tls-redirect-locations entry: never redirected to HTTPS. */
  readonly tlsRedirectExempt?: true;
  /** The path as written starts with a --no-auth-locations entry: no basic or external authentication (Route.authExempt). */
  readonly authExempt?: true;
  /** Its Ingress sets ssl-passthrough and --enable-ssl-passthrough is on (Route.sslPassthrough). */
  readonly sslPassthrough?: true;
}

/** A rule path skipped for its host, path or backend (explain lists it with the reason). */
export interface InvalidPath {
  readonly valid: false;
  readonly ruleIndex: number;
  readonly pathIndex: number;
  readonly reason: "InvalidHost" | "InvalidPath" | "InvalidBackend";
  readonly message: string;
  /** spec.rules[].host as written, and lowercased when it is valid (else null). */
  readonly rawHost: string | null;
  readonly host: string | null;
  readonly declaredPathType: "Exact" | "Prefix" | "ImplementationSpecific";
  /** The path as written, and its checked form when the path alone is valid. */
  readonly rawPath: string;
  readonly checked: { readonly path: string; readonly type: PathType } | null;
}

export type RulePath = PathPlan | InvalidPath;

export interface TlsPlan {
  /** spec.tls[].secretName, or null when empty (the default certificate). */
  readonly secretName: string | null;
  /** Its valid, non-empty hosts, lowercased, in the written order. */
  readonly hosts: readonly string[];
}

export interface IngressPlan {
  readonly ingress: Ingress;
  readonly namespace: string;
  readonly name: string;
  /** `namespace/name`. */
  readonly key: string;
  readonly createdMs: number;
  /** Route.ingress, shared by every route of this object. */
  readonly ref: { readonly namespace: string; readonly name: string };
  readonly annotations: ParsedAnnotations;
  /** The basic-auth Secret the annotations were resolved with (access.ts), or null. */
  readonly authSecret: ResolvedAccess["secret"];
  /** The client-certificate CA Secret the annotations were resolved with (access.ts), or null. */
  readonly caSecret: ResolvedAccess["caSecret"];
  /** The proxy-ssl-secret read (upstream-tls.ts), or null. */
  readonly proxySslSecret: ResolvedUpstreamTls["secret"];
  /** The client-certificate policy this Ingress offers its hosts (access.ts), or null. */
  readonly hostCert: ResolvedAccess["hostCert"];
  /** The auth-proxy-set-headers ConfigMap the annotations were resolved with (auth-headers.ts), or null. */
  readonly headersConfigMap: ConfigMapRead | null;
  /** The custom-headers ConfigMap the annotations were resolved with (custom-headers.ts), or null. */
  readonly customHeadersConfigMap: ConfigMapRead | null;
  /** Problems of this object alone, reported while it is served. */
  readonly diagnostics: readonly Diagnostic[];
  /** Valid rule paths grouped by host key (`*` for hostless), in rule and path order. */
  readonly hosts: ReadonlyMap<string, readonly PathPlan[]>;
  /** Every rule path, valid or not, in rule and path order (for explain). */
  readonly rulePaths: readonly RulePath[];
  readonly tls: readonly TlsPlan[];
  readonly defaultBackend: BackendRefResult | null;
  /** custom-http-errors and default-backend (or the flags'), resolved per host (error-pages.ts); null = none. */
  readonly errorPages: ErrorPagesPlan | null;
  /**
   * server-alias names for the hosts of its rules (aliases.ts decides which count); none when
   * ingress-nginx would reject the Ingress.
   */
  readonly aliases: readonly string[];
}

/**
 * Can `plan` stand for `ing` in a snapshot holding `secrets`: the same object, and the same
 * basic-auth and CA Secret objects (or still none) as when it was planned (access.ts)?
 */
export function planIsCurrent(plan: IngressPlan, ing: Ingress, secrets: ReadonlyMap<string, Secret>, configMaps: ReadonlyMap<string, ConfigMap> = NO_CONFIG_MAPS): boolean {
  return (
    plan.ingress === ing &&
    sameRead("Secret", plan.authSecret, secrets) &&
    sameRead("Secret", plan.caSecret, secrets) &&
    sameRead("Secret", plan.proxySslSecret, secrets) &&
    sameRead("ConfigMap", plan.headersConfigMap, configMaps) &&
    sameRead("ConfigMap", plan.customHeadersConfigMap, configMaps)
  );
}

/**
 * The object a plan read is still the one under its key, or one equal in what the compiler
 * reads of it (store/relevance.ts): a label, annotation or resourceVersion change of a Secret
 * or ConfigMap an Ingress names plans nothing again (docs/design.md "What a change compiles
 * again").
 */
function sameRead<K extends "Secret" | "ConfigMap">(kind: K, read: { readonly key: string; readonly object: KindObjects[K] | undefined } | null, objects: ReadonlyMap<string, KindObjects[K]>): boolean {
  if (read === null) return true;
  const now = objects.get(read.key);
  return now === read.object || (now !== undefined && read.object !== undefined && relevantEqual(kind, now, read.object));
}

/** Does `plan` depend on a Secret or ConfigMap besides its Ingress (the compiler checks those again when they change)? */
export const planReadsRefs = (plan: IngressPlan): boolean => plan.authSecret !== null || plan.caSecret !== null || plan.proxySslSecret !== null || plan.headersConfigMap !== null || plan.customHeadersConfigMap !== null;

const NO_CONFIG_MAPS: ReadonlyMap<string, ConfigMap> = new Map();

export function planIngress(ing: Ingress, secrets: ReadonlyMap<string, Secret>, config: CompileConfig, configMaps: ReadonlyMap<string, ConfigMap> = NO_CONFIG_MAPS): IngressPlan {
  const ns = namespaceOf(ing);
  const name = ing.metadata.name;
  const diagnostics: Diagnostic[] = [];
  const diag = (reason: DiagnosticReason, message: string, severity: "warning" | "error" = "error") =>
    diagnostics.push({ kind: "Ingress", namespace: ns, name, reason, message, severity });

  // The flags' source ranges and the basic-auth Secret's users complete the annotations here.
  // The auth-proxy-set-headers ConfigMap's entries complete the external-auth policy first.
  const headers = resolveAuthHeaders(parseAnnotations(ing.metadata.annotations, config), ing, configMaps);
  const custom = resolveCustomHeaders(headers.annotations, ing, config.globalAllowedResponseHeaders, configMaps);
  const upstreamTls = resolveUpstreamTls(custom.annotations, ing, secrets);
  const access = resolveAccess(upstreamTls.annotations, ing, secrets, config);
  const global = globalAuth(config);
  // `satisfy: any` folds the access checks once all are there, the global auth-url's included.
  const ann = satisfyAny(withGlobalAuth(globalRedirect(access.annotations, ing.metadata.annotations, config), global));
  for (const problem of ann.problems) diag("InvalidAnnotation", problem, "warning");
  if (global !== null && takesGlobalAuth(ann)) {
    for (const problem of global.problems) diag("InvalidConfigKey", problem, "warning");
  }
  // An unsupported annotation that refused the Ingress (an access check, a snippet) is said
  // once, by its problem ("refused with 503"), not also as "ignored", which it is not.
  const refusedBy = new Set(ann.problems.flatMap((p) => (p.startsWith("annotation ") && p.includes("refused with 503") ? p.slice(11, p.indexOf(":")).split(", ") : [])));
  for (const a of ann.unsupported) if (!refusedBy.has(a)) diag("UnsupportedAnnotation", `annotation ${a} is not supported by Portico and is ignored`, "warning");
  diagnostics.push(...headers.diagnostics, ...custom.diagnostics, ...upstreamTls.diagnostics, ...access.diagnostics);
  // ingress-nginx's controller.go (createServers) logs "session-cookie-path should be set when
  // use-regex is true" for a cookie-affinity Ingress with use-regex and no session-cookie-path:
  // the cookie's Path is then the location's path, a regular expression a browser compares
  // literally (kinds/affinity.ts cookiePath). The same Ingress is served the same; a
  // warning, as there.
  const cookie = ann.policies.affinity.cookie;
  if (cookie !== null && cookie.path === null && ann.policies.regexRewrite.useRegex) {
    diag("SessionCookiePath", "session-cookie-path should be set when use-regex is true: the affinity cookie's Path is otherwise the rule path, a regular expression that browsers compare as a literal path", "warning");
  }
  // ingress-nginx reads the annotation without the flag, but only the flag starts the TCP proxy
  // that acts on it (nginx.go setupSSLProxy), so there it changes nothing: say so here.
  const passthrough = ann.denied === null && ann.policies.sslPassthrough.on && config.enableSslPassthrough;
  if (ann.policies.sslPassthrough.on && !config.enableSslPassthrough) {
    diag("UnsupportedAnnotation", "annotation nginx.ingress.kubernetes.io/ssl-passthrough is ignored: Portico was not started with --enable-ssl-passthrough (as ingress-nginx, whose passthrough proxy needs that flag); TLS to this host is terminated by Portico, and its backends are reached over HTTPS, as ingress-nginx does", "warning");
  }

  const tls: TlsPlan[] = [];
  for (const entry of ing.spec.tls ?? []) {
    const hosts: string[] = [];
    for (const raw of entry.hosts ?? []) {
      const h = normaliseHost(raw);
      if (!h.ok) diag("InvalidHost", `spec.tls: ${h.message}`);
      else if (h.host !== null) hosts.push(h.host);
    }
    tls.push({ secretName: entry.secretName || null, hosts });
  }

  // Paths of one Ingress mostly name the same backend: one ref (and one id string) for them.
  const refs: { spec: IngressBackend; ref: BackendRefResult }[] = [];
  const refOf = (spec: IngressBackend): BackendRefResult => {
    for (const r of refs) if (sameBackend(r.spec, spec)) return r.ref;
    const ref = backendRef(ns, spec, ann.scheme, ann.policies.hosts.serviceUpstream);
    refs.push({ spec, ref });
    return ref;
  };
  const byHost = new Map<string, PathPlan[]>();
  const rulePaths: RulePath[] = [];
  const rules = ing.spec.rules ?? [];
  for (let ri = 0; ri < rules.length; ri++) {
    const rule = rules[ri];
    if (!rule) continue;
    const rawHost = rule.host ?? null;
    const h = normaliseHost(rule.host);
    if (!h.ok) diag("InvalidHost", `spec.rules[${ri}]: ${h.message}; rule skipped`);
    const paths = rule.http?.paths ?? [];
    for (let pi = 0; pi < paths.length; pi++) {
      const p = paths[pi];
      if (!p) continue;
      const vp = validatePath(p.path, p.pathType);
      if (!h.ok) {
        rulePaths.push(invalidPath(ri, pi, "InvalidHost", h.message, rawHost, h, p, vp));
        continue;
      }
      if (!vp.ok) {
        diag("InvalidPath", `spec.rules[${ri}].http.paths[${pi}]: ${vp.message}; path skipped`);
        rulePaths.push(invalidPath(ri, pi, "InvalidPath", vp.message, rawHost, h, p, vp));
        continue;
      }
      // controller.go getConfiguration: a passthrough host sends every connection to its `/`
      // location's backend; "Ignoring SSL Passthrough for location" any other path.
      if (passthrough && vp.path !== "/") {
        diag("SslPassthroughPath", `spec.rules[${ri}].http.paths[${pi}]: ssl-passthrough sends every TLS connection for the host to the backend of its / path; ${JSON.stringify(vp.raw)} is served only over plain HTTP`, "warning");
      }
      if (vp.strictPathType) {
        diag(
          "StrictPathType",
          `spec.rules[${ri}].http.paths[${pi}]: ${p.pathType} path ${JSON.stringify(vp.raw)} has characters other than letters, digits, "-", "_", "." and "/": ingress-nginx's admission webhook refuses it (strict-validate-path-type, on by default since v1.12), though ingress-nginx serves it when no webhook runs; a regular expression belongs in an ImplementationSpecific path`,
          "warning",
        );
      }
      const br = refOf(p.backend);
      if (!br.ok) {
        diag("InvalidBackend", `spec.rules[${ri}].http.paths[${pi}]: ${br.message}; path skipped`);
        rulePaths.push(invalidPath(ri, pi, "InvalidBackend", br.message, rawHost, h, p, vp));
        continue;
      }
      const hostKey = h.host ?? "*";
      let list = byHost.get(hostKey);
      if (!list) byHost.set(hostKey, (list = []));
      const claimKey = `${vp.type === "Exact" ? "E" : "P"}${vp.path}`;
      const pp: PathPlan = {
        valid: true,
        ruleIndex: ri,
        pathIndex: pi,
        host: h.host,
        path: vp.path,
        rawPath: vp.raw,
        literalProblem: vp.literalProblem,
        pathType: vp.type,
        declaredPathType: p.pathType,
        claimKey,
        // The same string when the path is written as routed (most are): one string less per path.
        rawClaimKey: vp.raw === vp.path ? claimKey : `${vp.type === "Exact" ? "E" : "P"}${vp.raw}`,
        backend: br.ref,
        // template.go isLocationInLocationList: strings.HasPrefix on the location's path as written.
        ...(config.noTlsRedirectLocations.some((l) => vp.raw.startsWith(l)) ? { tlsRedirectExempt: true as const } : {}),
        ...(skipsAuthentication(vp.raw, config.noAuthLocations) ? { authExempt: true as const } : {}),
        ...(passthrough ? { sslPassthrough: true as const } : {}),
      };
      list.push(pp);
      rulePaths.push(pp);
    }
  }

  const spec = ing.spec.defaultBackend;
  return {
    ingress: ing,
    namespace: ns,
    name,
    key: ingressKey(ing),
    createdMs: createdMs(ing),
    ref: Object.freeze({ namespace: ns, name }),
    annotations: ann,
    authSecret: access.secret,
    caSecret: access.caSecret,
    proxySslSecret: upstreamTls.secret,
    headersConfigMap: headers.configMap,
    customHeadersConfigMap: custom.configMap,
    hostCert: access.hostCert,
    // Kept for the plan's life: most are empty, and share one empty list (empty.ts).
    diagnostics: compact(diagnostics),
    hosts: byHost.size === 1 ? oneHost(byHost) : byHost,
    rulePaths,
    tls: compact(tls),
    defaultBackend: spec ? refOf(spec) : null,
    errorPages: planErrorPages(ann.policies.errorPages, ns, ann.scheme, config),
    aliases: ann.denied === null ? ann.policies.hosts.aliases : NONE,
  };
}

/** The one-host plan's paths in a OneKeyMap (a Map of one entry costs 5 times as much: one-key-map.ts). */
function oneHost(byHost: Map<string, PathPlan[]>): ReadonlyMap<string, readonly PathPlan[]> {
  const [hostKey, paths] = byHost.entries().next().value as [string, PathPlan[]];
  return new OneKeyMap(hostKey, paths);
}

/**
 * Does an Ingress with these annotations take the global auth (template.go shouldApplyGlobalAuth:
 * no auth-url of its own, enable-global-auth not false)? One ingress-nginx refuses takes nothing.
 */
const takesGlobalAuth = (ann: ParsedAnnotations): boolean => ann.denied === null && !ann.policies.externalAuth.enabled && ann.policies.externalAuth.global;

/** --global-auth-url's policy (compile/global-auth.ts) added to the stages of an Ingress that takes it. */
function withGlobalAuth(ann: ParsedAnnotations, global: GlobalAuth | null): ParsedAnnotations {
  if (global === null || !takesGlobalAuth(ann)) return ann;
  const o = ann.options;
  return Object.freeze({ ...ann, options: Object.freeze({ ...o, stages: assembleStages(o.stages, global.stage) }) });
}

/**
 * The redirect settings of ingress-nginx's ConfigMap on an Ingress's own annotations:
 * --ssl-redirect, --force-ssl-redirect, --use-port-in-redirects and --preserve-trailing-slash
 * apply to an Ingress that does not set the annotation, or sets a value that does not parse,
 * as ingress-nginx's annotation parsers fall back to the ConfigMap's value in both cases
 * (annotations/sslredirect, portinredirect/main.go, rewrite/main.go). --relative-redirects is
 * nginx's `absolute_redirect off` for the whole http block: the Ingress's relative-redirects
 * can only add it (the template writes `absolute_redirect off` for `true`, nothing for `false`).
 */
function globalRedirect(ann: ParsedAnnotations, raw: Readonly<Record<string, string>> | null | undefined, config: CompileConfig): ParsedAnnotations {
  if (config.sslRedirect && !config.forceSslRedirect && !config.usePortInRedirects && !config.preserveTrailingSlash && !config.relativeRedirects) return ann;
  const r = createReader(raw ?? {}, []);
  const o = ann.options;
  const sslRedirect = r.value(SSL_REDIRECT, Bool) ?? config.sslRedirect;
  const forceSslRedirect = r.value(FORCE_SSL_REDIRECT, Bool) ?? config.forceSslRedirect;
  const usePortInRedirects = r.value(USE_PORT_IN_REDIRECTS, Bool) ?? config.usePortInRedirects;
  const preserveTrailingSlash = r.value(PRESERVE_TRAILING_SLASH, Bool) ?? config.preserveTrailingSlash;
  let stages = o.stages;
  if (config.relativeRedirects && stages !== null) {
    // The redirect annotations' URL and proxy_redirect's rewritten Location alike.
    const marks = (p: StagePolicy) => (p.kind === K.REDIRECT.id || p.kind === K.PROXY_REWRITE.id) && p.params.relative !== true;
    if (stages.some(marks)) stages = assembleStages(stages.map((p) => (marks(p) ? { ...p, params: { ...p.params, relative: true } } : p)));
  }
  if (
    sslRedirect === o.sslRedirect && forceSslRedirect === o.forceSslRedirect && usePortInRedirects === o.usePortInRedirects &&
    preserveTrailingSlash === o.preserveTrailingSlash && stages === o.stages
  ) {
    return ann;
  }
  return Object.freeze({ ...ann, options: Object.freeze({ ...o, sslRedirect, forceSslRedirect, usePortInRedirects, preserveTrailingSlash, stages }) });
}

function invalidPath(
  ruleIndex: number,
  pathIndex: number,
  reason: InvalidPath["reason"],
  message: string,
  rawHost: string | null,
  h: HostResult,
  p: HTTPIngressPath,
  vp: PathResult,
): InvalidPath {
  return {
    valid: false,
    ruleIndex,
    pathIndex,
    reason,
    message,
    rawHost,
    host: h.ok ? h.host : null,
    declaredPathType: p.pathType,
    rawPath: p.path ?? "",
    checked: vp.ok ? { path: vp.path, type: vp.type } : null,
  };
}

/** Two specs that name the same Service port (resource backends are never merged). */
function sameBackend(a: IngressBackend, b: IngressBackend): boolean {
  if (a === b) return true;
  if (a.resource || b.resource || !a.service || !b.service) return false;
  return a.service.name === b.service.name && a.service.port?.number === b.service.port?.number && a.service.port?.name === b.service.port?.name;
}

/** Priority order, for every conflict rule: oldest first, then `namespace/name`. */
export function comparePlans(a: IngressPlan, b: IngressPlan): number {
  if (a.createdMs !== b.createdMs) return a.createdMs < b.createdMs ? -1 : 1;
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}
