// The object cache every source feeds. Pure: no clock, no timers, no I/O.
// apply/replace say whether routing-relevant state changed; runtime/controller.ts then
// triggers the coalescer.
import { KINDS, objectKey, type Kind, type KindObjects, type KubeObject } from "../model/kinds.ts";
import { authSecretKey, caSecretKey, configMapKeys, gatewayCaConfigMapKeys, proxySslSecretKey } from "../model/secret-refs.ts";
import type { Gateway } from "../model/gateway.ts";
import type { EndpointSlice, Ingress, Secret } from "../model/schemas.ts";
import type { IngressNginxPolicy } from "../model/portico-policy.ts";
import { CowMap } from "./cow-map.ts";
import { SERVICE_NAME_LABEL, isKeptSecret, isTlsSecret, relevantEqual } from "./relevance.ts";
import type { Snapshot, SourceSink, StoreEvent } from "./types.ts";

export interface StoreOptions {
  /** Called after an apply/replace that changed routing-relevant state. */
  onChange?: (kind: Kind) => void;
}

/** `namespace/<kubernetes.io/service-name>` of a slice, or null when it has no such label. */
export function sliceServiceKey(slice: EndpointSlice): string | null {
  const svc = slice.metadata.labels?.[SERVICE_NAME_LABEL];
  if (!svc) return null;
  return objectKey({ name: svc, namespace: slice.metadata.namespace });
}

/**
 * An IngressNginxPolicy's reference entries are kept beside the Ingresses' under this prefix
 * (no Ingress key has a `:`): its annotations name basic-auth and CA Secrets as an Ingress's do.
 */
const POLICY_REF = "IngressNginxPolicy:";
/** A Gateway's CA ConfigMap entries (setGatewayCaRef), kept under this prefix likewise. */
const GATEWAY_REF = "Gateway:";
const policyAnnotated = (p: IngressNginxPolicy): Pick<Ingress, "metadata"> => ({ metadata: { ...p.metadata, annotations: p.spec.annotations ?? {} } });

const byName = (a: EndpointSlice, b: EndpointSlice): number =>
  a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0;

export class Store implements SourceSink {
  private readonly objects: { [K in Kind]: CowMap<KindObjects[K]> } = {
    Ingress: new CowMap(),
    IngressClass: new CowMap(),
    Service: new CowMap(),
    EndpointSlice: new CowMap(),
    Secret: new CowMap(),
    Namespace: new CowMap(),
    GatewayClass: new CowMap(),
    Gateway: new CowMap(),
    HTTPRoute: new CowMap(),
    GRPCRoute: new CowMap(),
    ReferenceGrant: new CowMap(),
    IngressNginxPolicy: new CowMap(),
    ConfigMap: new CowMap(),
  };
  /** Slices grouped by service; each group array is replaced, never mutated (views stay valid). */
  private readonly slicesByService = new CowMap<readonly EndpointSlice[]>();
  /**
   * Secret key → how many Ingresses name it in auth-secret, and each Ingress's entry. A Secret
   * matters to routing when it is TLS or named here; any other Secret is kept (an Ingress may
   * name it later) without waking the compiler.
   */
  private readonly authRefs = new Map<string, number>();
  private readonly authRefOf = new Map<string, readonly string[]>();
  /**
   * ConfigMap key → how many Ingresses name it in auth-proxy-set-headers or custom-headers, and each Ingress's
   * entry: only such a ConfigMap wakes the compiler (the sources hand in no others, but a
   * --manifests file may hold any).
   */
  private readonly configMapRefs = new Map<string, number>();
  private readonly configMapRefOf = new Map<string, readonly string[]>();
  /** ConfigMaps the settings name (add-headers, proxy-set-headers: compile/global-headers.ts). */
  private settingsConfigMaps: ReadonlySet<string> = new Set();
  private readonly syncedKinds = new Set<Kind>();

