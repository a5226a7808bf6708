// EndpointSlice → Upstream list (discovery.k8s.io/v1).
// - The slice port is chosen by the Service port's name (unnamed ports: undefined, null and
//   "" are the same name), and its number is the pod port.
// - Conditions (EndpointConditions docs): ready unset → ready; serving unset → same as
//   ready; terminating unset → false.
// - `addresses`: "These are all assumed to be fungible and clients may choose to only use
//   the first element", so one Upstream per endpoint, from addresses[0].
// - The same address may sit in two slices while they are being rebalanced: dedupe it,
//   preferring the copy that is ready.
import type { EndpointSlice } from "../model/schemas.ts";
import type { Upstream } from "../table/types.ts";

const portName = (n: string | null | undefined): string => n ?? "";

export function authority(address: string, port: number): string {
  return address.includes(":") ? `[${address}]:${port}` : `${address}:${port}`;
}

export function upstreamsFromSlices(slices: readonly EndpointSlice[], servicePortName: string | null | undefined): Upstream[] {
  const wanted = portName(servicePortName);
  const byAuthority = new Map<string, Upstream>();
  const ordered = slices.length < 2 ? slices : [...slices].sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0));
  for (const slice of ordered) {
    const sp = (slice.ports ?? []).find((p) => portName(p.name) === wanted);
    if (!sp || typeof sp.port !== "number") continue;
    for (const ep of slice.endpoints ?? []) {
      const address = ep.addresses[0];
      if (!address) continue;
      const ready = ep.conditions?.ready ?? true;
      const serving = ep.conditions?.serving ?? ready;
      const terminating = ep.conditions?.terminating ?? false;
      const auth = authority(address, sp.port);
      const prev = byAuthority.get(auth);
      if (prev && (prev.ready || !ready)) continue;
      const target = ep.targetRef?.name ?? undefined;
      byAuthority.set(auth, { address, port: sp.port, authority: auth, ready, serving, terminating, target });
    }
  }
  return [...byAuthority.values()].sort((a, b) => (a.authority < b.authority ? -1 : a.authority > b.authority ? 1 : 0));
}

/** Send to ready endpoints; with none ready, fall back to serving-and-terminating ones. */
export function usableEndpoints(all: readonly Upstream[]): Upstream[] {
  const ready = all.filter((u) => u.ready);
  return ready.length > 0 ? ready : all.filter((u) => u.serving && u.terminating);
}
