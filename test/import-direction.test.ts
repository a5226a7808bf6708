// The one-way data flow (docs/design.md, "Layout") as a test: the pure core (compile/, table/,
// store/, model/) never reaches the I/O side, never reads a clock or arms a timer, Bun.* stays
// in the few folders that own a Bun caveat, and the composition is layered: main.ts → runtime/
// → workers/ → serving/, never back. No file imports itself through others (type imports
// count: a cycle of types is still two files that must be read together), the folders form
// layers (no folder reaches one that reaches it back), and the data plane and the store never
// read the annotation families. A violation names file, line and rule.
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, posix, relative, resolve } from "node:path";

const SRC = resolve(import.meta.dir, "../src");

/**
 * Folders whose code must stay pure: no I/O, no timers, no clock, no Bun. request/ holds the
 * request normaliser that both proxy/ and compile/ (explain) use, so it sits on the pure side;
 * kinds/ holds the policy kinds (contract and build), which the annotation families write and
 * the proxy runs, and http/ the HTTP message rules they and the proxy share.
 */
const PURE_DIRS = ["compile/", "table/", "store/", "model/", "annotations/", "request/", "regex/", "policy/", "kinds/", "http/"] as const;

/**
 * Arrows that would run against the design even where the folders stay acyclic: the data plane
 * runs the table's plain data and the shared parameter contracts (policy/), never the
 * annotation families or the compiler; the store keeps objects and knows no annotation.
 */
const FORBIDDEN_ARROWS: Readonly<Record<string, readonly string[]>> = {
  "proxy/": ["annotations/", "compile/", "store/"],
  "store/": ["annotations/", "compile/", "table/"],
  "policy/": ["annotations/", "compile/", "proxy/"],
  // The kinds run in the proxy through the capabilities it hands them (kinds/types.ts
  // PolicyCaps), never by reaching into it; the families write policies with them.
  "kinds/": ["annotations/", "compile/", "proxy/", "store/"],
  "http/": ["annotations/", "compile/", "proxy/", "store/", "kinds/"],
};

/** What the pure core must not import (paths relative to src/; a trailing / means the folder). */
const FORBIDDEN_FOR_PURE = [
  "proxy/", "tls/", "kube/", "admin/", "files/", "log/", "workers/", "serving/", "runtime/", "main.ts",
  // Of config/, types.ts, units.ts, cidr.ts and address-policy.ts are pure (cidr.ts holds
  // node:net's BlockList, a data structure: no I/O); the rest reads the process environment.
  "config/parse.ts", "config/flags.ts", "config/values.ts",
] as const;

/** Modules with I/O or timers, with or without the `node:` prefix. */
const IO_MODULES = [
  "fs", "fs/promises", "net", "tls", "http", "https", "http2", "dgram", "dns", "child_process",
  "worker_threads", "timers", "timers/promises", "os", "process", "cluster", "readline",
] as const;

