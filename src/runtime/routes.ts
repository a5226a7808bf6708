// `portico routes`: the route table that --manifests or a cluster compiles to, printed as the
// same aligned text as /debug/routes?format=text, with no server running. The cluster is read
// with one list of each kind (the list+watch source, stopped once every kind is listed).
import { compile } from "../compile/compile.ts";
import type { Config } from "../config/types.ts";
import { ManifestSource } from "../files/manifests.ts";
import { createKubeClient } from "../kube/client.ts";
import { createKubeSource } from "../kube/watch.ts";
import { createLogger, type Logger } from "../log/logger.ts";
import { KINDS } from "../model/kinds.ts";
import type { Diagnostic } from "../model/diagnostic.ts";
import { Store } from "../store/store.ts";
import { serializeTable } from "../table/serialize.ts";
import { formatRoutesText } from "../table/text.ts";

/** How long `portico routes` waits for a cluster's first lists. */
export const CLUSTER_LIST_TIMEOUT_MS = 30_000;

async function fromManifests(path: string, store: Store, log: Logger, invalid: Map<string, readonly Diagnostic[]>): Promise<void> {
  const source = new ManifestSource({ path, log, onDiagnostics: (owner, ds) => void invalid.set(owner, ds) });
  try {
    await source.start(store);
  } finally {
    await source.stop();
  }
}

async function fromCluster(config: Config, store: Store, log: Logger, quiet: Logger, invalid: Map<string, readonly Diagnostic[]>): Promise<void> {
  const client = createKubeClient(config, log);
  let failure: ((err: Error) => void) | null = null;
  const failed = new Promise<never>((_, reject) => (failure = reject));
  failed.catch(() => {}); // a failure after the lists are in (while stopping) is no one's concern
  const source = createKubeSource({
    client,
    config,
    // Its retry and invalid-object warnings would repeat what this command reports itself.
    log: quiet,
    onDiagnostics: (owner, ds) => void invalid.set(owner, ds),
    // A command gives up at the first failed list instead of retrying like the server does.
    hooks: { onError: (kind, reason) => failure?.(new Error(`listing ${kind}: ${reason}`)) },
  });
  await source.start(store);
  const done = (async () => {
    while (!store.allSynced(KINDS)) await Bun.sleep(10);
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

/** Prints the route table on stdout (problems on stderr); returns the exit code. */
export async function routesCli(config: Config): Promise<number> {
  // Logs go to stderr so stdout is the table alone.
  const write = (line: string) => void process.stderr.write(`${line}\n`);
  const log = createLogger({ level: "warn", format: config.logFormat, write });
  const quiet = createLogger({ level: "error", format: config.logFormat, write });
  const store = new Store();
  const invalid = new Map<string, readonly Diagnostic[]>();
  try {
    if (config.manifests) await fromManifests(config.manifests, store, log, invalid);
    else await fromCluster(config, store, log, quiet, invalid);
  } catch (err) {
    log.error(config.manifests ? "cannot read manifests" : "cannot read the cluster", { err });
    return 1;
  }
  const result = compile(store.snapshot(), config);
  process.stdout.write(formatRoutesText(serializeTable(result.table)));
  // What did not make it into the table, after it (stderr): the reasons a route is missing.
  for (const d of [...[...invalid.values()].flat(), ...result.diagnostics]) {
    log.warn(d.severity === "warning" ? "object problem" : "object skipped", { kind: d.kind, namespace: d.namespace, name: d.name, reason: d.reason, err: d.message });
  }
  return 0;
}
