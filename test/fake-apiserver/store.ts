// The fake API server's object store: one global resourceVersion counter (like etcd's
// revision), objects per resource keyed by `namespace/name`, and a bounded history of
// changes so watches can resume from a resourceVersion or get 410 Gone when it is too old.

export type Obj = Record<string, unknown> & {
  metadata: Record<string, unknown> & { name: string; namespace?: string; resourceVersion?: string };
};

export interface ResourceInfo {
  readonly group: string;
  readonly version: string;
  readonly resource: string;
  readonly kind: string;
  readonly namespaced: boolean;
  /** Kinds with a status subresource: a main-resource write keeps the stored status. */
  readonly hasStatus: boolean;
}

export const RESOURCES: readonly ResourceInfo[] = [
  { group: "networking.k8s.io", version: "v1", resource: "ingresses", kind: "Ingress", namespaced: true, hasStatus: true },
  { group: "networking.k8s.io", version: "v1", resource: "ingressclasses", kind: "IngressClass", namespaced: false, hasStatus: false },
  { group: "", version: "v1", resource: "services", kind: "Service", namespaced: true, hasStatus: true },
  { group: "discovery.k8s.io", version: "v1", resource: "endpointslices", kind: "EndpointSlice", namespaced: true, hasStatus: false },
  { group: "", version: "v1", resource: "secrets", kind: "Secret", namespaced: true, hasStatus: false },
  { group: "", version: "v1", resource: "configmaps", kind: "ConfigMap", namespaced: true, hasStatus: false },
  { group: "coordination.k8s.io", version: "v1", resource: "leases", kind: "Lease", namespaced: true, hasStatus: false },
  { group: "events.k8s.io", version: "v1", resource: "events", kind: "Event", namespaced: true, hasStatus: false },
  { group: "", version: "v1", resource: "namespaces", kind: "Namespace", namespaced: false, hasStatus: false },
  // Gateway API CRDs (standard channel); faults.absentGroups can uninstall them.
  { group: "gateway.networking.k8s.io", version: "v1", resource: "gatewayclasses", kind: "GatewayClass", namespaced: false, hasStatus: true },
  { group: "gateway.networking.k8s.io", version: "v1", resource: "gateways", kind: "Gateway", namespaced: true, hasStatus: true },
  { group: "gateway.networking.k8s.io", version: "v1", resource: "httproutes", kind: "HTTPRoute", namespaced: true, hasStatus: true },
  { group: "gateway.networking.k8s.io", version: "v1", resource: "grpcroutes", kind: "GRPCRoute", namespaced: true, hasStatus: true },
  { group: "gateway.networking.k8s.io", version: "v1beta1", resource: "referencegrants", kind: "ReferenceGrant", namespaced: true, hasStatus: false },
  // Portico's extension CRD (k8s/crd-ingressnginxpolicy.yaml); faults.absentGroups can uninstall it.
  { group: "portico.dev", version: "v1alpha1", resource: "ingressnginxpolicies", kind: "IngressNginxPolicy", namespaced: true, hasStatus: false },
];

export function resourceByKind(kind: string): ResourceInfo {
  const r = RESOURCES.find((x) => x.kind === kind);
  if (!r) throw new Error(`fake apiserver: unknown kind ${kind}`);
  return r;
}

export function resourceByPath(group: string, version: string, resource: string): ResourceInfo | undefined {
  return RESOURCES.find((x) => x.group === group && x.version === version && x.resource === resource);
}

export interface Change {
  readonly rv: number;
  readonly type: "ADDED" | "MODIFIED" | "DELETED";
  readonly res: ResourceInfo;
  readonly object: Obj;
  /** The object before a MODIFIED, to turn selector transitions into ADDED/DELETED. */
  readonly previous: Obj | null;
}

export class StoreError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

export function keyOf(o: { metadata: { name: string; namespace?: string } }): string {
  return o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata.name;
}

const clone = <T>(x: T): T => structuredClone(x);

export class ObjectStore {
  rv = 1;
  /** Changes with rv > compactedRv are in `history`; older versions answer 410 Gone. */
  compactedRv = 1;
  readonly history: Change[] = [];
  private readonly data = new Map<string, Map<string, Obj>>();
  /** Keys of each bucket in list order, rebuilt after a create or delete (updates keep keys). */
  private readonly sorted = new Map<string, string[]>();
  /**
   * A stored object is never changed in place (every write stores a new object), so its list
   * serialisation (without kind/apiVersion) is computed once and kept until it is replaced.
   */
  private readonly listJson = new WeakMap<Obj, string>();
  private uidCounter = 0;
  readonly listeners = new Set<(c: Change) => void>();

