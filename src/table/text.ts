// The route table for people: one row per route (host, path, type, backend, endpoints, TLS,
// Ingress, and what its requests get), one more per canary, columns aligned.
// /debug/routes?format=text and `portico routes` print it; the JSON form (serialize.ts) stays
// the one for programs. The ANSWERS column reads the route's stage policies in the proxy's
// order (policy/stages.ts), as explain's `response` does for one request (compile/answer.ts):
// a route whose every request is refused, redirected or has no pod to go to says so and why,
// rather than showing only its backend's healthy endpoints.
import type { PolicyValue, StagePolicy } from "../policy/stages.ts";
import type { SerializedGatewayListener, SerializedLocation, SerializedRoute, SerializedTable } from "./serialize.ts";
import type { GatewayMatch } from "./types.ts";
import { DEFAULT_BACKEND_SLOT } from "./routes.ts";
import type { HostTls } from "../model/host-tls.ts";

const HEADER = ["HOST", "PATH", "TYPE", "BACKEND", "ENDPOINTS", "TLS", "INGRESS", "ANSWERS"] as const;

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

const serves = (b: BackendView | undefined): boolean => b !== undefined && b.status === "ok" && b.endpoints.length > 0;
const text = (v: PolicyValue | undefined): string => (typeof v === "string" ? v : "");
/** A template (policy/template.ts parts) as written, variables as `$name`. */
const templateText = (v: PolicyValue | undefined): string =>
  Array.isArray(v) ? (v as readonly unknown[]).map((x) => (typeof x === "string" ? x : `$${String((x as { v?: unknown }).v)}`)).join("") : text(v);
const ranges = (v: PolicyValue | undefined): string => (Array.isArray(v) ? v.join(", ") : "");

/** What a route's requests get, and whether none of them reaches a pod (`blocked`). */
export interface RouteAnswers {
  readonly text: string;
  readonly blocked: boolean;
}

/**
 * The route's answers in the proxy's order: conditions that apply to some requests (HTTP,
 * "/" only, a client outside a range, no credentials), then what every other request gets:
 * "proxied", or the status that ends it (a refused Ingress, a redirect, no endpoints).
 */
