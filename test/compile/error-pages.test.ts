// Which backend a route's error pages and its no-endpoints fallback use, as ingress-nginx's
// controller decides (internal/ingress/controller/controller.go at dbb11b92: the loop after
// mergeAlternativeBackends, shouldCreateUpstreamForLocationDefaultBackend, getDefaultUpstream),
// and how they cross the wire to the workers (table/wire.ts).
import { describe, expect, test } from "bun:test";
import { Compiler, compile } from "../../src/compile/compile.ts";
import type { CompileConfig } from "../../src/compile/config.ts";
import { lookup } from "../../src/table/lookup.ts";
import type { RouteTable } from "../../src/table/types.ts";
import { applyDelta, decodeTable, encodeDelta, encodeTable, type BackendRegistry, type WireDelta, type WireTable } from "../../src/table/wire.ts";
import { buildTable } from "../../src/table/build.ts";
import { DEFAULT_COMPILE_CONFIG } from "./config.ts";
import { loadFixture } from "./snapshot.ts";

const svc = (name: string, ports = "[{name: web, port: 8080}, {name: http, port: 80}]") => `
apiVersion: v1
kind: Service
metadata: {name: ${name}, namespace: shop}
spec: {ports: ${ports}}`;
const slice = (name: string, ips: string[]) => `
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: ${name}-x, namespace: shop, labels: {kubernetes.io/service-name: ${name}}}
addressType: IPv4
ports: [{name: web, port: 9000}, {name: http, port: 9001}]
endpoints: [${ips.map((ip) => `{addresses: ["${ip}"], conditions: {ready: true}}`).join(", ")}]`;
const ing = (name: string, host: string, service: string, ann: Record<string, string>) => `
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: ${name}, namespace: shop, creationTimestamp: "2026-01-01T00:00:00Z", annotations: ${JSON.stringify(ann)}}
spec:
  ingressClassName: portico
  rules: [{host: ${host}, http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: ${service}, port: {number: 80}}}}]}}]`;

const A = "nginx.ingress.kubernetes.io/";
const withFlags: CompileConfig = { ...DEFAULT_COMPILE_CONFIG, defaultBackendService: { namespace: "shop", name: "global", port: 80 } };

function docs(...parts: string[]): string {
  return parts.join("\n---\n");
}

const base = [svc("app"), slice("app", ["10.0.0.1"]), svc("down"), slice("down", []), svc("errors"), slice("errors", ["10.0.0.9"]), svc("idle"), slice("idle", []), svc("global"), slice("global", ["10.0.0.7"])];

describe("error backend and fallback", () => {
  const fx = loadFixture(
    docs(
      ...base,
      ing("own", "own.test", "app", { [`${A}custom-http-errors`]: "404", [`${A}default-backend`]: "errors" }),
      ing("idle", "idle.test", "app", { [`${A}custom-http-errors`]: "404", [`${A}default-backend`]: "idle" }),
      ing("only-backend", "only.test", "app", { [`${A}default-backend`]: "errors" }),
      ing("fallback", "fallback.test", "down", { [`${A}default-backend`]: "errors", [`${A}backend-protocol`]: "HTTPS" }),
      ing("optout", "optout.test", "app", { [`${A}custom-http-errors`]: "503", [`${A}disable-proxy-intercept-errors`]: "true" }),
      ing("missing", "missing.test", "down", { [`${A}default-backend`]: "nope" }),
    ),
  );
  const r = compile(fx.snapshot, withFlags);
  const at = (host: string) => lookup(r.table, host, "/")?.route;

  test("default-backend with endpoints takes the annotation's statuses, on its first port, over plain HTTP", () => {
    const p = at("own.test")?.errorPages;
    expect(p?.codes).toEqual([404]);
    expect(p?.intercept).toBe(true);
    expect(p?.backend?.id).toBe("shop/errors:0");
    expect(p?.backend?.port).toBe("8080");
    expect(p?.backend?.endpoints.map((u) => u.authority)).toEqual(["10.0.0.9:9000"]);
    expect(p?.backend?.scheme).toBe("http");
    expect(at("own.test")?.fallback).toBeUndefined(); // its own Service has endpoints
  });

  test("default-backend without endpoints: the error requests go to --default-backend-service", () => {
    expect(at("idle.test")?.errorPages?.backend?.id).toBe("shop/global:80");
  });

  test("default-backend alone: no error pages, no fallback while the Service has endpoints", () => {
    expect(at("only.test")?.errorPages).toBeUndefined();
    expect(at("only.test")?.fallback).toBeUndefined();
  });

  test("a Service without endpoints falls back to default-backend, with the Ingress's backend-protocol", () => {
    const f = at("fallback.test")?.fallback;
    expect(f?.id).toBe("shop/errors:0#https");
    expect(f?.scheme).toBe("https");
    expect(at("fallback.test")?.backend.id).toBe("shop/down:80#https");
  });

  test("disable-proxy-intercept-errors without the flag's list: the pod's statuses are relayed", () => {
    expect(at("optout.test")?.errorPages).toMatchObject({ codes: [503], intercept: false });
  });

  test("a default-backend Service that does not exist is a diagnostic and is not used", () => {
    expect(at("missing.test")?.fallback).toBeUndefined();
    expect(r.diagnostics.find((d) => d.name === "missing" && d.reason === "ServiceNotFound")).toMatchObject({ reason: "ServiceNotFound", message: "annotation default-backend: Service shop/nope not found; not used" });
  });

  test("no default backend anywhere: the error pages have no backend (404)", () => {
    const r2 = compile(fx.snapshot, DEFAULT_COMPILE_CONFIG);
    expect(lookup(r2.table, "idle.test", "/")?.route.errorPages?.backend).toBeNull();
  });

  test("--custom-http-errors: routes without the annotation get the flag's list and backend", () => {
    const r3 = compile(fx.snapshot, { ...withFlags, customHttpErrors: [404, 502] });
    expect(lookup(r3.table, "only.test", "/")?.route.errorPages).toMatchObject({ codes: [404, 502], intercept: true });
    expect(lookup(r3.table, "only.test", "/")?.route.errorPages?.backend?.id).toBe("shop/global:80");
    // The annotation's list replaces the flag's; the opt-out is overridden by the flag's http-level `on`.
    expect(lookup(r3.table, "optout.test", "/")?.route.errorPages).toMatchObject({ codes: [503], intercept: true });
  });
});

