// The table crosses the primary → worker IPC as JSON: a decoded table must route every request
// exactly as the original does, over every golden fixture (test/fixtures/) and a set of probes
// built from the table's own hosts and paths.
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Compiler, compile } from "../../src/compile/compile.ts";
import type { CompileConfig } from "../../src/compile/config.ts";
import { DEFAULT_COMPILE_CONFIG } from "../compile/config.ts";
import { assembleTable, buildHost, buildTable } from "../../src/table/build.ts";
import type { RegexLocationSpec } from "../../src/table/types.ts";
import { lookup } from "../../src/table/lookup.ts";
import { serializeTable } from "../../src/table/serialize.ts";
import type { Match, RouteTable } from "../../src/table/types.ts";
import { applyDelta, decodeTable, encodeDelta, encodeTable, type BackendRegistry, type TableProblem, type WireDelta, type WireTable } from "../../src/table/wire.ts";
import { parseObject } from "../../src/model/kinds.ts";
import { Store } from "../../src/store/store.ts";
import { redactStage } from "../../src/policy/stages.ts";
import { assembleStages as orderStages } from "../../src/compile/stages.ts";
import { allRoutes, DEFAULT_ROUTE_OPTIONS } from "../../src/table/routes.ts";
import type { Backend } from "../../src/table/types.ts";
import { rng } from "../../bench/lib/cp-gen.ts";
import { mkRoute } from "../compile/routes.ts";
import { loadFixture } from "../compile/snapshot.ts";
import tls from "node:tls";
import { needsClientCertificates } from "../../src/table/client-certs.ts";
import { createCertificate } from "../tls/pki.ts";
import { startTlsProxy } from "../http2/helpers.ts";

const root = join(import.meta.dir, "..");
const fixtures = readdirSync(join(root, "fixtures")).filter((f) => f.endsWith(".yaml")).sort();

/** Through JSON, as Bun's IPC carries it. */
const roundTrip = (t: RouteTable): RouteTable => decodeTable(JSON.parse(JSON.stringify(encodeTable(t))) as WireTable);

