// The compiler (docs/design.md "Control loop"): Snapshot + config → route table,
// certificate bindings, statuses and diagnostics. Pure: no I/O, no clock, no logging; the
// output never depends on Map order. There is one implementation of the Ingress rules, and it
// is incremental: each call computes what changed since the previous one. `compile()` is a
// Compiler with empty caches (the golden tests), the controller keeps one for its life, and
// explain reads the one that compiled the table it explains (inspect()).
//
// Correctness rests on one fact: objects in a Snapshot are immutable and replaced on change
// (store/), so object identity says "unchanged", and two snapshots' maps can be compared key
// by key (changes.ts). Work per compile is proportional to what changed, plus a few passes
// over the snapshot's maps to find it.
//
// The rules, and what is kept between compiles:
// - class.ts decides which Ingresses are ours; plan.ts checks one Ingress alone (annotations,
//   hosts, paths, backend refs, spec.tls hosts; access.ts adds the flags' source ranges and
//   the basic-auth Secret's users). One plan per Ingress object (and auth Secret object), kept
//   in the orders the compile needs (served.ts);
// - backends.ts resolves a backend; the Backend is kept per id while its Service and
//   EndpointSlices are the same objects, or equal in what it reads (backend-cache.ts);
// - host-entry.ts decides the claims of one host key; its HostRoutes and diagnostics are kept
//   and rebuilt only when its contributors change, a Service or EndpointSlice group it uses
//   changes in what resolveRef reads of it (a Service its spec: backend-cache.ts sameService; a
//   group slice by slice: sameSliceGroup), or its TLS coverage flips;
// - tls.ts binds certificates (recomputed when a TLS plan or a Secret changes); defaults.ts
//   picks the default route; the last table is patched (new maps with the changed entries)
//   and the sorted diagnostics are kept while none changed.
// When many Ingresses change at once (the first compile, an IngressClass change, a relist),
// the served lists are rebuilt with one sort instead (bulk); host entries are still reused
// where their inputs are the same objects.
import { diagnosticKey, type Diagnostic } from "../model/diagnostic.ts";
import type { ConfigMap, EndpointSlice, Ingress, IngressClass, Secret, Service } from "../model/schemas.ts";
import type { Snapshot } from "../store/types.ts";
import { deepEqual, relevantEqual } from "../store/relevance.ts";
import { assembleTable, patchTable } from "../table/build.ts";
import type { HostRoutes, RouteTable } from "../table/types.ts";
import { decideAliases, NO_ALIASES, sameAliases, type AliasState } from "./aliases.ts";
import { BackendCache, sameService } from "./backend-cache.ts";
import type { BackendRef } from "./backends.ts";
import { changedKeys, compareStrings, insertSorted, relevantChangedGroups, relevantChangedKeys } from "./changes.ts";
import { classContext, classify, type ClassContext, type ClassDecision } from "./class.ts";
import type { CompileConfig } from "./config.ts";
import { defaultEntry, type DefaultEntry } from "./defaults.ts";
import { DiagnosticList } from "./diagnostics.ts";
import { buildHostEntry, claimHost, sameHostInputs, type HostEntry } from "./host-entry.ts";
import type { IngressPlan } from "./plan.ts";
import { ServedPlans } from "./served.ts";
import { hostOwner } from "./host-scope.ts";
import { hostTlsOptions } from "./host-tls.ts";
import { tlsBindings, tlsCoverage, type HostOwnerOf, type SecretData, type TlsState } from "./tls.ts";
import { newTrace, type CompileTrace } from "./trace.ts";
import { resolveGlobalHeaders, type GlobalHeadersResult } from "./global-headers.ts";
import { compileGateways } from "./gateway/table.ts";
import { heldHostDiagnostics, holdIngressHosts, HostClaimsIndex, withoutIngressTlsHosts } from "./gateway/ingress-hosts.ts";
import { allocateGatewayPorts, GatewayPortsCompiler, withUnplaced } from "./gateway/ports.ts";
import type { GatewayPort, GatewayRoutes } from "../table/types.ts";
import { type CertificateBinding, type GatewayCompileResult } from "./types.ts";
import type { CompileResult } from "./types.ts";
import { NONE } from "./empty.ts";

export type { CompileConfig } from "./config.ts";

/** A full compile: a Compiler with nothing cached. */
export function compile(snapshot: Snapshot, config: CompileConfig): CompileResult {
  return new Compiler(config).compile(snapshot);
}

/** What explain reads of the compile of one snapshot (explain.ts). Valid until the next compile. */
export interface Inspection {
  readonly result: CompileResult;
  /** The plans of the served Ingresses, and of the others, each in priority order. */
  readonly served: readonly IngressPlan[];
  readonly ignored: readonly IngressPlan[];
  /** Why an Ingress is, or is not, ours. */
  classify(plan: IngressPlan): ClassDecision;
  /** The claim outcomes of the path plans of the hosts asked for, and of every spec.defaultBackend. */
  readonly trace: CompileTrace;
}

