// One contract per policy kind (policy/kinds.ts), one runner per contract
// (proxy/policies/registry.ts), and whatever the compiler emits is a contract's policy with
// parameters its schema accepts: docs/design.md, "Annotations and policies".
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import * as v from "valibot";
import { KIND_STAGES } from "../../src/compile/answer.ts";
import { compile } from "../../src/compile/compile.ts";
import type { CompileConfig } from "../../src/compile/config.ts";
import { defineKind } from "../../src/policy/contract.ts";
import * as K from "../../src/policy/kinds.ts";
import { contractsOf, KIND_CONTRACTS } from "../../src/policy/registry.ts";
import type { StagePolicy } from "../../src/policy/stages.ts";
import { kindMap, POLICY_KINDS, runnersIn } from "../../src/proxy/policies/registry.ts";
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
  test("every contract has a runner, every runner a contract, and the runner runs that very contract", () => {
    expect([...POLICY_KINDS.keys()].sort()).toEqual([...KIND_CONTRACTS.keys()].sort());
    for (const [id, kind] of POLICY_KINDS) expect({ id, same: kind.contract === KIND_CONTRACTS.get(id) }).toEqual({ id, same: true });
  });

  test("the registries are derived: every contract kinds.ts exports, every runner a module exports, one per id", () => {
    // What policy/kinds.ts exports is what KIND_CONTRACTS holds: a contract is added there only.
    const exported = Object.values(K).filter((x) => typeof x === "object" && x !== null && "schema" in x);
    expect([...KIND_CONTRACTS.values()].sort((a, b) => a.id.localeCompare(b.id))).toEqual(exported.sort((a, b) => (a as { id: string }).id.localeCompare((b as { id: string }).id)) as never);
    const extra = defineKind("dry-run-extra", "forwarding", v.object({}));
    const runner = { contract: extra, build: () => () => null };
    // A module's runner (alone or in a list) is picked from its exports; helpers are not.
    expect(runnersIn({ runner, list: [runner], helper: () => 1, n: 3 })).toEqual([runner]);
    expect(() => kindMap([runner, { ...runner }])).toThrow("two runners");
    expect(() => contractsOf([extra, defineKind("dry-run-extra", "denied", v.object({}))])).toThrow("two policy kinds");
  });

  test("explain's stages are the contracts' stages", () => {
    expect(KIND_STAGES).toEqual(Object.fromEntries([...KIND_CONTRACTS].map(([id, k]) => [id, k.stage])));
  });

  test("every policy the compiler emits for the fixtures is a contract's, in its stage, with parameters its schema accepts", () => {
    const emitted = new Set<string>();
    const problems: string[] = [];
    for (const file of readdirSync(FIXTURES).filter((f) => f.endsWith(".yaml"))) {
      const fx = loadFixture(readFileSync(join(FIXTURES, file), "utf8"));
      const result = compile(fx.snapshot, { ...DEFAULT_COMPILE_CONFIG, ...fx.config } as CompileConfig);
      for (const p of policiesIn(result.table)) {
        emitted.add(p.kind);
        const contract = KIND_CONTRACTS.get(p.kind);
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
