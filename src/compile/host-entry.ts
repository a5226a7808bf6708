// The claim rule, per host key: a (type, path) of a host belongs to the first claimant in
// priority order (order.ts: oldest creationTimestamp, then `namespace/name`, as ingress-nginx
// lets the oldest Ingress win); a later claimant gets a PathConflict diagnostic naming the
// winner, a repeat within one Ingress a DuplicatePath. Claims never cross hosts, so a host
// entry depends only on its contributing plans, their backends and the host's TLS coverage,
// and the compiler reuses it while those are the same objects.
//
// Canary Ingresses claim nothing: each of their paths is attached to the main route with the
// same host, path and declared pathType (ingress-nginx's mergeAlternativeBackends matches
// `loc.Path == path.Path && *loc.PathType == *path.PathType`), first canary in priority order
// wins (balancer.lua uses `alternative_backends[1]`); a canary with no such main route is not
// served (mergeAlternativeBackends deletes the alternative upstream).
//
// Client certificates are a property of the host, as ingress-nginx sets ssl_verify_client on
// the whole server block (controller.go getBackendServers: the first Ingress of the host, in
// priority order, with a usable CA; nginx.tmpl SERVER): hostCertOf picks that policy and every
// route of the host, from every contributing Ingress, carries it (docs/design.md, "Client
// certificates"). With --host-policy-scope=namespace, only the Ingresses in the namespace of
// the host's first Ingress set it, and the other host-wide policies (host-scope.ts).
//
// Error pages are resolved here too, once per contributing plan (error-pages.ts): the Services
// they name are inputs of the host entry like its backends.
import { canaryStagePolicy, type CanaryAffinity } from "../annotations/canary.ts";
import { type CanaryRules } from "../policy/params.ts";
import type { Diagnostic } from "../model/diagnostic.ts";
import { compileRewriteTarget, type HostPath, needsRewrite, regexLocations } from "../regex/index.ts";
import { buildHost, viaOf } from "../table/build.ts";
import { assembleStages } from "./stages.ts";
import { compilePath } from "../table/regex.ts";
import { type RegexLocationSpec } from "../table/types.ts";
import { DEFAULT_BACKEND_SLOT, DEFAULT_ROUTE_OPTIONS } from "../table/routes.ts";
import type { HostRoutes, Route, RouteOptions } from "../table/types.ts";
import { backendReason, serviceRef, type BackendRef, type ResolvedBackend } from "./backends.ts";
import { resolveErrorPages, type ResolvedErrorPages } from "./error-pages.ts";
import type { HostCert } from "./access.ts";
import { hostOwner, ignoredHostPolicies, inHostScope, scopedPlans, withoutHostPolicies, type HostPolicyScope } from "./host-scope.ts";
import { compact, NONE } from "./empty.ts";
import { describeAge, tieNote } from "./order.ts";
import { comparePlans, type IngressPlan, type PathPlan } from "./plan.ts";
import type { CompileTrace } from "./trace.ts";

export interface HostEntry {
  readonly plans: readonly IngressPlan[];
  /** The served canary Ingresses with paths on this host, in priority order. */
  readonly canaries: readonly IngressPlan[];
  readonly tls: boolean;
  /** The Backend of every path plan of every contributing plan, in order, then of every attached canary, then of the error pages' refs. */
  readonly backends: readonly ResolvedBackend[];
  /** The refs of the attached canaries' Backends (after the path plans' in `backends`), in order. */
  readonly canaryRefs: readonly BackendRef[];
  /** The refs the error pages resolved (the tail of `backends`), in order. */
  readonly errorRefs: readonly BackendRef[];
  /** The implicit root's own backend (its first Ingress's spec.defaultBackend), after the error pages' in `backends`; null when none. */
  readonly rootRef: BackendRef | null;
  /** Snapshot keys (`namespace/name`) of the Services those backends read. */
  readonly services: readonly string[];
  readonly entry: HostRoutes;
  readonly diagnostics: readonly Diagnostic[];
  /** The host's client-certificate policy (hostCertOf), or null: the default route takes the hostless one. */
  readonly hostCert: HostCert | null;
  /** server-alias names of the host (aliases.ts), and the Ingress they come from. */
  readonly aliases: readonly string[];
  readonly aliasPlan: IngressPlan | null;
}

export type Resolve = (ref: BackendRef) => ResolvedBackend;

const samePlans = (a: readonly IngressPlan[], b: readonly IngressPlan[]) => a.length === b.length && a.every((p, i) => p === b[i]);

