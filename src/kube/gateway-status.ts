// Gateway API status, written by the leader (docs/design.md "Gateway API"): GatewayClass
// Accepted and supportedFeatures; Gateway Accepted and Programmed, one entry per listener (supportedKinds,
// attachedRoutes, Accepted/Programmed/ResolvedRefs/Conflicted) and the published addresses;
// each HTTPRoute's and GRPCRoute's parents we handle (Accepted, ResolvedRefs), other controllers' entries kept.
// Every condition carries observedGeneration, a message and lastTransitionTime, which moves only
// when the condition's status changes (metav1.Condition). Written only when it differs, by merge
// PATCH on the status subresource (RFC 7386: lists are replaced whole), like kube/status.ts.
import type { Condition } from "../compile/gateway/attach.ts";
import type { GatewayCompileResult, RouteStatus } from "../compile/types.ts";
import type { Config } from "../config/types.ts";
import type { Logger } from "../log/logger.ts";
import type { ParentReference } from "../model/gateway.ts";
import { GATEWAY_GROUP } from "../model/kinds.ts";
import { deepEqual } from "../store/relevance.ts";
import type { Snapshot } from "../store/types.ts";
import { apiError, type KubeClient } from "./client.ts";
import { assertDeclared } from "./permissions.ts";
import type { LoadBalancerIngress } from "./status.ts";
import { SUPPORTED_FEATURES } from "../compile/gateway/features.ts";

/**
 * supportedFeatures as written. Only with --gateway-ports (docs/design.md "Gateways with their
 * own address"): GatewayPort8080 (a listener on port 8080 reached on that port) and
 * HTTPRouteParentRefPort (its HTTPRouteListenerPortMatching needs each listener port told
 * apart). On the shared ports a Gateway's address answers on 80 and 443 alone.
 */
const OWN_PORT_FEATURES = ["GatewayPort8080", "HTTPRouteParentRefPort"];
function featureStatus(ownPorts: boolean): { name: string }[] {
  return (ownPorts ? [...SUPPORTED_FEATURES, ...OWN_PORT_FEATURES].sort() : SUPPORTED_FEATURES).map((name) => ({ name }));
}

export interface GatewayStatusOptions {
  client: KubeClient;
  config: Pick<Config, "gatewayControllerName"> & Partial<Pick<Config, "gatewayPorts">>;
  log: Logger;
  isLeader(): boolean;
  /** The addresses Portico publishes (--publish-status-address, --publish-service). */
  addresses(): Promise<LoadBalancerIngress[]>;
  /**
   * With --gateway-ports, a Gateway's own addresses (its Service's: kube/gateway-services.ts),
   * [] while it has none yet; null: the Gateway publishes `addresses()`.
   */
  gatewayAddresses?(gatewayKey: string): LoadBalancerIngress[] | null;
  /** RFC 3339 time for lastTransitionTime (tests inject one). */
  now?(): string;
}

export interface GatewayStatusWriter {
  /**
   * Serialised and coalesced: while a run is writing, only the latest result waits (each
   * compile's result supersedes the previous one, and at 10,000 HTTPRoutes a first run takes
   * many seconds of PATCHes). Never throws. Resolves with the number of objects patched by the
   * run that covered this call.
   */
  sync(result: GatewayCompileResult, snapshot: Pick<Snapshot, "gatewayClasses" | "gateways" | "httpRoutes" | "grpcRoutes">): Promise<number>;
}

interface KubeCondition {
  type: string;
  status: string;
  reason: string;
  message: string;
  observedGeneration: number;
  lastTransitionTime: string;
}

type Status = Record<string, unknown>;

const rfc3339 = () => new Date().toISOString().replace(/\.\d+Z$/, "Z");

function currentConditions(status: unknown): KubeCondition[] {
  const c = (status as { conditions?: unknown } | undefined)?.conditions;
  return Array.isArray(c) ? (c as KubeCondition[]) : [];
}

/** Desired conditions, each keeping its lastTransitionTime while its status is unchanged. */
function conditions(want: readonly Condition[], current: readonly KubeCondition[], generation: number, now: string): KubeCondition[] {
  return want.map((c) => {
    const old = current.find((x) => x?.type === c.type);
    const time = old !== undefined && old.status === c.status && typeof old.lastTransitionTime === "string" ? old.lastTransitionTime : now;
    return { type: c.type, status: c.status, reason: c.reason, message: c.message || c.reason, observedGeneration: generation, lastTransitionTime: time };
  });
}

const addressOf = (a: LoadBalancerIngress) => (a.ip ? { type: "IPAddress", value: a.ip } : { type: "Hostname", value: a.hostname ?? "" });

/** The parentRef as status reports it: group and kind spelled out, as the API server defaults them. */
function statusParentRef(ref: ParentReference, routeNs: string): Record<string, unknown> {
  const out: Record<string, unknown> = { group: ref.group ?? GATEWAY_GROUP, kind: ref.kind ?? "Gateway", name: ref.name, namespace: ref.namespace ?? routeNs };
  if (ref.sectionName != null) out.sectionName = ref.sectionName;
  if (ref.port != null) out.port = ref.port;
  return out;
}

