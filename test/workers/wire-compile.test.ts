// The compile tests' random edits (test/compile/generator.ts, with its hostile paths: regexes RE2
// refuses, rewrite targets naming missing groups), compiled by a long-lived Compiler, then
// handed to the workers as they get them: the whole table through JSON (a worker's first table,
// after a restart), and a delta from the previous table (a running worker). Every request of a
// probe set must get the same answer from the primary's table, from both decoded ones, and from
// explain: a host whose paths were all refused is still a host (ingress-nginx keeps its server
// block: controller.go createServers gives every rule's host a server with a "/" location to the
// default backend), so it answers as one with no paths, never with another host's rules.
import { describe, expect, test } from "bun:test";
import { Compiler } from "../../src/compile/compile.ts";
import { explain } from "../../src/compile/explain.ts";
import { Store } from "../../src/store/store.ts";
import { lookup } from "../../src/table/lookup.ts";
import type { Match, RouteTable } from "../../src/table/types.ts";
import { applyDelta, decodeTable, encodeDelta, encodeTable, type BackendRegistry, type TableProblem, type WireDelta, type WireTable } from "../../src/table/wire.ts";
import { DEFAULT_COMPILE_CONFIG } from "../compile/config.ts";
import { generator } from "../compile/generator.ts";
import { loadFixture } from "../compile/snapshot.ts";

/** What a request's answer depends on, as plain data. */
function answer(m: Match | null): unknown {
  if (m === null) return "404";
  const r = m.route;
  const regex = m.regex ? { location: m.regex.location, captures: m.regex.captures?.groups ?? null } : null;
  return { via: m.via, hostKey: m.hostKey, ingress: r.ingress, path: r.path, pathType: r.pathType, backend: r.backend.id, stages: r.options.stages?.map((s) => s.kind) ?? null, regex };
}

const HOSTS = ["x.test", "y.test", "q.w.test", "z.w.test", "a.test", "www.a.test", "www.x.test", "10.0.0.1", "a.x.test", "other.test"];
const PATHS = ["/", "/a", "/a/b", "/api", "/api/", "/api/v1", "/api/v2/x", "/API", "/static/x", "/a//b", "/%7Euser", "/a;b", "/x", "/app", "/aa", "/(a)"];

/** Through JSON, as Bun's IPC carries it. */
const viaJson = <T>(x: T): T => JSON.parse(JSON.stringify(x)) as T;

describe("compiled tables through the wire answer as the primary's", () => {
  // Seeds whose runs reach regex hosts left with no route (the case a worker could not decode);
  // a change to the generator may need others (the last assertions say when).
  for (const seed of [3, 16, 19]) {
    test(`seed ${seed}: 250 bursts of hostile edits, whole table and deltas`, () => {
      const next = generator(seed, { hostile: true });
      const store = new Store();
      const compiler = new Compiler(DEFAULT_COMPILE_CONFIG);
      const sender: BackendRegistry = new Map();
      const receiver: BackendRegistry = new Map();
      const problems: TableProblem[] = [];
      const onProblem = (p: TableProblem) => void problems.push(p);
      let prev: RouteTable | null = null;
      let worker: RouteTable | null = null;
      let compared = 0;
      let emptyHosts = 0;
      let emptyRegexHosts = 0;
      let refused = 0;
      for (let step = 0; step < 250; step++) {
        for (let k = 0; k <= step % 3; k++) store.apply(next(store));
        const snap = store.snapshot();
        const result = compiler.compile(snap);
        const table = result.table;
        refused += result.diagnostics.filter((d) => d.reason === "InvalidPath" || d.reason === "InvalidAnnotation").length;
        for (const e of [...table.exact.values(), ...table.wildcard.values()]) {
          if (e.routes.length > 0) continue;
          emptyHosts++;
          if (e.regex !== null) emptyRegexHosts++;
        }
        // A restarted worker: the whole table. Its own registry, as the pool resets it.
        const full = decodeTable(viaJson(encodeTable(table)), new Map(), { onProblem });
        // A running worker: a delta from the table it has.
        if (prev === null || worker === null) worker = decodeTable(viaJson(encodeTable(table, sender)), receiver, { onProblem });
        else worker = applyDelta(worker, viaJson(encodeDelta(prev, table, sender)) as WireDelta, receiver, onProblem);
        prev = table;
        expect({ step, routes: full.routeCount }).toEqual({ step, routes: table.routeCount });
        for (const host of HOSTS) {
          for (const path of PATHS) {
            const want = answer(lookup(table, host, path));
            const got = { full: answer(lookup(full, host, path)), delta: answer(lookup(worker, host, path)) };
            if (JSON.stringify(got) !== JSON.stringify({ full: want, delta: want })) expect({ step, host, path, ...got }).toEqual({ step, host, path, full: want, delta: want });
            compared++;
          }
        }
        if (step % 15 === 0) {
          // explain reads the primary's table: the host entry and outcome it reports are the workers'.
          for (const host of ["www.a.test", "a.test", "x.test", "other.test"]) {
            const r = explain(snap, DEFAULT_COMPILE_CONFIG, { host, path: "/a", scheme: "http" }, compiler);
            const m = lookup(full, host, "/a");
            const outcome = m === null ? "404" : m.via === "default" ? "default" : m.route.source === "implicitRoot" ? "implicit-root" : "route";
            expect({ step, host, outcome: r.outcome }).toEqual({ step, host, outcome });
          }
        }
      }
      // The compiler never hands a worker an entry it cannot build.
      expect(problems).toEqual([]);
      expect(compared).toBe(250 * HOSTS.length * PATHS.length);
      // The generator reaches the cases this is about: refused paths, and hosts left with none.
      expect(refused).toBeGreaterThan(0);
      expect(emptyHosts).toBeGreaterThan(0);
      expect(emptyRegexHosts).toBeGreaterThan(0);
    });
  }
});

