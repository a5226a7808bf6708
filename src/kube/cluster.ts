// Everything a cluster needs, wired once: client → list+watch source, Lease election, and
// the leader-only writers (Ingress status, Events). runtime/run.ts starts the source with the
// store's sink; runtime/cluster.ts calls `applied` after each compile result goes live.
import type { CompileResult } from "../compile/types.ts";
import type { Config } from "../config/types.ts";
import { parseDuration } from "../config/units.ts";
import type { Diagnostic } from "../model/diagnostic.ts";
import type { Ingress, Service } from "../model/schemas.ts";
import type { DiagnosticsReport } from "../store/types.ts";
import { createKubeClient, type ClientOptions, type KubeClient } from "./client.ts";
import { createEventRecorder, type EventRecorder, type EventTimings } from "./events.ts";
import { createLeaderElector, type LeaderElector, type LeaderTimings } from "./leader.ts";
import type { Logger } from "../log/logger.ts";
import { createStatusWriter, serviceAddresses, type StatusWriter } from "./status.ts";
import { createGatewayStatusWriter } from "./gateway-status.ts";
import { createGatewayServices } from "./gateway-services.ts";
import { gatewayServiceName, isGatewayService } from "../compile/gateway/ports.ts";
import type { GatewayPort } from "../table/types.ts";
import type { GatewayCompileResult } from "../compile/types.ts";
import type { Snapshot } from "../store/types.ts";
import { createKubeSource, type KubeSource, type SourceHooks, type WatchTimings } from "./watch.ts";

export interface KubeClusterOptions {
  config: Config;
  log: Logger;
  /** Metrics: watch events, restarts, relists, errors, malformed lines. */
  hooks?: SourceHooks;
  /** Invalid objects from the list+watch (also logged), per object; cleared when their cause goes. */
  onDiagnostics?: DiagnosticsReport;
  onLeader?(isLeader: boolean): void;
  client?: KubeClient;
  clientOptions?: ClientOptions;
  watchTimings?: Partial<WatchTimings>;
  leaderTimings?: Partial<LeaderTimings>;
  eventTimings?: Partial<EventTimings>;
  identity?: string;
  /** Where PORTICO_WATCH_STALL_TIMEOUT is read (default process.env). */
  env?: Readonly<Record<string, string | undefined>>;
}

/**
 * PORTICO_WATCH_STALL_TIMEOUT: how long a connected watch may receive nothing before it is
 * restarted (docs/design.md "API server failures"). Not a flag: the 3-minute default follows
 * the API server's bookmark interval and only tests need another value. Unreadable values are
 * logged and ignored.
 */
export function stallTimeoutFromEnv(env: Readonly<Record<string, string | undefined>>, log: Logger): number | null {
  const text = env[STALL_ENV];
  if (text === undefined || text === "") return null;
  const ms = parseDuration(text);
  if (ms === null || ms < 100) {
    log.warn(`${STALL_ENV} ignored: expected a duration of at least 100ms like 30s or 3m`, { value: text.slice(0, 40) });
    return null;
  }
  return ms;
}
const STALL_ENV = "PORTICO_WATCH_STALL_TIMEOUT";

export interface KubeCluster {
  readonly client: KubeClient;
  readonly source: KubeSource;
  readonly elector: LeaderElector;
  readonly status: StatusWriter;
  readonly events: EventRecorder;
  /**
   * After a compile result went live: write Ingress statuses and report diagnostics as Events
   * (both no-ops unless leader). `ingresses`/`services` are the snapshot's maps.
   */
  applied(
    result: Pick<CompileResult, "statuses" | "diagnostics">,
    ingresses: ReadonlyMap<string, Ingress>,
    services: ReadonlyMap<string, Service>,
    extraDiagnostics?: readonly Diagnostic[],
    gateway?: GatewayApplied,
  ): void;
  /** Stop campaigning and release the Lease (call after source.stop()). */
  stop(): Promise<void>;
}

/** A Gateway API compile as applied: its result, the objects it read, the Gateways' own ports (--gateway-ports). */
export interface GatewayApplied {
  readonly result: GatewayCompileResult;
  readonly snapshot: Pick<Snapshot, "gatewayClasses" | "gateways" | "httpRoutes" | "grpcRoutes">;
  readonly ports?: ReadonlyMap<number, GatewayPort> | null;
}

