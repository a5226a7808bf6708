// The objects of --manifests or of a cluster, read once, for the commands that compile and exit
// (`portico routes`, `portico migrate`). A cluster is read with one list of each kind asked for
// (the list+watch source, stopped once every kind is listed); a failed list ends the command
// instead of being retried as the server retries it.
import type { Config } from "../config/types.ts";
import { ManifestSource } from "../files/manifests.ts";
import { createKubeClient } from "../kube/client.ts";
import { createKubeSource } from "../kube/watch.ts";
import type { Logger } from "../log/logger.ts";
import type { Diagnostic } from "../model/diagnostic.ts";
import { KINDS, type Kind } from "../model/kinds.ts";
import { Store } from "../store/store.ts";
import type { Snapshot } from "../store/types.ts";

/** How long a command waits for a cluster's first lists. */
export const CLUSTER_LIST_TIMEOUT_MS = 30_000;

export interface LoadOptions {
  readonly log: Logger;
  /** For the list+watch source, whose retry and invalid-object warnings the command reports itself. */
  readonly quiet: Logger;
  /** Kinds listed from a cluster (all by default). */
  readonly kinds?: readonly Kind[];
}

async function fromManifests(path: string, store: Store, log: Logger, invalid: Map<string, readonly Diagnostic[]>): Promise<void> {
  const source = new ManifestSource({ path, log, onDiagnostics: (owner, ds) => void invalid.set(owner, ds) });
  try {
    await source.start(store);
  } finally {
    await source.stop();
  }
}

async function fromCluster(config: Config, store: Store, o: LoadOptions, invalid: Map<string, readonly Diagnostic[]>): Promise<void> {
  const kinds = o.kinds ?? KINDS;
  const client = createKubeClient(config, o.log);
  let failure: ((err: Error) => void) | null = null;
  const failed = new Promise<never>((_, reject) => (failure = reject));
  failed.catch(() => {}); // a failure after the lists are in (while stopping) is no one's concern
  const source = createKubeSource({
    client,
    config,
    log: o.quiet,
    kinds,
    onDiagnostics: (owner, ds) => void invalid.set(owner, ds),
    hooks: { onError: (kind, reason) => failure?.(new Error(`listing ${kind}: ${reason}`)) },
  });
  await source.start(store);
  const done = (async () => {
    while (!store.allSynced(kinds)) await Bun.sleep(10);
  })();
  let timer: ReturnType<typeof setTimeout> | null = null;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the cluster's objects were not listed within ${CLUSTER_LIST_TIMEOUT_MS / 1000} s`)), CLUSTER_LIST_TIMEOUT_MS);
  });
  try {
    await Promise.race([done, failed, timeout]);
  } finally {
    if (timer) clearTimeout(timer);
    await source.stop();
  }
}

/** Read what `config` names once. Throws when it cannot be read (a missing path, a failed list). */
export async function loadOnce(config: Config, o: LoadOptions): Promise<{ snapshot: Snapshot; invalid: Diagnostic[] }> {
  const store = new Store();
  const invalid = new Map<string, readonly Diagnostic[]>();
  if (config.manifests) await fromManifests(config.manifests, store, o.log, invalid);
  else await fromCluster(config, store, o, invalid);
  return { snapshot: store.snapshot(), invalid: [...invalid.values()].flat() };
}
