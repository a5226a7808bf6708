// The pure compiler (DESIGN §1, §6.2): Snapshot + config → route table, certificate
// bindings, statuses and diagnostics. No I/O, no clock, no logging; inputs are sorted so the
// output never depends on Map order.
import type { Ingress } from "../model/schemas.ts";
import type { Snapshot } from "../store/types.ts";
import { buildTable } from "../table/build.ts";
import type { Route } from "../table/types.ts";
import { parseAnnotations, type ParsedAnnotations } from "./annotations.ts";
import { BackendResolver } from "./backends.ts";
import { classContext, classify } from "./class.ts";
import type { CompileConfig } from "./config.ts";
import { ClaimRegistry } from "./conflicts.ts";
import { defaultRoute } from "./defaults.ts";
import { DiagnosticList } from "./diagnostics.ts";
import { ingressKey, namespaceOf, sortByPriority } from "./order.ts";
import { routesOf, type RouteContext } from "./routes.ts";
import { collectTls } from "./tls.ts";
import type { CompileTrace } from "./trace.ts";
import type { CompileResult, IngressRef } from "./types.ts";

export type { CompileConfig } from "./config.ts";

/** Route.tls: is the rule host listed in some served spec.tls, exactly or by `*.suffix`? */
function coverage(tlsHosts: ReadonlySet<string>): (host: string | null) => boolean {
  return (host) => {
    if (host === null || tlsHosts.size === 0) return false;
    if (tlsHosts.has(host)) return true;
    // `*.foo.com` covers exactly one extra label; a wildcard rule host needs the same wildcard.
    if (host.startsWith("*.")) return false;
    const dot = host.indexOf(".");
    return dot > 0 && tlsHosts.has(`*.${host.slice(dot + 1)}`);
  };
}

/** Compile, optionally recording what happened to every rule path (for explain). */
export function compileTraced(snapshot: Snapshot, config: CompileConfig, trace: CompileTrace | null): CompileResult {
  const diags = new DiagnosticList();
  const ctx0 = classContext(snapshot.ingressClasses, config);
  const served: Ingress[] = [];
  for (const ing of sortByPriority(snapshot.ingresses.values())) {
    const decision = classify(ing, ctx0, config);
    trace?.classes.push({ ingress: ing, decision });
    if (decision.served) served.push(ing);
  }

  const tls = collectTls(served, snapshot, config, diags);
  const ctx: RouteContext = {
    resolver: new BackendResolver(snapshot),
    claims: new ClaimRegistry(),
    diags,
    tlsCovered: coverage(tls.hosts),
    trace,
  };
  const annotations = new Map<Ingress, ParsedAnnotations>();
  const routes: Route[] = [];
  for (const ing of served) {
    const ann = parseAnnotations(ing.metadata.annotations);
    annotations.set(ing, ann);
    for (const problem of ann.problems) diags.add("Ingress", namespaceOf(ing), ing.metadata.name, "InvalidAnnotation", problem, "warning");
    for (const name of ann.unsupported) {
      diags.add("Ingress", namespaceOf(ing), ing.metadata.name, "UnsupportedAnnotation", `annotation ${name} is not supported by Portico and is ignored`, "warning");
    }
    routesOf(ing, ann.options, ann.scheme, ctx, routes);
  }
  const table = buildTable(routes, defaultRoute(served, annotations, config, ctx));

  const statuses: IngressRef[] = served
    .map((ing) => ({ key: ingressKey(ing), ref: { namespace: namespaceOf(ing), name: ing.metadata.name } }))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    .map((r) => r.ref);
  return Object.freeze({
    table,
    certificates: tls.bindings,
    statuses: Object.freeze(statuses),
    diagnostics: diags.sorted(),
  });
}

export function compile(snapshot: Snapshot, config: CompileConfig): CompileResult {
  return compileTraced(snapshot, config, null);
}