export interface CompilerOptions {
  /**
   * When more Ingresses than this changed, the served lists are rebuilt with one sort instead
   * of one update per change. Default: an eighth of them, at least 32. Tests force each way.
   */
  readonly bulkAbove?: number;
  /**
   * The Compiler this one replaces after a settings change (runtime/controller.ts
   * setCompileConfig). Its Ingress work is not taken (it was done under the old settings), but
   * its Gateway API work and resolved Backends are when the settings they read are the same
   * (`sameGatewaySettings`): an Ingress-only setting of the ConfigMap then compiles no route.
   * The previous Compiler must not be used afterwards.
   */
  readonly previous?: Compiler;
}

/**
 * The settings the Gateway API compile reads besides the policy flags, which it compares
 * itself (gateway/table.ts sameFlags): the controller name, --gateway-ports and the namespace
 * of --publish-service (gateway/ports.ts), and what a Backend is resolved with (backends.ts
 * BackendPolicy).
 */
function sameGatewaySettings(a: CompileConfig, b: CompileConfig): boolean {
  return (
    a.gatewayControllerName === b.gatewayControllerName &&
    deepEqual(a.gatewayPorts, b.gatewayPorts) &&
    deepEqual(a.publishService, b.publishService) &&
    a.allowExternalNameServices === b.allowExternalNameServices
  );
}

const NO_CONFIG_MAPS: ReadonlyMap<string, ConfigMap> = new Map();

/**
 * The same certificate binding, in what a Gateway port serves of it: the Secret, its version
 * (uid and resourceVersion: tls.ts secretBinding) and its PEM text, so a --manifests Secret
 * written with a resourceVersion of its own still counts as changed when its data does.
 */
const sameBinding = (a: CertificateBinding | undefined, b: CertificateBinding | undefined): boolean =>
  a === b || (a !== undefined && b !== undefined && a.secret === b.secret && a.version === b.version && a.cert === b.cert && a.key === b.key);

const sameSet = (a: ReadonlySet<string>, b: ReadonlySet<string>) => a.size === b.size && [...a].every((x) => b.has(x));

interface Inputs {
  ingresses: ReadonlyMap<string, Ingress> | null;
  classes: ReadonlyMap<string, IngressClass> | null;
  services: ReadonlyMap<string, Service> | null;
  slices: ReadonlyMap<string, readonly EndpointSlice[]> | null;
  secrets: ReadonlyMap<string, Secret> | null;
  configMaps: ReadonlyMap<string, ConfigMap> | undefined;
}

/**
 * What #compile found changed in the Services and EndpointSlice groups since the maps it
 * compared with (`services`, `slices`), for #withGateway, which compares the same maps.
 */
interface SharedDiff {
  readonly services: ReadonlyMap<string, Service> | null;
  readonly slices: ReadonlyMap<string, readonly EndpointSlice[]> | null;
  /** Added, removed or changed in spec (serviceChanges). */
  readonly serviceSpec: string[];
  /** The same spec, other relevant parts changed; recorded only with --gateway-ports. */
  readonly serviceOther: string[];
  /** Changed groups (relevantChangedGroups). */
  readonly sliceGroups: string[];
}

/**
 * changedKeys over two Service maps, split by what changed: `spec` for a key added, removed or
 * changed in its spec (what resolveRef and gateway/rules.ts read: backend-cache.ts
 * sameService); `other`, when given, for one of the same spec changed in another part the
 * store counts (store/relevance.ts: annotations, status, the managed-by label, which
 * gateway/ports.ts reads of a Gateway's own Service).
 */
function serviceChanges(prev: ReadonlyMap<string, Service> | null, next: ReadonlyMap<string, Service>, spec: (key: string) => void, other: ((key: string) => void) | null): void {
  changedKeys(prev, next, (k) => {
    const a = prev?.get(k);
    const b = next.get(k);
    if (!sameService(a, b)) spec(k);
    else if (other !== null && !relevantEqual("Service", a as Service, b as Service)) other(k);
  });
}

/**
 * How many host keys the compile has checked again (built, or kept by sameHostInputs) in this
 * process: a debug counter the tests read to hold a change to the hosts it must check again
 * (docs/design.md "What a change compiles again"), as gateway/table.ts gatewayRouteCompiles
 * does for routes.
 */
export const hostEntryChecks = { count: 0 };

/** With --gateway-ports: each Gateway's own ports and their rules (gateway/ports.ts), as last compiled. */
interface GatewayPortsState {
  readonly ports: ReadonlyMap<number, GatewayPort>;
  readonly diagnostics: readonly Diagnostic[];
  readonly certificates: ReadonlyMap<number, readonly CertificateBinding[]>;
  /** The Gateway compile as status reports it (ports the range had no room for: withUnplaced). */
  readonly status: GatewayCompileResult;
  /** The --default-ssl-certificate binding the certificates were made with (a port without a hostless listener serves it). */
  readonly fallback: CertificateBinding | undefined;
  /** The keys of the Gateways' own Services the allocation looked up (allocateGatewayPorts). */
  readonly services: ReadonlySet<string>;
}

