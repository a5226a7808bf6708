// What priority between Ingresses reads: every conflict rule lets the oldest
// creationTimestamp win, then `namespace/name` in alphabetical order (plan.ts comparePlans).
import type { Ingress } from "../model/schemas.ts";

/** Namespace of an Ingress; objects from --manifests files may omit it. */
export function namespaceOf(ing: Ingress): string {
  return ing.metadata.namespace || "default";
}

export function ingressKey(ing: Ingress): string {
  return `${namespaceOf(ing)}/${ing.metadata.name}`;
}

/** Creation time in ms; a missing or unparsable timestamp sorts as the newest. */
export function createdMs(ing: Ingress): number {
  const t = ing.metadata.creationTimestamp;
  const ms = t ? Date.parse(t) : Number.NaN;
  return Number.isNaN(ms) ? Number.POSITIVE_INFINITY : ms;
}

/** "default/web (created 2024-01-01T00:00:00Z)" for conflict messages. */
export function describeAge(ing: Ingress): string {
  return `${ingressKey(ing)} (created ${ing.metadata.creationTimestamp ?? "unknown"})`;
}
