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

/**
 * No creationTimestamp to go by: --manifests objects get the epoch (files/documents.ts), which
 * no API server writes, so "created 1970-01-01" would describe nothing the user wrote.
 */
function undated(ing: Ingress): boolean {
  const t = ing.metadata.creationTimestamp;
  return t == null || Date.parse(t) === 0;
}

/** "default/web (created 2024-01-01T00:00:00Z)" for conflict messages. */
export function describeAge(ing: Ingress): string {
  return `${ingressKey(ing)} (${undated(ing) ? "no creationTimestamp" : `created ${ing.metadata.creationTimestamp ?? "unknown"}`})`;
}

/** What decided a conflict between two Ingresses of equal age ("" when their ages differ). */
export function tieNote(a: Ingress, b: Ingress): string {
  if (createdMs(a) !== createdMs(b)) return "";
  return undated(a) && undated(b) ? " (neither has a creationTimestamp: alphabetical namespace/name order decides)" : " (same age: alphabetical order decides)";
}
