// Ingress status writer: `status.loadBalancer.ingress` of every served Ingress gets our
// address, from --publish-status-address (IPs and hostnames, comma separated) or from the
// --publish-service Service (its LoadBalancer ingress, else its external IPs, else its
// ClusterIP; an ExternalName gives a hostname). Written only when it differs (merge PATCH on
// the status subresource), cleared from Ingresses we no longer serve that still carry our
// address, and only by the leader (the caller passes isLeader; kube/cluster.ts re-syncs on
// election).
import { isIP } from "node:net";
import type { Config } from "../config/types.ts";
import type { IngressRef } from "../compile/types.ts";
import { parseObject } from "../model/kinds.ts";
import type { Ingress, Service } from "../model/schemas.ts";
import { apiError, type KubeClient } from "./client.ts";
import type { Logger } from "../log/logger.ts";
import { assertDeclared } from "./permissions.ts";

export interface LoadBalancerIngress {
  readonly ip?: string;
  readonly hostname?: string;
}

export interface StatusSyncResult {
  updated: number;
  cleared: number;
  unchanged: number;
  failed: number;
}

export interface StatusWriterOptions {
  client: KubeClient;
  config: Pick<Config, "publishService" | "publishStatusAddress">;
  log: Logger;
  isLeader(): boolean;
  /** The published Service from the store when it is watched; otherwise it is fetched (GET). */
  lookupService?(namespace: string, name: string): Service | undefined;
  concurrency?: number;
}

export interface StatusWriter {
  /** Bring the status of all Ingresses in line with the served set. Serialised; never throws. */
  sync(served: readonly IngressRef[], all: Iterable<Ingress>): Promise<StatusSyncResult>;
  /** The address we publish (empty when none is configured or the Service is missing). */
  addresses(): Promise<LoadBalancerIngress[]>;
}

export function parseStatusAddresses(list: string): LoadBalancerIngress[] {
  return list
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)
    .map((a) => (isIP(a) ? { ip: a } : { hostname: a }));
}

export function serviceAddresses(svc: Service): LoadBalancerIngress[] {
  const lb = (svc.status?.loadBalancer?.ingress ?? []).flatMap((e): LoadBalancerIngress[] =>
    e.ip ? [{ ip: e.ip }] : e.hostname ? [{ hostname: e.hostname }] : [],
  );
  if (lb.length > 0) return lb;
  const spec = svc.spec ?? {};
  if (spec.type === "ExternalName" && spec.externalName) return [{ hostname: spec.externalName }];
  if (spec.externalIPs && spec.externalIPs.length > 0) return spec.externalIPs.map((ip) => ({ ip }));
  if (spec.clusterIP && spec.clusterIP !== "None") return [{ ip: spec.clusterIP }];
  return [];
}

const id = (e: LoadBalancerIngress): string => (e.ip ? `ip:${e.ip}` : `host:${e.hostname ?? ""}`);

function currentAddresses(ing: Ingress): LoadBalancerIngress[] {
  const list = (ing.status as { loadBalancer?: { ingress?: unknown } } | undefined)?.loadBalancer?.ingress;
  if (!Array.isArray(list)) return [];
  return list.flatMap((e: { ip?: unknown; hostname?: unknown } | null): LoadBalancerIngress[] =>
    typeof e?.ip === "string" && e.ip ? [{ ip: e.ip }] : typeof e?.hostname === "string" && e.hostname ? [{ hostname: e.hostname }] : [],
  );
}

const sameSet = (a: LoadBalancerIngress[], b: LoadBalancerIngress[]): boolean =>
  a.length === b.length && a.map(id).sort().join(",") === b.map(id).sort().join(",");

