// Golden tests: every test/fixtures/<name>.yaml is compiled with the default
// config (a `kind: TestConfig` document may override fields) and compared with
// test/golden/<name>.json. `kind: TestRequests` documents list requests whose expected
// route is asserted here and recorded in the golden. UPDATE_GOLDEN=1 rewrites goldens.
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, writeFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { compile } from "../../src/compile/compile.ts";
import type { CompileConfig } from "../../src/compile/config.ts";
import { DEFAULT_COMPILE_CONFIG } from "./config.ts";
import { lookup } from "../../src/table/lookup.ts";
import { referenceLookup } from "../table/reference.ts";
import { serializeTable } from "../../src/table/serialize.ts";
import type { Match } from "../../src/table/types.ts";
import { loadFixture } from "./snapshot.ts";

const root = join(import.meta.dir, "..");
const fixtures = readdirSync(join(root, "fixtures")).filter((f) => f.endsWith(".yaml")).sort();
const update = process.env.UPDATE_GOLDEN === "1";

export function describeMatch(m: Match | null): string {
  if (m === null) return "404";
  const who = m.route.ingress.name ? `${m.route.ingress.namespace}/${m.route.ingress.name}` : "--default-backend-service";
  if (m.via === "default") return `default ${who}`;
  if (m.route.source === "implicitRoot") return `implicit-root ${m.hostKey} ${who} -> ${m.route.backend.id}`;
  return `${m.route.pathType} ${m.route.path} ${who}`;
}

describe("golden", () => {
  test("there are fixtures", () => expect(fixtures.length).toBeGreaterThan(10));
  for (const file of fixtures) {
    const name = file.slice(0, -".yaml".length);
    test(name, () => {
      const fx = loadFixture(readFileSync(join(root, "fixtures", file), "utf8"));
      const config = { ...DEFAULT_COMPILE_CONFIG, ...fx.config } as CompileConfig;
      const result = compile(fx.snapshot, config);
      const requests = fx.requests.map((r) => {
        const got = describeMatch(lookup(result.table, r.host, r.path));
        // The fixture states the intent by hand; both matchers must meet it.
        expect({ ...r, got }).toEqual({ ...r, got: got === r.expect || got.startsWith(`${r.expect} `) ? got : r.expect });
        expect(describeMatch(referenceLookup(result.table, r.host, r.path))).toBe(got);
        return { host: r.host, path: r.path, route: got };
      });
      const actual = JSON.parse(
        JSON.stringify({
          table: serializeTable(result.table),
          certificates: result.certificates,
          statuses: result.statuses,
          diagnostics: [...fx.parseDiagnostics, ...result.diagnostics],
          requests,
        }),
      );
      const goldenPath = join(root, "golden", `${name}.json`);
      if (update || !existsSync(goldenPath)) {
        writeFileSync(goldenPath, `${JSON.stringify(actual, null, 2)}\n`);
        if (!update) throw new Error(`golden ${name}.json was missing and has been written: review it`);
      }
      expect(actual).toEqual(JSON.parse(readFileSync(goldenPath, "utf8")));
    });
  }
});
