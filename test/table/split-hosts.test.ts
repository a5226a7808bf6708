// Which hosts the SNI split sends to node:http2 (table/listener-needs.ts, serving/tls-split.ts):
// the entry the table's own lookup selects for a name (exact or alias, then `*.suffix` for one
// first label, then the hostless rules) holds a gRPC route, or every host needs it (the
// default route does). And when a new table moves a host Bun.serve served to node:http2.
import { describe, expect, test } from "bun:test";
import { answersGrpc, everyHostNeedsNode, hostNeedsNode, hostsMovedToNode, needsNodeListener } from "../../src/table/listener-needs.ts";
import { makeBackend, makeTable, type RouteSpec } from "../proxy/helpers.ts";
import { gatewayTable, type GatewayRouteSpec } from "./gateway-grpc.ts";
import { DEFAULT_COMPILE_CONFIG } from "../compile/config.ts";

const web = (host: string | null): RouteSpec => ({ host, backend: makeBackend([1]) });
const grpc = (host: string | null, path = "/"): RouteSpec => ({ host, path, backend: makeBackend([2], { scheme: "grpc" }) });

describe("hostNeedsNode", () => {
  test("exact, wildcard (one first label) and hostless entries, as the lookup selects them", () => {
    const t = makeTable([web("web.test"), grpc("rpc.test", "/svc.Echo"), grpc("*.wild.test"), web("a.wild.test")]);
    expect(hostNeedsNode(t, "rpc.test")).toBe(true); // one gRPC path makes the host node:http2's
    expect(hostNeedsNode(t, "web.test")).toBe(false);
    expect(hostNeedsNode(t, "b.wild.test")).toBe(true);
    expect(hostNeedsNode(t, "a.wild.test")).toBe(false); // its exact entry wins
    expect(hostNeedsNode(t, "x.b.wild.test")).toBe(false); // two labels: not the wildcard's
    expect(hostNeedsNode(t, "unknown.test")).toBe(false);
    expect(hostNeedsNode(makeTable([web("web.test"), grpc(null)]), "unknown.test")).toBe(true);
    expect(everyHostNeedsNode(t)).toBe(false);
  });

  test("a gRPC default route: every host", () => {
    const t = makeTable([web("web.test")], grpc(null));
    expect(everyHostNeedsNode(t)).toBe(true);
    expect(hostNeedsNode(t, "web.test")).toBe(true);
  });
});

describe("hostsMovedToNode", () => {
  const base = [web("web.test"), grpc("rpc.test")];
  test("a host gaining a gRPC route moves; one losing it, a new ordinary host, or a new table of the same hosts do not", () => {
    const t = makeTable(base);
    expect(hostsMovedToNode(t, makeTable([...base, grpc("web.test", "/svc.Echo")]))).toBe(true);
    expect(hostsMovedToNode(t, makeTable([...base, grpc("new.test")]))).toBe(true);
    expect(hostsMovedToNode(t, makeTable([web("web.test"), web("rpc.test")]))).toBe(false);
    expect(hostsMovedToNode(t, makeTable([...base, web("other.test")]))).toBe(false);
    expect(hostsMovedToNode(t, makeTable(base))).toBe(false);
  });

  test("an ordinary host removed falls to a gRPC wildcard or hostless entry: moved", () => {
    const t = makeTable([...base, grpc("*.wild.test"), web("a.wild.test"), web("b.other.test"), web("*.other.test")]);
    expect(hostsMovedToNode(t, makeTable([...base, grpc("*.wild.test"), web("b.other.test"), web("*.other.test")]))).toBe(true);
    // b.other.test falls to an ordinary wildcard: not moved.
    expect(hostsMovedToNode(t, makeTable([...base, grpc("*.wild.test"), web("a.wild.test"), web("*.other.test")]))).toBe(false);
    const hostless = makeTable([...base, web("*.other.test"), grpc(null)]);
    expect(hostsMovedToNode(hostless, makeTable([...base, grpc(null)]))).toBe(true);
  });
});

