// An HTTPRoute or GRPCRoute rule's ExtensionRef to Portico's IngressNginxPolicy
// (model/portico-policy.ts; docs/design.md "Gateway API", "IngressNginxPolicy"): the policy's
// annotations are read by the same families as an Ingress's (compile/annotations.ts
// parseAnnotations, compile/access.ts resolveAccess for source-range flags and basic-auth
// Secrets in the route's namespace, compile/auth-headers.ts for the auth-proxy-set-headers
// ConfigMap there), so the rule refuses, authenticates, limits and times out
// as the Ingress did. What a route rule cannot apply fails closed: the rule answers 500.
//
// HTTPRouteFilter (apis/v1 httproute_types.go): "If a reference to a custom filter type cannot
// be resolved, the filter MUST NOT be skipped. Instead, requests that would have been processed
// by that filter MUST receive a HTTP error response." A policy that does not exist, or another
// kind, is a reference that cannot be resolved: ResolvedRefs False (BackendNotFound: "a
// reference to a resource that does not exist"; InvalidKind: "an unknown or unsupported Group
// and/or Kind", RouteConditionReason in apis/v1 shared_types.go) and 500 for the rule.
import { FAMILIES } from "../../annotations/registry.ts";
import { namesOf, type AnnotationSpec } from "../../annotations/spec.ts";
import { FROM_TO_WWW_REDIRECT } from "../../annotations/redirects.ts";
import type { IngressNginxPolicy } from "../../model/portico-policy.ts";
import { PORTICO_GROUP } from "../../model/portico-policy.ts";
import type { Snapshot } from "../../store/types.ts";
import type { DiagnosticReason } from "../../model/diagnostic.ts";
import type { BackendScheme, RouteOptions } from "../../table/types.ts";
import { resolveAccess, satisfyAny, type AccessFlags } from "../access.ts";
import { resolveAuthHeaders } from "../auth-headers.ts";
import { resolveCustomHeaders } from "../custom-headers.ts";
import { parseAnnotations, type ParsedAnnotations } from "../annotations.ts";

export const POLICY_KIND = "IngressNginxPolicy";

/** What a rule takes from its IngressNginxPolicy. */
export interface RuleExtension {
  /** `namespace/name` of the policy. */
  readonly key: string;
  /** The route options the annotations set (body size, timeouts, retries, buffering) and their stages. */
  readonly options: RouteOptions;
  /** backend-protocol when it names another scheme than plain HTTP (HTTPS, GRPC, GRPCS), else null. */
  readonly scheme: BackendScheme | null;
  /**
   * What the families and the access step said of the annotations (a value replaced by its
   * default, a basic-auth Secret that cannot be read...): the route's diagnostics, as an
   * Ingress's are its own.
   */
  readonly problems: readonly ExtensionProblem[];
}

export interface ExtensionProblem {
  readonly reason: DiagnosticReason;
  readonly message: string;
  readonly severity: "warning" | "error";
}

export type ExtensionResult =
  | { readonly ok: true; readonly extension: RuleExtension }
  /** The reference cannot be resolved: ResolvedRefs False with `reason`, the rule answers 500. */
  | { readonly ok: false; readonly unresolved: true; readonly reason: "InvalidKind" | "BackendNotFound"; readonly message: string }
  /** The policy holds what a route rule cannot apply: the rule answers 500 (Accepted False, UnsupportedValue). */
  | { readonly ok: false; readonly unresolved: false; readonly message: string };

/**
 * Annotations that act on the server block (the host or its TLS) or on how an Ingress's host
 * is assembled, which one rule of a route cannot do: the HTTPS redirect and HSTS (a Gateway
 * listener serves what it declares), server-alias and from-to-www-redirect (other hostnames),
 * auth-tls-* (the TLS handshake of the whole host), ssl-passthrough, canary (a route splits
 * traffic with backendRef weights), service-upstream and upstream-vhost with the other host
 * settings, custom-http-errors and default-backend (the host's error pages, resolved with the
 * Ingress's backends), and the regex rewrite-target (its captures come from the host's regex
 * mode: a route says URLRewrite).
 */
