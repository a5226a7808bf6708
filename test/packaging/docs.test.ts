// README.md stays true to the code: every annotation the compiler understands is listed,
// and every Portico flag the page shows exists in the flag table.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ANNOTATIONS } from "../../src/compile/annotations.ts";
import { FLAGS } from "../../src/config/flags.ts";
import { ROOT } from "./k8s.ts";

const doc = readFileSync(join(ROOT, "README.md"), "utf8");
const known = new Set(Object.values(FLAGS).map((f) => f.name));
const flagsIn = (s: string): string[] => [...s.matchAll(/--([a-z][a-z0-9-]*)/g)].map((m) => m[1]!);

function section(title: string): string {
  const start = doc.indexOf(`\n### ${title}\n`);
  if (start < 0) throw new Error(`no section ${title}`);
  const end = doc.indexOf("\n#", start + 5);
  return doc.slice(start, end < 0 ? undefined : end);
}

describe("README.md", () => {
  test("lists every annotation Portico understands, with its ingress-nginx aliases", () => {
    const table = section("Annotations understood");
    for (const a of ANNOTATIONS) {
      const row = table.split("\n").find((l) => l.startsWith(`| \`${a.name}\` |`));
      expect(row, a.name).toBeDefined();
      for (const alias of a.aliases) expect(row, alias).toContain(`\`${alias}\``);
    }
    const rows = table.split("\n").filter((l) => l.startsWith("| `portico.dev/"));
    expect(rows.length).toBe(ANNOTATIONS.length);
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