/** Would building this host again give `prev`? (Same plans and canaries in order, TLS coverage, Backends.) */
export function sameHostInputs(
  prev: HostEntry,
  hostKey: string,
  plans: readonly IngressPlan[],
  canaries: readonly IngressPlan[],
  isTls: boolean,
  resolve: Resolve,
): boolean {
  if (prev.tls !== isTls || !samePlans(prev.plans, plans) || !samePlans(prev.canaries, canaries)) return false;
  let k = 0;
  for (const p of plans) {
    for (const pp of p.hosts.get(hostKey) as readonly PathPlan[]) {
      if (resolve(pp.backend) !== prev.backends[k++]) return false;
    }
  }
  // Same plans give the same claims, so the same canaries attach with the same refs.
  for (const ref of prev.canaryRefs) if (resolve(ref) !== prev.backends[k++]) return false;
  // And the same error-page refs: they follow from the plans alone.
  for (const ref of prev.errorRefs) if (resolve(ref) !== prev.backends[k++]) return false;
  if (prev.rootRef !== null && resolve(prev.rootRef) !== prev.backends[k++]) return false;
  return true;
}

interface Claimed {
  readonly routes: Route[];
  readonly diagnostics: Diagnostic[];
  readonly backends: ResolvedBackend[];
  readonly canaryRefs: BackendRef[];
  readonly errorRefs: BackendRef[];
  readonly rootRef: BackendRef | null;
  readonly services: string[];
  /** The host's regex locations when it is in regex mode, else null. */
  readonly regex: RegexLocationSpec[] | null;
  readonly hostCert: HostCert | null;
  /** The implicit `/` location (implicitRoot), or null. */
  readonly root: Route | null;
}

/**
 * The client-certificate policy of a host, and the Ingress it comes from: among the plans and
 * canaries with paths on it (ingress-nginx's loop covers canary Ingresses too), in priority
 * order, the first whose CA cannot be used, since that error makes nginx's whole server answer
 * 403 whichever Ingress set a CA (`AuthTLSError` is checked before `CertificateAuth` in
 * nginx.tmpl); else the first with a usable CA; else null.
 */
export function hostCertOf(plans: readonly IngressPlan[], canaries: readonly IngressPlan[]): { readonly plan: IngressPlan; readonly cert: HostCert } | null {
  let error: IngressPlan | null = null;
  let ok: IngressPlan | null = null;
  // Both lists without concatenating them (this runs for every host of a compile).
  for (const list of [plans, canaries]) {
    for (const p of list) {
      const c = p.hostCert;
      if (c === null) continue;
      if (c.error) {
        if (error === null || comparePlans(p, error) < 0) error = p;
      } else if (ok === null || comparePlans(p, ok) < 0) ok = p;
    }
  }
  const winner = error ?? ok;
  return winner === null ? null : { plan: winner, cert: winner.hostCert as HostCert };
}

/**
 * `options` with the host's client-certificate stage in place of the Ingress's own (`own`,
 * the same object in its stages), first among the `denied` stages: nginx answers it at the
 * server level, before any location's refusal.
 */
export function withHostCert(options: RouteOptions, own: HostCert | null, host: HostCert): RouteOptions {
  if (own === host) return options;
  const rest = (options.stages ?? []).filter((p) => p !== own?.stage);
  return Object.freeze({ ...options, stages: assembleStages(host.stage, rest) });
}

const regexPolicy = (plan: IngressPlan) => plan.annotations.policies.regexRewrite;

/** Where a path plan is written in its Ingress, for diagnostics. */
const pathAt = (pp: PathPlan) => `spec.rules[${pp.ruleIndex}].http.paths[${pp.pathIndex}]`;

/**
 * Why the host is in ingress-nginx's regex mode (template.go enforceRegexModifier: any
 * location of the host, from any Ingress, with use-regex or a rewrite-target that differs from
 * its path), or null when it is not. The locations are ingress-nginx's: the first Ingress per
 * (path as written, type), in priority order, and the implicit "/" location, which carries the
 * annotations of the host's first Ingress unless an Ingress's Prefix "/" path replaces it
 * (controller.go createServers/getBackendServers).
 */
