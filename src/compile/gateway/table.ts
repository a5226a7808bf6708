// Gateway API objects → the table's Gateway part (table/gateway.ts) and the status of each
// object (docs/design.md "Gateway API"). Each rule becomes prebuilt Matches whose routes carry
// the rule's filters as stage policies (policy/stages.ts), so the proxy serves them through the
// same handler and policy runner as an Ingress's routes:
// - RequestHeaderModifier → a "gateway-request-headers" policy (forwarding stage);
// - RequestRedirect → a "gateway-redirect" policy (redirects stage) answering 301, 302, 303,
//   307 or 308;
// - URLRewrite → a "gateway-rewrite" policy (rewrite stage): the upstream Host and path;
// - RequestMirror → a "gateway-mirror" policy (forwarding stage): a copy sent, answer discarded;
// - ResponseHeaderModifier → a "gateway-response-headers" policy (cors stage): the answer's fields;
// - CORS → a "gateway-cors" policy (cors stage): preflights answered, the CORS fields added;
// - a rule that cannot be served (an invalid backendRef's share, all weights 0, no backend, an
//   unsupported filter) → a "gateway-error" policy answering 500 (HTTPBackendRef).
// Pure; the output does not depend on Map order.
import type { GRPCRoute, HTTPRoute, ReferenceGrant } from "../../model/gateway.ts";
import type { Snapshot } from "../../store/types.ts";
import type { GatewayEntry, GatewayHosts, GatewayRoutes, WeightedMatch } from "../../table/types.ts";
import { isWildcardHost } from "../../table/gateway.ts";
import type { StagePolicy } from "../../policy/stages.ts";
import { assembleStages } from "../stages.ts";
import { clientCertStage } from "../../annotations/access-stages.ts";
import { DEFAULT_RETRY, DEFAULT_ROUTE_OPTIONS } from "../../table/routes.ts";
import type { Backend, Match, Route, RouteOptions } from "../../table/types.ts";
import type { BackendRef, ResolvedBackend } from "../backends.ts";
import type { CertificateBinding, GatewayCompileResult, KeySet, RouteStatus } from "../types.ts";
import type { Diagnostic } from "../../model/diagnostic.ts";
import type { Secret } from "../../model/schemas.ts";
import type { KindObjects } from "../../model/kinds.ts";
import type { IngressNginxPolicy } from "../../model/portico-policy.ts";
import { secretBinding } from "../tls.ts";
import { attachRoute, cond, ourClasses, ourGateways, type ClassState, type Condition, type GatewayState, type ListenerState, type RouteParentState } from "./attach.ts";
import { relevantChangedKeys } from "../changes.ts";
import { NO_FLAGS, POLICY_KIND, withExtension } from "./extension.ts";
import { PORTICO_GROUP } from "../../model/portico-policy.ts";
import { authSecretKey, configMapKeys, gatewayCaConfigMapKeys } from "../../model/secret-refs.ts";
import { deepEqual, relevantEqual } from "../../store/relevance.ts";
import type { AccessFlags } from "../access.ts";
import { compileRoute, HTTP_ROUTE_KIND, type CompiledMatch, type CompiledRule, type HeaderModifier, type Redirect, type Rewrite, type Timeouts, type WeightedBackend } from "./rules.ts";
import { changedConflicts, GRPC_ROUTE_KIND, grpcAsHttpRoute, grpcObjectKey, grpcWorkKey, kindConflicts, withoutRefused, type KindAttachments } from "./grpcroute.ts";
import * as K from "../../kinds/index.ts";
import { stagePolicy } from "../../policy/contract.ts";
import { NONE } from "../empty.ts";




const split = (key: string) => ({ namespace: key.slice(0, key.indexOf("/")), name: key.slice(key.indexOf("/") + 1) });

function listenerDiagnostics(gateways: ReadonlyMap<string, GatewayState>): Diagnostic[] {
  const out: Diagnostic[] = [];
  for (const gw of gateways.values()) {
    for (const l of gw.listeners) {
      // Conflicted is the one condition whose "True" is the problem.
      const bad = l.conditions.find((c) => (c.type === "Conflicted" ? c.status === "True" : c.status === "False" && c.type !== "Programmed"));
      if (bad) out.push({ kind: "Gateway", ...split(gw.key), reason: "ListenerNotProgrammed", message: `listener ${l.name}: ${bad.reason}: ${bad.message}`, severity: "error" });
    }
  }
  return out;
}

function routeDiagnostics(r: RouteStatus): Diagnostic[] {
  const out: Diagnostic[] = [];
  for (const p of r.parents) {
    const gwName = `${p.state.parentRef.namespace ?? split(r.key).namespace}/${p.state.parentRef.name}`;
    for (const c of p.conditions) {
      if (c.type === "PartiallyInvalid") {
        out.push({ kind: r.kind ?? "HTTPRoute", ...split(r.key), reason: "RouteRuleDropped", message: `parent Gateway ${gwName}: ${c.message}`, severity: "warning" });
        continue;
      }
      if (c.status !== "False") continue;
      out.push({ kind: r.kind ?? "HTTPRoute", ...split(r.key), reason: c.type === "Accepted" ? "RouteNotAccepted" : "RouteRefsNotResolved", message: `parent Gateway ${gwName}: ${c.reason}: ${c.message}`, severity: c.type === "Accepted" ? "error" : "warning" });
    }
  }
  return out;
}

type Namespace = KindObjects["Namespace"];

const NO_DEPS = Object.freeze({ services: new Set<string>(), secrets: new Set<string>(), configMaps: new Set<string>() });

/**
 * How many routes (HTTPRoute or GRPCRoute works) compileGateways has compiled in this process:
 * a debug counter the tests read to hold a change to what it must compile again
 * (docs/design.md "Gateway API", "What a change compiles again").
 */
export const gatewayRouteCompiles = { count: 0 };

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
  /** The listener's client certificate check (clientCertPolicy), first on each of its entries; null: none. */
  readonly clientCert: StagePolicy | null;
}

/**
 * The most CA certificates above a client's certificate a Gateway listener's validation
 * accepts: "The maximum depth of a certificate chain accepted in verification is Implementation
 * specific" (apis/v1 gateway_types.go TLSConfig.validation).
 */
const GATEWAY_CLIENT_VERIFY_DEPTH = 5;

const clientCertPolicies = new WeakMap<ListenerState, StagePolicy | null>();

/**
 * An HTTPS listener's client certificate validation (attach.ts ClientValidation) as the
 * client-cert stage the Ingress auth-tls annotations use (kinds/client-cert.ts), first on every
 * entry of the listener: AllowValidOnly is `on` (no valid certificate, no answer but 400; the
 * handshake itself is refused before that: http2/listener.ts onSecureConnection asks
 * proxy/pipeline/handler.ts refusesClient), AllowInsecureFallback `insecure_fallback`. A
 * route with the stage needs the node:http2 listener, which asks for the certificate
 * (table/listener-needs.ts), and a request whose Host is not its connection's SNI name is 421
 * (the check would otherwise be met on a connection negotiated for another name).
 * One per listener state, so the entries of a listener share it.
 */