export class Compiler {
  readonly #config: CompileConfig;
  readonly #bulkAbove: number | undefined;
  /** The previous snapshot's maps (what the next one is compared with). */
  #last: Inputs = { ingresses: null, classes: null, services: null, slices: null, secrets: null, configMaps: undefined };
  #ctx: ClassContext | null = null;
  #served: ServedPlans;
  readonly #backends: BackendCache;
  readonly #resolve = (ref: BackendRef) => this.#backends.resolve(ref);
  readonly #secretData: SecretData = new WeakMap();
  /** The owner of a host key's host-wide policies with --host-policy-scope=namespace (spec.tls included), else null. */
  readonly #ownerOf: HostOwnerOf | null;

  readonly #hosts = new Map<string, HostEntry>();
  /** Host keys whose entry carries diagnostics, and those diagnostics. */
  readonly #hostDiagnostics = new Map<string, readonly Diagnostic[]>();
  /** Host keys with canary Ingresses but no main Ingress (no entry), and their diagnostics. */
  readonly #orphanDiagnostics = new Map<string, readonly Diagnostic[]>();
  /** Host keys of #hosts, sorted (the order of the table's maps). */
  #hostKeys: string[] = [];
  /**
   * Service key → host keys whose routes resolve a backend of that Service: one host key, or a
   * Set of two or more (most Services serve one host; a Set each costs ~240 bytes at 10k).
   */
  readonly #hostsByService = new Map<string, string | Set<string>>();
  /** Host keys whose entry has server-alias names, and what aliases.ts decided for them. */
  readonly #aliasHosts = new Set<string>();
  #aliases: AliasState = NO_ALIASES;
  #routeCount = 0;
  /** Path plans over every host entry (an upper bound of the Backends in use). */
  #pathCount = 0;
  #table: RouteTable | null = null;
  #tls: TlsState | null = null;
  #default: DefaultEntry | null = null;
  #result: CompileResult | null = null;
  /** Bumped when host diagnostics or the TLS diagnostics change. */
  #diagVersion = 0;
  #diagCache: { version: string; list: readonly Diagnostic[] } | null = null;
  /** The last Gateway API compile, the snapshot maps it read, and the result it was added to. */
  #gw: GatewayCompileResult | null = null;
  #gwOwn: readonly unknown[] = [];
  #gwShared: readonly unknown[] = [];
  /**
   * Handed the Gateway work of a previous Compiler (options.previous), whose settings differ,
   * and not compiled since: the next Gateway compile runs (compileGateways compares the flags).
   */
  #handedOn = false;
  #gwResult: { base: CompileResult; gw: GatewayCompileResult; ports: GatewayPortsState | null; result: CompileResult } | null = null;
  #globalHeaders: { configMaps: Snapshot["configMaps"]; result: GlobalHeadersResult } | null = null;
  /** The hosts the served Ingresses name (gateway/ingress-hosts.ts), kept as the Ingress part compiles. */
  #claimIndex = new HostClaimsIndex();
  /** The last holdIngressHosts, its inputs and its results. */
  #held: { routes: GatewayRoutes; statuses: GatewayCompileResult["routes"]; version: number; table: GatewayRoutes; diagnostics: readonly Diagnostic[] } | null = null;
  /** With --gateway-ports: each Gateway's own ports and their rules (gateway/ports.ts). */
  #gwPortsCompiler = new GatewayPortsCompiler();
  #gwPorts: GatewayPortsState | null = null;
  /** The last #compile's Service and EndpointSlice changes, while a Gateway compile exists. */
  #sharedDiff: SharedDiff | null = null;

  constructor(config: CompileConfig, options: CompilerOptions = {}) {
    this.#config = config;
    this.#bulkAbove = options.bulkAbove;
    this.#ownerOf = config.hostPolicyScope === "namespace" ? (hostKey) => hostOwner(this.#served.contributors.get(hostKey) ?? NONE, "namespace") : null;
    this.#served = new ServedPlans(config);
    const prev = options.previous;
    if (prev !== undefined && sameGatewaySettings(prev.#config, config)) {
      // The Gateway work holds the Backends it resolved: the cache goes with it, so an
      // Ingress and a route naming one Service keep sharing its Backend object.
      this.#backends = prev.#backends;
      this.#gw = prev.#gw;
      this.#gwOwn = prev.#gwOwn;
      this.#gwShared = prev.#gwShared;
      this.#handedOn = true;
      this.#gwPortsCompiler = prev.#gwPortsCompiler;
      this.#gwPorts = prev.#gwPorts;
    } else this.#backends = new BackendCache(config);
  }

  compile(snapshot: Snapshot): CompileResult {
    this.#backends.begin(snapshot);
    try {
      return this.#withGlobalHeaders(snapshot, this.#withGateway(snapshot, this.#compile(snapshot)));
    } catch (err) {
      // Half-updated state would make every later compile wrong: start over next time.
      this.#reset();
      throw err;
    } finally {
      this.#backends.end();
    }
  }

  /**
   * add-headers and proxy-set-headers (global-headers.ts) on the table: read again only when
   * the settings or the snapshot's ConfigMaps changed, and the same object kept otherwise, so a
   * worker is sent them only when they change.
   */
  #withGlobalHeaders(snapshot: Snapshot, base: CompileResult): CompileResult {
    const c = this.#config;
    if (c.addHeaders == null && c.proxySetHeaders == null) return base;
    if (this.#globalHeaders === null || this.#globalHeaders.configMaps !== snapshot.configMaps) {
      this.#globalHeaders = { configMaps: snapshot.configMaps, result: resolveGlobalHeaders({ addHeaders: c.addHeaders ?? null, proxySetHeaders: c.proxySetHeaders ?? null }, snapshot.configMaps) };
    }
    const { headers, diagnostics } = this.#globalHeaders.result;
    const table = headers === null ? base.table : Object.freeze({ ...base.table, globalHeaders: headers });
    const all = diagnostics.length === 0 ? base.diagnostics : Object.freeze([...base.diagnostics, ...diagnostics].sort((x, y) => compareStrings(diagnosticKey(x), diagnosticKey(y))));
    return Object.freeze({ ...base, table, diagnostics: all });
  }

