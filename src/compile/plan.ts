// Per-Ingress work that depends on the Ingress object alone: annotations, host and path
// validation, what each backend names, the spec.tls hosts, and the diagnostics those give.
// Objects in the store are immutable and replaced on change, so the incremental compiler
// keeps one plan per Ingress object (WeakMap) and recomputes only edited Ingresses.
// Everything that depends on other objects (Services, Secrets, other Ingresses) is left to
// the compile. The checks and messages are the ones routes.ts and tls.ts give.
import type { Diagnostic, DiagnosticReason } from "../model/diagnostic.ts";
import type { Ingress, IngressBackend } from "../model/schemas.ts";
import type { PathType } from "../table/types.ts";
import { parseAnnotations, type ParsedAnnotations } from "./annotations.ts";
import { backendRef, type BackendRef, type BackendRefResult } from "./backends.ts";
import { normaliseHost } from "./hosts.ts";
import { createdMs, ingressKey, namespaceOf } from "./order.ts";
import { validatePath } from "./paths.ts";

/** One valid rule path (host, path and backend spec all passed their checks). */
export interface PathPlan {
  readonly ruleIndex: number;
  readonly pathIndex: number;
  /** Lowercased host, or null for a hostless rule. */
  readonly host: string | null;
  readonly path: string;
  readonly pathType: PathType;
  readonly declaredPathType: "Exact" | "Prefix" | "ImplementationSpecific";
  /** Key of the (type, path) claim within its host (conflicts.ts's spelling). */
  readonly claimKey: string;
  readonly backend: BackendRef;
}

export interface TlsPlan {
  /** spec.tls[].secretName, or null when empty (the default certificate). */
  readonly secretName: string | null;
  /** Its valid, non-empty hosts, lowercased, in the written order. */
  readonly hosts: readonly string[];
}

export interface IngressPlan {
  readonly ingress: Ingress;
  readonly namespace: string;
  readonly name: string;
  /** `namespace/name`. */
  readonly key: string;
  readonly createdMs: number;
  /** Route.ingress, shared by every route of this object. */
  readonly ref: { readonly namespace: string; readonly name: string };
  readonly annotations: ParsedAnnotations;
  /** Problems of this object alone, reported while it is served. */
  readonly diagnostics: readonly Diagnostic[];
  /** Valid rule paths grouped by host key (`*` for hostless), in rule and path order. */
  readonly hosts: ReadonlyMap<string, readonly PathPlan[]>;
  readonly tls: readonly TlsPlan[];
  readonly defaultBackend: BackendRefResult | null;
}

export function planIngress(ing: Ingress): IngressPlan {
  const ns = namespaceOf(ing);
  const name = ing.metadata.name;
  const diagnostics: Diagnostic[] = [];
  const diag = (reason: DiagnosticReason, message: string, severity: "warning" | "error" = "error") =>
    diagnostics.push({ kind: "Ingress", namespace: ns, name, reason, message, severity });

  const ann = parseAnnotations(ing.metadata.annotations);
  for (const problem of ann.problems) diag("InvalidAnnotation", problem, "warning");
  for (const a of ann.unsupported) diag("UnsupportedAnnotation", `annotation ${a} is not supported by Portico and is ignored`, "warning");

  const tls: TlsPlan[] = [];
  for (const entry of ing.spec.tls ?? []) {
    const hosts: string[] = [];
    for (const raw of entry.hosts ?? []) {
      const h = normaliseHost(raw);
      if (!h.ok) diag("InvalidHost", `spec.tls: ${h.message}`);
      else if (h.host !== null) hosts.push(h.host);
    }
    tls.push({ secretName: entry.secretName || null, hosts });
  }

  // Paths of one Ingress mostly name the same backend: one ref (and one id string) for them.
  const refs: { spec: IngressBackend; ref: BackendRefResult }[] = [];
  const refOf = (spec: IngressBackend): BackendRefResult => {
    for (const r of refs) if (sameBackend(r.spec, spec)) return r.ref;
    const ref = backendRef(ns, spec, ann.scheme);
    refs.push({ spec, ref });
    return ref;
  };
  const byHost = new Map<string, PathPlan[]>();
  const rules = ing.spec.rules ?? [];
  for (let ri = 0; ri < rules.length; ri++) {
    const rule = rules[ri];
    if (!rule) continue;
    const h = normaliseHost(rule.host);
    if (!h.ok) {
      diag("InvalidHost", `spec.rules[${ri}]: ${h.message}; rule skipped`);
      continue;
    }
    const paths = rule.http?.paths ?? [];
    for (let pi = 0; pi < paths.length; pi++) {
      const p = paths[pi];
      if (!p) continue;
      const vp = validatePath(p.path, p.pathType);
      if (!vp.ok) {
        diag("InvalidPath", `spec.rules[${ri}].http.paths[${pi}]: ${vp.message}; path skipped`);
        continue;
      }
      const br = refOf(p.backend);
      if (!br.ok) {
        diag("InvalidBackend", `spec.rules[${ri}].http.paths[${pi}]: ${br.message}; path skipped`);
        continue;
      }
      const hostKey = h.host ?? "*";
      let list = byHost.get(hostKey);
      if (!list) byHost.set(hostKey, (list = []));
      list.push({
        ruleIndex: ri,
        pathIndex: pi,
        host: h.host,
        path: vp.path,
        pathType: vp.type,
        declaredPathType: p.pathType,
        claimKey: vp.type === "Exact" ? `E${vp.path}` : `P${vp.path}`,
        backend: br.ref,
      });
    }
  }

  const spec = ing.spec.defaultBackend;
  return {
    ingress: ing,
    namespace: ns,
    name,
    key: ingressKey(ing),
    createdMs: createdMs(ing),
    ref: Object.freeze({ namespace: ns, name }),
    annotations: ann,
    diagnostics,
    hosts: byHost,
    tls,
    defaultBackend: spec ? refOf(spec) : null,
  };
}

/** Two specs that name the same Service port (resource backends are never merged). */
function sameBackend(a: IngressBackend, b: IngressBackend): boolean {
  if (a === b) return true;
  if (a.resource || b.resource || !a.service || !b.service) return false;
  return a.service.name === b.service.name && a.service.port?.number === b.service.port?.number && a.service.port?.name === b.service.port?.name;
}

/** Priority order (order.ts comparePriority): oldest first, then `namespace/name`. */
export function comparePlans(a: IngressPlan, b: IngressPlan): number {
  if (a.createdMs !== b.createdMs) return a.createdMs < b.createdMs ? -1 : 1;
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}
