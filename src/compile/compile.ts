// The pure compiler (DESIGN §1, §6.2): Snapshot + config → route table, certificate
// bindings, statuses and diagnostics. No I/O, no clock, no logging; inputs are sorted so the
// output never depends on Map order.
// Two implementations of one function: compileTraced below is the straightforward one (every
// step redone on every call; explain records its trace); incremental.ts's Compiler keeps
// caches between calls and is what the controller runs. compile() is a Compiler with empty
// caches. Tests hold the two to the same output (test/compile/incremental.test.ts).
import type { Ingress } from "../model/schemas.ts";
import type { Snapshot } from "../store/types.ts";
import { buildTable } from "../table/build.ts";
import type { Route } from "../table/types.ts";
import { parseAnnotations, type ParsedAnnotations } from "./annotations.ts";
import { BackendResolver } from "./backends.ts";
import { classContext, classify } from "./class.ts";
import type { CompileConfig } from "./config.ts";
import { Compiler } from "./incremental.ts";
import { ClaimRegistry } from "./conflicts.ts";
import { defaultRoute } from "./defaults.ts";
import { DiagnosticList } from "./diagnostics.ts";
import { ingressKey, namespaceOf, sortByPriority } from "./order.ts";
import { routesOf, type RouteContext } from "./routes.ts";
import { collectTls, tlsCoverage } from "./tls.ts";
import type { CompileTrace } from "./trace.ts";
import type { CompileResult, IngressRef } from "./types.ts";

export type { CompileConfig } from "./config.ts";
export { Compiler } from "./incremental.ts";

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
    resolver: new BackendResolver(snapshot, config),
    claims: new ClaimRegistry(),
    diags,
    tlsCovered: tlsCoverage(tls.hosts),
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

/** A full compile (incremental.ts with nothing cached). */
export function compile(snapshot: Snapshot, config: CompileConfig): CompileResult {
  return new Compiler(config).compile(snapshot);
}
