// Gateway API compile: the GATEWAY-HTTP core conformance tests' objects and expectations
// (kubernetes-sigs/gateway-api v1.6, conformance/tests/*.go and *.yaml), asked of the compiled
// table directly. Named after the upstream tests.
import { describe, expect, test } from "bun:test";
import { APP, BASE, type Condition, conditionsText, GATEWAYS, INFRA, snapshot, WEB, World } from "./base.ts";
import { invalidClientValidationGateway, invalidDefaultClientValidationGateway, validatedHttpsListener } from "./client-validation-yaml.ts";
import { needsClientCertificates, strictClientCas } from "../../src/table/client-certs.ts";
import { hostNeedsNode, httpsListenerKind } from "../../src/table/listener-needs.ts";
import { clientChainTrusted } from "../../src/kinds/client-cert.ts";
import { X509Certificate } from "node:crypto";
import { effectiveHostnames, hostnameMatches, intersectHostname, requestHostname } from "../../src/compile/gateway/hostnames.ts";
import { prefixMatches } from "../../src/table/gateway.ts";
import { selectorMatches } from "../../src/compile/gateway/labels.ts";
import { createCertificate } from "../tls/pki.ts";
import { compile, Compiler } from "../../src/compile/compile.ts";
import { parseObject } from "../../src/model/kinds.ts";
import { serializeTable } from "../../src/table/serialize.ts";
import { decodeTable, encodeTable } from "../../src/table/wire.ts";
import { DEFAULT_COMPILE_CONFIG } from "../compile/config.ts";

const route = (name: string, body: string, ns = INFRA) => `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: ${name}, namespace: ${ns}, generation: 1 }
spec:
${body}`;

/** `Type=Status/Reason` of each condition, in order. */
const conds = (o: { conditions: readonly Condition[] }): string => conditionsText(o.conditions);

const V1 = `${INFRA}/infra-backend-v1`;
const V2 = `${INFRA}/infra-backend-v2`;
const V3 = `${INFRA}/infra-backend-v3`;

describe("hostname rules", () => {
  test("a wildcard matches one or more labels, never the bare suffix", () => {
    expect(hostnameMatches("*.example.io", "a.example.io")).toBe(true);
    expect(hostnameMatches("*.example.io", "a.b.example.io")).toBe(true);
    expect(hostnameMatches("*.example.io", "example.io")).toBe(false);
    expect(hostnameMatches("*.example.io", "aexample.io")).toBe(false);
  });
  test("intersections", () => {
    expect(intersectHostname("very.specific.com", "*.specific.com")).toBe("very.specific.com");
    expect(intersectHostname("*.wildcard.io", "foo.bar.wildcard.io")).toBe("foo.bar.wildcard.io");
    expect(intersectHostname("*.wildcard.io", "wildcard.io")).toBeNull();
    expect(intersectHostname("*.example.com", "*.a.example.com")).toBe("*.a.example.com");
    expect(intersectHostname("*.a.example.com", "*.example.com")).toBe("*.a.example.com");
    expect(effectiveHostnames(null, [])).toEqual(["*"]);
    expect(effectiveHostnames("x.com", [])).toEqual(["x.com"]);
    expect(effectiveHostnames("*.wildcard.io", ["non.matching.com", "wildcard.io", "foo.wildcard.io"])).toEqual(["foo.wildcard.io"]);
  });
  test("the port in Host is ignored; names compare lowercased", () => {
    expect(requestHostname("Very.Specific.com:1234")).toBe("very.specific.com");
    expect(requestHostname("[::1]:80")).toBe("[::1]");
    expect(requestHostname("example.com.")).toBe("example.com");
  });
  test("PathPrefix matches per path element, a trailing / ignored", () => {
    expect(prefixMatches("/v2", "/v2")).toBe(true);
    expect(prefixMatches("/v2", "/v2/")).toBe(true);
    expect(prefixMatches("/v2", "/v2/example")).toBe(true);
    expect(prefixMatches("/v2", "/v2example")).toBe(false);
    expect(prefixMatches("", "/anything")).toBe(true);
  });
  test("label selectors: matchLabels and matchExpressions, unknown operators fail closed", () => {
    expect(selectorMatches({ matchLabels: { a: "1" } }, { a: "1", b: "2" })).toBe(true);
    expect(selectorMatches({ matchExpressions: [{ key: "a", operator: "In", values: ["1", "3"] }] }, { a: "1" })).toBe(true);
    expect(selectorMatches({ matchExpressions: [{ key: "a", operator: "NotIn", values: ["1"] }] }, { a: "1" })).toBe(false);
    expect(selectorMatches({ matchExpressions: [{ key: "a", operator: "DoesNotExist" }] }, {})).toBe(true);
    expect(selectorMatches({ matchExpressions: [{ key: "a", operator: "Gt", values: ["0"] }] }, { a: "1" })).toBe(false);
  });
});

