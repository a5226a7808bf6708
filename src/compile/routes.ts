// spec.rules of one served Ingress → Routes. Each invalid host, path or backend is skipped
// with a diagnostic; the rest of the Ingress is still served (DESIGN §1).
import type { Ingress } from "../model/schemas.ts";
import type { Route, RouteOptions } from "../table/types.ts";
import type { BackendResolver, BackendResult } from "./backends.ts";
import type { ClaimRegistry } from "./conflicts.ts";
import type { DiagnosticList } from "./diagnostics.ts";
import { normaliseHost } from "./hosts.ts";
import { createdMs, describeAge, ingressKey, namespaceOf } from "./order.ts";
import { validatePath } from "./paths.ts";
import type { CompileTrace, PathTrace } from "./trace.ts";

export interface RouteContext {
  readonly resolver: BackendResolver;
  readonly claims: ClaimRegistry;
  readonly diags: DiagnosticList;
  /** Is this rule host covered by a served spec.tls host? */
  readonly tlsCovered: (host: string | null) => boolean;
  readonly trace: CompileTrace | null;
}

/** Report a backend that resolved but cannot take traffic (the route stays and answers 503). */
export function reportBackend(ctx: RouteContext, ing: Ingress, r: BackendResult): void {
  if (!r.ok || r.backend.status === "ok") return;
  const reason = r.backend.status === "Unsupported" ? "UnsupportedBackend" : r.backend.status;
  ctx.diags.add("Ingress", namespaceOf(ing), ing.metadata.name, reason, r.detail, "warning");
}

export function routesOf(
  ing: Ingress,
  options: RouteOptions,
  scheme: "http" | "https",
  ctx: RouteContext,
  out: Route[],
): void {
  const ns = namespaceOf(ing);
  const name = ing.metadata.name;
  const ref = { namespace: ns, name };
  const rules = ing.spec.rules ?? [];
  for (let ri = 0; ri < rules.length; ri++) {
    const rule = rules[ri];
    if (!rule) continue;
    const h = normaliseHost(rule.host);
    const paths = rule.http?.paths ?? [];
    if (!h.ok) ctx.diags.add("Ingress", ns, name, "InvalidHost", `spec.rules[${ri}]: ${h.message}; rule skipped`);
    for (let pi = 0; pi < paths.length; pi++) {
      const p = paths[pi];
      if (!p) continue;
      const trace = ctx.trace;
      // Only explain() passes a trace; compile() allocates nothing here.
      const record = (t: Pick<PathTrace, "path" | "pathType" | "outcome">) =>
        trace?.paths.push({ ingress: ing, ruleIndex: ri, pathIndex: pi, rawHost: rule.host ?? null, host: h.ok ? h.host : null, ...t });
      if (!h.ok) {
        record({ path: p.path ?? "", pathType: null, outcome: { kind: "invalid", reason: "InvalidHost", message: h.message } });
        continue;
      }
      const vp = validatePath(p.path, p.pathType);
      if (!vp.ok) {
        ctx.diags.add("Ingress", ns, name, "InvalidPath", `spec.rules[${ri}].http.paths[${pi}]: ${vp.message}; path skipped`);
        record({ path: p.path ?? "", pathType: null, outcome: { kind: "invalid", reason: "InvalidPath", message: vp.message } });
        continue;
      }
      const br = ctx.resolver.resolve(ns, p.backend, scheme);
      if (!br.ok) {
        ctx.diags.add("Ingress", ns, name, "InvalidBackend", `spec.rules[${ri}].http.paths[${pi}]: ${br.message}; path skipped`);
        record({ path: vp.path, pathType: vp.type, outcome: { kind: "invalid", reason: "InvalidBackend", message: br.message } });
        continue;
      }
      const c = ctx.claims.claim(h.host, vp.path, vp.type, { ingress: ing, ruleIndex: ri, pathIndex: pi });
      if (!c.won) {
        const where = `${h.host ?? "(any host)"} ${vp.type} ${vp.path}`;
        if (c.sameIngress) {
          const message = `spec.rules[${ri}].http.paths[${pi}]: ${where} is already declared at spec.rules[${c.winner.ruleIndex}].http.paths[${c.winner.pathIndex}]; the first one is used`;
          ctx.diags.add("Ingress", ns, name, "DuplicatePath", message, "warning");
          record({ path: vp.path, pathType: vp.type, outcome: { kind: "duplicate", message } });
        } else {
          const w = c.winner.ingress;
          const tie = createdMs(w) === createdMs(ing) ? " (same age: alphabetical order decides)" : "";
          const message = `${where} is also declared by ${describeAge(w)}, which wins over ${describeAge(ing)}${tie}`;
          ctx.diags.add("Ingress", ns, name, "PathConflict", message, "warning");
          record({ path: vp.path, pathType: vp.type, outcome: { kind: "conflict", winner: ingressKey(w), message } });
        }
        continue;
      }
      reportBackend(ctx, ing, br);
      const route: Route = {
        ingress: ref,
        host: h.host,
        path: vp.path,
        pathType: vp.type,
        declaredPathType: p.pathType,
        source: "rule" as const,
        ruleIndex: ri,
        pathIndex: pi,
        backend: br.backend,
        options,
        tls: ctx.tlsCovered(h.host),
      };
      out.push(route);
      if (trace) record({ path: vp.path, pathType: vp.type, outcome: { kind: "route", route } });
    }
  }
}