  /**
   * The Gateway API part (compile/gateway/), added to the Ingress result. Compiled again when a
   * Gateway API object or a Namespace changed, or a Service, EndpointSlice group, Secret or
   * ConfigMap it names did, incrementally (compileGateways redoes only the routes that read what
   * changed: docs/design.md "Gateway API"); Ingress-only changes reuse it. Without a
   * GatewayClass nothing is done and the result is the Ingress one as it is.
   */
  #withGateway(snapshot: Snapshot, base: CompileResult): CompileResult {
    if ((snapshot.gatewayClasses?.size ?? 0) === 0 && this.#gw === null) return base;
    const own = [snapshot.gatewayClasses, snapshot.gateways, snapshot.httpRoutes, snapshot.grpcRoutes, snapshot.referenceGrants, snapshot.namespaces, snapshot.ingressNginxPolicies];
    const shared = [snapshot.services, snapshot.endpointSlices, snapshot.secrets, snapshot.configMaps ?? NO_CONFIG_MAPS] as const;
    let gw = this.#gw;
    let dirty = gw === null || this.#handedOn || own.some((m, i) => m !== this.#gwOwn[i]);
    // With --gateway-ports: the ports are allocated and compiled again when the Gateway part is,
    // and also when a Gateway's own Service (which records its ports) or the
    // --default-ssl-certificate binding (served by a port without a hostless listener) changed:
    // neither is a dependency of the Gateway compile.
    const range = this.#config.gatewayPorts;
    const ports = this.#gwPorts;
    const fallback = range === null ? undefined : base.certificates.find((c) => c.host === "");
    let portsDirty = range !== null && (ports === null || !sameBinding(ports.fallback, fallback));
    // The keys named by the last Gateway compile that changed since (Services and EndpointSlice
    // groups share their keys), so it knows which routes to compile again. Each compared in what
    // its readers read of it: a Service's spec for the routes (backend-cache.ts sameService, as
    // for the Ingress hosts), every relevant part for the Gateways' own Services (ports.ts reads
    // their labels and annotations), a group slice by slice (sameSliceGroup), a Secret or
    // ConfigMap in store/relevance.ts's part. The store keeps each newest version (status
    // writers read them), so a relist, a status write or a metadata-only update compiles no route.
    const services = new Set<string>();
    const secrets = new Set<string>();
    const configMaps = new Set<string>();
    if (gw !== null && this.#gwShared.length === 0) dirty = true;
    else if (gw !== null) {
      const deps = gw.deps;
      const [lastServices, lastSlices, lastSecrets, lastConfigMaps] = this.#gwShared as typeof shared;
      const routeRead = (k: string) => {
        if (!deps.services.has(k)) return;
        dirty = true;
        services.add(k);
      };
      const serviceSpec = (k: string) => {
        if (ports?.services.has(k)) portsDirty = true;
        routeRead(k);
      };
      const serviceOther = (k: string) => {
        if (ports?.services.has(k)) portsDirty = true;
      };
      // #compile has just compared the same maps for the Ingress hosts, unless this Compiler
      // was handed the Gateway work of another (its #last started empty).
      const diff = this.#sharedDiff;
      if (lastServices !== snapshot.services) {
        if (diff !== null && diff.services === lastServices) {
          for (const k of diff.serviceSpec) serviceSpec(k);
          for (const k of diff.serviceOther) serviceOther(k);
        } else serviceChanges(lastServices, snapshot.services, serviceSpec, ports === null ? null : serviceOther);
      }
      if (lastSlices !== snapshot.endpointSlices) {
        if (diff !== null && diff.slices === lastSlices) for (const k of diff.sliceGroups) routeRead(k);
        else relevantChangedGroups(lastSlices, snapshot.endpointSlices, routeRead);
      }
      relevantChangedKeys("Secret", lastSecrets, snapshot.secrets, (k) => {
        if (!deps.secrets.has(k)) return;
        dirty = true;
        secrets.add(k);
      });
      relevantChangedKeys("ConfigMap", lastConfigMaps, shared[3], (k) => {
        if (!deps.configMaps.has(k)) return;
        dirty = true;
        configMaps.add(k);
      });
    }
    const changes = gw === null || this.#gwShared.length === 0 ? null : { services, secrets, configMaps };
    if (dirty || gw === null) {
      const before = gw;
      gw = compileGateways(snapshot, this.#config.gatewayControllerName, this.#resolve, changes === null ? null : { prev: gw!, ...changes }, this.#config);
      this.#gw = gw;
      // compileGateways hands back the previous result itself when nothing it reads changed (a
      // status write, which the controller makes after each compile): each unit reads a part of
      // what the whole reads, so its ports stand too.
      if (gw !== before) portsDirty = range !== null;
    }
    if (range !== null && portsDirty) {
      const { units, diagnostics, unplaced, services: read } = allocateGatewayPorts(gw.gateways, snapshot.services, this.#config.publishService?.namespace ?? null, range);
      const compiled = this.#gwPortsCompiler.compile(snapshot, this.#config.gatewayControllerName, this.#resolve, units, changes, fallback, this.#config);
      this.#gwPorts = { ports: compiled, diagnostics, certificates: this.#gwPortsCompiler.certificates, status: unplaced.length === 0 ? gw : { ...gw, gateways: withUnplaced(gw.gateways, unplaced, range) }, fallback, services: read };
    }
    this.#gwOwn = own;
    this.#gwShared = shared;
    this.#handedOn = false;
    const cached = this.#gwResult;
    if (cached !== null && cached.base === base && cached.gw === gw && cached.ports === this.#gwPorts) return cached.result;
    // With --gateway-ports each Gateway is served on its own ports only: the shared ports keep
    // the Ingresses alone (docs/design.md "Gateways with their own address").
    const dedicated = this.#gwPorts;
    // On a host an Ingress names only its owners' routes are asked first (gateway/ingress-hosts.ts).
    const held = dedicated !== null || gw.table === null ? null : this.#holdIngressHosts(gw, gw.table, base);
    const table =
      dedicated !== null
        ? Object.freeze({ ...base.table, gatewayPorts: dedicated.ports })
        : gw.table === null
          ? base.table
          : Object.freeze({ ...base.table, gateway: held!.table });
    // A host bound by a Gateway listener serves the listener's certificate, as its requests
    // are asked of the Gateway rules first (docs/design.md "Gateway API").
    // With --gateway-ports the Gateways' certificates are their own ports' (gatewayPortCertificates).
    // Except a host an Ingress's spec.tls binds: that keeps the Ingress's certificate.
    const gwCertificates = dedicated === null ? withoutIngressTlsHosts(gw.certificates, base.certificates) : [];
    const gwHosts = new Set(gwCertificates.map((c) => c.host));
    const certificates = gwHosts.size === 0 ? base.certificates : Object.freeze([...base.certificates.filter((c) => !gwHosts.has(c.host)), ...gwCertificates]);
    const gwDiagnostics = [...gw.diagnostics, ...(dedicated?.diagnostics ?? []), ...(held?.diagnostics ?? [])];
    const diagnostics =
      gwDiagnostics.length === 0
        ? base.diagnostics
        : Object.freeze([...base.diagnostics, ...gwDiagnostics].sort((x, y) => compareStrings(diagnosticKey(x), diagnosticKey(y))));
    const result: CompileResult = Object.freeze({ ...base, table, certificates, diagnostics, gateway: dedicated?.status ?? gw, ...(dedicated === null ? {} : { gatewayPortCertificates: dedicated.certificates }) });
    this.#gwResult = { base, gw, ports: dedicated, result };
    return result;
  }

  /**
   * The Gateway table with the hosts the served Ingresses name held for their owners, and the
   * RouteHostHeldByIngress warnings (gateway/ingress-hosts.ts). Kept while the Gateway table,
   * its statuses and the claims are the same: an Ingress edit that changes no host's
   * namespaces leaves the Gateway part the same objects, so the workers' delta carries none of
   * it (table/wire.ts sends what changed identity).
   */
  #holdIngressHosts(gw: GatewayCompileResult, routes: GatewayRoutes, base: CompileResult): { table: GatewayRoutes; diagnostics: readonly Diagnostic[] } {
    const index = this.#claimIndex;
    index.setAliases(base.table.aliasKeys);
    const last = this.#held;
    if (last !== null && last.routes === routes && last.statuses === gw.routes && last.version === index.version) return last;
    const table = holdIngressHosts(routes, index.claims);
    const held = { routes, statuses: gw.routes, version: index.version, table, diagnostics: heldHostDiagnostics(routes, index.claims, gw.routes) };
    this.#held = held;
    return held;
  }

  #reset(): void {
    this.#held = null;
    this.#claimIndex = new HostClaimsIndex();
    this.#gw = null;
    this.#gwOwn = [];
    this.#gwShared = [];
    this.#handedOn = false;
    this.#gwResult = null;
    this.#globalHeaders = null;
    this.#gwPortsCompiler = new GatewayPortsCompiler();
    this.#gwPorts = null;
    this.#sharedDiff = null;
    this.#last = { ingresses: null, classes: null, services: null, slices: null, secrets: null, configMaps: undefined };
    this.#ctx = null;
    this.#served = new ServedPlans(this.#config);
    this.#backends.clear();
    this.#hosts.clear();
    this.#hostDiagnostics.clear();
    this.#orphanDiagnostics.clear();
    this.#hostKeys = [];
    this.#hostsByService.clear();
    this.#aliasHosts.clear();
    this.#aliases = NO_ALIASES;
    this.#routeCount = this.#pathCount = 0;
    this.#table = this.#tls = this.#default = this.#diagCache = this.#result = null;
  }

  #compile(snapshot: Snapshot): CompileResult {
    const last = this.#last;
    const served = this.#served;
    /** Host keys whose entry must be checked (rebuilt unless its inputs are the same). */
    const dirty = new Set<string>();

    // Ingresses: the changed ones, or all (bulk) after an IngressClass change or many changes.
    let reclassify = false;
    if (snapshot.ingressClasses !== last.classes || this.#ctx === null) {
      this.#ctx = classContext(snapshot.ingressClasses, this.#config);
      reclassify = true;
    }
    const changed: string[] = [];
    if (!reclassify) changedKeys(last.ingresses, snapshot.ingresses, (k) => changed.push(k));
    // An Ingress whose basic-auth Secret changed is planned again (access.ts).
    // So is one whose auth-proxy-set-headers ConfigMap changed (auth-headers.ts).
    // Both compared in what the compiler reads of them (planIsCurrent, store/relevance.ts): the store keeps a
    // Secret's or ConfigMap's label or resourceVersion update too, which plans nothing again.
    if (!reclassify && (snapshot.secrets !== last.secrets || snapshot.configMaps !== last.configMaps)) changed.push(...served.staleAuth(snapshot.ingresses, snapshot.secrets, snapshot.configMaps));
    const bulkAbove = this.#bulkAbove ?? Math.max(32, snapshot.ingresses.size / 8);
    if (reclassify || this.#table === null || changed.length > bulkAbove) served.rebuild(snapshot.ingresses, snapshot.secrets, this.#ctx, dirty, snapshot.configMaps);
    else for (const key of changed) served.update(key, snapshot.ingresses, snapshot.secrets, this.#ctx, dirty, snapshot.configMaps);
    // With --host-policy-scope=namespace a host's TLS coverage depends on who owns it, which
    // can change with any Ingress of the host (host-scope.ts).
    const ownersMayChange = this.#ownerOf !== null && dirty.size > 0;

    // Services and EndpointSlices: the hosts that resolve a backend through a changed one.
    const serviceChanged = (key: string) => {
      const hosts = this.#hostsByService.get(key);
      if (typeof hosts === "string") dirty.add(hosts);
      else if (hosts !== undefined) for (const hostKey of hosts) dirty.add(hostKey);
    };
    // Compared in what the hosts read of them: a Service's spec (resolveRef: backend-cache.ts
    // sameService), a group slice by slice (sameSliceGroup). A relist replaces every object with
    // an equal one, and a status, annotation or resourceVersion write replaces one; neither
    // builds a host again. The keys are kept for the Gateway part, which compares the same maps
    // (#withGateway); a Service changed in its other relevant parts only matters there, to the
    // Gateways' own Services with --gateway-ports.
    const diff: SharedDiff | null = this.#gw === null ? null : { services: last.services, slices: last.slices, serviceSpec: [], serviceOther: [], sliceGroups: [] };
    const serviceOther = diff === null || this.#config.gatewayPorts === null ? null : (k: string) => void diff.serviceOther.push(k);
    serviceChanges(
      last.services,
      snapshot.services,
      (k) => {
        serviceChanged(k);
        diff?.serviceSpec.push(k);
      },
      serviceOther,
    );
    relevantChangedGroups(last.slices, snapshot.endpointSlices, (k) => {
      serviceChanged(k);
      diff?.sliceGroups.push(k);
    });
    this.#sharedDiff = diff;

    // spec.tls: bindings, and every host whose TLS coverage flips.
    if (served.tlsChanged || this.#tls === null || snapshot.secrets !== last.secrets || ownersMayChange) {
      served.tlsChanged = false;
      const before = this.#tls;
      this.#tls = tlsBindings(served.tlsPlans, snapshot.secrets, this.#secretData, this.#config, this.#ownerOf);
      this.#claimIndex.setTls(served.tlsPlans);
      this.#diagVersion++;
      if (before !== null && (this.#ownerOf !== null || !sameSet(before.hosts, this.#tls.hosts))) {
        const covered = tlsCoverage(this.#tls, this.#ownerOf);
        for (const [hostKey, e] of this.#hosts) if (e.tls !== covered(hostKey === "*" ? null : hostKey)) dirty.add(hostKey);
      }
    }
    const tls = this.#tls;
    this.#last = { ingresses: snapshot.ingresses, classes: snapshot.ingressClasses, services: snapshot.services, slices: snapshot.endpointSlices, secrets: snapshot.secrets, configMaps: snapshot.configMaps };

    // Rebuild what is dirty.
    const covered = tlsCoverage(tls, this.#ownerOf);
    const changes: [string, HostRoutes | null][] = [];
    const added: string[] = [];
    let removed = 0;
    let aliasesDirty = false;
    hostEntryChecks.count += dirty.size;
    for (const hostKey of dirty) {
      const prev = this.#hosts.get(hostKey);
      const plans = served.contributors.get(hostKey);
      this.#claimIndex.setRules(hostKey, plans);
      const canaries = served.canaries.get(hostKey) ?? NONE;
      let next: HostEntry | undefined;
      if (plans !== undefined) {
        const isTls = covered(hostKey === "*" ? null : hostKey);
        const same = prev !== undefined && sameHostInputs(prev, hostKey, plans, canaries, isTls, this.#resolve);
        next = same ? prev : buildHostEntry(hostKey, plans, canaries, isTls, this.#resolve, this.#config.hostPolicyScope, this.#config.proxySslLocationOnly);
      }
      this.#setOrphanCanaries(hostKey, plans === undefined ? canaries : NONE);
      if (next === prev) continue;
      if ((prev?.aliases.length ?? 0) > 0 || (next?.aliases.length ?? 0) > 0) aliasesDirty = true;
      this.#setHost(hostKey, prev, next);
      if (prev === undefined) added.push(hostKey);
      else if (next === undefined) removed++;
      changes.push([hostKey, next?.entry ?? null]);
    }
    this.#sortHostKeys(added, removed);
    // An alias is dropped while it is some host's name: a host that comes or goes can change them.
    if (aliasesDirty || ((added.length > 0 || removed > 0) && this.#aliasHosts.size > 0)) {
      const aliases = decideAliases(this.#aliasHosts, this.#hosts);
      if (!sameAliases(aliases, this.#aliases)) {
        this.#aliases = aliases;
        this.#diagVersion++;
      }
    }
    const aliasKeys = this.#aliases.keys;

    const extra: Diagnostic[] = [];
    this.#default = defaultEntry(served.defaultPlans, this.#config, this.#resolve, this.#default, extra, this.#hosts.get("*")?.hostCert ?? null);
    const defaultRoute = this.#default?.route ?? null;
    const prevTable = this.#table;
    let table: RouteTable;
    if (prevTable !== null && changes.length === 0 && defaultRoute === prevTable.defaultRoute) table = prevTable;
    else if (prevTable !== null && added.length === 0) table = patchTable(prevTable, changes, defaultRoute, this.#routeCount, false, aliasKeys);
    else table = assembleTable(this.#hostKeys.map((k) => (this.#hosts.get(k) as HostEntry).entry), defaultRoute, this.#routeCount, aliasKeys);
    this.#table = table;

    this.#backends.sweep(this.#pathCount, () => this.#liveBackendIds());
    this.#result = Object.freeze({ table, certificates: tls.bindings, hostTls: hostTlsOptions(served.contributors, this.#config.hostPolicyScope), statuses: served.statuses, diagnostics: this.#diagnostics(extra) });
    return this.#result;
  }

  /**
   * Explain's view of `snapshot`, compiled first unless it is the one this Compiler compiled
   * last (the controller passes the snapshot of the live table, so nothing is compiled). The
   * claim rule runs again, with a trace, for `hostKeys` only, and the default-backend rule
   * over the served spec.defaultBackends: the plans and Backends are this compile's.
   */
  inspect(snapshot: Snapshot, hostKeys: Iterable<string>): Inspection {
    const last = this.#last;
    const same =
      snapshot.ingresses === last.ingresses &&
      snapshot.ingressClasses === last.classes &&
      snapshot.services === last.services &&
      snapshot.endpointSlices === last.slices &&
      snapshot.secrets === last.secrets &&
      snapshot.configMaps === last.configMaps;
    // this.#result is the Ingress part: the Gateway API part and add-headers/proxy-set-headers
    // are added as compile() adds them (each reused while its objects are the same), so
    // explain sees what the proxy serves.
    let result: CompileResult;
    if (same && this.#result !== null) {
      this.#backends.begin(snapshot);
      try {
        result = this.#withGlobalHeaders(snapshot, this.#withGateway(snapshot, this.#result));
      } finally {
        this.#backends.end();
      }
    } else result = this.compile(snapshot);
    const served = this.#served;
    const ctx = this.#ctx as ClassContext;
    const config = this.#config;
    const covered = tlsCoverage(this.#tls as TlsState, this.#ownerOf);
    const trace = newTrace();
    this.#backends.begin(snapshot);
    try {
      for (const hostKey of new Set(hostKeys)) {
        const plans = served.contributors.get(hostKey);
        const canaries = served.canaries.get(hostKey) ?? NONE;
        if (plans !== undefined || canaries.length > 0) {
          claimHost(hostKey, plans ?? NONE, canaries, covered(hostKey === "*" ? null : hostKey), this.#resolve, config.hostPolicyScope, trace, config.proxySslLocationOnly);
        }
      }
      defaultEntry(served.defaultPlans, config, this.#resolve, this.#default, [], this.#hosts.get("*")?.hostCert ?? null, trace);
    } finally {
      this.#backends.end();
    }
    return {
      result,
      served: served.inOrder,
      ignored: served.ignoredInOrder,
      classify: (plan) => classify(plan.ingress, ctx, config),
      trace,
    };
  }

  /** Keep #hostKeys equal to #hosts' keys, sorted: a few binary insertions, or one sort. */
  #sortHostKeys(added: readonly string[], removed: number): void {
    if (added.length === 0 && removed === 0) return;
    if (added.length + removed > 64) {
      this.#hostKeys = [...this.#hosts.keys()].sort();
      return;
    }
    if (removed > 0) this.#hostKeys = this.#hostKeys.filter((k) => this.#hosts.has(k));
    for (const k of added) insertSorted(this.#hostKeys, k, compareStrings);
  }

  /**
   * Canary Ingresses of a host that has no main Ingress make no host entry (they would hide a
   * wildcard or hostless entry); their CanaryWithoutMain diagnostics are kept here.
   */
  #setOrphanCanaries(hostKey: string, canaries: readonly IngressPlan[]): void {
    const had = this.#orphanDiagnostics.has(hostKey);
    if (canaries.length === 0) {
      if (had) {
        this.#orphanDiagnostics.delete(hostKey);
        this.#diagVersion++;
      }
      return;
    }
    // Nothing is resolved with no claims, and none is cached: a canary edit dirties its hosts.
    const { diagnostics } = claimHost(hostKey, NONE, canaries, false, this.#resolve, this.#config.hostPolicyScope);
    this.#orphanDiagnostics.set(hostKey, diagnostics);
    this.#diagVersion++;
  }

  /** Install (or remove, with next undefined) a host entry and keep the indexes in step. */
  #setHost(hostKey: string, prev: HostEntry | undefined, next: HostEntry | undefined): void {
    if (prev !== undefined) {
      this.#routeCount -= prev.entry.routes.length;
      this.#pathCount -= prev.backends.length;
      for (const s of prev.services) {
        const hosts = this.#hostsByService.get(s);
        if (hosts === hostKey) this.#hostsByService.delete(s);
        else if (typeof hosts === "object" && hosts.delete(hostKey) && hosts.size === 1) this.#hostsByService.set(s, hosts.values().next().value as string);
      }
      if (this.#hostDiagnostics.delete(hostKey)) this.#diagVersion++;
      this.#aliasHosts.delete(hostKey);
    }
    if (next === undefined) {
      this.#hosts.delete(hostKey);
      return;
    }
    this.#routeCount += next.entry.routes.length;
    this.#pathCount += next.backends.length;
    for (const s of next.services) {
      const hosts = this.#hostsByService.get(s);
      if (hosts === undefined) this.#hostsByService.set(s, hostKey);
      else if (typeof hosts === "object") hosts.add(hostKey);
      else if (hosts !== hostKey) this.#hostsByService.set(s, new Set([hosts, hostKey]));
    }
    if (next.diagnostics.length > 0) {
      this.#hostDiagnostics.set(hostKey, next.diagnostics);
      this.#diagVersion++;
    }
    if (next.aliases.length > 0) this.#aliasHosts.add(hostKey);
    this.#hosts.set(hostKey, next);
  }

  *#liveBackendIds(): Iterable<string> {
    for (const e of this.#hosts.values()) for (const b of e.backends) yield b.backend.id;
    if (this.#default) yield this.#default.backend.backend.id;
  }

  /** Every source's diagnostics, deduplicated and sorted; the last list while none changed. */
  #diagnostics(extra: readonly Diagnostic[]): readonly Diagnostic[] {
    const version = `${this.#diagVersion}/${this.#served.diagVersion}\u0001${extra.map(diagnosticKey).join("\u0001")}`;
    if (this.#diagCache !== null && this.#diagCache.version === version) return this.#diagCache.list;
    const list = new DiagnosticList();
    for (const ds of this.#served.diagnostics.values()) for (const d of ds) list.add(d);
    for (const d of (this.#tls as TlsState).diagnostics) list.add(d);
    for (const ds of this.#hostDiagnostics.values()) for (const d of ds) list.add(d);
    for (const ds of this.#orphanDiagnostics.values()) for (const d of ds) list.add(d);
    for (const d of this.#aliases.diagnostics) list.add(d);
    for (const d of extra) list.add(d);
    const sorted = list.sorted();
    this.#diagCache = { version, list: sorted };
    return sorted;
  }
}
