// src/regex/ is pure like compile/ and table/ (no I/O, no clock, no timers, no Bun.*), so the
// compiler can use it; it may import only itself and re2js (plain JavaScript, no I/O).
import { expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";

const DIR = resolve(import.meta.dir, "../../src/regex");
const FORBIDDEN = /\bBun\s*\.|\bsetTimeout\b|\bsetInterval\b|\bsetImmediate\b|\bDate\s*\.\s*now\b|\bnew\s+Date\b|\bperformance\s*\.|\bprocess\s*\.|\bglobalThis\b|\bconsole\s*\.|\bfetch\s*\(/;

test("src/regex imports only itself and re2js, and names no clock, timer, process or Bun API", () => {
  const files = readdirSync(DIR).filter((f) => f.endsWith(".ts") && !f.endsWith(".test.ts"));
  expect(files.length).toBeGreaterThanOrEqual(6);
  const problems: string[] = [];
  for (const f of files) {
    const lines = readFileSync(join(DIR, f), "utf8").split("\n");
    lines.forEach((line, i) => {
      for (const m of line.matchAll(/\bfrom\s+"([^"]+)"|\bimport\s*\(\s*"([^"]+)"/g)) {
        const spec = m[1] ?? m[2]!;
        if (spec !== "re2js" && !/^\.\/[\w-]+\.ts$/.test(spec)) problems.push(`${f}:${i + 1}: imports ${spec}`);
      }
      if (FORBIDDEN.test(line)) problems.push(`${f}:${i + 1}: ${line.trim()}`);
    });
  }
  expect(problems).toEqual([]);
});
