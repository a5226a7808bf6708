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
import { canaryStagePolicy, type CanaryRules } from "../annotations/canary.ts";
import type { Diagnostic } from "../model/diagnostic.ts";
import { buildHost, viaOf } from "../table/build.ts";
import { orderStages } from "../table/policy.ts";
import type { HostRoutes, Route, RouteOptions } from "../table/types.ts";
import { backendReason, serviceRef, type BackendRef, type ResolvedBackend } from "./backends.ts";
import { describeAge, tieNote } from "./order.ts";
import type { IngressPlan, PathPlan } from "./plan.ts";
import type { CompileTrace } from "./trace.ts";

export interface HostEntry {
  readonly plans: readonly IngressPlan[];
  /** The served canary Ingresses with paths on this host, in priority order. */
  readonly canaries: readonly IngressPlan[];
  readonly tls: boolean;
  /** The Backend of every path plan of every contributing plan, in order, then of every attached canary. */
  readonly backends: readonly ResolvedBackend[];
  /** The refs of the attached canaries' Backends (the tail of `backends`), in order. */
  readonly canaryRefs: readonly BackendRef[];
  /** Snapshot keys (`namespace/name`) of the Services those backends read. */
  readonly services: readonly string[];
  readonly entry: HostRoutes;
  readonly diagnostics: readonly Diagnostic[];
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
  return true;
}

interface Claimed {
  readonly routes: Route[];
  readonly diagnostics: Diagnostic[];
  readonly backends: ResolvedBackend[];
  readonly canaryRefs: BackendRef[];
  readonly services: string[];
}

/**
 * The routes of one host key from its contributing plans (in priority order). With a trace,
 * the outcome of every path plan is recorded too (explain runs this for the hosts it asks about).
 */
