// Gateway API objects → the table's Gateway part (table/gateway.ts) and the status of each
// object (docs/design.md "Gateway API"). Each rule becomes prebuilt Matches whose routes carry
// the rule's filters as stage policies (policy/stages.ts), so the proxy serves them through the
// same handler and policy runner as an Ingress's routes:
// - RequestHeaderModifier → a "gateway-request-headers" policy (forwarding stage);
// - RequestRedirect → a "gateway-redirect" policy (redirects stage) answering 301/302;
// - a rule that cannot be served (an invalid backendRef's share, all weights 0, no backend, an
//   unsupported filter) → a "gateway-error" policy answering 500 (HTTPBackendRef).
// Pure; the output does not depend on Map order.
import type { HTTPRoute } from "../../model/gateway.ts";
import type { Snapshot } from "../../store/types.ts";
import type { GatewayEntry, GatewayHosts, GatewayRoutes, WeightedMatch } from "../../table/types.ts";
import { isWildcardHost } from "../../table/gateway.ts";
import { orderStages, type StagePolicy } from "../../policy/stages.ts";
import { DEFAULT_ROUTE_OPTIONS } from "../../table/routes.ts";
import type { Backend, Match, Route } from "../../table/types.ts";
import type { BackendRef, ResolvedBackend } from "../backends.ts";
import type { CertificateBinding, GatewayCompileResult, RouteStatus } from "../types.ts";
import type { Diagnostic } from "../../model/diagnostic.ts";
import type { Secret } from "../../model/schemas.ts";
import { attachRoute, ourClasses, ourGateways, type ClassState, type Condition, type GatewayState, type RouteParentState } from "./attach.ts";
import { compileRoute, type CompiledMatch, type CompiledRule } from "./rules.ts";
import * as K from "../../policy/kinds.ts";
import { stagePolicy } from "../../policy/contract.ts";



function gatewayDiagnostics(gateways: ReadonlyMap<string, GatewayState>, routes: readonly RouteStatus[]): Diagnostic[] {
  const out: Diagnostic[] = [];
  const split = (key: string) => ({ namespace: key.slice(0, key.indexOf("/")), name: key.slice(key.indexOf("/") + 1) });
  for (const gw of gateways.values()) {
    for (const l of gw.listeners) {
      // Conflicted is the one condition whose "True" is the problem.
      const bad = l.conditions.find((c) => (c.type === "Conflicted" ? c.status === "True" : c.status === "False" && c.type !== "Programmed"));
      if (bad) out.push({ kind: "Gateway", ...split(gw.key), reason: "ListenerNotProgrammed", message: `listener ${l.name}: ${bad.reason}: ${bad.message}`, severity: "error" });
    }
  }
  for (const r of routes) {
    for (const p of r.parents) {
      const gwName = `${p.state.parentRef.namespace ?? split(r.key).namespace}/${p.state.parentRef.name}`;
      for (const c of p.conditions) {
        if (c.status !== "False") continue;
        out.push({ kind: "HTTPRoute", ...split(r.key), reason: c.type === "Accepted" ? "RouteNotAccepted" : "RouteRefsNotResolved", message: `parent Gateway ${gwName}: ${c.reason}: ${c.message}`, severity: c.type === "Accepted" ? "error" : "warning" });
      }
    }
  }
  return out;
}

const NO_DEPS = Object.freeze({ services: new Set<string>(), secrets: new Set<string>() });

function dependencies(snapshot: Snapshot, gateways: ReadonlyMap<string, GatewayState>): GatewayCompileResult["deps"] {
  const services = new Set<string>();
  const secrets = new Set<string>();
  for (const [key, r] of snapshot.httpRoutes) {
    const routeNs = key.slice(0, key.indexOf("/"));
    for (const rule of r.spec.rules ?? []) for (const b of rule.backendRefs ?? []) services.add(`${b.namespace ?? routeNs}/${b.name}`);
  }
  for (const gw of gateways.values()) {
    const gwNs = gw.key.slice(0, gw.key.indexOf("/"));
    for (const l of gw.gateway.spec.listeners) for (const c of l.tls?.certificateRefs ?? []) secrets.add(`${c.namespace ?? gwNs}/${c.name}`);
  }
  return { services, secrets };
}