function clientCertPolicy(l: ListenerState): StagePolicy | null {
  let p = clientCertPolicies.get(l);
  if (p === undefined) {
    const v = l.clientValidation;
    p =
      v === null
        ? null
        : clientCertStage(
            { verify: v.mode === "AllowValidOnly" ? "on" : "insecure_fallback", depth: GATEWAY_CLIENT_VERIFY_DEPTH, errorPage: null, passCertificate: false, matchCn: null },
            `${l.gateway}#${l.name}`,
            v.ca,
          );
    clientCertPolicies.set(l, p);
  }
  return p;
}

/** One rule match of one route, on one listener hostname and route hostname. */
interface Piece {
  /** The route's key and creationTimestamp (precedence ties). */
  readonly key: string;
  readonly time: string;
  /** `cls\nlkey`: the listener class ("http" or "https") and listener hostname ("*": none), made once per attachment. */
  readonly group: string;
  readonly host: string;
  readonly entry: GatewayEntry;
  readonly ruleIndex: number;
  readonly matchIndex: number;
  readonly match: CompiledMatch;
}

/** What one HTTPRoute contributes, kept while its inputs are the same (see compileGateways). */
interface RouteWork {
  readonly key: string;
  readonly route: HTTPRoute;
  /** creationTimestamp: the older route wins a precedence tie. */
  readonly time: string;
  readonly parents: readonly RouteParentState[];
  /** The parents as attachRoute found them, before the HTTPRoute/GRPCRoute hostname check (grpcroute.ts). */
  readonly attachedTo: readonly RouteParentState[];
  /** Null when no parentRef names a Gateway of ours. */
  readonly status: RouteStatus | null;
  readonly diagnostics: readonly Diagnostic[];
  readonly pieces: readonly Piece[];
  /** `namespace/name` of each Service its backendRefs name, found or not. */
  readonly services: readonly string[];
  /** Route hostnames served through HTTPS listeners without a hostname, with the listener's certificate. */
  readonly certHosts: readonly (readonly [string, string])[];
  /**
   * What its rules' ExtensionRefs read besides the route (extension.ts): `p:` the
   * IngressNginxPolicy keys named, found or not, and of those found `c:` the ConfigMaps
   * (auth-proxy-set-headers, custom-headers) and `s:` the basic-auth Secret their annotations
   * name. Empty for a route without an ExtensionRef.
   */
  readonly reads: readonly string[];
}

type Pending = Piece;

/**
 * What a compile keeps for the next one, held by its result (a WeakMap, so a result stays a
 * plain value) and handed on: the next compile takes it and updates it in place, so only the
 * latest result has one.
 */
interface State {
  readonly controllerName: string;
  /** The GatewayClasses and Gateways as last compiled (compared in what the compiler reads: unchanged keeps the listener states). */
  gatewayClasses: ReadonlyMap<string, KindObjects["GatewayClass"]>;
  gateways: ReadonlyMap<string, KindObjects["Gateway"]>;
  /** Namespaces, ReferenceGrants and IngressNginxPolicies as last compiled: compared key by key (what changed compiles the routes reading it). */
  namespaces: ReadonlyMap<string, Namespace>;
  referenceGrants: ReadonlyMap<string, ReferenceGrant>;
  policies: ReadonlyMap<string, IngressNginxPolicy>;
  /** Some listener admits routes by a Namespace selector: only then do Namespace labels matter. */
  selectsNamespaces: boolean;
  /** The flags an IngressNginxPolicy's rules read (extension.ts), as last compiled. */
  flags: AccessFlags;
  httpRoutes: ReadonlyMap<string, HTTPRoute>;
  grpcRoutes: ReadonlyMap<string, GRPCRoute>;
  /** Work key → the listeners the route is refused on (grpcroute.ts kindConflicts). */
  refused: ReadonlyMap<string, ReadonlySet<ListenerState>>;
  classes: ReadonlyMap<string, ClassState>;
  /** Our Gateways with their listeners validated; attachedRoutes is counted on copies. */
  base: ReadonlyMap<string, GatewayState>;
  listenerDiagnostics: readonly Diagnostic[];
  /** The Secrets our listeners name: a change to one validates the listeners again (revalidate). */
  secrets: ReadonlySet<string>;
  /** The CA ConfigMaps spec.tls.frontend names for our HTTPS listeners: likewise. */
  caConfigMaps: ReadonlySet<string>;
  readonly works: Map<string, RouteWork>;
  /** The route keys in precedence order: oldest first, then namespace/name. */
  order: readonly string[];
  /** Service key → the routes naming it: one route key, or a Set of two or more (most Services have one route: a Set each costs ~240 bytes at 10k). */
  readonly byService: Map<string, string | Set<string>>;
  /** RouteWork.reads key → the routes reading it, as byService. */
  readonly byRead: Map<string, string | Set<string>>;
  /** `cls\nlkey` → route hostname → its entries' pendings, in precedence order. */
  readonly pend: Map<string, Map<string, Pending[]>>;
  /** The table's two listener maps, as last built. */
  http: ReadonlyMap<string, GatewayHosts>;
  https: ReadonlyMap<string, GatewayHosts>;
  /** Routes attached to each listener (attachedRoutes). */
  readonly attached: Map<ListenerState, Set<string>>;
  /** The last lists in route order, and each status's index (null: not built yet). */
  statuses: RouteStatus[];
  statusAt: Map<string, number> | null;
  diagnostics: readonly Diagnostic[];
  routeHosts: readonly (readonly [string, string])[];
}

const STATES = new WeakMap<GatewayCompileResult, State>();

/**
 * What changed since `prev` was compiled, as compile.ts finds it: the Service keys (also the
 * EndpointSlice group keys), Secret keys and ConfigMap keys among `prev.deps` that changed
 * (Secrets and ConfigMaps in what the compiler reads of them: store/relevance.ts). Without it,
 * or when `prev` is not the latest result, everything is compiled.
 */
export interface GatewayChanges {
  readonly prev: GatewayCompileResult;
  readonly services: ReadonlySet<string>;
  readonly secrets: ReadonlySet<string>;
  readonly configMaps: ReadonlySet<string>;
}

/** Adds `key` to the routes `index` holds under `dep` (one key, or a Set of two or more). */
function indexAdd(index: Map<string, string | Set<string>>, dep: string, key: string): void {
  const named = index.get(dep);
  if (named === undefined) index.set(dep, key);
  else if (typeof named === "object") named.add(key);
  else if (named !== key) index.set(dep, new Set([named, key]));
}

function indexDelete(index: Map<string, string | Set<string>>, dep: string, key: string): void {
  const named = index.get(dep);
  if (named === key) index.delete(dep);
  else if (typeof named === "object" && named.delete(key) && named.size === 1) index.set(dep, named.values().next().value as string);
}