  constructor(private readonly historyLimit = 1000) {}

  private id(res: ResourceInfo): string {
    return `${res.group}/${res.resource}`;
  }

  private bucket(res: ResourceInfo): Map<string, Obj> {
    const id = this.id(res);
    let m = this.data.get(id);
    if (!m) this.data.set(id, (m = new Map()));
    return m;
  }

  private keys(res: ResourceInfo): string[] {
    const id = this.id(res);
    let k = this.sorted.get(id);
    if (!k) this.sorted.set(id, (k = [...this.bucket(res).keys()].sort()));
    return k;
  }

  list(res: ResourceInfo): Obj[] {
    const b = this.bucket(res);
    return this.keys(res).map((k) => clone(b.get(k)!));
  }

  /**
   * One list page without copying: the JSON of up to `limit` (0 = all) objects that match,
   * in key order, after the key `after`; `last` is the last key served when more matching
   * objects follow (the continue point), else null.
   */
  page(res: ResourceInfo, match: (o: Obj) => boolean, after: string | null, limit: number): { items: string[]; last: string | null } {
    const keys = this.keys(res);
    const b = this.bucket(res);
    let i = 0;
    if (after !== null) {
      // First key > after (binary search: pages cost O(page + log n), not O(n)).
      let hi = keys.length;
      while (i < hi) {
        const mid = (i + hi) >>> 1;
        if (keys[mid]! <= after) i = mid + 1;
        else hi = mid;
      }
    }
    const items: string[] = [];
    let last: string | null = null;
    for (; i < keys.length; i++) {
      const o = b.get(keys[i]!)!;
      if (!match(o)) continue;
      if (limit > 0 && items.length === limit) return { items, last };
      let j = this.listJson.get(o);
      if (j === undefined) {
        // List items carry no kind/apiVersion, as from kube-apiserver.
        j = JSON.stringify({ ...o, kind: undefined, apiVersion: undefined });
        this.listJson.set(o, j);
      }
      items.push(j);
      last = keys[i]!;
    }
    return { items, last: null };
  }

  /** The stored objects in key order, read-only (watch replay serialises them as they are). */
  *entries(res: ResourceInfo): Generator<Obj> {
    const b = this.bucket(res);
    for (const k of this.keys(res)) yield b.get(k)!;
  }

  get(res: ResourceInfo, key: string): Obj | undefined {
    const o = this.bucket(res).get(key);
    return o ? clone(o) : undefined;
  }

  private record(type: Change["type"], res: ResourceInfo, object: Obj, previous: Obj | null): void {
    // Stored objects are never changed in place, so history shares them (no copy per change).
    const c: Change = { rv: this.rv, type, res, object, previous };
    this.history.push(c);
    while (this.history.length > this.historyLimit) this.compactedRv = this.history.shift()!.rv;
    for (const l of this.listeners) l(c);
  }

  /** Forget all history: every resourceVersion older than now answers 410 Gone. */
  compact(): void {
    this.history.length = 0;
    this.compactedRv = this.rv;
  }

  create(res: ResourceInfo, input: Obj): Obj {
    const o = clone(input);
    const m = o.metadata;
    if (!m.name && typeof m.generateName === "string") m.name = `${m.generateName}${(++this.uidCounter).toString(36)}${Date.now().toString(36)}`;
    if (!m.name) throw new StoreError(422, "Invalid", "metadata.name: Required value");
    if (res.namespaced && !m.namespace) m.namespace = "default";
    if (!res.namespaced) delete m.namespace;
    const b = this.bucket(res);
    if (b.has(keyOf(o))) throw new StoreError(409, "AlreadyExists", `${res.resource} "${m.name}" already exists`);
    o.apiVersion = res.group ? `${res.group}/${res.version}` : res.version;
    o.kind = res.kind;
    m.uid = `uid-${++this.uidCounter}`;
    m.creationTimestamp ??= new Date().toISOString().replace(/\.\d+Z$/, "Z");
    m.generation = 1;
    m.resourceVersion = String(++this.rv);
    b.set(keyOf(o), o);
    this.sorted.delete(this.id(res));
    this.record("ADDED", res, o, null);
    return clone(o);
  }