  constructor(private readonly options: StoreOptions = {}) {}

  apply(event: StoreEvent): boolean {
    const changed = event.type === "DELETED" ? this.remove(event.kind, event.object) : this.upsert(event.kind, event.object);
    if (changed) this.changed(event.kind);
    return changed;
  }

  /** A full relist of one kind: objects absent from `objects` are gone. */
  replace<K extends Kind>(kind: K, objects: readonly KindObjects[K][]): boolean {
    const map = this.objects[kind] as CowMap<KindObjects[K]>;
    const next = new Map<string, KindObjects[K]>();
    for (const o of objects) {
      if (kind === "Secret" && !isKeptSecret(o as Secret)) continue;
      next.set(objectKey(o.metadata), o);
    }
    if (kind === "Ingress" || kind === "IngressNginxPolicy") {
      // A relist of one kind replaces that kind's references only.
      const policy = kind === "IngressNginxPolicy";
      for (const key of new Set([...this.authRefOf.keys(), ...this.configMapRefOf.keys()])) {
        if (key.startsWith(GATEWAY_REF)) continue;
        if (key.startsWith(POLICY_REF) === policy) this.setAuthRef(key, undefined);
      }
      for (const [key, o] of next) {
        if (policy) this.setAuthRef(`${POLICY_REF}${key}`, policyAnnotated(o as IngressNginxPolicy));
        else this.setAuthRef(key, o as Ingress);
      }
    }
    if (kind === "Gateway") {
      for (const key of [...this.configMapRefOf.keys()]) if (key.startsWith(GATEWAY_REF)) this.recount(this.configMapRefs, this.configMapRefOf, key, []);
      for (const [key, o] of next) this.setGatewayCaRef(key, o as Gateway);
    }
    const filtered = kind === "Secret" || kind === "ConfigMap";
    let changed = filtered ? this.refsChanged(kind, map as CowMap<KindObjects[K]>, next) : next.size !== map.size;
    if (!changed && !filtered) {
      for (const [key, o] of next) {
        const old = map.get(key);
        if (old === undefined || !relevantEqual(kind, old, o)) {
          changed = true;
          break;
        }
      }
    }
    map.reset(next);
    if (kind === "EndpointSlice") this.reindexSlices(next as Map<string, EndpointSlice>);
    if (changed) this.changed(kind);
    return changed;
  }

  synced(kind: Kind): void {
    this.syncedKinds.add(kind);
  }

  isSynced(kind: Kind): boolean {
    return this.syncedKinds.has(kind);
  }

  allSynced(kinds: readonly Kind[] = KINDS): boolean {
    return kinds.every((k) => this.syncedKinds.has(k));
  }

  get<K extends Kind>(kind: K, key: string): KindObjects[K] | undefined {
    return (this.objects[kind] as CowMap<KindObjects[K]>).get(key);
  }

  /** The objects of one kind as they are now (O(1); a later write copies first, so it stays as it was). */
  view<K extends Kind>(kind: K): ReadonlyMap<string, KindObjects[K]> {
    return (this.objects[kind] as CowMap<KindObjects[K]>).share();
  }

  count(kind: Kind): number {
    return this.objects[kind].size;
  }

  /** O(1): later applies copy a map before writing, so this view never changes. */
  snapshot(): Snapshot {
    return Object.freeze({
      ingresses: this.objects.Ingress.share(),
      ingressClasses: this.objects.IngressClass.share(),
      services: this.objects.Service.share(),
      endpointSlices: this.slicesByService.share(),
      secrets: this.objects.Secret.share(),
      namespaces: this.objects.Namespace.share(),
      gatewayClasses: this.objects.GatewayClass.share(),
      gateways: this.objects.Gateway.share(),
      httpRoutes: this.objects.HTTPRoute.share(),
      grpcRoutes: this.objects.GRPCRoute.share(),
      referenceGrants: this.objects.ReferenceGrant.share(),
      ingressNginxPolicies: this.objects.IngressNginxPolicy.share(),
      configMaps: this.objects.ConfigMap.share(),
    });
  }