function indexed(index: ReadonlyMap<string, string | Set<string>>, dep: string, out: Set<string>): void {
  const named = index.get(dep);
  if (typeof named === "string") out.add(named);
  else if (named !== undefined) for (const k of named) out.add(k);
}

/**
 * The flags an IngressNginxPolicy's rules read, compared by value (a new CompileConfig may carry
 * the same ones); an absent list is an empty one (the flag not given).
 */
const sameFlags = (a: AccessFlags, b: AccessFlags): boolean =>
  a === b ||
  deepEqual(
    [a.allowlistSourceRange ?? NONE, a.denylistSourceRange ?? NONE, a.globalAllowedResponseHeaders ?? NONE],
    [b.allowlistSourceRange ?? NONE, b.denylistSourceRange ?? NONE, b.globalAllowedResponseHeaders ?? NONE],
  );

/** The work keys of routes in `namespaces` (keys are `namespace/name`, a GRPCRoute's with a suffix). */
function routesIn(works: ReadonlyMap<string, RouteWork>, namespaces: ReadonlySet<string>, out: Set<string>): void {
  if (namespaces.size === 0) return;
  for (const k of works.keys()) if (namespaces.has(k.slice(0, k.indexOf("/")))) out.add(k);
}

/**
 * The ReferenceGrants changed between `prev` and `next` (in spec or identity, store/relevance.ts):
 * the namespaces whose routes they let reach a Service (from HTTPRoute or GRPCRoute), and
 * whether one speaks for Gateways (a listener's certificateRef: the listeners are validated again).
 */
function grantChanges(prev: ReadonlyMap<string, ReferenceGrant>, next: ReadonlyMap<string, ReferenceGrant>): { routes: Set<string>; gateways: boolean } {
  const out = new Set<string>();
  let gateways = false;
  const from = (g: ReferenceGrant | undefined) => {
    for (const f of g?.spec.from ?? []) {
      if (f.kind === "Gateway") gateways = true;
      else if (f.kind === HTTP_ROUTE_KIND.kind || f.kind === GRPC_ROUTE_KIND.kind) out.add(f.namespace);
    }
  };
  relevantChangedKeys("ReferenceGrant", prev, next, (k) => {
    from(prev.get(k));
    from(next.get(k));
  });
  return { routes: out, gateways };
}

/**
 * What the listeners of `base` read besides their Gateways: their Secrets, the CA ConfigMaps
 * spec.tls.frontend names for their ports (attach.ts resolveCaRefs), and whether one selects
 * namespaces.
 */
function listenerReads(base: ReadonlyMap<string, GatewayState>): { secrets: Set<string>; caConfigMaps: Set<string>; selectsNamespaces: boolean } {
  const secrets = new Set<string>();
  const caConfigMaps = new Set<string>();
  let selectsNamespaces = false;
  for (const gw of base.values()) {
    const gwNs = gw.key.slice(0, gw.key.indexOf("/"));
    for (const l of gw.gateway.spec.listeners) {
      for (const c of l.tls?.certificateRefs ?? []) secrets.add(`${c.namespace ?? gwNs}/${c.name}`);
      if (l.allowedRoutes?.namespaces?.from === "Selector") selectsNamespaces = true;
    }
    for (const k of gatewayCaConfigMapKeys(gw.gateway.spec, gwNs)) caConfigMaps.add(k);
  }
  return { secrets, caConfigMaps, selectsNamespaces };
}

/**
 * One Gateway's state as attach.ts made it again is the same as before: the same Gateway in what
 * the compiler reads of it, the same conditions and listeners (their Secrets resolved alike).
 */
const sameGatewayState = (a: GatewayState, b: GatewayState): boolean =>
  relevantEqual("Gateway", a.gateway, b.gateway) && deepEqual(a.conditions, b.conditions) && deepEqual(a.listeners, b.listeners);

/** The result with no Gateway of ours: no route, no table, nothing read (the next compile starts over). */
const emptyResult = (classes: GatewayCompileResult["classes"], gateways: GatewayCompileResult["gateways"]): GatewayCompileResult => ({
  classes,
  gateways,
  routes: [],
  table: null,
  certificates: [],
  deps: NO_DEPS,
  diagnostics: [],
});

/**
 * A listener input changed (a GatewayClass, a Gateway, a listener's Secret, a ReferenceGrant
 * from Gateways): every Gateway's state is made again (attach.ts makes each from its own
 * Gateway, class, Secrets and grants alone, so this is O(Gateways)); one equal to the last
 * keeps the last object, and with it the routes attached to its listeners keep their work. The
 * routes whose parentRefs name a Gateway whose state changed, came or went are compiled again
 * (docs/design.md "What a change compiles again"). Says whether a class's or a Gateway's state
 * changed (else the last ones are kept as they were).
 */
function revalidateGateways(st: State, snapshot: Snapshot, redo: Set<string>): boolean {
  const made = ourClasses(snapshot, st.controllerName);
  // Maps are compared as their entries (deepEqual reads own enumerable keys only).
  const sameClasses = deepEqual([...made], [...st.classes]);
  const classes = sameClasses ? st.classes : made;
  const fresh = classes.size === 0 ? new Map<string, GatewayState>() : ourGateways(snapshot, classes);
  const changed = new Set<string>();
  const base = new Map<string, GatewayState>();
  for (const [key, next] of fresh) {
    const prev = st.base.get(key);
    if (prev !== undefined && sameGatewayState(prev, next)) base.set(key, prev);
    else {
      base.set(key, next);
      changed.add(key);
    }
  }
  for (const [key, prev] of st.base) {
    if (base.get(key) === prev) continue;
    changed.add(key);
    // Its listeners are replaced: their attached sets go (the routes on them are redone).
    for (const l of prev.listeners) st.attached.delete(l);
  }
  if (sameClasses && changed.size === 0) return false;
  if (changed.size > 0) {
    for (const [k, w] of st.works) {
      const routeNs = k.slice(0, k.indexOf("/"));
      if ((w.route.spec.parentRefs ?? []).some((ref) => changed.has(`${ref.namespace ?? routeNs}/${ref.name}`))) redo.add(k);
    }
  }
  const reads = listenerReads(base);
  st.classes = classes;
  st.base = base;
  st.listenerDiagnostics = listenerDiagnostics(base);
  st.secrets = reads.secrets;
  st.caConfigMaps = reads.caConfigMaps;
  st.selectsNamespaces = reads.selectsNamespaces;
  return true;
}

/** `prev` and `next` hold the same keys with the same parts the compiler reads of `kind` (store/relevance.ts). */
function unchanged<K extends "GatewayClass" | "Gateway">(kind: K, prev: ReadonlyMap<string, KindObjects[K]>, next: ReadonlyMap<string, KindObjects[K]>): boolean {
  if (prev === next) return true;
  if (prev.size !== next.size) return false;
  let same = true;
  relevantChangedKeys(kind, prev, next, () => void (same = false));
  return same;
}

