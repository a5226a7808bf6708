// `portico migrate`: the migration report (compile/migrate.ts) for --manifests or a cluster,
// printed as text or JSON, with no server running. The cluster is read once (runtime/load.ts),
// only the kinds the report needs: Secrets are not read (their certificates change nothing the
// report compares, and a laptop should not download every Secret of a cluster).
import { Compiler } from "../compile/compile.ts";
import { migrationReport, type MigrationReport } from "../compile/migrate.ts";
import { formatMigrationText } from "../compile/migrate-text.ts";
import type { Config } from "../config/types.ts";
import { createLogger, type Logger } from "../log/logger.ts";
import type { Diagnostic } from "../model/diagnostic.ts";
import type { Kind } from "../model/kinds.ts";
import { loadOnce } from "./load.ts";

/** Exit status when at least one Ingress would change behaviour (0: none would). */
export const EXIT_CHANGES = 3;

const CLUSTER_KINDS: readonly Kind[] = ["IngressClass", "Ingress", "Service", "EndpointSlice"];

/** The report for what `config` names. Throws when the objects cannot be read. */
export async function buildMigrationReport(config: Config, log: Logger, quiet: Logger = log): Promise<{ report: MigrationReport; invalid: Diagnostic[] }> {
  const { snapshot, invalid } = await loadOnce(config, { log, quiet, kinds: CLUSTER_KINDS });
  const view = new Compiler(config).inspect(snapshot, []);
  return { report: migrationReport(view, config), invalid };
}

/** Prints the report on stdout (problems reading objects on stderr); returns the exit code. */
export async function migrateCli(config: Config, output: "text" | "json"): Promise<number> {
  // Logs go to stderr so stdout is the report alone.
  const write = (line: string) => void process.stderr.write(`${line}\n`);
  const log = createLogger({ level: "warn", format: config.logFormat, write });
  const quiet = createLogger({ level: "error", format: config.logFormat, write });
  let built: Awaited<ReturnType<typeof buildMigrationReport>>;
  try {
    built = await buildMigrationReport(config, log, quiet);
  } catch (err) {
    log.error(config.manifests ? "cannot read manifests" : "cannot read the cluster", { err });
    return 1;
  }
  const { report, invalid } = built;
  if (output === "json") process.stdout.write(`${JSON.stringify({ ...report, invalidObjects: invalid }, null, 2)}\n`);
  else {
    process.stdout.write(formatMigrationText(report));
    for (const d of invalid) log.warn("object not read", { kind: d.kind, namespace: d.namespace, name: d.name, reason: d.reason, err: d.message });
  }
  return report.summary.unchanged === report.summary.ingresses ? 0 : EXIT_CHANGES;
}
