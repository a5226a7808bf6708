// matchPath probes a host's path object once per candidate it looks up. A request path of
// thousands of elements must not cost one slice and one hash per element (an 8 KB path of
// ~4,000 segments was ~4,000 probes on the traffic port): only the element counts that some
// Prefix key of the host has are probed (HostRoutes.prefixDepths). Probes are counted, not
// timed.
import { describe, expect, test } from "bun:test";
import { buildHost } from "../../src/table/build.ts";
import { matchPath } from "../../src/table/lookup.ts";
import type { HostRoutes } from "../../src/table/types.ts";
import { mkRoute } from "../compile/routes.ts";
import { referenceLookup } from "./reference.ts";
import { assembleTable } from "../../src/table/build.ts";

const P = (path: string) => mkRoute("a.test", path, "Prefix");
const E = (path: string) => mkRoute("a.test", path, "Exact");

/** The entry with its path object wrapped to count lookups, and the count. */
function counting(entry: HostRoutes): { entry: HostRoutes; probes: () => number } {
  let n = 0;
  const paths = new Proxy(entry.paths, {
    get(target, key, receiver) {
      n++;
      return Reflect.get(target, key, receiver);
    },
  });
  return { entry: { ...entry, paths }, probes: () => n };
}

describe("matchPath probes only the element counts a host's Prefix keys have", () => {
  const routes = [P("/"), P("/api/v1"), P("/a/b/c/d"), E("/exact")];
  const host = buildHost("a.test", routes, "exact-host");
  const table = assembleTable([host], null, routes.length);

  const cases: Array<[string, string, number]> = [
    // path, route expected, most probes: one per depth in {0, 2, 4}, plus the Exact probe.
    [`/api/${"x/".repeat(4000)}`, "/", 4],
    [`/api/v1/${"x/".repeat(4000)}`, "/api/v1", 4],
    [`/a/b/c/d/${"z/".repeat(4000)}`, "/a/b/c/d", 4],
    [`/${"a".repeat(8000)}`, "/", 2],
    [`/${"/".repeat(4000)}x`, "/", 4],
    ["/exact", "/exact", 4],
  ];
  for (const [path, want, most] of cases) {
    test(`${path.slice(0, 24)}… (${path.length} characters): ${want}, at most ${most} probes`, () => {
      const c = counting(host);
      const m = matchPath(c.entry, path);
      expect(m?.route.path).toBe(want);
      expect(c.probes()).toBeLessThanOrEqual(most);
      // The same answer as the naive matcher, which looks at every route.
      expect(referenceLookup(table, "a.test", path)?.route).toBe(m?.route);
    });
  }

  test("a host without Prefix routes probes its Exact key only", () => {
    const c = counting(buildHost("a.test", [E("/x"), E("/y/z")], "exact-host"));
    expect(matchPath(c.entry, `/y/${"z/".repeat(3000)}`)).toBeNull();
    expect(c.probes()).toBe(1);
  });

  test("the probes do not grow with the path: 10 and 4,000 extra elements cost the same", () => {
    const short = counting(host);
    matchPath(short.entry, `/api/v1/${"x/".repeat(10)}`);
    const long = counting(host);
    matchPath(long.entry, `/api/v1/${"x/".repeat(4000)}`);
    expect(long.probes()).toBe(short.probes());
  });
});
