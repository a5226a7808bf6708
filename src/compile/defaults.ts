// The default route (DESIGN §4 Defaults): the winning spec.defaultBackend among served
// Ingresses (oldest first), else --default-backend-service, else none (404).
import type { Ingress } from "../model/schemas.ts";
import type { Route } from "../table/types.ts";
import type { ParsedAnnotations } from "./annotations.ts";
import { DEFAULT_ROUTE_OPTIONS } from "./annotations.ts";
import type { CompileConfig } from "./config.ts";
import { describeAge, ingressKey, namespaceOf } from "./order.ts";
import { reportBackend, type RouteContext } from "./routes.ts";

export function defaultRoute(
  served: readonly Ingress[],
  annotations: ReadonlyMap<Ingress, ParsedAnnotations>,
  config: CompileConfig,
  ctx: RouteContext,
): Route | null {
  let winner: { ing: Ingress; route: Route } | null = null;
  for (const ing of served) {
    const spec = ing.spec.defaultBackend;
    if (!spec) continue;
    const ns = namespaceOf(ing);
    const name = ing.metadata.name;
    if (winner) {
      const message = `spec.defaultBackend of ${describeAge(ing)} loses to ${describeAge(winner.ing)}`;
      ctx.diags.add("Ingress", ns, name, "DefaultBackendConflict", message, "warning");
      ctx.trace?.defaults.push({ ingress: ing, outcome: { kind: "conflict", winner: ingressKey(winner.ing), message } });
      continue;
    }
    const ann = annotations.get(ing);
    const br = ctx.resolver.resolve(ns, spec, ann?.scheme ?? "http");
    if (!br.ok) {
      ctx.diags.add("Ingress", ns, name, "InvalidBackend", `spec.defaultBackend: ${br.message}; ignored`);
      ctx.trace?.defaults.push({ ingress: ing, outcome: { kind: "invalid", reason: "InvalidBackend", message: br.message } });
      continue;
    }
    reportBackend(ctx, ing, br);
    const route: Route = Object.freeze({
      ingress: Object.freeze({ namespace: ns, name }),
      host: null,
      path: "/",
      pathType: "Prefix" as const,
      declaredPathType: "Prefix" as const,
      source: "defaultBackend" as const,
      ruleIndex: -1,
      pathIndex: -1,
      backend: br.backend,
      options: ann?.options ?? DEFAULT_ROUTE_OPTIONS,
      tls: false,
    });
    winner = { ing, route };
    ctx.trace?.defaults.push({ ingress: ing, outcome: { kind: "route", route } });
  }
  if (winner) return winner.route;
  const g = config.defaultBackendService;
  if (!g) return null;
  const br = ctx.resolver.service(g.namespace, g.name, g.port, "http");
  if (!br.ok) return null;
  if (br.backend.status !== "ok") {
    const reason = br.backend.status === "Unsupported" ? "UnsupportedBackend" : br.backend.status;
    ctx.diags.add("Service", g.namespace, g.name, reason, `--default-backend-service: ${br.detail}`, "warning");
  }
  return Object.freeze({
    ingress: Object.freeze({ namespace: "", name: "" }),
    host: null,
    path: "/",
    pathType: "Prefix" as const,
    declaredPathType: "Prefix" as const,
    source: "globalDefault" as const,
    ruleIndex: -1,
    pathIndex: -1,
    backend: br.backend,
    options: DEFAULT_ROUTE_OPTIONS,
    tls: false,
  });
}
