// Explain's cost at 10,000 Ingresses, as the admin endpoint pays it: the controller's
// Compiler has compiled the live snapshot, and each /debug/explain call reads that compile in
// steps (explainSteps), the event loop running between them. Reported per call: the longest
// step (what blocks the event loop) and the whole call. Also the cost of one Ingress edit
// for the same Compiler (the controller's per-change compile), and, for comparison, explain
// with a fresh Compiler (a full compile, as the CLI does). In process, no network; about
// 10 s. `bun bench/explain.ts [--ingresses N] [--calls N]`
import { parseArgs } from "node:util";
import { Compiler } from "../src/compile/compile.ts";
import { DEFAULT_COMPILE_CONFIG } from "../test/compile/config.ts";
import { explain, explainSteps, type ExplainRequest, type ExplainResult } from "../src/compile/explain.ts";
import type { Ingress } from "../src/model/schemas.ts";
import type { Snapshot } from "../src/store/types.ts";
import { syntheticSnapshot } from "../test/compile/scale.ts";
import { median } from "./lib/report.ts";

const { values: flags } = parseArgs({ options: { ingresses: { type: "string", default: "10000" }, calls: { type: "string", default: "50" } } });
const n = Number(flags.ingresses);
const calls = Number(flags.calls);
const config = DEFAULT_COMPILE_CONFIG;

/** One Ingress of the snapshot with an extra Exact path: a new object, as the store makes. */
function edited(snapshot: Snapshot, k: number): Snapshot {
  const i = (k * 7919) % n;
  const key = `team-${i % 50}/app-${i}`;
  const ing = snapshot.ingresses.get(key) as Ingress;
  const rule = ing.spec.rules?.[0];
  if (!rule?.http) throw new Error(`no rule in ${key}`);
  const paths = [...rule.http.paths, { path: `/edit-${k}`, pathType: "Exact" as const, backend: rule.http.paths[0]!.backend }];
  const next: Ingress = { ...ing, metadata: { ...ing.metadata, resourceVersion: String(k) }, spec: { ...ing.spec, rules: [{ ...rule, http: { paths } }] } };
  return { ...snapshot, ingresses: new Map(snapshot.ingresses).set(key, next) };
}

const ms = (t0: number) => performance.now() - t0;
const fmt = (x: number) => x.toFixed(2);

let snapshot = syntheticSnapshot(n);
const compiler = new Compiler(config);
let t0 = performance.now();
compiler.compile(snapshot);
console.log(`${n} Ingresses: first compile ${fmt(ms(t0))} ms`);

const edits: number[] = [];
for (let k = 1; k <= 30; k++) {
  snapshot = edited(snapshot, k);
  t0 = performance.now();
  compiler.compile(snapshot);
  edits.push(ms(t0));
}
console.log(`one Ingress edited, then compile: median ${fmt(median(edits))} ms, max ${fmt(Math.max(...edits))} ms (30 edits)`);

// Count compiles: explain must not run one for the snapshot the compiler already compiled.
let compiles = 0;
const compile = compiler.compile.bind(compiler);
compiler.compile = (s) => {
  compiles++;
  return compile(s);
};

const requests: [string, ExplainRequest][] = [
  ["hit, exact host", { host: "app-7.example.com", path: "/api/v1/items", scheme: "https" }],
  ["hit, wildcard host", { host: "x.w10.example.com", path: "/", scheme: "http" }],
  ["unknown host, path /", { host: "nomatch.test", path: "/", scheme: "http" }],
  ["8 KB path", { host: "app-7.example.com", path: `/${"a/".repeat(4095)}`, scheme: "http" }],
];
/** One call as the admin endpoint makes it: the steps, then the JSON answer. */
function call(q: ExplainRequest): { longest: number; total: number; bytes: number } {
  const steps = explainSteps(snapshot, config, q, compiler);
  let longest = 0;
  let total = 0;
  let result: ExplainResult;
  for (;;) {
    const t = performance.now();
    const r = steps.next();
    const step = ms(t);
    total += step;
    longest = Math.max(longest, step);
    if (r.done) {
      result = r.value;
      break;
    }
  }
  const t = performance.now();
  const bytes = JSON.stringify(result).length;
  const json = ms(t);
  return { longest: Math.max(longest, json), total: total + json, bytes };
}

for (const [label, q] of requests) {
  // The first call finds the JIT cold, as an occasional admin call does.
  const first = call(q);
  const runs = Array.from({ length: calls }, () => call(q));
  const longest = runs.map((r) => r.longest);
  const total = runs.map((r) => r.total);
  console.log(
    `explain ${label}: first call longest step ${fmt(first.longest)} ms, whole ${fmt(first.total)} ms; ` +
      `then longest step median ${fmt(median(longest))} max ${fmt(Math.max(...longest))} ms, whole median ${fmt(median(total))} ms; ${first.bytes} bytes`,
  );
}
console.log(`compiles during those explains: ${compiles}`);

const fresh: number[] = [];
for (let i = 0; i < 3; i++) {
  t0 = performance.now();
  JSON.stringify(explain(snapshot, config, requests[0]![1]));
  fresh.push(ms(t0));
}
console.log(`explain with a fresh Compiler (the CLI's way, a full compile): median ${fmt(median(fresh))} ms`);
