// The incremental compiler: the same function as the straightforward compile (compileTraced
// in compile.ts), computed from what changed since the previous call. Correctness rests on one
// fact: objects in a Snapshot are immutable and replaced on change (store/), so object
// identity says "unchanged", and two snapshots' maps can be compared key by key
// (changes.ts). Work per compile is proportional to what changed, plus a few passes over the
// snapshot's maps to find it.
//
// Kept between compiles:
// - per Ingress: its plan (plan.ts: annotations, validated hosts and paths, backend refs,
//   TLS hosts, its own diagnostics) and whether it is served;
// - the served plans in priority order, per host key (contributors), for spec.tls and for
//   spec.defaultBackend, and the served keys in name order (statuses);
// - per backend id: the resolved Backend, reused while `services.get(key)` and
//   `endpointSlices.get(key)` are the same objects (so the Backend object, and the proxy's
//   state keyed on it, survive unrelated changes);
// - per host key: the built HostRoutes with its diagnostics, the Backends it used and the
//   Services it depends on. A host is rebuilt only when its contributors change, a Service
//   or EndpointSlice group it uses changes, or its TLS coverage flips.
// When many Ingresses change at once (the first compile, an IngressClass change, a relist),
// the ordered lists are rebuilt with one sort instead (bulk); host entries are still reused
// where their inputs are the same objects.
// explain's trace is not supported here: explain runs the straightforward compile.
import type { Diagnostic, DiagnosticReason } from "../model/diagnostic.ts";
import type { EndpointSlice, Ingress, IngressClass, Secret, Service } from "../model/schemas.ts";
import type { Snapshot } from "../store/types.ts";
import { assembleTable, buildHost, patchTable, viaOf } from "../table/build.ts";
import type { BackendStatus, HostRoutes, Route, RouteTable } from "../table/types.ts";
import { DEFAULT_ROUTE_OPTIONS } from "./annotations.ts";
import { resolveRef, serviceRef, type BackendRef, type ResolvedBackend } from "./backends.ts";
import { changedKeys, compareStrings, insertSorted, lowerBound, removeSorted } from "./changes.ts";
import { classContext, classify, type ClassContext } from "./class.ts";
import type { CompileConfig } from "./config.ts";
import { DiagnosticList } from "./diagnostics.ts";
import { describeAge } from "./order.ts";
import { comparePlans, planIngress, type IngressPlan, type PathPlan } from "./plan.ts";
import { decode, tlsCoverage } from "./tls.ts";
import type { CertificateBinding, CompileResult, IngressRef } from "./types.ts";

export interface CompilerOptions {
  /**
   * When more Ingresses than this changed, the ordered lists are rebuilt with one sort instead
   * of one update per change. Default: an eighth of them, at least 32. Tests force each way.
   */
  readonly bulkAbove?: number;
}

interface BackendEntry {
  readonly service: Service | undefined;
  readonly slices: readonly EndpointSlice[] | undefined;
  readonly resolved: ResolvedBackend;
  /** The compile that last validated it. */
  used: number;
}

interface HostEntry {
  readonly plans: readonly IngressPlan[];
  readonly tls: boolean;
  /** The Backend of every path plan of every contributing plan, in order. */
  readonly backends: readonly ResolvedBackend[];
  /** Snapshot keys (`namespace/name`) of the Services those backends read. */
  readonly services: readonly string[];
  readonly entry: HostRoutes;
  readonly diagnostics: readonly Diagnostic[];
}

interface DefaultEntry {
  readonly plan: IngressPlan | null;
  readonly backend: ResolvedBackend;
  readonly route: Route;
}

interface TlsState {
  readonly bindings: readonly CertificateBinding[];
  readonly hosts: ReadonlySet<string>;
  readonly diagnostics: readonly Diagnostic[];
}

/** routes.ts reportBackend's reason (only asked for a backend whose status is not "ok"). */
const backendReason = (r: ResolvedBackend): DiagnosticReason =>
  r.backend.status === "Unsupported" ? "UnsupportedBackend" : (r.backend.status as Exclude<BackendStatus, "ok" | "Unsupported">);

const diagKey = (d: Diagnostic) => `${d.kind}\u0000${d.namespace}\u0000${d.name}\u0000${d.reason}\u0000${d.message}`;

