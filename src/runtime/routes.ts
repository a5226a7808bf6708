// `portico routes`: the route table that --manifests or a cluster compiles to, printed as the
// same aligned text as /debug/routes?format=text, with no server running (the objects read once:
// runtime/load.ts).
import { compile } from "../compile/compile.ts";
import type { Config } from "../config/types.ts";
import { createLogger } from "../log/logger.ts";
import { loadOnce } from "./load.ts";
import { configWithNginxConfigMap } from "./nginx-settings.ts";
import { serializeTable } from "../table/serialize.ts";
import { formatRoutesText } from "../table/text.ts";

/** Prints the route table on stdout (problems on stderr); returns the exit code. */
export async function routesCli(flags: Config, explicit: ReadonlySet<keyof Config> = new Set()): Promise<number> {
  // Logs go to stderr so stdout is the table alone.
  const write = (line: string) => void process.stderr.write(`${line}\n`);
  const log = createLogger({ level: "warn", format: flags.logFormat, write });
  const quiet = createLogger({ level: "error", format: flags.logFormat, write });
  let loaded: Awaited<ReturnType<typeof loadOnce>>;
  let config: Config;
  try {
    // --nginx-configmap's keys act as their flags, as when serving: the table is the one served.
    config = await configWithNginxConfigMap(flags, explicit, log);
    loaded = await loadOnce(config, { log, quiet });
  } catch (err) {
    log.error(flags.manifests ? "cannot read manifests" : "cannot read the cluster", { err });
    return 1;
  }
  const result = compile(loaded.snapshot, config);
  process.stdout.write(formatRoutesText(serializeTable(result.table), config, { hostTls: result.hostTls }));
  // What did not make it into the table, after it (stderr): the reasons a route is missing.
  for (const d of [...loaded.invalid, ...result.diagnostics]) {
    log.warn(d.reason === "InvalidObject" ? "object skipped" : "object problem", { kind: d.kind, namespace: d.namespace, name: d.name, reason: d.reason, err: d.message });
  }
  return 0;
}