/** Global references the pure core must not make (matched on code with comments and strings removed). */
const FORBIDDEN_GLOBALS_FOR_PURE: readonly { name: string; re: RegExp }[] = [
  { name: "Bun.", re: /(?<![\w$.])Bun\s*\./ },
  { name: "setTimeout", re: /(?<![\w$.])setTimeout\b/ },
  { name: "setInterval", re: /(?<![\w$.])setInterval\b/ },
  { name: "setImmediate", re: /(?<![\w$.])setImmediate\b/ },
  { name: "Date.now", re: /(?<![\w$.])Date\s*\.\s*now\b/ },
  { name: "new Date(", re: /\bnew\s+Date\s*\(/ },
  { name: "performance.now", re: /(?<![\w$.])performance\s*\.\s*now\b/ },
  { name: "fetch(", re: /(?<![\w$.])fetch\s*\(/ },
  { name: "globalThis", re: /(?<![\w$.])globalThis\b/ },
  { name: "process.", re: /(?<![\w$.])process\s*\./ },
];

/** The only places allowed to call Bun.* (each Bun caveat gets its comment at the point of use). */
// runtime/ is the composition root split into files (main.ts stays a thin CLI dispatcher);
// serving/ binds the traffic ports (a probe bind, serving/ports.ts).
const BUN_ALLOWED = ["proxy/", "tls/", "kube/", "main.ts", "runtime/", "workers/", "serving/"] as const;

/**
 * Who may import the composition folders. Only main.ts starts the controller (runtime/) or a
 * worker (workers/worker.ts); runtime/ picks a data plane (runtime/local.ts or workers/plane.ts);
 * both serve with serving/, which imports neither of them back.
 */
const IMPORTERS: Readonly<Record<string, readonly string[]>> = {
  "runtime/": ["main.ts", "runtime/"],
  "workers/": ["main.ts", "runtime/", "workers/"],
  "serving/": ["main.ts", "runtime/", "workers/", "serving/"],
};

/** The only folder allowed to write to the console (everything else logs through it). */
const CONSOLE_ALLOWED = ["log/"] as const;

export interface Violation {
  file: string;
  line: number;
  rule: string;
}

const under = (file: string, prefixes: readonly string[]) => prefixes.some((p) => (p.endsWith("/") ? file.startsWith(p) : file === p));

/**
 * Blank out comments (always) and string/regex contents (when `blankStrings`), keeping offsets
 * and newlines so line numbers stay right. Template `${...}` code is kept as code.
 */
export function stripSource(src: string, blankStrings: boolean): string {
  let out = "";
  let i = 0;
  const braces: number[] = []; // depth stack for template `${` nesting
  let depth = 0;
  let prev = ""; // last significant code char, to tell a regex from a division
  const keep = (s: string) => (out += s);
  const blank = (s: string) => (out += s.replace(/[^\n]/g, " "));
  const readString = (q: string) => {
    let j = i + 1;
    while (j < src.length && src[j] !== q && src[j] !== "\n") j += src[j] === "\\" ? 2 : 1;
    const body = src.slice(i + 1, j);
    keep(q);
    blankStrings ? blank(body) : keep(body);
    if (j < src.length) keep(src[j]!);
    i = j + 1;
    prev = q;
  };
  const readTemplate = () => {
    // i points just after the opening backtick or the closing } of a ${...}
    let j = i;
    while (j < src.length && src[j] !== "`" && !(src[j] === "$" && src[j + 1] === "{")) j += src[j] === "\\" ? 2 : 1;
    blankStrings ? blank(src.slice(i, j)) : keep(src.slice(i, j));
    if (src[j] === "`") {
      keep("`");
      i = j + 1;
      prev = "`";
    } else if (j < src.length) {
      keep("${");
      braces.push(depth);
      depth++;
      i = j + 2;
      prev = "{";
    } else i = j;
  };
  while (i < src.length) {
    const c = src[i]!;
    const n = src[i + 1];
    if (c === "/" && n === "/") {
      const end = src.indexOf("\n", i);
      blank(src.slice(i, end < 0 ? src.length : end));
      i = end < 0 ? src.length : end;
    } else if (c === "/" && n === "*") {
      const end = src.indexOf("*/", i + 2);
      const stop = end < 0 ? src.length : end + 2;
      blank(src.slice(i, stop));
      i = stop;
    } else if (c === '"' || c === "'") {
      readString(c);
    } else if (c === "`") {
      keep("`");
      i++;
      readTemplate();
    } else if (c === "/" && (prev === "" || "(,=:[!&|?{};+-*%<>~^".includes(prev))) {
      // A regex literal: skip to its closing slash (outside a character class).
      let j = i + 1;
      let inClass = false;
      while (j < src.length && src[j] !== "\n" && (inClass || src[j] !== "/")) {
        if (src[j] === "\\") j++;
        else if (src[j] === "[") inClass = true;
        else if (src[j] === "]") inClass = false;
        j++;
      }
      keep("/");
      blankStrings ? blank(src.slice(i + 1, j)) : keep(src.slice(i + 1, j));
      i = j;
      prev = "/";
      if (src[i] === "/") {
        keep("/");
        i++;
        prev = "x"; // flags follow; a regex value ends like an identifier
      }
    } else {
      if (c === "{") depth++;
      if (c === "}") {
        depth--;
        if (braces.length > 0 && braces[braces.length - 1] === depth) {
          braces.pop();
          keep("}");
          i++;
          readTemplate();
          continue;
        }
      }
      keep(c);
      if (!/\s/.test(c)) prev = /[\w$]/.test(c) ? "x" : c;
      i++;
    }
  }
  return out;
}

const lineAt = (text: string, index: number) => text.slice(0, index).split("\n").length;

/** Module specifiers of static imports/exports, side-effect imports, dynamic import() and require(). */
export function importsOf(code: string): { spec: string; line: number }[] {
  const out: { spec: string; line: number }[] = [];
  const patterns = [
    /\b(?:import|export)\s+(?:type\s+)?(?:[^;"'`]*?\bfrom\s*)?["']([^"'\n]+)["']/g,
    /\bimport\s*\(\s*["']([^"'\n]+)["']/g,
    /\brequire\s*\(\s*["']([^"'\n]+)["']/g,
  ];
  for (const re of patterns) for (const m of code.matchAll(re)) out.push({ spec: m[1]!, line: lineAt(code, m.index) });
  return out;
}

/** True when the identifier at `end` is a declaration (`name:`, `name?:`, `name(...): T`, `name(...) {`), not a use. */
function isDeclaration(code: string, end: number): boolean {
  let j = end;
  while (/\s/.test(code[j] ?? "")) j++;
  if (code[j] === ":" || code[j] === "?") return true;
  if (code[j] !== "(") return false;
  let d = 0;
  for (; j < code.length; j++) {
    if (code[j] === "(") d++;
    else if (code[j] === ")" && --d === 0) break;
  }
  j++;
  while (/\s/.test(code[j] ?? "")) j++;
  return code[j] === ":" || code[j] === "{";
}

/** Check one file's text; `file` is its path relative to src/ with forward slashes. */
export function scan(file: string, src: string): Violation[] {
  const out: Violation[] = [];
  const withStrings = stripSource(src, false);
  const code = stripSource(src, true);
  const pure = under(file, PURE_DIRS);

  for (const { spec, line } of importsOf(withStrings)) {
    const bare = spec.replace(/^node:/, "");
    if (pure && (IO_MODULES as readonly string[]).includes(bare)) out.push({ file, line, rule: `pure module imports ${spec}` });
    if (!spec.startsWith(".")) continue;
    const target = posix.normalize(posix.join(posix.dirname(file), spec));
    if (pure && under(target, FORBIDDEN_FOR_PURE)) out.push({ file, line, rule: `pure module imports ${target}` });
    for (const [from, targets] of Object.entries(FORBIDDEN_ARROWS)) {
      if (file.startsWith(from) && under(target, targets)) out.push({ file, line, rule: `${from} imports ${target} (${from} may not import ${targets.join(", ")})` });
    }
    for (const [folder, importers] of Object.entries(IMPORTERS)) {
      if (target.startsWith(folder) && !under(file, importers)) out.push({ file, line, rule: `imports ${target} (only ${importers.join(", ")} may)` });
    }
  }

  const checks: { name: string; re: RegExp }[] = [];
  if (pure) checks.push(...FORBIDDEN_GLOBALS_FOR_PURE);
  else if (!under(file, BUN_ALLOWED)) checks.push({ name: "Bun.", re: /(?<![\w$.])Bun\s*\./ });
  if (!under(file, CONSOLE_ALLOWED)) checks.push({ name: "console.", re: /(?<![\w$.])console\s*\./ });
  for (const { name, re } of checks) {
    const global = new RegExp(re.source, "g");
    for (const m of code.matchAll(global)) {
      if (/^\w+$/.test(m[0]) && isDeclaration(code, m.index + m[0].length)) continue;
      out.push({ file, line: lineAt(code, m.index), rule: `${pure ? "pure module" : "module"} references ${name}` });
    }
  }
  return out;
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...sourceFiles(p));
    else if (e.name.endsWith(".ts") && !e.name.endsWith(".test.ts")) out.push(p);
  }
  return out;
}

/** Relative imports of each file (paths relative to src/), from its source text. */
export function importGraph(sources: ReadonlyMap<string, string>): Map<string, string[]> {
  const g = new Map<string, string[]>();
  for (const [file, src] of sources) {
    const targets = importsOf(stripSource(src, false))
      .filter((i) => i.spec.startsWith("."))
      .map((i) => posix.normalize(posix.join(posix.dirname(file), i.spec)))
      .filter((t) => sources.has(t));
    g.set(file, [...new Set(targets)]);
  }
  return g;
}

/** The strongly connected components of more than one node (or a node importing itself): the cycles. */
export function cyclesOf(g: ReadonlyMap<string, readonly string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of g.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const scc: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      scc.push(w);
    } while (w !== v);
    if (scc.length > 1 || (g.get(v) ?? []).includes(v)) out.push(scc.sort());
  };
  for (const v of [...g.keys()].sort()) if (!index.has(v)) visit(v);
  return out;
}

/** The folder graph: `a/ → b/` when a file of a/ imports one of b/ (top-level files stand alone). */
export function folderGraph(g: ReadonlyMap<string, readonly string[]>): Map<string, string[]> {
  const top = (f: string) => (f.includes("/") ? `${f.slice(0, f.indexOf("/"))}/` : f);
  const out = new Map<string, Set<string>>();
  for (const [f, targets] of g) {
    const from = top(f);
    if (!out.has(from)) out.set(from, new Set());
    for (const t of targets) if (top(t) !== from) out.get(from)!.add(top(t));
  }
  return new Map([...out].map(([k, v]) => [k, [...v].sort()]));
}

function readSources(): Map<string, string> {
  return new Map(sourceFiles(SRC).map((p) => [relative(SRC, p).split("\\").join("/"), readFileSync(p, "utf8")] as const));
}

describe("import direction", () => {
  test("src/ follows the one-way rules", () => {
    const sources = readSources();
    expect(sources.size).toBeGreaterThan(5);
    const violations = [...sources].flatMap(([file, src]) => scan(file, src));
    expect(violations.map((v) => `src/${v.file}:${v.line}: ${v.rule}`)).toEqual([]);
  });

  test("no import cycles between files of src/", () => {
    expect(cyclesOf(importGraph(readSources()))).toEqual([]);
  });

  test("the folders of src/ form layers: none reaches one that reaches it back", () => {
    const folders = folderGraph(importGraph(readSources()));
    expect(folders.size).toBeGreaterThan(10);
    expect(cyclesOf(folders)).toEqual([]);
  });
});

describe("the scanner itself", () => {
  const rules = (file: string, src: string) => scan(file, src).map((v) => `${v.line}: ${v.rule}`);

  test("catches planted violations in a pure module", () => {
    const src = [
      'import { thing } from "../proxy/upstream/forward.ts";',
      'import type { Logger } from "../log/logger.ts";',
      'import { readFileSync } from "node:fs";',
      'export { parseArgs } from "../config/parse.ts";',
      "const t = setTimeout(() => {}, 5);",
      "const now = Date.now() + performance.now();",
      "const d = new Date();",
      'const r = await fetch("http://x");',
      "Bun.serve({});",
      'console.log("hi");',
      'const m = await import("../kube/watch.ts");',
    ].join("\n");
    expect(rules("compile/bad.ts", src)).toEqual([
      "1: pure module imports proxy/upstream/forward.ts",
      "2: pure module imports log/logger.ts",
      "3: pure module imports node:fs",
      "4: pure module imports config/parse.ts",
      "11: pure module imports kube/watch.ts",
      "9: pure module references Bun.",
      "5: pure module references setTimeout",
      "6: pure module references Date.now",
      "7: pure module references new Date(",
      "6: pure module references performance.now",
      "8: pure module references fetch(",
      "10: pure module references console.",
    ]);
  });

  test("Bun.* and console outside their folders are caught; allowed places pass", () => {
    expect(rules("admin/app.ts", "const f = Bun.file('x');\nconsole.error(1);")).toEqual([
      "1: module references Bun.",
      "2: module references console.",
    ]);
    expect(rules("proxy/pipeline/listener.ts", "Bun.serve({});")).toEqual([]);
    expect(rules("main.ts", "Bun.serve({});")).toEqual([]);
    expect(rules("log/logger.ts", "console.log(1);")).toEqual([]);
  });

  test("comments, strings, members and declarations are not references", () => {
    const src = [
      "// setTimeout(() => {}); Date.now(); Bun.serve()",
      "/* new Date() */",
      'const s = "console.log(Date.now())";',
      "const t = `fetch(${name}) at Bun.x`;",
      "const re = /setTimeout\\(/g;",
      "interface Clock { now(): number; setTimeout(fn: () => void, ms: number): unknown }",
      "clock.setTimeout(fn, 5); this.fetch(x); obj.Date.now;",
      'import type { Config } from "../config/types.ts";',
      'import { parseDuration } from "../config/units.ts";',
      'import { parseCidrList } from "../config/cidr.ts";',
    ].join("\n");
    expect(rules("store/ok.ts", src)).toEqual([]);
  });

  test("the composition layers: only main.ts imports runtime/; serving/ imports neither runtime/ nor workers/", () => {
    expect(rules("workers/plane.ts", 'import type { DataPlane } from "../runtime/plane.ts";')).toEqual([
      "1: imports runtime/plane.ts (only main.ts, runtime/ may)",
    ]);
    expect(rules("serving/serve.ts", 'import { createWorkerPool } from "../workers/pool.ts";\nimport { run } from "../runtime/run.ts";')).toEqual([
      "1: imports workers/pool.ts (only main.ts, runtime/, workers/ may)",
      "2: imports runtime/run.ts (only main.ts, runtime/ may)",
    ]);
    expect(rules("admin/app.ts", 'import { serveTraffic } from "../serving/serve.ts";')).toEqual([
      "1: imports serving/serve.ts (only main.ts, runtime/, workers/, serving/ may)",
    ]);
    expect(rules("main.ts", 'import { run } from "./runtime/run.ts";\nimport { runWorker } from "./workers/worker.ts";')).toEqual([]);
    expect(rules("runtime/local.ts", 'import { serveTraffic } from "../serving/serve.ts";')).toEqual([]);
    expect(rules("workers/worker.ts", 'import { serveTraffic } from "../serving/serve.ts";')).toEqual([]);
  });

  test("a cycle is found through type imports too, and named with every file in it", () => {
    const sources = new Map([
      ["proxy/a.ts", 'import type { B } from "./b.ts";'],
      ["proxy/b.ts", 'import { c } from "../table/c.ts";'],
      ["table/c.ts", 'import type { A } from "../proxy/a.ts";\nimport { d } from "./d.ts";'],
      ["table/d.ts", "export const d = 1;"],
    ]);
    expect(cyclesOf(importGraph(sources))).toEqual([["proxy/a.ts", "proxy/b.ts", "table/c.ts"]]);
    expect(cyclesOf(folderGraph(importGraph(sources)))).toEqual([["proxy/", "table/"]]);
    sources.set("table/c.ts", 'import { d } from "./d.ts";');
    expect(cyclesOf(importGraph(sources))).toEqual([]);
    expect(cyclesOf(folderGraph(importGraph(sources)))).toEqual([]);
  });

  test("the data plane and the store never import the annotation families", () => {
    expect(rules("proxy/policies/canary.ts", 'import type { CanaryRules } from "../../annotations/canary.ts";')).toEqual([
      "1: proxy/ imports annotations/canary.ts (proxy/ may not import annotations/, compile/, store/)",
    ]);
    expect(rules("store/store.ts", 'import { authSecretKey } from "../annotations/basic-auth.ts";')).toEqual([
      "1: store/ imports annotations/basic-auth.ts (store/ may not import annotations/, compile/, table/)",
    ]);
    expect(rules("proxy/policies/canary.ts", 'import type { CanaryRules } from "../../policy/params.ts";')).toEqual([]);
  });

  test("a policy kind reaches the I/O side only through its capabilities", () => {
    expect(rules("kinds/authentication.ts", 'import { verifyPassword } from "../proxy/crypt/crypt.ts";\nconst r = await fetch("http://auth");')).toEqual([
      "1: pure module imports proxy/crypt/crypt.ts",
      "1: kinds/ imports proxy/crypt/crypt.ts (kinds/ may not import annotations/, compile/, proxy/, store/)",
      "2: pure module references fetch(",
    ]);
    expect(rules("kinds/access.ts", 'import { isIP } from "node:net";')).toEqual(["1: pure module imports node:net"]);
    expect(rules("kinds/limits.ts", 'import type { Limiter } from "./types.ts";\nconst t = caps.now();')).toEqual([]);
  });

  test("code inside a template substitution is still scanned", () => {
    expect(rules("table/t.ts", "const s = `a ${Date.now()} b`;")).toEqual(["1: pure module references Date.now"]);
  });
});