describe("hosts whose every path is refused, compiled from real objects", () => {
  // One host in regex mode per way RE2 (or the rewrite) refuses its only path, one host whose
  // only path is not a literal path, and a hostless rule that must not answer for any of them.
  const refused: [string, string, Record<string, string>][] = [
    ["look.test", "/(?=x)", { "use-regex": "true" }],
    ["back.test", "/(a)\\1", { "use-regex": "true" }],
    ["range.test", "/a{2,1}", { "use-regex": "true" }],
    ["rewrite.test", "/[", { "rewrite-target": "/$1" }],
    ["www.a.test", "/a?b", {}],
  ];
  const ing = (name: string, host: string | null, path: string, ann: Record<string, string>) => `
kind: Ingress
apiVersion: networking.k8s.io/v1
metadata: { name: ${name}, namespace: t, annotations: ${JSON.stringify(Object.fromEntries(Object.entries(ann).map(([k, v]) => [`nginx.ingress.kubernetes.io/${k}`, v])))} }
spec:
  ingressClassName: portico
  rules: [{ ${host === null ? "" : `host: ${JSON.stringify(host)}, `}http: { paths: [{ path: ${JSON.stringify(path)}, pathType: ImplementationSpecific, backend: { service: { name: web, port: { number: 80 } } } }] } }]
`;
  const yaml = [
    "kind: Service\napiVersion: v1\nmetadata: { name: web, namespace: t }\nspec: { ports: [{ port: 80 }] }\n",
    ing("catch-all", null, "/", {}),
    ...refused.map(([host, path, ann], i) => ing(`bad-${i}`, host, path, ann)),
  ].join("---\n");
  const table = new Compiler(DEFAULT_COMPILE_CONFIG).compile(loadFixture(yaml).snapshot).table;

  test("the primary keeps each as a host with no routes: 404, not the hostless rule", () => {
    for (const [host] of refused) {
      expect({ host, routes: table.exact.get(host)?.routes.length }).toEqual({ host, routes: 0 });
      // The host's implicit "/" location when its Ingress has policies (rewrite.test's
      // rewrite-target): the default backend, none here, so a 404 either way.
      const m = lookup(table, host, "/a");
      expect({ host, m: m === null ? "404" : `${m.route.source} ${m.hostKey} ${m.route.backend.id}` }).toEqual({ host, m: host === "rewrite.test" ? "implicitRoot rewrite.test (default backend)" : "404" });
    }
    expect((answer(lookup(table, "other.test", "/a")) as { hostKey: string }).hostKey).toBe("*");
  });

  test("a worker decoding the whole table, or a delta, answers the same", () => {
    const full = decodeTable(viaJson(encodeTable(table)) as WireTable);
    const registry: BackendRegistry = new Map();
    const empty = new Compiler(DEFAULT_COMPILE_CONFIG).compile(loadFixture("").snapshot).table;
    const rx = decodeTable(viaJson(encodeTable(empty, registry)), new Map());
    const delta = applyDelta(rx, viaJson(encodeDelta(empty, table, registry)), new Map(registry));
    for (const host of [...refused.map(([h]) => h), "other.test"]) {
      for (const path of ["/", "/a", "/x", "/aa"]) {
        const want = answer(lookup(table, host, path));
        expect({ host, path, full: answer(lookup(full, host, path)), delta: answer(lookup(delta, host, path)) }).toEqual({ host, path, full: want, delta: want });
      }
    }
  });
});
