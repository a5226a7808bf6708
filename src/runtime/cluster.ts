// The Kubernetes side of the composition: client, list+watch source, leader election, and
// the leader-only writers (Ingress status, Events). All replicas serve traffic.
import type { Instruments } from "../admin/instruments.ts";
import type { Config } from "../config/types.ts";
import { createKubeClient } from "../kube/client.ts";
import { createEventRecorder } from "../kube/events.ts";
import { createLeaderElector } from "../kube/leader.ts";
import { createStatusWriter } from "../kube/status.ts";
import { createKubeSource } from "../kube/watch.ts";
import type { Logger } from "../log/logger.ts";
import type { Diagnostic } from "../model/diagnostic.ts";
import type { Source } from "../store/types.ts";
import type { Applied, Controller } from "./controller.ts";

export interface Cluster {
  readonly source: Source;
  /** After each applied table: status (leader only) and Events for the diagnostics. */
  applied(applied: Applied, diagnostics: readonly Diagnostic[]): void;
  stop(): Promise<void>;
}

export async function startCluster(o: {
  config: Config;
  log: Logger;
  inst: Instruments;
  controller: Controller;
}): Promise<Cluster> {
  const { config, log, inst, controller } = o;
  const kubeLog = log.child({ component: "kube" });
  const client = createKubeClient(config, kubeLog);
  log.info("kubernetes api", { server: client.server, auth: client.authKind });

  let last: { applied: Applied; diagnostics: readonly Diagnostic[] } | null = null;
  const statusWriter = createStatusWriter({
    client,
    config,
    log: kubeLog,
    isLeader: () => elector.isLeader(),
    lookupService: (ns, name) => controller.store.get("Service", `${ns}/${name}`),
  });
  const syncStatus = () => {
    if (!last || !elector.isLeader()) return;
    const { applied } = last;
    void statusWriter.sync(applied.result.statuses, applied.snapshot.ingresses.values());
  };
  const elector = createLeaderElector({
    client,
    config,
    log: kubeLog,
    onLeader: (leader) => {
      inst.setLeader(leader); // leader.ts logs the transition itself
      if (leader) {
        syncStatus();
        if (last) events.report(last.diagnostics);
      }
    },
  });
  const events = createEventRecorder({
    client,
    config,
    log: kubeLog,
    isLeader: () => elector.isLeader(),
    instance: elector.identity,
    uidOf: (ns, name) => controller.store.get("Ingress", `${ns}/${name}`)?.metadata.uid,
  });
  const source = createKubeSource({
    client,
    config,
    log: kubeLog,
    hooks: inst.watch,
    onDiagnostic: (d) => controller.sourceDiagnostic(d),
  });
  elector.start();

  return {
    source,
    applied(applied, diagnostics) {
      last = { applied, diagnostics };
      syncStatus();
      events.report(diagnostics);
    },
    async stop() {
      await events.flush().catch(() => undefined);
      await elector.stop(true);
    },
  };
}
