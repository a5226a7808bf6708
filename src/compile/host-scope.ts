// Host-wide policies and which Ingresses may set them (docs/design.md, "Host-wide policies").
//
// ingress-nginx writes one nginx server block per host and merges into it the server-level
// annotations of every Ingress of that host, whatever their namespaces (controller.go
// createServers and getBackendServers: the first Ingress in priority order with a CA sets
// ssl_verify_client, and any Ingress's unusable CA sets AuthTLSError, which nginx.tmpl answers
// with 403 for the whole server; the first Ingress with server-alias sets the aliases; the
// app-root `if` and the from-to-www-redirect server come from any location of the host; the
// first Ingress with ssl-ciphers sets the server's ssl_ciphers).
// Portico does the same by default (`--host-policy-scope=all`). With `namespace`, only the
// Ingresses in the namespace of the host's oldest Ingress (priority order: creationTimestamp,
// then namespace/name) set them: a tenant who may create Ingresses only in their own namespace
// can then no longer make another tenant's host answer 403, redirect its `/`, or give it names.
// The other Ingresses' host-wide annotations are ignored on that host, each with a
// HostPolicyIgnored diagnostic; their paths are served with the owner's policies.
import { AUTH_TLS_ERROR_PAGE, AUTH_TLS_PASS_CERTIFICATE, AUTH_TLS_SECRET, AUTH_TLS_VERIFY_CLIENT, AUTH_TLS_VERIFY_DEPTH } from "../annotations/client-certs.ts";
import { SERVER_ALIAS } from "../annotations/hosts.ts";
import { PROXY_SSL_SECRET } from "../annotations/upstream-tls.ts";
import { APP_ROOT, FROM_TO_WWW_REDIRECT } from "../annotations/redirects.ts";
import { SSL_CIPHERS } from "../annotations/ssl-ciphers.ts";
import type { AnnotationSpec } from "../annotations/spec.ts";
import type { Diagnostic } from "../model/diagnostic.ts";
import { assembleStages } from "./stages.ts";
import type { RouteOptions } from "../table/types.ts";
import type { HostCert } from "./access.ts";
import type { CompileConfig } from "./config.ts";
import { describeAge } from "./order.ts";
import type { IngressPlan } from "./plan.ts";
import * as K from "../kinds/index.ts";

export type HostPolicyScope = CompileConfig["hostPolicyScope"];

const CLIENT_CERT_SPECS = [AUTH_TLS_SECRET, AUTH_TLS_VERIFY_CLIENT, AUTH_TLS_VERIFY_DEPTH, AUTH_TLS_ERROR_PAGE, AUTH_TLS_PASS_CERTIFICATE];

/**
 * The Ingress whose namespace owns the host's host-wide policies: the first of `plans` (the
 * host's contributors, in priority order), or null when every Ingress of the host may set
 * them (`all`, or no contributor).
 */
export function hostOwner(plans: readonly IngressPlan[], scope: HostPolicyScope): IngressPlan | null {
  return scope === "namespace" ? (plans[0] ?? null) : null;
}

/** May `plan` set host-wide policies on a host owned by `owner` (hostOwner)? */
export function inHostScope(plan: IngressPlan, owner: IngressPlan | null): boolean {
  return owner === null || plan.namespace === owner.namespace;
}

/** `plans` without those outside the host's scope (the same array when none is). */
export function scopedPlans(plans: readonly IngressPlan[], owner: IngressPlan | null): readonly IngressPlan[] {
  return owner === null || plans.every((p) => p.namespace === owner.namespace) ? plans : plans.filter((p) => p.namespace === owner.namespace);
}

/** Does the plan carry a host-wide policy in its route options (app-root, from-to-www-redirect)? */
function routeHostPolicies(options: RouteOptions): { appRoot: boolean; www: boolean } {
  return { appRoot: options.stages?.some((s) => s.kind === K.APP_ROOT.id) ?? false, www: options.fromToWwwRedirect };
}