describe("GATEWAY-HTTP core (compile)", () => {
  test("HTTPRouteSimpleSameNamespace", () => {
    const w = World.of(GATEWAYS["same-namespace"], route("gateway-conformance-infra-test", `  parentRefs: [{ name: same-namespace }]
  rules: [{ backendRefs: [{ name: infra-backend-v1, port: 8080 }] }]`));
    expect(w.answer({ path: "/" })).toBe(V1);
    expect(w.routeConditions(INFRA, "gateway-conformance-infra-test")).toEqual(["Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs"]);
    expect(w.listener(`${INFRA}/same-namespace`, "http").attachedRoutes).toBe(1);
  });

  test("HTTPRouteMatching", () => {
    const w = World.of(GATEWAYS["same-namespace"], route("matching", `  parentRefs: [{ name: same-namespace }]
  rules:
    - matches: [{ path: { type: PathPrefix, value: / } }, { headers: [{ name: version, value: one }] }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
    - matches: [{ path: { type: PathPrefix, value: /v2 } }, { headers: [{ name: version, value: two }] }]
      backendRefs: [{ name: infra-backend-v2, port: 8080 }]`));
    expect(w.answer({ path: "/" })).toBe(V1);
    expect(w.answer({ path: "/example" })).toBe(V1);
    expect(w.answer({ path: "/", headers: { Version: "one" } })).toBe(V1);
    expect(w.answer({ path: "/v2" })).toBe(V2);
    expect(w.answer({ path: "/v2/example" })).toBe(V2);
    expect(w.answer({ path: "/", headers: { Version: "two" } })).toBe(V2);
    expect(w.answer({ path: "/v2/" })).toBe(V2);
    expect(w.answer({ path: "/v2example" })).toBe(V1);
    expect(w.answer({ path: "/foo/v2/example" })).toBe(V1);
  });

  test("HTTPRouteHeaderMatching", () => {
    const w = World.of(GATEWAYS["same-namespace"], route("header-matching", `  parentRefs: [{ name: same-namespace }]
  rules:
    - { matches: [{ headers: [{ name: version, value: one }] }], backendRefs: [{ name: infra-backend-v1, port: 8080 }] }
    - { matches: [{ headers: [{ name: version, value: two }] }], backendRefs: [{ name: infra-backend-v2, port: 8080 }] }
    - { matches: [{ headers: [{ name: version, value: two }, { name: color, value: orange }] }], backendRefs: [{ name: infra-backend-v1, port: 8080 }] }
    - { matches: [{ headers: [{ name: color, value: blue }] }, { headers: [{ name: color, value: green }] }], backendRefs: [{ name: infra-backend-v1, port: 8080 }] }
    - { matches: [{ headers: [{ name: color, value: red }] }, { headers: [{ name: color, value: yellow }] }], backendRefs: [{ name: infra-backend-v2, port: 8080 }] }`));
    expect(w.answer({ path: "/", headers: { Version: "one" } })).toBe(V1);
    expect(w.answer({ path: "/", headers: { Version: "two" } })).toBe(V2);
    expect(w.answer({ path: "/", headers: { Version: "two", Color: "orange" } })).toBe(V1);
    expect(w.answer({ path: "/", headers: { Version: "two", Color: "blue" } })).toBe(V2);
    expect(w.answer({ path: "/", headers: { Color: "orange" } })).toBe("404");
    expect(w.answer({ path: "/", headers: { "Some-Other-Header": "one" } })).toBe("404");
    expect(w.answer({ path: "/", headers: { Color: "blue" } })).toBe(V1);
    expect(w.answer({ path: "/", headers: { Color: "green" } })).toBe(V1);
    expect(w.answer({ path: "/", headers: { Color: "red" } })).toBe(V2);
    expect(w.answer({ path: "/", headers: { Color: "yellow" } })).toBe(V2);
    expect(w.answer({ path: "/", headers: { Color: "purple" } })).toBe("404");
  });

  test("HTTPRouteHostnameIntersection", () => {
    const gw = `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: httproute-hostname-intersection, namespace: ${INFRA} }
spec:
  gatewayClassName: portico
  listeners:
    - { name: listener-1, port: 80, protocol: HTTP, hostname: very.specific.com, allowedRoutes: { namespaces: { from: Same } } }
    - { name: listener-2, port: 80, protocol: HTTP, hostname: "*.wildcard.io", allowedRoutes: { namespaces: { from: Same } } }
    - { name: listener-3, port: 80, protocol: HTTP, hostname: "*.anotherwildcard.io", allowedRoutes: { namespaces: { from: Same } } }
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: httproute-hostname-intersection-all, namespace: ${INFRA} }
spec:
  gatewayClassName: portico
  listeners: [{ name: listener-1, port: 80, protocol: HTTP, allowedRoutes: { namespaces: { from: Same } } }]`;
    const parent = `  parentRefs: [{ name: httproute-hostname-intersection, namespace: ${INFRA} }]`;
    const w = World.of(
      gw,
      route("specific-host-matches-listener-specific-host", `${parent}
  hostnames: [non.matching.com, "*.nonmatchingwildcard.io", very.specific.com]
  rules: [{ matches: [{ path: { type: PathPrefix, value: /s1 } }], backendRefs: [{ name: infra-backend-v1, port: 8080 }] }]`),
      route("specific-host-matches-listener-wildcard-host", `${parent}
  hostnames: [non.matching.com, wildcard.io, foo.wildcard.io, bar.wildcard.io, foo.bar.wildcard.io]
  rules: [{ matches: [{ path: { type: PathPrefix, value: /s2 } }], backendRefs: [{ name: infra-backend-v2, port: 8080 }] }]`),
      route("wildcard-host-matches-listener-specific-host", `${parent}
  hostnames: [non.matching.com, "*.specific.com"]
  rules: [{ matches: [{ path: { type: PathPrefix, value: /s3 } }], backendRefs: [{ name: infra-backend-v3, port: 8080 }] }]`),
      route("wildcard-host-matches-listener-wildcard-host", `${parent}
  hostnames: ["*.anotherwildcard.io"]
  rules: [{ matches: [{ path: { type: PathPrefix, value: /s4 } }], backendRefs: [{ name: infra-backend-v1, port: 8080 }] }]`),
      route("no-intersecting-hosts", `${parent}
  hostnames: [specific.but.wrong.com, wildcard.io]
  rules: [{ matches: [{ path: { type: PathPrefix, value: /s5 } }], backendRefs: [{ name: infra-backend-v2, port: 8080 }] }]`),
      route("httproute-hostname-intersection-all", `  parentRefs: [{ name: httproute-hostname-intersection-all, namespace: ${INFRA} }]
  hostnames: [first.com, sub.first.com, second.com, sub.second.com]
  rules: [{ backendRefs: [{ name: infra-backend-v2, port: 8080 }] }]`),
    );
    const cases: [string, string, string][] = [
      ["very.specific.com", "/s1", V1],
      ["very.specific.com:1234", "/s1", V1],
      ["non.matching.com", "/s1", "404"],
      ["foo.nonmatchingwildcard.io", "/s1", "404"],
      ["foo.wildcard.io", "/s1", "404"],
      ["very.specific.com", "/non-matching-prefix", "404"],
      ["foo.wildcard.io", "/s2", V2],
      ["bar.wildcard.io", "/s2", V2],
      ["foo.bar.wildcard.io", "/s2", V2],
      ["non.matching.com", "/s2", "404"],
      ["wildcard.io", "/s2", "404"],
      ["very.specific.com", "/s2", "404"],
      ["foo.wildcard.io", "/non-matching-prefix", "404"],
      ["very.specific.com", "/s3", V3],
      ["non.matching.com", "/s3", "404"],
      ["foo.specific.com", "/s3", "404"],
      ["foo.wildcard.io", "/s3", "404"],
      ["foo.anotherwildcard.io", "/s4", V1],
      ["bar.anotherwildcard.io", "/s4", V1],
      ["foo.bar.anotherwildcard.io", "/s4", V1],
      ["anotherwildcard.io", "/s4", "404"],
      ["foo.wildcard.io", "/s4", "404"],
      ["very.specific.com", "/s4", "404"],
      ["foo.anotherwildcard.io", "/non-matching-prefix", "404"],
      ["specific.but.wrong.com", "/s5", "404"],
      ["wildcard.io", "/s5", "404"],
      ["first.com", "/", V2],
      ["sub.first.com", "/", V2],
      ["second.com", "/", V2],
      ["sub.second.com", "/", V2],
    ];
    expect(cases.map(([host, path]) => `${host}${path} ${w.answer({ host, path })}`)).toEqual(cases.map(([host, path, want]) => `${host}${path} ${want}`));
    expect(w.routeConditions(INFRA, "no-intersecting-hosts")).toEqual(["Accepted=False/NoMatchingListenerHostname ResolvedRefs=True/ResolvedRefs"]);
    const gwKey = `${INFRA}/httproute-hostname-intersection`;
    expect([1, 2, 3].map((i) => w.listener(gwKey, `listener-${i}`).attachedRoutes)).toEqual([2, 1, 1]);
  });

  test("HTTPRouteCrossNamespace", () => {
    const w = World.of(GATEWAYS["backend-namespaces"], route("cross-namespace", `  parentRefs: [{ name: backend-namespaces, namespace: ${INFRA} }]
  rules: [{ backendRefs: [{ name: web-backend, port: 8080 }] }]`, WEB));
    expect(w.answer({ path: "/" })).toBe(`${WEB}/web-backend`);
    expect(w.routeConditions(WEB, "cross-namespace")).toEqual(["Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs"]);
  });

  test("HTTPRouteReferenceGrant", () => {
    const grant = `
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: { name: reference-grant, namespace: ${APP} }
spec:
  from: [{ group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: ${INFRA} }]
  to: [{ group: "", kind: Service, name: app-backend-v1 }]`;
    const r = route("reference-grant", `  parentRefs: [{ name: same-namespace }]
  rules: [{ backendRefs: [{ name: app-backend-v1, namespace: ${APP}, port: 8080 }] }]`);
    const granted = World.of(GATEWAYS["same-namespace"], grant, r);
    expect(granted.answer({ path: "/" })).toBe(`${APP}/app-backend-v1`);
    expect(granted.routeConditions(INFRA, "reference-grant")).toEqual(["Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs"]);
    const refused = World.of(GATEWAYS["same-namespace"], r);
    expect(refused.answer({ path: "/" })).toBe("500");
    expect(refused.routeConditions(INFRA, "reference-grant")).toEqual(["Accepted=True/Accepted ResolvedRefs=False/RefNotPermitted"]);
  });

  test("HTTPRouteInvalidCrossNamespaceBackendRef", () => {
    const w = World.of(GATEWAYS["same-namespace"], route("invalid-cross-namespace-backend-ref", `  parentRefs: [{ name: same-namespace }]
  rules: [{ backendRefs: [{ name: web-backend, namespace: ${WEB}, port: 8080 }] }]`));
    expect(w.routeConditions(INFRA, "invalid-cross-namespace-backend-ref")).toEqual(["Accepted=True/Accepted ResolvedRefs=False/RefNotPermitted"]);
    expect(w.answer({ path: "/" })).toBe("500");
    expect(w.listener(`${INFRA}/same-namespace`, "http").attachedRoutes).toBe(1);
  });

  test("HTTPRouteInvalidNonExistentBackendRef", () => {
    const w = World.of(GATEWAYS["same-namespace"], route("invalid-nonexistent-backend-ref", `  parentRefs: [{ name: same-namespace }]
  rules: [{ backendRefs: [{ name: nonexistent, port: 8080 }] }]`));
    expect(w.routeConditions(INFRA, "invalid-nonexistent-backend-ref")).toEqual(["Accepted=True/Accepted ResolvedRefs=False/BackendNotFound"]);
    expect(w.answer({ path: "/" })).toBe("500");
  });

  test("HTTPRouteInvalidBackendRefUnknownKind", () => {
    const w = World.of(GATEWAYS["same-namespace"], route("invalid-backend-ref-unknown-kind", `  parentRefs: [{ name: same-namespace }]
  rules: [{ backendRefs: [{ group: unknownkind.example.com, kind: NonExistent, name: infra-backend-v1, port: 8080 }] }]`));
    expect(w.routeConditions(INFRA, "invalid-backend-ref-unknown-kind")).toEqual(["Accepted=True/Accepted ResolvedRefs=False/InvalidKind"]);
    expect(w.answer({ path: "/" })).toBe("500");
  });

  test("HTTPRouteInvalidParentRefNotMatchingSectionName", () => {
    const w = World.of(GATEWAYS["same-namespace"], route("httproute-listener-not-matching-section-name", `  parentRefs: [{ name: same-namespace, sectionName: unknown }]
  rules: [{ backendRefs: [{ name: infra-backend-v1, port: 8080 }] }]`));
    expect(w.routeConditions(INFRA, "httproute-listener-not-matching-section-name")).toEqual(["Accepted=False/NoMatchingParent ResolvedRefs=True/ResolvedRefs"]);
    expect(w.answer({ path: "/" })).toBe("404");
  });

  test("HTTPRouteInvalidParentRefNotMatchingListenerPort", () => {
    const w = World.of(GATEWAYS["same-namespace"], route("httproute-listener-not-matching-route-port", `  parentRefs: [{ name: same-namespace, port: 81 }]
  rules: [{ backendRefs: [{ name: infra-backend-v1, port: 8080 }] }]`));
    expect(w.routeConditions(INFRA, "httproute-listener-not-matching-route-port")).toEqual(["Accepted=False/NoMatchingParent ResolvedRefs=True/ResolvedRefs"]);
  });

  test("HTTPRouteInvalidCrossNamespaceParentRef", () => {
    const w = World.of(GATEWAYS["same-namespace"], route("invalid-cross-namespace-parent-ref", `  parentRefs: [{ name: same-namespace, namespace: ${INFRA} }]
  rules: [{ backendRefs: [{ name: web-backend, port: 8080 }] }]`, WEB));
    expect(w.routeConditions(WEB, "invalid-cross-namespace-parent-ref")).toEqual(["Accepted=False/NotAllowedByListeners ResolvedRefs=True/ResolvedRefs"]);
    expect(w.answer({ path: "/" })).toBe("404");
    expect(w.listener(`${INFRA}/same-namespace`, "http").attachedRoutes).toBe(0);
  });

  test("HTTPRouteWeight (weights kept per backend)", () => {
    const w = World.of(GATEWAYS["same-namespace"], route("weighted-backends", `  parentRefs: [{ name: same-namespace }]
  rules:
    - backendRefs:
        - { name: infra-backend-v1, port: 8080, weight: 70 }
        - { name: infra-backend-v2, port: 8080, weight: 30 }
        - { name: infra-backend-v3, port: 8080, weight: 0 }`));
    const e = w.match({ path: "/" })!;
    // A weight of 0 takes no requests (HTTPBackendRef.weight).
    expect(e.choices.map((c) => `${c.match.route.backend.service}:${c.weight}`)).toEqual(["infra-backend-v1:70", "infra-backend-v2:30"]);
    expect(e.totalWeight).toBe(100);
  });

  test("precedence across routes: the oldest route wins a tie, then namespace/name", () => {
    const mk = (name: string, ts: string, svc: string) => `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: ${name}, namespace: ${INFRA}, creationTimestamp: "${ts}" }
spec:
  parentRefs: [{ name: same-namespace }]
  rules: [{ matches: [{ path: { type: PathPrefix, value: /same } }], backendRefs: [{ name: ${svc}, port: 8080 }] }]`;
    expect(World.of(GATEWAYS["same-namespace"], mk("a", "2024-01-02T00:00:00Z", "infra-backend-v1"), mk("b", "2024-01-01T00:00:00Z", "infra-backend-v2")).answer({ path: "/same" })).toBe(V2);
    expect(World.of(GATEWAYS["same-namespace"], mk("a", "2024-01-01T00:00:00Z", "infra-backend-v1"), mk("b", "2024-01-01T00:00:00Z", "infra-backend-v2")).answer({ path: "/same" })).toBe(V1);
  });

  test("no Gateway API object: no table (the request path pays one null check)", () => {
    const w = new World(new World(World.of().snap).snap);
    expect(World.of().result.table).toBeNull();
    expect(w.result.routes).toEqual([]);
  });

  test("HTTPRouteExactPathMatching", () => {
    const w = World.of(GATEWAYS["same-namespace"], route("exact-path-matching", `  parentRefs: [{ name: same-namespace }]
  rules:
    - { matches: [{ path: { type: Exact, value: /one } }], backendRefs: [{ name: infra-backend-v1, port: 8080 }] }
    - { matches: [{ path: { type: Exact, value: /two } }], backendRefs: [{ name: infra-backend-v2, port: 8080 }] }`));
    expect(["/one", "/two", "/", "/one/example", "/two/"].map((path) => w.answer({ path }))).toEqual([V1, V2, "404", "404", "404"]);
  });

  test("HTTPRoutePathMatchOrder", () => {
    const r = (type: string, value: string, svc: string) => `    - { matches: [{ path: { type: ${type}, value: ${value} } }], backendRefs: [{ name: ${svc}, port: 8080 }] }`;
    const w = World.of(GATEWAYS["same-namespace"], route("path-matching-order", `  parentRefs: [{ name: same-namespace }]
  rules:
${[r("Exact", "/match", "infra-backend-v1"), r("Exact", "/match/exact", "infra-backend-v2"), r("Exact", "/match/exact/one", "infra-backend-v3"), r("PathPrefix", "/match/", "infra-backend-v3"), r("PathPrefix", "/match/prefix/", "infra-backend-v1"), r("PathPrefix", "/match/prefix/one", "infra-backend-v2")].join("\n")}`));
    const cases: [string, string][] = [["/match/exact/one", V3], ["/match/exact", V2], ["/match", V1], ["/match/prefix/one/any", V2], ["/match/prefix/any", V1], ["/match/any", V3]];
    expect(cases.map(([path]) => `${path} ${w.answer({ path })}`)).toEqual(cases.map(([path, want]) => `${path} ${want}`));
  });

  test("HTTPRouteMatchingAcrossRoutes", () => {
    const w = World.of(
      GATEWAYS["same-namespace"],
      route("matching-part1", `  parentRefs: [{ name: same-namespace }]
  hostnames: [example.com, example.net]
  rules:
    - matches: [{ path: { type: PathPrefix, value: / } }, { headers: [{ name: version, value: one }] }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]`),
      route("matching-part2", `  parentRefs: [{ name: same-namespace }]
  hostnames: [example.com]
  rules:
    - matches: [{ path: { type: PathPrefix, value: /v2 } }, { headers: [{ name: version, value: two }] }]
      backendRefs: [{ name: infra-backend-v2, port: 8080 }]`),
    );
    const cases: [string, string, Record<string, string>, string][] = [
      ["example.com", "/", {}, V1],
      ["example.com", "/example", {}, V1],
      ["example.net", "/example", {}, V1],
      ["example.com", "/example", { Version: "one" }, V1],
      ["example.com", "/v2", {}, V2],
      ["example.net", "/v2", {}, V1],
      ["example.com", "/v2/example", {}, V2],
      ["example.com", "/", { Version: "two" }, V2],
    ];
    expect(cases.map(([host, path, headers]) => `${host}${path} ${w.answer({ host, path, headers })}`)).toEqual(cases.map(([host, path, , want]) => `${host}${path} ${want}`));
  });

  test("HTTPRouteListenerHostnameMatching", () => {
    const l = (n: number, host: string) => `    - { name: listener-${n}, port: 80, protocol: HTTP, hostname: "${host}", allowedRoutes: { namespaces: { from: Same } } }`;
    const gw = `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: httproute-listener-hostname-matching, namespace: ${INFRA} }
spec:
  gatewayClassName: portico
  listeners:
${[l(1, "bar.com"), l(2, "foo.bar.com"), l(3, "*.bar.com"), l(4, "*.foo.com")].join("\n")}`;
    const p = (section: string) => `{ name: httproute-listener-hostname-matching, namespace: ${INFRA}, sectionName: ${section} }`;
    const w = World.of(
      gw,
      route("backend-v1", `  parentRefs: [${p("listener-1")}]\n  rules: [{ backendRefs: [{ name: infra-backend-v1, port: 8080 }] }]`),
      route("backend-v2", `  parentRefs: [${p("listener-2")}]\n  rules: [{ backendRefs: [{ name: infra-backend-v2, port: 8080 }] }]`),
      route("backend-v3", `  parentRefs: [${p("listener-3")}, ${p("listener-4")}]\n  rules: [{ backendRefs: [{ name: infra-backend-v3, port: 8080 }] }]`),
    );
    const cases: [string, string][] = [
      ["bar.com", V1],
      ["foo.bar.com", V2],
      ["baz.bar.com", V3],
      ["boo.bar.com", V3],
      ["multiple.prefixes.bar.com", V3],
      ["multiple.prefixes.foo.com", V3],
      ["foo.com", "404"],
      ["no.matching.host", "404"],
    ];
    expect(cases.map(([host]) => `${host} ${w.answer({ host, path: "/" })}`)).toEqual(cases.map(([host, want]) => `${host} ${want}`));
  });

  test("HTTPRouteNoBackendRefs", () => {
    const w = World.of(GATEWAYS["same-namespace"], route("omitted-backendrefs", `  parentRefs: [{ name: same-namespace }]
  rules:
    - matches: [{ path: { type: Exact, value: /omitted-no-forward } }]
    - matches: [{ path: { type: Exact, value: /empty-no-forward } }]
      backendRefs: []
    - matches: [{ path: { type: PathPrefix, value: / } }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]`));
    expect(["/forward", "/omitted-no-forward", "/empty-no-forward"].map((path) => w.answer({ path }))).toEqual([V1, "500", "500"]);
    expect(w.routeConditions(INFRA, "omitted-backendrefs")).toEqual(["Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs"]);
  });

  test("HTTPRouteInvalidReferenceGrant", () => {
    const g = (name: string, ns: string, from: string, to: string) => `
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: { name: ${name}, namespace: ${ns} }
spec: { from: [${from}], to: [${to}] }`;
    const okFrom = `{ group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: ${INFRA} }`;
    const okTo = `{ group: "", kind: Service, name: web-backend }`;
    const w = World.of(
      GATEWAYS["same-namespace"],
      g("reference-grant-wrong-namespace", INFRA, okFrom, okTo),
      g("reference-grant-wrong-from-group", WEB, `{ group: not-the-group-youre-looking-for, kind: HTTPRoute, namespace: ${INFRA} }`, okTo),
      g("reference-grant-wrong-from-kind", WEB, `{ group: gateway.networking.k8s.io, kind: Gateway, namespace: ${INFRA} }`, okTo),
      g("reference-grant-wrong-from-namespace", WEB, `{ group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: not-the-namespace-youre-looking-for }`, okTo),
      g("reference-grant-wrong-to-group", WEB, okFrom, `{ group: not-the-group-youre-looking-for, kind: Service, name: web-backend }`),
      g("reference-grant-wrong-to-kind", WEB, okFrom, `{ group: "", kind: Secret, name: web-backend }`),
      g("reference-grant-wrong-to-name", WEB, okFrom, `{ group: "", kind: Service, name: not-the-service-youre-looking-for }`),
      route("reference-grant", `  parentRefs: [{ name: same-namespace }]
  rules: [{ backendRefs: [{ name: web-backend, namespace: ${WEB}, port: 8080 }] }]`),
    );
    expect(w.routeConditions(INFRA, "reference-grant")).toEqual(["Accepted=True/Accepted ResolvedRefs=False/RefNotPermitted"]);
    expect(w.answer({ path: "/" })).toBe("500");
  });

  test("HTTPRoutePartiallyInvalidViaInvalidReferenceGrant", () => {
    const w = World.of(
      GATEWAYS["same-namespace"],
      `
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: { name: reference-grant-wrong-to-name, namespace: ${APP} }
spec:
  from: [{ group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: ${INFRA} }]
  to: [{ group: "", kind: Service, name: not-app-backend-v1 }]`,
      route("invalid-reference-grant", `  parentRefs: [{ name: same-namespace }]
  rules:
    - matches: [{ path: { type: PathPrefix, value: /v2 } }]
      backendRefs: [{ name: app-backend-v1, namespace: ${APP}, port: 8080 }]
    - matches: [{ path: { type: PathPrefix, value: / } }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]`),
    );
    expect(w.routeConditions(INFRA, "invalid-reference-grant")).toEqual(["Accepted=True/Accepted ResolvedRefs=False/RefNotPermitted"]);
    expect(w.answer({ path: "/v2" })).toBe("500");
    expect(w.answer({ path: "/" })).toBe(V1);
  });

  test("GatewayInvalidRouteKind", () => {
    const gw = (name: string, kinds: string) => `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: ${name}, namespace: ${INFRA} }
spec:
  gatewayClassName: portico
  listeners: [{ name: http, port: 80, protocol: HTTP, allowedRoutes: { kinds: [${kinds}] } }]`;
    const w = World.of(gw("gateway-only-invalid-route-kind", "{ kind: InvalidRoute }"), gw("gateway-supported-and-invalid-route-kind", "{ kind: InvalidRoute }, { kind: HTTPRoute }"));
    const only = w.listener(`${INFRA}/gateway-only-invalid-route-kind`, "http");
    expect(only.supportedKinds).toEqual([]);
    expect(only.conditions.find((c) => c.type === "ResolvedRefs")).toMatchObject({ status: "False", reason: "InvalidRouteKinds" });
    const both = w.listener(`${INFRA}/gateway-supported-and-invalid-route-kind`, "http");
    expect(both.supportedKinds).toEqual([{ group: "gateway.networking.k8s.io", kind: "HTTPRoute" }]);
    expect(both.conditions.find((c) => c.type === "ResolvedRefs")).toMatchObject({ status: "False", reason: "InvalidRouteKinds" });
    expect(both.attachedRoutes).toBe(0);
  });

  test("GatewayListenerUnsupportedProtocol", () => {
    const gw = (name: string, listeners: string) => `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: ${name}, namespace: ${INFRA} }
spec: { gatewayClassName: portico, listeners: [${listeners}] }`;
    const w = World.of(
      gw("gateway-only-unsupported-protocols", "{ name: invalid, port: 80, protocol: Invalid }"),
      gw("gateway-supported-and-unsupported-protocols", "{ name: http, port: 80, protocol: HTTP }, { name: invalid, port: 81, protocol: Invalid }"),
    );
    const only = w.result.gateways.get(`${INFRA}/gateway-only-unsupported-protocols`)!;
    expect(only.conditions[0]).toMatchObject({ type: "Accepted", status: "False", reason: "ListenersNotValid" });
    const l = w.listener(`${INFRA}/gateway-only-unsupported-protocols`, "invalid");
    expect(l.supportedKinds).toEqual([]);
    expect(l.conditions.find((c) => c.type === "Accepted")).toMatchObject({ status: "False", reason: "UnsupportedProtocol" });
    const mixed = w.result.gateways.get(`${INFRA}/gateway-supported-and-unsupported-protocols`)!;
    expect(mixed.conditions[0]).toMatchObject({ type: "Accepted", status: "True", reason: "ListenersNotValid" });
    expect(w.listener(`${INFRA}/gateway-supported-and-unsupported-protocols`, "http").conditions.find((c) => c.type === "Accepted")).toMatchObject({ status: "True" });
  });

  test("GatewayInvalidTLSConfiguration and GatewaySecretMissingReferenceGrant", () => {
    const gw = (name: string, ref: string) => `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: ${name}, namespace: ${INFRA} }
spec:
  gatewayClassName: portico
  listeners: [{ name: https, port: 443, protocol: HTTPS, allowedRoutes: { namespaces: { from: All } }, tls: { certificateRefs: [${ref}] } }]`;
    const w = World.of(
      gw("gateway-certificate-nonexistent-secret", "{ name: nonexistent-certificate }"),
      gw("gateway-certificate-unsupported-group", "{ group: wrong.group.company.io, kind: Secret, name: tls-validity-checks-certificate }"),
      gw("gateway-certificate-unsupported-kind", "{ group: '', kind: WrongKind, name: tls-validity-checks-certificate }"),
      gw("gateway-certificate-malformed-secret", "{ name: malformed-certificate }"),
      gw("gateway-secret-missing-reference-grant", `{ name: certificate, namespace: ${WEB} }`),
      `apiVersion: v1
kind: Secret
metadata: { name: malformed-certificate, namespace: ${INFRA} }
type: kubernetes.io/tls
data: { tls.crt: SGVsbG8gd29ybGQK, tls.key: SGVsbG8gd29ybGQK }`,
    );
    const refs = (name: string) => w.listener(`${INFRA}/${name}`, "https").conditions.find((c) => c.type === "ResolvedRefs");
    for (const name of ["gateway-certificate-nonexistent-secret", "gateway-certificate-unsupported-group", "gateway-certificate-unsupported-kind", "gateway-certificate-malformed-secret"]) {
      expect({ name, ...refs(name) }).toMatchObject({ name, status: "False", reason: "InvalidCertificateRef" });
      // Upstream asks for HTTPRoute among them (listenersMatch: the expected kinds are present).
      expect(w.listener(`${INFRA}/${name}`, "https").supportedKinds).toEqual([{ group: "gateway.networking.k8s.io", kind: "HTTPRoute" }, { group: "gateway.networking.k8s.io", kind: "GRPCRoute" }]);
    }
    expect(refs("gateway-secret-missing-reference-grant")).toMatchObject({ status: "False", reason: "RefNotPermitted" });
  });

  test("GatewayInvalidParametersRef", () => {
    const w = World.of(`
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: gateway-invalid-parameters-ref, namespace: ${INFRA} }
spec:
  gatewayClassName: portico
  listeners: [{ name: http, port: 80, protocol: HTTP }]
  infrastructure: { parametersRef: { group: invalid.io, kind: InvalidParameters, name: invalid } }`);
    expect(w.result.gateways.get(`${INFRA}/gateway-invalid-parameters-ref`)!.conditions[0]).toMatchObject({ type: "Accepted", status: "False", reason: "InvalidParameters" });
    // Upstream asks only the Gateway's Accepted; a Gateway that is not accepted serves nothing,
    // so its listener claims neither Accepted=True (ListenerConditionAccepted: "will generate at
    // least some data plane configuration") nor Programmed=True (ListenerConditionProgrammed).
    expect(conds(w.listener(`${INFRA}/gateway-invalid-parameters-ref`, "http"))).toBe("Accepted=False/InvalidParameters ResolvedRefs=True/ResolvedRefs Programmed=False/Invalid Conflicted=False/NoConflicts");
    expect(w.answer({ path: "/" })).toBe("404");
  });

  test("a route on a Gateway that is not accepted is not accepted either and counts in no attachedRoutes: status says what is served", () => {
    // Three ways a Gateway is refused (its GatewayClass not accepted, infrastructure.parametersRef,
    // spec.addresses), each with a route on it. Its listeners generate no data plane configuration
    // (ListenerConditionAccepted), so they take no route (NotAllowedByListeners: no listener
    // permits it), and attachedRoutes counts only "Routes with the Accepted condition set to
    // True" (apis/v1 gateway_types.go ListenerStatus.AttachedRoutes).
    const refused = (name: string, cls: string, extra: string) => `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: ${name}, namespace: ${INFRA} }
spec:
  gatewayClassName: ${cls}
  listeners: [{ name: http, port: 80, protocol: HTTP, hostname: ${name}.example.com }]
${extra}`;
    const w = World.of(
      `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: { name: portico-with-parameters, generation: 1 }
spec: { controllerName: portico.dev/gateway-controller, parametersRef: { group: example.com, kind: Config, name: x } }`,
      refused("class-refused", "portico-with-parameters", ""),
      refused("parameters-refused", "portico", "  infrastructure: { parametersRef: { group: invalid.io, kind: InvalidParameters, name: invalid } }"),
      refused("addresses-refused", "portico", "  addresses: [{ type: IPAddress, value: 192.0.2.99 }]"),
      ...["class-refused", "parameters-refused", "addresses-refused"].map((g) =>
        route(`on-${g}`, `  parentRefs: [{ name: ${g} }]
  rules: [{ backendRefs: [{ name: infra-backend-v1, port: 8080 }] }]`),
      ),
    );
    const got = ["class-refused", "parameters-refused", "addresses-refused"].map((g) => {
      const l = w.listener(`${INFRA}/${g}`, "http");
      return `${g}: ${conds(w.result.gateways.get(`${INFRA}/${g}`)!)} | ${l.attachedRoutes} ${conds(l)} | ${w.routeConditions(INFRA, `on-${g}`).join(", ")} | ${w.answer({ host: `${g}.example.com`, path: "/" })}`;
    });
    expect(got).toEqual([
      "class-refused: Accepted=False/InvalidParameters Programmed=False/Invalid | 0 Accepted=False/InvalidParameters ResolvedRefs=True/ResolvedRefs Programmed=False/Invalid Conflicted=False/NoConflicts | Accepted=False/NotAllowedByListeners ResolvedRefs=True/ResolvedRefs | 404",
      "parameters-refused: Accepted=False/InvalidParameters Programmed=False/Invalid | 0 Accepted=False/InvalidParameters ResolvedRefs=True/ResolvedRefs Programmed=False/Invalid Conflicted=False/NoConflicts | Accepted=False/NotAllowedByListeners ResolvedRefs=True/ResolvedRefs | 404",
      "addresses-refused: Accepted=False/UnsupportedAddress Programmed=False/Invalid | 0 Accepted=False/UnsupportedAddress ResolvedRefs=True/ResolvedRefs Programmed=False/Invalid Conflicted=False/NoConflicts | Accepted=False/NotAllowedByListeners ResolvedRefs=True/ResolvedRefs | 404",
    ]);
  });

  test("GatewayOptionalAddressValue's Gateway (an address without a value, which the standard CRD allows) gets a status, not dropped", () => {
    // conformance/tests/gateway-optional-address-value.yaml. GatewayAddressEmpty is not
    // published (docs/design.md "Conformance coverage"), so the test is not run; the Gateway
    // still passes CRD validation and must be answered: "If an implementation does not support
    // an empty value, they MUST set the Programmed condition in status to False with a reason of
    // AddressNotAssigned" (apis/v1 gateway_types.go GatewaySpecAddress.Value).
    const w = World.of(`
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: gateway-without-address-value, namespace: ${INFRA} }
spec:
  gatewayClassName: portico
  addresses: [{ type: IPAddress }]
  listeners: [{ name: http, port: 8080, protocol: HTTP }]`);
    expect(conds(w.result.gateways.get(`${INFRA}/gateway-without-address-value`)!)).toBe("Accepted=False/UnsupportedAddress Programmed=False/AddressNotAssigned");
    expect(conds(w.listener(`${INFRA}/gateway-without-address-value`, "http"))).toBe("Accepted=False/UnsupportedAddress ResolvedRefs=True/ResolvedRefs Programmed=False/Invalid Conflicted=False/NoConflicts");
  });

  // The client certificate validation objects (conformance/tests/gateway-with-*clientcertificate-validation*.yaml,
  // gateway-invalid-default-frontend-client-certificate-validation.yaml): the CA references are
  // resolved with the reasons FrontendTLSValidation (apis/v1 gateway_types.go) names; a listener
  // whose validation resolves is served with a client-cert stage first on each of its entries
  // (the handshakes themselves: client-validation.test.ts).
  const serverCert = createCertificate({ subjectCN: "example.org", sans: ["example.org", "first-example.org", "second-example.org", "third-example.org", "fourth-example.org"] });
  const caPem = createCertificate({ subjectCN: "client-ca", isCA: true }).certPem;
  const perPortCaPem = createCertificate({ subjectCN: "per-port-client-ca", isCA: true }).certPem;
  const tlsSecret = `apiVersion: v1
kind: Secret
metadata: { name: tls-validity-checks-certificate, namespace: ${INFRA} }
type: kubernetes.io/tls
data: { tls.crt: ${Buffer.from(serverCert.certPem).toString("base64")}, tls.key: ${Buffer.from(serverCert.keyPem).toString("base64")} }`;
  const caConfigMap = (name: string, ns = INFRA, key = "ca.crt", pem = caPem) => `apiVersion: v1
kind: ConfigMap
metadata: { name: ${name}, namespace: ${ns} }
data: { ${key}: ${JSON.stringify(pem)} }`;
  /** The client-cert stage of the entry a request gets (its verify mode and first CA), or "none". */
  const clientCheck = (w: World, host: string) => {
    const stage = (w.match({ host, path: "/", https: true })?.choices[0]!.match.route.options.stages ?? []).find((x) => x.kind === "client-cert");
    if (stage === undefined) return "none";
    const ca = stage.params.ca as string[];
    return `${stage.params.verify as string} ${ca[0] === caPem ? "default-ca" : ca[0] === perPortCaPem ? "per-port-ca" : "other"}`;
  };

  test("client certificate validation (Gateway spec.tls.frontend) with resolved CAs: each HTTPS listener it covers is served with its own CA's check on every entry", () => {
    // gateway-with-clientcertificate-validation.yaml, with a perPort entry that asks no
    // validation for 8444 and an HTTP listener the validation does not cover.
    const w = World.of(
      tlsSecret,
      caConfigMap("tls-validity-checks-ca-certificate"),
      caConfigMap("tls-validity-checks-per-port-ca-certificate", INFRA, "ca.crt", perPortCaPem),
      `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: client-validation-default, namespace: ${INFRA} }
spec:
  gatewayClassName: portico
  tls:
    frontend:
      default: { validation: { caCertificateRefs: [{ kind: ConfigMap, group: "", name: tls-validity-checks-ca-certificate }] } }
      perPort:
        - { port: 8443, tls: { validation: { caCertificateRefs: [{ kind: ConfigMap, group: "", name: tls-validity-checks-per-port-ca-certificate }] } } }
        - { port: 8444, tls: {} }
  listeners:
${validatedHttpsListener("https", 443, null)}
${validatedHttpsListener("https-with-hostname", 8443, "second-example.org")}
${validatedHttpsListener("https-no-validation", 8444, "third-example.org")}
    - { name: http, port: 80, protocol: HTTP, allowedRoutes: { namespaces: { from: Same } } }`,
      route("client-certificate-validation-https-test", `  parentRefs: [{ name: client-validation-default, sectionName: https }]
  hostnames: [example.org]
  rules: [{ backendRefs: [{ name: infra-backend-v1, port: 8080 }] }]`),
      route("client-certificate-validation-https-test-no-hostname", `  parentRefs: [{ name: client-validation-default, sectionName: https-with-hostname }]
  rules: [{ backendRefs: [{ name: infra-backend-v2, port: 8080 }] }]`),
      route("no-validation", `  parentRefs: [{ name: client-validation-default, sectionName: https-no-validation }]
  rules: [{ backendRefs: [{ name: infra-backend-v3, port: 8080 }] }]`),
    );
    const gw = `${INFRA}/client-validation-default`;
    // AllowValidOnly (the default mode): no InsecureFrontendValidationMode condition.
    expect(conds(w.result.gateways.get(gw)!)).toBe("Accepted=True/Accepted Programmed=True/Programmed");
    for (const name of ["https", "https-with-hostname", "https-no-validation", "http"]) {
      expect(conds(w.listener(gw, name))).toBe("Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs Programmed=True/Programmed Conflicted=False/NoConflicts");
    }
    expect(w.routeConditions(INFRA, "client-certificate-validation-https-test")).toEqual(["Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs"]);
    expect(w.routeConditions(INFRA, "client-certificate-validation-https-test-no-hostname")).toEqual(["Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs"]);
    expect(w.answer({ host: "example.org", path: "/", https: true })).toBe(V1);
    expect(w.answer({ host: "second-example.org", path: "/", https: true })).toBe(V2);
    expect(w.answer({ host: "third-example.org", path: "/", https: true })).toBe(V3);
    // Each listener's entries check with its own port's CA; the listener without validation does not.
    expect(clientCheck(w, "example.org")).toBe("on default-ca");
    expect(clientCheck(w, "second-example.org")).toBe("on per-port-ca");
    expect(clientCheck(w, "third-example.org")).toBe("none");
  });

  test("a validated listener's hosts need node:http2 and its AllowValidOnly check is found by SNI name; AllowInsecureFallback has none at the handshake", () => {
    const gateway = (mode: string) => `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: v, namespace: ${INFRA} }
spec:
  gatewayClassName: portico
  tls:
    frontend:
      default: { validation: { mode: ${mode}, caCertificateRefs: [{ kind: ConfigMap, group: "", name: default-ca }] } }
      perPort:
        - { port: 8443, tls: { validation: { mode: ${mode}, caCertificateRefs: [{ kind: ConfigMap, group: "", name: per-port-ca }] } } }
        - { port: 8444, tls: {} }
  listeners:
${validatedHttpsListener("https", 443, null)}
${validatedHttpsListener("https-with-hostname", 8443, "second-example.org")}
${validatedHttpsListener("https-no-validation", 8444, "third-example.org")}`;
    const routes = [
      route("r1", `  parentRefs: [{ name: v, sectionName: https }]
  hostnames: [example.org]
  rules: [{ backendRefs: [{ name: infra-backend-v1, port: 8080 }] }]`),
      route("r2", `  parentRefs: [{ name: v, sectionName: https-with-hostname }]
  rules: [{ backendRefs: [{ name: infra-backend-v2, port: 8080 }] }]`),
      route("r3", `  parentRefs: [{ name: v, sectionName: https-no-validation }]
  rules: [{ backendRefs: [{ name: infra-backend-v3, port: 8080 }] }]`),
    ];
    const tableOf = (mode: string) =>
      compile(snapshot(BASE, tlsSecret, caConfigMap("default-ca"), caConfigMap("per-port-ca", INFRA, "ca.crt", perPortCaPem), gateway(mode), ...routes), DEFAULT_COMPILE_CONFIG).table;
    const strict = tableOf("AllowValidOnly");
    expect(needsClientCertificates(strict)).toBe(true);
    expect(httpsListenerKind(strict)).toBe("split");
    expect(["example.org", "second-example.org", "third-example.org", "other.example"].map((h) => `${h} ${hostNeedsNode(strict, h)}`)).toEqual([
      "example.org true", "second-example.org true", "third-example.org false", "other.example false",
    ]);
    const cas = (h: string) => strictClientCas(strict, h).map((c) => (c.ca[0] === caPem ? "default-ca" : c.ca[0] === perPortCaPem ? "per-port-ca" : "other")).join(",");
    expect(["example.org", "EXAMPLE.org.", "second-example.org", "third-example.org", "other.example"].map((h) => `${h} ${cas(h)}`)).toEqual([
      "example.org default-ca", "EXAMPLE.org. default-ca", "second-example.org per-port-ca", "third-example.org ", "other.example ",
    ]);
    expect(strictClientCas(strict, null)).toEqual([]);
    const fallback = tableOf("AllowInsecureFallback");
    expect(hostNeedsNode(fallback, "example.org")).toBe(true);
    expect(strictClientCas(fallback, "example.org")).toEqual([]);
    expect(strictClientCas(fallback, "second-example.org")).toEqual([]);
  });

  test("the handshake check of a hostless AllowValidOnly listener skips a name an Ingress holds, and asks each CA once also after the workers' wire", () => {
    // An Ingress in WEB names shop.example.com; the Gateway in INFRA serves every name with two
    // hostless HTTPRoutes. The HTTPS port's lookup asks only the Ingress owners' namespace's
    // entries for shop.example.com (table/gateway.ts findGatewayEntry, GatewayHosts.held): none,
    // so the Ingress answers it and its clients need no certificate at the handshake.
    const text = [
      tlsSecret,
      caConfigMap("default-ca"),
      `apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: { name: portico }
spec: { controller: portico.dev/ingress-controller }`,
      `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: { name: shop, namespace: ${WEB} }
spec:
  ingressClassName: portico
  rules: [{ host: shop.example.com, http: { paths: [{ path: /, pathType: Prefix, backend: { service: { name: web-backend, port: { number: 8080 } } } }] } }]`,
      `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: v, namespace: ${INFRA} }
spec:
  gatewayClassName: portico
  tls: { frontend: { default: { validation: { caCertificateRefs: [{ kind: ConfigMap, group: "", name: default-ca }] } } } }
  listeners:
${validatedHttpsListener("https", 443, null)}`,
      route("any-1", `  parentRefs: [{ name: v }]
  rules: [{ matches: [{ path: { type: PathPrefix, value: /one } }], backendRefs: [{ name: infra-backend-v1, port: 8080 }] }]`),
      route("any-2", `  parentRefs: [{ name: v }]
  rules: [{ matches: [{ path: { type: PathPrefix, value: /two } }], backendRefs: [{ name: infra-backend-v2, port: 8080 }] }]`),
    ];
    const table = compile(snapshot(BASE, ...text), DEFAULT_COMPILE_CONFIG).table;
    const cas = (t: typeof table, h: string) => strictClientCas(t, h).map((c) => (c.ca[0] === caPem ? "default-ca" : "other")).join(",");
    expect(["shop.example.com", "SHOP.example.com.", "other.example"].map((h) => `${h} ${cas(table, h)}`)).toEqual([
      "shop.example.com ", "SHOP.example.com. ", "other.example default-ca",
    ]);
    // A worker decodes the table from JSON (workers/wire.ts): each route choice gets its own copy
    // of the CA list, and the handshake still verifies a chain once per distinct CA list.
    const decoded = decodeTable(JSON.parse(JSON.stringify(encodeTable(table))) as ReturnType<typeof encodeTable>);
    expect(["shop.example.com", "other.example"].map((h) => `${h} ${cas(decoded, h)}`)).toEqual(["shop.example.com ", "other.example default-ca"]);
  });

  test("the handshake check trusts a chain only when it verifies against one of the listener's CAs", () => {
    const ca = createCertificate({ subjectCN: "hs-ca", isCA: true });
    const other = createCertificate({ subjectCN: "hs-other-ca", isCA: true });
    const leaf = (issuer: typeof ca, o: { notAfter?: Date; notBefore?: Date } = {}) =>
      new X509Certificate(createCertificate({ subjectCN: "client", extKeyUsage: ["clientAuth"], issuer: { cert: issuer.certPem, key: issuer.keyPem }, ...o }).certPem);
    const now = Date.now();
    const checks = [{ ca: [ca.certPem], depth: 5 }];
    expect(clientChainTrusted(checks, [leaf(ca)], now)).toBe(true);
    expect(clientChainTrusted(checks, [leaf(other)], now)).toBe(false);
    expect(clientChainTrusted(checks, [], now)).toBe(false);
    expect(clientChainTrusted(checks, [leaf(ca, { notBefore: new Date(now - 2 * 86_400_000), notAfter: new Date(now - 86_400_000) })], now)).toBe(false);
    // Either listener's CA (two Gateways sharing the SNI name), and a CA that does not parse trusts nothing.
    expect(clientChainTrusted([{ ca: ["junk"], depth: 5 }, { ca: [other.certPem], depth: 5 }], [leaf(other)], now)).toBe(true);
    expect(clientChainTrusted([{ ca: ["junk"], depth: 5 }], [leaf(ca)], now)).toBe(false);
  });

  test("GatewayInvalidFrontendClientCertificateValidation (statuses): each invalid caCertificateRef gets the spec's reason, and only its listener is affected", () => {
    // gateway-with-invalid-clientcertificate-validation.yaml, with web-backend-cm present in
    // the other namespace (no ReferenceGrant lets the Gateway read it).
    const w = World.of(
      tlsSecret,
      caConfigMap("tls-validity-checks-ca-certificate"),
      caConfigMap("web-backend-cm", WEB),
      invalidClientValidationGateway,
    );
    const gw = `${INFRA}/gateway-with-invalid-client-cert-validation`;
    expect(conds(w.listener(gw, "https"))).toBe("Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs Programmed=True/Programmed Conflicted=False/NoConflicts");
    expect(conds(w.listener(gw, "https-unresolved"))).toBe("Accepted=False/NoValidCACertificate ResolvedRefs=False/InvalidCACertificateRef Programmed=False/Invalid Conflicted=False/NoConflicts");
    expect(conds(w.listener(gw, "https-invalid-kind"))).toBe("Accepted=False/NoValidCACertificate ResolvedRefs=False/InvalidCACertificateKind Programmed=False/Invalid Conflicted=False/NoConflicts");
    expect(conds(w.listener(gw, "https-grant-missing"))).toBe("Accepted=False/NoValidCACertificate ResolvedRefs=False/RefNotPermitted Programmed=False/Invalid Conflicted=False/NoConflicts");
    // The message names the reference and why (FrontendTLSValidation: "the Message of the
    // Condition must indicate which reference is invalid and why").
    expect(w.listener(gw, "https-unresolved").conditions[1]!.message).toContain(`${INFRA}/non-exisitng-cm`);
    expect(w.listener(gw, "https-invalid-kind").conditions[1]!.message).toContain("Service infra-backend-v2");

    // A ReferenceGrant from Gateways in INFRA to that ConfigMap resolves it.
    const granted = World.of(
      tlsSecret,
      caConfigMap("web-backend-cm", WEB),
      `apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: { name: ca-from-infra, namespace: ${WEB} }
spec: { from: [{ group: gateway.networking.k8s.io, kind: Gateway, namespace: ${INFRA} }], to: [{ group: "", kind: ConfigMap, name: web-backend-cm }] }`,
      `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: granted, namespace: ${INFRA} }
spec:
  gatewayClassName: portico
  tls: { frontend: { default: { validation: { caCertificateRefs: [{ kind: ConfigMap, group: "", name: web-backend-cm, namespace: ${WEB} }] } } } }
  listeners:
${validatedHttpsListener("https", 443, null)}`,
    );
    expect(conds(granted.listener(`${INFRA}/granted`, "https"))).toBe("Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs Programmed=True/Programmed Conflicted=False/NoConflicts");
  });

  test("GatewayFrontendInvalidDefaultClientCertificateValidation (statuses): an unresolved default CA refuses the HTTPS listener and leaves the HTTP one served", () => {
    const w = World.of(
      tlsSecret,
      caConfigMap("tls-validity-checks-per-port-ca-certificate"),
      invalidDefaultClientValidationGateway,
      route("invalid-default-client-validation-config", `  parentRefs: [{ name: invalid-default-client-validation-config }]
  hostnames: [example.org]
  rules: [{ backendRefs: [{ name: infra-backend-v1, port: 8080 }] }]`),
    );
    const gw = `${INFRA}/invalid-default-client-validation-config`;
    expect(conds(w.listener(gw, "http"))).toBe("Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs Programmed=True/Programmed Conflicted=False/NoConflicts");
    expect(conds(w.listener(gw, "https"))).toBe("Accepted=False/NoValidCACertificate ResolvedRefs=False/InvalidCACertificateRef Programmed=False/Invalid Conflicted=False/NoConflicts");
    expect(w.answer({ host: "example.org", path: "/" })).toBe(`${INFRA}/infra-backend-v1`);
    expect(w.answer({ host: "example.org", path: "/", https: true })).toBe("404");
  });

  test("a ConfigMap without ca.crt, or whose ca.crt holds no PEM certificate, is an InvalidCACertificateRef", () => {
    const notPem = `apiVersion: v1
kind: ConfigMap
metadata: { name: ca, namespace: ${INFRA} }
data: { ca.crt: "not a certificate" }`;
    for (const cm of [caConfigMap("ca", INFRA, "tls.crt"), notPem]) {
      const w = World.of(
        tlsSecret,
        cm,
        `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: g, namespace: ${INFRA} }
spec:
  gatewayClassName: portico
  tls: { frontend: { default: { validation: { caCertificateRefs: [{ kind: ConfigMap, group: "", name: ca }] } } } }
  listeners:
${validatedHttpsListener("https", 443, null)}`,
      );
      expect(conds(w.listener(`${INFRA}/g`, "https"))).toBe("Accepted=False/NoValidCACertificate ResolvedRefs=False/InvalidCACertificateRef Programmed=False/Invalid Conflicted=False/NoConflicts");
    }
  });

  test("a CA ConfigMap named past the 16 a Gateway may name is never read, even when the snapshot holds it: InvalidCACertificateRef, not served", () => {
    // model/secret-refs.ts MAX_GATEWAY_CA_CONFIGMAPS: only the first 16 are watched and wake the
    // compiler (kube/configmap-refs.ts, store.ts), so a 17th trusted would keep a removed CA
    // trusted. --manifests keeps every ConfigMap, so the 17th is in the snapshot here.
    const refs = Array.from({ length: 16 }, (_, i) => `{ kind: ConfigMap, group: "", name: cm-${i} }`).join(", ");
    const w = World.of(
      tlsSecret,
      ...Array.from({ length: 16 }, (_, i) => caConfigMap(`cm-${i}`)),
      caConfigMap("past-cap", INFRA, "ca.crt", perPortCaPem),
      `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: g, namespace: ${INFRA} }
spec:
  gatewayClassName: portico
  tls:
    frontend:
      default: { validation: { caCertificateRefs: [${refs}] } }
      perPort: [{ port: 8443, tls: { validation: { caCertificateRefs: [{ kind: ConfigMap, group: "", name: past-cap }] } } }]
  listeners:
${validatedHttpsListener("https", 443, null)}
${validatedHttpsListener("https-past-cap", 8443, "second-example.org")}`,
    );
    expect(conds(w.listener(`${INFRA}/g`, "https"))).toBe("Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs Programmed=True/Programmed Conflicted=False/NoConflicts");
    const past = w.listener(`${INFRA}/g`, "https-past-cap");
    expect(conds(past)).toBe("Accepted=False/NoValidCACertificate ResolvedRefs=False/InvalidCACertificateRef Programmed=False/Invalid Conflicted=False/NoConflicts");
    expect(past.conditions[1]!.message).toContain(`${INFRA}/past-cap`);
  });

  test("AllowInsecureFallback by default or per port sets the Gateway's InsecureFrontendValidationMode=True ConfigurationChanged; AllowValidOnly does not", () => {
    const gateway = (mode8443: string, modeDefault: string) => `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: client-validation-insecure-fallback, namespace: ${INFRA} }
spec:
  gatewayClassName: portico
  tls:
    frontend:
      default: { validation: { ${modeDefault} caCertificateRefs: [{ kind: ConfigMap, group: "", name: tls-validity-checks-ca-certificate }] } }
      perPort: [{ port: 8443, tls: { validation: { ${mode8443} caCertificateRefs: [{ kind: ConfigMap, group: "", name: tls-validity-checks-ca-certificate }] } } }]
  listeners:
${validatedHttpsListener("https", 443, null)}
${validatedHttpsListener("https-with-hostname", 8443, "second-example.org")}`;
    const gw = `${INFRA}/client-validation-insecure-fallback`;
    const insecure = (text: string) => World.of(tlsSecret, caConfigMap("tls-validity-checks-ca-certificate"), text).result.gateways.get(gw)!.conditions.find((c) => c.type === "InsecureFrontendValidationMode");
    const both = insecure(gateway("mode: AllowInsecureFallback,", "mode: AllowInsecureFallback,"));
    expect(both === undefined ? null : `${both.status}/${both.reason}`).toBe("True/ConfigurationChanged");
    const perPort = insecure(gateway("mode: AllowInsecureFallback,", ""));
    expect(perPort === undefined ? null : `${perPort.status}/${perPort.reason}`).toBe("True/ConfigurationChanged");
    expect(insecure(gateway("mode: AllowValidOnly,", ""))).toBeUndefined();
  });

  test("a malformed spec.tls.frontend (--manifests objects skip the CRD) counts as asking validation: the HTTPS listener is not served", () => {
    for (const frontend of [`"yes"`, `{ default: "strict" }`, `{ default: {}, perPort: "all" }`, `{ default: {}, perPort: [7] }`, `{ default: { validation: {} } }`, `{ default: { validation: { caCertificateRefs: [] } } }`]) {
      const w = World.of(`apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: odd, namespace: ${INFRA} }
spec:
  gatewayClassName: portico
  tls: { frontend: ${frontend} }
  listeners: [{ name: https, port: 443, protocol: HTTPS, tls: { certificateRefs: [{ name: missing }] } }]`);
      expect(`${frontend} ${w.listener(`${INFRA}/odd`, "https").conditions[0]!.reason}`).toBe(`${frontend} UnsupportedValue`);
    }
    // An unknown mode with a resolved CA is refused too.
    const w = World.of(
      tlsSecret,
      caConfigMap("ca"),
      `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: odd-mode, namespace: ${INFRA} }
spec:
  gatewayClassName: portico
  tls: { frontend: { default: { validation: { mode: Sometimes, caCertificateRefs: [{ kind: ConfigMap, group: "", name: ca }] } } } }
  listeners:
${validatedHttpsListener("https", 443, null)}`,
    );
    expect(conds(w.listener(`${INFRA}/odd-mode`, "https"))).toBe("Accepted=False/UnsupportedValue ResolvedRefs=True/ResolvedRefs Programmed=False/Invalid Conflicted=False/NoConflicts");
  });

  test("conflicted listeners: none of them is accepted or takes a route, and the Gateway says ListenersNotValid", () => {
    // apis/v1 gateway_types.go "Handling indistinct Listeners": "ALL indistinct Listeners must
    // not be accepted for processing", and the implementation "MUST set a ListenersNotValid
    // condition on the Gateway Status when the Gateway contains Conflicted Listeners"; the
    // listener conditions as conformance/tests/listenerset-protocol-conflict.go expects them of
    // a conflicted listener (Accepted=False, Programmed=False and Conflicted=True, each with the
    // conflict's reason).
    const cert = createCertificate({ subjectCN: "b.example.com", sans: ["b.example.com"] });
    const w = World.of(
      `apiVersion: v1
kind: Secret
metadata: { name: cert, namespace: ${INFRA} }
type: kubernetes.io/tls
data: { tls.crt: ${Buffer.from(cert.certPem).toString("base64")}, tls.key: ${Buffer.from(cert.keyPem).toString("base64")} }`,
      `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: partly-conflicted, namespace: ${INFRA} }
spec:
  gatewayClassName: portico
  listeners:
    - { name: http, port: 80, protocol: HTTP, hostname: good.example.com }
    - { name: clash-http, port: 8443, protocol: HTTP, hostname: a.example.com }
    - { name: clash-https, port: 8443, protocol: HTTPS, hostname: b.example.com, tls: { certificateRefs: [{ name: cert }] } }`,
      `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: all-conflicted, namespace: ${INFRA} }
spec:
  gatewayClassName: portico
  listeners:
    - { name: one, port: 80, protocol: HTTP, hostname: same.example.com }
    - { name: two, port: 80, protocol: HTTP, hostname: same.example.com }`,
      route("on-the-clash", `  parentRefs: [{ name: partly-conflicted, sectionName: clash-http }]
  rules: [{ matches: [{ path: { type: PathPrefix, value: /clash } }], backendRefs: [{ name: infra-backend-v1, port: 8080 }] }]`),
      route("on-the-gateway", `  parentRefs: [{ name: partly-conflicted }]
  rules: [{ backendRefs: [{ name: infra-backend-v2, port: 8080 }] }]`),
      route("on-all-conflicted", `  parentRefs: [{ name: all-conflicted }]
  rules: [{ backendRefs: [{ name: infra-backend-v3, port: 8080 }] }]`),
    );
    const partly = `${INFRA}/partly-conflicted`;
    expect(conds(w.result.gateways.get(partly)!)).toBe("Accepted=True/ListenersNotValid Programmed=True/Programmed");
    expect(conds(w.listener(partly, "http"))).toBe("Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs Programmed=True/Programmed Conflicted=False/NoConflicts");
    for (const name of ["clash-http", "clash-https"]) {
      expect(conds(w.listener(partly, name))).toBe("Accepted=False/ProtocolConflict ResolvedRefs=True/ResolvedRefs Programmed=False/ProtocolConflict Conflicted=True/ProtocolConflict");
      expect(w.listener(partly, name).attachedRoutes).toBe(0);
    }
    expect(w.listener(partly, "http").attachedRoutes).toBe(1);
    expect(w.routeConditions(INFRA, "on-the-clash")).toEqual(["Accepted=False/NotAllowedByListeners ResolvedRefs=True/ResolvedRefs"]);
    expect(w.routeConditions(INFRA, "on-the-gateway")).toEqual(["Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs"]);
    expect(w.answer({ host: "a.example.com", path: "/clash" })).toBe("404");
    expect(w.answer({ host: "b.example.com", path: "/", https: true })).toBe("404");
    expect(w.answer({ host: "good.example.com", path: "/" })).toBe(V2);
    // Equal hostnames on one port (the CRD refuses it; --manifests has no CRD): both out.
    const all = `${INFRA}/all-conflicted`;
    expect(conds(w.result.gateways.get(all)!)).toBe("Accepted=False/ListenersNotValid Programmed=False/Invalid");
    for (const name of ["one", "two"]) expect(conds(w.listener(all, name))).toBe("Accepted=False/HostnameConflict ResolvedRefs=True/ResolvedRefs Programmed=False/HostnameConflict Conflicted=True/HostnameConflict");
    expect(w.routeConditions(INFRA, "on-all-conflicted")).toEqual(["Accepted=False/NotAllowedByListeners ResolvedRefs=True/ResolvedRefs"]);
    expect(w.answer({ host: "same.example.com", path: "/" })).toBe("404");
  });

  test("GatewayWithAttachedRoutes", () => {
    const sel = `allowedRoutes: { kinds: [{ kind: HTTPRoute }], namespaces: { from: Selector, selector: { matchLabels: { kubernetes.io/metadata.name: ${INFRA} } } } }`;
    const gw = (name: string, listener: string) => `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: ${name}, namespace: ${INFRA} }
spec: { gatewayClassName: portico, listeners: [${listener}] }`;
    const r = (name: string, parent: string, extra = "") => route(name, `  parentRefs: [{ kind: Gateway, name: ${parent}, namespace: ${INFRA} }]${extra}
  rules: [{ backendRefs: [{ name: infra-backend-v1, port: 8080 }] }]`);
    const w = World.of(
      gw("gateway-with-one-attached-route", `{ name: http, port: 80, protocol: HTTP, ${sel} }`),
      r("http-route-1", "gateway-with-one-attached-route"),
      gw("gateway-with-two-attached-routes", `{ name: http, port: 80, protocol: HTTP, hostname: foo.example.com, ${sel} }`),
      r("http-route-2", "gateway-with-two-attached-routes"),
      r("http-route-3", "gateway-with-two-attached-routes"),
      r("http-route-not-accepted", "gateway-with-two-attached-routes", "\n  hostnames: [not-accepted.test.com]"),
      gw("unresolved-gateway-with-one-attached-unresolved-route", `{ name: tls, port: 443, protocol: HTTPS, ${sel}, tls: { certificateRefs: [{ group: "", kind: Secret, name: does-not-exist }], mode: Terminate } }`),
      route("http-route-4", `  parentRefs: [{ kind: Gateway, name: unresolved-gateway-with-one-attached-unresolved-route, namespace: ${INFRA}, sectionName: tls }]
  rules: [{ backendRefs: [{ name: does-not-exist, port: 8080 }] }]`),
    );
    const status = (gwName: string, l: string) => {
      const x = w.listener(`${INFRA}/${gwName}`, l);
      return `${x.attachedRoutes} ${x.conditions.filter((c) => c.type === "Accepted" || c.type === "ResolvedRefs").map((c) => `${c.type}=${c.status}`).join(" ")}`;
    };
    expect(status("gateway-with-one-attached-route", "http")).toBe("1 Accepted=True ResolvedRefs=True");
    expect(status("gateway-with-two-attached-routes", "http")).toBe("2 Accepted=True ResolvedRefs=True");
    expect(w.routeConditions(INFRA, "http-route-not-accepted")).toEqual(["Accepted=False/NoMatchingListenerHostname ResolvedRefs=True/ResolvedRefs"]);
    // Attached even though the listener's certificate and the route's backend do not resolve.
    expect(status("unresolved-gateway-with-one-attached-unresolved-route", "tls")).toBe("1 Accepted=True ResolvedRefs=False");
    expect(w.routeConditions(INFRA, "http-route-4")).toEqual(["Accepted=True/Accepted ResolvedRefs=False/BackendNotFound"]);
  });

  test("attachedRoutes counts a route once per listener, however many of its parentRefs reach it", () => {
    // ListenerStatus.attachedRoutes: "the total number of Routes that have been successfully
    // attached to this Listener" (apis/v1 gateway_types.go).
    const w = World.of(
      GATEWAYS["same-namespace"],
      route("twice", `  parentRefs: [{ name: same-namespace }, { name: same-namespace, sectionName: http }]
  rules: [{ backendRefs: [{ name: infra-backend-v1, port: 8080 }] }]`),
    );
    expect(w.routeConditions(INFRA, "twice")).toEqual(["Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs", "Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs"]);
    expect(w.listener(`${INFRA}/same-namespace`, "http").attachedRoutes).toBe(1);
  });

  test("HTTPRouteMultipleGateways on the shared ports: statuses and the shared route pass; the dedicated routes cannot be told apart (with --gateway-ports it passes whole: multiple-gateways.test.ts)", () => {
    // conformance/tests/httproute-multiple-gateways.yaml.
    const w = World.of(
      GATEWAYS["same-namespace"],
      GATEWAYS["all-namespaces"],
      route("multiple-gateways-shared-route", `  parentRefs: [{ name: same-namespace }, { name: all-namespaces }]
  rules: [{ matches: [{ path: { type: PathPrefix, value: /shared } }], backendRefs: [{ name: infra-backend-v1, port: 8080 }] }]`),
      route("same-namespace-dedicated-route", `  parentRefs: [{ name: same-namespace }]
  rules: [{ matches: [{ path: { type: PathPrefix, value: / } }], backendRefs: [{ name: infra-backend-v2, port: 8080 }] }]`),
      route("all-namespaces-dedicated-route", `  parentRefs: [{ name: all-namespaces }]
  rules: [{ matches: [{ path: { type: PathPrefix, value: / } }], backendRefs: [{ name: infra-backend-v3, port: 8080 }] }]`),
    );
    // GatewayAndHTTPRoutesMustBeAccepted, for each Gateway and its two routes.
    const ok = "Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs";
    expect(w.routeConditions(INFRA, "multiple-gateways-shared-route")).toEqual([ok, ok]);
    expect(w.routeConditions(INFRA, "same-namespace-dedicated-route")).toEqual([ok]);
    expect(w.routeConditions(INFRA, "all-namespaces-dedicated-route")).toEqual([ok]);
    expect(w.listener(`${INFRA}/same-namespace`, "http").attachedRoutes).toBe(2);
    expect(w.listener(`${INFRA}/all-namespaces`, "http").attachedRoutes).toBe(2);
    // "shared route is accessible and routed to infra-backend-v1" through either Gateway.
    expect(w.answer({ path: "/shared" })).toBe(V1);
    // The upstream test wants "/" to reach v2 through same-namespace and v3 through
    // all-namespaces. Without --gateway-ports both Gateways are served on Portico's one HTTP
    // port and publish one address, so a request carries nothing that tells them apart: their
    // rules are merged in precedence order, and at equal precedence and age the namespace/name
    // order picks all-namespaces-dedicated-route for both (README "Gateway API").
    expect(w.answer({ path: "/" })).toBe(V3);
  });

  test("GatewaySecretReferenceGrantSpecific, GatewaySecretReferenceGrantAllInNamespace and GatewaySecretInvalidReferenceGrant", () => {
    const cert = createCertificate({ subjectCN: "cert.example.com", sans: ["cert.example.com"] });
    const secret = `apiVersion: v1
kind: Secret
metadata: { name: certificate, namespace: ${WEB} }
type: kubernetes.io/tls
data: { tls.crt: ${Buffer.from(cert.certPem).toString("base64")}, tls.key: ${Buffer.from(cert.keyPem).toString("base64")} }`;
    const gw = (name: string) => `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: ${name}, namespace: ${INFRA} }
spec:
  gatewayClassName: portico
  listeners: [{ name: https, port: 443, protocol: HTTPS, allowedRoutes: { namespaces: { from: All } }, tls: { certificateRefs: [{ group: "", kind: Secret, name: certificate, namespace: ${WEB} }] } }]`;
    const grant = (name: string, ns: string, from: string, to: string) => `
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: { name: ${name}, namespace: ${ns} }
spec: { from: [${from}], to: [${to}] }`;
    const okFrom = `{ group: gateway.networking.k8s.io, kind: Gateway, namespace: ${INFRA} }`;
    const refs = (w: World, name: string) => w.listener(`${INFRA}/${name}`, "https").conditions.find((c) => c.type === "ResolvedRefs");
    const specific = World.of(secret, gw("gateway-secret-reference-grant-specific"), grant("reference-grant-specific", WEB, okFrom, `{ group: "", kind: Secret, name: certificate }`));
    expect(refs(specific, "gateway-secret-reference-grant-specific")).toMatchObject({ status: "True", reason: "ResolvedRefs" });
    const all = World.of(secret, gw("gateway-secret-reference-grant-all-in-namespace"), grant("reference-grant-all-in-namespace", WEB, okFrom, `{ group: "", kind: Secret }`));
    expect(refs(all, "gateway-secret-reference-grant-all-in-namespace")).toMatchObject({ status: "True", reason: "ResolvedRefs" });
    const invalid = World.of(
      secret,
      gw("gateway-secret-invalid-reference-grant"),
      grant("reference-grant-wrong-namespace", APP, okFrom, `{ group: "", kind: Secret, name: certificate }`),
      grant("reference-grant-wrong-from-group", WEB, `{ group: not-the-group-youre-looking-for, kind: Gateway, namespace: ${INFRA} }`, `{ group: "", kind: Secret, name: certificate }`),
      grant("reference-grant-wrong-from-kind", WEB, `{ group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: ${INFRA} }`, `{ group: "", kind: Secret, name: certificate }`),
      grant("reference-grant-wrong-from-namespace", WEB, `{ group: gateway.networking.k8s.io, kind: Gateway, namespace: not-the-namespace-youre-looking-for }`, `{ group: "", kind: Secret, name: certificate }`),
      grant("reference-grant-wrong-to-group", WEB, okFrom, `{ group: not-the-group-youre-looking-for, kind: Secret, name: certificate }`),
      grant("reference-grant-wrong-to-kind", WEB, okFrom, `{ group: "", kind: Service, name: certificate }`),
      grant("reference-grant-wrong-to-name", WEB, okFrom, `{ group: "", kind: Secret, name: not-the-certificate-youre-looking-for }`),
    );
    expect(refs(invalid, "gateway-secret-invalid-reference-grant")).toMatchObject({ status: "False", reason: "RefNotPermitted" });
    // The HTTPS listener with a permitted certificate binds it (no hostname: nothing to bind by SNI).
    expect(specific.result.certificates).toEqual([]);
  });

  test("the compiler adds the Gateway part to the table, and /debug/routes shows it in lookup order", () => {
    const w = World.of(GATEWAYS["same-namespace"], route("shown", `  parentRefs: [{ name: same-namespace }]
  rules:
    - matches: [{ path: { type: PathPrefix, value: /a } }]
      backendRefs: [{ name: infra-backend-v1, port: 8080, weight: 3 }, { name: infra-backend-v2, port: 8080 }]
    - matches: [{ path: { type: Exact, value: /a/b } }]
      backendRefs: [{ name: infra-backend-v3, port: 8080 }]`));
    const r = compile(w.snap, DEFAULT_COMPILE_CONFIG);
    expect(r.gateway?.routes.map((x) => x.key)).toEqual([`${INFRA}/shown`]);
    const view = serializeTable(r.table).gateway!;
    expect(view.map((l) => `${l.port} ${l.listenerHostname}`)).toEqual(["http *"]);
    const entries = view[0]!.hosts[0]!.entries.map((e) => `${e.match.pathType} ${e.match.path} ${e.weights.map((x) => `${x.route.backend}x${x.weight}`).join(",")}`);
    expect(entries).toEqual([`Exact /a/b ${INFRA}/infra-backend-v3:8080x1`, `PathPrefix /a ${INFRA}/infra-backend-v1:8080x3,${INFRA}/infra-backend-v2:8080x1`]);
    // Without a GatewayClass of ours the result is the Ingress one, untouched.
    const none = compile(World.of().snap, { ...DEFAULT_COMPILE_CONFIG, gatewayControllerName: "example.com/other" });
    expect(none.table.gateway ?? null).toBeNull();
    expect(serializeTable(none.table).gateway).toBeUndefined();
  });

  test("bad input from --manifests (no CRD validation): the bad rule answers 500 or matches nothing, the others serve", () => {
    const w = World.of(GATEWAYS["same-namespace"], route("bad", `  parentRefs: [{ name: same-namespace }]
  rules:
    - matches: [{ path: { type: PathPrefix, value: /hdr } }]
      filters: [{ type: RequestHeaderModifier, requestHeaderModifier: { set: [{ name: "bad name", value: x }], add: [{ name: ok, value: "a\\r\\nInjected: 1" }] } }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
    - matches: [{ path: { type: PathPrefix, value: /redir } }]
      filters: [{ type: RequestRedirect, requestRedirect: { hostname: "evil.com\\r\\nx: y" } }]
    - matches: [{ path: { type: PathPrefix, value: "/sp ace" } }, { headers: [{ name: "no good", value: v }] }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
    - matches: [{ path: { type: PathPrefix, value: /ok } }]
      backendRefs: [{ name: infra-backend-v2, port: 8080 }]`));
    expect(w.answer({ path: "/hdr" })).toBe("500");
    expect(w.answer({ path: "/redir" })).toBe("500");
    expect(w.answer({ path: "/sp ace" })).toBe("404");
    expect(w.answer({ path: "/ok" })).toBe(V2);
    expect(w.routeConditions(INFRA, "bad")[0]).toStartWith("Accepted=False/UnsupportedValue");
  });

  test("Extended filters from --manifests: a bad value is UnsupportedValue (the rule answers 500), a rule the spec makes invalid and a mirror that cannot be resolved are dropped", () => {
    const w = World.of(GATEWAYS["same-namespace"], route("ext", `  parentRefs: [{ name: same-namespace }]
  rules:
    - matches: [{ path: { type: PathPrefix, value: /both } }]
      filters: [{ type: RequestRedirect, requestRedirect: { statusCode: 307 } }, { type: URLRewrite, urlRewrite: { hostname: a.example } }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
    - matches: [{ path: { type: PathPrefix, value: /bad-host } }]
      filters: [{ type: URLRewrite, urlRewrite: { hostname: "evil.com\\r\\nx: y" } }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
    - matches: [{ path: { type: PathPrefix, value: /bad-timeout } }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
      timeouts: { request: 1s, backendRequest: 2s }
    - matches: [{ path: { type: Exact, value: /exact } }]
      filters: [{ type: URLRewrite, urlRewrite: { path: { type: ReplacePrefixMatch, replacePrefixMatch: /x } } }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
    - matches: [{ path: { type: PathPrefix, value: /lost-mirror } }]
      filters: [{ type: RequestMirror, requestMirror: { backendRef: { name: nonexistent, port: 8080 } } }]
      backendRefs: [{ name: infra-backend-v2, port: 8080 }]`));
    for (const p of ["/both", "/bad-host", "/bad-timeout"]) expect(`${p} ${w.answer({ path: p })}`).toBe(`${p} 500`);
    // ReplacePrefixMatch on an Exact match is a rule the spec makes invalid: dropped, not a 500
    // (RouteConditionPartiallyInvalid); the route is not accepted anyway, so no PartiallyInvalid.
    expect(w.answer({ path: "/exact" })).toBe("404");
    const lost = w.match({ path: "/lost-mirror" })!;
    expect(w.answer({ path: "/lost-mirror" })).toBe(V2);
    expect((lost.choices[0]!.match.route.options.stages ?? []).map((s) => s.kind)).toEqual([]);
    expect(w.routeConditions(INFRA, "ext")[0]).toBe("Accepted=False/UnsupportedValue ResolvedRefs=False/BackendNotFound");
  });

  test("ResponseHeaderModifier and CORS from --manifests: framing fields and values the CRD refuses are UnsupportedValue (the rule answers 500)", () => {
    const w = World.of(GATEWAYS["same-namespace"], route("resp", `  parentRefs: [{ name: same-namespace }]
  rules:
    - matches: [{ path: { type: PathPrefix, value: /length } }]
      filters: [{ type: ResponseHeaderModifier, responseHeaderModifier: { set: [{ name: Content-Length, value: "0" }] } }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
    - matches: [{ path: { type: PathPrefix, value: /te } }]
      backendRefs: [{ name: infra-backend-v1, port: 8080, filters: [{ type: ResponseHeaderModifier, responseHeaderModifier: { remove: [Transfer-Encoding] } }] }]
    - matches: [{ path: { type: PathPrefix, value: /crlf } }]
      filters: [{ type: ResponseHeaderModifier, responseHeaderModifier: { add: [{ name: x-a, value: "a\\r\\nInjected: 1" }] } }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
    - matches: [{ path: { type: PathPrefix, value: /origin } }]
      filters: [{ type: CORS, cors: { allowOrigins: ["https://a.com/path"] } }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
    - matches: [{ path: { type: PathPrefix, value: /star } }]
      filters: [{ type: CORS, cors: { allowOrigins: ["*", "https://a.com"] } }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
    - matches: [{ path: { type: PathPrefix, value: /method } }]
      filters: [{ type: CORS, cors: { allowOrigins: ["https://a.com"], allowMethods: [get] } }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
    - matches: [{ path: { type: PathPrefix, value: /ok } }]
      filters:
        - { type: CORS, cors: { allowOrigins: ["https://*.a.com"] } }
        - { type: ResponseHeaderModifier, responseHeaderModifier: { set: [{ name: X-Ok, value: "1" }] } }
      backendRefs: [{ name: infra-backend-v2, port: 8080 }]`));
    for (const p of ["/length", "/te", "/crlf", "/origin", "/star", "/method"]) expect(`${p} ${w.answer({ path: p })}`).toBe(`${p} 500`);
    expect(w.answer({ path: "/ok" })).toBe(V2);
    // CORS's default maxAge is 5 (HTTPCORSFilter.maxAge); the CORS policy runs before the response fields.
    const ok = w.match({ path: "/ok" })!.choices[0]!.match.route.options.stages ?? [];
    expect(ok.map((s) => `${s.stage}:${s.kind}`)).toEqual(["cors:gateway-cors", "cors:gateway-response-headers"]);
    expect(ok[0]!.params).toEqual({ origins: ["https://*.a.com"], methods: [], headers: [], expose: [], credentials: false, maxAge: 5 });
    expect(w.routeConditions(INFRA, "resp")[0]).toStartWith("Accepted=False/UnsupportedValue");
  });

  test("RegularExpression matches: after Exact and PathPrefix, the longer pattern first; a pattern the linear-time engine refuses is UnsupportedValue", () => {
    const w = World.of(GATEWAYS["same-namespace"], route("re", `  parentRefs: [{ name: same-namespace }]
  rules:
    - matches: [{ path: { type: RegularExpression, value: "/a/.*" } }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
    - matches: [{ path: { type: RegularExpression, value: "/a/[a-z]+/x" } }]
      backendRefs: [{ name: infra-backend-v2, port: 8080 }]
    - matches: [{ path: { type: PathPrefix, value: /a/b } }]
      backendRefs: [{ name: infra-backend-v3, port: 8080 }]`), route("bad-re", `  parentRefs: [{ name: same-namespace }]
  rules:
    - matches: [{ path: { type: RegularExpression, value: "/(?<=x)y" } }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
    - matches: [{ path: { type: PathPrefix, value: /h }, headers: [{ type: RegularExpression, name: x, value: "(a" }] }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]`));
    expect([w.answer({ path: "/a/b/x" }), w.answer({ path: "/a/c/x" }), w.answer({ path: "/a/c/y" }), w.answer({ path: "/A/C/X" })]).toEqual([V3, V2, V1, V2]);
    expect(w.routeConditions(INFRA, "re")[0]).toBe("Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs");
    expect(w.routeConditions(INFRA, "bad-re")[0]).toStartWith("Accepted=False/UnsupportedValue");
    expect(w.answer({ path: "/h" })).toBe("404");
  });

  test("rule timeouts become the response-head deadline; a request timeout also stops retries after it", () => {
    const w = World.of(GATEWAYS["same-namespace"], route("t", `  parentRefs: [{ name: same-namespace }]
  rules:
    - matches: [{ path: { type: PathPrefix, value: /req } }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
      timeouts: { request: 1m30s }
    - matches: [{ path: { type: PathPrefix, value: /both } }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
      timeouts: { request: 10s, backendRequest: 500ms }
    - matches: [{ path: { type: PathPrefix, value: /off } }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
      timeouts: { request: 0s }`));
    const opts = (path: string) => w.match({ path })!.choices[0]!.match.route.options;
    expect([opts("/req").responseTimeoutMs, opts("/req").retry?.timeoutMs, opts("/req").retry?.timeout]).toEqual([90_000, 90_000, false]);
    expect([opts("/both").responseTimeoutMs, opts("/both").retry?.timeoutMs]).toEqual([500, 10_000]);
    expect([opts("/off").responseTimeoutMs, opts("/off").retry]).toEqual([2 ** 31 - 1, null]);
  });

  test("the Gateway part is reused while only objects it does not name change, and compiled again when one it names does", () => {
    const a = World.of(GATEWAYS["same-namespace"], route("r", `  parentRefs: [{ name: same-namespace }]
  rules: [{ backendRefs: [{ name: infra-backend-v1, port: 8080 }, { name: not-yet, port: 8080 }] }]`)).snap;
    const svc = (name: string) => {
      const r = parseObject("Service", { metadata: { name, namespace: INFRA }, spec: { ports: [{ name: "http", port: 8080 }] } });
      if (!r.ok) throw new Error(r.diagnostic.message);
      return r.object;
    };
    const c = new Compiler(DEFAULT_COMPILE_CONFIG);
    const r1 = c.compile(a);
    const unrelated = { ...a, services: new Map([...a.services, [`${INFRA}/unrelated`, svc("unrelated")]]) };
    const r2 = c.compile(unrelated);
    expect(r2.gateway).toBe(r1.gateway!);
    expect(r2.table.gateway).toBe(r1.table.gateway!);
    // The route names not-yet: its creation is a change the Gateway part must see (500 → served).
    expect(r1.gateway!.routes[0]!.parents[0]!.conditions[1]).toMatchObject({ reason: "BackendNotFound" });
    const named = { ...unrelated, services: new Map([...unrelated.services, [`${INFRA}/not-yet`, svc("not-yet")]]) };
    const r3 = c.compile(named);
    expect(r3.gateway).not.toBe(r1.gateway!);
    expect(r3.gateway!.routes[0]!.parents[0]!.conditions[1]).toMatchObject({ status: "True", reason: "ResolvedRefs" });
  });

  test("a rule the spec makes invalid is dropped: PartiallyInvalid while a rule is left (not beside Accepted=False), Accepted=False when none is, a RouteRuleDropped warning", () => {
    // RouteConditionPartiallyInvalid (apis/v1 shared_types.go), HTTPPathModifier.replacePrefixMatch.
    const prefix = (type: string, value: string, filter: string) => `    - matches: [{ path: { type: ${type}, value: "${value}" } }]
      filters: [{ type: ${filter}, ${filter === "URLRewrite" ? "urlRewrite" : "requestRedirect"}: { path: { type: ReplacePrefixMatch, replacePrefixMatch: /x } } }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]`;
    const w = World.of(
      GATEWAYS["same-namespace"],
      route("partly", `  parentRefs: [{ name: same-namespace }]
  rules:
${prefix("RegularExpression", "/re/(.*)", "URLRewrite")}
${prefix("Exact", "/exact", "RequestRedirect")}
${prefix("PathPrefix", "/ok", "URLRewrite")}
    - matches: [{ path: { type: PathPrefix, value: /a } }, { path: { type: PathPrefix, value: /b } }]
      filters: [{ type: URLRewrite, urlRewrite: { path: { type: ReplacePrefixMatch, replacePrefixMatch: /ab } } }]
      backendRefs: [{ name: infra-backend-v2, port: 8080 }]
    - matches: [{ path: { type: PathPrefix, value: /backend-level }, headers: [{ name: x, value: "1" }] }, { path: { type: Exact, value: /backend-level/exact } }]
      backendRefs:
        - name: infra-backend-v3
          port: 8080
          filters: [{ type: URLRewrite, urlRewrite: { path: { type: ReplacePrefixMatch, replacePrefixMatch: /y } } }]`),
      route("all-dropped", `  parentRefs: [{ name: same-namespace }]
  rules:
${prefix("RegularExpression", "/only/(.*)", "URLRewrite")}`),
      route("also-unsupported", `  parentRefs: [{ name: same-namespace }]
  rules:
${prefix("RegularExpression", "/both/(.*)", "URLRewrite")}
    - matches: [{ path: { type: PathPrefix, value: /both-bad } }]
      filters: [{ type: URLRewrite, urlRewrite: { hostname: "not a host" } }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]`),
    );
    expect(w.routeConditions(INFRA, "partly")).toEqual(["Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs PartiallyInvalid=True/UnsupportedValue"]);
    const partly = w.route(INFRA, "partly").parents[0]!.conditions.find((c) => c.type === "PartiallyInvalid")!;
    expect(partly.message).toMatch(/^Dropped Rule 0: URLRewrite .*; Dropped Rule 1: RequestRedirect .*; Dropped Rule 4: a backendRef's URLRewrite /);
    expect(w.routeConditions(INFRA, "all-dropped")).toEqual(["Accepted=False/UnsupportedValue ResolvedRefs=True/ResolvedRefs"]);
    expect(w.routeConditions(INFRA, "also-unsupported")).toEqual(["Accepted=False/UnsupportedValue ResolvedRefs=True/ResolvedRefs"]);
    const answers = ["/re/x", "/exact", "/ok/z", "/a/z", "/b", "/backend-level/exact", "/only/x", "/both/x", "/both-bad"].map((p) => `${p} ${w.answer({ path: p })}`);
    // Several PathPrefix matches are fine (only a --manifests object has them: the CRD allows one).
    expect(answers).toEqual(["/re/x 404", "/exact 404", `/ok/z ${V1}`, `/a/z ${V2}`, `/b ${V2}`, "/backend-level/exact 404", "/only/x 404", "/both/x 404", "/both-bad 500"]);
    const r = compile(w.snap, DEFAULT_COMPILE_CONFIG);
    expect(r.diagnostics.filter((d) => d.kind === "HTTPRoute").map((d) => `${d.name} ${d.reason} ${d.severity}`).sort()).toEqual([
      "all-dropped RouteNotAccepted error",
      "also-unsupported RouteNotAccepted error",
      "partly RouteRuleDropped warning",
    ]);
  });

  test("route and listener problems are diagnostics too (logged and counted like an Ingress's)", () => {
    const w = World.of(
      GATEWAYS["same-namespace"],
      route("missing", `  parentRefs: [{ name: same-namespace }]
  rules: [{ backendRefs: [{ name: nonexistent, port: 8080 }] }]`),
      route("wrong-section", `  parentRefs: [{ name: same-namespace, sectionName: nope }]
  rules: [{ backendRefs: [{ name: infra-backend-v1, port: 8080 }] }]`),
      `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: udp, namespace: ${INFRA} }
spec: { gatewayClassName: portico, listeners: [{ name: u, port: 53, protocol: UDP }] }`,
    );
    const r = compile(w.snap, DEFAULT_COMPILE_CONFIG);
    expect(r.diagnostics.filter((d) => d.kind !== "Ingress").map((d) => `${d.kind} ${d.namespace}/${d.name} ${d.reason}`)).toEqual([
      `Gateway ${INFRA}/udp ListenerNotProgrammed`,
      `HTTPRoute ${INFRA}/missing RouteRefsNotResolved`,
      `HTTPRoute ${INFRA}/wrong-section RouteNotAccepted`,
    ]);
  });
});
