// Gathers the diagnostics of one compile and returns them in a stable order.
import { diagnosticKey, type Diagnostic } from "../model/diagnostic.ts";

export class DiagnosticList {
  /** Keyed by diagnosticKey: dedupes and gives the sort order. */
  readonly #items = new Map<string, Diagnostic>();

  /** Add one (a duplicate is dropped; a missing severity means "error"). */
  add(d: Diagnostic): void {
    const key = diagnosticKey(d);
    if (!this.#items.has(key)) this.#items.set(key, d.severity === undefined ? { ...d, severity: "error" } : d);
  }

  /** Sorted by kind, namespace, name, reason, message: output never depends on input order. */
  sorted(): readonly Diagnostic[] {
    const keys = [...this.#items.keys()].sort();
    return Object.freeze(keys.map((k) => this.#items.get(k) as Diagnostic));
  }
}