const sameSet = (a: ReadonlySet<string>, b: ReadonlySet<string>) => a.size === b.size && [...a].every((x) => b.has(x));

export class Compiler {
  readonly #config: CompileConfig;
  readonly #bulkAbove: number | undefined;

  // The previous snapshot's maps (what the next one is compared with).
  #ingresses: ReadonlyMap<string, Ingress> | null = null;
  #classes: ReadonlyMap<string, IngressClass> | null = null;
  #services: ReadonlyMap<string, Service> | null = null;
  #slices: ReadonlyMap<string, readonly EndpointSlice[]> | null = null;
  #secrets: ReadonlyMap<string, Secret> | null = null;
  #ctx: ClassContext | null = null;

  /** Every Ingress of the last snapshot, planned. */
  #plans = new Map<string, IngressPlan>();
  /** The served ones. */
  #served = new Map<string, IngressPlan>();
  /** Served plans per host key, in priority order. */
  #contributors = new Map<string, IngressPlan[]>();
  /** Served plans with spec.tls / spec.defaultBackend, in priority order. */
  #tlsPlans: IngressPlan[] = [];
  #defaultPlans: IngressPlan[] = [];
  /** Served keys sorted by name, and the statuses list of the last result (same order). */
  #statusKeys: readonly string[] = [];
  #statuses: readonly IngressRef[] = Object.freeze([]);
  /** Served plans that carry diagnostics of their own. */
  #planDiagnostics = new Map<string, readonly Diagnostic[]>();

  readonly #hosts = new Map<string, HostEntry>();
  /** Host keys whose entry carries diagnostics, and those diagnostics. */
  readonly #hostDiagnostics = new Map<string, readonly Diagnostic[]>();
  /** Host keys of #hosts, sorted (the order of the table's maps). */
  #hostKeys: string[] = [];
  /** Service key → host keys whose routes resolve a backend of that Service. */
  readonly #hostsByService = new Map<string, Set<string>>();
  #routeCount = 0;
  /** Path plans over every host entry (an upper bound of the Backends in use). */
  #pathCount = 0;
  #table: RouteTable | null = null;

  readonly #backends = new Map<string, BackendEntry>();
  #liveBackends = 0;
  readonly #secretData = new WeakMap<Secret, { cert: string | null; key: string | null }>();
  #tls: TlsState | null = null;
  #default: DefaultEntry | null = null;
  /** Bumped when a diagnostics source other than the default route changes. */
  #diagVersion = 0;
  #diagCache: { version: number; extra: string; list: readonly Diagnostic[] } | null = null;

  #run = 0;
  #snapshot: Snapshot | null = null;

  constructor(config: CompileConfig, options: CompilerOptions = {}) {
    this.#config = config;
    this.#bulkAbove = options.bulkAbove;
  }

  compile(snapshot: Snapshot): CompileResult {
    this.#run++;
    this.#snapshot = snapshot;
    try {
      return this.#compile(snapshot);
    } catch (err) {
      // Half-updated state would make every later compile wrong: start over next time.
      this.#reset();
      throw err;
    } finally {
      this.#snapshot = null;
    }
  }

