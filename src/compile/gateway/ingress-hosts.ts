// Ingress hosts and Gateway API routes in one table (docs/design.md "Gateway API", "Ingress
// and HTTPRoute on one host"). The Gateway rules are asked before the Ingress table, so a route
// from any namespace that reaches a host (a route without hostnames on a listener without one,
// or a route naming the host) would take paths of an Ingress it does not own, with none of
// that Ingress's access control. On a host an Ingress names, only the routes in the namespaces
// of the Ingresses naming it (the host's owners) are asked first; the others' rules still serve
// every host no Ingress names. Worked out here once per compile, per listener, as flat entry
// lists (GatewayHosts.held), so the request path pays one map lookup for it
// (table/gateway.ts heldEntries) and filters nothing.
import type { Diagnostic } from "../../model/diagnostic.ts";
import { bestHostname, hostnameMatches, isWildcardHost } from "../../table/gateway.ts";
import type { GatewayEntry, GatewayHeld, GatewayHosts, GatewayRoutes } from "../../table/types.ts";
import type { CertificateBinding, RouteStatus } from "../types.ts";

/** Who names a host: the Ingresses' namespaces, and the first Ingress (`namespace/name`) for messages. */
export interface HostClaim {
  readonly namespaces: ReadonlySet<string>;
  readonly ingress: string;
}

/** Host (`foo.com`, `*.foo.com`, or a server-alias name) → its claim. */
export type HostClaims = ReadonlyMap<string, HostClaim>;

interface ClaimingPlan {
  readonly namespace: string;
  readonly name: string;
  readonly tls: readonly { readonly hosts: readonly string[] }[];
}

/**
 * The one-namespace sets, shared: nearly every host is named by Ingresses of one namespace,
 * and a Set per host (10k at 10k hosts) was ~2.5 MiB of the compiled state. Claims never
 * write to their set (ReadonlySet), so sharing it is safe. Namespaces come and go over a
 * long life: past a bound the cache starts again (claims keep the sets they have).
 */
const ONE_NAMESPACE = new Map<string, ReadonlySet<string>>();
const ONE_NAMESPACE_MAX = 10_000;

function oneNamespace(ns: string): ReadonlySet<string> {
  let set = ONE_NAMESPACE.get(ns);
  if (set === undefined) {
    if (ONE_NAMESPACE.size >= ONE_NAMESPACE_MAX) ONE_NAMESPACE.clear();
    ONE_NAMESPACE.set(ns, (set = new Set([ns])));
  }
  return set;
}

function claimOfPlans(plans: readonly ClaimingPlan[]): HostClaim | undefined {
  const first = plans[0];
  if (first === undefined) return undefined;
  let namespaces: ReadonlySet<string> | null = null;
  for (let i = 1; i < plans.length; i++) {
    if (plans[i]!.namespace === first.namespace) continue;
    namespaces = new Set(plans.map((p) => p.namespace));
    break;
  }
  return { namespaces: namespaces ?? oneNamespace(first.namespace), ingress: `${first.namespace}/${first.name}` };
}

function sameClaim(a: HostClaim | undefined, b: HostClaim | undefined): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined || a.ingress !== b.ingress || a.namespaces.size !== b.namespaces.size) return false;
  for (const ns of a.namespaces) if (!b.namespaces.has(ns)) return false;
  return true;
}

/**
 * The hosts the served Ingresses name, kept by the Ingress compiler as it goes (compile.ts):
 * their rule hosts (ServedPlans.contributors, updated per dirty host key; `*`, the hostless
 * rules, names no host), their spec.tls hosts (ServedPlans.tlsPlans, when they change) and the
 * server-alias names, which the Ingress table serves as their host. `version` moves only when
 * some host's claim changes, so an Ingress edit that changes no host's namespaces leaves the
 * held lists as they were.
 */