const NO_NAMESPACES: ReadonlyMap<string, Namespace> = new Map();
const NO_GRANTS: ReadonlyMap<string, ReferenceGrant> = new Map();
const NO_POLICIES: ReadonlyMap<string, IngressNginxPolicy> = new Map();

function routeOrder(works: ReadonlyMap<string, RouteWork>): string[] {
  return [...works.values()].sort((a, b) => (a.time !== b.time ? (a.time < b.time ? -1 : 1) : a.key < b.key ? -1 : a.key > b.key ? 1 : 0)).map((w) => w.key);
}

const EMPTY_HOSTS: GatewayHosts = Object.freeze({ exact: new Map(), wildcards: Object.freeze([]), any: null });

/**
 * Compile every Gateway API object of ours (docs/design.md "Gateway API", "What a change
 * compiles again"). With `changes` naming the latest result and the same
 * --gateway-controller-name it is incremental: only the routes (HTTPRoutes and GRPCRoutes)
 * reading what changed are compiled again: the routes naming a Gateway whose state changed when
 * a GatewayClass, a Gateway (in what the compiler reads of them), a listener's Secret or a
 * ReferenceGrant that speaks for Gateways did (revalidateGateways); a route that changed; one naming a changed Service or
 * EndpointSlice group; one whose rules name a changed IngressNginxPolicy, or a policy naming a
 * changed ConfigMap or Secret; every route naming a policy when the flags its rules read
 * changed; the routes of a namespace whose labels changed while a listener selects
 * namespaces, or that a changed ReferenceGrant lets reach Services. Only the route hostname
 * lists those routes were or are on are sorted and replaced in the table (new maps; the
 * previous table is left as it was). When there is nothing to redo, `changes.prev` itself is
 * returned. Otherwise (no `changes`, or another controller name) everything is compiled.
 */
