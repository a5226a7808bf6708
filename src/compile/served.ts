// Every Ingress of the compiler, planned, and the served ones kept in the orders the compile
// needs: per host key and for spec.tls / spec.defaultBackend in priority order (plan.ts
// comparePlans), and by `namespace/name` for statuses; the served and the ignored plans in
// priority order for explain. Updated one changed Ingress at a time, or rebuilt with one sort
// when many changed (bulk). Host keys whose contributors change are added to `dirty`.
import type { Diagnostic } from "../model/diagnostic.ts";
import type { ConfigMap, Ingress, Secret } from "../model/schemas.ts";
import { compareStrings, insertSorted, lowerBound, removeSorted } from "./changes.ts";
import { classify, type ClassContext } from "./class.ts";
import type { CompileConfig } from "./config.ts";
import { comparePlans, planIngress, planIsCurrent, planReadsRefs, type IngressPlan } from "./plan.ts";
import type { IngressRef } from "./types.ts";

/**
 * A canary Ingress (valid or not) takes no part in the claims, spec.tls or the default
 * backend: ingress-nginx's createServers skips an Ingress whose canary annotation is true.
 */
export const isCanary = (p: IngressPlan): boolean => p.annotations.policies.canary.kind !== "none";

export class ServedPlans {
  /** Every Ingress of the last snapshot, planned, by snapshot key. */
  #plans = new Map<string, IngressPlan>();
  /** Snapshot keys of the plans that read a basic-auth Secret (access.ts). */
  readonly #authKeys = new Set<string>();
  /** The served ones, by snapshot key. */
  #served = new Map<string, IngressPlan>();
  /** The served plans and the others, each in priority order (explain lists them in that order). */
  #inOrder: IngressPlan[] = [];
  #ignoredInOrder: IngressPlan[] = [];
  /** Served plans per host key, in priority order (canary Ingresses excepted). */
  readonly contributors = new Map<string, IngressPlan[]>();
  /**
   * Served canary Ingresses per host key, in priority order. They claim nothing and make no
   * host entry (ingress-nginx's createServers skips them): host-entry.ts attaches each to the
   * main route with its host, path and pathType.
   */
  readonly canaries = new Map<string, IngressPlan[]>();
  /** Served plans with spec.tls / spec.defaultBackend, in priority order. */
  tlsPlans: IngressPlan[] = [];
  defaultPlans: IngressPlan[] = [];
  /** Served plans with diagnostics of their own, by snapshot key. */
  readonly diagnostics = new Map<string, readonly Diagnostic[]>();
  /** Served `namespace/name` keys sorted, and the statuses list (same order; replaced, never mutated). */
  #statusKeys: readonly string[] = [];
  statuses: readonly IngressRef[] = Object.freeze([]);
  /** Bumped when `diagnostics` changes; set when `tlsPlans` changed (the caller resets it). */
  diagVersion = 0;
  tlsChanged = false;

  constructor(private readonly config: CompileConfig) {}

  /** The served plans in priority order (updated in place by later compiles). */
  get inOrder(): readonly IngressPlan[] {
    return this.#inOrder;
  }

  /** The plans of the Ingresses that are not ours, in priority order (likewise). */
  get ignoredInOrder(): readonly IngressPlan[] {
    return this.#ignoredInOrder;
  }

  /** Bulk: plan and classify every Ingress, then rebuild every list with one sort. */
  rebuild(ingresses: ReadonlyMap<string, Ingress>, secrets: ReadonlyMap<string, Secret>, ctx: ClassContext, dirty: Set<string>, configMaps?: ReadonlyMap<string, ConfigMap>): void {
    const plans = new Map<string, IngressPlan>();
    const all: [string, IngressPlan, boolean][] = [];
    this.#authKeys.clear();
    for (const [key, ing] of ingresses) {
      const old = this.#plans.get(key);
      const plan = old !== undefined && planIsCurrent(old, ing, secrets, configMaps) ? old : planIngress(ing, secrets, this.config, configMaps);
      plans.set(key, plan);
      if (planReadsRefs(plan)) this.#authKeys.add(key);
      all.push([key, plan, classify(ing, ctx, this.config).served]);
    }
    all.sort((a, b) => comparePlans(a[1], b[1]));
    const served: [string, IngressPlan][] = [];
    this.#ignoredInOrder = [];
    for (const [key, plan, isServed] of all) {
      if (isServed) served.push([key, plan]);
      else this.#ignoredInOrder.push(plan);
    }
    for (const hostKey of this.contributors.keys()) dirty.add(hostKey);
    for (const hostKey of this.canaries.keys()) dirty.add(hostKey);
    this.#plans = plans;
    this.#served = new Map(served);
    this.#inOrder = served.map((e) => e[1]);
    this.contributors.clear();
    this.canaries.clear();
    this.tlsPlans = [];
    this.defaultPlans = [];
    this.diagnostics.clear();
    for (const [key, p] of served) {
      const canary = isCanary(p);
      const byHost = canary ? this.canaries : this.contributors;
      for (const hostKey of p.hosts.keys()) {
        const list = byHost.get(hostKey);
        if (list) list.push(p);
        else byHost.set(hostKey, [p]);
        dirty.add(hostKey);
      }
      if (!canary && p.tls.length > 0) this.tlsPlans.push(p);
      if (!canary && p.defaultBackend !== null) this.defaultPlans.push(p);
      if (p.diagnostics.length > 0) this.diagnostics.set(key, p.diagnostics);
    }
    this.diagVersion++;
    this.tlsChanged = true;
    // Statuses are sorted by `namespace/name` (plan.key; a snapshot key omits an empty namespace).
    const byName = served.map(([, p]) => p).sort((a, b) => compareStrings(a.key, b.key));
    const keys = byName.map((p) => p.key);
    if (keys.length !== this.#statusKeys.length || keys.some((k, i) => k !== this.#statusKeys[i])) {
      this.#statusKeys = keys;
      // Each plan's `ref` is that Ingress's frozen `{ namespace, name }` already: no copy per Ingress.
      this.statuses = Object.freeze(byName.map((p) => p.ref));
    }
  }