/**
 * A Gateway of its own address (--gateway-ports) whose Service has none yet is not Programmed:
 * GatewayConditionProgrammed (apis/v1 gateway_types.go) is False with AddressNotAssigned "when
 * the underlying implementation and network have yet to dynamically assign addresses for a
 * Gateway", and clients reach it only at status.addresses. Its listeners keep theirs: each
 * is bound (serving/gateway-ports.ts), and ListenerConditionProgrammed has no address reason.
 */
function unaddressed(cs: readonly Condition[]): readonly Condition[] {
  return cs.map((c) =>
    c.type === "Programmed" && c.status === "True"
      ? { type: c.type, status: "False" as const, reason: "AddressNotAssigned", message: "the Gateway's Service (docs/design.md \"Gateways with their own address\") has no address yet: no cluster IP, external IP or load-balancer ingress" }
      : c,
  );
}

const STATUS_CONCURRENCY = 4;

/** A route status's identity: an HTTPRoute and a GRPCRoute may share `namespace/name`. */
const routeId = (r: RouteStatus): string => (r.kind === "GRPCRoute" ? `GRPCRoute:${r.key}` : r.key);

export function createGatewayStatusWriter(o: GatewayStatusOptions): GatewayStatusWriter {
  const { client, log } = o;
  for (const r of ["gatewayclasses/status", "gateways/status", "httproutes/status", "grpcroutes/status"]) assertDeclared(GATEWAY_GROUP, r, "patch");
  const now = o.now ?? rfc3339;
  const FEATURE_STATUS = featureStatus((o.config.gatewayPorts ?? null) !== null);
  /**
   * Each HTTPRoute whose stored status was last found equal to ours: the compile's status entry
   * and the object compared. The incremental compile keeps a route's entry while nothing it
   * reads changed, so a run compares only the routes that changed since (docs/design.md
   * "Gateway API"), not every route.
   */
  const agreed = new Map<string, { readonly status: unknown; readonly obj: unknown }>();

  async function patch(resource: string, ns: string | null, name: string, status: Status): Promise<boolean> {
    const path = `/apis/${GATEWAY_GROUP}/v1${ns ? `/namespaces/${encodeURIComponent(ns)}` : ""}/${resource}/${encodeURIComponent(name)}/status`;
    const res = await client.request("PATCH", path, { body: { status }, contentType: "application/merge-patch+json", signal: AbortSignal.timeout(10_000) });
    if (res.ok || res.status === 404) {
      await res.body?.cancel();
      return res.ok;
    }
    throw await apiError(res, "PATCH", path, client.server);
  }

  async function run(result: GatewayCompileResult, snapshot: Pick<Snapshot, "gatewayClasses" | "gateways" | "httpRoutes" | "grpcRoutes">): Promise<number> {
    if (!o.isLeader()) return 0;
    const t = now();
    let addresses: LoadBalancerIngress[] = [];
    try {
      addresses = await o.addresses();
    } catch (e) {
      log.warn("cannot resolve the address to publish on Gateways", { err: e instanceof Error ? e.message : String(e) });
    }
    const work: { kind: string; resource: string; ns: string | null; name: string; status: Status }[] = [];
    for (const cls of result.classes.values()) {
      const obj = snapshot.gatewayClasses.get(cls.name);
      if (!obj) continue;
      const gen = obj.metadata.generation ?? 1;
      const cur = (obj.status ?? {}) as Status;
      // supportedFeatures (GatewayClassStatus) is written with the conditions: a list Portico
      // owns whole, compared as it is stored.
      const next: Status = { conditions: conditions(cls.conditions, currentConditions(cur), gen, t), supportedFeatures: FEATURE_STATUS };
      if (!deepEqual(cur.conditions, next.conditions) || !deepEqual(cur.supportedFeatures, next.supportedFeatures)) work.push({ kind: "GatewayClass", resource: "gatewayclasses", ns: null, name: cls.name, status: next });
    }
    for (const gw of result.gateways.values()) {
      const obj = snapshot.gateways.get(gw.key);
      if (!obj) continue;
      const gen = obj.metadata.generation ?? 1;
      const cur = (obj.status ?? {}) as Status;
      const curListeners = Array.isArray(cur.listeners) ? (cur.listeners as { name?: unknown; conditions?: unknown }[]) : [];
      const own = o.gatewayAddresses?.(gw.key) ?? null;
      const next: Status = {
        addresses: (own ?? addresses).map(addressOf),
        conditions: conditions(own !== null && own.length === 0 ? unaddressed(gw.conditions) : gw.conditions, currentConditions(cur), gen, t),
        listeners: gw.listeners.map((l) => ({
          name: l.name,
          supportedKinds: l.supportedKinds.map((k) => ({ group: k.group, kind: k.kind })),
          attachedRoutes: l.attachedRoutes,
          conditions: conditions(l.conditions, currentConditions(curListeners.find((x) => x?.name === l.name)), gen, t),
        })),
      };
      if (!deepEqual({ addresses: cur.addresses ?? [], conditions: cur.conditions, listeners: cur.listeners }, next)) {
        work.push({ kind: "Gateway", resource: "gateways", ns: obj.metadata.namespace ?? "default", name: obj.metadata.name, status: next });
      }
    }
    for (const r of result.routes) {
      const grpc = r.kind === "GRPCRoute";
      const obj = grpc ? snapshot.grpcRoutes?.get(r.key) : snapshot.httpRoutes.get(r.key);
      if (!obj) continue;
      const id = routeId(r);
      const seen = agreed.get(id);
      if (seen !== undefined && seen.status === r && seen.obj === obj) continue;
      const routeNs = obj.metadata.namespace ?? "default";
      const gen = obj.metadata.generation ?? 1;
      const curParents = Array.isArray((obj.status as { parents?: unknown } | undefined)?.parents) ? ((obj.status as { parents: Record<string, unknown>[] }).parents) : [];
      const others = curParents.filter((p) => p?.controllerName !== o.config.gatewayControllerName);
      const ours = r.parents.map((p) => {
        const parentRef = statusParentRef(p.state.parentRef, routeNs);
        const old = curParents.find((c) => c?.controllerName === o.config.gatewayControllerName && deepEqual(c.parentRef, parentRef));
        return { parentRef, controllerName: o.config.gatewayControllerName, conditions: conditions(p.conditions, currentConditions(old), gen, t) };
      });
      const next: Status = { parents: [...others, ...ours] };
      if (!deepEqual(curParents, next.parents)) {
        agreed.delete(id);
        work.push(grpc ? { kind: "GRPCRoute", resource: "grpcroutes", ns: routeNs, name: obj.metadata.name, status: next } : { kind: "HTTPRoute", resource: "httproutes", ns: routeNs, name: obj.metadata.name, status: next });
      } else agreed.set(id, { status: r, obj });
    }
    // Routes that no longer name a Gateway of ours keep no entry of ours (the parentRef was
    // removed, or the Gateway is gone or another controller's).
    const handled = new Set(result.routes.map(routeId));
    // Entries of routes that are gone or no longer ours.
    if (agreed.size > handled.size) for (const k of agreed.keys()) if (!handled.has(k)) agreed.delete(k);
    const stale = (kind: "HTTPRoute" | "GRPCRoute", resource: string, routes: ReadonlyMap<string, { metadata: { name: string; namespace?: string | undefined }; status?: unknown }>) => {
      for (const [key, obj] of routes) {
        if (handled.has(kind === "HTTPRoute" ? key : `GRPCRoute:${key}`)) continue;
        const parents = (obj.status as { parents?: unknown } | undefined)?.parents;
        if (!Array.isArray(parents) || !parents.some((p) => (p as { controllerName?: unknown } | null)?.controllerName === o.config.gatewayControllerName)) continue;
        const others = parents.filter((p) => (p as { controllerName?: unknown } | null)?.controllerName !== o.config.gatewayControllerName);
        work.push({ kind, resource, ns: obj.metadata.namespace ?? "default", name: obj.metadata.name, status: { parents: others } });
      }
    };
    stale("HTTPRoute", "httproutes", snapshot.httpRoutes);
    stale("GRPCRoute", "grpcroutes", snapshot.grpcRoutes ?? new Map());
    let n = 0;
    // A few PATCHes at a time, as the Ingress status writer does (kube/status.ts): a first
    // sync of 10,000 HTTPRoutes one by one takes about ten seconds.
    let next = 0;
    const writers = Array.from({ length: Math.min(STATUS_CONCURRENCY, work.length) }, async () => {
      while (next < work.length) {
        const w = work[next++]!;
        if (!o.isLeader()) return; // lost the lease mid-way: the new leader takes over
        try {
          if (await patch(w.resource, w.ns, w.name, w.status)) n++;
        } catch (e) {
          log.warn("gateway api status update failed", { kind: w.kind, namespace: w.ns ?? "", name: w.name, err: e instanceof Error ? e.message : String(e) });
        }
      }
    });
    await Promise.all(writers);
    if (n > 0) log.info("gateway api status synced", { updated: n });
    return n;
  }

  let pending: { result: GatewayCompileResult; snapshot: Pick<Snapshot, "gatewayClasses" | "gateways" | "httpRoutes" | "grpcRoutes"> } | null = null;
  let waiting: ((n: number) => void)[] = [];
  let running = false;
  async function drain(): Promise<void> {
    running = true;
    try {
      while (pending !== null) {
        const job = pending;
        const done = waiting;
        pending = null;
        waiting = [];
        let n = 0;
        try {
          n = await run(job.result, job.snapshot);
        } catch (e) {
          log.warn("gateway api status sync failed", { err: e instanceof Error ? e.message : String(e) });
        }
        for (const d of done) d(n);
      }
    } finally {
      running = false;
    }
  }

  return {
    sync(result, snapshot) {
      pending = { result, snapshot };
      const p = new Promise<number>((resolve) => waiting.push(resolve));
      if (!running) void drain();
      return p;
    },
  };
}
