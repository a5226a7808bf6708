// Collects diagnostics during one compile and returns them in a stable order.
import { diagnosticKey, type Diagnostic, type DiagnosticReason } from "../model/diagnostic.ts";

export class DiagnosticList {
  /** Keyed by diagnosticKey: dedupes and gives the sort order. */
  readonly #items = new Map<string, Diagnostic>();

  add(
    kind: string,
    namespace: string,
    name: string,
    reason: DiagnosticReason,
    message: string,
    severity: "warning" | "error" = "error",
  ): void {
    const d: Diagnostic = { kind, namespace, name, reason, message, severity };
    const key = diagnosticKey(d);
    if (!this.#items.has(key)) this.#items.set(key, d);
  }

  /** Add an already built diagnostic (same dedupe as add; its severity defaults to "error"). */
  addDiagnostic(d: Diagnostic): void {
    const key = diagnosticKey(d);
    if (!this.#items.has(key)) this.#items.set(key, d.severity === undefined ? { ...d, severity: "error" } : d);
  }

  /** Sorted by kind, namespace, name, reason, message: output never depends on input order. */
  sorted(): readonly Diagnostic[] {
    const keys = [...this.#items.keys()].sort();
    return Object.freeze(keys.map((k) => this.#items.get(k) as Diagnostic));
  }
}