/** The name the Ingress writes the annotation under (the first of its names it sets), or null. */
function writtenName(plan: IngressPlan, spec: AnnotationSpec): string | null {
  const set = plan.ingress.metadata.annotations ?? {};
  for (const n of [spec.portico, ...spec.nginx]) if (n !== null && set[n] !== undefined) return n;
  return null;
}

/**
 * The host-wide annotations `plan` applies to its hosts, as written on the Ingress. A canary
 * Ingress's routes take main's options, so only its client certificates reach the host
 * (ingress-nginx's loop over the host's Ingresses covers canaries too).
 */
export function hostWideAnnotations(plan: IngressPlan, canary = false, proxySslServerWide = false): string[] {
  const out: string[] = [];
  const add = (spec: AnnotationSpec) => {
    const n = writtenName(plan, spec);
    if (n !== null) out.push(n);
  };
  // A client-certificate configuration parse.ts refused is a 503 of the Ingress's own paths
  // only (not a host policy): only one that offers the host a policy or a 403 counts.
  if (plan.hostCert !== null) for (const spec of CLIENT_CERT_SPECS) add(spec);
  if (canary) return out;
  const r = routeHostPolicies(plan.annotations.options);
  if (r.appRoot) add(APP_ROOT);
  if (r.www) add(FROM_TO_WWW_REDIRECT);
  if (plan.aliases.length > 0) add(SERVER_ALIAS);
  // proxy-ssl-* with a CA is written into the server block too (controller.go createServers)
  // unless proxy-ssl-location-only: only that server-wide part is a host-wide policy; the
  // Ingress's own paths keep their proxy-ssl-*.
  if (proxySslServerWide && plan.annotations.options.upstreamTls?.ca != null) {
    const n = writtenName(plan, PROXY_SSL_SECRET);
    if (n !== null) out.push(`${n} (for the host's other paths; its own keep it)`);
  }
  // The host's cipher list (host-tls.ts takes it from the owner's namespace only).
  if (plan.annotations.policies.sslCiphers.ciphers !== null) add(SSL_CIPHERS);
  return out;
}

/**
 * The options of an Ingress outside the host's scope: without its app-root, its
 * from-to-www-redirect and its own client-certificate stage (`own`, found by identity, as
 * host-entry.ts withHostCert does). The host's own policy is added afterwards by the caller.
 */
export function withoutHostPolicies(options: RouteOptions, own: HostCert | null): RouteOptions {
  const r = routeHostPolicies(options);
  const hasOwn = own !== null && (options.stages?.includes(own.stage) ?? false);
  if (!r.appRoot && !r.www && !hasOwn) return options;
  const stages = (options.stages ?? []).filter((s) => s.kind !== K.APP_ROOT.id && s !== own?.stage);
  return Object.freeze({ ...options, fromToWwwRedirect: false, stages: assembleStages(stages) });
}

/** The HostPolicyIgnored diagnostic of `plan` on `hostKey`, or null when it sets no host-wide annotation. */
export function ignoredHostPolicies(plan: IngressPlan, hostKey: string, owner: IngressPlan, canary: boolean, proxySslServerWide = false): Diagnostic | null {
  const names = hostWideAnnotations(plan, canary, proxySslServerWide);
  return names.length === 0 ? null : ignoredDiagnostic(plan, names, hostKey, owner);
}

/** The HostPolicyIgnored diagnostic of `plan`: `names` (what it wrote) are not applied to `hostKey`, owned by `owner`'s namespace. */
export function ignoredDiagnostic(plan: IngressPlan, names: readonly string[], hostKey: string, owner: IngressPlan): Diagnostic {
  const host = hostKey === "*" ? "the rules without a host" : `host ${hostKey}`;
  const message =
    `${names.join(", ")} ${names.length === 1 ? "is" : "are"} ignored on ${host}: with --host-policy-scope=namespace only Ingresses in namespace ` +
    `${owner.namespace}, that of the host's oldest Ingress ${describeAge(owner.ingress)}, set its host-wide policies`;
  return { kind: "Ingress", namespace: plan.namespace, name: plan.name, reason: "HostPolicyIgnored", message, severity: "warning" };
}
