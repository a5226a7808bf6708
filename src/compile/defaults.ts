// The default route: the winning spec.defaultBackend among served Ingresses (oldest first,
// as for rule paths), else --default-backend-service, else none (404). It serves the requests
// for hosts no rule names, nginx's catch-all server "_", whose client-certificate policy is the
// one of the hostless rules (controller.go getBackendServers maps host "" to "_"): the route
// carries that policy when there is one.
import type { Diagnostic } from "../model/diagnostic.ts";
import type { Route } from "../table/types.ts";
import type { HostCert } from "./access.ts";
import { DEFAULT_ROUTE_OPTIONS } from "./annotations.ts";
import { backendReason, serviceRef, type ResolvedBackend } from "./backends.ts";
import type { CompileConfig } from "./config.ts";
import { withHostCert, type Resolve } from "./host-entry.ts";
import { describeAge } from "./order.ts";
import type { IngressPlan } from "./plan.ts";
import type { CompileTrace } from "./trace.ts";

export interface DefaultEntry {
  readonly plan: IngressPlan | null;
  readonly backend: ResolvedBackend;
  readonly route: Route;
  /** The hostless rules' client-certificate policy the route carries, or null. */
  readonly hostCert: HostCert | null;
}

/**
 * The winning spec.defaultBackend among `defaultPlans` (the served plans that have one, in
 * priority order), else --default-backend-service, else null. The route object of `prev` is
 * kept while its Ingress, Backend and `hostCert` (the hostless host's policy, host-entry.ts
 * hostCertOf) are the same. Diagnostics go to `out`; with a trace, the outcome of every
 * spec.defaultBackend is recorded. Without a hostless policy, a spec.defaultBackend keeps its
 * own Ingress's client-certificate stage (ingress-nginx ignores auth-tls-* on an Ingress without
 * rules: Portico does not serve what it asked to protect unprotected).
 */
export function defaultEntry(
  defaultPlans: readonly IngressPlan[],
  config: CompileConfig,
  resolve: Resolve,
  prev: DefaultEntry | null,
  out: Diagnostic[],
  hostCert: HostCert | null,
  trace?: CompileTrace,
): DefaultEntry | null {
  const entry = (plan: IngressPlan | null, backend: ResolvedBackend): DefaultEntry => {
    if (prev !== null && prev.plan === plan && prev.backend === backend && prev.hostCert === hostCert) return prev;
    const own = plan ? plan.annotations.options : DEFAULT_ROUTE_OPTIONS;
    const route: Route = Object.freeze({
      ingress: plan ? plan.ref : Object.freeze({ namespace: "", name: "" }),
      host: null,
      path: "/",
      pathType: "Prefix" as const,
      declaredPathType: "Prefix" as const,
      source: plan ? ("defaultBackend" as const) : ("globalDefault" as const),
      ruleIndex: -1,
      pathIndex: -1,
      backend: backend.backend,
      options: hostCert === null ? own : withHostCert(own, plan?.hostCert ?? null, hostCert),
      tls: false,
    });
    return { plan, backend, route, hostCert };
  };
  let winner: DefaultEntry | null = null;
  for (const plan of defaultPlans) {
    const spec = plan.defaultBackend;
    if (spec === null) continue;
    const { namespace, name } = plan;
    if (winner) {
      const first = (winner.plan as IngressPlan).ingress;
      const message = `spec.defaultBackend of ${describeAge(plan.ingress)} loses to ${describeAge(first)}`;
      out.push({ kind: "Ingress", namespace, name, reason: "DefaultBackendConflict", message, severity: "warning" });
      trace?.defaults.push({ plan, outcome: { kind: "conflict", winner: (winner.plan as IngressPlan).key, message } });
      continue;
    }
    if (!spec.ok) {
      out.push({ kind: "Ingress", namespace, name, reason: "InvalidBackend", message: `spec.defaultBackend: ${spec.message}; ignored`, severity: "error" });
      trace?.defaults.push({ plan, outcome: { kind: "invalid", reason: "InvalidBackend", message: spec.message } });
      continue;
    }
    const rb = resolve(spec.ref);
    if (rb.backend.status !== "ok") out.push({ kind: "Ingress", namespace, name, reason: backendReason(rb), message: rb.detail, severity: "warning" });
    winner = entry(plan, rb);
    trace?.defaults.push({ plan, outcome: { kind: "route", route: winner.route } });
  }
  if (winner === null) {
    const g = config.defaultBackendService;
    if (g) {
      const rb = resolve(serviceRef(g.namespace, g.name, g.port, "http"));
      if (rb.backend.status !== "ok") {
        const message = `--default-backend-service: ${rb.detail}`;
        out.push({ kind: "Service", namespace: g.namespace, name: g.name, reason: backendReason(rb), message, severity: "warning" });
      }
      winner = entry(null, rb);
    }
  }
  return winner;
}
