// One behaviour suite, run against the table lookup and the naive reference matcher, plus a
// seeded property test that both agree on random rule sets.
import { describe, expect, test } from "bun:test";
import { buildTable } from "../../src/table/build.ts";
import { lookup } from "../../src/table/lookup.ts";
import { referenceLookup } from "../table/reference.ts";
import { isPathPrefix, isSegmentPrefix, pathSegments } from "../../src/table/segments.ts";
import type { Match, Route, RouteTable } from "../../src/table/types.ts";
import { mkRoute } from "./routes.ts";

type Lookup = (t: RouteTable, host: string, path: string) => Match | null;
const impls: [string, Lookup][] = [
  ["table lookup", lookup],
  ["referenceLookup", referenceLookup],
];

const show = (m: Match | null): string =>
  m === null ? "404" : m.via === "default" ? "default" : `${m.route.host ?? "*"} ${m.route.pathType} ${m.route.path}`;

const E = (host: string | null, path: string) => mkRoute(host, path, "Exact");
const P = (host: string | null, path: string) => mkRoute(host, path, "Prefix");

describe.each(impls)("%s", (_name, find) => {
  const at = (routes: Route[], host: string, path: string, def: Route | null = null) =>
    show(find(buildTable(routes, def), host, path));

  test("Exact is whole-path, case-sensitive, trailing slash significant", () => {
    const r = [E("a.test", "/foo")];
    expect(at(r, "a.test", "/foo")).toBe("a.test Exact /foo");
    expect(at(r, "a.test", "/foo/")).toBe("404");
    expect(at(r, "a.test", "/Foo")).toBe("404");
    expect(at(r, "a.test", "/foo/bar")).toBe("404");
  });

  test("Prefix matches element-wise and ignores one trailing slash", () => {
    const r = [P("a.test", "/foo/bar")];
    expect(at(r, "a.test", "/foo/bar")).toBe("a.test Prefix /foo/bar");
    expect(at(r, "a.test", "/foo/bar/")).toBe("a.test Prefix /foo/bar");
    expect(at(r, "a.test", "/foo/bar/baz")).toBe("a.test Prefix /foo/bar");
    expect(at(r, "a.test", "/foo/barbaz")).toBe("404");
    expect(at(r, "a.test", "/foo")).toBe("404");
    expect(at([P("a.test", "/foo/")], "a.test", "/foo")).toBe("a.test Prefix /foo/");
  });

  test("path keys that name object properties or array indexes are plain paths", () => {
    const odd = ["/__proto__", "/constructor", "/toString", "/hasOwnProperty", "/0", "/4294967295", "/__proto__/x"];
    const r = [...odd.map((p) => E("a.test", p)), P("a.test", "/__proto__"), P("a.test", "/1"), P("a.test", "/valueOf")];
    for (const p of odd) expect(at(r, "a.test", p)).toBe(`a.test Exact ${p}`);
    expect(at(r, "a.test", "/__proto__/y")).toBe("a.test Prefix /__proto__");
    expect(at(r, "a.test", "/1/2")).toBe("a.test Prefix /1");
    expect(at(r, "a.test", "/valueOf")).toBe("a.test Prefix /valueOf");
    for (const p of ["/prototype", "/toString/x", "/2", "/__defineGetter__", "/"]) expect(at(r, "a.test", p)).toBe("404");
    expect(at([P("a.test", "/")], "a.test", "/__proto__")).toBe("a.test Prefix /");
  });

  test("Prefix / matches everything, including the empty-element path //", () => {
    const r = [P("a.test", "/")];
    for (const p of ["/", "/x", "/x/y/", "//"]) expect(at(r, "a.test", p)).toBe("a.test Prefix /");
  });

  test("longest written path wins; Exact beats Prefix at equal length", () => {
    const r = [P("a.test", "/foo"), P("a.test", "/foo/"), E("a.test", "/foo"), P("a.test", "/")];
    expect(at(r, "a.test", "/foo/x")).toBe("a.test Prefix /foo/");
    // Prefix /foo/ (5 chars) is longer than Exact /foo (4) and also matches /foo.
    expect(at(r, "a.test", "/foo")).toBe("a.test Prefix /foo/");
    expect(at([P("a.test", "/foo"), E("a.test", "/foo")], "a.test", "/foo")).toBe("a.test Exact /foo");
    expect(at(r, "a.test", "/other")).toBe("a.test Prefix /");
  });

  test("host tiers: exact beats wildcard beats hostless, with no fallthrough", () => {
    const r = [P("a.foo.test", "/only"), P("*.foo.test", "/"), P(null, "/")];
    expect(at(r, "a.foo.test", "/only/x")).toBe("a.foo.test Prefix /only");
    // The exact host entry is chosen even though its paths do not match: 404, not *.foo.test.
    expect(at(r, "a.foo.test", "/elsewhere")).toBe("404");
    expect(at(r, "b.foo.test", "/x")).toBe("*.foo.test Prefix /");
    expect(at(r, "foo.test", "/x")).toBe("* Prefix /");
    expect(at(r, "a.b.foo.test", "/x")).toBe("* Prefix /");
    expect(at(r, "other.test", "/x")).toBe("* Prefix /");
  });

  test("wildcard matches exactly one non-empty label", () => {
    const r = [P("*.foo.test", "/")];
    expect(at(r, "bar.foo.test", "/")).toBe("*.foo.test Prefix /");
    expect(at(r, "foo.test", "/")).toBe("404");
    expect(at(r, ".foo.test", "/")).toBe("404");
    expect(at(r, "a.bar.foo.test", "/")).toBe("404");
  });

  test("default route when the chosen host entry or no host matches; else 404", () => {
    const def = { ...P(null, "/"), source: "defaultBackend" as const };
    const r = [E("a.test", "/x")];
    expect(at(r, "a.test", "/y", def)).toBe("default");
    expect(at(r, "b.test", "/y", def)).toBe("default");
    expect(at(r, "a.test", "/x", def)).toBe("a.test Exact /x");
    expect(at(r, "b.test", "/y")).toBe("404");
  });

  test("empty path elements only match the same spelling", () => {
    const r = [P("a.test", "/a//b")];
    expect(at(r, "a.test", "/a//b/c")).toBe("a.test Prefix /a//b");
    expect(at(r, "a.test", "/a/b")).toBe("404");
  });
});

