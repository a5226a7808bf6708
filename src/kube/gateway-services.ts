// The Services that give Gateways their own address (--gateway-ports; docs/design.md
// "Gateways with their own address"), written by the leader. One per Gateway with a port of its
// own, in --publish-service's namespace (a Service selects pods of its own namespace only, and
// Portico's pods are there), with --publish-service's selector and type (and its
// externalTrafficPolicy), one port per declared listener port whose targetPort is the Portico
// port allocated to it (compile/gateway/ports.ts). Labelled and annotated as Portico's: a
// Service of the same name that is not is never touched. No ownerReference: an owner must be
// in the dependent's namespace (Kubernetes garbage collection), and a Gateway is usually
// elsewhere; so the leader deletes a Service of ours (its --gateway-controller-name
// annotated) whose Gateway no longer has a port.
//
// Written only where it differs, by POST, merge PATCH (RFC 7386: the ports list is replaced
// whole; the API server keeps each port's allocated nodePort) and DELETE; runs are serialised
// and coalesced (only the latest table waits while one writes), like gateway-status.ts.
import { CONTROLLER_ANNOTATION, GATEWAY_ANNOTATION, gatewayServiceName, isGatewayService, MANAGED_BY, MANAGED_BY_LABEL } from "../compile/gateway/ports.ts";
import type { Config } from "../config/types.ts";
import type { Logger } from "../log/logger.ts";
import type { Service } from "../model/schemas.ts";
import type { GatewayPort } from "../table/types.ts";
import { apiError, type KubeClient } from "./client.ts";
import { assertDeclared } from "./permissions.ts";

export interface GatewayServicesOptions {
  client: KubeClient;
  config: Pick<Config, "publishService" | "gatewayControllerName">;
  log: Logger;
  isLeader(): boolean;
}

export interface GatewayServices {
  /** Bring the Services in line with `ports` (the table's gatewayPorts). Never throws; resolves with the number of writes of the run that covered this call. */
  sync(ports: ReadonlyMap<number, GatewayPort>, services: ReadonlyMap<string, Service>): Promise<number>;
}

type Spec = Record<string, unknown>;

interface Want {
  readonly name: string;
  readonly gateway: string;
  readonly spec: Spec;
}

const portKey = (p: { name?: unknown; port?: unknown; targetPort?: unknown; protocol?: unknown }) => `${String(p.name)}|${String(p.port)}|${String(p.targetPort)}|${String(p.protocol ?? "TCP")}`;

/** The fields we set, compared as the API server stores them (it adds nodePort, clusterIP and the rest). */
function sameSpec(cur: Spec, want: Spec): boolean {
  const a = (cur.ports as unknown[] | undefined) ?? [];
  const b = want.ports as unknown[];
  if (a.length !== b.length || a.some((p, i) => portKey(p as Spec) !== portKey(b[i] as Spec))) return false;
  if ((cur.type ?? "ClusterIP") !== want.type) return false;
  if (JSON.stringify(cur.selector ?? {}) !== JSON.stringify(want.selector)) return false;
  return (cur.externalTrafficPolicy ?? null) === (want.externalTrafficPolicy ?? null) || want.externalTrafficPolicy === undefined;
}