describe("the default-backend Service is an input of the host entry", () => {
  test("its endpoints appearing and going rebuild the routes that name it", () => {
    const before = loadFixture(docs(...base, ing("idle", "idle.test", "app", { [`${A}custom-http-errors`]: "404", [`${A}default-backend`]: "idle" })));
    const c = new Compiler(withFlags);
    const t1 = c.compile(before.snapshot).table;
    expect(lookup(t1, "idle.test", "/")?.route.errorPages?.backend?.id).toBe("shop/global:80");
    const after = loadFixture(docs(...base.map((d) => (d.includes("name: idle-x") ? slice("idle", ["10.0.0.5"]) : d)), ing("idle", "idle.test", "app", { [`${A}custom-http-errors`]: "404", [`${A}default-backend`]: "idle" })));
    // The same Ingress object, so only the Service side changed.
    const snap = { ...after.snapshot, ingresses: before.snapshot.ingresses };
    const t2 = c.compile(snap).table;
    expect(lookup(t2, "idle.test", "/")?.route.errorPages?.backend?.id).toBe("shop/idle:0");
    expect(c.compile(before.snapshot).table === t2).toBe(false);
  });
});

describe("wire: error pages and fallback", () => {
  const fx = loadFixture(
    docs(
      ...base,
      ing("own", "own.test", "app", { [`${A}custom-http-errors`]: "404,500", [`${A}default-backend`]: "errors" }),
      ing("fallback", "fallback.test", "down", { [`${A}default-backend`]: "errors" }),
    ),
  );
  const table = compile(fx.snapshot, { ...withFlags, customHttpErrors: [503] }).table;
  const roundTrip = (t: RouteTable) => decodeTable(JSON.parse(JSON.stringify(encodeTable(t))) as WireTable);
  const view = (t: RouteTable, host: string) => {
    const r = lookup(t, host, "/")?.route;
    return { pages: r?.errorPages && { ...r.errorPages, backend: r.errorPages.backend && { ...r.errorPages.backend } }, fallback: r?.fallback && { ...r.fallback } };
  };

  test("both survive the full table round trip", () => {
    const back = roundTrip(table);
    for (const host of ["own.test", "fallback.test"]) expect(view(back, host)).toEqual(view(table, host));
    expect(view(back, "own.test").pages?.codes).toEqual([404, 500]);
    expect(view(back, "fallback.test").fallback?.id).toBe("shop/errors:0");
    expect(view(back, "fallback.test").pages?.backend?.id).toBe("shop/global:80");
  });

  test("and a delta: each backend shipped once, then named by id", () => {
    const empty = buildTable([], null);
    const sender: BackendRegistry = new Map();
    const receiver: BackendRegistry = new Map();
    decodeTable(JSON.parse(JSON.stringify(encodeTable(empty, sender))) as WireTable, receiver);
    const delta = JSON.parse(JSON.stringify(encodeDelta(empty, table, sender))) as WireDelta;
    expect(delta.backends.map((b) => b.id).sort()).toEqual(["shop/app:80", "shop/down:80", "shop/errors:0", "shop/global:80"]);
    const got = applyDelta(empty, delta, receiver);
    expect(lookup(got, "fallback.test", "/")?.route.fallback).toBe(receiver.get("shop/errors:0"));
    expect(lookup(got, "own.test", "/")?.route.errorPages?.backend).toBe(receiver.get("shop/errors:0"));
  });
});