export function createStatusWriter(o: StatusWriterOptions): StatusWriter {
  const { client, log, config } = o;
  assertDeclared("networking.k8s.io", "ingresses/status", "patch");
  if (config.publishService) assertDeclared("", "services", "get");
  let chain: Promise<unknown> = Promise.resolve();

  async function addresses(): Promise<LoadBalancerIngress[]> {
    if (config.publishStatusAddress) return parseStatusAddresses(config.publishStatusAddress);
    const ps = config.publishService;
    if (!ps) return [];
    let svc = o.lookupService?.(ps.namespace, ps.name);
    if (!svc) {
      const path = `/api/v1/namespaces/${encodeURIComponent(ps.namespace)}/services/${encodeURIComponent(ps.name)}`;
      const res = await client.request("GET", path, { signal: AbortSignal.timeout(10_000) });
      if (res.status === 404) {
        await res.body?.cancel();
        log.warn("--publish-service not found: no address to publish", { namespace: ps.namespace, name: ps.name });
        return [];
      }
      if (!res.ok) throw await apiError(res, "GET", path, client.server);
      const p = parseObject("Service", await res.json());
      if (!p.ok) throw new Error(`--publish-service ${ps.namespace}/${ps.name}: ${p.diagnostic.message}`);
      svc = p.object;
    }
    return serviceAddresses(svc);
  }

  async function patch(ing: Ingress, next: LoadBalancerIngress[]): Promise<boolean> {
    const ns = ing.metadata.namespace ?? "default";
    const path = `/apis/networking.k8s.io/v1/namespaces/${encodeURIComponent(ns)}/ingresses/${encodeURIComponent(ing.metadata.name)}/status`;
    // RFC 7386: a list in a merge patch replaces the stored list; null removes the field.
    const body = { status: { loadBalancer: { ingress: next.length > 0 ? next : null } } };
    const res = await client.request("PATCH", path, { body, contentType: "application/merge-patch+json", signal: AbortSignal.timeout(10_000) });
    if (res.ok || res.status === 404) {
      await res.body?.cancel(); // 404: deleted meanwhile, nothing to do
      return res.ok;
    }
    throw await apiError(res, "PATCH", path, client.server);
  }

  async function run(served: readonly IngressRef[], all: Iterable<Ingress>): Promise<StatusSyncResult> {
    const r: StatusSyncResult = { updated: 0, cleared: 0, unchanged: 0, failed: 0 };
    if (!o.isLeader()) return r;
    let ours: LoadBalancerIngress[];
    try {
      ours = await addresses();
    } catch (e) {
      log.warn("cannot resolve the address to publish", { err: e instanceof Error ? e.message : String(e) });
      r.failed++;
      return r;
    }
    if (ours.length === 0 && !config.publishService && !config.publishStatusAddress) return r;
    const servedKeys = new Set(served.map((s) => `${s.namespace}/${s.name}`));
    const oursIds = new Set(ours.map(id));
    const work: { ing: Ingress; next: LoadBalancerIngress[]; clear: boolean }[] = [];
    for (const ing of all) {
      const cur = currentAddresses(ing);
      if (servedKeys.has(`${ing.metadata.namespace ?? "default"}/${ing.metadata.name}`)) {
        if (sameSet(cur, ours)) r.unchanged++;
        else work.push({ ing, next: ours, clear: false });
      } else if (cur.some((e) => oursIds.has(id(e)))) {
        work.push({ ing, next: cur.filter((e) => !oursIds.has(id(e))), clear: true });
      }
    }
    const workers = Array.from({ length: Math.min(o.concurrency ?? 4, work.length) }, async () => {
      for (let w = work.shift(); w; w = work.shift()) {
        if (!o.isLeader()) return; // lost the lease mid-way: the new leader takes over
        try {
          if (await patch(w.ing, w.next)) w.clear ? r.cleared++ : r.updated++;
        } catch (e) {
          r.failed++;
          log.warn("ingress status update failed", { kind: "Ingress", namespace: w.ing.metadata.namespace, name: w.ing.metadata.name, err: e instanceof Error ? e.message : String(e) });
        }
      }
    });
    await Promise.all(workers);
    if (r.updated + r.cleared + r.failed > 0) log.info("ingress status synced", { ...r });
    return r;
  }

  return {
    addresses,
    sync(served, all) {
      const items = [...all]; // the caller's snapshot at call time
      const next = chain.then(() => run(served, items));
      chain = next.catch(() => undefined);
      return next;
    },
  };
}