export function regexModeCause(hostKey: string, plans: readonly IngressPlan[]): { readonly plan: IngressPlan; readonly why: string } | null {
  // The locations seen: most hosts have a few, so a list scan until it grows (this runs for
  // every host of a compile).
  const seen: string[] = [];
  let seenSet: Set<string> | null = null;
  let root: IngressPlan | null = null;
  for (const plan of plans) {
    const p = regexPolicy(plan);
    for (const pp of plan.hosts.get(hostKey) as readonly PathPlan[]) {
      const k = pp.rawClaimKey;
      if (seenSet !== null ? seenSet.has(k) : seen.includes(k)) continue;
      if (seenSet !== null) seenSet.add(k);
      else if (seen.push(k) > 16) seenSet = new Set(seen);
      if (pp.rawClaimKey === "P/") root ??= plan;
      if (p.useRegex) return { plan, why: "sets use-regex" };
      if (needsRewrite({ path: pp.rawPath, rewriteTarget: p.rewriteTarget })) {
        return { plan, why: `sets rewrite-target ${JSON.stringify(p.rewriteTarget)} on path ${JSON.stringify(pp.rawPath)}` };
      }
    }
  }
  // The implicit "/" location (replaced by a Prefix "/" path, which was checked above).
  root ??= plans[0] ?? null;
  if (root !== null && needsRewrite({ path: "/", rewriteTarget: regexPolicy(root).rewriteTarget })) {
    return { plan: root, why: `sets rewrite-target ${JSON.stringify(regexPolicy(root).rewriteTarget)}, which ingress-nginx also gives the host's implicit "/" location` };
  }
  return null;
}

/**
 * The routes of one host key from its contributing plans (in priority order). With a trace,
 * the outcome of every path plan is recorded too (explain runs this for the hosts it asks
 * about). A host in regex mode (regexModeCause) serves every path as written, as a regular
 * expression; any other host serves the literal form of each path (compile/paths.ts).
 * `scope` says which Ingresses may set the host-wide policies (host-scope.ts).
 */