export function routeAnswers(r: SerializedRoute, backends: ReadonlyMap<string, BackendView>, rewrites = false, noDefaultBackend = false): RouteAnswers {
  const o = r.options ?? {};
  const stages = (Array.isArray(o.stages) ? o.stages : []) as readonly StagePolicy[];
  const parts: string[] = [];
  const end = (last: string): RouteAnswers => ({ text: [...parts, last].join("; "), blocked: true });
  const by = (stage: string) => stages.filter((p) => p.stage === stage);
  for (const p of by("certificate")) {
    if (p.kind === "certificate-refuse") return end(`${String(p.params.status)} refused: ${text(p.params.reason)}`);
    if (p.kind === "client-cert" && p.params.verify === "on") parts.push(text(p.params.errorPage) !== "" ? `302 to ${text(p.params.errorPage)} without a client certificate` : "400 without a client certificate");
  }
  for (const p of by("server")) if (p.kind === "app-root") parts.push(`"/" gets 302 to ${text(p.params.path)}`);
  if (o.fromToWwwRedirect === true) parts.push("the other www name redirects here");
  for (const p of by("denied")) return end(`${p.kind === "refuse" ? String(p.params.status) : "503"} refused: ${text(p.params.reason) || "the Ingress is refused"}`);
  for (const p of by("redirects")) {
    if (p.kind === "redirect") return end(`${String(p.params.code)} to ${text(p.params.url)}`);
  }
  // rewrite-target applies on a regex host's locations that capture (serialize.ts `rewrites`).
  for (const p of rewrites ? by("rewrite") : []) {
    const target = text(p.params.target);
    if (/^https?:\/\//i.test(target)) return end(`302 to ${target} (rewrite-target)`);
    parts.push(`rewrite-target ${target}`);
  }
  // The HTTPS redirect: sslRedirect is on unless the options say otherwise (absent = default).
  if ((r.tls && o.sslRedirect !== false) || o.forceSslRedirect === true) parts.push("HTTP: redirect to HTTPS");
  // The backend: the canary's when its weight takes every request, the fallback's when main has none.
  const canary = stages.find((p) => p.kind === "canary");
  const weight = typeof canary?.params.weight === "number" ? canary.params.weight : 0;
  const total = typeof canary?.params.weightTotal === "number" ? canary.params.weightTotal : 100;
  const target = r.canary !== undefined && weight >= total ? r.canary.backend : r.backend;
  const b = backends.get(target);
  // A host's implicit "/" location with no default backend: its policies, then 404 (below).
  if (!noDefaultBackend && !serves(b)) {
    const why = `${b?.status === "ok" ? "NoEndpoints" : b?.status ?? "unknown backend"}`;
    if (r.fallback !== undefined && target === r.backend) parts.push(`no endpoints (${why}): default-backend ${r.fallback} takes the requests`);
    else if (r.errorPages !== undefined && r.errorPages.codes.includes(503)) return end(`503 no endpoints (${why}): ${r.errorPages.backend === null ? "custom-http-errors answers 404" : `error page from ${r.errorPages.backend}`}`);
    else return end(`503 no endpoints (${why})`);
  }
  for (const p of by("limits")) if (p.params.denied === true) return end("503 refused: an invalid limit annotation");
  for (const p of by("access")) {
    if (p.kind !== "source-range") continue;
    if (Array.isArray(p.params.allow)) parts.push(`403 unless the client is in ${ranges(p.params.allow)}`);
    if (Array.isArray(p.params.deny)) parts.push(`403 for clients in ${ranges(p.params.deny)}`);
  }
  for (const p of by("authentication")) {
    if (p.kind === "basic-auth") {
      if (p.params.users === null) return end("500 refused: the basic-auth users are not resolved");
      if (r.authExempt !== true) parts.push(`401 without credentials (basic, realm "${text(p.params.realm)}")`);
    } else if (p.kind === "satisfy-any") {
      // nginx's `satisfy any`: the first of its checks that lets the request in suffices.
      const kinds = Array.isArray(p.params.checks) ? (p.params.checks as readonly { kind?: unknown }[]).map((c) => String(c.kind)) : [];
      parts.push(`satisfy any: ${kinds.join(", ")} (the first that lets the request in suffices; else 401, or 403)`);
    } else if (p.kind === "external-auth" && r.authExempt !== true) {
      parts.push(`the auth service decides${Array.isArray(p.params.signin) ? " (its 401 becomes 302 to auth-signin)" : ""}`);
    }
  }
  if (noDefaultBackend) return end("404 (no default backend)");
  // What a proxied request and its answer go through besides (compile/answer.ts says the same per request).
  for (const p of by("forwarding")) {
    if (p.kind === "ingress-mirror") parts.push(`a copy to ${templateText(p.params.url)} (mirror-target; its answer is ignored)`);
    if (p.kind === "custom-headers" && Array.isArray(p.params.headers)) parts.push(`answer fields ${(p.params.headers as unknown as [string, string][]).map(([n, v]) => `${n}: ${v}`).join(", ")} (custom-headers)`);
    if (p.kind === "proxy-rewrite") parts.push("the pod's Location or Set-Cookie rewritten (proxy-redirect, proxy-cookie)");
  }
  if (typeof o.upstreamTls === "string") parts.push(`TLS to the pods: ${o.upstreamTls}`);
  if (r.canary !== undefined && weight >= total) parts.push(`proxied to the canary ${r.canary.backend} (weight ${weight} of ${total})`);
  else if (r.canary !== undefined && weight > 0) parts.push(`proxied (${weight} of ${total} to the canary)`);
  else parts.push("proxied");
  return { text: parts.join("; "), blocked: false };
}

/** A canary's rules in a few words: what sends a request to it. */
function canaryRules(r: SerializedRoute): string {
  const stages = (Array.isArray(r.options?.stages) ? r.options.stages : []) as readonly StagePolicy[];
  const p = stages.find((s) => s.kind === "canary");
  if (p === undefined) return "canary (no rules)";
  const out: string[] = [];
  if (typeof p.params.header === "string") {
    const v = typeof p.params.headerValue === "string" ? `=${p.params.headerValue}` : typeof p.params.headerPattern === "string" ? ` ~ ${p.params.headerPattern}` : "";
    out.push(`header ${p.params.header}${v}`);
  }
  if (typeof p.params.cookie === "string") out.push(`cookie ${p.params.cookie}`);
  out.push(`weight ${String(p.params.weight)} of ${String(p.params.weightTotal)}`);
  return `canary: ${out.join(", ")}`;
}

/** A regex host's locations of one route, in the order tried (null: the host is not in regex mode). */
type Locations = readonly SerializedLocation[] | null;

const pathCell = (r: SerializedRoute, locs: Locations): string =>
  locs === null ? clean(r.path) : locs.length > 0 ? [...new Set(locs.map((l) => clean(l.location)))].join(", ") : `~* "^${clean(r.path)}"`;

/**
 * What the HTTPS listener does of each host's own TLS settings: its ssl-ciphers list
 * (compile/host-tls.ts, the host's first Ingress that sets it), which tls/sni.ts
 * buildTlsEntries gives the host's SNI entry.
 */
export interface RoutesTls {
  /** By lowercased host key (a `*.` host's entry too): the list and the Ingress it comes from. */
  readonly hostTls?: ReadonlyMap<string, HostTls>;
}

/** The TLS cell: a spec.tls host (HTTP redirected), and the host's own cipher list when it has one. */
function tlsCell(host: string, r: SerializedRoute, tls: RoutesTls): string {
  const base = r.tls ? "yes" : "no";
  const own = tls.hostTls?.get(host.toLowerCase());
  // Null: the listener's list, pinned so a wildcard's own list does not catch the host.
  if (own === undefined || own.ciphers === null) return base;
  return `${base}; ciphers ${own.ciphers} (ssl-ciphers of ${own.ingress})`;
}

function row(host: string, r: SerializedRoute, backends: ReadonlyMap<string, BackendView>, locs: Locations, noDefaultBackend = false, rootRewrites = false, tls: RoutesTls = {}): string[] {
  const isDefault = r.source !== "rule";
  const isRoot = r.source === "implicitRoot";
  const declared = r.pathType === r.declaredPathType ? r.pathType : `${r.pathType} (${r.declaredPathType})`;
  return [
    clean(host),
    // A regex host's paths are nginx locations, tried as case-insensitive regexes (table/regex.ts).
    isRoot ? "(other paths)" : isDefault ? "(default)" : pathCell(r, locs),
    isDefault ? "-" : locs !== null ? `regex (${r.declaredPathType})` : declared,
    clean(r.backend),
    noDefaultBackend ? "-" : endpointsCell(backends.get(r.backend)),
    clean(tlsCell(host, r, tls)),
    r.ingress === "" ? "--default-backend-service" : clean(r.ingress),
    clean(routeAnswers(r, backends, rootRewrites || (locs?.some((l) => l.rewrites) ?? false), noDefaultBackend).text),
  ];
}

/** The row of a route's canary, under it. */
function canaryRow(host: string, r: SerializedRoute, backends: ReadonlyMap<string, BackendView>, locs: Locations, tls: RoutesTls): string[] | null {
  if (r.canary === undefined) return null;
  const b = backends.get(r.canary.backend);
  return [
    clean(host),
    pathCell(r, locs),
    "canary",
    clean(r.canary.backend),
    endpointsCell(b),
    clean(tlsCell(host, r, tls)),
    clean(r.canary.ingress),
    clean(`${canaryRules(r)}${serves(b) ? "" : "; 503 when chosen (no endpoints)"}`),
  ];
}

const GATEWAY_HEADER = ["PORT", "LISTENER", "HOST", "MATCH", "BACKEND", "WEIGHT", "ENDPOINTS", "ROUTE", "ANSWERS"] as const;

/** A Gateway API rule match in a few words: path, then method, headers and query it asks for. */
function matchCell(m: GatewayMatch): string {
  const path = m.pathType === "PathPrefix" ? `PathPrefix ${m.path === "" ? "/" : m.path}` : `${m.pathType} ${m.path}`;
  const more = [
    ...(m.method === null ? [] : [m.method]),
    ...m.headers.map((h) => `${h.name}${h.regex === true ? " ~ " : ": "}${h.value}`),
    ...m.query.map((q) => `?${q.name}${q.regex === true ? "~" : "="}${q.value}`),
  ];
  return clean(more.length === 0 ? path : `${path} (${more.join(", ")})`);
}

/**
 * What a Gateway API rule's share answers: the rule-level answers the Gateway filters make
 * (compile/gateway/table.ts: a rule that cannot be served answers 500, a gRPC call on it
 * Trailers-Only grpc-status 14; a RequestRedirect answers its status), else as an Ingress
 * route's (no endpoints: 503; proxied).
 */
function gatewayAnswers(r: SerializedRoute, backends: ReadonlyMap<string, BackendView>): RouteAnswers {
  const stages = (Array.isArray(r.options?.stages) ? r.options.stages : []) as readonly StagePolicy[];
  const error = stages.find((p) => p.kind === "gateway-error");
  if (error !== undefined) return { text: `500 (${text(error.params.reason)}); a gRPC call: grpc-status 14`, blocked: true };
  const redirect = stages.find((p) => p.kind === "gateway-redirect");
  if (redirect !== undefined) return { text: `${typeof redirect.params.statusCode === "number" ? redirect.params.statusCode : 302} redirect (RequestRedirect)`, blocked: true };
  return routeAnswers(r, backends);
}

/**
 * The Gateway API rules, in lookup order (asked before the Ingress rules on the same port):
 * the shared ports' (PORT http/https) and, with --gateway-ports, each Gateway's own port's.
 */
function gatewayRows(t: SerializedTable, backends: ReadonlyMap<string, BackendView>): { rows: string[][]; blocked: number } {
  const rows: string[][] = [];
  let blocked = 0;
  const add = (port: string, listeners: readonly SerializedGatewayListener[]) => {
    for (const l of listeners) {
      for (const h of l.hosts) {
        for (const e of h.entries) {
          for (const w of e.weights) {
            const r = w.route;
            const a = gatewayAnswers(r, backends);
            if (a.blocked) blocked++;
            // A redirect or a rule that cannot be served has no backend (table.ts NO_BACKEND).
            const none = (Array.isArray(r.options?.stages) ? (r.options.stages as readonly StagePolicy[]) : []).some((p) => p.kind === "gateway-error" || p.kind === "gateway-redirect");
            rows.push([
              port === "" ? l.port : port,
              clean(l.listenerHostname),
              clean(h.hostname),
              matchCell(e.match),
              none ? "-" : clean(r.backend),
              String(w.weight),
              none ? "-" : endpointsCell(backends.get(r.backend)),
              clean(`${r.kind ?? "HTTPRoute"} ${r.ingress}`),
              clean(a.text),
            ]);
          }
        }
      }
    }
  };
  add("", t.gateway ?? []);
  for (const p of t.gatewayPorts ?? []) add(`${p.port} (${p.gateway}:${p.declared}${p.https ? " https" : ""})`, p.listeners);
  return { rows, blocked };
}

const aligned = (header: readonly string[], rows: readonly string[][]): string[] => {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join("  ");
  return [line(header), ...rows.map(line)];
};

/** The table as aligned text, with a one-line summary at the end. */
/**
 * The settings that act on every request before any route, or on every route or answer
 * (Config's --block-*, --server-header, --use-proxy-protocol, --global-auth-url, --gzip and
 * --brotli), when known.
 */
export interface EveryRequest {
  readonly blockCidrs?: readonly string[];
  readonly blockUserAgents?: readonly string[];
  readonly blockReferers?: readonly string[];
  readonly serverHeader?: string;
  readonly useProxyProtocol?: boolean;
  readonly globalAuthUrl?: string | null;
  readonly gzip?: boolean;
  readonly gzipLevel?: number;
  readonly brotli?: boolean;
  readonly brotliLevel?: number;
}

/** Lines for what every request and answer get, whatever the route (empty when nothing). */
function everyRequestText(t: SerializedTable, e: EveryRequest): string {
  const out: string[] = [];
  // serving/front.ts: nginx's "broken header" closes the connection.
  if (e.useProxyProtocol === true) out.push("Every connection: a PROXY protocol header first, or it is closed without an answer (use-proxy-protocol)");
  const block: string[] = [];
  if ((e.blockCidrs ?? []).length > 0) block.push(`clients in ${(e.blockCidrs ?? []).join(", ")}`);
  if ((e.blockUserAgents ?? []).length > 0) block.push(`User-Agent ${(e.blockUserAgents ?? []).join(", ")}`);
  if ((e.blockReferers ?? []).length > 0) block.push(`Referer ${(e.blockReferers ?? []).join(", ")}`);
  if (block.length > 0) out.push(`Every host, before any route: 403 for ${clean(block.join("; "))} (block-cidrs, block-user-agents, block-referers)`);
  const fields = (r: Readonly<Record<string, string>>) => Object.entries(r).map(([n, v]) => `${n}: ${v === "" ? "(removed)" : v}`).join(", ");
  const g = t.globalHeaders;
  if (g !== undefined && Object.keys(g.request).length > 0) out.push(`Every proxied request: ${clean(fields(g.request))} (proxy-set-headers)`);
  // compile/global-auth.ts: the routes' ANSWERS say "the auth service decides" for it too.
  if (typeof e.globalAuthUrl === "string") out.push(`Every route of an Ingress without auth-url and without enable-global-auth: "false" (no-auth-locations exempt): the auth service ${clean(e.globalAuthUrl)} decides (global-auth-url)`);
  const squeeze: string[] = [];
  if (e.brotli === true) squeeze.push(`br (brotli-level ${e.brotliLevel ?? 4})`);
  if (e.gzip === true) squeeze.push(`gzip (gzip-level ${e.gzipLevel ?? 1})`);
  if (squeeze.length > 0) out.push(`Every pod answer of a listed type (200, 403, 404): ${squeeze.join(", else ")} for a client that accepts it (enable-brotli, use-gzip)`);
  const answer: string[] = [];
  if (g !== undefined && Object.keys(g.response).length > 0) answer.push(`${fields(g.response)} (add-headers)`);
  if (e.serverHeader === "portico") answer.push("Server: portico (--server-header)");
  else if (e.serverHeader === "none") answer.push("no Server field (--server-header=none)");
  if (answer.length > 0) out.push(`Every answer: ${clean(answer.join("; "))}`);
  return out.length === 0 ? "" : `${out.join("\n")}\n`;
}

/** `tls`: the hosts' own TLS settings, for the TLS column (RoutesTls). */
export function formatRoutesText(t: SerializedTable, every: EveryRequest = {}, tls: RoutesTls = {}): string {
  const backends = new Map<string, BackendView>();
  for (const b of t.backends) backends.set(String(b.id), b as unknown as BackendView);
  const rows: string[][] = [];
  let blocked = 0;
  const add = (host: string, r: SerializedRoute, locs: Locations) => {
    rows.push(row(host, r, backends, locs, false, false, tls));
    const c = canaryRow(host, r, backends, locs, tls);
    if (c !== null) rows.push(c);
    if (routeAnswers(r, backends, locs?.some((l) => l.rewrites) ?? false).blocked) blocked++;
  };
  for (const h of t.hosts) {
    for (const r of h.routes) add(h.host, r, h.regex === undefined ? null : h.regex.filter((l) => l.route === `${r.ingress} ${r.rule}`));
    // The paths no route of the host takes: its implicit "/" location, sent to the default backend (HostRoutes.root).
    if (h.implicitRoot) {
      const slot = h.implicitRoot.backend === DEFAULT_BACKEND_SLOT.id;
      const root = slot && t.defaultRoute ? { ...h.implicitRoot, backend: t.defaultRoute.backend } : h.implicitRoot;
      rows.push(row(h.host, root, backends, null, slot && t.defaultRoute === null, h.implicitRootRewrites === true, tls));
    }
  }
  if (t.defaultRoute) add("(any other)", t.defaultRoute, null);
  const gw = gatewayRows(t, backends);
  const down = [...backends.values()].filter((b) => !serves(b)).length;
  const plural = (n: number, w: string) => `${n} ${w}${n === 1 ? "" : "s"}`;
  const gwSummary = gw.rows.length === 0 ? "" : `, ${plural(gw.rows.length, "Gateway API rule choice")}${gw.blocked > 0 ? ` (${gw.blocked} answering every request itself)` : ""}`;
  const summary = `${plural(t.hosts.length, "host")}, ${plural(t.routeCount, "route")}${t.defaultRoute ? " and a default route" : ""}${gwSummary}, ${plural(backends.size, "backend")}${down > 0 ? ` (${down} without endpoints)` : ""}${blocked > 0 ? `; ${plural(blocked, "route")} answering every request itself (see ANSWERS)` : ""}${t.generation !== undefined ? `; generation ${t.generation}` : ""}`;
  if (rows.length === 0 && gw.rows.length === 0) return `no routes${t.generation !== undefined ? ` (generation ${t.generation})` : ""}: requests get 404\n${everyRequestText(t, every)}`;
  // The Gateway API rules after the Ingresses' (they are asked first: docs/design.md "Gateway API").
  const gwText = gw.rows.length === 0 ? "" : `${rows.length === 0 ? "" : "\n"}Gateway API rules (asked before the Ingress rules on the same port):\n${aligned(GATEWAY_HEADER, gw.rows).join("\n")}\n`;
  const ingressText = rows.length === 0 ? "" : `${aligned(HEADER, rows).join("\n")}\n`;
  return `${ingressText}${gwText}\n${summary}\n${everyRequestText(t, every)}`;
}
