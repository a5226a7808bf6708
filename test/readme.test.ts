// The README stays true: its quick start names commands that exist, and its flag table lists
// every flag with the default the parser uses (bun scripts/flags-table.ts regenerates it).
import { BUN_HEADER_FLAG } from "../src/config/header-buffers.ts";
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { FLAGS } from "../src/config/flags.ts";
import { createInstruments } from "../src/admin/instruments.ts";
import { Registry } from "../src/admin/registry.ts";

const ROOT = join(import.meta.dir, "..");
const readme = readFileSync(join(ROOT, "README.md"), "utf8");
const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> };

describe("README", () => {
  test("quick start: two commands whose scripts exist", () => {
    const start = readme.indexOf("## Quick start");
    const block = /```sh\n([\s\S]*?)```/.exec(readme.slice(start))![1]!;
    const lines = block.trim().split("\n");
    expect(lines).toHaveLength(2);
    for (const line of lines) {
      expect(line).toStartWith("bash scripts/bootstrap.sh && bun run ");
      const script = /bun run (\S+)/.exec(line)![1]!;
      expect(pkg.scripts[script], script).toBeDefined();
    }
    expect(existsSync(join(ROOT, "scripts/bootstrap.sh"))).toBe(true);
    // The demo is a subcommand of the executable, so the binary runs it too.
    // With the parser limit the executable carries (scripts/build.ts): Portico bounds heads itself.
    expect(pkg.scripts.demo).toBe(`bun ${BUN_HEADER_FLAG} src/main.ts demo`);
    expect(pkg.scripts.start).toBe(`bun ${BUN_HEADER_FLAG} src/main.ts`);
    expect(existsSync(join(ROOT, "k8s/examples/demo/20-ingresses.yaml"))).toBe(true);
  });

  test("the flag table lists every flag with its default", () => {
    const start = readme.indexOf("## Flags");
    const table = readme.slice(start, readme.indexOf("\n## ", start + 5));
    for (const f of Object.values(FLAGS)) {
      const row = table.split("\n").find((l) => l.startsWith(`| \`--${f.name}`));
      expect(row, f.name).toBeDefined();
      expect(row!, f.name).toContain(f.defaultText.replace(/\|/g, "\\|"));
    }
  });

  test("every metric is documented", () => {
    const names = createMetricsNames();
    expect(names.length).toBeGreaterThan(20);
    for (const n of names) expect(readme, n).toContain(`\`${n}\``);
  });
});

function createMetricsNames(): string[] {
  const r = new Registry();
  createInstruments(r, { version: "test" });
  return [...r.expose().matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!);
}
