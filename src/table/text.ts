// The route table for people: one row per route (host, path, type, backend, endpoints, TLS,
// Ingress), columns aligned. /debug/routes?format=text and `portico routes` print it; the JSON
// form (serialize.ts) stays the one for programs.
import type { SerializedRoute, SerializedTable } from "./serialize.ts";

const HEADER = ["HOST", "PATH", "TYPE", "BACKEND", "ENDPOINTS", "TLS", "INGRESS"] as const;

// Hosts and paths were validated by the compiler; escaping control characters anyway keeps a
// row on one line whatever a table holds.
const clean = (s: string): string => s.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);

interface BackendView {
  readonly status: string;
  readonly endpoints: readonly string[];
  readonly allEndpoints: readonly unknown[];
  readonly externalName: boolean;
}

/** "2 of 3" endpoints in use, or why there are none ("0 (NoEndpoints)", "ServiceNotFound"). */
function endpointsCell(b: BackendView | undefined): string {
  if (b === undefined) return "?";
  if (b.status === "ServiceNotFound" || b.status === "ServicePortNotFound" || b.status === "Unsupported") return b.status;
  if (b.externalName) return b.endpoints.length > 0 ? `external ${b.endpoints.join(",")}` : "external (none)";
  const used = `${b.endpoints.length} of ${b.allEndpoints.length}`;
  return b.status === "ok" ? used : `${used} (${b.status})`;
}

function row(host: string, r: SerializedRoute, backends: ReadonlyMap<string, BackendView>): string[] {
  const isDefault = r.source !== "rule";
  return [
    clean(host),
    isDefault ? "(default)" : clean(r.path),
    isDefault ? "-" : r.pathType === r.declaredPathType ? r.pathType : `${r.pathType} (${r.declaredPathType})`,
    clean(r.backend),
    endpointsCell(backends.get(r.backend)),
    r.tls ? "yes" : "no",
    r.ingress === "" ? "--default-backend-service" : clean(r.ingress),
  ];
}

/** The table as aligned text, with a one-line summary at the end. */
export function formatRoutesText(t: SerializedTable): string {
  const backends = new Map<string, BackendView>();
  for (const b of t.backends) backends.set(String(b.id), b as unknown as BackendView);
  const rows: string[][] = [];
  for (const h of t.hosts) for (const r of h.routes) rows.push(row(h.host, r, backends));
  if (t.defaultRoute) rows.push(row("(any other)", t.defaultRoute, backends));
  const widths = HEADER.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join("  ");
  const out = [line(HEADER), ...rows.map(line)];
  const down = [...backends.values()].filter((b) => b.status !== "ok").length;
  const summary = `${t.hosts.length} host${t.hosts.length === 1 ? "" : "s"}, ${t.routeCount} route${t.routeCount === 1 ? "" : "s"}${t.defaultRoute ? " and a default route" : ""}, ${backends.size} backend${backends.size === 1 ? "" : "s"}${down > 0 ? ` (${down} answering 503)` : ""}${t.generation !== undefined ? `; generation ${t.generation}` : ""}`;
  if (rows.length === 0) return `no routes${t.generation !== undefined ? ` (generation ${t.generation})` : ""}: requests get 404\n`;
  return `${out.join("\n")}\n\n${summary}\n`;
}