export function compileGateways(
  snapshot: Snapshot,
  controllerName: string,
  resolve: (ref: BackendRef) => ResolvedBackend,
  changes: GatewayChanges | null = null,
  flags: AccessFlags = NO_FLAGS,
): GatewayCompileResult {
  let state = changes === null ? undefined : STATES.get(changes.prev);
  // Taken, not shared: if this compile throws, the next one starts over.
  if (changes !== null) STATES.delete(changes.prev);
  const namespaces = snapshot.namespaces ?? NO_NAMESPACES;
  const referenceGrants = snapshot.referenceGrants ?? NO_GRANTS;
  const policies = snapshot.ingressNginxPolicies ?? NO_POLICIES;
  // What each kind of change compiles again (docs/design.md "Gateway API"): the listener states
  // are kept while the GatewayClasses, Gateways, the listeners' Secrets and the ReferenceGrants
  // that speak for Gateways are the same, and each Gateway's while its own is (revalidateGateways);
  // then only the routes reading what changed are redone.
  const grants = state === undefined ? null : grantChanges(state.referenceGrants, referenceGrants);
  const reuse = state !== undefined && state.controllerName === controllerName;
  // A listener input changed: the Gateways' states are made again, and the routes on those that
  // changed compiled again (revalidateGateways); the result is new even with no route redone
  // (statuses, listener certificates).
  const listenerSecret = reuse && ([...changes!.secrets].some((k) => state!.secrets.has(k)) || [...changes!.configMaps].some((k) => state!.caConfigMaps.has(k)));
  const listenersChanged =
    reuse && (listenerSecret || grants!.gateways || !unchanged("GatewayClass", state!.gatewayClasses, snapshot.gatewayClasses) || !unchanged("Gateway", state!.gateways, snapshot.gateways));
  /** A class's or a Gateway's state changed (revalidateGateways), so the listener diagnostics may have. */
  let revalidated = false;
  /** That, or a listener's Secret changed (its certificate is read below). */
  let restated = false;
  // The routes to compile again.
  const redo = new Set<string>();
  if (!reuse || state === undefined) {
    const classes = ourClasses(snapshot, controllerName);
    const base = classes.size === 0 ? new Map<string, GatewayState>() : ourGateways(snapshot, classes);
    if (base.size === 0) return emptyResult(classes, base);
    const { secrets, caConfigMaps, selectsNamespaces } = listenerReads(base);
    state = {
      controllerName,
      gatewayClasses: snapshot.gatewayClasses,
      gateways: snapshot.gateways,
      referenceGrants,
      namespaces,
      policies,
      selectsNamespaces,
      flags,
      httpRoutes: new Map(),
      grpcRoutes: new Map(),
      refused: new Map(),
      classes,
      base,
      listenerDiagnostics: listenerDiagnostics(base),
      secrets,
      caConfigMaps,
      works: new Map(),
      order: [],
      byService: new Map(),
      byRead: new Map(),
      pend: new Map(),
      http: new Map(),
      https: new Map(),
      attached: new Map(),
      statuses: [],
      statusAt: null,
      diagnostics: [],
      routeHosts: [],
    };
  } else {
    const st = state;
    if (listenersChanged) {
      revalidated = revalidateGateways(st, snapshot, redo);
      restated = revalidated || listenerSecret;
      // No Gateway of ours left: the result a full compile gives, and no state (the next compile starts over).
      if (st.base.size === 0) return emptyResult(st.classes, st.base);
    }
    st.gatewayClasses = snapshot.gatewayClasses;
    st.gateways = snapshot.gateways;
    for (const s of changes!.services) indexed(st.byService, s, redo);
    // An IngressNginxPolicy's basic-auth Secret and ConfigMaps: the routes whose rules read them.
    for (const s of changes!.secrets) indexed(st.byRead, `s:${s}`, redo);
    for (const c of changes!.configMaps) indexed(st.byRead, `c:${c}`, redo);
    relevantChangedKeys("IngressNginxPolicy", st.policies, policies, (k) => indexed(st.byRead, `p:${k}`, redo));
    st.policies = policies;
    // The flags reach a route only through a policy's annotations (extension.ts).
    if (!sameFlags(st.flags, flags)) for (const [k, w] of st.works) if (w.reads.length > 0) redo.add(k);
    st.flags = flags;
    // A Namespace's labels are read only by a listener's allowedRoutes selector (attach.ts):
    // the routes of that namespace attach again.
    if (st.selectsNamespaces) {
      const changed = new Set<string>();
      relevantChangedKeys("Namespace", st.namespaces, namespaces, (k) => void changed.add(k));
      routesIn(st.works, changed, redo);
    }
    st.namespaces = namespaces;
    // A ReferenceGrant from routes of a namespace: those routes resolve their backendRefs again.
    routesIn(st.works, grants!.routes, redo);
    st.referenceGrants = referenceGrants;
  }
  const st = state;
  // A route replaced by a version that differs only in what the compiler does not read (its
  // status, which this controller writes after each compile, or resourceVersion) keeps its work.
  relevantChangedKeys("HTTPRoute", st.httpRoutes, snapshot.httpRoutes, (k) => void redo.add(k));
  st.httpRoutes = snapshot.httpRoutes;
  // GRPCRoutes are compiled with the HTTPRoutes, under their own work keys (grpcroute.ts).
  const grpcRoutes = snapshot.grpcRoutes ?? NO_GRPC_ROUTES;
  relevantChangedKeys("GRPCRoute", st.grpcRoutes, grpcRoutes, (k) => void redo.add(grpcWorkKey(k)));
  st.grpcRoutes = grpcRoutes;
  const prepared = new Map<string, Prepared | null>();
  const prepare = (key: string): Prepared | null => {
    let p = prepared.get(key);
    if (p === undefined) prepared.set(key, (p = prepareRoute(snapshot, st.base, key, grpcRoutes)));
    return p;
  };
  // GRPCRouteSpec.hostnames: an HTTPRoute and a GRPCRoute may not share a hostname on one
  // listener; the younger is refused there (grpcroute.ts). Looked at only while GRPCRoutes exist
  // or a route is refused; a route whose refused listeners change is compiled again.
  if (grpcRoutes.size > 0 || st.refused.size > 0) {
    const all: KindAttachments[] = [];
    for (const [k, w] of st.works) if (!redo.has(k)) all.push({ key: k, time: w.time, parents: w.attachedTo });
    for (const k of redo) {
      const p = prepare(k);
      if (p !== null) all.push({ key: k, time: routeTime(p.route), parents: p.parents });
    }
    const refused = kindConflicts(all);
    for (const k of changedConflicts(st.refused, refused)) redo.add(k);
    st.refused = refused;
  }
  // Nothing this compile reads changed (a ConfigMap no route reads, a status write, a Namespace
  // no selector reads): the previous result stands, the same objects, so nothing downstream
  // (the held lists, the workers' delta, the status writer) sees a change.
  if (reuse && !restated && redo.size === 0 && changes !== null) {
    STATES.set(changes.prev, st);
    return changes.prev;
  }

  // Replace the work of each route to redo; note the lists it was and is on.
  const touched = new Map<string, Set<string>>();
  const touch = (p: Piece) => {
    let hs = touched.get(p.group);
    if (!hs) touched.set(p.group, (hs = new Set()));
    hs.add(p.host);
  };
  let reorder = false;
  /** The redone routes and their previous work. */
  const replaced = new Map<string, RouteWork | undefined>();
  for (const key of redo) {
    const old = st.works.get(key);
    const p = prepare(key);
    const next = p === null ? undefined : routeWork(snapshot, key, p, resolve, st.refused.get(key), st.flags);
    replaced.set(key, old);
    if (old !== undefined) {
      for (const p of old.pieces) touch(p);
      for (const s of old.services) indexDelete(st.byService, s, key);
      for (const r of old.reads) indexDelete(st.byRead, r, key);
      for (const p of old.parents) for (const a of p.attachments) st.attached.get(a.listener)?.delete(key);
    }
    if (next === undefined) st.works.delete(key);
    else {
      st.works.set(key, next);
      for (const p of next.pieces) touch(p);
      for (const s of next.services) indexAdd(st.byService, s, key);
      for (const r of next.reads) indexAdd(st.byRead, r, key);
      for (const p of next.parents) {
        for (const a of p.attachments) {
          let set = st.attached.get(a.listener);
          if (!set) st.attached.set(a.listener, (set = new Set()));
          set.add(key);
        }
      }
    }
    if (old === undefined || next === undefined || old.time !== next.time) reorder = true;
  }
  if (reorder) st.order = routeOrder(st.works);

  // The touched route hostname lists: the kept pendings of other routes and the new ones, sorted.
  const groups = new Set(touched.keys());
  for (const [g, hosts] of touched) {
    let byHost = st.pend.get(g);
    if (!byHost) st.pend.set(g, (byHost = new Map()));
    for (const h of hosts) {
      const kept = byHost.get(h);
      byHost.set(h, kept === undefined ? [] : kept.filter((p) => !redo.has(p.key)));
    }
  }
  for (const key of redo) {
    const w = st.works.get(key);
    if (w === undefined) continue;
    for (const p of w.pieces) st.pend.get(p.group)!.get(p.host)!.push(p);
  }
  const maps = { http: new Map(st.http), https: new Map(st.https) };
  for (const g of groups) {
    const [cls, lkey] = g.split("\n") as ["http" | "https", string];
    const byHost = st.pend.get(g)!;
    const prev = maps[cls].get(lkey) ?? EMPTY_HOSTS;
    const exact = new Map(prev.exact);
    let wildcardsTouched = false;
    let any = prev.any;
    for (const h of touched.get(g)!) {
      const list = byHost.get(h)!;
      if (list.length > 1) list.sort(precedence);
      // Not frozen: JSC keeps a frozen array in a slower, larger form, and the request path walks
      // these lists (the type keeps them read-only).
      const entries: readonly GatewayEntry[] | null = list.length === 0 ? null : list.map((p) => p.entry);
      if (list.length === 0) byHost.delete(h);
      if (h === "*") any = entries;
      else if (isWildcardHost(h)) wildcardsTouched = true;
      else if (entries === null) exact.delete(h);
      else exact.set(h, entries);
    }
    let wildcards = prev.wildcards;
    if (wildcardsTouched) {
      const w: [string, readonly GatewayEntry[]][] = [];
      for (const [h, list] of byHost) if (isWildcardHost(h)) w.push([h, list.map((p) => p.entry)]);
      w.sort(([a], [b]) => b.length - a.length || (a < b ? -1 : a > b ? 1 : 0));
      wildcards = Object.freeze(w);
    }
    if (byHost.size === 0) {
      st.pend.delete(g);
      maps[cls].delete(lkey);
    } else maps[cls].set(lkey, Object.freeze({ exact, wildcards, any }));
  }
  const sortKeys = (m: Map<string, GatewayHosts>): Map<string, GatewayHosts> => new Map([...m.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  if (groups.size > 0) {
    st.http = sortKeys(maps.http);
    st.https = sortKeys(maps.https);
  }
  // The last table object while its maps are the same (a Gateway's status changed, not its routes).
  const prevTable = changes?.prev.table ?? null;
  const table =
    st.http.size === 0 && st.https.size === 0 ? null : prevTable !== null && prevTable.http === st.http && prevTable.https === st.https ? prevTable : Object.freeze({ http: st.http, https: st.https });

  // attachedRoutes: the routes accepted on each listener (those with unresolved backends too),
  // counted on copies so the kept listener states stay as they were built.
  const gateways = new Map<string, GatewayState>();
  for (const [key, gw] of st.base) gateways.set(key, { ...gw, listeners: gw.listeners.map((l) => ({ ...l, attachedRoutes: st.attached.get(l)?.size ?? 0 })) });
  // The lists in route order: patched in place of the redone routes' statuses when the order
  // and the set of routes with a status are the same, else walked again; the diagnostics and
  // route certificates likewise, when no redone route has or had any.
  let statuses: RouteStatus[];
  let patch = !reorder && st.statusAt !== null;
  // A listener Secret's new data alone leaves the listener diagnostics and every route's work
  // as they were (revalidateGateways found no state changed): no walk over the other routes.
  let walkOthers = !patch || revalidated;
  for (const [key, old] of replaced) {
    const next = st.works.get(key);
    if ((old?.status ?? null) === null || (next?.status ?? null) === null) patch = false;
    if ((old?.diagnostics.length ?? 0) + (next?.diagnostics.length ?? 0) + (old?.certHosts.length ?? 0) + (next?.certHosts.length ?? 0) > 0) walkOthers = true;
  }
  if (patch) {
    statuses = st.statuses.slice();
    for (const key of replaced.keys()) statuses[st.statusAt!.get(key)!] = st.works.get(key)!.status!;
  } else {
    statuses = [];
    const at = new Map<string, number>();
    for (const key of st.order) {
      const w = st.works.get(key)!;
      if (w.status === null) continue;
      at.set(key, statuses.length);
      statuses.push(w.status);
    }
    st.statusAt = at;
  }
  st.statuses = statuses;
  if (walkOthers) {
    const diagnostics: Diagnostic[] = [...st.listenerDiagnostics];
    const routeHosts: (readonly [string, string])[] = [];
    for (const key of st.order) {
      const w = st.works.get(key)!;
      if (w.diagnostics.length > 0) diagnostics.push(...w.diagnostics);
      if (w.certHosts.length > 0) routeHosts.push(...w.certHosts);
    }
    st.diagnostics = diagnostics;
    st.routeHosts = routeHosts;
  }
  const { diagnostics, routeHosts } = st;
  const result: GatewayCompileResult = {
    classes: st.classes,
    gateways,
    routes: statuses,
    table,
    certificates: listenerCertificates(snapshot, gateways, routeHosts),
    deps: {
      services: st.byService,
      secrets: { has: (k) => st.secrets.has(k) || st.byRead.has(`s:${k}`) },
      configMaps: { has: (k) => st.caConfigMaps.has(k) || st.byRead.has(`c:${k}`) },
    },
    diagnostics,
  };
  STATES.set(result, st);
  return result;
}

const NO_GRPC_ROUTES: ReadonlyMap<string, GRPCRoute> = new Map();

/** A route to compile: the HTTPRoute (a GRPCRoute converted by grpcroute.ts) and its attachments. */
interface Prepared {
  readonly route: HTTPRoute;
  /** Set for a GRPCRoute: its object key and what it cannot serve. */
  readonly grpc: { readonly objectKey: string; readonly unsupported: Condition | null } | null;
  readonly parents: RouteParentState[];
}

/** The route under a work key, converted and attached; null when it is gone. */
function prepareRoute(snapshot: Snapshot, gateways: ReadonlyMap<string, GatewayState>, key: string, grpcRoutes: ReadonlyMap<string, GRPCRoute>): Prepared | null {
  const objectKey = grpcObjectKey(key);
  if (objectKey === null) {
    const route = snapshot.httpRoutes.get(key);
    return route === undefined ? null : { route, grpc: null, parents: attachRoute(snapshot, gateways, route) };
  }
  const g = grpcRoutes.get(objectKey);
  if (g === undefined) return null;
  const conv = grpcAsHttpRoute(g);
  return { route: conv.route, grpc: { objectKey, unsupported: conv.unsupported }, parents: attachRoute(snapshot, gateways, conv.route, "GRPCRoute") };
}

/** One HTTPRoute alone: its attachment to our Gateways, its rules, its entries and its status. */
function routeWork(
  snapshot: Snapshot,
  key: string,
  prepared: Prepared,
  resolve: (ref: BackendRef) => ResolvedBackend,
  /** The listeners the route is refused on (an HTTPRoute and a GRPCRoute sharing a hostname). */
  refused: ReadonlySet<ListenerState> | undefined,
  flags: AccessFlags,
): RouteWork {
  gatewayRouteCompiles.count++;
  const { route, grpc } = prepared;
  const routeNs = key.slice(0, key.indexOf("/"));
  const services: string[] = [];
  // Each Service once (rules often share one).
  const named = (s: string) => void (services.includes(s) || services.push(s));
  for (const rule of route.spec.rules ?? []) {
    for (const b of rule.backendRefs ?? []) named(`${b.namespace ?? routeNs}/${b.name}`);
    // A mirror's endpoints are in the route's policies: its Service's changes redo the route too.
    for (const f of rule.filters ?? []) if (f.requestMirror) named(`${f.requestMirror.backendRef.namespace ?? routeNs}/${f.requestMirror.backendRef.name}`);
  }
  const time = routeTime(route);
  const attachedTo = prepared.parents;
  const parents = refused === undefined ? attachedTo : withoutRefused(attachedTo, refused, grpc !== null);
  if (parents.length === 0) return { key, route, time, parents, attachedTo, status: null, diagnostics: NONE, pieces: NONE, services, certHosts: NONE, reads: NONE };
  const compiled = compileRoute(snapshot, route, resolve, grpc === null ? HTTP_ROUTE_KIND : GRPC_ROUTE_KIND, flags);
  // Rules the spec makes invalid are left out: "Drop Rule(s)" of RouteConditionPartiallyInvalid
  // (apis/v1 shared_types.go; HTTPRouteRule.filters: "consider the Route Rules with this
  // configuration invalid. If all Route Rules in a Route are invalid, the entire Route would be
  // considered invalid"). Their requests are not this route's: another route's match, else 404
  // (HTTPRouteRule.matches: "When no rules matching a request have been successfully attached
  // ... a HTTP 404 status code MUST be returned"). With a rule left the route stays Accepted
  // and says PartiallyInvalid=True, message "Dropped Rule"; with none it is Accepted=False.
  const droppedText = compiled.dropped.length === 0 ? "" : `Dropped ${compiled.dropped.join("; Dropped ")}`;
  const unsupported =
    grpc?.unsupported ?? compiled.unsupported ?? (compiled.dropped.length > 0 && compiled.rules.length === 0 ? cond("Accepted", "False", "UnsupportedValue", `no valid rule: ${droppedText}`) : null);
  const partially = compiled.dropped.length > 0 && compiled.rules.length > 0 ? cond("PartiallyInvalid", "True", "UnsupportedValue", droppedText) : null;
  const out: RouteStatus["parents"][number][] = [];
  const pieces: Piece[] = [];
  const certHosts: [string, string][] = [];
  // With one attachment (the usual case) nothing can repeat: the sharing below is skipped.
  let attachments = 0;
  for (const p of parents) attachments += p.attachments.length;
  const single = attachments <= 1;
  // One entry per (rule match, listener port and protocol, hostname): redirects use the listener's port.
  const built = single ? null : new Map<string, GatewayEntry>();
  const placed = single ? null : new Set<string>();
  for (const p of parents) {
    const accepted = p.accepted.status === "True" && unsupported !== null ? unsupported : p.accepted;
    // PartiallyInvalid "MUST NOT be set if a Route is ... not accepted".
    out.push({ state: p, conditions: partially !== null && accepted.status === "True" ? [accepted, compiled.resolvedRefs, partially] : [accepted, compiled.resolvedRefs] });
    for (const a of p.attachments) {
      const cls = a.listener.portClass;
      if (cls === null) continue;
      const lkey = a.listener.hostname ?? "*";
      const group = `${cls}\n${lkey}`;
      const listener: Listener = { port: a.listener.port, https: cls === "https", clientCert: cls === "https" ? clientCertPolicy(a.listener) : null };
      if (cls === "https" && a.listener.hostname === null && a.listener.certificates[0] !== undefined) {
        for (const h of a.hostnames) if (h !== "*") certHosts.push([h, a.listener.certificates[0]]);
      }
      for (const h of a.hostnames) {
        for (const rule of compiled.rules) {
          rule.matches.forEach((match, mi) => {
            if (single) {
              pieces.push({ key, time, group, host: h, entry: buildEntry(rule, match, mi, listener, h), ruleIndex: rule.ruleIndex, matchIndex: mi, match });
              return;
            }
            const id = `${rule.ruleIndex}/${mi}/${listener.port}/${listener.https}/${h}${listener.clientCert === null ? "" : `/${a.listener.gateway}#${a.listener.name}`}`;
            let entry = built!.get(id);
            if (entry === undefined) built!.set(id, (entry = buildEntry(rule, match, mi, listener, h)));
            // An entry goes once into each list (several parentRefs can reach one listener).
            const at = `${group}\n${h}\n${id}`;
            if (placed!.has(at)) return;
            placed!.add(at);
            pieces.push({ key, time, group, host: h, entry, ruleIndex: rule.ruleIndex, matchIndex: mi, match });
          });
        }
      }
    }
  }
  const status: RouteStatus =
    grpc === null ? { key, generation: route.metadata.generation ?? null, parents: out } : { key: grpc.objectKey, kind: "GRPCRoute", generation: route.metadata.generation ?? null, parents: out };
  const diagnostics = routeDiagnostics(status);
  // An IngressNginxPolicy's annotation problems are the route's, as an Ingress's are its own.
  for (const p of compiled.problems) diagnostics.push({ kind: status.kind ?? "HTTPRoute", ...split(status.key), ...p });
  return { key, route, time, parents, attachedTo, status, diagnostics: diagnostics.length === 0 ? NONE : diagnostics, pieces, services, certHosts: certHosts.length === 0 ? NONE : certHosts, reads: extensionReads(snapshot, route, routeNs) };
}

/**
 * What a route's ExtensionRefs read (RouteWork.reads): each IngressNginxPolicy named, and the
 * ConfigMaps and basic-auth Secret its annotations name in the route's namespace, where
 * extension.ts resolveExtension reads them (a superset: a name it then refuses is kept too).
 */
function extensionReads(snapshot: Snapshot, route: HTTPRoute, routeNs: string): readonly string[] {
  let out: string[] | null = null;
  for (const rule of route.spec.rules ?? []) {
    for (const f of rule.filters ?? []) {
      const ref = f.type === "ExtensionRef" ? f.extensionRef : undefined;
      if (!ref || ref.group !== PORTICO_GROUP || ref.kind !== POLICY_KIND) continue;
      const key = `${routeNs}/${ref.name}`;
      out ??= [];
      const add = (k: string) => void (out!.includes(k) || out!.push(k));
      add(`p:${key}`);
      const annotations = snapshot.ingressNginxPolicies?.get(key)?.spec.annotations;
      if (annotations === undefined) continue;
      for (const c of configMapKeys(annotations, routeNs)) add(`c:${c}`);
      const secret = authSecretKey(annotations, routeNs);
      if (secret !== null) add(`s:${secret}`);
    }
  }
  return out ?? NONE;
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
      byHost.set(l.hostname, secretBinding(secret, key, l.hostname, `${gw.key} (Gateway listener ${l.name})`));
    }
  }
  for (const [host, key] of routeHosts) {
    const secret = snapshot.secrets.get(key);
    if (byHost.has(host) || secret === undefined) continue;
    byHost.set(host, secretBinding(secret, key, host, "Gateway API route hostname"));
  }
  return [...byHost.values()];
}