// Gateway API (docs/design.md "HTTP/2 and gRPC"): a GRPCRoute's effective hostnames, its
// hostnames intersected with its HTTPS listener's as the compiler keys the table's entries,
// are the names that need node:http2; the listener hostname a name picks is the most specific
// one (apis/v1 ListenerHostname, table/gateway.ts findGatewayEntry), as for a request.
describe("Gateway API routes, per host", () => {
  const listeners = [{ name: "https" }, { name: "wild", hostname: "*.rpc.test" }, { name: "exact", hostname: "one.rpc.test" }, { name: "http", protocol: "HTTP" as const }];
  const services = { web: 10001, echo: 10002 };
  const httpRoute = (name: string, listener: string, hostnames?: string[]) => ({ kind: "HTTPRoute" as const, name, listener, service: "web", ...(hostnames ? { hostnames } : {}) });
  const grpcRoute = (name: string, listener: string, hostnames?: string[]) => ({ kind: "GRPCRoute" as const, name, listener, service: "echo", ...(hostnames ? { hostnames } : {}) });
  const base = [httpRoute("web", "https", ["web.test", "*.web.test"]), grpcRoute("rpc", "https", ["grpc.test", "*.g.test"])];

  test("a GRPCRoute's hostnames, and a listener hostname intersected with a route's (none of its own: the listener's)", () => {
    const t = gatewayTable({ listeners, services, routes: [...base, grpcRoute("wild", "wild"), httpRoute("one", "exact"), grpcRoute("plain", "http", ["h2c.test"])] });
    expect(everyHostNeedsNode(t)).toBe(false);
    expect(needsNodeListener(t)).toBe(true);
    for (const name of ["grpc.test", "a.g.test", "a.b.g.test", "two.rpc.test", "x.y.rpc.test"]) expect([name, hostNeedsNode(t, name)]).toEqual([name, true]);
    // g.test itself is not under `*.g.test` (a `*.` label is one or more labels); one.rpc.test
    // picks its own listener, which holds an HTTPRoute only; an HTTP listener's GRPCRoute
    // answers on the plain port, never on the HTTPS one.
    for (const name of ["web.test", "a.web.test", "g.test", "one.rpc.test", "h2c.test", "unknown.test"]) expect([name, hostNeedsNode(t, name)]).toEqual([name, false]);
  });

  test("only on an HTTP listener: the HTTPS port needs no node:http2 (the plain port's h2c front does)", () => {
    const t = gatewayTable({ listeners, services, routes: [httpRoute("web", "https", ["web.test"]), grpcRoute("plain", "http", ["h2c.test"])] });
    expect(answersGrpc(t)).toBe(true);
    expect(needsNodeListener(t)).toBe(false);
    expect(hostNeedsNode(t, "h2c.test")).toBe(false);
  });

  test("a GRPCRoute without hostnames on a listener without one matches every host: the whole port", () => {
    const t = gatewayTable({ listeners, services, routes: [...base, grpcRoute("all", "https")] });
    expect(everyHostNeedsNode(t)).toBe(true);
    expect(hostNeedsNode(t, "web.test")).toBe(true);
  });

  test("an Ingress host and a Gateway gRPC host on one table: each by its own part", () => {
    const ingress = JSON.stringify({
      apiVersion: "networking.k8s.io/v1", kind: "Ingress", metadata: { name: "shop", namespace: "default" },
      spec: { ingressClassName: "portico", rules: [{ host: "shop.test", http: { paths: [{ path: "/", pathType: "Prefix", backend: { service: { name: "shop", port: { number: 80 } } } }] } }] },
    });
    const cls = JSON.stringify({ apiVersion: "networking.k8s.io/v1", kind: "IngressClass", metadata: { name: "portico" }, spec: { controller: DEFAULT_COMPILE_CONFIG.controllerName } });
    const t = gatewayTable({ listeners, services, routes: base }, cls, ingress);
    expect(t.exact.has("shop.test")).toBe(true);
    expect(hostNeedsNode(t, "shop.test")).toBe(false);
    expect(hostNeedsNode(t, "grpc.test")).toBe(true);
  });

  test("hostsMovedToNode: a new gRPC hostname, a new GRPCRoute listener, or a listener hostname gone moves hosts; an HTTPRoute change does not", () => {
    const t = gatewayTable({ listeners, services, routes: [...base, httpRoute("one", "exact")] });
    const next = (...routes: GatewayRouteSpec[]) => gatewayTable({ listeners, services, routes: [...base, httpRoute("one", "exact"), ...routes] });
    // A GRPCRoute joining an HTTPRoute's hostname: that host now needs node:http2.
    expect(hostsMovedToNode(t, next(grpcRoute("more", "https", ["web.test"])))).toBe(true);
    expect(hostsMovedToNode(t, next(grpcRoute("more", "https", ["new.test"])))).toBe(true);
    expect(hostsMovedToNode(t, next(grpcRoute("more", "https", ["*.new.test"])))).toBe(true);
    expect(hostsMovedToNode(t, next(grpcRoute("wild", "wild")))).toBe(true);
    expect(hostsMovedToNode(t, next(httpRoute("other", "https", ["other.test"])))).toBe(false);
    expect(hostsMovedToNode(t, next())).toBe(false);
    // The exact listener gone: one.rpc.test falls to `*.rpc.test`, whose GRPCRoute answers it.
    const withWild = gatewayTable({ listeners, services, routes: [...base, httpRoute("one", "exact"), grpcRoute("wild", "wild")] });
    const noExact = gatewayTable({ listeners: listeners.filter((l) => l.name !== "exact"), services, routes: [...base, grpcRoute("wild", "wild")] });
    expect(hostNeedsNode(withWild, "one.rpc.test")).toBe(false);
    expect(hostNeedsNode(noExact, "one.rpc.test")).toBe(true);
    expect(hostsMovedToNode(withWild, noExact)).toBe(true);
  });
});
