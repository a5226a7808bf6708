// The runner places the proxy's built-in checks (given to it, written once in
// proxy/pipeline/checks.ts) between a route's stages, after the stage each names.
import { describe, expect, test } from "bun:test";
import * as v from "valibot";
import { defineKind } from "../../kinds/define.ts";
import { stagePolicy } from "../../policy/contract.ts";
import type { PolicyStage } from "../../policy/stages.ts";
import { createPolicyRunner } from "./run.ts";
import type { PolicyFlow, PolicyKind } from "../../kinds/types.ts";

describe("policy runner", () => {
  test("built-in stages run after the stage they name, before the next; the first answer ends the run", async () => {
    const seen: string[] = [];
    const kind = (id: string, stage: PolicyStage): PolicyKind =>
      defineKind(id, stage, v.object({}), () => () => {
        seen.push(id);
        return null;
      });
    const kinds = new Map([kind("r", "rewrite"), kind("b", "backend"), kind("a", "access")].map((k) => [k.id, k]));
    const stages = [...kinds.values()].reverse().map((k) => stagePolicy(k, {}));
    const run = createPolicyRunner(kinds, undefined, [
      { after: "backend", step: () => (seen.push("after-backend"), null) },
      { after: "rewrite", step: () => (seen.push("after-rewrite"), null) },
    ]);
    expect(await run(stages, {} as PolicyFlow)).toBeNull();
    expect(seen).toEqual(["r", "after-rewrite", "b", "after-backend", "a"]);

    seen.length = 0;
    const stop = createPolicyRunner(kinds, undefined, [{ after: "rewrite", step: () => new Response(null, { status: 308 }) }]);
    expect((await stop(stages, {} as PolicyFlow))?.status).toBe(308);
    expect(seen).toEqual(["r"]);
  });
});