export function claimHost(
  hostKey: string,
  plans: readonly IngressPlan[],
  canaries: readonly IngressPlan[],
  isTls: boolean,
  resolve: Resolve,
  scope: HostPolicyScope,
  trace?: CompileTrace,
  proxySslLocationOnly = false,
): Claimed {
  const routes: Route[] = [];
  const diagnostics: Diagnostic[] = [];
  const backends: ResolvedBackend[] = [];
  const services: string[] = [];
  const cause = regexModeCause(hostKey, plans);
  const regexMode = cause !== null;
  const owner = hostOwner(plans, scope);
  const certOwner = hostCertOf(scopedPlans(plans, owner), scopedPlans(canaries, owner));
  const hostCert = certOwner?.cert ?? null;
  if (owner !== null) {
    for (const plan of [...plans, ...canaries]) {
      const d = inHostScope(plan, owner) ? null : ignoredHostPolicies(plan, hostKey, owner, canaries.includes(plan), !proxySslLocationOnly);
      if (d !== null) diagnostics.push(d);
    }
  }
  // proxy-ssl-*: ingress-nginx writes the first Ingress's settings whose Secret holds ca.crt
  // into the server block too (controller.go createServers, unless proxy-ssl-location-only;
  // nginx.tmpl SERVER), and a location without its own proxy_ssl_* inherits them.
  const sslOwner = proxySslLocationOnly ? null : (scopedPlans(plans, owner).find((p) => p.annotations.options.upstreamTls?.ca != null) ?? null);
  const hostSsl = sslOwner?.annotations.options.upstreamTls ?? null;
  const sslByPlan = new Map<IngressPlan, RouteOptions>();
  const optionsOf = (plan: IngressPlan): RouteOptions => {
    const o = ownOptionsOf(plan);
    if (hostSsl === null || o.upstreamTls != null || plan.annotations.policies.upstreamTls.state !== "none") return o;
    // The server-level proxy-ssl-* (a client certificate, a CA) is a host-wide policy of the
    // owner's namespace (host-scope.ts): with --host-policy-scope=namespace another namespace's
    // paths on the host do not present the owner's certificate. With `all` every path of the
    // host inherits it, as from ingress-nginx's server block (docs/design.md "TLS to the pods").
    if (!inHostScope(plan, owner)) return o;
    let withSsl = sslByPlan.get(plan);
    if (withSsl === undefined) sslByPlan.set(plan, (withSsl = Object.freeze({ ...o, upstreamTls: hostSsl })));
    return withSsl;
  };
  const optionsByPlan = new Map<IngressPlan, RouteOptions>();
  const ownOptionsOf = (plan: IngressPlan): RouteOptions => {
    const outside = !inHostScope(plan, owner);
    if (certOwner === null && !outside) return plan.annotations.options;
    let o = optionsByPlan.get(plan);
    if (o === undefined) {
      const base = outside ? withoutHostPolicies(plan.annotations.options, plan.hostCert) : plan.annotations.options;
      o = certOwner === null ? base : withHostCert(base, outside ? null : plan.hostCert, certOwner.cert);
      optionsByPlan.set(plan, o);
      if (certOwner !== null && plan !== certOwner.plan && (plan.hosts.get(hostKey) ?? []).length > 0) {
        const what = certOwner.cert.error ? `answer ${String(certOwner.cert.stage.params.status)}: its auth-tls-secret cannot be used` : "require the client certificates its auth-tls-* annotations ask for";
        const own = plan.hostCert === null ? "" : " (this Ingress's own auth-tls-* is not used on this host)";
        diagnostics.push({
          kind: "Ingress",
          namespace: plan.namespace,
          name: plan.name,
          reason: "HostClientCertificates",
          message: `every path of host ${hostKey} is covered by the client-certificate policy of ${describeAge(certOwner.plan.ingress)}, as ingress-nginx applies it to the whole server: these paths ${what}${own}`,
          severity: "warning",
        });
      }
    }
    return o;
  };
  /** The plan and path plan of each route, for the regex locations. */
  const sources: [IngressPlan, PathPlan][] = [];
  // Who claimed (type, path) first. Most hosts have a few paths: a list scan until it grows.
  const claimed: PathPlan[] = [];
  const owners: IngressPlan[] = [];
  const routeAt: number[] = [];
  let index: Map<string, number> | null = null;
  const keyOf = (pp: PathPlan) => (regexMode ? pp.rawClaimKey : pp.claimKey);
  // Error pages, resolved at a plan's first route and shared by its routes.
  const errorRefs: BackendRef[] = [];
  const errorBackends: ResolvedBackend[] = [];
  const pagesOf = new Map<IngressPlan, ResolvedErrorPages>();
  const errorPagesOf = (plan: IngressPlan): ResolvedErrorPages | null => {
    if (plan.errorPages === null) return null;
    let r = pagesOf.get(plan);
    if (r === undefined) {
      r = resolveErrorPages(plan.errorPages, plan.ref, resolve);
      pagesOf.set(plan, r);
      errorRefs.push(...r.refs);
      errorBackends.push(...r.resolved);
      for (const ref of r.refs) if (ref.kind === "service" && !services.includes(ref.key)) services.push(ref.key);
      diagnostics.push(...r.diagnostics);
    }
    return r;
  };
  for (const plan of plans) {
    const { namespace, name } = plan;
    for (const pp of plan.hosts.get(hostKey) as readonly PathPlan[]) {
      const rb = resolve(pp.backend);
      backends.push(rb);
      if (pp.backend.kind === "service" && !services.includes(pp.backend.key)) services.push(pp.backend.key);
      // Only diagnostics name the path: built when one is made, not for every path.
      if (!regexMode && pp.literalProblem !== null) {
        // Served as written only in regex mode; never as a literal it is not.
        const message = `${pathAt(pp)}: ${pp.literalProblem}; path skipped`;
        diagnostics.push({ kind: "Ingress", namespace, name, reason: "InvalidPath", message, severity: "error" });
        trace?.paths.set(pp, { kind: "invalid", message });
        continue;
      }
      const key = keyOf(pp);
      const shownPath = regexMode ? pp.rawPath : pp.path;
      let w = -1;
      if (index !== null) w = index.get(key) ?? -1;
      else {
        for (let i = 0; i < claimed.length; i++) {
          if (keyOf(claimed[i] as PathPlan) === key) {
            w = i;
            break;
          }
        }
      }
      if (w >= 0) {
        const winner = claimed[w] as PathPlan;
        const owner = owners[w] as IngressPlan;
        const where = `${pp.host ?? "(any host)"} ${pp.pathType} ${shownPath}`;
        if (owner === plan) {
          const first = `spec.rules[${winner.ruleIndex}].http.paths[${winner.pathIndex}]`;
          const message = `${pathAt(pp)}: ${where} is already declared at ${first}; the first one is used`;
          diagnostics.push({ kind: "Ingress", namespace, name, reason: "DuplicatePath", message, severity: "warning" });
          trace?.paths.set(pp, { kind: "duplicate", message });
        } else {
          const tie = tieNote(owner.ingress, plan.ingress);
          const message = `${where} is also declared by ${describeAge(owner.ingress)}, which wins over ${describeAge(plan.ingress)}${tie}`;
          diagnostics.push({ kind: "Ingress", namespace, name, reason: "PathConflict", message, severity: "warning" });
          trace?.paths.set(pp, { kind: "conflict", winner: owner.key, message });
        }
        continue;
      }
      if (index !== null) index.set(key, claimed.length);
      claimed.push(pp);
      owners.push(plan);
      routeAt.push(-1);
      if (index === null && claimed.length > 8) index = new Map(claimed.map((c, i) => [keyOf(c), i]));
      let route: Route = {
        ingress: plan.ref,
        host: pp.host,
        path: shownPath,
        pathType: pp.pathType,
        declaredPathType: pp.declaredPathType,
        source: "rule",
        ruleIndex: pp.ruleIndex,
        pathIndex: pp.pathIndex,
        backend: rb.backend,
        options: optionsOf(plan),
        tls: isTls,
        // Decided on the path as written, as ingress-nginx's template does (plan.ts, basic-auth.ts).
        ...(pp.authExempt ? { authExempt: true as const } : {}),
        ...(pp.tlsRedirectExempt ? { tlsRedirectExempt: true as const } : {}),
        ...(pp.sslPassthrough ? { sslPassthrough: true as const } : {}),
      };
      const pages = errorPagesOf(plan);
      if (pages !== null) {
        if (pages.errorPages !== undefined) route = { ...route, errorPages: pages.errorPages };
        // ingress-nginx switches only a location whose upstream has no endpoints.
        if (pages.fallback !== null && rb.backend.status !== "ok") route = { ...route, fallback: pages.fallback };
      }
      if (regexMode) {
        const refused = regexRefusal(pp, plan);
        if (refused !== null) {
          const message = `${pathAt(pp)}: ${refused.message}; path not served (host ${hostKey} is in regex mode: ${describeCause(cause, plan)})`;
          diagnostics.push({ kind: "Ingress", namespace, name, reason: refused.reason, message, severity: "error" });
          trace?.paths.set(pp, { kind: "invalid", message });
          continue;
        }
      }
      // A route whose backend cannot take traffic stays (it answers 503) and is reported.
      if (rb.backend.status !== "ok") {
        diagnostics.push({ kind: "Ingress", namespace, name, reason: backendReason(rb), message: rb.detail, severity: "warning" });
      }
      routeAt[claimed.length - 1] = routes.length;
      routes.push(route);
      sources.push([plan, pp]);
      trace?.paths.set(pp, { kind: "route", route });
    }
  }
  // Canaries, once every claim is settled. routeAt[i] is the index in `routes` of claimed[i]'s
  // route, or -1 when the claim serves nothing (a regex or rewrite refused in regex mode).
  const canaryRefs: BackendRef[] = [];
  for (const plan of canaries) {
    const { namespace, name } = plan;
    const policy = plan.annotations.policies.canary;
    for (const pp of plan.hosts.get(hostKey) as readonly PathPlan[]) {
      const where = `${pp.host ?? "(any host)"} ${pp.declaredPathType} ${regexMode ? pp.rawPath : pp.path}`;
      const unused = (reason: Diagnostic["reason"], message: string, severity: Diagnostic["severity"] = "warning") => {
        diagnostics.push({ kind: "Ingress", namespace, name, reason, message, severity });
        trace?.paths.set(pp, { kind: "canary-unused", message });
      };
      if (policy.kind !== "canary") {
        // Its InvalidAnnotation diagnostic says why; main is served unchanged.
        trace?.paths.set(pp, { kind: "canary-unused", message: "its canary annotations are invalid: the canary is not used" });
        continue;
      }
      if (!regexMode && pp.literalProblem !== null) {
        // The same path of a main Ingress is skipped on this host too: say why, not "no main".
        const at = `spec.rules[${pp.ruleIndex}].http.paths[${pp.pathIndex}]`;
        unused("InvalidPath", `${at}: ${pp.literalProblem}; the canary is not used for this path`, "error");
        continue;
      }
      // Outside regex mode the literal claim key (a path and its routed form are one route);
      // in regex mode the path as written, as mergeAlternativeBackends compares `loc.Path`
      // with the canary's `path.Path` and the locations are the paths as written.
      const key = keyOf(pp);
      let w = -1;
      if (index !== null) w = index.get(key) ?? -1;
      else w = claimed.findIndex((c) => keyOf(c) === key);
      if (w < 0 || (claimed[w] as PathPlan).declaredPathType !== pp.declaredPathType) {
        unused("CanaryWithoutMain", `canary for ${where}: no Ingress that is not a canary declares that host, path and pathType; the canary is not served`);
        continue;
      }
      const r = routeAt[w] as number;
      const owner = owners[w] as IngressPlan;
      if (r < 0) {
        unused("CanaryWithoutMain", `canary for ${where}: ${owner.key} declares it, but that path is not served (its diagnostic says why); the canary is not served`);
        continue;
      }
      const main = routes[r] as Route;
      if (main.canary !== undefined) {
        const first = `${main.canary.ingress.namespace}/${main.canary.ingress.name}`;
        unused("CanaryConflict", `canary for ${where}: ${first} is that route's canary already (one canary per host and path, the first in priority order); this one is not used`);
        continue;
      }
      if (pp.backend.kind !== "service") {
        unused("InvalidBackend", `canary for ${where}: a canary's backend must be a Service; the canary is not used`);
        continue;
      }
      // Only the backend comes from the canary Ingress (mergeAlternativeBackends merges the
      // upstream; the location, with its backend-protocol and rewrite-target, is main's).
      const b = pp.backend;
      const scheme = owner.annotations.scheme;
      // Its upstream is the canary Ingress's own, service-upstream included (createUpstreams).
      const ref = b.scheme === scheme ? b : serviceRef(b.namespace, b.name, b.port, scheme, b.clusterIp);
      const rb = resolve(ref);
      backends.push(rb);
      canaryRefs.push(ref);
      if (!services.includes(b.key)) services.push(b.key);
      if (rb.backend.status !== "ok") {
        diagnostics.push({ kind: "Ingress", namespace, name, reason: backendReason(rb), message: rb.detail, severity: "warning" });
      }
      // Main's cookie affinity, and the canary Ingress's affinity-canary-behavior, decide the
      // check before the rules (controller.go mergeAlternativeBackend copies main's affinity to
      // the canary unless the canary says `legacy`).
      const mainCookie = owner.annotations.policies.affinity.cookie;
      const affinity = mainCookie === null ? null : { cookie: mainCookie.name, sticky: plan.annotations.policies.affinity.canaryBehavior === "sticky" };
      const route: Route = { ...main, canary: { ingress: plan.ref, backend: rb.backend }, options: withCanary(main.options, policy.rules, affinity) };
      // Same index: the regex locations below refer to routes by index.
      routes[r] = route;
      trace?.paths.set(claimed[w] as PathPlan, { kind: "route", route });
      trace?.paths.set(pp, { kind: "canary", main: owner.key, route });
    }
  }
  const regex = regexMode ? regexSpecs(hostKey, plans, sources, diagnostics) : null;
  // Reached when no route takes the path: outside regex mode a Prefix "/" route takes every
  // path; in regex mode, when the locations hold the implicit one (regexSpecs).
  const reachable = regex === null ? !routes.some((r) => r.pathType === "Prefix" && r.path === "/") : regex.some((l) => l.route < 0);
  const implicit = reachable ? implicitRoot(hostKey, plans, isTls, optionsOf, errorPagesOf, resolve) : null;
  const root = implicit?.route ?? null;
  const rootRef = implicit?.ref ?? null;
  // After the root: it may resolve the first Ingress's error pages.
  backends.push(...errorBackends);
  if (implicit !== null && implicit.ref !== null && implicit.resolved !== null) {
    backends.push(implicit.resolved);
    if (implicit.ref.kind === "service" && !services.includes(implicit.ref.key)) services.push(implicit.ref.key);
  }
  if (regex === null) return { routes, diagnostics, backends, canaryRefs, errorRefs, rootRef, services, regex: null, hostCert, root };
  // Ingresses on the host whose own paths do not ask for regex mode are matched that way too
  // (the blog post's second surprise), or only through the implicit "/" location: say so.
  for (const plan of plans) {
    if (triggers(plan, hostKey)) continue;
    diagnostics.push({
      kind: "Ingress",
      namespace: plan.namespace,
      name: plan.name,
      reason: "RegexModeHost",
      message: `host ${hostKey} is in regex mode because ${describeCause(cause as NonNullable<typeof cause>, plan)}: this Ingress's paths there are matched as ingress-nginx does it, as case-insensitive regular expressions anchored at the start only, longest first, first match wins`,
      severity: "warning",
    });
  }
  return { routes, diagnostics, backends, canaryRefs, errorRefs, rootRef, services, regex, hostCert, root };
}

