// --gateway-ports (docs/design.md "Gateways with their own address"): the allocation of
// Portico ports to Gateways, the per-Gateway tables the compiler builds from it, and their
// crossing of the worker wire. The serving side is test/gateway/multiple-gateways.test.ts.
import { describe, expect, test } from "bun:test";
import { Compiler } from "../../src/compile/compile.ts";
import { gatewayServiceName } from "../../src/compile/gateway/ports.ts";
import { findGatewayEntry } from "../../src/table/gateway.ts";
import type { GatewayRoutes, RouteTable } from "../../src/table/types.ts";
import { applyDelta, decodeTable, encodeDelta, encodeTable, type BackendRegistry } from "../../src/table/wire.ts";
import { serializeTable } from "../../src/table/serialize.ts";
import { DEFAULT_COMPILE_CONFIG } from "../compile/config.ts";
import { Store } from "../../src/store/store.ts";
import type { Service } from "../../src/model/schemas.ts";
import type { Snapshot } from "../../src/store/types.ts";
import { BASE, GATEWAYS, INFRA, objects, snapshot } from "./base.ts";

const RANGE = { from: 20_100, to: 20_107 };
const config = { ...DEFAULT_COMPILE_CONFIG, gatewayPorts: RANGE, publishService: { namespace: "portico", name: "portico" } };

const route = (name: string, parents: string, backend: string, path = "/") => `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: ${name}, namespace: ${INFRA}, generation: 1 }
spec:
  parentRefs: [${parents}]
  rules: [{ matches: [{ path: { type: PathPrefix, value: ${path} } }], backendRefs: [{ name: ${backend}, port: 8080 }] }]`;

/** httproute-multiple-gateways.yaml, with the two Gateways created in the given order. */
const multi = (sameTime: string, allTime: string) => [
  GATEWAYS["same-namespace"].replace("generation: 1", `generation: 1, creationTimestamp: "${sameTime}"`),
  GATEWAYS["all-namespaces"].replace("generation: 1", `generation: 1, creationTimestamp: "${allTime}"`),
  route("multiple-gateways-shared-route", "{ name: same-namespace }, { name: all-namespaces }", "infra-backend-v1", "/shared"),
  route("same-namespace-dedicated-route", "{ name: same-namespace }", "infra-backend-v2"),
  route("all-namespaces-dedicated-route", "{ name: all-namespaces }", "infra-backend-v3"),
];

/** A Service of Portico's for a Gateway, recording declared port → Portico port. */
const recorded = (gateway: string, target: number, managed = true) => `
apiVersion: v1
kind: Service
metadata:
  name: ${gatewayServiceName(`${INFRA}/${gateway}`)}
  namespace: portico
  labels: { app.kubernetes.io/managed-by: ${managed ? "portico-gateway" : "someone-else"} }
  annotations: { portico.dev/gateway: ${INFRA}/${gateway} }
spec: { ports: [{ name: http-80, port: 80, targetPort: ${target} }] }`;

function backendOf(routes: GatewayRoutes | null, path: string): string {
  if (routes === null) return "404";
  const e = findGatewayEntry(routes, false, { host: "10.96.1.1", method: "GET", path, query: "", header: () => null });
  if (e === null) return "404";
  const b = e.choices[0]!.match.route.backend;
  return `${b.namespace}/${b.service}`;
}

/** Portico port → `gateway: backend of / and of /shared`. */
function served(t: RouteTable): Record<number, string> {
  const out: Record<number, string> = {};
  for (const [port, g] of t.gatewayPorts ?? []) out[port] = `${g.gateway.split("/")[1]}:${g.declared}${g.https ? "s" : ""} / → ${backendOf(g.routes, "/")}, /shared → ${backendOf(g.routes, "/shared")}`;
  return out;
}

