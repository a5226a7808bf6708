import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { stagePolicy } from "../policy/contract.ts";
import * as K from "../kinds/index.ts";
import type { StagePolicy } from "../policy/stages.ts";
import { parseAnnotations } from "./annotations.ts";
import { assembleStages } from "./stages.ts";

const kinds = (s: readonly StagePolicy[] | null) => (s ?? []).map((p) => p.kind);

describe("assembleStages", () => {
  test("orders what the suppliers hand in by their contracts' stages, whatever the order supplied", () => {
    const headers = stagePolicy(K.HEADERS, { request: [["x-a", "1"]], response: [] });
    const cors = stagePolicy(K.CORS, { enabled: true, origins: "*", methods: "GET", headers: "", expose: null, credentials: false, maxAge: 1 });
    const cert = stagePolicy(K.CERTIFICATE_REFUSE, { status: 403, reason: "ca" });
    const range = stagePolicy(K.SOURCE_RANGE, { allow: ["10.0.0.0/8"], deny: null });
    const limits = stagePolicy(K.LIMITS, { rps: 1, rpm: 0, connections: 0, burstMultiplier: 5, allow: [], denied: false });
    expect(kinds(assembleStages(headers, [range, cors], null, limits, undefined, cert))).toEqual(["certificate-refuse", "cors", "limits", "source-range", "headers"]);
  });

  test("places a policy by its contract's stage, not by the stage written on it", () => {
    // A hand-written policy that names the wrong stage still runs where its kind belongs.
    const wrong: StagePolicy = { stage: "forwarding", kind: K.CLIENT_CERT.id, params: {} };
    const refuse = stagePolicy(K.REFUSE, { status: 503, reason: "r" });
    expect(kinds(assembleStages(refuse, wrong))).toEqual(["client-cert", "refuse"]);
  });

  test("keeps the order supplied within one stage, and freezes the list through", () => {
    const first = stagePolicy(K.REFUSE, { status: 503, reason: "first" });
    const deny = stagePolicy(K.HEADER_DENY, { rules: [[403, "x-a", "~", "b"]] });
    const second = stagePolicy(K.REFUSE, { status: 503, reason: "second" });
    const out = assembleStages([first, deny], second)!;
    expect(out.map((p) => p.params.reason ?? p.kind)).toEqual(["first", "header-deny", "second"]);
    expect(Object.isFrozen(out)).toBe(true);
    expect(Object.isFrozen(out[1]!.params.rules)).toBe(true);
  });

  test("nothing supplied is no list at all", () => {
    expect(assembleStages()).toBeNull();
    expect(assembleStages(null, [], undefined)).toBeNull();
  });

  test("an Ingress's families supply in registry order; a refusal Portico must make comes first among the refusals", () => {
    const p = parseAnnotations({
      "nginx.ingress.kubernetes.io/configuration-snippet": "deny all;",
      "portico.dev/deny-request-headers": "403 x-block ~ yes",
      "nginx.ingress.kubernetes.io/whitelist-source-range": "not-a-cidr",
      "nginx.ingress.kubernetes.io/enable-cors": "true",
      "nginx.ingress.kubernetes.io/upstream-vhost": "backend.internal",
    });
    const stages = p.options.stages ?? [];
    expect(stages.map((s) => [s.stage, s.kind])).toEqual([
      ["denied", "refuse"],
      ["denied", "refuse"],
      ["denied", "header-deny"],
      ["cors", "cors"],
      ["forwarding", "upstream-vhost"],
    ]);
    // The snippet's refusal is the one a request gets: what its diagnostic promises.
    expect(String(stages[0]!.params.reason)).toContain("configuration-snippet");
  });
});

// Blank out comments so that prose naming the functions is not read as code.
const code = (src: string) => src.replace(/\/\*[\s\S]*?\*\//g, (m) => m.replace(/[^\n]/g, " ")).replace(/\/\/[^\n]*/g, "");

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return e.name.endsWith(".ts") && !e.name.endsWith(".test.ts") ? [p] : [];
  });
}

const SRC = resolve(import.meta.dir, "..");

/**
 * Every `stages:` property a module of src/ writes, with the start of its value: a route's
 * stage list may only come from assembleStages (or be none), and a family's `stages` is a
 * supplier function. Type annotations (`readonly …`, a typed `const`) are not writes.
 */
function stageWrites(file: string, src: string): string[] {
  const out: string[] = [];
  const text = code(src);
  const re = /(\b(?:const|let|var)\s+)?\bstages\??:\s*([^\n]{0,40})/g;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    if (m[1] !== undefined) continue;
    const value = m[2] as string;
    if (/^(readonly\b|null\b|assembleStages\(|\([^)]*\)\s*=>)/.test(value)) continue;
    out.push(`${file}:${text.slice(0, m.index).split("\n").length}: stages: ${value.trim()}`);
  }
  return out;
}

describe("the stage list is put together in one place", () => {
  test("no module of src/ but compile/stages.ts builds or orders a route's stage list", () => {
    const found: string[] = [];
    for (const path of sources(SRC)) {
      const file = relative(SRC, path).split("\\").join("/");
      if (file === "compile/stages.ts") continue;
      const src = readFileSync(path, "utf8");
      // The host's server-level answers, rebuilt from the table on the worker's side (table/wire.ts
      // decodes with buildHost, without the compiler): the www redirect server's one policy. They
      // take assembled lists and order nothing.
      if (file !== "table/build.ts") found.push(...stageWrites(file, src));
      const body = code(src);
      // Sorting by stage: only the assembler; the runner and explain interleave the proxy's own
      // checks with an assembled list (proxy/policies/run.ts, compile/answer.ts).
      if (/\bstageIndex\s*\(/.test(body) && !["policy/stages.ts", "proxy/policies/run.ts", "compile/answer.ts"].includes(file)) found.push(`${file}: orders by stageIndex`);
      if (/\borderStages\b/.test(body)) found.push(`${file}: orderStages`);
    }
    expect(found).toEqual([]);
  });

  test("the scan sees a hand-made list and a re-sort", () => {
    expect(stageWrites("x.ts", "const o = { ...base, stages: orderStages([a, b]) };\nconst q = { stages: [policy] };")).toEqual([
      "x.ts:1: stages: orderStages([a, b]) };",
      "x.ts:2: stages: [policy] };",
    ]);
    expect(stageWrites("y.ts", "const o = { stages: assembleStages(a, b), n: { stages: null } };\nconst stages: StagePolicy[] = [];\nconst f = { stages: (p) => [] };\ninterface R { readonly stages: readonly X[] | null }")).toEqual([]);
  });
});
