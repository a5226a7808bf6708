// The claim rule, per host key: a (type, path) of a host belongs to the first claimant in
// priority order (order.ts: oldest creationTimestamp, then `namespace/name`, as ingress-nginx
// lets the oldest Ingress win); a later claimant gets a PathConflict diagnostic naming the
// winner, a repeat within one Ingress a DuplicatePath. Claims never cross hosts, so a host
// entry depends only on its contributing plans, their backends and the host's TLS coverage,
// and the compiler reuses it while those are the same objects.
import type { Diagnostic } from "../model/diagnostic.ts";
import { buildHost, viaOf } from "../table/build.ts";
import type { HostRoutes, Route } from "../table/types.ts";
import { backendReason, type BackendRef, type ResolvedBackend } from "./backends.ts";
import { describeAge, tieNote } from "./order.ts";
import type { IngressPlan, PathPlan } from "./plan.ts";
import type { CompileTrace } from "./trace.ts";

export interface HostEntry {
  readonly plans: readonly IngressPlan[];
  readonly tls: boolean;
  /** The Backend of every path plan of every contributing plan, in order. */
  readonly backends: readonly ResolvedBackend[];
  /** Snapshot keys (`namespace/name`) of the Services those backends read. */
  readonly services: readonly string[];
  readonly entry: HostRoutes;
  readonly diagnostics: readonly Diagnostic[];
}

export type Resolve = (ref: BackendRef) => ResolvedBackend;

/** Would building this host again give `prev`? (Same plans in order, TLS coverage, Backends.) */
export function sameHostInputs(prev: HostEntry, hostKey: string, plans: readonly IngressPlan[], isTls: boolean, resolve: Resolve): boolean {
  if (prev.tls !== isTls || prev.plans.length !== plans.length) return false;
  for (let i = 0; i < plans.length; i++) if (prev.plans[i] !== plans[i]) return false;
  let k = 0;
  for (const p of plans) {
    for (const pp of p.hosts.get(hostKey) as readonly PathPlan[]) {
      if (resolve(pp.backend) !== prev.backends[k++]) return false;
    }
  }
  return true;
}

interface Claimed {
  readonly routes: Route[];
  readonly diagnostics: Diagnostic[];
  readonly backends: ResolvedBackend[];
  readonly services: string[];
}

/**
 * The routes of one host key from its contributing plans (in priority order). With a trace,
 * the outcome of every path plan is recorded too (explain runs this for the hosts it asks about).
 */
export function claimHost(hostKey: string, plans: readonly IngressPlan[], isTls: boolean, resolve: Resolve, trace?: CompileTrace): Claimed {
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
  return { routes, diagnostics, backends, services };
}

/** One host key's entry of the table, with what the compiler needs to know when to rebuild it. */
export function buildHostEntry(hostKey: string, plans: readonly IngressPlan[], isTls: boolean, resolve: Resolve): HostEntry {
  const { routes, diagnostics, backends, services } = claimHost(hostKey, plans, isTls, resolve);
  // A copy of the plans: the contributor lists are updated in place by later compiles.
  return { plans: plans.slice(), tls: isTls, backends, services, entry: buildHost(hostKey, routes, viaOf(hostKey)), diagnostics };
}
