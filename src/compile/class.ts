// Which Ingresses are ours (Kubernetes "Ingress class" docs and KEP-1453; docs/design.md,
// "Ingress decisions"). With --ingress-nginx-compat the rules are ingress-nginx's own
// (its store's GetIngressClass): the class annotation must equal --ingress-class, and an
// IngressClass marked default is never read, so Portico takes exactly the Ingresses
// ingress-nginx takes with the same flags.
import type { Ingress, IngressClass } from "../model/schemas.ts";
import type { CompileConfig } from "./config.ts";

export const LEGACY_CLASS_ANNOTATION = "kubernetes.io/ingress.class";
export const DEFAULT_CLASS_ANNOTATION = "ingressclass.kubernetes.io/is-default-class";

export interface ClassDecision {
  readonly served: boolean;
  /** Which branch of class selection decided, for explain. */
  readonly rule: "ingressClassName" | "annotation" | "default-class" | "watch-without-class" | "no-class" | "disable-catch-all";
  readonly reason: string;
}

/** Precomputed per compile: the IngressClasses that name our controller. */
export interface ClassContext {
  readonly all: ReadonlyMap<string, IngressClass>;
  readonly ours: ReadonlySet<string>;
  readonly defaultClass: string | null;
}

export function classContext(classes: ReadonlyMap<string, IngressClass>, config: CompileConfig): ClassContext {
  const all = new Map<string, IngressClass>();
  const ours = new Set<string>();
  let defaultClass: string | null = null;
  for (const ic of [...classes.values()].sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1))) {
    all.set(ic.metadata.name, ic);
    if (ic.spec.controller !== config.controllerName) continue;
    ours.add(ic.metadata.name);
    if (defaultClass === null && ic.metadata.annotations?.[DEFAULT_CLASS_ANNOTATION] === "true") {
      defaultClass = ic.metadata.name;
    }
  }
  return { all, ours, defaultClass };
}

export function classify(ing: Ingress, ctx: ClassContext, config: CompileConfig): ClassDecision {
  const decision = classDecision(ing, ctx, config);
  // --disable-catch-all: ingress-nginx's store never takes an Ingress with spec.defaultBackend,
  // whatever its rules (store.go hasCatchAllIngressRule is `spec.DefaultBackend != nil`, checked
  // on add and update; an update that adds one deletes the old Ingress). Only an Ingress that
  // would be served is refused so, so explain still names the class rule for the others.
  if (decision.served && config.disableCatchAll && ing.spec.defaultBackend !== undefined && ing.spec.defaultBackend !== null) {
    return { served: false, rule: "disable-catch-all", reason: "spec.defaultBackend is set and --disable-catch-all ignores catch-all Ingresses (ingress-nginx's store)" };
  }
  return decision;
}

function classDecision(ing: Ingress, ctx: ClassContext, config: CompileConfig): ClassDecision {
  const field = ing.spec.ingressClassName;
  if (field) {
    const ic = ctx.all.get(field);
    if (ic) {
      return ctx.ours.has(field)
        ? { served: true, rule: "ingressClassName", reason: `IngressClass ${field} has controller ${config.controllerName}` }
        : {
            served: false,
            rule: "ingressClassName",
            reason: `IngressClass ${field} has controller ${ic.spec.controller ?? "(none)"}, not ${config.controllerName}`,
          };
    }
    // No IngressClass object: accept our own class name so a fresh install works before
    // the IngressClass is applied.
    return field === config.ingressClass
      ? { served: true, rule: "ingressClassName", reason: `no IngressClass ${field} exists and it is --ingress-class` }
      : { served: false, rule: "ingressClassName", reason: `no IngressClass ${field} exists and it is not --ingress-class ${config.ingressClass}` };
  }
  // The deprecated annotation is honoured only when the field is absent. Present, it decides,
  // even empty: an empty value names no class (ingress-nginx rejects it too, whatever its docs
  // say), so it never falls through to the default class or --watch-ingress-without-class.
  const legacy = ing.metadata.annotations?.[LEGACY_CLASS_ANNOTATION];
  if (legacy !== undefined) {
    if (legacy === config.ingressClass) {
      return { served: true, rule: "annotation", reason: `${LEGACY_CLASS_ANNOTATION}=${legacy} is --ingress-class` };
    }
    if (!config.ingressNginxCompat && ctx.ours.has(legacy)) {
      return { served: true, rule: "annotation", reason: `${LEGACY_CLASS_ANNOTATION}=${legacy} names one of our IngressClasses` };
    }
    if (legacy === "") return { served: false, rule: "annotation", reason: `${LEGACY_CLASS_ANNOTATION} is empty: it names no class` };
    const only = config.ingressNginxCompat ? ` (--ingress-nginx-compat: only --ingress-class ${config.ingressClass})` : "";
    return { served: false, rule: "annotation", reason: `${LEGACY_CLASS_ANNOTATION}=${legacy} is not ours${only}` };
  }
  // ingress-nginx never reads is-default-class: the API server writes the default class into
  // Ingresses created after it was marked, and older ones need --watch-ingress-without-class.
  if (!config.ingressNginxCompat && ctx.defaultClass !== null) {
    return { served: true, rule: "default-class", reason: `no class; our IngressClass ${ctx.defaultClass} is the default class` };
  }
  if (config.watchIngressWithoutClass) {
    return { served: true, rule: "watch-without-class", reason: "no class; --watch-ingress-without-class is set" };
  }
  return {
    served: false,
    rule: "no-class",
    reason: config.ingressNginxCompat
      ? "no class and --watch-ingress-without-class is off (--ingress-nginx-compat: a default IngressClass is not read, as in ingress-nginx)"
      : "no class, none of our IngressClasses is the default and --watch-ingress-without-class is off",
  };
}