const NOT_FOR_A_RULE: ReadonlyMap<string, string> = (() => {
  const out = new Map<string, string>();
  const add = (specs: readonly AnnotationSpec[], why: string) => {
    for (const s of specs) for (const n of namesOf(s)) out.set(n, why);
  };
  add(FAMILIES.tlsRedirect.annotations, "the HTTPS redirect and HSTS belong to the listener, not a rule");
  add(FAMILIES.hosts.annotations, "it acts on the host or its backend resolution, not one rule");
  add([FROM_TO_WWW_REDIRECT], "it serves another hostname");
  add(FAMILIES.clientCerts.annotations, "client certificates are asked for in the TLS handshake of the whole host");
  add(FAMILIES.sslPassthrough.annotations, "TLS passthrough takes the whole connection");
  add(FAMILIES.canary.annotations, "a route splits traffic with backendRef weights");
  add(FAMILIES.errorPages.annotations, "error pages are the host's, resolved with the Ingress's backends");
  add(FAMILIES.regexRewrite.annotations, "a regex rewrite takes its captures from the host's regex mode (URLRewrite is a route's rewrite)");
  return out;
})();

/** No --allowlist-source-range / --denylist-source-range (a caller without the compile config). */
export const NO_FLAGS: AccessFlags = Object.freeze({ allowlistSourceRange: [], denylistSourceRange: [] });

const parsedOf = new WeakMap<IngressNginxPolicy, ParsedAnnotations>();

/** The ExtensionRef filter `ref` of a rule of a route in `routeNs`, resolved. */
export function resolveExtension(snapshot: Snapshot, routeNs: string, ref: { readonly group: string; readonly kind: string; readonly name: string }, flags: AccessFlags): ExtensionResult {
  if (ref.group !== PORTICO_GROUP || ref.kind !== POLICY_KIND) {
    return { ok: false, unresolved: true, reason: "InvalidKind", message: `ExtensionRef ${ref.group}/${ref.kind} ${ref.name}: only ${PORTICO_GROUP}/${POLICY_KIND} is supported` };
  }
  const key = `${routeNs}/${ref.name}`;
  const policy = snapshot.ingressNginxPolicies?.get(key);
  if (policy === undefined) return { ok: false, unresolved: true, reason: "BackendNotFound", message: `ExtensionRef ${POLICY_KIND} ${key} not found` };
  const annotations = policy.spec.annotations ?? {};
  for (const name of Object.keys(annotations).sort()) {
    const why = NOT_FOR_A_RULE.get(name);
    if (why !== undefined && annotations[name] !== "") return { ok: false, unresolved: false, message: `${POLICY_KIND} ${key}: annotation ${name} cannot be applied to a route rule (${why})` };
  }
  let parsed = parsedOf.get(policy);
  if (parsed === undefined) parsedOf.set(policy, (parsed = parseAnnotations(annotations)));
  // Allowlists with the global flags, and basic-auth users from a Secret in the route's
  // namespace (one in another namespace is refused, as for an Ingress: compile/access.ts).
  // The auth-proxy-set-headers ConfigMap too, in the route's namespace (compile/auth-headers.ts).
  const headers = resolveAuthHeaders(parsed, { metadata: { name: ref.name, namespace: routeNs } }, snapshot.configMaps);
  const custom = resolveCustomHeaders(headers.annotations, { metadata: { name: ref.name, namespace: routeNs } }, flags.globalAllowedResponseHeaders ?? [], snapshot.configMaps);
  const resolved = resolveAccess(custom.annotations, { metadata: { name: ref.name, namespace: routeNs } }, snapshot.secrets, flags);
  const access = satisfyAny(resolved.annotations);
  const o = access.options;
  const problems: ExtensionProblem[] = [
    ...parsed.problems.map((p): ExtensionProblem => ({ reason: "InvalidAnnotation", message: `${POLICY_KIND} ${key}: ${p}`, severity: "warning" })),
    ...[...headers.diagnostics, ...custom.diagnostics, ...resolved.diagnostics].map((d): ExtensionProblem => ({ reason: d.reason, message: `${POLICY_KIND} ${key}: ${d.message}`, severity: d.severity ?? "warning" })),
  ];
  const options: RouteOptions = Object.freeze({
    ...o,
    // A listener serves what it declares: no HTTPS redirect, no HSTS (docs/design.md "Gateway API").
    sslRedirect: false,
    forceSslRedirect: false,
    hsts: false,
    fromToWwwRedirect: false,
  });
  return { ok: true, extension: { key, options, scheme: access.scheme === "http" ? null : access.scheme, problems } };
}

/**
 * A rule's options with its extension's: the policy's settings and stages, then the rule's own
 * HTTPRouteTimeouts over the policy's response timeout and retry window when it has them.
 */
export function withExtension(rule: RouteOptions, ext: RuleExtension | null, ruleTimeouts: boolean): RouteOptions {
  if (ext === null) return rule;
  if (!ruleTimeouts) return ext.options;
  return Object.freeze({ ...ext.options, responseTimeoutMs: rule.responseTimeoutMs, retry: rule.retry });
}
