// Micro-benchmark behind the engine choice in docs/design.md "Regular expressions": the cost
// of one regex-mode path match in re2js (through src/regex) against JavaScript's RegExp (a
// backtracking engine, shown for scale only: it is not safe for tenant patterns), and the
// per-host set against testing 50 locations one by one.
//   nice -n 10 bun bench/regex-match.ts
// CPU only, no sockets; a few seconds.
import { compilePathRegex, type PathRegex, RegexLocationSet } from "../src/regex/index.ts";

const N = 200_000;
const WARM = 20_000;

function nsPer(inputs: readonly string[], f: (s: string) => unknown): number {
  let sink = 0;
  for (let i = 0; i < WARM; i++) if (f(inputs[i % inputs.length]!)) sink++;
  const t0 = Bun.nanoseconds();
  for (let i = 0; i < N; i++) if (f(inputs[i % inputs.length]!)) sink++;
  const ns = (Bun.nanoseconds() - t0) / N;
  if (sink < 0) throw new Error("unreachable"); // keeps the calls from being optimised away
  return ns;
}

function compiled(p: string): PathRegex {
  const r = compilePathRegex(p);
  if (!r.ok) throw new Error(r.reason);
  return r.re;
}

const rows: [string, number][] = [];
const PATTERN = "/api/v[0-9]+/(users|orders)(/|$)(.*)";
const cases = {
  hit: ["/api/v2/users/42/profile", "/API/V10/orders"],
  miss: ["/static/app.js", "/api/v1/products/1"],
};
const js = new RegExp(`^${PATTERN}`, "i");
const re = compiled(PATTERN);
for (const [name, inputs] of Object.entries(cases)) {
  rows.push([`RegExp exec (captures), ${name}`, nsPer(inputs, (s) => js.exec(s))]);
  rows.push([`re2js PathRegex.test, ${name}`, nsPer(inputs, (s) => re.test(s))]);
  rows.push([`re2js PathRegex.match (captures), ${name}`, nsPer(inputs, (s) => re.match(s))]);
}

const many = Array.from({ length: 50 }, (_, i) => `/svc${i}/v[0-9]+/(items|orders)(/|$)(.*)`);
const manyRe = many.map(compiled);
const manyJs = many.map((p) => new RegExp(`^${p}`, "i"));
const set = new RegexLocationSet(manyRe);
const probes = ["/svc49/v1/items/3", "/svc0/v2/orders", "/nothing/here"];
rows.push(["50 locations: RegExp test in order", nsPer(probes, (s) => manyJs.findIndex((r) => r.test(s)))]);
rows.push(["50 locations: re2js PathRegex.test in order", nsPer(probes, (s) => manyRe.findIndex((r) => r.test(s)))]);
rows.push(["50 locations: re2js RegexLocationSet.firstMatch", nsPer(probes, (s) => set.firstMatch(s))]);

const width = Math.max(...rows.map(([n]) => n.length));
for (const [name, ns] of rows) console.log(`${name.padEnd(width)}  ${ns.toFixed(0).padStart(7)} ns`);