/** Everything a request depends on in a match, as plain data (a regex host's location and captures too). */
function matchView(m: Match | null): unknown {
  if (m === null) return null;
  const { backend, ...route } = m.route;
  const regex = m.regex ? { location: m.regex.location, source: m.regex.re.source, captures: m.regex.captures } : null;
  return { via: m.via, hostKey: m.hostKey, route, backend: { ...backend }, regex };
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

  test("a route's retry policy crosses JSON unchanged and frozen; a route without one keeps null", () => {
    const retry = Object.freeze({ error: true, timeout: false, invalidHeader: true, statuses: Object.freeze([502, 503]), nonIdempotent: true, tries: 0, timeoutMs: 1500 });
    const withRetry = { ...mkRoute("r.test", "/", "Prefix"), options: { ...DEFAULT_ROUTE_OPTIONS, retry } };
    const plain = mkRoute("q.test", "/", "Prefix");
    const d = roundTrip(buildTable([withRetry, plain], null));
    const got = lookup(d, "r.test", "/")!.route.options.retry!;
    expect(got).toEqual(retry);
    expect(Object.isFrozen(got) && Object.isFrozen(got.statuses)).toBe(true);
    expect(lookup(d, "q.test", "/")!.route.options.retry).toBeNull();
  });

  test("a no-auth-locations route stays exempt on the worker's side, and only that one", () => {
    const acme = { ...mkRoute("r.test", "/.well-known/acme-challenge", "Prefix"), authExempt: true as const };
    const d = roundTrip(buildTable([acme, mkRoute("r.test", "/", "Prefix")], null));
    expect(lookup(d, "r.test", "/.well-known/acme-challenge/t")!.route.authExempt).toBe(true);
    expect(lookup(d, "r.test", "/x")!.route.authExempt).toBeUndefined();
  });

  test("route policies cross JSON unchanged, in order, frozen again on the worker's side", () => {
    const stages = orderStages([
      { stage: "rewrite", kind: "rewrite-target", params: { target: "/$1", groups: [1, 2], keep: { query: true, slash: null } } },
      { stage: "access", kind: "source-range", params: { allow: ["10.0.0.0/8", "::1/128"], deny: [] } },
      // User names and hashes are bytes held as latin1 strings: 8-bit ones must cross unchanged.
      { stage: "authentication", kind: "basic-auth", params: { realm: "r", secret: "ns/s", users: [["\u00e9\u00ff", "{PLAIN}\u0080x"], ["bob", "$apr1$ab$cd"]] } },
    ]);
    const withPolicies = { ...mkRoute("p.test", "/", "Prefix"), options: { ...DEFAULT_ROUTE_OPTIONS, stages } };
    const plain = mkRoute("q.test", "/", "Prefix");
    const t = buildTable([withPolicies, plain], null);
    const d = roundTrip(t);
    const got = lookup(d, "p.test", "/a")!.route.options.stages!;
    expect(got).toEqual(stages!);
    expect(got.map((p) => p.stage)).toEqual(["rewrite", "access", "authentication"]); // POLICY_STAGES order, not the order given
    const frozen = (x: unknown): boolean => x === null || typeof x !== "object" || (Object.isFrozen(x) && Object.values(x).every(frozen));
    expect(frozen(got)).toBe(true);
    expect(lookup(d, "q.test", "/")!.route.options.stages).toBeNull();
    expect(serializeTable(d)).toEqual(serializeTable(t));
    // The serialized form (/debug/routes) shows the users' count, never the users.
    expect(serializeTable(t).hosts.find((h) => h.host === "p.test")!.routes[0]!.options).toEqual({ stages: stages!.map(redactStage) });
    expect(JSON.stringify(serializeTable(t))).toContain('"users":"<redacted: 2 entries>"');
    // The same through a delta, as a change reaches a running worker.
    const worker = new Receiver(encodeTable(buildTable([plain], null)));
    const registry: BackendRegistry = new Map();
    const prev = buildTable([plain], null);
    encodeTable(prev, registry);
    worker.apply(encodeDelta(prev, t, registry));
    expect(lookup(worker.table, "p.test", "/a")!.route.options.stages).toEqual(stages!);
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

/** A worker's end: its table and its registry, fed through JSON as Bun's IPC does. */
describe("host-wide redirects on the worker's side", () => {
  // app-root and the www redirect are derived from the routes when a host entry is built
  // (table/build.ts), so a worker that rebuilds its entries from the wire routes has them too.
  const appRoot = orderStages([{ stage: "server", kind: "app-root", params: { path: "/app" } }]);
  const site = { ...mkRoute("site.test", "/api", "Prefix"), options: { ...DEFAULT_ROUTE_OPTIONS, stages: appRoot, fromToWwwRedirect: true } };
  const root = mkRoute("site.test", "/", "Prefix", "other");
  const plain = mkRoute("plain.test", "/", "Prefix");
  const view = (t: RouteTable) => ({
    root: lookup(t, "site.test", "/")?.route.options.stages,
    rootIngress: lookup(t, "site.test", "/")?.route.ingress.name,
    www: lookup(t, "www.site.test", "/x")?.route.options.stages,
    count: t.wwwRedirects,
  });

  test("a whole table and a delta carry them; a delta that removes them removes them", () => {
    const t = buildTable([site, root, plain], null);
    expect(view(t)).toEqual({
      root: orderStages([{ stage: "server", kind: "app-root", params: { path: "/app" } }]),
      rootIngress: "other",
      www: orderStages([{ stage: "server", kind: "www-redirect", params: { to: "site.test" } }]),
      count: 1,
    });
    expect(view(roundTrip(t))).toEqual(view(t));
    const prev = buildTable([plain], null);
    const registry: BackendRegistry = new Map();
    const worker = new Receiver(encodeTable(prev, registry));
    worker.apply(encodeDelta(prev, t, registry));
    expect(view(worker.table)).toEqual(view(t));
    worker.apply(encodeDelta(t, prev, registry));
    expect(view(worker.table)).toEqual({ root: undefined, rootIngress: undefined, www: undefined, count: 0 });
  });

  test("add-headers and proxy-set-headers cross in a whole table and a delta; a delta that removes them removes them", () => {
    const plainOnly = buildTable([plain], null);
    const globalHeaders = Object.freeze({ response: [{ name: "x-a", value: ["v ", { v: "host" }] }], request: [{ name: "x-b", value: [{ v: "remote_addr" }] }] });
    const withHeaders: RouteTable = Object.freeze({ ...plainOnly, globalHeaders });
    expect(roundTrip(withHeaders).globalHeaders).toEqual(globalHeaders);
    const registry: BackendRegistry = new Map();
    const worker = new Receiver(encodeTable(plainOnly, registry));
    expect(worker.table.globalHeaders ?? null).toBeNull();
    worker.apply(encodeDelta(plainOnly, withHeaders, registry));
    expect(worker.table.globalHeaders).toEqual(globalHeaders);
    // Unchanged: not sent again, and kept.
    const same: RouteTable = Object.freeze({ ...buildTable([plain], null), globalHeaders });
    const d = encodeDelta(withHeaders, same, registry);
    expect("globalHeaders" in d).toBe(false);
    worker.apply(d);
    expect(worker.table.globalHeaders).toEqual(globalHeaders);
    worker.apply(encodeDelta(same, plainOnly, registry));
    expect(worker.table.globalHeaders ?? null).toBeNull();
  });

  test("server-alias names cross as name → host key, in a whole table and when a delta changes them", () => {
    const wild = mkRoute("*.w.test", "/", "Prefix", "wild");
    const aliased = buildTable([site, wild, plain], null, new Map([["alias.test", "site.test"], ["walias.test", "*.w.test"]]));
    const served = (t: RouteTable) => ["alias.test", "walias.test"].map((h) => lookup(t, h, "/api/x")?.route.ingress.name ?? null);
    expect(served(aliased)).toEqual(["ing", "wild"]);
    expect(served(roundTrip(aliased))).toEqual(["ing", "wild"]);
    const registry: BackendRegistry = new Map();
    const before = buildTable([site, wild, plain], null);
    const worker = new Receiver(encodeTable(before, registry));
    expect(served(worker.table)).toEqual([null, null]);
    // A delta with no host change still carries the new aliases.
    worker.apply(encodeDelta(before, aliased, registry));
    expect(served(worker.table)).toEqual(["ing", "wild"]);
    // And a host change re-points them at the new entry.
    const site2 = { ...site, path: "/api2" };
    const moved = buildTable([site2, wild, plain], null, aliased.aliasKeys);
    worker.apply(encodeDelta(aliased, moved, registry));
    expect(lookup(worker.table, "alias.test", "/api2")?.route.path).toBe("/api2");
  });
});

class Receiver {
  readonly registry: BackendRegistry = new Map();
  table: RouteTable;
  constructor(wire: WireTable) {
    this.table = decodeTable(JSON.parse(JSON.stringify(wire)) as WireTable, this.registry);
  }
  apply(delta: WireDelta): void {
    this.table = applyDelta(this.table, JSON.parse(JSON.stringify(delta)) as WireDelta, this.registry);
  }
}

/** One Backend object per id in a table (the proxy keys per-backend state on it). */
function oneBackendPerId(t: RouteTable): boolean {
  const seen = new Map<string, Backend>();
  for (const r of [...allRoutes(t), ...(t.defaultRoute ? [t.defaultRoute] : [])]) {
    if ((seen.get(r.backend.id) ?? r.backend) !== r.backend) return false;
    seen.set(r.backend.id, r.backend);
  }
  return true;
}

function sameRouting(got: RouteTable, want: RouteTable): void {
  expect(serializeTable(got)).toEqual(serializeTable(want));
  expect(got.routeCount).toBe(want.routeCount);
  expect(oneBackendPerId(got)).toBe(true);
  for (const q of probes(want)) expect({ q, m: matchView(lookup(got, q.host, q.path)) }).toEqual({ q, m: matchView(lookup(want, q.host, q.path)) });
}

describe("wire deltas", () => {
  test("every golden fixture after another: a delta turns the receiver's table into the next one", () => {
    const files = fixtures.filter((f) => !f.startsWith("global-default") && !f.startsWith("class-"));
    const c = new Compiler(DEFAULT_COMPILE_CONFIG);
    const registry: BackendRegistry = new Map();
    let prev = c.compile(loadFixture(readFileSync(join(root, "fixtures", files[0] as string), "utf8")).snapshot).table;
    const rx = new Receiver(encodeTable(prev, registry));
    for (const file of [...files.slice(1), ...files]) {
      const next = c.compile(loadFixture(readFileSync(join(root, "fixtures", file), "utf8")).snapshot).table;
      rx.apply(encodeDelta(prev, next, registry));
      sameRouting(rx.table, next);
      prev = next;
    }
  });

  test("random edits: small deltas, unchanged backends keep their object, a restarted receiver catches up mid-stream", () => {
    const r = rng(11);
    const store = new Store();
    const put = (kind: "Ingress" | "Service" | "EndpointSlice", raw: unknown) => {
      const p = parseObject(kind, raw);
      if (!p.ok) throw new Error(p.diagnostic.message);
      store.apply({ type: "MODIFIED", kind, object: p.object } as Parameters<Store["apply"]>[0]);
    };
    const ingress = (i: number, extra = 0) => ({
      metadata: { name: `ing-${i}`, namespace: "a", creationTimestamp: "2024-01-01T00:00:00Z" },
      spec: {
        ingressClassName: "portico",
        rules: [{ host: i % 7 === 0 ? `*.w${i % 3}.test` : `h${i % 40}.test`, http: { paths: Array.from({ length: 1 + extra }, (_, k) => ({ path: `/p${k}`, pathType: "Prefix", backend: { service: { name: `s${i % 20}`, port: { number: 80 } } } })) } }],
      },
    });
    const slice = (s: number, n: number) => ({
      metadata: { name: `s${s}-x`, namespace: "a", labels: { "kubernetes.io/service-name": `s${s}` } },
      addressType: "IPv4",
      endpoints: Array.from({ length: n }, (_, k) => ({ addresses: [`10.0.${s}.${k + 1}`] })),
      ports: [{ name: "http", port: 8080 }],
    });
    for (let s = 0; s < 20; s++) {
      put("Service", { metadata: { name: `s${s}`, namespace: "a" }, spec: { ports: [{ name: "http", port: 80 }] } });
      put("EndpointSlice", slice(s, 2));
    }
    for (let i = 0; i < 100; i++) put("Ingress", ingress(i));
    const c = new Compiler(DEFAULT_COMPILE_CONFIG);
    const registry: BackendRegistry = new Map();
    let prev = c.compile(store.snapshot()).table;
    const rx = new Receiver(encodeTable(prev, registry));
    let late: Receiver | null = null;
    let kept = 0;
    for (let step = 0; step < 200; step++) {
      const x = r();
      if (x < 0.6) put("Ingress", ingress(Math.floor(r() * 130), Math.floor(r() * 3)));
      else if (x < 0.9) put("EndpointSlice", slice(Math.floor(r() * 20), 1 + Math.floor(r() * 3)));
      else store.apply({ type: "DELETED", kind: "Ingress", object: { metadata: { name: `ing-${Math.floor(r() * 130)}`, namespace: "a" } } } as Parameters<Store["apply"]>[0]);
      const next = c.compile(store.snapshot()).table;
      const before = rx.table;
      // The primary's order (workers/plane.ts): the delta of a generation is encoded first; a
      // receiver (re)started during it gets the whole table, which resets the primary's registry.
      const delta = encodeDelta(prev, next, registry);
      expect(delta.hosts.length).toBeLessThanOrEqual(8);
      rx.apply(delta);
      late?.apply(delta);
      if (step === 50) late = new Receiver(encodeTable(next, registry));
      sameRouting(rx.table, next);
      if (late) sameRouting(late.table, next);
      // A backend untouched by this step is the same object in the receiver's new table.
      for (const [h, e] of rx.table.exact) if (before.exact.get(h) !== undefined && e.routes[0]?.backend === before.exact.get(h)?.routes[0]?.backend) kept++;
      prev = next;
    }
    expect(kept).toBeGreaterThan(1000);
  });

  test("a delta naming a backend the receiver does not hold throws and leaves the registry as it was", () => {
    const t1 = buildTable([mkRoute("a.test", "/", "Prefix")], null);
    const registry: BackendRegistry = new Map();
    const rx = new Receiver(encodeTable(t1, registry));
    const t2 = buildTable([mkRoute("a.test", "/x", "Prefix"), mkRoute("b.test", "/", "Prefix")], null);
    const delta = JSON.parse(JSON.stringify(encodeDelta(t1, t2, registry))) as { hosts: { routes: { backend: unknown }[] | null }[] };
    for (const h of delta.hosts) for (const route of h.routes ?? []) route.backend = "nope/none:1";
    const before = [...rx.registry];
    expect(() => rx.apply(delta as unknown as WireDelta)).toThrow(/not known/);
    expect([...rx.registry]).toEqual(before);
  });

  test("a regex-mode host crosses as pattern sources and is compiled again on the worker's side", () => {
    const routes = [mkRoute("rx.test", "/foo/bar/(.+)", "Prefix", "regex"), mkRoute("rx.test", "/Header", "Exact", "plain")];
    const specs: RegexLocationSpec[] = [
      { path: "/foo/bar/(.+)", origin: "as-written", route: 0, captures: true },
      { path: "/Header", origin: "as-written", route: 1, captures: false },
      { path: "/", origin: "implicit-root", route: -1, captures: false },
    ];
    const t = assembleTable([buildHost("rx.test", routes, "exact-host", specs), buildHost("p.test", [mkRoute("p.test", "/", "Prefix")], "exact-host")], null, 3);
    const wire = JSON.parse(JSON.stringify(encodeTable(t))) as WireTable;
    // Data only: the pattern as written and the route it leads to.
    expect(wire.hosts.find((h) => h.host === "rx.test")!.regex).toEqual(specs);
    expect(wire.hosts.find((h) => h.host === "p.test")!.regex).toBeUndefined();
    const d = decodeTable(wire);
    const rx = d.exact.get("rx.test")!.regex!;
    expect(rx.specs).toEqual(specs);
    for (const path of ["/foo/bar/x/y", "/FOO/BAR/1", "/headers", "/other", "/foo/bar/"]) {
      expect({ path, m: matchView(lookup(d, "rx.test", path)) }).toEqual({ path, m: matchView(lookup(t, "rx.test", path)) });
    }
    expect(lookup(d, "rx.test", "/foo/bar/x/y")!.regex!.captures!.groups).toEqual(["/foo/bar/x/y", "x/y"]);
    expect(lookup(d, "rx.test", "/headers")!.regex!.captures).toBeNull();
    expect(lookup(d, "rx.test", "/other")).toBeNull();
    expect(serializeTable(d)).toEqual(serializeTable(t));
    // A delta carries a regex host the same way; a literal host stays literal.
    const registry: BackendRegistry = new Map();
    const prev = buildTable([mkRoute("p.test", "/", "Prefix")], null);
    const worker = new Receiver(encodeTable(prev, registry));
    worker.apply(encodeDelta(prev, t, registry));
    expect(matchView(lookup(worker.table, "rx.test", "/foo/bar/x"))).toEqual(matchView(lookup(t, "rx.test", "/foo/bar/x")));
    expect(worker.table.exact.get("p.test")!.regex).toBeNull();
    // A location that does not compile, or names no route, is an entry that cannot be built:
    // refused (the whole table without a reporter; see "a host entry a worker cannot build").
    const bad = (regex: unknown[]) => ({ ...wire, hosts: wire.hosts.map((h) => (h.host === "rx.test" ? { ...h, regex } : h)) }) as WireTable;
    expect(() => decodeTable(bad([{ path: "/(a)\\1", origin: "as-written", route: 0, captures: false }]))).toThrow(/backreference/);
    expect(() => decodeTable(bad([{ path: "/x", origin: "as-written", route: 7, captures: false }]))).toThrow(/out of range/);
  });
});

describe("wire: canary", () => {
  const fx = loadFixture(readFileSync(join(root, "fixtures", "canary.yaml"), "utf8"));
  const table = compile(fx.snapshot, DEFAULT_COMPILE_CONFIG).table;
  const canaryOf = (t: RouteTable) => lookup(t, "shop.test", "/x")?.route.canary;

  test("a route's canary backend survives the full table round trip", () => {
    const before = canaryOf(table);
    expect(before?.backend.id).toBe("shop/canary:80");
    const after = canaryOf(roundTrip(table));
    expect(after?.ingress).toEqual({ namespace: "shop", name: "canary" });
    expect({ ...after?.backend }).toEqual({ ...before?.backend });
    expect(lookup(roundTrip(table), "shop.test", "/x")?.route.options.stages?.[0]?.kind).toBe("canary");
  });

  test("and a delta: the canary backend is shipped once, then named by id", () => {
    const empty = buildTable([], null);
    const sender: BackendRegistry = new Map();
    const receiver: BackendRegistry = new Map();
    decodeTable(JSON.parse(JSON.stringify(encodeTable(empty, sender))) as WireTable, receiver);
    const delta = JSON.parse(JSON.stringify(encodeDelta(empty, table, sender))) as WireDelta;
    expect(delta.backends.map((b) => b.id).sort()).toEqual(["shop/canary:80", "shop/main:80"]);
    const got = applyDelta(empty, delta, receiver);
    expect(canaryOf(got)?.backend.id).toBe("shop/canary:80");
    expect(receiver.get("shop/canary:80")).toBe(canaryOf(got)?.backend);
  });
});

describe("wire: client certificates", () => {
  // The client-cert stage carries the CA's PEM certificates, the verify mode, depth, error page
  // and pass flag; a worker that lost any of it would check another policy than compiled (or
  // none). Compiled from real objects: two Ingresses on one host (the host-wide policy) and a
  // hostless rule whose policy the default route takes.
  const ca = createCertificate({ subjectCN: "Wire CA", isCA: true });
  const client = createCertificate({ subjectCN: "alice", extKeyUsage: ["clientAuth"], issuer: { cert: ca.certPem, key: ca.keyPem } });
  const N = "nginx.ingress.kubernetes.io/";
  const ann = JSON.stringify({ [`${N}auth-tls-secret`]: "ca", [`${N}auth-tls-verify-client`]: "optional", [`${N}auth-tls-verify-depth`]: "2", [`${N}auth-tls-error-page`]: "https://login.test/cert", [`${N}auth-tls-pass-certificate-to-upstream`]: "true" });
  const ing = (name: string, created: string, annotations: string, rule: string, extra = "") => `
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: ${name}, namespace: shop, creationTimestamp: "${created}", annotations: ${annotations}}
spec:
  ingressClassName: portico${extra}
  rules: [{${rule}http: {paths: [{path: /${name}, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]}}]`;
  const fx = loadFixture(
    [
      `apiVersion: v1
kind: Secret
metadata: {name: ca, namespace: shop}
type: Opaque
data: {ca.crt: ${Buffer.from(ca.certPem).toString("base64")}}`,
      ing("secure", "2026-01-01T00:00:00Z", ann, "host: m.test, "),
      ing("later", "2026-02-01T00:00:00Z", "{}", "host: m.test, "),
      ing("anyhost", "2026-01-01T00:00:00Z", ann, ""),
      ing("fallback", "2026-02-01T00:00:00Z", "{}", "", "\n  defaultBackend: {service: {name: web, port: {number: 80}}}"),
    ].join("\n---\n"),
  );
  const table = compile(fx.snapshot, DEFAULT_COMPILE_CONFIG).table;
  const certStage = (t: RouteTable, host: string, path: string) => lookup(t, host, path)?.route.options.stages?.find((s) => s.kind === "client-cert");
  const frozen = (x: unknown): boolean => x === null || typeof x !== "object" || (Object.isFrozen(x) && Object.values(x).every(frozen));

  test("the full table: every field of the stage, on both Ingresses' routes and the default route, frozen again", () => {
    const before = certStage(table, "m.test", "/later");
    expect(before?.params).toMatchObject({ secret: "shop/ca", verify: "optional", depth: 2, errorPage: "https://login.test/cert", passCertificate: true, ca: [expect.stringContaining("BEGIN CERTIFICATE")] });
    const d = roundTrip(table);
    for (const path of ["/secure", "/later"]) {
      const got = certStage(d, "m.test", path);
      expect(got).toEqual(before!);
      expect(frozen(got)).toBe(true);
    }
    expect(certStage(d, "other.test", "/anyhost")).toEqual(certStage(table, "other.test", "/anyhost")!);
    // The default route (no rule matches /elsewhere): the hostless policy crossed too.
    expect(lookup(d, "other.test", "/elsewhere")?.route.source).toBe("defaultBackend");
    expect(certStage(d, "other.test", "/elsewhere")).toEqual(certStage(table, "other.test", "/elsewhere")!);
    expect(needsClientCertificates(d)).toBe(true);
  });

  test("and a delta, then enforced by the proxy on the worker's side over real TLS", async () => {
    const worker = new Receiver(encodeTable(buildTable([], null)));
    const registry: BackendRegistry = new Map();
    const prev = buildTable([], null);
    encodeTable(prev, registry);
    worker.apply(encodeDelta(prev, table, registry));
    expect(certStage(worker.table, "m.test", "/later")).toEqual(certStage(table, "m.test", "/later")!);
    // optional + error page: no certificate passes (the Service has no endpoints: 503), a
    // certificate of another CA is sent to the error page, one of the CA passes.
    const proxy = startTlsProxy(worker.table, { hosts: ["m.test"] });
    try {
      const get = (cert?: { certPem: string; keyPem: string }) =>
        new Promise<number>((resolve, reject) => {
          const s = tls.connect({ host: "127.0.0.1", port: proxy.port, servername: "m.test", rejectUnauthorized: false, ALPNProtocols: ["http/1.1"], ...(cert ? { cert: cert.certPem, key: cert.keyPem } : {}) });
          let data = "";
          s.on("secureConnect", () => s.write("GET /later HTTP/1.1\r\nHost: m.test\r\nConnection: close\r\n\r\n"));
          s.on("data", (c) => (data += c.toString("latin1")));
          s.on("end", () => resolve(Number(data.slice(9, 12))));
          s.on("error", reject);
        });
      const stranger = createCertificate({ subjectCN: "mallory", extKeyUsage: ["clientAuth"] });
      expect(await get(stranger)).toBe(302);
      expect(await get(client)).toBe(503);
      expect(await get()).toBe(503);
    } finally {
      await proxy.stop();
    }
  });
});

describe("a host entry a worker cannot build", () => {
  // Built by the same code on both ends, so only a corrupt message (or a bug) gets here: the
  // entry costs its own host alone, the line names it, and it never falls to another host's rules.
  const specs: RegexLocationSpec[] = [{ path: "/r/(.+)", origin: "as-written", route: 0, captures: false }];
  const good = () => assembleTable([
    buildHost("rx.test", [mkRoute("rx.test", "/r/(.+)", "Prefix", "regex")], "exact-host", specs),
    buildHost("p.test", [mkRoute("p.test", "/", "Prefix")], "exact-host"),
    buildHost("*", [mkRoute(null, "/", "Prefix", "catch-all")], "any-host"),
  ], null, 3);
  const broken = (t: RouteTable) => {
    const wire = JSON.parse(JSON.stringify(encodeTable(t))) as WireTable;
    return { ...wire, hosts: wire.hosts.map((h) => (h.host === "rx.test" ? { ...h, regex: [{ ...specs[0]!, path: "/(?=x)" }] } : h)) } as WireTable;
  };

  test("in a whole table: reported with its Ingresses, answered as a host with no paths, the others decoded", () => {
    const problems: TableProblem[] = [];
    const d = decodeTable(broken(good()), new Map(), { onProblem: (p) => void problems.push(p) });
    expect(problems).toEqual([{ host: "rx.test", ingresses: ["default/regex"], error: expect.stringContaining("/(?=x)"), kept: "empty" }]);
    expect(lookup(d, "rx.test", "/r/x")).toBeNull();
    expect(lookup(d, "p.test", "/x")?.route.host).toBe("p.test");
    expect(lookup(d, "other.test", "/x")?.hostKey).toBe("*");
    // A worker that had a table keeps that host's entry from it.
    const previous = good();
    const again = decodeTable(broken(good()), new Map(), { onProblem: (p) => void problems.push(p), previous });
    expect(problems[1]?.kept).toBe("previous");
    expect(again.exact.get("rx.test")).toBe(previous.exact.get("rx.test"));
    expect(lookup(again, "rx.test", "/r/x")?.route.ingress.name).toBe("regex");
  });

  test("in a delta: the host keeps its current entry, the rest of the delta applies", () => {
    const registry: BackendRegistry = new Map();
    const t1 = good();
    const rx = new Receiver(encodeTable(t1, registry));
    const t2 = assembleTable([
      buildHost("rx.test", [mkRoute("rx.test", "/r/(.+)", "Prefix", "regex2")], "exact-host", specs),
      buildHost("p.test", [mkRoute("p.test", "/new", "Prefix")], "exact-host"),
      t1.any!,
    ], null, 3);
    const delta = JSON.parse(JSON.stringify(encodeDelta(t1, t2, registry))) as WireDelta;
    const bad = { ...delta, hosts: delta.hosts.map((h) => (h.host === "rx.test" ? { ...h, regex: [{ ...specs[0]!, route: 9 }] } : h)) };
    const problems: TableProblem[] = [];
    const next = applyDelta(rx.table, bad, rx.registry, (p) => void problems.push(p));
    expect(problems.map((p) => [p.host, p.ingresses, p.kept])).toEqual([["rx.test", ["default/regex2"], "previous"]]);
    expect(next.exact.get("rx.test")).toBe(rx.table.exact.get("rx.test"));
    expect(lookup(next, "p.test", "/new")?.route.path).toBe("/new");
    expect(next.routeCount).toBe(3);
    // Without a reporter the delta is refused whole, as before.
    expect(() => applyDelta(rx.table, bad, rx.registry)).toThrow(/out of range/);
  });
});
