// The expected migration report of the fixtures (test/fixtures/migrate/manifests), checked in
// as text and JSON next to them:
//   bun scripts/migrate-report.ts           say whether the checked-in files are up to date
//   bun scripts/migrate-report.ts --write   rewrite them
// The report follows the annotation registry, so it changes when a family is implemented: after
// `git rebase main`, run --write, read the diff (each Ingress whose status moved should be one
// a new family explains), and commit it. test/migrate/report.test.ts fails while they are stale.
import { readFileSync, writeFileSync } from "node:fs";
import { expectedReport, MIGRATE_EXPECTED } from "../test/migrate/expected.ts";

const write = process.argv.includes("--write");
let stale = 0;
for (const [path, text] of Object.entries(await expectedReport()) as [keyof typeof MIGRATE_EXPECTED, string][]) {
  const file = MIGRATE_EXPECTED[path];
  let before = "";
  try {
    before = readFileSync(file, "utf8");
  } catch {}
  if (before === text) continue;
  stale++;
  if (write) writeFileSync(file, text);
  process.stdout.write(`${write ? "rewrote" : "stale:"} ${file}\n`);
}
if (stale === 0) process.stdout.write("the expected migration report is up to date\n");
process.exit(stale > 0 && !write ? 1 : 0);