/** The Backend of routes that never reach one (redirects, 500s): it is never sent to. */
export const NO_BACKEND: Backend = Object.freeze({
  id: "gateway-api/none",
  namespace: "",
  service: "",
  port: "",
  status: "Unsupported" as const,
  endpoints: Object.freeze([]),
  allEndpoints: Object.freeze([]),
  scheme: "http" as const,
  serverName: "",
  externalName: false,
});

const routeTime = (r: HTTPRoute) => r.metadata.creationTimestamp ?? "";

interface Listener {
  readonly port: number;
  readonly https: boolean;
}

/** Compile every Gateway API object of ours. */
export function compileGateways(snapshot: Snapshot, controllerName: string, resolve: (ref: BackendRef) => ResolvedBackend): GatewayCompileResult {
  const classes = ourClasses(snapshot, controllerName);
  const gateways = classes.size === 0 ? new Map<string, GatewayState>() : ourGateways(snapshot, classes);
  if (gateways.size === 0) return { classes, gateways, routes: [], table: null, certificates: [], deps: NO_DEPS, diagnostics: [] };
  // Oldest first, then namespace/name: the route order of the precedence rules.
  const routes = [...snapshot.httpRoutes.entries()].sort(([ka, a], [kb, b]) => {
    const ta = routeTime(a);
    const tb = routeTime(b);
    if (ta !== tb) return ta < tb ? -1 : 1;
    return ka < kb ? -1 : ka > kb ? 1 : 0;
  });
  const statuses: RouteStatus[] = [];
  type Pending = { entry: GatewayEntry; rank: number; rule: CompiledRule; match: CompiledMatch };
  const lists = { http: new Map<string, Map<string, Pending[]>>(), https: new Map<string, Map<string, Pending[]>>() };
  let attached = 0;
  /** Route hostnames served through HTTPS listeners without a hostname, and the listener's certificate. */
  const routeHosts: [string, string][] = [];
  routes.forEach(([key, route], rank) => {
    const parents = attachRoute(snapshot, gateways, route);
    if (parents.length === 0) return;
    const compiled = compileRoute(snapshot, route, resolve);
    const out: RouteStatus["parents"][number][] = [];
    // One entry per (rule match, listener port and protocol, hostname): redirects use the listener's port.
    const built = new Map<string, GatewayEntry>();
    for (const p of parents) {
      const accepted = p.accepted.status === "True" && compiled.unsupported !== null ? compiled.unsupported : p.accepted;
      out.push({ state: p, conditions: [accepted, compiled.resolvedRefs] });
      for (const a of p.attachments) {
        const cls = a.listener.portClass;
        if (cls === null) continue;
        const lkey = a.listener.hostname ?? "*";
        let hosts = lists[cls].get(lkey);
        if (!hosts) lists[cls].set(lkey, (hosts = new Map()));
        const listener: Listener = { port: a.listener.port, https: cls === "https" };
        if (cls === "https" && a.listener.hostname === null && a.listener.certificates[0] !== undefined) {
          for (const h of a.hostnames) if (h !== "*") routeHosts.push([h, a.listener.certificates[0]]);
        }
        for (const h of a.hostnames) {
          let list = hosts.get(h);
          if (!list) hosts.set(h, (list = []));
          for (const rule of compiled.rules) {
            rule.matches.forEach((match, mi) => {
              const id = `${rule.ruleIndex}/${mi}/${listener.port}/${listener.https}/${h}`;
              let entry = built.get(id);
              if (entry === undefined) built.set(id, (entry = buildEntry(rule, match, mi, listener, h)));
              if (!list!.some((x) => x.entry === entry)) list!.push({ entry, rank, rule, match });
              attached++;
            });
          }
        }
      }
    }
    statuses.push({ key, generation: route.metadata.generation ?? null, parents: out });
  });
  const build = (m: Map<string, Map<string, Pending[]>>): Map<string, GatewayHosts> => {
    const out = new Map<string, GatewayHosts>();
    for (const lkey of [...m.keys()].sort()) {
      const hosts = m.get(lkey)!;
      const exact = new Map<string, readonly GatewayEntry[]>();
      const wildcards: [string, readonly GatewayEntry[]][] = [];
      let any: readonly GatewayEntry[] | null = null;
      for (const h of [...hosts.keys()].sort()) {
        const sorted = Object.freeze(hosts.get(h)!.sort(precedence).map((p) => p.entry));
        if (h === "*") any = sorted;
        else if (isWildcardHost(h)) wildcards.push([h, sorted]);
        else exact.set(h, sorted);
      }
      wildcards.sort(([a], [b]) => b.length - a.length || (a < b ? -1 : a > b ? 1 : 0));
      out.set(lkey, Object.freeze({ exact, wildcards: Object.freeze(wildcards), any }));
    }
    return out;
  };
  const table = attached === 0 ? null : Object.freeze({ http: build(lists.http), https: build(lists.https) });
  return { classes, gateways, routes: statuses, table, certificates: listenerCertificates(snapshot, gateways, routeHosts), deps: dependencies(snapshot, gateways), diagnostics: gatewayDiagnostics(gateways, statuses) };
}

