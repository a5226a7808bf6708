// GATEWAY-HTTP core conformance tests (kubernetes-sigs/gateway-api v1.6, conformance/tests),
// transcribed: their objects created in the fake API server, requests through a real Portico
// process (one worker: the table crosses the worker wire), expectations as upstream. Each test
// is named after the upstream test. Backends are echo servers that report what they received.
import { describe, expect, test } from "bun:test";
import { ingress, ingressClass, tlsSecret } from "../e2e/objects.ts";
import { createCertificate } from "../tls/pki.ts";
import { eventually } from "../wait.ts";
import { APP, api, apply, ask, cleanup, conformanceBase, created, echoes, INFRA, portico, route, served, WEB } from "./base-harness.ts";

conformanceBase("gateway");

describe("GATEWAY-HTTP core through a real Portico", () => {
  test("HTTPRouteSimpleSameNamespace", async () => {
    apply(route("gateway-conformance-infra-test", `  parentRefs: [{ name: same-namespace }]
  rules: [{ backendRefs: [{ name: infra-backend-v1, port: 8080 }] }]`));
    const a = await served("/", (a) => a.status === 200);
    expect(a.backend).toBe(`${INFRA}/infra-backend-v1`);
    // Status, as GatewayAndHTTPRoutesMustBeAccepted and HTTPRouteMustHaveCondition read it.
    type Cond = { type: string; status: string; reason: string; observedGeneration: number; message: string; lastTransitionTime: string };
    const conds = (o: unknown) => ((o as { conditions?: Cond[] } | undefined)?.conditions ?? []).map((c) => `${c.type}=${c.status}/${c.reason}@${c.observedGeneration}`);
    await eventually(() => {
      const r = api.get("HTTPRoute", INFRA, "gateway-conformance-infra-test");
      const parents = (r?.status as { parents?: unknown[] } | undefined)?.parents ?? [];
      return parents.length === 1;
    }, 10_000);
    const r = api.get("HTTPRoute", INFRA, "gateway-conformance-infra-test")!;
    const parents = (r.status as { parents: { parentRef: unknown; controllerName: string; conditions: Cond[] }[] }).parents;
    expect(parents[0]!.controllerName).toBe("portico.dev/gateway-controller");
    expect(parents[0]!.parentRef).toEqual({ group: "gateway.networking.k8s.io", kind: "Gateway", name: "same-namespace", namespace: INFRA });
    expect(conds(parents[0])).toEqual([`Accepted=True/Accepted@${r.metadata.generation}`, `ResolvedRefs=True/ResolvedRefs@${r.metadata.generation}`]);
    expect(parents[0]!.conditions.every((c) => c.message !== "" && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/.test(c.lastTransitionTime))).toBe(true);
    await eventually(() => {
      const g = api.get("Gateway", INFRA, "same-namespace")?.status as { listeners?: { attachedRoutes: number }[] } | undefined;
      return g?.listeners?.[0]?.attachedRoutes === 1;
    }, 10_000);
    const gw = api.get("Gateway", INFRA, "same-namespace")!;
    const gs = gw.status as { addresses: unknown[]; listeners: { name: string; supportedKinds: unknown[]; conditions: Cond[] }[] };
    expect(gs.addresses).toEqual([{ type: "IPAddress", value: "192.0.2.10" }]);
    expect(conds(gs)).toEqual([`Accepted=True/Accepted@${gw.metadata.generation}`, `Programmed=True/Programmed@${gw.metadata.generation}`]);
    expect(gs.listeners.map((l) => l.name)).toEqual(["http"]);
    // Both route kinds served on an HTTP listener (upstream checks that HTTPRoute is among them).
    expect(gs.listeners[0]!.supportedKinds).toEqual([{ group: "gateway.networking.k8s.io", kind: "HTTPRoute" }, { group: "gateway.networking.k8s.io", kind: "GRPCRoute" }]);
    expect(conds(gs.listeners[0])).toEqual(["Accepted=True/Accepted@1", "ResolvedRefs=True/ResolvedRefs@1", "Programmed=True/Programmed@1", "Conflicted=False/NoConflicts@1"]);
    const gc = api.get("GatewayClass", null, "portico")!;
    expect(conds(gc.status)).toEqual([`Accepted=True/Accepted@${gc.metadata.generation}`]);
    cleanup();
    await served("/", (a) => a.status === 404);
  });

  test("HTTPRouteMatching", async () => {
    apply(route("matching", `  parentRefs: [{ name: same-namespace }]
  rules:
    - matches: [{ path: { type: PathPrefix, value: / } }, { headers: [{ name: version, value: one }] }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
    - matches: [{ path: { type: PathPrefix, value: /v2 } }, { headers: [{ name: version, value: two }] }]
      backendRefs: [{ name: infra-backend-v2, port: 8080 }]`));
    await served("/v2", (a) => a.backend === `${INFRA}/infra-backend-v2`);
    const cases: [string, Record<string, string>, string][] = [
      ["/", {}, "v1"],
      ["/example", {}, "v1"],
      ["/", { Version: "one" }, "v1"],
      ["/v2", {}, "v2"],
      ["/v2/example", {}, "v2"],
      ["/", { Version: "two" }, "v2"],
      ["/v2/", {}, "v2"],
      ["/v2example", {}, "v1"],
      ["/foo/v2/example", {}, "v1"],
    ];
    const got: string[] = [];
    for (const [path, headers] of cases) got.push(`${path} ${JSON.stringify(headers)} ${(await ask(path, { headers })).backend}`);
    expect(got).toEqual(cases.map(([path, headers, v]) => `${path} ${JSON.stringify(headers)} ${INFRA}/infra-backend-${v}`));
    cleanup();
  });

  test("HTTPRouteRequestHeaderModifier", async () => {
    apply(route("request-header-modifier", `  parentRefs: [{ name: same-namespace }]
  rules:
    - matches: [{ path: { type: PathPrefix, value: /set } }]
      filters: [{ type: RequestHeaderModifier, requestHeaderModifier: { set: [{ name: X-Header-Set, value: set-overwrites-values }] } }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
    - matches: [{ path: { type: PathPrefix, value: /add } }]
      filters: [{ type: RequestHeaderModifier, requestHeaderModifier: { add: [{ name: X-Header-Add, value: add-appends-values }] } }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
    - matches: [{ path: { type: PathPrefix, value: /remove } }]
      filters: [{ type: RequestHeaderModifier, requestHeaderModifier: { remove: [X-Header-Remove] } }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
    - matches: [{ path: { type: PathPrefix, value: /multiple } }]
      filters:
        - type: RequestHeaderModifier
          requestHeaderModifier:
            set: [{ name: X-Header-Set-1, value: header-set-1 }, { name: X-Header-Set-2, value: header-set-2 }]
            add: [{ name: X-Header-Add-1, value: header-add-1 }, { name: X-Header-Add-2, value: header-add-2 }, { name: X-Header-Add-3, value: header-add-3 }]
            remove: [X-Header-Remove-1, X-Header-Remove-2]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
    - matches: [{ path: { type: PathPrefix, value: /case-insensitivity } }]
      filters:
        - type: RequestHeaderModifier
          requestHeaderModifier:
            set: [{ name: X-Header-Set, value: header-set }]
            add: [{ name: X-Header-Add, value: header-add }, { name: x-lowercase-add, value: lowercase-add }, { name: x-Mixedcase-ADD-1, value: mixedcase-add-1 }, { name: X-mixeDcase-add-2, value: mixedcase-add-2 }, { name: X-UPPERCASE-ADD, value: uppercase-add }]
            remove: [X-Header-Remove]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]`));
    const set = await served("/set", (a) => a.headers["x-header-set"] !== undefined, { headers: { "Some-Other-Header": "val" } });
    expect(set.headers["x-header-set"]).toBe("set-overwrites-values");
    expect(set.headers["some-other-header"]).toBe("val");
    const set2 = await ask("/set", { headers: { "Some-Other-Header": "val", "X-Header-Set": "some-other-value" } });
    expect(set2.headers["x-header-set"]).toBe("set-overwrites-values");
    const add = await ask("/add", { headers: { "Some-Other-Header": "val" } });
    expect(add.headers["x-header-add"]).toBe("add-appends-values");
    const add2 = await ask("/add", { headers: { "Some-Other-Header": "val", "X-Header-Add": "some-other-value" } });
    expect(add2.headers["x-header-add"]).toBe("some-other-value,add-appends-values");
    const rm = await ask("/remove", { headers: { "X-Header-Remove": "val" } });
    expect(rm.headers["x-header-remove"]).toBeUndefined();
    const multi = await ask("/multiple", { headers: { "X-Header-Set-2": "set-val", "X-Header-Add-2": "add-val", "X-Header-Remove-1": "val1", "X-Header-Remove-2": "val2", "Another-Header": "another-header-val" } });
    expect(multi.headers).toMatchObject({
      "x-header-set-1": "header-set-1",
      "x-header-set-2": "header-set-2",
      "x-header-add-1": "header-add-1",
      "x-header-add-2": "add-val,header-add-2",
      "x-header-add-3": "header-add-3",
      "another-header": "another-header-val",
    });
    expect(multi.headers["x-header-remove-1"]).toBeUndefined();
    expect(multi.headers["x-header-remove-2"]).toBeUndefined();
    const ci = await ask("/case-insensitivity", { headers: { "x-header-set": "original-val-set", "x-header-add": "original-val-add", "x-header-remove": "original-val-remove", "Another-Header": "another-header-val" } });
    expect(ci.headers).toMatchObject({
      "x-header-set": "header-set",
      "x-header-add": "original-val-add,header-add",
      "x-lowercase-add": "lowercase-add",
      "x-mixedcase-add-1": "mixedcase-add-1",
      "x-mixedcase-add-2": "mixedcase-add-2",
      "x-uppercase-add": "uppercase-add",
      "another-header": "another-header-val",
    });
    expect(ci.headers["x-header-remove"]).toBeUndefined();
    cleanup();
  });

  test("HTTPRouteRedirectHostAndStatus", async () => {
    apply(route("redirect-host-and-status", `  parentRefs: [{ name: same-namespace }]
  rules:
    - matches: [{ path: { type: PathPrefix, value: /hostname-redirect } }]
      filters: [{ type: RequestRedirect, requestRedirect: { hostname: example.org } }]
    - matches: [{ path: { type: PathPrefix, value: /host-and-status } }]
      filters: [{ type: RequestRedirect, requestRedirect: { hostname: example.org, statusCode: 301 } }]`));
    const a = await served("/hostname-redirect", (a) => a.status === 302);
    // The listener's declared port is 80: left out, whatever port Portico listens on.
    expect(a.location).toBe("http://example.org/hostname-redirect");
    const b = await ask("/host-and-status");
    expect(b.status).toBe(301);
    expect(b.location).toBe("http://example.org/host-and-status");
    cleanup();
  });

  test("HTTPRouteReferenceGrant and HTTPRouteInvalidCrossNamespaceBackendRef", async () => {
    apply(route("reference-grant", `  parentRefs: [{ name: same-namespace }]
  rules: [{ backendRefs: [{ name: app-backend-v1, namespace: ${APP}, port: 8080 }] }]`));
    await served("/", (a) => a.status === 500);
    apply(`
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: { name: reference-grant, namespace: ${APP} }
spec:
  from: [{ group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: ${INFRA} }]
  to: [{ group: "", kind: Service, name: app-backend-v1 }]`);
    const a = await served("/", (a) => a.status === 200);
    expect(a.backend).toBe(`${APP}/app-backend-v1`);
    cleanup();
  });

  test("HTTPRouteInvalidNonExistentBackendRef: only the affected rule answers 500", async () => {
    apply(route("invalid-nonexistent-backend-ref", `  parentRefs: [{ name: same-namespace }]
  rules:
    - matches: [{ path: { type: PathPrefix, value: /bad } }]
      backendRefs: [{ name: nonexistent, port: 8080 }]
    - backendRefs: [{ name: infra-backend-v1, port: 8080 }]`));
    await served("/bad", (a) => a.status === 500);
    expect((await ask("/good")).backend).toBe(`${INFRA}/infra-backend-v1`);
    cleanup();
  });

  test("an HTTPRoute and an Ingress on one host: the Gateway rules first, the Ingress takes the rest", async () => {
    api.create("IngressClass", ingressClass());
    api.create("Service", { metadata: { name: "web-backend", namespace: INFRA }, spec: { ports: [{ name: "http", port: 80 }] } });
    api.create("EndpointSlice", {
      metadata: { name: "web-backend-x", namespace: INFRA, labels: { "kubernetes.io/service-name": "web-backend" } },
      addressType: "IPv4",
      ports: [{ name: "http", port: echoes.get(`${WEB}/web-backend`)!.port }],
      endpoints: [{ addresses: ["127.0.0.1"], conditions: { ready: true } }],
    });
    api.create("Ingress", ingress(INFRA, "legacy", [{ host: "shared.example.com", paths: [{ path: "/", service: "web-backend" }] }]));
    apply(route("new", `  parentRefs: [{ name: same-namespace }]
  hostnames: [shared.example.com]
  rules: [{ matches: [{ path: { type: PathPrefix, value: /api } }], backendRefs: [{ name: infra-backend-v2, port: 8080 }] }]`));
    await served("/api/x", (a) => a.backend === `${INFRA}/infra-backend-v2`, { host: "shared.example.com" });
    expect((await ask("/other", { host: "shared.example.com" })).backend).toBe(`${WEB}/web-backend`);
    cleanup();
    await served("/api/x", (a) => a.backend === `${WEB}/web-backend`, { host: "shared.example.com" });
  });

  test("an HTTPS listener serves its certificateRef by SNI and its routes on Portico's HTTPS port", async () => {
    const ca = createCertificate({ subjectCN: "gateway test CA", isCA: true });
    const leaf = createCertificate({ subjectCN: "secure.example.com", sans: ["secure.example.com"], issuer: { cert: ca.certPem, key: ca.keyPem } });
    api.create("Secret", tlsSecret(INFRA, "secure-cert", leaf.certPem, leaf.keyPem));
    apply(`
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: https-gateway, namespace: ${INFRA} }
spec:
  gatewayClassName: portico
  listeners:
    - name: https
      port: 443
      protocol: HTTPS
      hostname: secure.example.com
      tls: { certificateRefs: [{ name: secure-cert }] }
---
${route("https-route", `  parentRefs: [{ name: https-gateway, sectionName: https }]
  rules:
    - matches: [{ path: { type: PathPrefix, value: /moved } }]
      filters: [{ type: RequestRedirect, requestRedirect: { path: { type: ReplaceFullPath, replaceFullPath: /new } } }]
    - backendRefs: [{ name: infra-backend-v3, port: 8080 }]`).trim()}`);
    const tls = { ca: ca.certPem, serverName: "secure.example.com" };
    let body: { backend?: string } = {};
    await eventually(async () => {
      try {
        const res = await fetch(`https://127.0.0.1:${portico.ports.https}/x`, { headers: { host: "secure.example.com" }, tls } as RequestInit);
        body = (await res.json()) as { backend?: string };
        return body.backend === `${INFRA}/infra-backend-v3`;
      } catch {
        return false; // the certificate is not served yet: the handshake fails verification
      }
    }, 10_000);
    expect(body.backend).toBe(`${INFRA}/infra-backend-v3`);
    const moved = await fetch(`https://127.0.0.1:${portico.ports.https}/moved?q=1`, { headers: { host: "secure.example.com" }, tls, redirect: "manual" } as RequestInit);
    expect(moved.status).toBe(302);
    // The listener's declared port 443 is left out (not Portico's own HTTPS port).
    expect(moved.headers.get("location")).toBe("https://secure.example.com/new?q=1");
    // Not served on the HTTP port: the route is attached to the HTTPS listener only.
    expect((await ask("/x", { host: "secure.example.com" })).status).toBe(404);
    cleanup();
    api.delete("Secret", INFRA, "secure-cert");
  });

  test("HTTPRouteObservedGenerationBump (and our parent entry goes when the parentRef does)", async () => {
    apply(route("observed-generation-bump", `  parentRefs: [{ name: same-namespace }]
  rules: [{ backendRefs: [{ name: infra-backend-v1, port: 8080 }] }]`));
    type Parent = { controllerName: string; conditions: { type: string; status: string; observedGeneration: number }[] };
    const parentsOf = () => ((api.get("HTTPRoute", INFRA, "observed-generation-bump")?.status as { parents?: Parent[] } | undefined)?.parents ?? []);
    const latest = () => {
      const gen = api.get("HTTPRoute", INFRA, "observed-generation-bump")!.metadata.generation as number;
      const ps = parentsOf();
      return ps.length === 1 && ps[0]!.conditions.every((c) => c.observedGeneration === gen && c.status === "True");
    };
    await eventually(latest, 10_000);
    const before = api.get("HTTPRoute", INFRA, "observed-generation-bump")!;
    const spec = structuredClone(before.spec) as { rules: { backendRefs: { name: string }[] }[] };
    spec.rules[0]!.backendRefs[0]!.name = "infra-backend-v2";
    api.update("HTTPRoute", { ...before, spec });
    const after = api.get("HTTPRoute", INFRA, "observed-generation-bump")!;
    expect(after.metadata.generation).toBe((before.metadata.generation as number) + 1);
    await eventually(latest, 10_000);
    await served("/", (a) => a.backend === `${INFRA}/infra-backend-v2`);
    // Another controller's entry is kept; ours goes once the route no longer names our Gateway.
    const cur = api.get("HTTPRoute", INFRA, "observed-generation-bump")!;
    api.update("HTTPRoute", { ...cur, spec: { ...(cur.spec as object), parentRefs: [{ name: "someone-elses" }] } });
    await eventually(() => parentsOf().length === 0, 10_000);
    cleanup();
  });

  test("HTTPRouteWeight: requests split 70/30, none to the weight-0 backend", async () => {
    apply(route("weighted-backends", `  parentRefs: [{ name: same-namespace }]
  rules:
    - backendRefs:
        - { name: infra-backend-v1, port: 8080, weight: 70 }
        - { name: infra-backend-v2, port: 8080, weight: 30 }
        - { name: infra-backend-v3, port: 8080, weight: 0 }`));
    await served("/", (a) => a.backend === `${INFRA}/infra-backend-v2`);
    const counts = new Map<string, number>();
    const n = 400;
    for (let i = 0; i < n; i++) {
      const b = (await ask("/")).backend ?? "none";
      counts.set(b, (counts.get(b) ?? 0) + 1);
    }
    const share = (v: string) => (counts.get(`${INFRA}/infra-backend-${v}`) ?? 0) / n;
    // Binomial spread at n=400, p=0.7: sd 0.023; the bounds are over 4 sd away.
    expect(share("v1")).toBeGreaterThan(0.6);
    expect(share("v1")).toBeLessThan(0.8);
    expect(share("v1") + share("v2")).toBe(1);
    expect(share("v3")).toBe(0);
    cleanup();
  });

  type Cond = { type: string; status: string; observedGeneration: number };
  /** Every condition of the object (and of its listeners) carries its current generation. */
  const latest = (kind: string, ns: string | null, name: string): boolean => {
    const o = api.get(kind, ns, name);
    if (!o) return false;
    const gen = o.metadata.generation as number;
    const st = o.status as { conditions?: Cond[]; listeners?: { conditions?: Cond[] }[] } | undefined;
    const all = [...(st?.conditions ?? []), ...(st?.listeners ?? []).flatMap((l) => l.conditions ?? [])];
    return all.length > 0 && all.every((c) => c.observedGeneration === gen);
  };

  test("GatewayClassObservedGenerationBump", async () => {
    await eventually(() => latest("GatewayClass", null, "portico"), 10_000);
    const gc = api.get("GatewayClass", null, "portico")!;
    api.update("GatewayClass", { ...gc, spec: { ...(gc.spec as object), description: "a new description" } });
    expect(api.get("GatewayClass", null, "portico")!.metadata.generation).toBe((gc.metadata.generation as number) + 1);
    await eventually(() => latest("GatewayClass", null, "portico"), 10_000);
  });

  test("GatewayNameMaximumLength", async () => {
    // conformance/tests/gateway-name-maximum-length.go/.yaml (newer than v1.6.1; SupportGateway
    // alone): a Gateway whose name is 253 characters (the DNS subdomain limit) is reconciled,
    // GatewayMustHaveLatestConditions: every condition at the latest observedGeneration.
    const name = "gateway-name-maximum-length-" + "a".repeat(253 - "gateway-name-maximum-length-".length);
    expect(name.length).toBe(253);
    apply(`apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: ${name}, namespace: ${INFRA}, annotations: { gateway-api/skip-this-for-readiness: "true" } }
spec:
  gatewayClassName: portico
  listeners: [{ name: http, port: 80, protocol: HTTP }]`);
    await eventually(() => latest("Gateway", INFRA, name), 10_000, "the long-named Gateway's conditions at its generation");
    cleanup();
  });

  test("GatewayObservedGenerationBump and GatewayModifyListeners", async () => {
    apply(`
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: gateway-add-listener, namespace: ${INFRA} }
spec:
  gatewayClassName: portico
  listeners: [{ name: http-8080, port: 8080, protocol: HTTP, hostname: first.test.com, allowedRoutes: { namespaces: { from: All } } }]
---
${route("http-route-add", `  parentRefs: [{ name: gateway-add-listener }]
  rules: [{ backendRefs: [{ name: infra-backend-v1, port: 8080 }] }]`).trim()}`);
    await eventually(() => latest("Gateway", INFRA, "gateway-add-listener"), 10_000);
    await served("/", (a) => a.backend === `${INFRA}/infra-backend-v1`, { host: "first.test.com" });
    const gw = api.get("Gateway", INFRA, "gateway-add-listener")!;
    const spec = structuredClone(gw.spec) as { listeners: Record<string, unknown>[] };
    spec.listeners.push({ name: "http", port: 80, protocol: "HTTP", hostname: "data.test.com", allowedRoutes: { namespaces: { from: "All" } } });
    api.update("Gateway", { ...gw, spec });
    await eventually(() => latest("Gateway", INFRA, "gateway-add-listener"), 10_000);
    const listeners = () => ((api.get("Gateway", INFRA, "gateway-add-listener")!.status as { listeners: { name: string; attachedRoutes: number }[] }).listeners ?? []).map((l) => `${l.name}:${l.attachedRoutes}`);
    await eventually(() => listeners().join(" ") === "http-8080:1 http:1", 10_000);
    await served("/", (a) => a.backend === `${INFRA}/infra-backend-v1`, { host: "data.test.com" });
    // Removing the listener stops its traffic.
    const gw2 = api.get("Gateway", INFRA, "gateway-add-listener")!;
    api.update("Gateway", { ...gw2, spec: { ...(gw2.spec as object), listeners: (gw2.spec as { listeners: { name: string }[] }).listeners.filter((l) => l.name !== "http") } });
    await eventually(() => listeners().join(" ") === "http-8080:1", 10_000);
    await served("/", (a) => a.status === 404, { host: "data.test.com" });
    cleanup();
  });

  test("GatewayModifyListeners with upstream's own objects: an HTTP listener added beside an HTTPS one, the HTTPS one removed from another Gateway", async () => {
    // conformance/tests/gateway-modify-listeners.go/.yaml: after each patch the listeners
    // (GatewayStatusMustHaveListeners: exactly these, each Accepted and ResolvedRefs True with
    // one route attached) and every Gateway condition at the new generation
    // (GatewayMustHaveLatestConditions); NamespacesMustBeReady: Accepted and Programmed.
    const cert = createCertificate({ subjectCN: "secure.test.com", sans: ["secure.test.com"] });
    api.create("Secret", tlsSecret(INFRA, "tls-validity-checks-certificate", cert.certPem, cert.keyPem));
    created.push({ kind: "Secret", ns: INFRA, name: "tls-validity-checks-certificate" });
    const https = `{ name: https, port: 443, protocol: HTTPS, hostname: secure.test.com, allowedRoutes: { namespaces: { from: All } }, tls: { certificateRefs: [{ group: "", kind: Secret, name: tls-validity-checks-certificate, namespace: ${INFRA} }] } }`;
    const gw = (name: string, listeners: string) => `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: ${name}, namespace: ${INFRA} }
spec: { gatewayClassName: portico, listeners: [${listeners}] }`;
    const r = (name: string, parent: string) => route(name, `  parentRefs: [{ kind: Gateway, name: ${parent}, namespace: ${INFRA} }]
  rules: [{ backendRefs: [{ name: infra-backend-v1, port: 8080 }] }]`).trim();
    apply([gw("gateway-add-listener", https), r("http-route-1", "gateway-add-listener"), gw("gateway-remove-listener", `${https}, { name: http, port: 80, protocol: HTTP, allowedRoutes: { namespaces: { from: All } } }`), r("http-route-2", "gateway-remove-listener")].join("\n---\n"));
    type Cond = { type: string; status: string; reason: string; observedGeneration: number };
    type GwStatus = { conditions?: Cond[]; listeners?: { name: string; attachedRoutes: number; supportedKinds: { kind: string }[]; conditions: Cond[] }[] };
    /** What the upstream helpers read of one Gateway, or "" while a condition is older than the spec. */
    const seen = (name: string): string => {
      const o = api.get("Gateway", INFRA, name);
      const st = (o?.status ?? {}) as GwStatus;
      const gen = o?.metadata.generation as number;
      if ((st.conditions ?? []).length === 0 || !(st.conditions ?? []).every((c) => c.observedGeneration === gen)) return "";
      const top = (st.conditions ?? []).map((c) => `${c.type}=${c.status}`).join(" ");
      const ls = (st.listeners ?? []).map((l) => `${l.name}:${l.attachedRoutes}:${l.supportedKinds.map((k) => k.kind).join(",")}:${l.conditions.filter((c) => c.type === "Accepted" || c.type === "ResolvedRefs").map((c) => `${c.type}=${c.status}`).join(",")}`);
      return [top, ...ls].join(" | ");
    };
    const ok = (l: string) => `${l}:1:HTTPRoute,GRPCRoute:Accepted=True,ResolvedRefs=True`;
    await eventually(() => seen("gateway-add-listener") === `Accepted=True Programmed=True | ${ok("https")}`, 10_000, "gateway-add-listener before the patch");
    await eventually(() => seen("gateway-remove-listener") === `Accepted=True Programmed=True | ${ok("https")} | ${ok("http")}`, 10_000, "gateway-remove-listener before the patch");
    const patch = (name: string, edit: (ls: Record<string, unknown>[]) => Record<string, unknown>[]) => {
      const o = api.get("Gateway", INFRA, name)!;
      const spec = structuredClone(o.spec) as { listeners: Record<string, unknown>[] };
      api.update("Gateway", { ...o, spec: { ...spec, listeners: edit(spec.listeners) } });
      expect(api.get("Gateway", INFRA, name)!.metadata.generation).toBe((o.metadata.generation as number) + 1);
    };
    patch("gateway-add-listener", (ls) => [...ls, { name: "http", port: 80, protocol: "HTTP", hostname: "data.test.com", allowedRoutes: { namespaces: { from: "All" } } }]);
    await eventually(() => seen("gateway-add-listener") === `Accepted=True Programmed=True | ${ok("https")} | ${ok("http")}`, 10_000, "gateway-add-listener after adding http");
    await served("/", (a) => a.backend === `${INFRA}/infra-backend-v1`, { host: "data.test.com" });
    patch("gateway-remove-listener", (ls) => ls.filter((l) => l.name === "http"));
    await eventually(() => seen("gateway-remove-listener") === `Accepted=True Programmed=True | ${ok("http")}`, 10_000, "gateway-remove-listener after removing https");
    cleanup();
  });

  test("HTTPRouteHTTPSListener", async () => {
    // conformance/base: same-namespace-with-https-listener and tls-validity-checks-certificate.
    const cert = createCertificate({ subjectCN: "example.org", sans: ["example.org", "second-example.org", "*.wildcard.org"] });
    api.create("Secret", tlsSecret(INFRA, "tls-validity-checks-certificate", cert.certPem, cert.keyPem));
    const l = (name: string, host: string | null) =>
      `    - { name: ${name}, port: 443, protocol: HTTPS, ${host ? `hostname: "${host}", ` : ""}allowedRoutes: { namespaces: { from: Same } }, tls: { certificateRefs: [{ group: "", kind: Secret, name: tls-validity-checks-certificate }] } }`;
    apply(`
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: same-namespace-with-https-listener, namespace: ${INFRA} }
spec:
  gatewayClassName: portico
  listeners:
${[l("https", null), l("https-with-hostname", "second-example.org"), l("https-with-wildcard-hostname", "*.wildcard.org"), l("https-with-hostname-matching-wildcard", "fourth-example.wildcard.org")].join("\n")}
---
${route("httproute-https-test", `  parentRefs: [{ name: same-namespace-with-https-listener }]
  hostnames: [example.org]
  rules: [{ backendRefs: [{ name: infra-backend-v1, port: 8080 }] }]`).trim()}
---
${route("httproute-https-test-no-hostname", `  parentRefs: [{ name: same-namespace-with-https-listener, sectionName: https-with-hostname }]
  rules: [{ backendRefs: [{ name: infra-backend-v2, port: 8080 }] }]`).trim()}`);
    const tlsGet = async (host: string) => {
      try {
        const res = await fetch(`https://127.0.0.1:${portico.ports.https}/`, { headers: { host }, tls: { ca: cert.certPem, serverName: host } } as RequestInit);
        return `${res.status} ${((await res.json()) as { backend?: string }).backend}`;
      } catch (e) {
        return String(e);
      }
    };
    for (const [host, backend] of [["example.org", "infra-backend-v1"], ["second-example.org", "infra-backend-v2"]] as const) {
      let got = "";
      await eventually(async () => (got = await tlsGet(host)) === `200 ${INFRA}/${backend}`, 10_000).catch(() => undefined);
      expect(`${host} ${got}`).toBe(`${host} 200 ${INFRA}/${backend}`);
    }
    cleanup();
    api.delete("Secret", INFRA, "tls-validity-checks-certificate");
  });

  test("HTTPRouteServiceTypes", async () => {
    const port = echoes.get(`${INFRA}/infra-backend-v1`)!.port;
    const svc = (name: string, headless: boolean) => {
      api.create("Service", { metadata: { name, namespace: INFRA }, spec: { ...(headless ? { clusterIP: "None" } : {}), ports: [{ name: "first-port", port: 8080, targetPort: 3000 }] } });
      created.push({ kind: "Service", ns: INFRA, name });
      // Dual-stack as upstream: an IPv4 slice with the pod, and an IPv6 slice (empty here: loopback tests).
      for (const [suffix, addressType, endpoints] of [["ip4", "IPv4", [{ addresses: ["127.0.0.1"], conditions: { ready: true } }]], ["ip6", "IPv6", []]] as const) {
        api.create("EndpointSlice", { metadata: { name: `${name}-${suffix}`, namespace: INFRA, labels: { "kubernetes.io/service-name": name } }, addressType, ports: [{ name: "first-port", port }], endpoints });
        created.push({ kind: "EndpointSlice", ns: INFRA, name: `${name}-${suffix}` });
      }
    };
    svc("manual-endpointslices", false);
    svc("headless", true);
    svc("headless-manual-endpointslices", true);
    apply(route("service-types", `  parentRefs: [{ name: same-namespace }]
  rules:
    - { matches: [{ path: { type: Exact, value: /manual-endpointslices } }], backendRefs: [{ name: manual-endpointslices, port: 8080 }] }
    - { matches: [{ path: { type: Exact, value: /headless } }], backendRefs: [{ name: headless, port: 8080 }] }
    - { matches: [{ path: { type: Exact, value: /headless-manual-endpointslices } }], backendRefs: [{ name: headless-manual-endpointslices, port: 8080 }] }`));
    for (const path of ["/manual-endpointslices", "/headless", "/headless-manual-endpointslices"]) {
      const a = await served(path, (a) => a.status === 200);
      expect(`${path} ${a.backend} ${a.path}`).toBe(`${path} ${INFRA}/infra-backend-v1 ${path}`);
    }
    cleanup();
  });

  test("conflicted listeners, as the status the API server holds says them: not accepted, not programmed, no route; the Gateway ListenersNotValid", async () => {
    // apis/v1 gateway_types.go "Handling indistinct Listeners" (every conflicted listener left
    // out, the Gateway ListenersNotValid); the listener conditions as
    // conformance/tests/listenerset-protocol-conflict.go expects them of a conflicted listener.
    const cert = createCertificate({ subjectCN: "clash.example.com", sans: ["clash.example.com"] });
    api.create("Secret", tlsSecret(INFRA, "clash-cert", cert.certPem, cert.keyPem));
    created.push({ kind: "Secret", ns: INFRA, name: "clash-cert" });
    apply(`
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: partly-conflicted, namespace: ${INFRA} }
spec:
  gatewayClassName: portico
  listeners:
    - { name: http, port: 80, protocol: HTTP, hostname: good.example.com }
    - { name: clash-http, port: 8443, protocol: HTTP, hostname: clash.example.com }
    - { name: clash-https, port: 8443, protocol: HTTPS, hostname: clash.example.com, tls: { certificateRefs: [{ name: clash-cert }] } }
---
${route("on-the-clash", `  parentRefs: [{ name: partly-conflicted, sectionName: clash-http }]
  rules: [{ backendRefs: [{ name: infra-backend-v1, port: 8080 }] }]`).trim()}
---
${route("on-the-gateway", `  parentRefs: [{ name: partly-conflicted }]
  rules: [{ backendRefs: [{ name: infra-backend-v2, port: 8080 }] }]`).trim()}`);
    type Cond = { type: string; status: string; reason: string; observedGeneration: number };
    const conds = (o: unknown) => ((o as { conditions?: Cond[] } | undefined)?.conditions ?? []).map((c) => `${c.type}=${c.status}/${c.reason}@${c.observedGeneration}`).join(" ");
    type GwStatus = { conditions?: Cond[]; listeners?: { name: string; attachedRoutes: number; conditions: Cond[] }[] };
    const gwStatus = () => (api.get("Gateway", INFRA, "partly-conflicted")?.status ?? {}) as GwStatus;
    const parent = (name: string) => conds(((api.get("HTTPRoute", INFRA, name)?.status as { parents?: unknown[] } | undefined)?.parents ?? [])[0]);
    await served("/", (a) => a.backend === `${INFRA}/infra-backend-v2`, { host: "good.example.com" });
    await eventually(() => (gwStatus().listeners ?? []).length === 3 && parent("on-the-clash") !== "" && parent("on-the-gateway") !== "", 10_000, "the Gateway's and both routes' status written");
    const st = gwStatus();
    expect(conds(st)).toBe("Accepted=True/ListenersNotValid@1 Programmed=True/Programmed@1");
    expect(st.listeners!.map((l) => `${l.name} ${l.attachedRoutes} ${conds(l)}`)).toEqual([
      "http 1 Accepted=True/Accepted@1 ResolvedRefs=True/ResolvedRefs@1 Programmed=True/Programmed@1 Conflicted=False/NoConflicts@1",
      "clash-http 0 Accepted=False/ProtocolConflict@1 ResolvedRefs=True/ResolvedRefs@1 Programmed=False/ProtocolConflict@1 Conflicted=True/ProtocolConflict@1",
      "clash-https 0 Accepted=False/ProtocolConflict@1 ResolvedRefs=True/ResolvedRefs@1 Programmed=False/ProtocolConflict@1 Conflicted=True/ProtocolConflict@1",
    ]);
    expect(parent("on-the-clash")).toBe("Accepted=False/NotAllowedByListeners@1 ResolvedRefs=True/ResolvedRefs@1");
    expect(parent("on-the-gateway")).toBe("Accepted=True/Accepted@1 ResolvedRefs=True/ResolvedRefs@1");
    expect((await ask("/", { host: "clash.example.com" })).status).toBe(404);
    cleanup();
  });

  test("a Gateway that is not accepted (spec.addresses) serves nothing, and its status says so: listeners not accepted, the route NotAllowedByListeners, no attachedRoutes", async () => {
    // GatewayConditionAccepted False UnsupportedAddress (the shape GatewayStaticAddresses expects
    // first). Its listeners generate no data plane configuration, so they are not accepted
    // (ListenerConditionAccepted) and take no route; attachedRoutes counts only "Routes with the
    // Accepted condition set to True" (apis/v1 gateway_types.go ListenerStatus.AttachedRoutes).
    apply(`
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: refused-addresses, namespace: ${INFRA} }
spec:
  gatewayClassName: portico
  addresses: [{ type: IPAddress, value: 192.0.2.99 }]
  listeners: [{ name: http, port: 80, protocol: HTTP }]
---
${route("on-the-refused", `  parentRefs: [{ name: refused-addresses }]
  hostnames: [refused.example.com]
  rules: [{ backendRefs: [{ name: infra-backend-v1, port: 8080 }] }]`).trim()}
---
${route("beside-the-refused", `  parentRefs: [{ name: same-namespace }]
  hostnames: [beside.example.com]
  rules: [{ backendRefs: [{ name: infra-backend-v2, port: 8080 }] }]`).trim()}`);
    type Cond = { type: string; status: string; reason: string; observedGeneration: number };
    const conds = (o: unknown) => ((o as { conditions?: Cond[] } | undefined)?.conditions ?? []).map((c) => `${c.type}=${c.status}/${c.reason}@${c.observedGeneration}`).join(" ");
    type GwStatus = { conditions?: Cond[]; listeners?: { name: string; attachedRoutes: number; conditions: Cond[] }[] };
    const gwStatus = () => (api.get("Gateway", INFRA, "refused-addresses")?.status ?? {}) as GwStatus;
    const parent = (name: string) => conds(((api.get("HTTPRoute", INFRA, name)?.status as { parents?: unknown[] } | undefined)?.parents ?? [])[0]);
    await served("/", (a) => a.backend === `${INFRA}/infra-backend-v2`, { host: "beside.example.com" });
    await eventually(() => (gwStatus().listeners ?? []).length === 1 && parent("on-the-refused") !== "", 10_000, "the Gateway's and the route's status written");
    const st = gwStatus();
    expect(conds(st)).toBe("Accepted=False/UnsupportedAddress@1 Programmed=False/Invalid@1");
    expect(st.listeners!.map((l) => `${l.name} ${l.attachedRoutes} ${conds(l)}`)).toEqual([
      "http 0 Accepted=False/UnsupportedAddress@1 ResolvedRefs=True/ResolvedRefs@1 Programmed=False/Invalid@1 Conflicted=False/NoConflicts@1",
    ]);
    expect(parent("on-the-refused")).toBe("Accepted=False/NotAllowedByListeners@1 ResolvedRefs=True/ResolvedRefs@1");
    // What the status says is what is served: the refused Gateway's route answers nothing.
    expect((await ask("/", { host: "refused.example.com" })).status).toBe(404);
    cleanup();
  });
});