  /**
   * Keys of the Ingresses whose basic-auth, CA or proxy-ssl Secret, or auth-proxy-set-headers or
   * custom-headers ConfigMap, is no longer what their plan read (to update). planIsCurrent
   * compares each in what the compiler reads of it (store/relevance.ts), so a metadata-only
   * update of a named object plans nothing again.
   */
  staleAuth(ingresses: ReadonlyMap<string, Ingress>, secrets: ReadonlyMap<string, Secret>, configMaps?: ReadonlyMap<string, ConfigMap>): string[] {
    const out: string[] = [];
    for (const key of this.#authKeys) {
      const plan = this.#plans.get(key);
      const ing = ingresses.get(key);
      if (plan === undefined || ing === undefined || !planIsCurrent(plan, ing, secrets, configMaps)) out.push(key);
    }
    return out;
  }

  /** One changed snapshot key (added, replaced or deleted). */
  update(key: string, ingresses: ReadonlyMap<string, Ingress>, secrets: ReadonlyMap<string, Secret>, ctx: ClassContext, dirty: Set<string>, configMaps?: ReadonlyMap<string, ConfigMap>): void {
    const ing = ingresses.get(key);
    const old = this.#plans.get(key);
    let plan: IngressPlan | undefined;
    if (ing !== undefined) {
      plan = old !== undefined && planIsCurrent(old, ing, secrets, configMaps) ? old : planIngress(ing, secrets, this.config, configMaps);
      this.#plans.set(key, plan);
    } else this.#plans.delete(key);
    if (plan !== undefined && planReadsRefs(plan)) this.#authKeys.add(key);
    else this.#authKeys.delete(key);
    const was = this.#served.get(key);
    const now = plan !== undefined && classify(plan.ingress, ctx, this.config).served ? plan : undefined;
    // `was`, when set, is `old`: the served plan of a key is its last plan.
    if (plan !== old || was !== now) {
      if (old !== undefined) removeSorted(was !== undefined ? this.#inOrder : this.#ignoredInOrder, old, comparePlans);
      if (plan !== undefined) insertSorted(now !== undefined ? this.#inOrder : this.#ignoredInOrder, plan, comparePlans);
    }
    if (was === now) return;
    if (was !== undefined) {
      this.#served.delete(key);
      const canary = isCanary(was);
      const byHost = canary ? this.canaries : this.contributors;
      for (const hostKey of was.hosts.keys()) {
        const list = byHost.get(hostKey) as IngressPlan[];
        removeSorted(list, was, comparePlans);
        if (list.length === 0) byHost.delete(hostKey);
        dirty.add(hostKey);
      }
      if (!canary && was.tls.length > 0 && removeSorted(this.tlsPlans, was, comparePlans)) this.tlsChanged = true;
      if (!canary && was.defaultBackend !== null) removeSorted(this.defaultPlans, was, comparePlans);
      if (this.diagnostics.delete(key)) this.diagVersion++;
    }
    if (now !== undefined) {
      this.#served.set(key, now);
      const canary = isCanary(now);
      const byHost = canary ? this.canaries : this.contributors;
      for (const hostKey of now.hosts.keys()) {
        const list = byHost.get(hostKey);
        if (list) insertSorted(list, now, comparePlans);
        else byHost.set(hostKey, [now]);
        dirty.add(hostKey);
      }
      if (!canary && now.tls.length > 0) {
        insertSorted(this.tlsPlans, now, comparePlans);
        this.tlsChanged = true;
      }
      if (!canary && now.defaultBackend !== null) insertSorted(this.defaultPlans, now, comparePlans);
      if (now.diagnostics.length > 0) {
        this.diagnostics.set(key, now.diagnostics);
        this.diagVersion++;
      }
    }
    if (was === undefined && now !== undefined) this.#statusChanged(now.key, now);
    else if (was !== undefined && now === undefined) this.#statusChanged(was.key, undefined);
  }

  /** A key joined or left the served set: new statuses (the last list belongs to a result). */
  #statusChanged(key: string, now: IngressPlan | undefined): void {
    const keys = [...this.#statusKeys];
    const statuses = [...this.statuses];
    const i = lowerBound(keys, key, compareStrings);
    if (now !== undefined) {
      keys.splice(i, 0, key);
      statuses.splice(i, 0, now.ref);
    } else {
      keys.splice(i, 1);
      statuses.splice(i, 1);
    }
    this.#statusKeys = keys;
    this.statuses = Object.freeze(statuses);
  }
}