  /** Replace an object. A set metadata.resourceVersion must match (optimistic concurrency). */
  update(res: ResourceInfo, input: Obj, opts: { statusOnly?: boolean } = {}): Obj {
    const b = this.bucket(res);
    const key = keyOf({ metadata: { ...input.metadata, namespace: res.namespaced ? (input.metadata.namespace ?? "default") : undefined } });
    const cur = b.get(key);
    if (!cur) throw new StoreError(404, "NotFound", `${res.resource} "${input.metadata.name}" not found`);
    const want = input.metadata.resourceVersion;
    if (want !== undefined && want !== "" && want !== cur.metadata.resourceVersion) {
      throw new StoreError(409, "Conflict", `Operation cannot be fulfilled on ${res.resource} "${cur.metadata.name}": the object has been modified; please apply your changes to the latest version and try again`);
    }
    let next: Obj;
    if (opts.statusOnly) {
      next = { ...clone(cur), status: clone(input.status) };
    } else {
      next = clone(input);
      // Identity fields are owned by the server.
      for (const f of ["uid", "creationTimestamp", "namespace", "name"] as const) (next.metadata as Record<string, unknown>)[f] = cur.metadata[f];
      if (res.hasStatus) next.status = clone(cur.status);
      const specChanged = JSON.stringify(next.spec) !== JSON.stringify(cur.spec);
      next.metadata.generation = (cur.metadata.generation as number) + (specChanged ? 1 : 0);
    }
    next.apiVersion = cur.apiVersion;
    next.kind = cur.kind;
    if (JSON.stringify({ ...next, metadata: { ...next.metadata, resourceVersion: "" } }) === JSON.stringify({ ...cur, metadata: { ...cur.metadata, resourceVersion: "" } })) {
      return clone(cur); // a no-op write does not bump resourceVersion (kube-apiserver skips it too)
    }
    next.metadata.resourceVersion = String(++this.rv);
    b.set(key, next);
    this.record("MODIFIED", res, next, cur);
    return clone(next);
  }

  delete(res: ResourceInfo, key: string): Obj {
    const b = this.bucket(res);
    const cur = b.get(key);
    if (!cur) throw new StoreError(404, "NotFound", `${res.resource} "${key}" not found`);
    b.delete(key);
    this.sorted.delete(this.id(res));
    // The DELETED event carries the final state with a new resourceVersion, as etcd3 does.
    const gone = { ...cur, metadata: { ...cur.metadata, resourceVersion: String(++this.rv) } };
    this.record("DELETED", res, gone, null);
    return clone(gone);
  }
}

/** RFC 7386 JSON merge patch. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== "object" || Array.isArray(patch)) return patch;
  const out: Record<string, unknown> =
    target && typeof target === "object" && !Array.isArray(target) ? { ...(target as Record<string, unknown>) } : {};
  for (const [k, v] of Object.entries(patch as Record<string, unknown>)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

// ---- selectors (the subset kube-apiserver accepts that Portico may send) ----

type Term = { key: string; op: "=" | "!=" | "exists" | "!exists"; value: string };

function parseTerms(sel: string | null): Term[] {
  if (!sel) return [];
  return sel.split(",").filter(Boolean).map((t): Term => {
    const ne = t.indexOf("!=");
    if (ne >= 0) return { key: t.slice(0, ne).trim(), op: "!=", value: t.slice(ne + 2).trim() };
    const eq = t.indexOf("=");
    if (eq >= 0) return { key: t.slice(0, eq).trim(), op: "=", value: t.slice(eq + 1).replace(/^=/, "").trim() };
    if (t.startsWith("!")) return { key: t.slice(1).trim(), op: "!exists", value: "" };
    return { key: t.trim(), op: "exists", value: "" };
  });
}

function fieldValue(o: Obj, key: string): string | undefined {
  if (key === "metadata.name") return o.metadata.name;
  if (key === "metadata.namespace") return o.metadata.namespace ?? "";
  if (key === "type") return typeof o.type === "string" ? o.type : "";
  throw new StoreError(400, "BadRequest", `field label not supported: ${key}`);
}

export interface Selector {
  matches(o: Obj): boolean;
}

export function makeSelector(fieldSel: string | null, labelSel: string | null): Selector {
  const fields = parseTerms(fieldSel);
  const labels = parseTerms(labelSel);
  const probe = { metadata: { name: "" } } as Obj;
  for (const f of fields) fieldValue(probe, f.key); // reject unsupported field labels up front (400)
  return {
    matches(o) {
      for (const f of fields) {
        const v = fieldValue(o, f.key);
        if (f.op === "=" ? v !== f.value : v === f.value) return false;
      }
      const l = (o.metadata.labels ?? {}) as Record<string, string>;
      for (const t of labels) {
        const has = Object.hasOwn(l, t.key);
        if (t.op === "exists" && !has) return false;
        if (t.op === "!exists" && has) return false;
        if (t.op === "=" && l[t.key] !== t.value) return false;
        if (t.op === "!=" && l[t.key] === t.value) return false;
      }
      return true;
    },
  };
}
