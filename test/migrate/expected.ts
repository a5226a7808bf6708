// The migration report of the fixtures as `portico migrate --nginx-configmap` prints it (text,
// and JSON with --output json), built in-process with the command's own code; scripts/migrate-report.ts
// writes it, test/migrate/report.test.ts compares.
import { join } from "node:path";
import { parseArgs } from "../../src/config/parse.ts";
import { silentLogger } from "../../src/log/logger.ts";
import { buildMigrationReport, migrationJson, migrationText } from "../../src/runtime/migrate.ts";

export const MIGRATE_FIXTURES = join(import.meta.dir, "..", "fixtures", "migrate");
export const MIGRATE_MANIFESTS = join(MIGRATE_FIXTURES, "manifests");
/** ingress-nginx's ConfigMap in the fixtures, as the chart names it. */
export const MIGRATE_CONFIGMAP = "ingress-nginx/ingress-nginx-controller";
export const MIGRATE_EXPECTED = {
  text: join(MIGRATE_FIXTURES, "expected-report.txt"),
  json: join(MIGRATE_FIXTURES, "expected-report.json"),
} as const;

export async function expectedReport(): Promise<{ text: string; json: string }> {
  const o = parseArgs(["migrate", "--manifests", MIGRATE_MANIFESTS, "--nginx-configmap", MIGRATE_CONFIGMAP], {});
  if (o.type !== "migrate") throw new Error(`migrate flags: ${JSON.stringify(o)}`);
  const { report, invalid } = await buildMigrationReport(o.config, silentLogger, silentLogger, o.nginxConfigMap);
  return { text: migrationText(report, invalid), json: migrationJson(report, invalid) };
}