/**
 * Exact before PathPrefix (HTTPRouteRule.matches); RegularExpression, implementation-specific,
 * after both. A GRPCRoute method match without a service (GRPCMethod) comes after the service
 * prefixes and before the match-everything prefix (GRPCRouteRule.matches: the characters of the
 * matching service count before those of the method); for HTTPRoutes, which have no GRPCMethod,
 * the order is the same as Exact, PathPrefix, RegularExpression.
 */
const pathRank = (m: CompiledMatch): number =>
  m.pathType === "Exact" ? 0 : m.pathType === "PathPrefix" ? (m.path === "" ? 3 : 1) : m.pathType === "GRPCMethod" ? 2 : 4;

/** HTTPRouteRule.matches precedence; ties: the older route, then namespace/name, then rule and match order. */
function precedence(a: Pending, b: Pending): number {
  const ma = a.match;
  const mb = b.match;
  const ra = pathRank(ma);
  const rb = pathRank(mb);
  if (ra !== rb) return ra - rb;
  // The longer PathPrefix first (the spec); the longer RegularExpression first, as ingress-nginx
  // orders a regex host's locations (its template sorts them by path length).
  if (ma.pathType !== "Exact" && ma.path.length !== mb.path.length) return mb.path.length - ma.path.length;
  if ((ma.method === null) !== (mb.method === null)) return ma.method === null ? 1 : -1;
  if (ma.headers.length !== mb.headers.length) return mb.headers.length - ma.headers.length;
  if (ma.query.length !== mb.query.length) return mb.query.length - ma.query.length;
  if (a.time !== b.time) return a.time < b.time ? -1 : 1;
  if (a.key !== b.key) return a.key < b.key ? -1 : 1;
  if (a.ruleIndex !== b.ruleIndex) return a.ruleIndex - b.ruleIndex;
  return a.matchIndex - b.matchIndex;
}

