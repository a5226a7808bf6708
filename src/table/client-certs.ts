// Whether a table holds a route that reads client certificates: a `client-cert` stage whose
// verify mode is not `off` (kinds/client-cert.ts). The HTTPS listener asks for a certificate in
// the handshake only while this holds (docs/design.md, "Client certificates"): asking on every
// handshake makes browsers that hold client certificates offer a picker on any host.
import { bestHostname, heldEntries, hostnameMatches } from "./gateway.ts";
import { someRoute } from "./routes.ts";
import type { GatewayEntry, GatewayRoutes, HostRoutes, Route, RouteTable } from "./types.ts";

const known = new WeakMap<RouteTable, boolean>();
/** The answer per host entry, kept while the entry is (someRoute). */
const hostReads = new WeakMap<HostRoutes, boolean>();

/** Whether this route checks client certificates (a `client-cert` stage not `off`). */
export function readsClientCertificates(route: Route): boolean {
  for (const s of route.options.stages ?? []) if (s.kind === "client-cert" && s.params.verify !== "off") return true;
  return false;
}

/** The answer per Gateway API entry list, kept while the list is (the compiler keeps unchanged ones). */
const listReads = new WeakMap<readonly GatewayEntry[], boolean>();

export function entriesRead(list: readonly GatewayEntry[] | null): boolean {
  if (list === null) return false;
  let v = listReads.get(list);
  if (v === undefined) {
    v = list.some((e) => e.choices.some((c) => readsClientCertificates(c.match.route)));
    listReads.set(list, v);
  }
  return v;
}

/**
 * A Gateway API HTTPS listener's entries check client certificates (spec.tls.frontend
 * validation: compile/gateway/table.ts clientCertPolicy). HTTP listeners' entries never
 * answer on the HTTPS port, so they are not read.
 */
function gatewayReads(g: GatewayRoutes | null | undefined): boolean {
  if (g === null || g === undefined) return false;
  for (const hosts of g.https.values()) {
    if (entriesRead(hosts.any)) return true;
    for (const list of hosts.exact.values()) if (entriesRead(list)) return true;
    for (const [, list] of hosts.wildcards) if (entriesRead(list)) return true;
  }
  return false;
}

/** True when some route of `table` (or its default route, or a Gateway API HTTPS listener's entry) checks client certificates. Cached per table object. */
export function needsClientCertificates(table: RouteTable): boolean {
  let v = known.get(table);
  if (v === undefined) {
    v = (table.defaultRoute !== null && readsClientCertificates(table.defaultRoute)) || someRoute(table, readsClientCertificates, hostReads) || gatewayReads(table.gateway);
    known.set(table, v);
  }
  return v;
}

/** A Gateway API listener's AllowValidOnly check, as its entries' client-cert stages carry it. */
export interface StrictClientCa {
  /** PEM certificates (the stage's `ca`). */
  readonly ca: readonly string[];
  readonly depth: number;
}

const listStrict = new WeakMap<readonly GatewayEntry[], readonly StrictClientCa[]>();
const NO_STRICT: readonly StrictClientCa[] = Object.freeze([]);
/** Each check's content key (`depth\nca`), so a name's lists merge without a CA twice. */
const strictKey = new WeakMap<StrictClientCa, string>();

/** The AllowValidOnly checks (a client-cert stage `on` whose CA is resolved) of a list's entries, each once. Kept per list. */
function strictOf(list: readonly GatewayEntry[] | null | undefined): readonly StrictClientCa[] {
  if (list === null || list === undefined) return NO_STRICT;
  let v = listStrict.get(list);
  if (v === undefined) {
    const out: StrictClientCa[] = [];
    // Keyed on content, not on the array's identity: a worker decodes the table from JSON
    // (workers/wire.ts), so each route choice of one listener carries its own copy of the same
    // CA list, and one check per copy would verify a bad chain once per entry per handshake.
    const seen = new Set<string>();
    for (const e of list) {
      for (const c of e.choices) {
        for (const s of c.match.route.options.stages ?? []) {
          if (s.kind !== "client-cert" || s.params.verify !== "on") continue;
          const ca = s.params.ca;
          const depth = s.params.depth;
          if (!Array.isArray(ca) || typeof depth !== "number") continue;
          const key = `${depth}\n${ca.join("\n")}`;
          if (seen.has(key)) continue;
          seen.add(key);
          const check: StrictClientCa = { ca: ca as string[], depth };
          strictKey.set(check, key);
          out.push(check);
        }
      }
    }
    v = out.length === 0 ? NO_STRICT : out;
    listStrict.set(list, v);
  }
  return v;
}

/**
 * The AllowValidOnly checks a TLS connection for `servername` must pass before any request
 * (Gateway API FrontendValidationModeType AllowValidOnly: "a client certificate is required
 * during the TLS handshake and MUST pass validation"; the conformance tests expect the
 * connection to fail, not an answer): those of the entries the HTTPS port's lookup would ask
 * for that name (the most specific listener hostname, table/gateway.ts bestHostname; there the
 * name's exact entries, the `*.` patterns matching it and the entries for any host). Empty: no
 * check at the handshake (the requests' own client-cert stage still runs). Only the
 * compiler's Gateway API listeners put an `on` stage on their entries; Ingress auth-tls routes
 * keep nginx's per-request answers (kinds/client-cert.ts).
 */
export function strictClientCas(table: RouteTable, servername: string | null): readonly StrictClientCa[] {
  const https = table.gateway?.https;
  // needsClientCertificates holds whenever an HTTPS listener's entry has a stage not `off`
  // (gatewayReads), so every `on` stage, held lists included (they are subsets of the
  // listener's lists: compile/gateway/ingress-hosts.ts): without it no entry has a check, and
  // a handshake pays one WeakMap lookup instead of the listener-key search.
  if (https === undefined || https.size === 0 || servername === null || !needsClientCertificates(table)) return NO_STRICT;
  const name = servername.toLowerCase().replace(/\.$/, "");
  const lkey = bestHostname(https.keys(), name);
  const hosts = lkey === undefined ? undefined : https.get(lkey);
  if (hosts === undefined) return NO_STRICT;
  let out: StrictClientCa[] | null = null;
  // The exact, wildcard and `any` lists may carry the same CA; each is checked once (any
  // passing check lets the client in, so a repeat changes nothing but the work on a bad chain).
  let seen: Set<string> | null = null;
  const add = (l: readonly StrictClientCa[]) => {
    for (const c of l) {
      const key = strictKey.get(c) ?? `${c.depth}\n${c.ca.join("\n")}`;
      if (seen?.has(key)) continue;
      (seen ??= new Set()).add(key);
      (out ??= []).push(c);
    }
  };
  // A name an Ingress holds is answered from the held entries only (table/gateway.ts
  // findGatewayEntry; docs/design.md "Ingress and HTTPRoute on one host"): those are the only
  // entries that can serve it, so only their checks apply. An empty list: the Ingress serves it.
  const held = hosts.held == null ? undefined : heldEntries(hosts.held, name);
  if (held !== undefined) return strictOf(held);
  add(strictOf(hosts.exact.get(name)));
  for (const [pattern, list] of hosts.wildcards) if (hostnameMatches(pattern, name)) add(strictOf(list));
  add(strictOf(hosts.any));
  return out ?? NO_STRICT;
}