describe("--gateway-ports", () => {
  test("each Gateway gets its own port, oldest first, and that port serves its routes only; the shared part is empty", () => {
    const r = new Compiler(config).compile(snapshot(BASE, ...multi("2026-01-02T00:00:00Z", "2026-01-01T00:00:00Z")));
    expect(r.table.gateway ?? null).toBeNull();
    expect(served(r.table)).toEqual({
      20100: `all-namespaces:80 / → ${INFRA}/infra-backend-v3, /shared → ${INFRA}/infra-backend-v1`,
      20101: `same-namespace:80 / → ${INFRA}/infra-backend-v2, /shared → ${INFRA}/infra-backend-v1`,
    });
    // Status is the full compile's, as on shared ports.
    const st = r.gateway!.routes.find((x) => x.key === `${INFRA}/multiple-gateways-shared-route`)!;
    expect(st.parents.map((p) => p.conditions.map((c) => `${c.type}=${c.status}`).join(" "))).toEqual(["Accepted=True ResolvedRefs=True", "Accepted=True ResolvedRefs=True"]);
  });

  test("/debug/routes lists each Gateway's port and its rules", () => {
    const r = new Compiler(config).compile(snapshot(BASE, ...multi("2026-01-02T00:00:00Z", "2026-01-01T00:00:00Z")));
    const s = serializeTable(r.table);
    expect(s.gateway).toBeUndefined();
    expect(
      s.gatewayPorts!.map((p) => `${p.port} ${p.gateway}:${p.declared} ${p.listeners.map((l) => `${l.port} ${l.listenerHostname} ${l.hosts.map((h) => `${h.hostname}: ${h.entries.map((e) => `${e.match.path || "/"}→${e.weights[0]!.route.backend}`).join(" ")}`).join("; ")}`).join(" | ")}`),
    ).toEqual([
      `20100 ${INFRA}/all-namespaces:80 http * *: /shared→${INFRA}/infra-backend-v1:8080 /→${INFRA}/infra-backend-v3:8080`,
      `20101 ${INFRA}/same-namespace:80 http * *: /shared→${INFRA}/infra-backend-v1:8080 /→${INFRA}/infra-backend-v2:8080`,
    ]);
  });

  test("an edited route, a new one and a deleted one: each port's rules as a fresh compile makes them", () => {
    const c = new Compiler(config);
    const steps = [
      multi("2026-01-02T00:00:00Z", "2026-01-01T00:00:00Z"),
      // same-namespace's dedicated route now goes to v1
      [...multi("2026-01-02T00:00:00Z", "2026-01-01T00:00:00Z").slice(0, 3), route("same-namespace-dedicated-route", "{ name: same-namespace }", "infra-backend-v1"), multi("", "")[4]!],
      // a new route on all-namespaces only, and the shared route gone
      [...multi("2026-01-02T00:00:00Z", "2026-01-01T00:00:00Z").slice(0, 2), route("same-namespace-dedicated-route", "{ name: same-namespace }", "infra-backend-v1"), multi("", "")[4]!, route("extra", "{ name: all-namespaces }", "infra-backend-v2", "/shared")],
    ];
    for (const step of steps) {
      const incremental = c.compile(snapshot(BASE, ...step));
      const fresh = new Compiler(config).compile(snapshot(BASE, ...step));
      expect(served(incremental.table)).toEqual(served(fresh.table));
    }
    expect(served(c.compile(snapshot(BASE, ...steps[2]!)).table)).toEqual({
      20100: `all-namespaces:80 / → ${INFRA}/infra-backend-v3, /shared → ${INFRA}/infra-backend-v2`,
      20101: `same-namespace:80 / → ${INFRA}/infra-backend-v1, /shared → ${INFRA}/infra-backend-v1`,
    });
  });

  test("without the flag nothing changes: one shared part, no ports", () => {
    const r = new Compiler(DEFAULT_COMPILE_CONFIG).compile(snapshot(BASE, ...multi("2026-01-02T00:00:00Z", "2026-01-01T00:00:00Z")));
    expect(r.table.gatewayPorts ?? null).toBeNull();
    expect(backendOf(r.table.gateway ?? null, "/")).toBe(`${INFRA}/infra-backend-v3`);
  });

  test("a port the Gateway's Service records is kept (restarts, other Gateways coming and going); one not Portico's is ignored", () => {
    const kept = new Compiler(config).compile(snapshot(BASE, ...multi("2026-01-02T00:00:00Z", "2026-01-01T00:00:00Z"), recorded("same-namespace", 20_105)));
    expect(Object.keys(served(kept.table))).toEqual(["20100", "20105"]);
    expect(kept.table.gatewayPorts!.get(20_105)!.gateway).toBe(`${INFRA}/same-namespace`);
    // Out of the range: allocated again.
    const outside = new Compiler(config).compile(snapshot(BASE, ...multi("2026-01-02T00:00:00Z", "2026-01-01T00:00:00Z"), recorded("same-namespace", 30_000)));
    expect(outside.table.gatewayPorts!.get(20_101)!.gateway).toBe(`${INFRA}/same-namespace`);
    // Someone else's Service of that name records nothing.
    const foreign = new Compiler(config).compile(snapshot(BASE, ...multi("2026-01-02T00:00:00Z", "2026-01-01T00:00:00Z"), recorded("same-namespace", 20_105, false)));
    expect(foreign.table.gatewayPorts!.get(20_101)!.gateway).toBe(`${INFRA}/same-namespace`);
    // The older Gateway deleted: the younger keeps its port instead of sliding down.
    const c = new Compiler(config);
    const both = c.compile(snapshot(BASE, ...multi("2026-01-02T00:00:00Z", "2026-01-01T00:00:00Z")));
    expect(both.table.gatewayPorts!.get(20_101)!.gateway).toBe(`${INFRA}/same-namespace`);
    const one = c.compile(snapshot(BASE, ...multi("2026-01-02T00:00:00Z", "2026-01-01T00:00:00Z").slice(0, 1), ...multi("", "").slice(2), recorded("same-namespace", 20_101)));
    expect(served(one.table)).toEqual({ 20101: `same-namespace:80 / → ${INFRA}/infra-backend-v2, /shared → ${INFRA}/infra-backend-v1` });
  });

  test("a change to a Gateway's own Service alone (its port, its label, its deletion) moves the port as a fresh compile does", () => {
    // Each step changes the Service map only, every other object the same, so nothing the
    // Gateway compile depends on changed: the allocation must still read the Service again,
    // or this replica keeps a port the Service no longer sends that Gateway's traffic to.
    const start = snapshot(BASE, ...multi("2026-01-02T00:00:00Z", "2026-01-01T00:00:00Z"));
    const key = `portico/${gatewayServiceName(`${INFRA}/same-namespace`)}`;
    const withService = (text: string | null): Snapshot => {
      const services = new Map(start.services);
      if (text !== null) services.set(key, objects(text)[0]!.object as Service);
      return { ...start, services };
    };
    const c = new Compiler(config);
    const owner = (r: { table: RouteTable }) => Object.fromEntries([...r.table.gatewayPorts!].map(([p, g]) => [p, g.gateway.split("/")[1]]));
    const steps: [Snapshot, Record<number, string>][] = [
      [start, { 20100: "all-namespaces", 20101: "same-namespace" }],
      // The Service (written by a leader that allocated otherwise) records 20105.
      [withService(recorded("same-namespace", 20_105)), { 20100: "all-namespaces", 20105: "same-namespace" }],
      // Its managed-by label changed: no longer Portico's record.
      [withService(recorded("same-namespace", 20_105, false)), { 20100: "all-namespaces", 20101: "same-namespace" }],
      [withService(recorded("same-namespace", 20_106)), { 20100: "all-namespaces", 20106: "same-namespace" }],
      // Deleted: allocated again.
      [withService(null), { 20100: "all-namespaces", 20101: "same-namespace" }],
    ];
    for (const [snap, want] of steps) {
      expect(owner(new Compiler(config).compile(snap))).toEqual(want);
      expect(owner(c.compile(snap))).toEqual(want);
    }
  });

  test("the store wakes the compiler for a Service's managed-by label, not for its other labels", () => {
    const store = new Store();
    const svc = (labels: string) => objects(recorded("same-namespace", 20_105).replace("labels: { app.kubernetes.io/managed-by: portico-gateway }", `labels: { ${labels} }`))[0]!.object as Service;
    expect(store.apply({ type: "ADDED", kind: "Service", object: svc("app.kubernetes.io/managed-by: portico-gateway") })).toBe(true);
    expect(store.apply({ type: "MODIFIED", kind: "Service", object: svc("app.kubernetes.io/managed-by: portico-gateway, team: a") })).toBe(false);
    expect(store.apply({ type: "MODIFIED", kind: "Service", object: svc("team: a") })).toBe(true);
  });

  test("a full range leaves the port unserved, with a diagnostic on the Gateway", () => {
    const r = new Compiler({ ...config, gatewayPorts: { from: 20_100, to: 20_100 } }).compile(snapshot(BASE, ...multi("2026-01-02T00:00:00Z", "2026-01-01T00:00:00Z")));
    expect([...r.table.gatewayPorts!.keys()]).toEqual([20_100]);
    const d = r.diagnostics.filter((x) => x.kind === "Gateway");
    expect(d.map((x) => `${x.name} ${x.reason}: ${x.message}`)).toEqual(["same-namespace ListenerNotProgrammed: port 80: no free port left in --gateway-ports 20100-20100"]);
    // And its status says so (ListenerReasonPortUnavailable), the other Gateway's does not.
    const conds = (key: string) => {
      const g = r.gateway!.gateways.get(`${INFRA}/${key}`)!;
      return [g.conditions, ...g.listeners.map((l) => l.conditions)].map((cs) => cs.map((c) => `${c.type}=${c.status}/${c.reason}`).join(" "));
    };
    expect(conds("same-namespace")).toEqual([
      "Accepted=False/ListenersNotValid Programmed=False/Invalid",
      "Accepted=False/PortUnavailable ResolvedRefs=True/ResolvedRefs Programmed=False/Invalid Conflicted=False/NoConflicts",
    ]);
    expect(conds("all-namespaces")).toEqual([
      "Accepted=True/Accepted Programmed=True/Programmed",
      "Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs Programmed=True/Programmed Conflicted=False/NoConflicts",
    ]);
  });

  test("the ports cross the worker wire, whole and as a delta", () => {
    const c = new Compiler(config);
    const first = c.compile(snapshot(BASE, GATEWAYS["same-namespace"])).table;
    const second = c.compile(snapshot(BASE, ...multi("2026-01-02T00:00:00Z", "2026-01-01T00:00:00Z"))).table;
    const decoded = decodeTable(encodeTable(second));
    expect(served(decoded)).toEqual(served(second));
    const sender: BackendRegistry = new Map();
    const receiver: BackendRegistry = new Map();
    const base = decodeTable(encodeTable(first, sender), receiver);
    expect(served(base)).toEqual({ 20100: "same-namespace:80 / → 404, /shared → 404" });
    const patched = applyDelta(base, JSON.parse(JSON.stringify(encodeDelta(first, second, sender))), receiver);
    expect(served(patched)).toEqual(served(second));
  });
});
