// One registry of policy kinds (kinds/registry.ts), each kind its contract and its build in one
// object, written in the module of its stage and collected from those modules' exports; and
// whatever the compiler emits is a kind's policy with parameters its schema accepts:
// docs/design.md, "Annotations and policies".
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import * as v from "valibot";
import { KIND_STAGES } from "../../src/compile/answer.ts";
import { compile } from "../../src/compile/compile.ts";
import type { CompileConfig } from "../../src/compile/config.ts";
import { defineKind } from "../../src/kinds/define.ts";
import * as K from "../../src/kinds/index.ts";
import { POLICY_STAGES, type StagePolicy } from "../../src/policy/stages.ts";
import { kindMap, POLICY_KINDS } from "../../src/kinds/registry.ts";
import { readdirSync as listDir } from "node:fs";
import { DEFAULT_COMPILE_CONFIG } from "../compile/config.ts";
import { loadFixture } from "../compile/snapshot.ts";

const FIXTURES = join(import.meta.dir, "../fixtures");

/** Every stage policy reachable from `root` (routes, regex locations, Gateway entries...). */
function policiesIn(root: unknown): StagePolicy[] {
  const out: StagePolicy[] = [];
  const seen = new Set<object>();
  const walk = (x: unknown) => {
    if (x === null || typeof x !== "object" || seen.has(x)) return;
    seen.add(x);
    if (x instanceof Map) for (const e of x.values()) walk(e);
    else if (Array.isArray(x)) for (const e of x) walk(e);
    else {
      const o = x as Record<string, unknown>;
      if (typeof o.kind === "string" && typeof o.stage === "string" && typeof o.params === "object") out.push(o as unknown as StagePolicy);
      else for (const e of Object.values(o)) walk(e);
    }
  };
  walk(root);
  return out;
}

describe("policy kinds", () => {
  test("the registry is derived: every kind the stage modules export, once, each filed under the stage its module is named for", () => {
    // What the stage modules export (kinds/index.ts) is what POLICY_KINDS holds: a kind is added there only.
    const exported = Object.values(K).filter((x) => typeof x === "object" && x !== null && "build" in x && "schema" in x) as { id: string }[];
    expect([...POLICY_KINDS.keys()].sort()).toEqual(exported.map((k) => k.id).sort());
    for (const [id, kind] of POLICY_KINDS) expect({ id, same: kind === (exported.find((k) => k.id === id) as unknown) }).toEqual({ id, same: true });
    // One module per stage that has kinds, named for it, each listed once in kinds/index.ts.
    const dir = join(import.meta.dir, "../../src/kinds");
    const index = readFileSync(join(dir, "index.ts"), "utf8");
    const listed = [...index.matchAll(/export \* from "\.\/([a-z-]+)\.ts";/g)].map((m) => m[1]);
    const kebab = (s: string) => s.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
    expect(listed).toEqual(POLICY_STAGES.filter((s) => s !== "errorPages").map(kebab));
    for (const file of listed) expect(listDir(dir)).toContain(`${file}.ts`);
    for (const kind of POLICY_KINDS.values()) expect({ id: kind.id, module: listed.includes(kebab(kind.stage)) }).toEqual({ id: kind.id, module: true });
    // defineKind's objects are picked from a module's exports; anything else is not.
    const extra = defineKind("dry-run-extra", "forwarding", v.object({}), () => () => null);
    expect([...kindMap([extra, () => 1, 3, { id: "x", build: () => null }]).values()]).toEqual([extra]);
    expect(() => kindMap([extra, defineKind("dry-run-extra", "denied", v.object({}), () => () => null)])).toThrow("two policy kinds");
  });

  test("explain's stages are the kinds' stages", () => {
    expect(KIND_STAGES).toEqual(Object.fromEntries([...POLICY_KINDS].map(([id, k]) => [id, k.stage])));
  });

  test("every policy the compiler emits for the fixtures is a contract's, in its stage, with parameters its schema accepts", () => {
    const emitted = new Set<string>();
    const problems: string[] = [];
    for (const file of readdirSync(FIXTURES).filter((f) => f.endsWith(".yaml"))) {
      const fx = loadFixture(readFileSync(join(FIXTURES, file), "utf8"));
      const result = compile(fx.snapshot, { ...DEFAULT_COMPILE_CONFIG, ...fx.config } as CompileConfig);
      for (const p of policiesIn(result.table)) {
        emitted.add(p.kind);
        const contract = POLICY_KINDS.get(p.kind);
        if (contract === undefined) problems.push(`${file}: ${p.kind} has no contract`);
        else if (contract.stage !== p.stage) problems.push(`${file}: ${p.kind} in ${p.stage}, its contract says ${contract.stage}`);
        else {
          const r = v.safeParse(contract.schema, p.params);
          if (!r.success) problems.push(`${file}: ${p.kind}: ${v.summarize(r.issues)}`);
        }
      }
    }
    expect(problems).toEqual([]);
    // The fixtures reach most kinds, so the check above is not vacuous.
    expect(emitted.size).toBeGreaterThanOrEqual(10);
  });
});