export function createGatewayServices(o: GatewayServicesOptions): GatewayServices {
  const { client, log, config } = o;
  for (const verb of ["create", "patch", "delete"]) assertDeclared("", "services", verb);
  let running: Promise<number> | null = null;
  let pending: { ports: ReadonlyMap<number, GatewayPort>; services: ReadonlyMap<string, Service>; done: ((n: number) => void)[] } | null = null;
  let warned = "";

  const warnOnce = (msg: string, fields: Record<string, unknown>) => {
    const key = msg + JSON.stringify(fields);
    if (key === warned) return;
    warned = key;
    log.warn(msg, fields);
  };

  async function call(method: string, path: string, body?: unknown): Promise<void> {
    const res = await client.request(method, path, {
      ...(body === undefined ? {} : { body, ...(method === "PATCH" ? { contentType: "application/merge-patch+json" } : {}) }),
      signal: AbortSignal.timeout(10_000),
    });
    // 404 on DELETE: already gone; 409 on POST: made meanwhile (the next run compares it).
    if (res.ok || (method === "DELETE" && res.status === 404) || (method === "POST" && res.status === 409)) {
      await res.body?.cancel();
      return;
    }
    throw await apiError(res, method, path, client.server);
  }

  async function run(ports: ReadonlyMap<number, GatewayPort>, services: ReadonlyMap<string, Service>): Promise<number> {
    if (!o.isLeader()) return 0;
    const ps = config.publishService;
    if (ps === null) return 0;
    const ns = ps.namespace;
    const own = services.get(`${ns}/${ps.name}`);
    const ownSpec = (own?.spec ?? {}) as Spec;
    const selector = ownSpec.selector;
    if (own === undefined || selector === null || typeof selector !== "object" || Object.keys(selector).length === 0) {
      if (ports.size > 0) warnOnce("--gateway-ports: --publish-service has no selector to copy; Gateways get no Service and no address", { namespace: ns, name: ps.name });
      return 0;
    }
    const byGateway = new Map<string, { declared: number; port: number; https: boolean }[]>();
    for (const [port, g] of ports) {
      let list = byGateway.get(g.gateway);
      if (!list) byGateway.set(g.gateway, (list = []));
      list.push({ declared: g.declared, port, https: g.https });
    }
    const type = typeof ownSpec.type === "string" ? ownSpec.type : "ClusterIP";
    const wants: Want[] = [];
    for (const [gateway, list] of byGateway) {
      list.sort((a, b) => a.declared - b.declared);
      const spec: Spec = {
        type,
        selector,
        ports: list.map((p) => ({ name: `${p.https ? "https" : "http"}-${p.declared}`, port: p.declared, targetPort: p.port, protocol: "TCP" })),
      };
      // Local keeps the client's address (k8s/service.yaml says why); only for node-facing types.
      if ((type === "LoadBalancer" || type === "NodePort") && typeof ownSpec.externalTrafficPolicy === "string") spec.externalTrafficPolicy = ownSpec.externalTrafficPolicy;
      wants.push({ name: gatewayServiceName(gateway), gateway, spec });
    }
    const base = `/api/v1/namespaces/${encodeURIComponent(ns)}/services`;
    let writes = 0;
    const wanted = new Set<string>();
    for (const w of wants) {
      wanted.add(w.name);
      const cur = services.get(`${ns}/${w.name}`);
      const metadata = { name: w.name, namespace: ns, labels: { [MANAGED_BY_LABEL]: MANAGED_BY }, annotations: { [GATEWAY_ANNOTATION]: w.gateway, [CONTROLLER_ANNOTATION]: config.gatewayControllerName } };
      try {
        if (cur === undefined) {
          await call("POST", base, { apiVersion: "v1", kind: "Service", metadata, spec: w.spec });
          writes++;
          log.info("created a Gateway's Service", { gateway: w.gateway, service: `${ns}/${w.name}` });
        } else if (!isGatewayService(cur, w.gateway)) {
          warnOnce("a Service that is not Portico's has the name of a Gateway's Service; left alone, the Gateway gets no address", { gateway: w.gateway, service: `${ns}/${w.name}` });
        } else if (!sameSpec((cur.spec ?? {}) as Spec, w.spec)) {
          await call("PATCH", `${base}/${encodeURIComponent(w.name)}`, { metadata: { labels: metadata.labels, annotations: metadata.annotations }, spec: w.spec });
          writes++;
        }
      } catch (e) {
        log.warn("cannot write a Gateway's Service", { gateway: w.gateway, service: `${ns}/${w.name}`, err: e instanceof Error ? e.message : String(e) });
      }
    }
    for (const [key, svc] of services) {
      if (!key.startsWith(`${ns}/`) || svc.metadata.labels?.[MANAGED_BY_LABEL] !== MANAGED_BY || wanted.has(svc.metadata.name)) continue;
      // Another Portico's (another --gateway-controller-name) in the same namespace: its own.
      if (svc.metadata.annotations?.[CONTROLLER_ANNOTATION] !== config.gatewayControllerName) continue;
      try {
        await call("DELETE", `${base}/${encodeURIComponent(svc.metadata.name)}`);
        writes++;
        log.info("deleted a Service of a Gateway without ports", { service: key, gateway: svc.metadata.annotations?.[GATEWAY_ANNOTATION] ?? null });
      } catch (e) {
        log.warn("cannot delete a Gateway's Service", { service: key, err: e instanceof Error ? e.message : String(e) });
      }
    }
    return writes;
  }

  function loop(): Promise<number> {
    return (async () => {
      let n = 0;
      while (pending !== null) {
        const p = pending;
        pending = null;
        try {
          n = await run(p.ports, p.services);
        } catch (e) {
          log.warn("Gateway Services run failed", { err: e instanceof Error ? e.message : String(e) });
          n = 0;
        }
        for (const d of p.done) d(n);
      }
      running = null;
      return n;
    })();
  }

  return {
    sync(ports, services) {
      return new Promise<number>((resolve) => {
        const done = pending?.done ?? [];
        done.push(resolve);
        pending = { ports, services, done };
        running ??= loop();
      });
    },
  };
}