  private changed(kind: Kind): void {
    this.options.onChange?.(kind);
  }

  private upsert<K extends Kind>(kind: K, object: KindObjects[K]): boolean {
    if (kind === "Secret" && !isKeptSecret(object as Secret)) {
      // A Secret whose type Portico never reads counts as deleted.
      return this.remove(kind, object);
    }
    const map = this.objects[kind] as CowMap<KindObjects[K]>;
    const key = objectKey(object.metadata);
    const old = map.get(key);
    // Always keep the newest version (status writers read it), even when routing ignores the change.
    map.set(key, object);
    if (kind === "EndpointSlice") this.indexSlice(old as EndpointSlice | undefined, object as EndpointSlice);
    if (kind === "Ingress") this.setAuthRef(key, object as Ingress);
    if (kind === "IngressNginxPolicy") this.setAuthRef(`${POLICY_REF}${key}`, policyAnnotated(object as IngressNginxPolicy));
    if (kind === "Gateway") this.setGatewayCaRef(key, object as Gateway);
    if (kind === "Secret" && !this.secretMatters(key, old as Secret | undefined) && !this.secretMatters(key, object as Secret)) return false;
    if (kind === "ConfigMap" && !this.configMapNamed(key)) return false;
    return old === undefined || !relevantEqual(kind, old, object);
  }

  private remove(kind: Kind, object: KubeObject): boolean {
    const map = this.objects[kind];
    const key = objectKey(object.metadata);
    const old = map.get(key);
    if (old === undefined) return false;
    map.delete(key);
    if (kind === "EndpointSlice") this.indexSlice(old as EndpointSlice, undefined);
    if (kind === "Ingress") this.setAuthRef(key, undefined);
    if (kind === "IngressNginxPolicy") this.setAuthRef(`${POLICY_REF}${key}`, undefined);
    if (kind === "Gateway") this.setGatewayCaRef(key, undefined);
    if (kind === "Secret") return this.secretMatters(key, old as Secret);
    if (kind === "ConfigMap") return this.configMapNamed(key);
    return true;
  }

  /**
   * A TLS Secret, or one an Ingress or an IngressNginxPolicy names in auth-secret or
   * auth-tls-secret (TLS compile and compile/access.ts read them).
   */
  private secretMatters(key: string, s: Secret | undefined): boolean {
    return s !== undefined && (isTlsSecret(s) || this.authRefs.has(key));
  }

  /** Does this Secret or ConfigMap matter to routing (secretMatters; a ConfigMap an Ingress names)? */
  private matters(kind: "Secret" | "ConfigMap", key: string, o: KubeObject | undefined): boolean {
    return kind === "Secret" ? this.secretMatters(key, o as Secret | undefined) : o !== undefined && this.configMapNamed(key);
  }

  /** Did a relist of Secrets or ConfigMaps change one that matters (added, removed or changed)? */
  private refsChanged<K extends Kind>(kind: K, map: CowMap<KindObjects[K]>, next: ReadonlyMap<string, KindObjects[K]>): boolean {
    const k = kind as "Secret" | "ConfigMap";
    for (const [key, o] of next) {
      const old = map.get(key);
      if ((this.matters(k, key, o) || this.matters(k, key, old)) && (old === undefined || !relevantEqual(kind, old, o))) return true;
    }
    for (const [key, old] of map.entries()) if (!next.has(key) && this.matters(k, key, old)) return true;
    return false;
  }