export function claimHost(
  hostKey: string,
  plans: readonly IngressPlan[],
  canaries: readonly IngressPlan[],
  isTls: boolean,
  resolve: Resolve,
  trace?: CompileTrace,
): Claimed {
  const routes: Route[] = [];
  const diagnostics: Diagnostic[] = [];
  const backends: ResolvedBackend[] = [];
  const services: string[] = [];
  // Who claimed (type, path) first. Most hosts have a few paths: a list scan until it grows.
  const claimed: PathPlan[] = [];
  const owners: IngressPlan[] = [];
  let index: Map<string, number> | null = null;
  for (const plan of plans) {
    const { namespace, name } = plan;
    for (const pp of plan.hosts.get(hostKey) as readonly PathPlan[]) {
      const rb = resolve(pp.backend);
      backends.push(rb);
      if (pp.backend.kind === "service" && !services.includes(pp.backend.key)) services.push(pp.backend.key);
      let w = -1;
      if (index !== null) w = index.get(pp.claimKey) ?? -1;
      else {
        for (let i = 0; i < claimed.length; i++) {
          if ((claimed[i] as PathPlan).claimKey === pp.claimKey) {
            w = i;
            break;
          }
        }
      }
      if (w >= 0) {
        const winner = claimed[w] as PathPlan;
        const owner = owners[w] as IngressPlan;
        const where = `${pp.host ?? "(any host)"} ${pp.pathType} ${pp.path}`;
        if (owner === plan) {
          const at = `spec.rules[${winner.ruleIndex}].http.paths[${winner.pathIndex}]`;
          const message = `spec.rules[${pp.ruleIndex}].http.paths[${pp.pathIndex}]: ${where} is already declared at ${at}; the first one is used`;
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
      if (index !== null) index.set(pp.claimKey, claimed.length);
      claimed.push(pp);
      owners.push(plan);
      if (index === null && claimed.length > 8) index = new Map(claimed.map((c, i) => [c.claimKey, i]));
      // A route whose backend cannot take traffic stays (it answers 503) and is reported.
      if (rb.backend.status !== "ok") {
        diagnostics.push({ kind: "Ingress", namespace, name, reason: backendReason(rb), message: rb.detail, severity: "warning" });
      }
      const route: Route = {
        ingress: plan.ref,
        host: pp.host,
        path: pp.path,
        pathType: pp.pathType,
        declaredPathType: pp.declaredPathType,
        source: "rule",
        ruleIndex: pp.ruleIndex,
        pathIndex: pp.pathIndex,
        backend: rb.backend,
        options: plan.annotations.options,
        tls: isTls,
      };
      routes.push(route);
      trace?.paths.set(pp, { kind: "route", route });
    }
  }
  // Canaries, once every claim is settled. claimed[i] is the claim of routes[i].
  const canaryRefs: BackendRef[] = [];
  for (const plan of canaries) {
    const { namespace, name } = plan;
    const policy = plan.annotations.policies.canary;
    for (const pp of plan.hosts.get(hostKey) as readonly PathPlan[]) {
      const where = `${pp.host ?? "(any host)"} ${pp.declaredPathType} ${pp.path}`;
      const unused = (reason: Diagnostic["reason"], message: string) => {
        diagnostics.push({ kind: "Ingress", namespace, name, reason, message, severity: "warning" });
        trace?.paths.set(pp, { kind: "canary-unused", message });
      };
      if (policy.kind !== "canary") {
        // Its InvalidAnnotation diagnostic says why; main is served unchanged.
        trace?.paths.set(pp, { kind: "canary-unused", message: "its canary annotations are invalid: the canary is not used" });
        continue;
      }
      let w = -1;
      if (index !== null) w = index.get(pp.claimKey) ?? -1;
      else w = claimed.findIndex((c) => c.claimKey === pp.claimKey);
      if (w < 0 || (claimed[w] as PathPlan).declaredPathType !== pp.declaredPathType) {
        unused("CanaryWithoutMain", `canary for ${where}: no Ingress that is not a canary declares that host, path and pathType; the canary is not served`);
        continue;
      }
      const main = routes[w] as Route;
      const owner = owners[w] as IngressPlan;
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
      // upstream; the location, with its backend-protocol, is main's).
      const b = pp.backend;
      const scheme = owner.annotations.scheme;
      const ref = b.scheme === scheme ? b : serviceRef(b.namespace, b.name, b.port, scheme);
      const rb = resolve(ref);
      backends.push(rb);
      canaryRefs.push(ref);
      if (!services.includes(b.key)) services.push(b.key);
      if (rb.backend.status !== "ok") {
        diagnostics.push({ kind: "Ingress", namespace, name, reason: backendReason(rb), message: rb.detail, severity: "warning" });
      }
      const route: Route = { ...main, canary: { ingress: plan.ref, backend: rb.backend }, options: withCanary(main.options, policy.rules) };
      routes[w] = route;
      trace?.paths.set(claimed[w] as PathPlan, { kind: "route", route });
      trace?.paths.set(pp, { kind: "canary", main: owner.key, route });
    }
  }
  return { routes, diagnostics, backends, canaryRefs, services };
}

/** Main's options with the canary's `backend`-stage policy added (main's own policies stay). */
function withCanary(options: RouteOptions, rules: CanaryRules): RouteOptions {
  return Object.freeze({ ...options, stages: orderStages([...(options.stages ?? []), canaryStagePolicy(rules)]) });
}

/** One host key's entry of the table, with what the compiler needs to know when to rebuild it. */
export function buildHostEntry(
  hostKey: string,
  plans: readonly IngressPlan[],
  canaries: readonly IngressPlan[],
  isTls: boolean,
  resolve: Resolve,
): HostEntry {
  const { routes, diagnostics, backends, canaryRefs, services } = claimHost(hostKey, plans, canaries, isTls, resolve);
  // Copies of the plans: the contributor lists are updated in place by later compiles.
  const entry = buildHost(hostKey, routes, viaOf(hostKey));
  return { plans: plans.slice(), canaries: canaries.slice(), tls: isTls, backends, canaryRefs, services, entry, diagnostics };
}