/**
 * The host's implicit `/` location (docs/design.md "The implicit root location"). ingress-nginx
 * gives every host a location `/` before any path is added (controller.go createServers:
 * `IsDefBackend: true`, `Backend:` the default upstream), with locationApplyAnnotations of the
 * host's first Ingress in priority order (store.go ListIngresses sorts them; canary Ingresses
 * are skipped); only a Prefix `/` path replaces it (getBackendServers). So a path no route of
 * the host matches runs that Ingress's policies (authentication, redirects, source ranges,
 * limits, the HTTPS redirect of a TLS host, body size and timeouts) and then goes to the
 * default backend. Built only when it would answer differently from the default route: the
 * first Ingress's options are not the defaults, or the HTTPS redirect applies. Rules without a host have none: they are nginx's catch-all
 * server, whose `/` is the default backend's own (createServers skips `_`, set up before).
 * Before error pages and fallback are collected: `errorPagesOf` adds the first Ingress's.
 */
function implicitRoot(
  hostKey: string,
  plans: readonly IngressPlan[],
  isTls: boolean,
  optionsOf: (plan: IngressPlan) => RouteOptions,
  errorPagesOf: (plan: IngressPlan) => ResolvedErrorPages | null,
  resolve: Resolve,
): { route: Route; ref: BackendRef | null; resolved: ResolvedBackend | null } | null {
  const first = plans[0];
  if (hostKey === "*" || first === undefined) return null;
  // createServers: `un` is the Ingress's own spec.defaultBackend (a Service) when it has one.
  const own = first.defaultBackend?.ok === true && first.defaultBackend.ref.kind === "service" ? first.defaultBackend.ref : null;
  const options = optionsOf(first);
  // Its body size, timeouts and retries count too (locationApplyAnnotations copies Proxy): a
  // POST over the first Ingress's proxy-body-size gets 413 on any path of the host.
  const plain = options.stages === null && (Object.keys(DEFAULT_ROUTE_OPTIONS) as (keyof RouteOptions)[]).every((k) => options[k] === DEFAULT_ROUTE_OPTIONS[k]);
  if (plain && !(isTls && options.sslRedirect) && own === null) return null;
  const resolved = own === null ? null : resolve(own);
  let route: Route = {
    ingress: first.ref,
    host: hostKey,
    path: "/",
    pathType: "Prefix",
    declaredPathType: "Prefix",
    source: "implicitRoot",
    ruleIndex: -1,
    pathIndex: -1,
    backend: resolved?.backend ?? DEFAULT_BACKEND_SLOT,
    options,
    tls: isTls,
  };
  const pages = errorPagesOf(first);
  if (pages !== null && pages.errorPages !== undefined) route = { ...route, errorPages: pages.errorPages };
  return { route, ref: own, resolved };
}