  #reset(): void {
    this.#ingresses = this.#classes = this.#services = this.#slices = this.#secrets = null;
    this.#ctx = null;
    this.#plans = new Map();
    this.#served = new Map();
    this.#contributors = new Map();
    this.#tlsPlans = [];
    this.#defaultPlans = [];
    this.#statusKeys = [];
    this.#statuses = Object.freeze([]);
    this.#planDiagnostics = new Map();
    this.#hostDiagnostics.clear();
    this.#hosts.clear();
    this.#hostKeys = [];
    this.#hostsByService.clear();
    this.#routeCount = 0;
    this.#pathCount = 0;
    this.#table = null;
    this.#backends.clear();
    this.#tls = null;
    this.#default = null;
    this.#diagCache = null;
  }

  #compile(snapshot: Snapshot): CompileResult {
    /** Host keys whose entry must be checked (rebuilt unless its inputs are the same). */
    const dirty = new Set<string>();

    // Which Ingresses to look at again: the changed ones, or all when the classes changed.
    let reclassify = false;
    if (snapshot.ingressClasses !== this.#classes || this.#ctx === null) {
      this.#classes = snapshot.ingressClasses;
      this.#ctx = classContext(snapshot.ingressClasses, this.#config);
      reclassify = true;
    }
    const changed: string[] = [];
    if (!reclassify) changedKeys(this.#ingresses, snapshot.ingresses, (k) => changed.push(k));
    this.#ingresses = snapshot.ingresses;
    const bulkAbove = this.#bulkAbove ?? Math.max(32, snapshot.ingresses.size / 8);
    const bulk = reclassify || this.#table === null || changed.length > bulkAbove;
    let tlsPlansChanged = bulk;
    if (bulk) this.#rebuildServed(snapshot, dirty);
    else for (const key of changed) if (this.#update(key, snapshot, dirty)) tlsPlansChanged = true;

    // Services and EndpointSlices: the hosts that resolve a backend through a changed one.
    const serviceChanged = (key: string) => {
      for (const hostKey of this.#hostsByService.get(key) ?? []) dirty.add(hostKey);
    };
    changedKeys(this.#services, snapshot.services, serviceChanged);
    changedKeys(this.#slices, snapshot.endpointSlices, serviceChanged);
    this.#services = snapshot.services;
    this.#slices = snapshot.endpointSlices;

    // spec.tls: bindings, and every host whose TLS coverage flips.
    if (tlsPlansChanged || this.#tls === null || snapshot.secrets !== this.#secrets) {
      this.#secrets = snapshot.secrets;
      const before = this.#tls;
      this.#tls = this.#collectTls();
      this.#diagVersion++;
      if (before !== null && !sameSet(before.hosts, this.#tls.hosts)) {
        const covered = tlsCoverage(this.#tls.hosts);
        for (const [hostKey, e] of this.#hosts) if (e.tls !== covered(hostKey === "*" ? null : hostKey)) dirty.add(hostKey);
      }
    }
    const covered = tlsCoverage((this.#tls as TlsState).hosts);

    // Rebuild what is dirty.
    const changes: [string, HostRoutes | null][] = [];
    const added: string[] = [];
    let removed = 0;
    for (const hostKey of dirty) {
      const prev = this.#hosts.get(hostKey);
      const plans = this.#contributors.get(hostKey);
      let next: HostEntry | undefined;
      if (plans !== undefined) {
        const isTls = covered(hostKey === "*" ? null : hostKey);
        next = prev !== undefined && this.#unchanged(prev, hostKey, plans, isTls) ? prev : this.#buildHost(hostKey, plans, isTls);
      }
      if (next === prev) continue;
      this.#setHost(hostKey, prev, next);
      if (prev === undefined) added.push(hostKey);
      else if (next === undefined) removed++;
      changes.push([hostKey, next?.entry ?? null]);
    }
    this.#sortHostKeys(added, removed);

    const extra: Diagnostic[] = [];
    const defaultRoute = this.#defaultRoute(extra);
    const prevTable = this.#table;
    let table: RouteTable;
    if (prevTable !== null && changes.length === 0 && defaultRoute === prevTable.defaultRoute) table = prevTable;
    else if (prevTable !== null && added.length === 0) table = patchTable(prevTable, changes, defaultRoute, this.#routeCount);
    else table = assembleTable(this.#hostKeys.map((k) => (this.#hosts.get(k) as HostEntry).entry), defaultRoute, this.#routeCount);
    this.#table = table;

    this.#sweepBackends();
    return Object.freeze({
      table,
      certificates: (this.#tls as TlsState).bindings,
      statuses: this.#statuses,
      diagnostics: this.#diagnostics(extra),
    });
  }

  /** Bulk: plan and classify every Ingress, then rebuild the ordered lists with one sort. */
  #rebuildServed(snapshot: Snapshot, dirty: Set<string>): void {
    const ctx = this.#ctx as ClassContext;
    const plans = new Map<string, IngressPlan>();
    const served: IngressPlan[] = [];
    const keyOf = new Map<IngressPlan, string>();
    for (const [key, ing] of snapshot.ingresses) {
      const old = this.#plans.get(key);
      const plan = old !== undefined && old.ingress === ing ? old : planIngress(ing);
      plans.set(key, plan);
      if (classify(ing, ctx, this.#config).served) {
        served.push(plan);
        keyOf.set(plan, key);
      }
    }
    served.sort(comparePlans);
    for (const hostKey of this.#contributors.keys()) dirty.add(hostKey);
    this.#plans = plans;
    this.#served = new Map();
    this.#contributors = new Map();
    this.#tlsPlans = [];
    this.#defaultPlans = [];
    this.#planDiagnostics = new Map();
    for (const p of served) {
      const key = keyOf.get(p) as string;
      this.#served.set(key, p);
      for (const hostKey of p.hosts.keys()) {
        const list = this.#contributors.get(hostKey);
        if (list) list.push(p);
        else this.#contributors.set(hostKey, [p]);
        dirty.add(hostKey);
      }
      if (p.tls.length > 0) this.#tlsPlans.push(p);
      if (p.defaultBackend !== null) this.#defaultPlans.push(p);
      if (p.diagnostics.length > 0) this.#planDiagnostics.set(key, p.diagnostics);
    }
    this.#diagVersion++;
    // Statuses are sorted by `namespace/name` (plan.key; the snapshot key omits an empty namespace).
    const byName = [...served].sort((a, b) => compareStrings(a.key, b.key));
    const keys = byName.map((p) => p.key);
    const same = keys.length === this.#statusKeys.length && keys.every((k, i) => k === this.#statusKeys[i]);
    if (!same) {
      this.#statusKeys = keys;
      this.#statuses = Object.freeze(byName.map((p) => ({ namespace: p.namespace, name: p.name })));
    }
  }

  /** One changed Ingress key; returns whether the spec.tls list changed. */
  #update(key: string, snapshot: Snapshot, dirty: Set<string>): boolean {
    const ing = snapshot.ingresses.get(key);
    const old = this.#plans.get(key);
    let plan: IngressPlan | undefined;
    if (ing !== undefined) {
      plan = old !== undefined && old.ingress === ing ? old : planIngress(ing);
      this.#plans.set(key, plan);
    } else this.#plans.delete(key);
    const was = this.#served.get(key);
    const now = plan !== undefined && classify(plan.ingress, this.#ctx as ClassContext, this.#config).served ? plan : undefined;
    if (was === now) return false;
    let tls = false;
    if (was !== undefined) {
      this.#served.delete(key);
      for (const hostKey of was.hosts.keys()) {
        const list = this.#contributors.get(hostKey) as IngressPlan[];
        removeSorted(list, was, comparePlans);
        if (list.length === 0) this.#contributors.delete(hostKey);
        dirty.add(hostKey);
      }
      if (was.tls.length > 0) tls = removeSorted(this.#tlsPlans, was, comparePlans);
      if (was.defaultBackend !== null) removeSorted(this.#defaultPlans, was, comparePlans);
      if (this.#planDiagnostics.delete(key)) this.#diagVersion++;
    }
    if (now !== undefined) {
      this.#served.set(key, now);
      for (const hostKey of now.hosts.keys()) {
        const list = this.#contributors.get(hostKey);
        if (list) insertSorted(list, now, comparePlans);
        else this.#contributors.set(hostKey, [now]);
        dirty.add(hostKey);
      }
      if (now.tls.length > 0) {
        insertSorted(this.#tlsPlans, now, comparePlans);
        tls = true;
      }
      if (now.defaultBackend !== null) insertSorted(this.#defaultPlans, now, comparePlans);
      if (now.diagnostics.length > 0) {
        this.#planDiagnostics.set(key, now.diagnostics);
        this.#diagVersion++;
      }
    }
    if (was === undefined && now !== undefined) this.#statusChanged(now.key, now);
    else if (was !== undefined && now === undefined) this.#statusChanged(was.key, undefined);
    return tls;
  }

  /** A key joined or left the served set: a new statuses list (the last one belongs to a result). */
  #statusChanged(key: string, now: IngressPlan | undefined): void {
    const keys = [...this.#statusKeys];
    const statuses = [...this.#statuses];
    const i = lowerBound(keys, key, compareStrings);
    if (now !== undefined) {
      keys.splice(i, 0, key);
      statuses.splice(i, 0, { namespace: now.namespace, name: now.name });
    } else {
      keys.splice(i, 1);
      statuses.splice(i, 1);
    }
    this.#statusKeys = keys;
    this.#statuses = Object.freeze(statuses);
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

  /** Install (or remove, with next undefined) a host entry and keep the indexes in step. */
  #setHost(hostKey: string, prev: HostEntry | undefined, next: HostEntry | undefined): void {
    if (prev !== undefined) {
      this.#routeCount -= prev.entry.routes.length;
      this.#pathCount -= prev.backends.length;
      for (const s of prev.services) {
        const set = this.#hostsByService.get(s);
        set?.delete(hostKey);
        if (set?.size === 0) this.#hostsByService.delete(s);
      }
      if (prev.diagnostics.length > 0) {
        this.#hostDiagnostics.delete(hostKey);
        this.#diagVersion++;
      }
    }
    if (next === undefined) {
      this.#hosts.delete(hostKey);
      return;
    }
    this.#routeCount += next.entry.routes.length;
    this.#pathCount += next.backends.length;
    for (const s of next.services) {
      let set = this.#hostsByService.get(s);
      if (!set) this.#hostsByService.set(s, (set = new Set()));
      set.add(hostKey);
    }
    if (next.diagnostics.length > 0) {
      this.#hostDiagnostics.set(hostKey, next.diagnostics);
      this.#diagVersion++;
    }
    this.#hosts.set(hostKey, next);
  }

  /** Resolve a backend ref, reusing the last Backend while its inputs are the same objects. */
  #backend(ref: BackendRef): ResolvedBackend {
    const snapshot = this.#snapshot as Snapshot;
    const hit = this.#backends.get(ref.id);
    if (hit !== undefined && hit.used === this.#run) return hit.resolved;
    const service = ref.kind === "service" ? snapshot.services.get(ref.key) : undefined;
    const slices = ref.kind === "service" ? snapshot.endpointSlices.get(ref.key) : undefined;
    if (hit !== undefined && hit.service === service && hit.slices === slices) {
      hit.used = this.#run;
      return hit.resolved;
    }
    const resolved = resolveRef(snapshot, ref);
    this.#backends.set(ref.id, { service, slices, resolved, used: this.#run });
    return resolved;
  }

  /** Drop cached backends no host or default route uses, once there are many of them. */
  #sweepBackends(): void {
    // Every live one is used by some path (or the default route): fewer than that is all live.
    if (this.#backends.size <= Math.max(this.#pathCount, 2 * this.#liveBackends) + 1024) return;
    const live = new Set<string>();
    for (const e of this.#hosts.values()) for (const b of e.backends) live.add(b.backend.id);
    if (this.#default) live.add(this.#default.backend.backend.id);
    for (const id of this.#backends.keys()) if (!live.has(id)) this.#backends.delete(id);
    this.#liveBackends = live.size;
  }

  #unchanged(prev: HostEntry, hostKey: string, plans: readonly IngressPlan[], isTls: boolean): boolean {
    if (prev.tls !== isTls || prev.plans.length !== plans.length) return false;
    for (let i = 0; i < plans.length; i++) if (prev.plans[i] !== plans[i]) return false;
    let k = 0;
    for (const p of plans) {
      for (const pp of p.hosts.get(hostKey) as readonly PathPlan[]) {
        if (this.#backend(pp.backend) !== prev.backends[k++]) return false;
      }
    }
    return true;
  }

  /** routes.ts's claim loop for one host: the first claimant in priority order wins. */
  #buildHost(hostKey: string, plans: readonly IngressPlan[], isTls: boolean): HostEntry {
    const routes: Route[] = [];
    const diagnostics: Diagnostic[] = [];
    const backends: ResolvedBackend[] = [];
    const services: string[] = [];
    // Who claimed (type, path) first. Most hosts have a few paths: a list scan until it grows.
    const claimed: PathPlan[] = [];
    const owners: IngressPlan[] = [];
    let index: Map<string, number> | null = null;
    for (const plan of plans) {
      const { namespace, name } = plan;
      for (const pp of plan.hosts.get(hostKey) as readonly PathPlan[]) {
        const rb = this.#backend(pp.backend);
        backends.push(rb);
        if (pp.backend.kind === "service" && !services.includes(pp.backend.key)) services.push(pp.backend.key);
        let w = -1;
        if (index !== null) w = index.get(pp.claimKey) ?? -1;
        else {
          for (let i = 0; i < claimed.length; i++) {
            if ((claimed[i] as PathPlan).claimKey === pp.claimKey) {
              w = i;
              break;
            }
          }
        }
        if (w >= 0) {
          const winner = claimed[w] as PathPlan;
          const owner = owners[w] as IngressPlan;
          const where = `${pp.host ?? "(any host)"} ${pp.pathType} ${pp.path}`;
          if (owner === plan) {
            const at = `spec.rules[${winner.ruleIndex}].http.paths[${winner.pathIndex}]`;
            const message = `spec.rules[${pp.ruleIndex}].http.paths[${pp.pathIndex}]: ${where} is already declared at ${at}; the first one is used`;
            diagnostics.push({ kind: "Ingress", namespace, name, reason: "DuplicatePath", message, severity: "warning" });
          } else {
            const tie = owner.createdMs === plan.createdMs ? " (same age: alphabetical order decides)" : "";
            const message = `${where} is also declared by ${describeAge(owner.ingress)}, which wins over ${describeAge(plan.ingress)}${tie}`;
            diagnostics.push({ kind: "Ingress", namespace, name, reason: "PathConflict", message, severity: "warning" });
          }
          continue;
        }
        if (index !== null) index.set(pp.claimKey, claimed.length);
        claimed.push(pp);
        owners.push(plan);
        if (index === null && claimed.length > 8) index = new Map(claimed.map((c, i) => [c.claimKey, i]));
        if (rb.backend.status !== "ok") {
          diagnostics.push({ kind: "Ingress", namespace, name, reason: backendReason(rb), message: rb.detail, severity: "warning" });
        }
        routes.push({
          ingress: plan.ref,
          host: pp.host,
          path: pp.path,
          pathType: pp.pathType,
          declaredPathType: pp.declaredPathType,
          source: "rule",
          ruleIndex: pp.ruleIndex,
          pathIndex: pp.pathIndex,
          backend: rb.backend,
          options: plan.annotations.options,
          tls: isTls,
        });
      }
    }
    // A copy of the plans: the contributor lists are updated in place by later compiles.
    return { plans: plans.slice(), tls: isTls, backends, services, entry: buildHost(hostKey, routes, viaOf(hostKey)), diagnostics };
  }

  /** tls.ts's collectTls over the served plans with spec.tls; Secret data decoded once per object. */
  #collectTls(): TlsState {
    const diagnostics: Diagnostic[] = [];
    const diag = (kind: string, namespace: string, name: string, reason: DiagnosticReason, message: string, severity: "warning" | "error") =>
      diagnostics.push({ kind, namespace, name, reason, message, severity });
    const byHost = new Map<string, CertificateBinding>();
    const hosts = new Set<string>();
    for (const plan of this.#tlsPlans) {
      const { namespace: ns, name, key } = plan;
      for (const entry of plan.tls) {
        const secretName = entry.secretName;
        let missingReported = false;
        for (const host of entry.hosts) {
          hosts.add(host);
          if (byHost.has(host)) continue;
          let binding: CertificateBinding;
          if (secretName === null) {
            binding = Object.freeze({ host, secret: null, cert: null, key: null, version: null, ingress: key });
          } else {
            const found = this.#binding(host, ns, secretName, key);
            if (!found && !missingReported) {
              diag("Ingress", ns, name, "SecretNotFound", `TLS Secret ${ns}/${secretName} not found; the default certificate is used`, "warning");
              missingReported = true;
            } else if (found && (found.cert === null || found.key === null)) {
              diag("Ingress", ns, name, "InvalidCertificate", `TLS Secret ${ns}/${secretName} has no tls.crt or tls.key`, "error");
            }
            binding = found ?? Object.freeze({ host, secret: `${ns}/${secretName}`, cert: null, key: null, version: null, ingress: key });
          }
          byHost.set(host, binding);
        }
      }
    }
    const bindings = [...byHost.values()];
    const def = this.#config.defaultSslCertificate;
    if (def) {
      const b = this.#binding("", def.namespace, def.name, "");
      if (b) bindings.push(b);
      else diag("Secret", def.namespace, def.name, "SecretNotFound", `--default-ssl-certificate Secret ${def.namespace}/${def.name} not found`, "warning");
    }
    bindings.sort((a, b) => (a.host < b.host ? -1 : a.host > b.host ? 1 : 0));
    return { bindings: Object.freeze(bindings), hosts, diagnostics };
  }

  #binding(host: string, ns: string, name: string, ingress: string): CertificateBinding | null {
    const secret = (this.#snapshot as Snapshot).secrets.get(`${ns}/${name}`);
    if (!secret) return null;
    let data = this.#secretData.get(secret);
    if (data === undefined) this.#secretData.set(secret, (data = { cert: decode(secret, "tls.crt"), key: decode(secret, "tls.key") }));
    return Object.freeze({
      host,
      secret: `${ns}/${name}`,
      cert: data.cert,
      key: data.key,
      version: `${secret.metadata.uid ?? ""}/${secret.metadata.resourceVersion ?? ""}`,
      ingress,
    });
  }

  /** defaults.ts over the served plans with spec.defaultBackend; diagnostics go to `out`. */
  #defaultRoute(out: Diagnostic[]): Route | null {
    const diag = (kind: string, namespace: string, name: string, reason: DiagnosticReason, message: string, severity: "warning" | "error") =>
      out.push({ kind, namespace, name, reason, message, severity });
    let winner: DefaultEntry | null = null;
    for (const plan of this.#defaultPlans) {
      const spec = plan.defaultBackend;
      if (spec === null) continue;
      const { namespace: ns, name } = plan;
      if (winner) {
        const message = `spec.defaultBackend of ${describeAge(plan.ingress)} loses to ${describeAge((winner.plan as IngressPlan).ingress)}`;
        diag("Ingress", ns, name, "DefaultBackendConflict", message, "warning");
        continue;
      }
      if (!spec.ok) {
        diag("Ingress", ns, name, "InvalidBackend", `spec.defaultBackend: ${spec.message}; ignored`, "error");
        continue;
      }
      const rb = this.#backend(spec.ref);
      if (rb.backend.status !== "ok") diag("Ingress", ns, name, backendReason(rb), rb.detail, "warning");
      winner = this.#defaultEntry(plan, rb, "defaultBackend");
    }
    if (winner === null) {
      const g = this.#config.defaultBackendService;
      if (g) {
        const rb = this.#backend(serviceRef(g.namespace, g.name, g.port, "http"));
        if (rb.backend.status !== "ok") diag("Service", g.namespace, g.name, backendReason(rb), `--default-backend-service: ${rb.detail}`, "warning");
        winner = this.#defaultEntry(null, rb, "globalDefault");
      }
    }
    this.#default = winner;
    return winner?.route ?? null;
  }

  #defaultEntry(plan: IngressPlan | null, backend: ResolvedBackend, source: "defaultBackend" | "globalDefault"): DefaultEntry {
    const prev = this.#default;
    if (prev !== null && prev.plan === plan && prev.backend === backend) return prev;
    const route: Route = Object.freeze({
      ingress: plan ? plan.ref : Object.freeze({ namespace: "", name: "" }),
      host: null,
      path: "/",
      pathType: "Prefix" as const,
      declaredPathType: "Prefix" as const,
      source,
      ruleIndex: -1,
      pathIndex: -1,
      backend: backend.backend,
      options: plan ? plan.annotations.options : DEFAULT_ROUTE_OPTIONS,
      tls: false,
    });
    return { plan, backend, route };
  }

  /** Every source's diagnostics, deduplicated and sorted; the last list while nothing changed. */
  #diagnostics(extra: readonly Diagnostic[]): readonly Diagnostic[] {
    const extraKey = extra.map(diagKey).join("\u0001");
    const cache = this.#diagCache;
    if (cache !== null && cache.version === this.#diagVersion && cache.extra === extraKey) return cache.list;
    const list = new DiagnosticList();
    for (const ds of this.#planDiagnostics.values()) for (const d of ds) list.addDiagnostic(d);
    for (const d of (this.#tls as TlsState).diagnostics) list.addDiagnostic(d);
    for (const ds of this.#hostDiagnostics.values()) for (const d of ds) list.addDiagnostic(d);
    for (const d of extra) list.addDiagnostic(d);
    const sorted = list.sorted();
    this.#diagCache = { version: this.#diagVersion, extra: extraKey, list: sorted };
    return sorted;
  }
}