  /** Record which Secrets `ingress` (or a policy's annotations; undefined: deleted) names in auth-secret and auth-tls-secret. */
  private setAuthRef(key: string, ingress: Pick<Ingress, "metadata"> | undefined): void {
    const after: string[] = [];
    if (ingress !== undefined) {
      const ns = ingress.metadata.namespace ?? "";
      for (const k of [authSecretKey(ingress.metadata.annotations, ns), caSecretKey(ingress.metadata.annotations, ns), proxySslSecretKey(ingress.metadata.annotations, ns)]) if (k !== null && !after.includes(k)) after.push(k);
    }
    this.setConfigMapRef(key, ingress);
    this.recount(this.authRefs, this.authRefOf, key, after);
  }

  /**
   * Moves `key`'s references in `refs` (a count per named object) from what `refOf` holds for
   * it to `after`; nothing when they are the same list.
   */
  private recount(refs: Map<string, number>, refOf: Map<string, readonly string[]>, key: string, after: readonly string[]): void {
    const before = refOf.get(key) ?? [];
    if (before.length === after.length && before.every((k, i) => after[i] === k)) return;
    for (const b of before) {
      const n = (refs.get(b) ?? 1) - 1;
      if (n === 0) refs.delete(b);
      else refs.set(b, n);
    }
    refOf.delete(key);
    for (const a of after) refs.set(a, (refs.get(a) ?? 0) + 1);
    if (after.length > 0) refOf.set(key, after);
  }

  /** The ConfigMaps the settings name now (`namespace/name`): a change to one wakes the compiler. */
  setSettingsConfigMaps(keys: readonly string[]): void {
    this.settingsConfigMaps = new Set(keys);
  }

  private configMapNamed(key: string): boolean {
    return this.configMapRefs.has(key) || this.settingsConfigMaps.has(key);
  }

  /** Record which ConfigMaps `ingress` (undefined: deleted) names in auth-proxy-set-headers and custom-headers. */
  private setConfigMapRef(key: string, ingress: Pick<Ingress, "metadata"> | undefined): void {
    const after = ingress === undefined ? [] : configMapKeys(ingress.metadata.annotations, ingress.metadata.namespace ?? "");
    this.recount(this.configMapRefs, this.configMapRefOf, key, after);
  }

  /**
   * Record which ConfigMaps a Gateway (undefined: deleted) names as client certificate CAs in
   * spec.tls.frontend (compile/gateway/attach.ts resolves them): a change to one wakes the
   * compiler, as for those Ingresses name.
   */
  private setGatewayCaRef(key: string, gateway: Gateway | undefined): void {
    const after = gateway === undefined ? [] : gatewayCaConfigMapKeys(gateway.spec, gateway.metadata.namespace ?? "default");
    this.recount(this.configMapRefs, this.configMapRefOf, `${GATEWAY_REF}${key}`, after);
  }

  private indexSlice(old: EndpointSlice | undefined, next: EndpointSlice | undefined): void {
    const oldSvc = old ? sliceServiceKey(old) : null;
    const nextSvc = next ? sliceServiceKey(next) : null;
    const name = (old ?? next)!.metadata.name;
    if (oldSvc !== null) {
      const rest = (this.slicesByService.get(oldSvc) ?? []).filter((s) => s.metadata.name !== name);
      if (rest.length === 0) this.slicesByService.delete(oldSvc);
      else this.slicesByService.set(oldSvc, rest);
    }
    if (next !== undefined && nextSvc !== null) {
      const group = (this.slicesByService.get(nextSvc) ?? []).filter((s) => s.metadata.name !== name);
      group.push(next);
      group.sort(byName);
      this.slicesByService.set(nextSvc, group);
    }
  }

  private reindexSlices(slices: ReadonlyMap<string, EndpointSlice>): void {
    const groups = new Map<string, EndpointSlice[]>();
    for (const s of slices.values()) {
      const svc = sliceServiceKey(s);
      if (svc === null) continue;
      let g = groups.get(svc);
      if (!g) groups.set(svc, (g = []));
      g.push(s);
    }
    for (const g of groups.values()) g.sort(byName);
    this.slicesByService.reset(groups);
  }
}