function decode(secret: Secret, key: string): string | null {
  const plain = secret.stringData?.[key];
  if (plain !== undefined && plain !== null) return plain;
  const b64 = secret.data?.[key];
  return b64 === undefined || b64 === null ? null : Buffer.from(b64, "base64").toString("utf8");
}

/**
 * One binding per HTTPS listener hostname, served by SNI like an Ingress's spec.tls host; the
 * first Gateway (by namespace/name) and listener to name a host wins. A listener without a
 * hostname binds its certificate to the hostnames of the routes attached to it (`routeHosts`,
 * after the listener hostnames); with none, its requests get the default certificate
 * (--default-ssl-certificate), docs/design.md "Gateway API".
 */
function listenerCertificates(snapshot: Snapshot, gateways: ReadonlyMap<string, GatewayState>, routeHosts: readonly (readonly [string, string])[]): CertificateBinding[] {
  const byHost = new Map<string, CertificateBinding>();
  for (const gw of gateways.values()) {
    for (const l of gw.listeners) {
      if (l.portClass !== "https" || l.hostname === null || byHost.has(l.hostname)) continue;
      const key = l.certificates[0];
      const secret = key === undefined ? undefined : snapshot.secrets.get(key);
      if (key === undefined || secret === undefined) continue;
      byHost.set(l.hostname, Object.freeze({
        host: l.hostname,
        secret: key,
        cert: decode(secret, "tls.crt"),
        key: decode(secret, "tls.key"),
        version: `${secret.metadata.uid ?? ""}/${secret.metadata.resourceVersion ?? ""}`,
        ingress: `${gw.key} (Gateway listener ${l.name})`,
      }));
    }
  }
  for (const [host, key] of routeHosts) {
    const secret = snapshot.secrets.get(key);
    if (byHost.has(host) || secret === undefined) continue;
    byHost.set(host, Object.freeze({
      host,
      secret: key,
      cert: decode(secret, "tls.crt"),
      key: decode(secret, "tls.key"),
      version: `${secret.metadata.uid ?? ""}/${secret.metadata.resourceVersion ?? ""}`,
      ingress: "Gateway API route hostname",
    }));
  }
  return [...byHost.values()];
}