const NO_PORTS: ReadonlyMap<number, GatewayPort> = new Map();

/** Creates the parts and starts the election; the caller starts `source` with its sink. */
export function startKubeCluster(o: KubeClusterOptions): KubeCluster {
  const { config, log } = o;
  const client = o.client ?? createKubeClient(config, log, o.clientOptions);
  const stallTimeoutMs = stallTimeoutFromEnv(o.env ?? process.env, log);
  const watchTimings = stallTimeoutMs === null ? o.watchTimings : { stallTimeoutMs, ...o.watchTimings };
  const source = createKubeSource({
    client,
    config,
    log,
    ...(o.hooks ? { hooks: o.hooks } : {}),
    ...(o.onDiagnostics ? { onDiagnostics: o.onDiagnostics } : {}),
    ...(watchTimings ? { timings: watchTimings } : {}),
  });
  let last: {
    result: Pick<CompileResult, "statuses" | "diagnostics">;
    ingresses: ReadonlyMap<string, Ingress>;
    services: ReadonlyMap<string, Service>;
    extra: readonly Diagnostic[];
    gateway: GatewayApplied | undefined;
  } | null = null;

  const write = () => {
    if (!last || !elector.isLeader()) return;
    // --update-status=false: another controller serving the same Ingresses (ingress-nginx
    // side by side) owns their status; two writers would overwrite each other forever.
    if (config.updateStatus) void status.sync(last.result.statuses, last.ingresses.values());
    // Gateway API status is the controller's own record of acceptance (not an address another
    // controller might also write), so it is written whatever --update-status says.
    if (last.gateway) void gatewayStatus.sync(last.gateway.result, last.gateway.snapshot);
    // --gateway-ports: each Gateway's own Service (kube/gateway-services.ts).
    if (gatewayServices !== null) void gatewayServices.sync(last.gateway?.ports ?? NO_PORTS, last.services);
    events.report([...last.result.diagnostics, ...last.extra]);
  };
  const elector = createLeaderElector({
    client,
    config,
    log,
    ...(o.identity ? { identity: o.identity } : {}),
    ...(o.leaderTimings ? { timings: o.leaderTimings } : {}),
    onLeader: (is) => {
      o.onLeader?.(is);
      if (is) write(); // a new leader brings statuses up to date at once
    },
  });
  const key = (ns: string, name: string) => `${ns}/${name}`;
  const status = createStatusWriter({
    client,
    config,
    log,
    isLeader: elector.isLeader,
    lookupService: (ns, name) => last?.services.get(key(ns, name)),
  });
  const gatewayServices = config.gatewayPorts === null ? null : createGatewayServices({ client, config, log, isLeader: elector.isLeader });
  const gatewayStatus = createGatewayStatusWriter({
    client, config, log, isLeader: elector.isLeader, addresses: () => status.addresses(),
    // With --gateway-ports a Gateway publishes its own Service's address, none until it has one.
    ...(config.gatewayPorts === null || config.publishService === null
      ? {}
      : {
          gatewayAddresses: (gw: string) => {
            const svc = last?.services.get(`${config.publishService!.namespace}/${gatewayServiceName(gw)}`);
            return svc !== undefined && isGatewayService(svc, gw) ? serviceAddresses(svc) : [];
          },
        }),
  });
  const events = createEventRecorder({
    client,
    config,
    log,
    isLeader: elector.isLeader,
    instance: elector.identity,
    uidOf: (ns, name, kind) => {
      const objects = kind === "Ingress" ? last?.ingresses : kind === "Gateway" ? last?.gateway?.snapshot.gateways : kind === "HTTPRoute" ? last?.gateway?.snapshot.httpRoutes : kind === "GRPCRoute" ? last?.gateway?.snapshot.grpcRoutes : undefined;
      return objects?.get(key(ns, name))?.metadata.uid;
    },
    ...(o.eventTimings ? { timings: o.eventTimings } : {}),
  });
  elector.start();

  return {
    client,
    source,
    elector,
    status,
    events,
    applied(result, ingresses, services, extra = [], gateway) {
      last = { result, ingresses, services, extra, gateway };
      write();
    },
    async stop() {
      await events.flush();
      await elector.stop(true);
    },
  };
}