/**
 * Main's options with the canary's `backend`-stage policy added (main's own policies stay).
 * It goes first in its stage, before main's affinity, hashing or EWMA step: ingress-nginx
 * chooses the balancer (main's or the canary's) before that balancer picks a pod
 * (balancer.lua get_balancer, then balance).
 */
function withCanary(options: RouteOptions, rules: CanaryRules, affinity: CanaryAffinity | null): RouteOptions {
  return Object.freeze({ ...options, stages: assembleStages(canaryStagePolicy(rules, affinity), options.stages) });
}

function describeCause(cause: { readonly plan: IngressPlan; readonly why: string }, self: IngressPlan): string {
  return `${cause.plan === self ? "this Ingress" : `Ingress ${cause.plan.key}`} ${cause.why}`;
}

/** Whether this plan alone would put the host in regex mode. */
function triggers(plan: IngressPlan, hostKey: string): boolean {
  const p = regexPolicy(plan);
  return p.useRegex || (plan.hosts.get(hostKey) ?? []).some((pp) => needsRewrite({ path: pp.rawPath, rewriteTarget: p.rewriteTarget }));
}

/** Why a claimed path cannot be served in regex mode: its regex, or its rewrite-target for that regex. */
function regexRefusal(pp: PathPlan, plan: IngressPlan): { reason: "InvalidPath" | "InvalidAnnotation"; message: string } | null {
  const r = compilePath(pp.rawPath);
  if (!r.ok) return { reason: "InvalidPath", message: `path ${JSON.stringify(pp.rawPath)} ${r.reason}` };
  const target = regexPolicy(plan).rewriteTarget;
  if (!needsRewrite({ path: pp.rawPath, rewriteTarget: target })) return null;
  const rw = compileRewriteTarget(target, r.re);
  if (!rw.ok) return { reason: "InvalidAnnotation", message: `rewrite-target ${JSON.stringify(target)} for path ${JSON.stringify(pp.rawPath)} ${rw.reason}` };
  return null;
}