// Seeded xorshift32 so a failure is reproducible from the printed seed.
function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 0x1_0000_0000;
  };
}

describe("property: table lookup agrees with referenceLookup", () => {
  const HOSTS = ["a.x.test", "b.x.test", "x.test", "*.x.test", "*.y.x.test", "c.y.x.test", null];
  const REQ_HOSTS = ["a.x.test", "b.x.test", "x.test", "c.y.x.test", "d.y.x.test", "q.test", "a.b.x.test"];
  const SEGS = ["a", "b", "ab", "", "a.b"];

  test("3000 random rule sets x 20 requests", () => {
    const seed = 0x5eed;
    const rand = rng(seed);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;
    const randPath = () => {
      const n = Math.floor(rand() * 4);
      let p = "";
      for (let i = 0; i < n; i++) p += `/${pick(SEGS)}`;
      if (p === "" || rand() < 0.3) p += "/";
      return p;
    };
    let compared = 0;
    let matched = 0;
    for (let round = 0; round < 3000; round++) {
      const seen = new Set<string>();
      const routes: Route[] = [];
      const count = 1 + Math.floor(rand() * 8);
      for (let i = 0; i < count; i++) {
        const host = pick(HOSTS);
        const type = rand() < 0.5 ? "Exact" : "Prefix";
        const path = randPath();
        // compile/ removes same host+path+type conflicts before the table is built.
        const key = `${host} ${type} ${path}`;
        if (seen.has(key)) continue;
        seen.add(key);
        routes.push(mkRoute(host, path, type, `ing${i}`, i));
      }
      const def = rand() < 0.2 ? { ...mkRoute(null, "/", "Prefix", "def"), source: "defaultBackend" as const } : null;
      const table = buildTable(routes, def);
      for (let q = 0; q < 20; q++) {
        const host = pick(REQ_HOSTS);
        const path = randPath();
        const a = lookup(table, host, path);
        const b = referenceLookup(table, host, path);
        if (a?.route !== b?.route || a?.via !== b?.via) {
          throw new Error(`seed ${seed} round ${round}: ${host}${path} lookup=${show(a)} reference=${show(b)} routes=${JSON.stringify(routes.map((r) => [r.host, r.pathType, r.path]))}`);
        }
        compared++;
        if (a !== null) matched++;
      }
    }
    expect(compared).toBe(60_000);
    // The generator must actually exercise matches, not only 404s.
    expect(matched).toBeGreaterThan(20_000);
  });
});

test("isPathPrefix is isSegmentPrefix over pathSegments, on every pair of tricky paths", () => {
  // Empty elements, trailing slashes, no leading slash, and prefixes that end inside an element.
  const paths = ["", "/", "//", "///", "/a", "/a/", "/a//", "/a//b", "/a/b", "/a/b/", "/ab", "/a/bc", "a", "a/b", "/a/b/c", "/b", "//a", "/%2F"];
  let matched = 0;
  for (const rule of paths) {
    for (const path of paths) {
      const want = isSegmentPrefix(pathSegments(rule), pathSegments(path));
      expect({ rule, path, got: isPathPrefix(rule, path) }).toEqual({ rule, path, got: want });
      if (want) matched++;
    }
  }
  expect(matched).toBeGreaterThan(50);
});