/** A RequestHeaderModifier (a rule's, or a backendRef's after it: both run in the forwarding stage, in that order). */
function headersPolicy(h: HeaderModifier, kind: typeof K.GATEWAY_REQUEST_HEADERS | typeof K.GATEWAY_RESPONSE_HEADERS = K.GATEWAY_REQUEST_HEADERS): StagePolicy {
  const pair = (x: { name: string; value: string }): [string, string] => [x.name, x.value];
  return stagePolicy(kind, { set: h.set.map(pair), add: h.add.map(pair), remove: [...h.remove] });
}

/** The options of a rule without filters, shared (a table holds one Route per rule match and listener). */
const PLAIN_OPTIONS: RouteOptions = Object.freeze({ ...DEFAULT_ROUTE_OPTIONS, sslRedirect: false, hsts: false, stages: null });

/** The longest deadline a timer takes (setTimeout's 2^31-1 ms): what a zero duration means. */
const LONGEST_MS = 2 ** 31 - 1;

/**
 * A rule's options with its HTTPRouteTimeouts (docs/design.md "Gateway API"). Both bound the
 * wait for the backend's response head: backendRequest per attempt, request (when
 * backendRequest is unset, or longer) the same; with a request timeout a timed-out attempt is
 * not retried and no new attempt starts once it has passed, so the client's answer (the
 * backend's, or 504) comes within about that time. The zero duration disables a timeout: the
 * longest deadline Portico's timers take (HTTPRouteTimeouts: "MUST instead interpret the zero
 * duration as the longest possible value").
 */
