// Resolved backends kept across compiles (compile.ts). backends.ts resolveRef reads only
// `services.get(key)`, `endpointSlices.get(key)` and a policy fixed at construction, so a
// cached Backend stays right while those are the same objects, or objects equal in what it
// reads of them; the Backend object itself is then kept, and with it the proxy's per-backend
// state keyed on it.
import type { EndpointSlice, Service } from "../model/schemas.ts";
import type { Snapshot } from "../store/types.ts";
import { resolveRef, type BackendPolicy, type BackendRef, type ResolvedBackend } from "./backends.ts";
import { sameSliceGroup } from "./changes.ts";
import { deepEqual } from "../store/relevance.ts";

/**
 * resolveRef reads a Service's spec only, and so does a Gateway route (gateway/rules.ts: the
 * Service's presence and its ports' appProtocol), so the compiler builds hosts and routes again
 * only on a change this finds (compile.ts).
 */
export const sameService = (a: Service | undefined, b: Service | undefined): boolean => a === b || (a !== undefined && b !== undefined && deepEqual(a.spec, b.spec));

interface Entry {
  readonly service: Service | undefined;
  readonly slices: readonly EndpointSlice[] | undefined;
  readonly resolved: ResolvedBackend;
  /** The compile that last validated it. */
  used: number;
}

export class BackendCache {
  readonly #entries = new Map<string, Entry>();
  #run = 0;
  #snapshot: Snapshot | null = null;
  #live = 0;
  constructor(private readonly policy: BackendPolicy) {}

  /** Start a compile: resolutions are validated once per compile against this snapshot. */
  begin(snapshot: Snapshot): void {
    this.#run++;
    this.#snapshot = snapshot;
  }

  end(): void {
    this.#snapshot = null;
  }

  resolve(ref: BackendRef): ResolvedBackend {
    const snapshot = this.#snapshot;
    if (snapshot === null) throw new Error("BackendCache.resolve outside a compile");
    const hit = this.#entries.get(ref.id);
    if (hit !== undefined && hit.used === this.#run) return hit.resolved;
    const service = ref.kind === "service" ? snapshot.services.get(ref.key) : undefined;
    const slices = ref.kind === "service" ? snapshot.endpointSlices.get(ref.key) : undefined;
    if (hit !== undefined && hit.service === service && hit.slices === slices) {
      hit.used = this.#run;
      return hit.resolved;
    }
    // Other objects, equal in what resolveRef reads (the Service's spec; the slices in their
    // relevant part): a relist, a Service status write or a slice's resourceVersion update keeps
    // the Backend object, and with it the host entries and routes holding it.
    if (hit !== undefined && sameService(hit.service, service) && sameSliceGroup(hit.slices, slices)) {
      this.#entries.set(ref.id, { service, slices, resolved: hit.resolved, used: this.#run });
      return hit.resolved;
    }
    const resolved = resolveRef(snapshot, ref, this.policy);
    this.#entries.set(ref.id, { service, slices, resolved, used: this.#run });
    return resolved;
  }

  /**
   * Drop entries no one uses once there are clearly too many: `inUse` is an upper bound of
   * the ids in use (every path plan), `live()` lists them when a sweep is due.
   */
  sweep(inUse: number, live: () => Iterable<string>): void {
    if (this.#entries.size <= Math.max(inUse, 2 * this.#live) + 1024) return;
    const keep = new Set(live());
    for (const id of this.#entries.keys()) if (!keep.has(id)) this.#entries.delete(id);
    this.#live = keep.size;
  }

  clear(): void {
    this.#entries.clear();
    this.#live = 0;
  }
}