/** HTTPRouteRule.matches precedence; ties: route order (age, then name), then rule and match order. */
function precedence(a: { rank: number; rule: CompiledRule; match: CompiledMatch }, b: { rank: number; rule: CompiledRule; match: CompiledMatch }): number {
  const ma = a.match;
  const mb = b.match;
  if (ma.pathType !== mb.pathType) return ma.pathType === "Exact" ? -1 : 1;
  if (ma.pathType === "PathPrefix" && ma.path.length !== mb.path.length) return mb.path.length - ma.path.length;
  if ((ma.method === null) !== (mb.method === null)) return ma.method === null ? 1 : -1;
  if (ma.headers.length !== mb.headers.length) return mb.headers.length - ma.headers.length;
  if (ma.query.length !== mb.query.length) return mb.query.length - ma.query.length;
  if (a.rank !== b.rank) return a.rank - b.rank;
  if (a.rule.ruleIndex !== b.rule.ruleIndex) return a.rule.ruleIndex - b.rule.ruleIndex;
  return a.rule.matches.indexOf(ma) - b.rule.matches.indexOf(mb);
}

function buildEntry(rule: CompiledRule, match: CompiledMatch, matchIndex: number, listener: Listener, host: string): GatewayEntry {
  const make = (backend: Backend, policies: StagePolicy[]): Match => {
    const route: Route = Object.freeze({
      ingress: rule.route,
      host: host === "*" ? null : host,
      path: match.written,
      pathType: match.pathType === "Exact" ? ("Exact" as const) : ("Prefix" as const),
      declaredPathType: match.pathType === "Exact" ? ("Exact" as const) : ("Prefix" as const),
      source: "rule" as const,
      ruleIndex: rule.ruleIndex,
      pathIndex: matchIndex,
      backend,
      // Gateway API asks for no HTTPS redirect and no HSTS: a listener serves what it declares.
      options: Object.freeze({ ...DEFAULT_ROUTE_OPTIONS, sslRedirect: false, hsts: false, stages: orderStages(policies) }),
      tls: false,
    });
    return Object.freeze({ route, hostKey: host, via: host === "*" ? ("any-host" as const) : isWildcardHost(host) ? ("wildcard-host" as const) : ("exact-host" as const) });
  };
  const error = (reason: string): GatewayEntry => ({
    match,
    choices: [{ match: make(NO_BACKEND, [stagePolicy(K.GATEWAY_ERROR, { reason })]), weight: 1 }],
    totalWeight: 1,
  });
  if (rule.invalid !== null) return error(rule.invalid);
  const policies: StagePolicy[] = [];
  if (rule.requestHeaders) {
    const h = rule.requestHeaders;
    const pair = (x: { name: string; value: string }): [string, string] => [x.name, x.value];
    policies.push(stagePolicy(K.GATEWAY_REQUEST_HEADERS, { set: h.set.map(pair), add: h.add.map(pair), remove: [...h.remove] }));
  }
  if (rule.redirect) {
    const r = rule.redirect;
    policies.push(
      stagePolicy(K.GATEWAY_REDIRECT, {
        scheme: r.scheme,
        hostname: r.hostname,
        port: r.port,
        statusCode: r.statusCode,
        listenerPort: listener.port,
        listenerScheme: listener.https ? "https" : "http",
        pathType: r.path?.type ?? null,
        pathValue: r.path?.value ?? null,
        // ReplacePrefixMatch replaces the matched prefix (HTTPPathModifier).
        matchedPrefix: match.pathType === "PathPrefix" ? match.path : null,
      }),
    );
    return { match, choices: [{ match: make(NO_BACKEND, policies), weight: 1 }], totalWeight: 1 };
  }
  if (rule.backends.length === 0) return error("the rule has no backendRefs");
  if (rule.totalWeight === 0) return error("every backendRef has weight 0");
  const choices: WeightedMatch[] = [];
  for (const b of rule.backends) {
    if (b.weight === 0) continue;
    choices.push({
      match: b.backend === null ? make(NO_BACKEND, [stagePolicy(K.GATEWAY_ERROR, { reason: "invalid backendRef" })]) : make(b.backend, policies),
      weight: b.weight,
    });
  }
  return { match, choices, totalWeight: rule.totalWeight };
}