function ruleOptions(t: Timeouts | null): RouteOptions {
  if (t === null) return PLAIN_OPTIONS;
  const request = t.requestMs === 0 ? null : t.requestMs;
  let backend = t.backendRequestMs === 0 ? LONGEST_MS : t.backendRequestMs;
  if (request !== null && (backend === null || backend > request)) backend = request;
  if (backend === null) backend = t.requestMs === 0 ? LONGEST_MS : null;
  return Object.freeze({
    ...PLAIN_OPTIONS,
    responseTimeoutMs: backend,
    retry: request === null ? null : Object.freeze({ ...DEFAULT_RETRY, timeout: false, timeoutMs: request }),
  });
}

function buildEntry(rule: CompiledRule, match: CompiledMatch, matchIndex: number, listener: Listener, host: string): GatewayEntry {
  // An IngressNginxPolicy's settings and stages come first (compile/gateway/extension.ts).
  const base = withExtension(ruleOptions(rule.timeouts), rule.extension, rule.timeouts !== null);
  const make = (backend: Backend, own: StagePolicy[], options: RouteOptions = base): Match => {
    // The listener's client certificate check comes before anything the rule does.
    const policies = listener.clientCert === null ? own : [listener.clientCert, ...own];
    const route: Route = Object.freeze({
      ingress: rule.route,
      host: host === "*" ? null : host,
      path: match.written,
      pathType: match.pathType === "Exact" ? ("Exact" as const) : ("Prefix" as const),
      declaredPathType: match.pathType === "Exact" ? ("Exact" as const) : match.pathType === "RegularExpression" ? ("ImplementationSpecific" as const) : ("Prefix" as const),
      source: "rule" as const,
      ruleIndex: rule.ruleIndex,
      pathIndex: matchIndex,
      backend,
      // Gateway API asks for no HTTPS redirect and no HSTS: a listener serves what it declares.
      options: policies.length === 0 ? options : Object.freeze({ ...options, stages: assembleStages(options.stages, policies) }),
      tls: false,
    });
    return Object.freeze({ route, hostKey: host, via: host === "*" ? ("any-host" as const) : isWildcardHost(host) ? ("wildcard-host" as const) : ("exact-host" as const) });
  };
  const error = (reason: string): GatewayEntry => ({
    match,
    choices: [{ match: make(NO_BACKEND, [stagePolicy(K.GATEWAY_ERROR, { reason })], PLAIN_OPTIONS), weight: 1 }],
    totalWeight: 1,
  });
  if (rule.invalid !== null) return error(rule.invalid);
  if (rule.unresolved !== null) return error(rule.unresolved);
  const policies: StagePolicy[] = [];
  // CORS first (a preflight is answered before anything else), then the rule's response fields
  // (both cors stage, in this order; a backendRef's come after: its own policies below).
  if (rule.cors) policies.push(stagePolicy(K.GATEWAY_CORS, { ...rule.cors, origins: [...rule.cors.origins], methods: [...rule.cors.methods], headers: [...rule.cors.headers], expose: [...rule.cors.expose] }));
  if (rule.responseHeaders) policies.push(headersPolicy(rule.responseHeaders, K.GATEWAY_RESPONSE_HEADERS));
  if (rule.requestHeaders) policies.push(headersPolicy(rule.requestHeaders));
  // After the header filter in the same stage: the copy carries the modified fields.
  for (const m of rule.mirrors) policies.push(stagePolicy(K.GATEWAY_MIRROR, { endpoints: [...m.endpoints], percent: m.percent }));
  if (rule.rewrite) policies.push(rewritePolicy(rule.rewrite, match));
  if (rule.redirect) {
    policies.push(redirectPolicy(rule.redirect, match, listener));
    return { match, choices: [{ match: make(NO_BACKEND, policies), weight: 1 }], totalWeight: 1 };
  }
  if (rule.backends.length === 0) return error("the rule has no backendRefs");
  if (rule.totalWeight === 0) return error("every backendRef has weight 0");
  const choices: WeightedMatch[] = [];
  for (const b of rule.backends) {
    if (b.weight === 0) continue;
    const own = b.requestHeaders === null && b.responseHeaders === null && b.redirect === null && b.rewrite === null ? policies : backendPolicies(policies, b, match, listener);
    choices.push({
      match:
        b.backend === null
          ? make(NO_BACKEND, [stagePolicy(K.GATEWAY_ERROR, { reason: "invalid backendRef" })])
          : // A backendRef's RequestRedirect answers this backend's share itself (no backend).
            make(b.redirect === null ? b.backend : NO_BACKEND, own),
      weight: b.weight,
    });
  }
  return { match, choices, totalWeight: rule.totalWeight };
}

/** A backendRef's filters after the rule's policies (each in its stage, after the rule's there). */
function backendPolicies(policies: readonly StagePolicy[], b: WeightedBackend, match: CompiledMatch, listener: Listener): StagePolicy[] {
  const out = [...policies];
  if (b.requestHeaders !== null) out.push(headersPolicy(b.requestHeaders));
  if (b.responseHeaders !== null) out.push(headersPolicy(b.responseHeaders, K.GATEWAY_RESPONSE_HEADERS));
  // After the rule's URLRewrite in the rewrite stage: what the backendRef's sets replaces it.
  if (b.rewrite) out.push(rewritePolicy(b.rewrite, match));
  if (b.redirect) out.push(redirectPolicy(b.redirect, match, listener));
  return out;
}

/** URLRewrite as the gateway-rewrite policy; ReplacePrefixMatch replaces the matched prefix (HTTPPathModifier). */
function rewritePolicy(r: Rewrite, match: CompiledMatch): StagePolicy {
  return stagePolicy(K.GATEWAY_REWRITE, {
    hostname: r.hostname,
    pathType: r.path?.type ?? null,
    pathValue: r.path?.value ?? null,
    matchedPrefix: match.pathType === "PathPrefix" ? match.path : null,
  });
}

/** RequestRedirect as the gateway-redirect policy, with the listener's port and scheme for what it leaves unsaid. */
function redirectPolicy(r: Redirect, match: CompiledMatch, listener: Listener): StagePolicy {
  return stagePolicy(K.GATEWAY_REDIRECT, {
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
  });
}
