// One host key's share of a compile (incremental.ts): routes.ts's claim loop restricted to
// the plans that route this host, in priority order. Claims never cross hosts, so a host
// entry depends only on its contributing plans, their backends and the host's TLS coverage,
// and can be reused while those are the same objects.
import type { Diagnostic, DiagnosticReason } from "../model/diagnostic.ts";
import { buildHost, viaOf } from "../table/build.ts";
import type { BackendStatus, HostRoutes, Route } from "../table/types.ts";
import type { BackendRef, ResolvedBackend } from "./backends.ts";
import { describeAge } from "./order.ts";
import type { IngressPlan, PathPlan } from "./plan.ts";

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

/** routes.ts reportBackend's reason (only asked for a backend whose status is not "ok"). */
export const backendReason = (r: ResolvedBackend): DiagnosticReason =>
  r.backend.status === "Unsupported" ? "UnsupportedBackend" : (r.backend.status as Exclude<BackendStatus, "ok" | "Unsupported">);

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

/** routes.ts's claim loop for one host: the first claimant in priority order wins. */
export function buildHostEntry(hostKey: string, plans: readonly IngressPlan[], isTls: boolean, resolve: Resolve): HostEntry {
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
        } else {
          const tie = owner.createdMs === plan.createdMs ? " (same age: alphabetical order decides)" : "";
          const message = `${where} is also declared by ${describeAge(owner.ingress)}, which wins over ${describeAge(plan.ingress)}${tie}`;
          diagnostics.push({ kind: "Ingress", namespace, name, reason: "PathConflict", message, severity: "warning" });
        }
        continue;
      }
      if (index !== null) index.set(pp.claimKey, claimed.length);
      claimed.push(pp);
      owners.push(plan);
      if (index === null && claimed.length > 8) index = new Map(claimed.map((c, i) => [c.claimKey, i]));
      if (rb.backend.status !== "ok") {
        diagnostics.push({ kind: "Ingress", namespace, name, reason: backendReason(rb), message: rb.detail, severity: "warning" });
      }
      routes.push({
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
      });
    }
  }
  // A copy of the plans: the contributor lists are updated in place by later compiles.
  return { plans: plans.slice(), tls: isTls, backends, services, entry: buildHost(hostKey, routes, viaOf(hostKey)), diagnostics };
}
