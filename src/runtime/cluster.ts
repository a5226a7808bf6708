// The Kubernetes side of the composition: kube/cluster.ts wires the client, the list+watch
// source, the Lease election and the leader-only writers (Ingress status, Events); this adapter
// plugs it into the controller and the metrics. All replicas serve traffic.
import type { Instruments } from "../admin/instruments.ts";
import type { Config } from "../config/types.ts";
import { startKubeCluster } from "../kube/cluster.ts";
import type { Logger } from "../log/logger.ts";
import type { Diagnostic } from "../model/diagnostic.ts";
import type { Source } from "../store/types.ts";
import type { Applied, Controller } from "./controller.ts";

export interface Cluster {
  readonly source: Source;
  /** The ConfigMaps add-headers and proxy-set-headers name now (watched by reference, kube/configmap-refs.ts). */
  nameConfigMaps(keys: readonly string[]): void;
  /** After each applied table: status (leader only) and Events for the diagnostics. */
  applied(applied: Applied, diagnostics: readonly Diagnostic[]): void;
  stop(): Promise<void>;
}

export async function startCluster(o: { config: Config; log: Logger; inst: Instruments; controller: Controller }): Promise<Cluster> {
  const { config, log, inst, controller } = o;
  const kube = startKubeCluster({
    config,
    log: log.child({ component: "kube" }),
    hooks: inst.watch,
    onDiagnostics: (owner, diagnostics) => controller.sourceDiagnostics(owner, diagnostics),
    onLeader: (leader) => inst.setLeader(leader), // leader.ts logs the transition itself
  });
  log.info("kubernetes api", { server: kube.client.server, auth: kube.client.authKind });
  return {
    source: kube.source,
    nameConfigMaps: (keys) => kube.source.nameConfigMaps(keys),
    applied(applied, diagnostics) {
      // `diagnostics` already holds the compile's own; pass them once, as the extra list.
      const gw = applied.result.gateway;
      kube.applied({ statuses: applied.result.statuses, diagnostics: [] }, applied.snapshot.ingresses, applied.snapshot.services, diagnostics, gw ? { result: gw, snapshot: applied.snapshot, ports: applied.result.table.gatewayPorts ?? null } : undefined);
    },
    stop: () => kube.stop(),
  };
}
