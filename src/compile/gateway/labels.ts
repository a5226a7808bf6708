// metav1.LabelSelector evaluation (Kubernetes API, "Labels and Selectors": matchLabels and
// matchExpressions are ANDed; operators In, NotIn, Exists, DoesNotExist). An unknown operator
// matches nothing: a selector Portico cannot read admits no namespace (fails closed).
import type { LabelSelector } from "../../model/gateway.ts";

export function selectorMatches(selector: LabelSelector, labels: Readonly<Record<string, string>>): boolean {
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, e.key);
    const values = e.values ?? [];
    switch (e.operator) {
      case "In":
        if (!has || !values.includes(labels[e.key]!)) return false;
        break;
      case "NotIn":
        if (has && values.includes(labels[e.key]!)) return false;
        break;
      case "Exists":
        if (!has) return false;
        break;
      case "DoesNotExist":
        if (has) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}