export class HostClaimsIndex {
  readonly #rules = new Map<string, HostClaim>();
  #tls = new Map<string, HostClaim>();
  #aliasKeys: ReadonlyMap<string, string> = new Map();
  readonly #claims = new Map<string, HostClaim>();
  version = 0;

  get claims(): HostClaims {
    return this.#claims;
  }

  /** A rule host key's contributors changed (in priority order; none: undefined). */
  setRules(hostKey: string, plans: readonly ClaimingPlan[] | undefined): void {
    if (hostKey === "*") return;
    const c = plans === undefined ? undefined : claimOfPlans(plans);
    if (c === undefined) this.#rules.delete(hostKey);
    else this.#rules.set(hostKey, c);
    this.#merge(hostKey);
  }

  /** The served plans with spec.tls changed (in priority order). */
  setTls(plans: readonly ClaimingPlan[]): void {
    const by = new Map<string, ClaimingPlan[]>();
    for (const p of plans)
      for (const t of p.tls)
        for (const h of t.hosts) {
          if (h === "" || h === "*") continue;
          const l = by.get(h);
          if (l === undefined) by.set(h, [p]);
          else if (!l.includes(p)) l.push(p);
        }
    const before = this.#tls;
    this.#tls = new Map([...by].map(([h, l]) => [h, claimOfPlans(l)!] as const));
    for (const h of before.keys()) if (!this.#tls.has(h)) this.#merge(h);
    for (const h of this.#tls.keys()) this.#merge(h);
  }

  /** The table's server-alias names (name → host key): re-read when the map is another. */
  setAliases(aliasKeys: ReadonlyMap<string, string>): void {
    if (aliasKeys === this.#aliasKeys) return;
    const before = this.#aliasKeys;
    this.#aliasKeys = aliasKeys;
    for (const name of before.keys()) this.#merge(name);
    for (const name of aliasKeys.keys()) this.#merge(name);
  }

  #merge(host: string): void {
    const r = this.#rules.get(host);
    const t = this.#tls.get(host);
    let c: HostClaim | undefined = r === undefined ? t : t === undefined ? r : { namespaces: new Set([...r.namespaces, ...t.namespaces]), ingress: r.ingress };
    if (c === undefined) {
      const key = this.#aliasKeys.get(host);
      if (key !== undefined) c = this.#claims.get(key);
    }
    if (sameClaim(this.#claims.get(host), c)) return;
    if (c === undefined) this.#claims.delete(host);
    else this.#claims.set(host, c);
    this.version++;
    // A server-alias of this host takes its claim: follow it (aliases are few).
    if (this.#aliasKeys.size > 0) for (const [name, key] of this.#aliasKeys) if (key === host && name !== host) this.#merge(name);
  }
}

/** The claim covering a request host: its own, else an Ingress wildcard's (one whole first label). */
function claimOf(claims: HostClaims, host: string): HostClaim | undefined {
  const own = claims.get(host);
  if (own !== undefined || isWildcardHost(host)) return own;
  const dot = host.indexOf(".");
  return dot > 0 ? claims.get(`*.${host.slice(dot + 1)}`) : undefined;
}

const routeNamespace = (e: GatewayEntry): string | null => e.choices[0]?.match.route.ingress.namespace ?? null;
const NO_ENTRIES: readonly GatewayEntry[] = Object.freeze([]);

/** The entry lists a host is asked of on one listener, in lookup order (findGatewayEntry). */
function listsFor(idx: GatewayHosts, host: string): (readonly GatewayEntry[])[] {
  const out: (readonly GatewayEntry[])[] = [];
  const exact = idx.exact.get(host);
  if (exact !== undefined) out.push(exact);
  for (const [p, l] of idx.wildcards) if (hostnameMatches(p, host)) out.push(l);
  if (idx.any !== null) out.push(idx.any);
  return out;
}

/** The owners' entries of `lists`, flattened; null when that is every entry (nothing held back). */
function ownersOnly(lists: readonly (readonly GatewayEntry[])[], owners: ReadonlySet<string>): readonly GatewayEntry[] | null {
  let dropped = false;
  const out: GatewayEntry[] = [];
  for (const l of lists)
    for (const e of l) {
      const ns = routeNamespace(e);
      if (ns !== null && owners.has(ns)) out.push(e);
      else dropped = true;
    }
  if (!dropped) return null;
  return out.length === 0 ? NO_ENTRIES : Object.freeze(out);
}

/** One listener's held lists, or null when every host an Ingress names is asked as before. */
function heldFor(lkey: string, idx: GatewayHosts, listenerKeys: readonly string[], claims: HostClaims): GatewayHeld | null {
  const exact = new Map<string, readonly GatewayEntry[]>();
  const wildcard = new Map<string, readonly GatewayEntry[]>();
  // With no route wildcards and no routes without hostnames here, a host reaches only the
  // route hostname naming it: those are the only hosts to look at.
  if (idx.any === null && idx.wildcards.length === 0) {
    for (const [host, list] of idx.exact) {
      const claim = claimOf(claims, host);
      const held = claim === undefined ? null : ownersOnly([list], claim.namespaces);
      if (held !== null) exact.set(host, held);
    }
    return exact.size === 0 ? null : Object.freeze({ exact, wildcard });
  }
  // Ingress wildcards: the hosts `x.S` this listener may be chosen for are asked of the route
  // wildcards matching them and the routes without hostnames; which ones depends on S alone.
  for (const [key, claim] of claims) {
    if (!isWildcardHost(key)) continue;
    const probe = `x${key.slice(1)}`;
    if (lkey !== "*" && !hostnameMatches(lkey, probe)) continue;
    const lists: (readonly GatewayEntry[])[] = [];
    for (const [p, l] of idx.wildcards) if (hostnameMatches(p, probe)) lists.push(l);
    if (idx.any !== null) lists.push(idx.any);
    const held = ownersOnly(lists, claim.namespaces);
    if (held !== null) wildcard.set(key.slice(2), held);
  }
  // Exact names: the Ingress hosts (and aliases) this listener is chosen for, the route
  // hostnames on it and its own hostname when an Ingress names them. A name under a held
  // wildcard gets its own list even when nothing is held back from it, so the wildcard's
  // does not stand in for it. Most hosts reach the routes without hostnames alone: their
  // list depends on the owners only, and is shared.
  const anyOnly = new Map<string, readonly GatewayEntry[] | null>();
  const consider = (host: string) => {
    if (exact.has(host)) return;
    const claim = claimOf(claims, host);
    if (claim === undefined) return;
    const lists = listsFor(idx, host);
    let held: readonly GatewayEntry[] | null;
    if (lists.length === 1 && lists[0] === idx.any) {
      const key = [...claim.namespaces].join("\n");
      const known = anyOnly.get(key);
      held = known !== undefined ? known : ownersOnly(lists, claim.namespaces);
      if (known === undefined) anyOnly.set(key, held);
    } else held = ownersOnly(lists, claim.namespaces);
    if (held !== null) exact.set(host, held);
    else if (wildcard.size > 0) {
      const dot = host.indexOf(".");
      if (dot > 0 && wildcard.has(host.slice(dot + 1))) exact.set(host, lists.length === 1 ? lists[0]! : Object.freeze(lists.flat()));
    }
  };
  const one = listenerKeys.length === 1;
  for (const host of claims.keys()) if (!isWildcardHost(host) && (one || bestHostname(listenerKeys, host) === lkey)) consider(host);
  for (const host of idx.exact.keys()) consider(host);
  if (lkey !== "*" && !isWildcardHost(lkey)) consider(lkey);
  return exact.size === 0 && wildcard.size === 0 ? null : Object.freeze({ exact, wildcard });
}

function holdListeners(listeners: ReadonlyMap<string, GatewayHosts>, claims: HostClaims): ReadonlyMap<string, GatewayHosts> {
  if (listeners.size === 0) return listeners;
  const keys = [...listeners.keys()];
  let changed = false;
  const out = new Map<string, GatewayHosts>();
  for (const [lkey, idx] of listeners) {
    const held = heldFor(lkey, idx, keys, claims);
    if (held === null) out.set(lkey, idx);
    else {
      changed = true;
      out.set(lkey, Object.freeze({ ...idx, held }));
    }
  }
  return changed ? out : listeners;
}

/**
 * The Gateway table with each listener's held lists: on a host an Ingress names, only the
 * owners' routes are asked before the Ingress table. The same table when nothing is held.
 */
export function holdIngressHosts(routes: GatewayRoutes, claims: HostClaims): GatewayRoutes {
  if (claims.size === 0) return routes;
  const http = holdListeners(routes.http, claims);
  const https = holdListeners(routes.https, claims);
  return http === routes.http && https === routes.https ? routes : Object.freeze({ http, https });
}

/**
 * A warning for each route that names a host an Ingress in another namespace names (a route
 * hostname equal to the Ingress host, or under its wildcard): the route stays Accepted (the
 * Gateway API has no condition for this), but its rules are not asked on that host.
 */
export function heldHostDiagnostics(routes: GatewayRoutes, claims: HostClaims, statuses: readonly RouteStatus[]): Diagnostic[] {
  if (claims.size === 0) return [];
  const grpcOnly = new Set<string>();
  const http = new Set<string>();
  for (const s of statuses) (s.kind === "GRPCRoute" ? grpcOnly : http).add(s.key);
  const seen = new Set<string>();
  const out: Diagnostic[] = [];
  const check = (host: string, claim: HostClaim, list: readonly GatewayEntry[]) => {
    for (const e of list) {
      const r = e.choices[0]?.match.route.ingress;
      if (r === undefined || claim.namespaces.has(r.namespace)) continue;
      const key = `${r.namespace}/${r.name}`;
      const id = `${key}\n${host}`;
      if (seen.has(id)) continue;
      seen.add(id);
      // The text becomes an Event in the route's namespace (kube/events.ts): it names neither
      // the Ingress nor its namespaces, which belong to another tenant. Explain, asked about
      // the host by an operator, names the Ingress that answers.
      out.push({
        kind: grpcOnly.has(key) && !http.has(key) ? "GRPCRoute" : "HTTPRoute",
        namespace: r.namespace,
        name: r.name,
        reason: "RouteHostHeldByIngress",
        message: `hostname ${host} is named by an Ingress of another namespace: only routes of the namespaces of its Ingresses are asked there; this route's rules are not`,
        severity: "warning",
      });
    }
  };
  for (const listeners of [routes.http, routes.https])
    for (const idx of listeners.values()) {
      for (const [host, list] of idx.exact) {
        const claim = claimOf(claims, host);
        if (claim !== undefined) check(host, claim, list);
      }
      for (const [host, list] of idx.wildcards) {
        const claim = claims.get(host);
        if (claim !== undefined) check(host, claim, list);
      }
    }
  return out;
}

/**
 * The Gateway certificate bindings that do not take a host from an Ingress: a host an
 * Ingress's spec.tls binds (exactly, or by a `*.` wildcard covering it) keeps the Ingress's
 * certificate, as its requests go to the Ingress unless its owners' routes match.
 */
export function withoutIngressTlsHosts(gateway: readonly CertificateBinding[], ingress: readonly CertificateBinding[]): readonly CertificateBinding[] {
  if (gateway.length === 0 || ingress.length === 0) return gateway;
  const bound = new Set<string>();
  for (const c of ingress) if (c.host !== "") bound.add(c.host);
  if (bound.size === 0) return gateway;
  const covered = (h: string): boolean => {
    if (bound.has(h)) return true;
    if (isWildcardHost(h)) return false;
    const dot = h.indexOf(".");
    return dot > 0 && bound.has(`*.${h.slice(dot + 1)}`);
  };
  const kept = gateway.filter((c) => !covered(c.host));
  return kept.length === gateway.length ? gateway : kept;
}
