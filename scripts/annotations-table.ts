// The README's annotation tables come from the registry (src/annotations/registry.ts):
//   bun scripts/annotations-table.ts           print them
//   bun scripts/annotations-table.ts --write   rewrite README.md's generated regions
// test/packaging/docs.test.ts fails while README.md differs from what --write would write.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { implementedTable, notImplementedTable, withGeneratedTables } from "../src/annotations/docs.ts";

const readmePath = join(import.meta.dir, "..", "README.md");
if (process.argv.includes("--write")) {
  const before = readFileSync(readmePath, "utf8");
  const after = withGeneratedTables(before);
  if (after !== before) writeFileSync(readmePath, after);
  process.stdout.write(after === before ? "README.md is up to date\n" : "README.md updated\n");
} else {
  process.stdout.write(`${implementedTable()}\n\n${notImplementedTable()}\n`);
}
