// README.md stays true to the code: its annotation tables are what the registry generates,
// and every Portico flag the page shows exists in the flag table.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { withGeneratedTables } from "../../src/annotations/docs.ts";
import { IMPLEMENTED } from "../../src/annotations/registry.ts";
import { namesOf } from "../../src/annotations/spec.ts";
import { EXPLAIN_FLAGS, FLAGS, MIGRATE_FLAGS } from "../../src/config/flags.ts";
import { helpText } from "../../src/runtime/help.ts";
import { ROOT } from "./k8s.ts";

const doc = readFileSync(join(ROOT, "README.md"), "utf8");
// Every flag name the parser takes: the flag table with its aliases, and the subcommands' own.
const known = new Set([
  ...Object.values(FLAGS).flatMap((f) => [f.name, ...(f.aliases ?? [])]),
  ...Object.values(EXPLAIN_FLAGS).map((f) => f.name),
  ...Object.values(MIGRATE_FLAGS).map((f) => f.name),
]);
const flagsIn = (s: string): string[] => [...s.matchAll(/--([a-z][a-z0-9-]*)/g)].map((m) => m[1]!);

function section(title: string): string {
  const start = doc.indexOf(`\n### ${title}\n`);
  if (start < 0) throw new Error(`no section ${title}`);
  const end = doc.indexOf("\n#", start + 5);
  return doc.slice(start, end < 0 ? undefined : end);
}

describe("README.md", () => {
  test("the annotation tables are the registry's (bun scripts/annotations-table.ts --write)", () => {
    expect(doc).toBe(withGeneratedTables(doc));
    const table = section("Annotations understood");
    for (const a of IMPLEMENTED) {
      const row = table.split("\n").find((l) => l.startsWith(`| \`${namesOf(a)[0]}\` |`));
      expect(row, namesOf(a)[0]).toBeDefined();
      for (const n of namesOf(a)) expect(row, n).toContain(`\`${n}\``);
    }
  });

  test("--help lists every implemented annotation under each of its names", () => {
    const help = helpText();
    for (const a of IMPLEMENTED) for (const n of namesOf(a)) expect(help, n).toContain(n);
  });

  test("every flag in the Portico column of the migration table exists", () => {
    const rows = section("Flag equivalents").split("\n").filter((l) => l.startsWith("| ") && !l.startsWith("| ingress-nginx"));
    expect(rows.length).toBeGreaterThan(10);
    for (const row of rows) {
      const portico = row.split("|")[2] ?? "";
      const flags = flagsIn(portico);
      expect(flags.length, row).toBeGreaterThan(0);
      for (const f of flags) expect(known.has(f), `--${f}`).toBe(true);
    }
  });

  test("every flag given to portico in a command example exists", () => {
    const blocks = [...doc.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
    let checked = 0;
    for (const line of blocks.flatMap((b) => b.split("\n"))) {
      const cmd = line.split("#")[0]!;
      if (!/(dist\/portico|src\/main\.ts)\s/.test(cmd)) continue;
      for (const f of flagsIn(cmd)) {
        if (f === "version" || f === "help") continue;
        expect(known.has(f), `--${f} in: ${line}`).toBe(true);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(3);
  });

  test("the install command and the example paths it names exist", () => {
    expect(doc).toContain("kubectl apply -k k8s/");
    for (const p of ["k8s/kustomization.yaml", "k8s/examples/app/kustomization.yaml", "k8s/ingressclass.yaml", "k8s/deployment.yaml"])
      expect(() => readFileSync(join(ROOT, p))).not.toThrow();
  });
});