/**
 * The host's locations in ingress-nginx's order (src/regex/: expandLocations, orderLocations):
 * the implicit "/" location (the default route) first unless a Prefix "/" route replaces it,
 * then the routes in claim order. A derived location that does not compile (a slash added
 * past the length bound) is left out with a diagnostic; its route keeps its other locations.
 */
function regexSpecs(hostKey: string, plans: readonly IngressPlan[], sources: readonly [IngressPlan, PathPlan][], diagnostics: Diagnostic[]): RegexLocationSpec[] {
  const paths: HostPath<number>[] = [];
  const root = sources.findIndex(([, pp]) => pp.rawClaimKey === "P/");
  if (root < 0) paths.push({ path: "/", pathType: "Prefix", useRegex: false, rewriteTarget: "", ref: -1 });
  const add = (i: number) => {
    const [plan, pp] = sources[i] as [IngressPlan, PathPlan];
    const p = regexPolicy(plan);
    paths.push({ path: pp.rawPath, pathType: pp.pathType, useRegex: p.useRegex, rewriteTarget: p.rewriteTarget, ref: i });
  };
  if (root >= 0) add(root);
  for (let i = 0; i < sources.length; i++) if (i !== root) add(i);
  const specs: RegexLocationSpec[] = [];
  for (const loc of regexLocations(paths)) {
    const i = loc.ref;
    const origin = i < 0 ? "implicit-root" : loc.origin;
    const source = i < 0 ? undefined : sources[i];
    const r = compilePath(loc.path);
    if (!r.ok) {
      const [plan, pp] = source ?? [plans[0] as IngressPlan, null];
      const at = pp === null ? "" : `spec.rules[${pp.ruleIndex}].http.paths[${pp.pathIndex}]: `;
      const message = `${at}location ${JSON.stringify(loc.path)} (${origin} for host ${hostKey}) ${r.reason}; that location is not served`;
      diagnostics.push({ kind: "Ingress", namespace: plan.namespace, name: plan.name, reason: "InvalidPath", message, severity: "error" });
      continue;
    }
    const captures = source !== undefined && origin === "as-written" && needsRewrite({ path: source[1].rawPath, rewriteTarget: regexPolicy(source[0]).rewriteTarget });
    specs.push({ path: loc.path, origin, route: i, captures });
  }
  return specs;
}

