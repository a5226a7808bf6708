// The table crosses the primary → worker IPC as JSON: a decoded table must route every request
// exactly as the original does, over every golden fixture (DESIGN §6.6) and a set of probes
// built from the table's own hosts and paths.
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { compile } from "../../src/compile/compile.ts";
import { DEFAULT_COMPILE_CONFIG, type CompileConfig } from "../../src/compile/config.ts";
import { buildTable } from "../../src/table/build.ts";
import { lookup } from "../../src/table/lookup.ts";
import { serializeTable } from "../../src/table/serialize.ts";
import type { Match, RouteTable } from "../../src/table/types.ts";
import { decodeTable, encodeTable, type WireTable } from "../../src/table/wire.ts";
import { mkRoute } from "../compile/routes.ts";
import { loadFixture } from "../compile/snapshot.ts";

const root = join(import.meta.dir, "..");
const fixtures = readdirSync(join(root, "fixtures")).filter((f) => f.endsWith(".yaml")).sort();

/** Through JSON, as Bun's IPC carries it. */
const roundTrip = (t: RouteTable): RouteTable => decodeTable(JSON.parse(JSON.stringify(encodeTable(t))) as WireTable);

/** Everything a request depends on in a match, as plain data. */
function matchView(m: Match | null): unknown {
  if (m === null) return null;
  const { backend, ...route } = m.route;
  return { via: m.via, hostKey: m.hostKey, route, backend: { ...backend } };
}

/** Requests built from the table: each host (and a sibling under a wildcard) × paths and neighbours. */
function probes(t: RouteTable): { host: string; path: string }[] {
  const hosts = new Set(["unknown.test", "a.b.unknown.test"]);
  const paths = new Set(["/", "//", "/zzz", "/a/b/c"]);
  // A wildcard entry is keyed by its suffix: probe it with one extra label.
  const entries = [...t.exact].concat([...t.wildcard].map(([suffix, h]) => [`x.${suffix}`, h]));
  for (const [host, h] of entries) {
    hosts.add(host);
    for (const r of h.routes) {
      for (const p of [r.path, `${r.path}/`, `${r.path}/more`, `${r.path}x`, r.path.toUpperCase(), r.path.slice(0, -1) || "/"]) paths.add(p);
    }
  }
  for (const r of t.any?.routes ?? []) paths.add(r.path).add(`${r.path}/deeper`);
  const out: { host: string; path: string }[] = [];
  for (const host of hosts) for (const path of paths) out.push({ host, path });
  return out;
}

describe("wire table", () => {
  test("there are fixtures", () => expect(fixtures.length).toBeGreaterThan(10));
  for (const file of fixtures) {
    test(`decoded table routes like the original: ${file}`, () => {
      const fx = loadFixture(readFileSync(join(root, "fixtures", file), "utf8"));
      const result = compile(fx.snapshot, { ...DEFAULT_COMPILE_CONFIG, ...fx.config } as CompileConfig);
      const original = result.table;
      const decoded = roundTrip(original);
      expect(serializeTable(decoded)).toEqual(serializeTable(original));
      expect(decoded.routeCount).toBe(original.routeCount);
      const requests = [...fx.requests.map((r) => ({ host: r.host, path: r.path })), ...probes(original)];
      for (const q of requests) {
        expect({ q, m: matchView(lookup(decoded, q.host, q.path)) }).toEqual({ q, m: matchView(lookup(original, q.host, q.path)) });
      }
    });
  }

  test("non-finite options, shared backends and tie order survive JSON", () => {
    const a = mkRoute("a.test", "/x", "Prefix", "first");
    const b = mkRoute("a.test", "/x", "Prefix", "second"); // equal precedence: priority (input order) decides
    const unlimited = { ...mkRoute("b.test", "/", "Prefix"), options: { ...a.options, maxBodySize: Number.POSITIVE_INFINITY } };
    const t = buildTable([a, b, unlimited], null);
    const d = roundTrip(t);
    expect(lookup(d, "a.test", "/x/1")?.route.ingress.name).toBe("first");
    expect(lookup(d, "b.test", "/")?.route.options.maxBodySize).toBe(Number.POSITIVE_INFINITY);
    const wire = encodeTable(t);
    expect(wire.backends).toHaveLength(1); // one Backend object, listed once
    expect(lookup(d, "a.test", "/x")?.route.backend).toBe(lookup(d, "b.test", "/")?.route.backend);
  });

  test("endpoints stay a subset of allEndpoints by identity; a bad index throws", () => {
    const up = (n: number) => ({ address: `10.0.0.${n}`, port: 80, authority: `10.0.0.${n}:80`, ready: n !== 2, serving: true, terminating: false });
    const all = [up(1), up(2), up(3)];
    const base = mkRoute("c.test", "/", "Prefix");
    const route = { ...base, backend: { ...base.backend, allEndpoints: all, endpoints: [all[0]!, all[2]!] } };
    const d = roundTrip(buildTable([route], null));
    const be = lookup(d, "c.test", "/")!.route.backend;
    expect(be.endpoints.map((u) => u.authority)).toEqual(["10.0.0.1:80", "10.0.0.3:80"]);
    expect(be.endpoints[1]).toBe(be.allEndpoints[2]!);
    const wire = JSON.parse(JSON.stringify(encodeTable(buildTable([route], null)))) as { backends: { endpoints: unknown[] }[] };
    wire.backends[0]!.endpoints = [7];
    expect(() => decodeTable(wire as unknown as WireTable)).toThrow(/out of range/);
  });
});
