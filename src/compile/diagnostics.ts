// Collects diagnostics during one compile and returns them in a stable order.
import type { Diagnostic, DiagnosticReason } from "../model/diagnostic.ts";

export class DiagnosticList {
  /** Keyed by kind, namespace, name, reason, message: dedupes and gives the sort order. */
  readonly #items = new Map<string, Diagnostic>();

  add(
    kind: string,
    namespace: string,
    name: string,
    reason: DiagnosticReason,
    message: string,
    severity: "warning" | "error" = "error",
  ): void {
    const key = `${kind}\u0000${namespace}\u0000${name}\u0000${reason}\u0000${message}`;
    if (!this.#items.has(key)) this.#items.set(key, { kind, namespace, name, reason, message, severity });
  }

  /** Add an already built diagnostic (same dedupe as add; its severity defaults to "error"). */
  addDiagnostic(d: Diagnostic): void {
    const key = `${d.kind}\u0000${d.namespace}\u0000${d.name}\u0000${d.reason}\u0000${d.message}`;
    if (!this.#items.has(key)) this.#items.set(key, d.severity === undefined ? { ...d, severity: "error" } : d);
  }

  /** Sorted by kind, namespace, name, reason, message: output never depends on input order. */
  sorted(): readonly Diagnostic[] {
    const keys = [...this.#items.keys()].sort();
    return Object.freeze(keys.map((k) => this.#items.get(k) as Diagnostic));
  }
}