/**
 * The aliases of a host: ingress-nginx gives a server the server-alias of the first Ingress
 * (in priority order) of that host that sets one, and warns about the others
 * (controller.go createServers, "Aliases already configured for server"). Rules without a
 * host have none: their catch-all already takes every name no host claims.
 */
function hostAliases(hostKey: string, plans: readonly IngressPlan[], diagnostics: Diagnostic[]): { aliases: readonly string[]; aliasPlan: IngressPlan | null } {
  if (hostKey === "*") return { aliases: NONE, aliasPlan: null };
  let first: IngressPlan | null = null;
  for (const plan of plans) {
    if (plan.aliases.length === 0) continue;
    if (first === null) {
      first = plan;
      continue;
    }
    const message = `server-alias is ignored for host ${hostKey}: Ingress ${describeAge(first.ingress)} sets the aliases of that host, and only the first Ingress of a host that sets them counts`;
    diagnostics.push({ kind: "Ingress", namespace: plan.namespace, name: plan.name, reason: "AliasConflict", message, severity: "warning" });
  }
  // first is a plan whose aliases are not empty.
  return { aliases: first?.aliases ?? NONE, aliasPlan: first };
}

/** One host key's entry of the table, with what the compiler needs to know when to rebuild it. */
export function buildHostEntry(
  hostKey: string,
  plans: readonly IngressPlan[],
  canaries: readonly IngressPlan[],
  isTls: boolean,
  resolve: Resolve,
  scope: HostPolicyScope,
  proxySslLocationOnly = false,
): HostEntry {
  const { routes, diagnostics, backends, canaryRefs, errorRefs, rootRef, services, regex, hostCert, root } = claimHost(hostKey, plans, canaries, isTls, resolve, scope, undefined, proxySslLocationOnly);
  const { aliases, aliasPlan } = hostAliases(hostKey, scopedPlans(plans, hostOwner(plans, scope)), diagnostics);
  // Copies of the plans: the contributor lists are updated in place by later compiles.
  const entry = buildHost(hostKey, routes, viaOf(hostKey), regex, root);
  // The lists kept for the entry's life share one empty list when they are empty (empty.ts).
  return {
    plans: plans.slice(),
    canaries: canaries.length === 0 ? NONE : canaries.slice(),
    tls: isTls,
    backends,
    canaryRefs: compact(canaryRefs),
    errorRefs: compact(errorRefs),
    rootRef,
    services,
    entry,
    diagnostics: compact(diagnostics),
    hostCert,
    aliases,
    aliasPlan,
  };
}
