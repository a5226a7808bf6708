// GATEWAY-HTTP Extended conformance tests (kubernetes-sigs/gateway-api v1.6, conformance/tests,
// and the newer ones named so) for the features Portico lists in GatewayClass
// status.supportedFeatures, transcribed like serve.test.ts: the upstream objects created in the
// fake API server, requests through a real Portico process, expectations as upstream. Each test
// is named after the upstream test (its ShortName). Backends are echo servers that report what
// they received, Host included. The suite runs twice: on the shared ports
// (extended.test.ts) and with --gateway-ports, each Gateway asked at its own port
// (extended-own-ports.test.ts), as a conformance run against Portico is set up.
import { afterEach, describe, expect, test } from "bun:test";
import http2 from "node:http2";
import { eventually } from "../wait.ts";
import { api, apply, ask, cleanup, conformanceBase, echoes, httpPort, INFRA, route, served } from "./base-harness.ts";

/** Waits until every named route has Accepted=True and ResolvedRefs=True (GatewayAndHTTPRoutesMustBeAccepted, HTTPRouteMustHaveResolvedRefsConditionsTrue). */
async function accepted(...names: string[]): Promise<void> {
  type Cond = { type: string; status: string };
  await eventually(() =>
    names.every((n) => {
      const parents = (api.get("HTTPRoute", INFRA, n)?.status as { parents?: { conditions: Cond[] }[] } | undefined)?.parents ?? [];
      return parents.length === 1 && ["Accepted", "ResolvedRefs"].every((t) => parents[0]!.conditions.some((c) => c.type === t && c.status === "True"));
    }), 10_000, `routes ${names.join(", ")} accepted`);
}

/** The suite's BackendSetResponseHeaders: the echo server's X-Echo-Set-Header request field. */
const echoSet = (h: Record<string, string>) => ({ "X-Echo-Set-Header": Object.entries(h).map(([k, v]) => `${k}:${v}`).join(",") });

/** The Location of a redirect, split as the conformance suite's RedirectRequest compares it. */
function target(location: string | null): string {
  if (location === null) return "(no location)";
  const u = new URL(location);
  return `${u.protocol.slice(0, -1)}://${u.hostname}${u.port === "" ? "" : `:${u.port}`}${u.pathname}`;
}

/** The suite against one Portico; `ownPorts`: with --gateway-ports, each Gateway at its own port. */
export function extendedSuite(tag: string, ownPorts: boolean): void {
  conformanceBase(tag, { ownPorts });
  // Each test's route is gone before the next one starts: several claim `/`.
  afterEach(async () => {
    cleanup();
    await served("/no-route-here", (a) => a.status === 404);
  });
  describe(`GATEWAY-HTTP Extended through a real Portico${ownPorts ? " (--gateway-ports)" : ""}`, tests(ownPorts));
}

const tests = (ownPorts: boolean) => () => {
  test("GatewayClass status.supportedFeatures lists the Extended features served, sorted by name", async () => {
    await eventually(() => Array.isArray((api.get("GatewayClass", null, "portico")?.status as { supportedFeatures?: unknown } | undefined)?.supportedFeatures), 10_000);
    const names = ((api.get("GatewayClass", null, "portico")!.status as { supportedFeatures: { name: string }[] }).supportedFeatures).map((f) => f.name);
    expect(names).toEqual([...names].sort());
    for (const f of [
      "HTTPRoute303RedirectStatusCode", "HTTPRoute307RedirectStatusCode", "HTTPRoute308RedirectStatusCode", "HTTPRouteBackendRequestHeaderModification", "HTTPRouteHostRewrite", "HTTPRouteMethodMatching",
      "HTTPRoutePathRedirect", "HTTPRoutePathRewrite", "HTTPRoutePortRedirect", "HTTPRouteQueryParamMatching", "HTTPRouteSchemeRedirect",
      "HTTPRouteRequestTimeout", "HTTPRouteBackendTimeout", "HTTPRouteRequestMirror", "HTTPRouteRequestMultipleMirrors",
      "HTTPRouteResponseHeaderModification", "HTTPRouteRequestPercentageMirror", "HTTPRouteCORS",
      "HTTPRouteNamedRouteRule", "GatewayHTTPListenerIsolation", "HTTPRouteBackendProtocolWebSocket", "HTTPRouteBackendProtocolH2C",
    ]) expect(names).toContain(f);
    // Not served: a conformance run must not select their tests. HTTPRouteParentRefPort also
    // selects HTTPRouteListenerPortMatching, which needs a socket per listener port, and
    // GatewayPort8080 a listener on 8080 reached there: listed only with --gateway-ports
    // (test/gateway/own-address.ts).
    for (const f of ["HTTPRouteParentRefPort", "GatewayPort8080"]) (ownPorts ? expect(names) : expect(names).not).toContain(f);
    expect(names).not.toContain("HTTPRouteDestinationPortMatching");
  });

  test("HTTPRouteRedirectScheme", async () => {
    apply(route("redirect-scheme", `  parentRefs: [{ name: same-namespace }]
  rules:
    - matches: [{ path: { type: PathPrefix, value: /scheme } }]
      filters: [{ type: RequestRedirect, requestRedirect: { scheme: "https" } }]
    - matches: [{ path: { type: PathPrefix, value: /scheme-and-host } }]
      filters: [{ type: RequestRedirect, requestRedirect: { hostname: example.org, scheme: "https" } }]
    - matches: [{ path: { type: PathPrefix, value: /scheme-and-status } }]
      filters: [{ type: RequestRedirect, requestRedirect: { scheme: "https", statusCode: 301 } }]
    - matches: [{ path: { type: PathPrefix, value: /scheme-and-host-and-status } }]
      filters: [{ type: RequestRedirect, requestRedirect: { scheme: "https", statusCode: 302, hostname: example.org } }]`));
    await served("/scheme", (a) => a.status === 302);
    const cases: [string, number, string][] = [
      ["/scheme", 302, "https://example.com/scheme"],
      ["/scheme-and-host", 302, "https://example.org/scheme-and-host"],
      ["/scheme-and-status", 301, "https://example.com/scheme-and-status"],
      ["/scheme-and-host-and-status", 302, "https://example.org/scheme-and-host-and-status"],
    ];
    const got: string[] = [];
    for (const [path] of cases) {
      const a = await ask(path);
      got.push(`${path} ${a.status} ${target(a.location)}`);
    }
    expect(got).toEqual(cases.map(([p, s, l]) => `${p} ${s} ${l}`));
  });

  test("HTTPRouteRedirectPort", async () => {
    apply(route("redirect-port", `  parentRefs: [{ name: same-namespace }]
  rules:
    - matches: [{ path: { type: PathPrefix, value: /port } }]
      filters: [{ type: RequestRedirect, requestRedirect: { port: 8083 } }]
    - matches: [{ path: { type: PathPrefix, value: /port-and-host } }]
      filters: [{ type: RequestRedirect, requestRedirect: { hostname: example.org, port: 8083 } }]
    - matches: [{ path: { type: PathPrefix, value: /port-and-status } }]
      filters: [{ type: RequestRedirect, requestRedirect: { port: 8083, statusCode: 301 } }]
    - matches: [{ path: { type: PathPrefix, value: /port-and-host-and-status } }]
      filters: [{ type: RequestRedirect, requestRedirect: { port: 8083, hostname: example.org, statusCode: 302 } }]`));
    await served("/port", (a) => a.status === 302);
    const cases: [string, number, string][] = [
      ["/port", 302, "http://example.com:8083/port"],
      ["/port-and-host", 302, "http://example.org:8083/port-and-host"],
      ["/port-and-status", 301, "http://example.com:8083/port-and-status"],
      ["/port-and-host-and-status", 302, "http://example.org:8083/port-and-host-and-status"],
    ];
    const got: string[] = [];
    for (const [path] of cases) {
      const a = await ask(path);
      got.push(`${path} ${a.status} ${target(a.location)}`);
    }
    expect(got).toEqual(cases.map(([p, s, l]) => `${p} ${s} ${l}`));
  });

  test("HTTPRouteRedirectPath", async () => {
    apply(route("redirect-path", `  parentRefs: [{ name: same-namespace }]
  rules:
    - matches: [{ path: { type: PathPrefix, value: /original-prefix } }]
      filters: [{ type: RequestRedirect, requestRedirect: { path: { type: ReplacePrefixMatch, replacePrefixMatch: /replacement-prefix } } }]
    - matches: [{ path: { type: PathPrefix, value: /full } }]
      filters: [{ type: RequestRedirect, requestRedirect: { path: { type: ReplaceFullPath, replaceFullPath: /full-path-replacement } } }]
    - matches: [{ path: { type: PathPrefix, value: /path-and-host } }]
      filters: [{ type: RequestRedirect, requestRedirect: { hostname: example.org, path: { type: ReplacePrefixMatch, replacePrefixMatch: /replacement-prefix } } }]
    - matches: [{ path: { type: PathPrefix, value: /path-and-status } }]
      filters: [{ type: RequestRedirect, requestRedirect: { path: { type: ReplacePrefixMatch, replacePrefixMatch: /replacement-prefix }, statusCode: 301 } }]
    - matches: [{ path: { type: PathPrefix, value: /full-path-and-host } }]
      filters: [{ type: RequestRedirect, requestRedirect: { hostname: example.org, path: { type: ReplaceFullPath, replaceFullPath: /replacement-full } } }]
    - matches: [{ path: { type: PathPrefix, value: /full-path-and-status } }]
      filters: [{ type: RequestRedirect, requestRedirect: { path: { type: ReplaceFullPath, replaceFullPath: /replacement-full }, statusCode: 301 } }]`));
    await served("/original-prefix/lemon", (a) => a.status === 302);
    const cases: [string, number, string][] = [
      ["/original-prefix/lemon", 302, "http://example.com/replacement-prefix/lemon"],
      ["/full/path/original", 302, "http://example.com/full-path-replacement"],
      ["/path-and-host", 302, "http://example.org/replacement-prefix"],
      ["/path-and-status", 301, "http://example.com/replacement-prefix"],
      ["/full-path-and-host", 302, "http://example.org/replacement-full"],
      ["/full-path-and-status", 301, "http://example.com/replacement-full"],
    ];
    const got: string[] = [];
    for (const [path] of cases) {
      const a = await ask(path);
      got.push(`${path} ${a.status} ${target(a.location)}`);
    }
    expect(got).toEqual(cases.map(([p, s, l]) => `${p} ${s} ${l}`));
  });

  // HTTPRoute303Redirect, HTTPRoute307Redirect, HTTPRoute308Redirect: one route each upstream,
  // the status asked and the request's own URL as Location.
  for (const [name, path, code] of [
    ["HTTPRoute303Redirect", "/see-other", 303],
    ["HTTPRoute307Redirect", "/temporary", 307],
    ["HTTPRoute308Redirect", "/permanent", 308],
  ] as const) {
    test(name, async () => {
      apply(route(`${code}-redirect`, `  parentRefs: [{ name: same-namespace }]
  rules:
    - matches: [{ path: { type: PathPrefix, value: ${path} } }]
      filters: [{ type: RequestRedirect, requestRedirect: { statusCode: ${code} } }]`));
      const a = await served(path, (a) => a.status === code);
      expect(target(a.location)).toBe(`http://example.com${path}`);
    });
  }

  test("HTTPRouteRewriteHost", async () => {
    apply(route("rewrite-host", `  hostnames: ["rewrite.example"]
  parentRefs: [{ name: same-namespace }]
  rules:
    - matches: [{ path: { type: PathPrefix, value: /one } }]
      filters: [{ type: URLRewrite, urlRewrite: { hostname: one.example.org } }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
    - filters: [{ type: URLRewrite, urlRewrite: { hostname: example.org } }]
      backendRefs: [{ name: infra-backend-v2, port: 8080 }]
    - matches: [{ path: { type: PathPrefix, value: /rewrite-host-and-modify-headers } }]
      filters:
        - { type: URLRewrite, urlRewrite: { hostname: test.example.org } }
        - type: RequestHeaderModifier
          requestHeaderModifier:
            set: [{ name: X-Header-Set, value: set-overwrites-values }]
            add: [{ name: X-Header-Add, value: header-val-1 }, { name: X-Header-Add-Append, value: header-val-2 }]
            remove: [X-Header-Remove]
      backendRefs: [{ name: infra-backend-v2, port: 8080 }]`));
    const one = await served("/one", (a) => a.status === 200, { host: "rewrite.example" });
    expect([one.backend, one.path, one.headers.host]).toEqual([`${INFRA}/infra-backend-v1`, "/one", "one.example.org"]);
    const two = await ask("/two", { host: "rewrite.example" });
    expect([two.backend, two.path, two.headers.host]).toEqual([`${INFRA}/infra-backend-v2`, "/two", "example.org"]);
    const three = await ask("/rewrite-host-and-modify-headers", { host: "rewrite.example", headers: { "X-Header-Remove": "remove-val", "X-Header-Add-Append": "append-val-1" } });
    expect([three.backend, three.path, three.headers.host]).toEqual([`${INFRA}/infra-backend-v2`, "/rewrite-host-and-modify-headers", "test.example.org"]);
    expect(three.headers["x-header-add"]).toBe("header-val-1");
    expect(three.headers["x-header-add-append"]).toBe("append-val-1,header-val-2");
    expect(three.headers["x-header-set"]).toBe("set-overwrites-values");
    expect(three.headers["x-header-remove"]).toBeUndefined();
  });

  test("HTTPRouteRewritePath", async () => {
    const modify = `
        - type: RequestHeaderModifier
          requestHeaderModifier:
            set: [{ name: X-Header-Set, value: set-overwrites-values }]
            add: [{ name: X-Header-Add, value: header-val-1 }, { name: X-Header-Add-Append, value: header-val-2 }]
            remove: [X-Header-Remove]`;
    apply(route("rewrite-path", `  parentRefs: [{ name: same-namespace }]
  rules:
    - matches: [{ path: { type: PathPrefix, value: /prefix/one } }]
      filters: [{ type: URLRewrite, urlRewrite: { path: { type: ReplacePrefixMatch, replacePrefixMatch: /one } } }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
    - matches: [{ path: { type: PathPrefix, value: /strip-prefix } }]
      filters: [{ type: URLRewrite, urlRewrite: { path: { type: ReplacePrefixMatch, replacePrefixMatch: / } } }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
    - matches: [{ path: { type: PathPrefix, value: /full/one } }]
      filters: [{ type: URLRewrite, urlRewrite: { path: { type: ReplaceFullPath, replaceFullPath: /one } } }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
    - matches: [{ path: { type: PathPrefix, value: /full/rewrite-path-and-modify-headers } }]
      filters:
        - { type: URLRewrite, urlRewrite: { path: { type: ReplaceFullPath, replaceFullPath: /test } } }${modify}
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
    - matches: [{ path: { type: PathPrefix, value: /prefix/rewrite-path-and-modify-headers } }]
      filters:
        - { type: URLRewrite, urlRewrite: { path: { type: ReplacePrefixMatch, replacePrefixMatch: /prefix } } }${modify}
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]`));
    await served("/prefix/one/two", (a) => a.status === 200);
    const cases: [string, string][] = [
      ["/prefix/one/two", "/one/two"],
      ["/strip-prefix/three", "/three"],
      ["/strip-prefix", "/"],
      ["/full/one/two", "/one"],
    ];
    const got: string[] = [];
    for (const [path] of cases) got.push(`${path} → ${(await ask(path)).path}`);
    expect(got).toEqual(cases.map(([p, want]) => `${p} → ${want}`));
    const headers = { "X-Header-Remove": "remove-val", "X-Header-Add-Append": "append-val-1", "X-Header-Set": "set-val" };
    for (const [path, want] of [
      ["/full/rewrite-path-and-modify-headers/test", "/test"],
      ["/prefix/rewrite-path-and-modify-headers/one", "/prefix/one"],
    ] as const) {
      const a = await ask(path, { headers });
      expect(a.path).toBe(want);
      expect(a.headers["x-header-add"]).toBe("header-val-1");
      expect(a.headers["x-header-add-append"]).toBe("append-val-1,header-val-2");
      expect(a.headers["x-header-set"]).toBe("set-overwrites-values");
      expect(a.headers["x-header-remove"]).toBeUndefined();
    }
    // The query is kept: HTTPPathModifier changes the path only.
    expect((await ask("/prefix/one/two?a=1&b=2")).path).toBe("/one/two?a=1&b=2");
  });

  test("HTTPRouteBackendRequestHeaderModifier", async () => {
    const backend = (filter: string) => `      backendRefs:
        - name: infra-backend-v1
          port: 8080
          filters:
            - type: RequestHeaderModifier
              requestHeaderModifier: ${filter}`;
    apply(route("request-header-modifier", `  parentRefs: [{ name: same-namespace }]
  rules:
    - matches: [{ path: { type: PathPrefix, value: /set } }]
${backend("{ set: [{ name: X-Header-Set, value: set-overwrites-values }] }")}
    - matches: [{ path: { type: PathPrefix, value: /add } }]
${backend("{ add: [{ name: X-Header-Add, value: add-appends-values }] }")}
    - matches: [{ path: { type: PathPrefix, value: /remove } }]
${backend("{ remove: [X-Header-Remove] }")}
    - matches: [{ path: { type: PathPrefix, value: /multiple } }]
${backend("{ set: [{ name: X-Header-Set-1, value: header-set-1 }, { name: X-Header-Set-2, value: header-set-2 }], add: [{ name: X-Header-Add-1, value: header-add-1 }, { name: X-Header-Add-2, value: header-add-2 }, { name: X-Header-Add-3, value: header-add-3 }], remove: [X-Header-Remove-1, X-Header-Remove-2] }")}
    - matches: [{ path: { type: PathPrefix, value: /case-insensitivity } }]
${backend("{ set: [{ name: X-Header-Set, value: header-set }], add: [{ name: X-Header-Add, value: header-add }], remove: [X-Header-Remove] }")}`));
    const set = await served("/set", (a) => a.headers["x-header-set"] !== undefined, { headers: { "Some-Other-Header": "val" } });
    expect([set.backend, set.headers["x-header-set"], set.headers["some-other-header"]]).toEqual([`${INFRA}/infra-backend-v1`, "set-overwrites-values", "val"]);
    const set2 = await ask("/set", { headers: { "Some-Other-Header": "val", "X-Header-Set": "some-other-value" } });
    expect(set2.headers["x-header-set"]).toBe("set-overwrites-values");
    const add = await ask("/add", { headers: { "Some-Other-Header": "val" } });
    expect(add.headers["x-header-add"]).toBe("add-appends-values");
    const add2 = await ask("/add", { headers: { "Some-Other-Header": "val", "X-Header-Add": "some-other-value" } });
    expect(add2.headers["x-header-add"]).toBe("some-other-value,add-appends-values");
    const rm = await ask("/remove", { headers: { "X-Header-Remove": "val" } });
    expect(rm.status).toBe(200);
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
    expect(ci.headers).toMatchObject({ "x-header-set": "header-set", "x-header-add": "original-val-add,header-add", "another-header": "another-header-val" });
    expect(ci.headers["x-header-remove"]).toBeUndefined();
  });

  test("HTTPRouteRequestHeaderModifierBackendWeights", async () => {
    apply(route("request-header-modifier-backend-weights", `  parentRefs: [{ name: same-namespace }]
  rules:
    - backendRefs:
        - { name: infra-backend-v1, port: 8080, weight: 10, filters: [{ type: RequestHeaderModifier, requestHeaderModifier: { set: [{ name: Backend, value: infra-backend-v1 }] } }] }
        - { name: infra-backend-v2, port: 8080, weight: 10, filters: [{ type: RequestHeaderModifier, requestHeaderModifier: { set: [{ name: Backend, value: infra-backend-v2 }] } }] }`));
    await served("/", (a) => a.status === 200 && a.headers.backend !== undefined);
    // Upstream: 100 requests, each carrying exactly the Backend header of the backend it reached.
    const wrong: string[] = [];
    const seen = new Set<string>();
    for (let i = 0; i < 100; i++) {
      const a = await ask("/");
      seen.add(a.backend ?? "");
      if (a.backend !== `${INFRA}/${a.headers.backend}`) wrong.push(`${a.backend} got Backend: ${a.headers.backend}`);
    }
    expect(wrong).toEqual([]);
    expect(seen.size).toBe(2);
  });

  for (const [name, field, path] of [
    ["HTTPRouteTimeoutRequest", "request", "request-timeout"],
    ["HTTPRouteTimeoutBackendRequest", "backendRequest", "backend-timeout"],
  ] as const) {
    test(name, async () => {
      apply(route(`${path}-route`, `  parentRefs: [{ name: same-namespace }]
  rules:
    - matches: [{ path: { type: PathPrefix, value: /${path} } }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
      timeouts: { ${field}: 500ms }
    - matches: [{ path: { type: PathPrefix, value: /disable-${path} } }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
      timeouts: { ${field}: "0s" }`));
      await served(`/${path}`, (a) => a.status === 200);
      expect((await ask(`/${path}?delay=1s`)).status).toBe(504);
      expect((await ask(`/disable-${path}?delay=1s`)).status).toBe(200);
    });
  }

  test("HTTPRouteRequestMirror", async () => {
    apply(route("request-mirror", `  parentRefs: [{ name: same-namespace }]
  rules:
    - matches: [{ path: { type: PathPrefix, value: /mirror } }]
      filters: [{ type: RequestMirror, requestMirror: { backendRef: { name: infra-backend-v2, namespace: ${INFRA}, port: 8080 } } }]
      backendRefs: [{ name: infra-backend-v1, port: 8080, namespace: ${INFRA} }]
    - matches: [{ path: { type: PathPrefix, value: /mirror-and-modify-headers } }]
      filters:
        - type: RequestHeaderModifier
          requestHeaderModifier:
            set: [{ name: X-Header-Set, value: set-overwrites-values }]
            add: [{ name: X-Header-Add, value: header-val-1 }, { name: X-Header-Add-Append, value: header-val-2 }]
            remove: [X-Header-Remove]
        - { type: RequestMirror, requestMirror: { backendRef: { name: infra-backend-v2, namespace: ${INFRA}, port: 8080 } } }
      backendRefs: [{ name: infra-backend-v1, port: 8080, namespace: ${INFRA} }]`));
    const mirrorLog = echoes.get(`${INFRA}/infra-backend-v2`)!.log;
    // Upstream adds a fresh request id to each request and looks for it in the mirror's log.
    const first = await served("/mirror?reqid=warm", (a) => a.status === 200 && mirrorLog.includes("GET /mirror?reqid=warm example.com"));
    expect(first.backend).toBe(`${INFRA}/infra-backend-v1`);
    const a = await ask("/mirror?reqid=one");
    expect([a.status, a.backend, a.path]).toEqual([200, `${INFRA}/infra-backend-v1`, "/mirror?reqid=one"]);
    await eventually(() => mirrorLog.includes("GET /mirror?reqid=one example.com"), 10_000);
    const b = await ask("/mirror-and-modify-headers?reqid=two", { headers: { "X-Header-Remove": "remove-val", "X-Header-Add-Append": "append-val-1" } });
    expect([b.status, b.backend, b.path]).toEqual([200, `${INFRA}/infra-backend-v1`, "/mirror-and-modify-headers?reqid=two"]);
    expect(b.headers).toMatchObject({ "x-header-add": "header-val-1", "x-header-add-append": "append-val-1,header-val-2", "x-header-set": "set-overwrites-values" });
    expect(b.headers["x-header-remove"]).toBeUndefined();
    await eventually(() => mirrorLog.includes("GET /mirror-and-modify-headers?reqid=two example.com"), 10_000);
    // The mirror's answer is discarded: the client got the backend's, and v1 saw each request once.
    const mainLog = echoes.get(`${INFRA}/infra-backend-v1`)!.log;
    expect(mainLog.filter((l) => l.includes("reqid=one")).length).toBe(1);
  });

  test("HTTPRouteRequestMultipleMirrors", async () => {
    const mirror = (svc: string) => `{ type: RequestMirror, requestMirror: { backendRef: { name: ${svc}, namespace: ${INFRA}, port: 8080 } } }`;
    apply(route("request-multiple-mirrors", `  parentRefs: [{ name: same-namespace }]
  rules:
    - matches: [{ path: { type: PathPrefix, value: /multi-mirror } }]
      filters: [${mirror("infra-backend-v2")}, ${mirror("infra-backend-v3")}]
      backendRefs: [{ name: infra-backend-v1, port: 8080, namespace: ${INFRA} }]`));
    const v2 = echoes.get(`${INFRA}/infra-backend-v2`)!.log;
    const v3 = echoes.get(`${INFRA}/infra-backend-v3`)!.log;
    const a = await served("/multi-mirror?reqid=multi", (a) => a.status === 200);
    expect(a.backend).toBe(`${INFRA}/infra-backend-v1`);
    await eventually(() => v2.includes("GET /multi-mirror?reqid=multi example.com") && v3.includes("GET /multi-mirror?reqid=multi example.com"), 10_000);
  });

  test("HTTPRouteMethodMatching", async () => {
    apply(route("method-matching", `  parentRefs: [{ name: same-namespace }]
  rules:
    - matches: [{ method: POST }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
    - matches: [{ method: GET }]
      backendRefs: [{ name: infra-backend-v2, port: 8080 }]
    - matches: [{ path: { type: PathPrefix, value: /path1 }, method: GET }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
    - matches: [{ headers: [{ name: version, value: one }], method: PUT }]
      backendRefs: [{ name: infra-backend-v2, port: 8080 }]
    - matches: [{ path: { type: PathPrefix, value: /path2 }, headers: [{ name: version, value: two }], method: POST }]
      backendRefs: [{ name: infra-backend-v3, port: 8080 }]
    - matches:
        - { path: { type: PathPrefix, value: /path3 }, method: PATCH }
        - { path: { type: PathPrefix, value: /path4 }, headers: [{ name: version, value: three }], method: DELETE }
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
    - matches: [{ path: { type: PathPrefix, value: /path5 } }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
    - matches: [{ method: PATCH }]
      backendRefs: [{ name: infra-backend-v2, port: 8080 }]
    - matches: [{ headers: [{ name: version, value: four }] }]
      backendRefs: [{ name: infra-backend-v3, port: 8080 }]`));
    await served("/", (a) => a.backend === `${INFRA}/infra-backend-v1`, { method: "POST" });
    const cases: [string, string, Record<string, string>, string][] = [
      ["POST", "/", {}, "v1"],
      ["GET", "/", {}, "v2"],
      ["HEAD", "/", {}, "404"],
      ["GET", "/path1", {}, "v1"],
      ["PUT", "/", { version: "one" }, "v2"],
      ["POST", "/path2", { version: "two" }, "v3"],
      ["PATCH", "/path3", {}, "v1"],
      ["DELETE", "/path4", { version: "three" }, "v1"],
      ["PUT", "/", {}, "404"],
      ["DELETE", "/path4", {}, "404"],
      ["PATCH", "/path5", {}, "v1"],
      ["PATCH", "/", { version: "four" }, "v2"],
    ];
    const got: string[] = [];
    for (const [method, path, headers] of cases) {
      const a = await ask(path, { method, headers });
      got.push(`${method} ${path} ${JSON.stringify(headers)} ${a.status === 404 ? "404" : a.backend}`);
    }
    expect(got).toEqual(cases.map(([m, p, h, v]) => `${m} ${p} ${JSON.stringify(h)} ${v === "404" ? "404" : `${INFRA}/infra-backend-${v}`}`));
  });

  test("HTTPRouteQueryParamMatching", async () => {
    apply(route("query-param-matching", `  parentRefs: [{ name: same-namespace }]
  rules:
    - matches: [{ queryParams: [{ name: animal, value: whale }] }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
    - matches: [{ queryParams: [{ name: animal, value: dolphin }] }]
      backendRefs: [{ name: infra-backend-v2, port: 8080 }]
    - matches:
        - { queryParams: [{ name: animal, value: dolphin }, { name: color, value: blue }] }
        - { queryParams: [{ name: ANIMAL, value: Whale }] }
      backendRefs: [{ name: infra-backend-v3, port: 8080 }]
    - matches: [{ path: { type: PathPrefix, value: /path1 }, queryParams: [{ name: animal, value: whale }] }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
    - matches: [{ headers: [{ name: version, value: one }], queryParams: [{ name: animal, value: whale }] }]
      backendRefs: [{ name: infra-backend-v2, port: 8080 }]
    - matches: [{ path: { type: PathPrefix, value: /path2 }, headers: [{ name: version, value: two }], queryParams: [{ name: animal, value: whale }] }]
      backendRefs: [{ name: infra-backend-v3, port: 8080 }]
    - matches:
        - { path: { type: PathPrefix, value: /path3 }, queryParams: [{ name: animal, value: shark }] }
        - { path: { type: PathPrefix, value: /path4 }, headers: [{ name: version, value: three }], queryParams: [{ name: animal, value: kraken }] }
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
    - matches: [{ path: { type: PathPrefix, value: /path5 } }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
    - matches: [{ queryParams: [{ name: animal, value: hydra }] }]
      backendRefs: [{ name: infra-backend-v2, port: 8080 }]
    - matches: [{ headers: [{ name: version, value: four }] }]
      backendRefs: [{ name: infra-backend-v3, port: 8080 }]`));
    await served("/?animal=whale", (a) => a.backend === `${INFRA}/infra-backend-v1`);
    const cases: [string, Record<string, string>, string][] = [
      ["/?animal=whale", {}, "v1"],
      ["/?animal=dolphin", {}, "v2"],
      ["/?animal=dolphin&color=blue", {}, "v3"],
      ["/?ANIMAL=Whale", {}, "v3"],
      ["/?animal=whale&otherparam=irrelevant", {}, "v1"],
      ["/?animal=dolphin&color=yellow", {}, "v2"],
      ["/?color=blue", {}, "404"],
      ["/?animal=dog", {}, "404"],
      ["/?animal=whaledolphin", {}, "404"],
      ["/", {}, "404"],
      ["/path1?animal=whale", {}, "v1"],
      ["/?animal=whale", { version: "one" }, "v2"],
      ["/path2?animal=whale", { version: "two" }, "v3"],
      ["/path3?animal=shark", {}, "v1"],
      ["/path4?animal=kraken", { version: "three" }, "v1"],
      ["/?animal=shark", {}, "404"],
      ["/path4?animal=kraken", {}, "404"],
      ["/path5?animal=hydra", {}, "v1"],
      ["/?animal=hydra", { version: "four" }, "v3"],
    ];
    const got: string[] = [];
    for (const [path, headers] of cases) {
      const a = await ask(path, { headers });
      got.push(`${path} ${JSON.stringify(headers)} ${a.status === 404 ? "404" : a.backend}`);
    }
    expect(got).toEqual(cases.map(([p, h, v]) => `${p} ${JSON.stringify(h)} ${v === "404" ? "404" : `${INFRA}/infra-backend-${v}`}`));
  });
  test("HTTPRouteResponseHeaderModifier", async () => {
    const rule = (path: string, filter: string, more = "") => `    - matches: [{ path: { type: PathPrefix, value: ${path} } }]
      filters:
        - { type: ResponseHeaderModifier, responseHeaderModifier: ${filter} }${more}
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]`;
    apply(route("response-header-modifier", `  parentRefs: [{ name: same-namespace }]
  rules:
${rule("/set", "{ set: [{ name: X-Header-Set, value: set-overwrites-values }] }")}
${rule("/add", "{ add: [{ name: X-Header-Add, value: add-appends-values }] }")}
${rule("/remove", "{ remove: [X-Header-Remove] }")}
${rule("/multiple", "{ set: [{ name: X-Header-Set-1, value: header-set-1 }, { name: X-Header-Set-2, value: header-set-2 }], add: [{ name: X-Header-Add-1, value: header-add-1 }, { name: X-Header-Add-2, value: header-add-2 }, { name: X-Header-Add-3, value: header-add-3 }], remove: [X-Header-Remove-1, X-Header-Remove-2] }")}
${rule("/case-insensitivity", "{ set: [{ name: X-Header-Set, value: header-set }], add: [{ name: X-Header-Add, value: header-add }, { name: x-lowercase-add, value: lowercase-add }, { name: x-Mixedcase-ADD-1, value: mixedcase-add-1 }, { name: X-mixeDcase-add-2, value: mixedcase-add-2 }, { name: X-UPPERCASE-ADD, value: uppercase-add }], remove: [X-Header-Remove] }")}
${rule("/response-and-request-header-modifiers", "{ set: [{ name: X-Header-Set-1, value: header-set-1 }, { name: X-Header-Set-2, value: header-set-2 }], add: [{ name: X-Header-Add-1, value: header-add-1 }, { name: X-Header-Add-2, value: header-add-2 }], remove: [X-Header-Remove-1, X-Header-Remove-2] }", `
        - type: RequestHeaderModifier
          requestHeaderModifier:
            set: [{ name: X-Header-Set, value: set-overwrites-values }]
            add: [{ name: X-Header-Add, value: header-val-1 }, { name: X-Header-Add-Append, value: header-val-2 }]
            remove: [X-Header-Remove]`)}`));
    await accepted("response-header-modifier");
    // Upstream's cases: the request (path, fields, the fields the backend is asked to answer
    // with), the fields the answer must have and those it must not.
    const cases: [string, Record<string, string>, Record<string, string>, Record<string, string>, string[]][] = [
      ["/set", {}, { "Some-Other-Header": "val" }, { "Some-Other-Header": "val", "X-Header-Set": "set-overwrites-values" }, []],
      ["/set", {}, { "Some-Other-Header": "val", "X-Header-Set": "some-other-value" }, { "Some-Other-Header": "val", "X-Header-Set": "set-overwrites-values" }, []],
      ["/add", {}, { "Some-Other-Header": "val" }, { "Some-Other-Header": "val", "X-Header-Add": "add-appends-values" }, []],
      ["/add", {}, { "Some-Other-Header": "val", "X-Header-Add": "some-other-value" }, { "Some-Other-Header": "val", "X-Header-Add": "some-other-value,add-appends-values" }, []],
      ["/remove", {}, { "X-Header-Remove": "val" }, {}, ["X-Header-Remove"]],
      [
        "/multiple", {},
        { "X-Header-Set-2": "set-val-2", "X-Header-Add-2": "add-val-2", "X-Header-Remove-2": "remove-val-2", "Another-Header": "another-header-val", "X-Header-Remove-1": "val" },
        { "X-Header-Set-1": "header-set-1", "X-Header-Set-2": "header-set-2", "X-Header-Add-1": "header-add-1", "X-Header-Add-2": "add-val-2,header-add-2", "X-Header-Add-3": "header-add-3", "Another-Header": "another-header-val" },
        ["X-Header-Remove-1", "X-Header-Remove-2"],
      ],
      [
        "/case-insensitivity", {},
        { "x-header-set": "original-val-set", "x-header-add": "original-val-add", "x-header-remove": "original-val-remove", "Another-Header": "another-header-val" },
        { "X-Header-Set": "header-set", "X-Header-Add": "original-val-add,header-add", "X-Lowercase-Add": "lowercase-add", "X-Mixedcase-Add-1": "mixedcase-add-1", "X-Mixedcase-Add-2": "mixedcase-add-2", "X-Uppercase-Add": "uppercase-add", "Another-Header": "another-header-val" },
        ["x-header-remove", "X-Header-Remove"],
      ],
      [
        "/response-and-request-header-modifiers",
        { "X-Header-Remove": "remove-val", "X-Header-Add-Append": "append-val-1", "X-Header-Echo": "echo" },
        { "X-Header-Set-2": "set-val-2", "X-Header-Add-2": "add-val-2", "X-Header-Remove-2": "remove-val-2", "Another-Header": "another-header-val", "X-Header-Remove-1": "remove-val-1", "X-Header-Echo": "echo" },
        { "X-Header-Set-1": "header-set-1", "X-Header-Set-2": "header-set-2", "X-Header-Add-1": "header-add-1", "X-Header-Add-2": "add-val-2,header-add-2", "Another-Header": "another-header-val", "X-Header-Echo": "echo" },
        ["X-Header-Remove-1", "X-Header-Remove-2"],
      ],
    ];
    const got: string[] = [];
    const want: string[] = [];
    for (const [path, headers, backendSets, fields, absent] of cases) {
      const a = await ask(path, { headers: { ...headers, ...echoSet(backendSets) } });
      const seen = (name: string) => a.response[name.toLowerCase()] ?? "(absent)";
      got.push(`${path} ${a.status} ${a.backend} ${[...Object.keys(fields), ...absent].map((n) => `${n}=${seen(n)}`).join(" ")}`);
      want.push(`${path} 200 ${INFRA}/infra-backend-v1 ${[...Object.entries(fields).map(([n, v]) => `${n}=${v}`), ...absent.map((n) => `${n}=(absent)`)].join(" ")}`);
      if (path === "/response-and-request-header-modifiers") {
        // The ExpectedRequest of the last case: the request filter applied to what the backend got.
        expect(a.headers).toMatchObject({ "x-header-add": "header-val-1", "x-header-set": "set-overwrites-values", "x-header-add-append": "append-val-1,header-val-2", "x-header-echo": "echo" });
        expect(a.headers["x-header-remove"]).toBeUndefined();
      }
    }
    expect(got).toEqual(want);
  });

  test("HTTPRouteResponseHeaderModifier on a backendRef and on Portico's own answers (not in the upstream test)", async () => {
    apply(route("backend-response-header-modifier", `  parentRefs: [{ name: same-namespace }]
  rules:
    - matches: [{ path: { type: PathPrefix, value: /backend-response } }]
      filters: [{ type: ResponseHeaderModifier, responseHeaderModifier: { add: [{ name: X-Rule, value: rule }, { name: Set-Cookie, value: "b=2" }] } }]
      backendRefs:
        - name: infra-backend-v1
          port: 8080
          filters:
            - { type: ResponseHeaderModifier, responseHeaderModifier: { set: [{ name: X-Backend, value: v1 }], add: [{ name: X-Rule, value: backend }], remove: [Server-Timing] } }
    - matches: [{ path: { type: PathPrefix, value: /own-redirect } }]
      filters:
        - { type: ResponseHeaderModifier, responseHeaderModifier: { set: [{ name: X-Own, value: "1" }], remove: [X-Request-Id] } }
        - { type: RequestRedirect, requestRedirect: { hostname: example.org } }`));
    await accepted("backend-response-header-modifier");
    const a = await ask("/backend-response", { headers: echoSet({ "X-Rule": "pod", "Server-Timing": "db;dur=53", "Set-Cookie": "a=1" }) });
    // The rule's filter first, then the backendRef's (HTTPBackendRef.filters run after the rule's).
    expect([a.status, a.response["x-backend"], a.response["x-rule"], a.response["server-timing"] ?? "(absent)"]).toEqual([200, "v1", "pod,rule,backend", "(absent)"]);
    // A Set-Cookie added is a line of its own, never joined to the backend's (RFC 6265 §3).
    expect(a.cookies).toEqual(["a=1", "b=2"]);
    // Portico's own answer for the rule (the redirect) gets the same changes.
    const own = await ask("/own-redirect");
    expect([own.status, own.location, own.response["x-own"], own.response["x-request-id"] ?? "(absent)"]).toEqual([302, "http://example.org/own-redirect", "1", "(absent)"]);
  });

  test("HTTPRouteRequestPercentageMirror", async () => {
    const mirror = (extra: string) => `{ type: RequestMirror, requestMirror: { backendRef: { name: infra-backend-v2, namespace: ${INFRA}, port: 8080 }, ${extra} } }`;
    apply(route("request-percentage-mirror", `  parentRefs: [{ name: same-namespace }]
  rules:
    - matches: [{ path: { type: PathPrefix, value: /percent-mirror } }]
      filters: [${mirror("percent: 20")}]
      backendRefs: [{ name: infra-backend-v1, port: 8080, namespace: ${INFRA} }]
    - matches: [{ path: { type: PathPrefix, value: /percent-mirror-fraction } }]
      filters: [${mirror("fraction: { numerator: 25, denominator: 50 }")}]
      backendRefs: [{ name: infra-backend-v1, port: 8080, namespace: ${INFRA} }]
    - matches: [{ path: { type: PathPrefix, value: /percent-mirror-and-modify-headers } }]
      filters:
        - type: RequestHeaderModifier
          requestHeaderModifier:
            set: [{ name: X-Header-Set, value: set-overwrites-values }]
            add: [{ name: X-Header-Add, value: header-val-1 }, { name: X-Header-Add-Append, value: header-val-2 }]
            remove: [X-Header-Remove]
        - ${mirror("percent: 35")}
      backendRefs: [{ name: infra-backend-v1, port: 8080, namespace: ${INFRA} }]`));
    await accepted("request-percentage-mirror");
    const v2 = echoes.get(`${INFRA}/infra-backend-v2`)!.log;
    // Upstream: 500 requests (10 at a time) tagged with a fresh request id; the mirrored count
    // must lie within 3 binomial standard deviations of 500·p; up to 5 batches, one must pass.
    const TOTAL = 500;
    const cases: [string, Record<string, string>, number][] = [
      ["/percent-mirror", {}, 20],
      ["/percent-mirror-fraction", {}, 50],
      ["/percent-mirror-and-modify-headers", { "X-Header-Remove": "remove-val", "X-Header-Add-Append": "append-val-1" }, 35],
    ];
    const results: string[] = [];
    for (const [path, headers, percent] of cases) {
      const first = await ask(path, { headers });
      expect([first.status, first.backend, first.path]).toEqual([200, `${INFRA}/infra-backend-v1`, path]);
      if (path === "/percent-mirror-and-modify-headers") {
        expect(first.headers).toMatchObject({ "x-header-add": "header-val-1", "x-header-add-append": "append-val-1,header-val-2", "x-header-set": "set-overwrites-values" });
        expect(first.headers["x-header-remove"]).toBeUndefined();
      }
      const p = percent / 100;
      const margin = 3 * Math.sqrt(TOTAL * p * (1 - p));
      const [min, max] = [TOTAL * p - margin, TOTAL * p + margin];
      let verdict = "";
      for (let batch = 0; batch < 5; batch++) {
        const id = crypto.randomUUID();
        const line = `GET ${path}?reqid=${id} example.com`;
        let next = 0;
        const wrong: string[] = [];
        await Promise.all(
          Array.from({ length: 10 }, async () => {
            while (next < TOTAL) {
              next++;
              const a = await ask(`${path}?reqid=${id}`, { headers });
              if (a.status !== 200 || a.backend !== `${INFRA}/infra-backend-v1`) wrong.push(`${a.status} ${a.backend}`);
            }
          }),
        );
        expect(wrong).toEqual([]);
        // Every answer is in; the copies are fire and forget, so wait for at least the lower bound.
        const count = () => v2.filter((l) => l === line).length;
        await eventually(() => count() >= min, 10_000).catch(() => {});
        verdict = `${path}: ${count()} mirrored of ${TOTAL}, expected ${min.toFixed(1)}..${max.toFixed(1)}`;
        if (count() >= min && count() <= max) break;
      }
      results.push(verdict);
    }
    for (const r of results) {
      const [, n, lo, hi] = /: (\d+) mirrored of \d+, expected ([\d.]+)\.\.([\d.]+)$/.exec(r)!;
      expect(`${r} ${Number(n) >= Number(lo) && Number(n) <= Number(hi) ? "within" : "outside"}`).toBe(`${r} within`);
    }
  });

  test("HTTPRouteCORS", async () => {
    const cors = (name: string, rules: [string, string][]) =>
      route(name, `  parentRefs: [{ name: same-namespace }]
  rules:
${rules.map(([path, filter]) => `    - matches: [{ path: { type: PathPrefix, value: ${path} } }]
      filters: [{ type: CORS, cors: ${filter} }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]`).join("\n")}`);
    apply(
      [
        cors("cors-multiple-origins-methods-headers", [["/cors-1", `{ allowOrigins: ["https://www.foo.com", "https://*.bar.com"], allowMethods: [GET, OPTIONS], allowHeaders: [x-header-1, x-header-2], exposeHeaders: [x-header-3, x-header-4], allowCredentials: true, maxAge: 3600 }`]]),
        cors("cors-wildcard-methods", [["/cors-2", `{ allowOrigins: ["https://www.foo.com"], allowMethods: ["*"] }`]]),
        cors("cors-wildcard-origin", [["/cors-wildcard-origin", `{ allowOrigins: ["*"], allowMethods: [PUT], allowCredentials: false }`]]),
        cors("cors-wildcard-methods-headers", [
          ["/cors-wildcard-methods-headers", `{ allowOrigins: ["*"], allowMethods: ["*"], allowHeaders: ["*"], allowCredentials: true }`],
          ["/cors-wildcard-methods-headers-unauth", `{ allowOrigins: ["*"], allowMethods: ["*"], allowHeaders: ["*"], allowCredentials: false }`],
        ]),
      ].join("\n---\n"),
    );
    await accepted("cors-multiple-origins-methods-headers", "cors-wildcard-methods", "cors-wildcard-origin", "cors-wildcard-methods-headers");
    const preflight = (origin: string, method: string, headers?: string) => ({
      method: "OPTIONS",
      headers: { Origin: origin, "access-control-request-method": method, ...(headers === undefined ? {} : { "access-control-request-headers": headers }) },
    });
    type Case = {
      name: string;
      path: string;
      init: { method?: string; headers?: Record<string, string> };
      /** Acceptable statuses. */
      statuses: number[];
      /** Each field's acceptable values (compared without spaces when `ws` is set), as ValidHeaderValues and Headers. */
      valid?: Record<string, string[]>;
      absent?: string[];
      ws?: boolean;
      /** A simple request reaches the backend (upstream: Namespace set, the echo answers). */
      proxied?: boolean;
    };
    const full = {
      "access-control-allow-methods": ["GET, OPTIONS", "OPTIONS, GET"],
      "access-control-allow-headers": ["x-header-1, x-header-2", "x-header-2, x-header-1"],
      "access-control-expose-headers": ["x-header-3, x-header-4", "x-header-4, x-header-3"],
      "access-control-max-age": ["3600"],
      "access-control-allow-credentials": ["true"],
    };
    const cases: Case[] = [
      { name: "CORS preflight request from an exact matching origin should be allowed", path: "/cors-1", init: preflight("https://www.foo.com", "GET", "x-header-1, x-header-2"), statuses: [200, 204], valid: { "access-control-allow-origin": ["https://www.foo.com"], ...full }, ws: true },
      { name: "CORS preflight request from a wildcard matching origin should be allowed", path: "/cors-1", init: preflight("https://www.bar.com", "GET", "x-header-1, x-header-2"), statuses: [200, 204], valid: { "access-control-allow-origin": ["https://www.bar.com"], ...full }, ws: true },
      { name: "CORS preflight request from a wildcard matching any number of periods left to '*' should be allowed", path: "/cors-1", init: preflight("https://xpto.www.bar.com", "GET", "x-header-1, x-header-2"), statuses: [200, 204], valid: { "access-control-allow-origin": ["https://xpto.www.bar.com"], ...full }, ws: true },
      { name: "CORS preflight request from a non-matching origin should not be allowed", path: "/cors-1", init: preflight("https://foobar.com", "GET"), statuses: [200, 204, 403], absent: ["access-control-allow-origin"] },
      { name: "Simple request from an exact matching origin should be allowed", path: "/cors-1", init: { headers: { Origin: "https://www.foo.com", "access-control-request-method": "GET", "access-control-request-headers": "x-header-1, x-header-2" } }, statuses: [200], valid: { "access-control-allow-origin": ["https://www.foo.com"] }, proxied: true },
      { name: "Simple request from a wildcard matching origin should be allowed", path: "/cors-1", init: { headers: { Origin: "https://www.bar.com", "access-control-request-method": "GET", "access-control-request-headers": "x-header-1, x-header-2" } }, statuses: [200], valid: { "access-control-allow-origin": ["https://www.bar.com"] }, proxied: true },
      { name: "Simple request from a non-matching origin should not be allowed", path: "/cors-1", init: { headers: { Origin: "https://foobar.com", "access-control-request-method": "GET" } }, statuses: [200], absent: ["access-control-allow-origin"], proxied: true },
      { name: "CORS preflight request with POST method should be allowed by allowMethods with wildcard", path: "/cors-2", init: preflight("https://www.foo.com", "POST"), statuses: [200, 204], valid: { "access-control-allow-methods": ["POST", "*"], "access-control-allow-origin": ["https://www.foo.com"] }, absent: ["access-control-allow-credentials"] },
      { name: "CORS preflight request should not receive access-control-allow-credentials header without access-control-allow-credentials set to true", path: "/cors-2", init: preflight("https://www.foo.com", "POST"), statuses: [200, 204], absent: ["Access-Control-Allow-Credentials"] },
      { name: "CORS preflight request from a wildcard origin should return header with '*' or with the requested Origin", path: "/cors-wildcard-origin", init: preflight("https://foobar.com", "PUT"), statuses: [200, 204], valid: { "access-control-allow-origin": ["https://foobar.com", "*"], "access-control-allow-methods": ["PUT"] }, absent: ["Access-Control-Allow-Credentials"] },
      { name: "CORS preflight request from a wildcard origin containing a port should return header with '*' or with the requested Origin", path: "/cors-wildcard-origin", init: preflight("https://foobar.com:12345", "PUT"), statuses: [200, 204], valid: { "access-control-allow-origin": ["https://foobar.com:12345", "*"], "access-control-allow-methods": ["PUT"] }, absent: ["Access-Control-Allow-Credentials"] },
      { name: "Request from a wildcard origin containing a port should return header with '*' or with the requested Origin", path: "/cors-wildcard-origin", init: { method: "PUT", headers: { Origin: "https://foobar.com:12345" } }, statuses: [200], valid: { "access-control-allow-origin": ["https://foobar.com:12345", "*"] }, proxied: true },
      { name: "Simple request from a wildcard origin should return header with '*' or with the requested Origin", path: "/cors-wildcard-origin", init: { method: "PUT", headers: { Origin: "https://foobar.com" } }, statuses: [200], valid: { "access-control-allow-origin": ["https://foobar.com", "*"] }, absent: ["Access-Control-Allow-Credentials"], proxied: true },
      { name: "CORS preflight request requesting specific method and headers should be allowed and always echo the origin with allowCredentials set to true", path: "/cors-wildcard-methods-headers", init: preflight("https://other.foo.com", "PUT", "x-header-1, x-header-2"), statuses: [200, 204], valid: { "access-control-allow-origin": ["https://other.foo.com"], "access-control-allow-methods": ["PUT"], "access-control-allow-headers": ["x-header-1, x-header-2", "x-header-2, x-header-1"], "access-control-allow-credentials": ["true"] }, ws: true },
      { name: "CORS preflight request requesting specific method and headers should hide access-control-allow-credentials headers with allowCredentials set to false", path: "/cors-wildcard-methods-headers-unauth", init: preflight("https://other.foo.com", "PUT", "x-header-1, x-header-2"), statuses: [200, 204], valid: { "access-control-allow-origin": ["https://other.foo.com", "*"], "access-control-allow-methods": ["PUT", "*"], "access-control-allow-headers": ["x-header-1, x-header-2", "x-header-2, x-header-1", "*"] }, absent: ["access-control-allow-credentials"], ws: true },
      { name: "CORS request should receive access-control-allow-credentials header with allowCredentials set to true", path: "/cors-wildcard-methods-headers", init: { headers: { Origin: "https://other.foo.com" } }, statuses: [200], valid: { "access-control-allow-origin": ["https://other.foo.com"], "access-control-allow-credentials": ["true"] }, proxied: true },
      { name: "CORS request should not receive access-control-allow-credentials header without allowCredentials set to true", path: "/cors-wildcard-methods-headers-unauth", init: { headers: { Origin: "https://other.foo.com" } }, statuses: [200], valid: { "access-control-allow-origin": ["https://other.foo.com", "*"] }, absent: ["access-control-allow-credentials"], proxied: true },
    ];
    const failures: string[] = [];
    for (const c of cases) {
      const a = await ask(c.path, c.init);
      const why: string[] = [];
      if (!c.statuses.includes(a.status)) why.push(`status ${a.status}`);
      if (c.proxied && a.backend !== `${INFRA}/infra-backend-v1`) why.push(`backend ${a.backend}`);
      const norm = (x: string) => (c.ws ? x.replaceAll(" ", "") : x);
      for (const [field, values] of Object.entries(c.valid ?? {})) {
        const got = a.response[field.toLowerCase()];
        if (got === undefined || !values.map(norm).includes(norm(got))) why.push(`${field}: ${got ?? "(absent)"}`);
      }
      for (const field of c.absent ?? []) if (a.response[field.toLowerCase()] !== undefined) why.push(`${field} present: ${a.response[field.toLowerCase()]}`);
      if (why.length > 0) failures.push(`${c.name}: ${why.join("; ")}`);
    }
    expect(failures).toEqual([]);
    // Exact answers beyond upstream's: the preflight is Portico's own 204, never the backend's.
    const pre = await ask("/cors-1", preflight("https://www.foo.com", "GET", "x-header-1, x-header-2"));
    expect([pre.status, pre.backend, pre.response.vary]).toEqual([204, null, "Origin"]);
    const denied = await ask("/cors-1", preflight("https://foobar.com", "GET"));
    expect([denied.status, denied.backend, denied.response["access-control-allow-methods"] ?? "(absent)"]).toEqual([204, null, "(absent)"]);
    // An Origin with the scheme's port is the same origin; another port is not.
    expect((await ask("/cors-1", { headers: { Origin: "https://www.foo.com:443" } })).response["access-control-allow-origin"]).toBe("https://www.foo.com:443");
    expect((await ask("/cors-1", { headers: { Origin: "https://www.foo.com:8443" } })).response["access-control-allow-origin"]).toBeUndefined();
    // `*.bar.com` needs a label in place of the `*`; no Origin, no CORS fields.
    expect((await ask("/cors-1", { headers: { Origin: "https://bar.com" } })).response["access-control-allow-origin"]).toBeUndefined();
    expect((await ask("/cors-1")).response["access-control-allow-origin"]).toBeUndefined();
  });

  test("HTTPRouteInvalidParentRefSectionNameNotMatchingPort", async () => {
    apply(`
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: gateway-with-one-not-matching-port-and-section-name-route, namespace: ${INFRA} }
spec:
  gatewayClassName: portico
  listeners: [{ name: http, port: 80, protocol: HTTP, allowedRoutes: { kinds: [{ kind: HTTPRoute }], namespaces: { from: All } } }]
---
${route("httproute-listener-section-name-not-matching-port", `  parentRefs: [{ name: gateway-with-one-not-matching-port-and-section-name-route, namespace: ${INFRA}, sectionName: http, port: 81 }]
  rules: [{ backendRefs: [{ name: infra-backend-v1, kind: Service, port: 8080 }] }]`)}`);
    type Cond = { type: string; status: string; reason: string };
    const parents = () => ((api.get("HTTPRoute", INFRA, "httproute-listener-section-name-not-matching-port")?.status as { parents?: { conditions: Cond[] }[] } | undefined)?.parents ?? []);
    await eventually(() => parents().length === 1, 10_000, "route status");
    // HTTPRouteMustHaveCondition: Accepted=False/NoMatchingParent; HTTPRouteMustHaveNoAcceptedParents.
    expect(parents().map((p) => p.conditions.filter((c) => c.type === "Accepted").map((c) => `${c.status}/${c.reason}`))).toEqual([["False/NoMatchingParent"]]);
    // GatewayMustHaveZeroRoutes.
    await eventually(() => ((api.get("Gateway", INFRA, "gateway-with-one-not-matching-port-and-section-name-route")?.status as { listeners?: unknown[] } | undefined)?.listeners?.length ?? 0) === 1, 10_000, "gateway status");
    const listeners = (api.get("Gateway", INFRA, "gateway-with-one-not-matching-port-and-section-name-route")!.status as { listeners: { attachedRoutes: number }[] }).listeners;
    expect(listeners.map((l) => l.attachedRoutes)).toEqual([0]);
  });
  test("HTTPRouteNamedRule", async () => {
    // conformance/tests/httproute-named-rule.yaml: a rule's `name` names it and changes nothing it serves.
    apply(route("http-named-rules", `  parentRefs: [{ name: same-namespace }]
  rules:
  - name: named-rule
    matches: [{ path: { type: PathPrefix, value: /named } }]
    backendRefs: [{ name: infra-backend-v1, port: 8080 }]
  - matches: [{ path: { type: PathPrefix, value: /unnamed } }]
    backendRefs: [{ name: infra-backend-v2, port: 8080 }]`));
    await accepted("http-named-rules");
    await served("/named", (a) => a.status === 200);
    const got: string[] = [];
    for (const path of ["/named", "/unnamed"]) {
      const a = await ask(path);
      got.push(`${path} ${a.status} ${a.backend}`);
    }
    expect(got).toEqual([`/named 200 ${INFRA}/infra-backend-v1`, `/unnamed 200 ${INFRA}/infra-backend-v2`]);
  });

  test("GatewayHTTPListenerIsolation", async () => {
    // Both upstream manifests at once, as the upstream test applies them: two Gateways of four
    // HTTP listeners on port 80 each (hostless, *.example.com, *.foo.example.com,
    // abc.foo.example.com), a route attached by sectionName to each listener, PathPrefix
    // /<listener name> to infra-backend-v1; the second Gateway's routes also name the hostnames
    // bar.com, *.example.com and *.foo.example.com, which intersect their listener's.
    const listeners = ["empty-hostname", "wildcard-example-com", "wildcard-foo-example-com", "abc-foo-example-com"];
    const hostnames: Record<string, string> = { "empty-hostname": "", "wildcard-example-com": "*.example.com", "wildcard-foo-example-com": "*.foo.example.com", "abc-foo-example-com": "abc.foo.example.com" };
    for (const [gw, suffix, routeHosts] of [
      ["http-listener-isolation", "", ""],
      ["http-listener-isolation-with-hostname-intersection", "-with-hostname-intersection", `\n  hostnames: ["bar.com", "*.example.com", "*.foo.example.com"]`],
    ] as const) {
      apply(`
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: ${gw}, namespace: ${INFRA} }
spec:
  gatewayClassName: portico
  listeners:
${listeners.map((l) => `    - { name: ${l}, port: 80, protocol: HTTP${hostnames[l] === "" ? "" : `, hostname: "${hostnames[l]}"`}, allowedRoutes: { namespaces: { from: All } } }`).join("\n")}`);
      for (const l of listeners) {
        apply(route(`attaches-to-${l}${suffix}`, `  parentRefs: [{ name: ${gw}, namespace: ${INFRA}, sectionName: ${l} }]${routeHosts}
  rules: [{ matches: [{ path: { type: PathPrefix, value: /${l} } }], backendRefs: [{ name: infra-backend-v1, port: 8080 }] }]`));
      }
    }
    await accepted(...listeners.map((l) => `attaches-to-${l}`), ...listeners.map((l) => `attaches-to-${l}-with-hostname-intersection`));
    // A request matches only the routes of the most specific listener its Host matches.
    const cases: [string, string, string][] = [
      ["bar.com", "/empty-hostname", "v1"],
      ["bar.com", "/wildcard-example-com", "404"],
      ["bar.com", "/wildcard-foo-example-com", "404"],
      ["bar.com", "/abc-foo-example-com", "404"],
      ["bar.example.com", "/empty-hostname", "404"],
      ["bar.example.com", "/wildcard-example-com", "v1"],
      ["bar.example.com", "/wildcard-foo-example-com", "404"],
      ["bar.example.com", "/abc-foo-example-com", "404"],
      ["bar.foo.example.com", "/empty-hostname", "404"],
      ["bar.foo.example.com", "/wildcard-example-com", "404"],
      ["bar.foo.example.com", "/wildcard-foo-example-com", "v1"],
      ["bar.foo.example.com", "/abc-foo-example-com", "404"],
      ["abc.foo.example.com", "/empty-hostname", "404"],
      ["abc.foo.example.com", "/wildcard-example-com", "404"],
      ["abc.foo.example.com", "/wildcard-foo-example-com", "404"],
      ["abc.foo.example.com", "/abc-foo-example-com", "v1"],
    ];
    // On the shared ports both Gateways are asked at once; with --gateway-ports each at its own
    // port, as upstream asks each Gateway's address.
    for (const gateway of ownPorts ? ["http-listener-isolation", "http-listener-isolation-with-hostname-intersection"] : [undefined]) {
      await served("/abc-foo-example-com", (a) => a.status === 200, { host: "abc.foo.example.com", gateway });
      const got: string[] = [];
      for (const [host, path] of cases) {
        const a = await ask(path, { host, gateway });
        got.push(`${host}${path} ${a.status === 404 ? "404" : `${a.status} ${a.backend}`}`);
      }
      expect(got).toEqual(cases.map(([h, p, v]) => `${h}${p} ${v === "404" ? "404" : `200 ${INFRA}/infra-backend-${v}`}`));
    }
  });

  test("HTTPRouteBackendProtocolWebSocket", async () => {
    // infra-backend-v1's third-port (8082) has appProtocol kubernetes.io/ws.
    apply(route("backend-protocol-ws", `  parentRefs: [{ name: same-namespace }]
  rules: [{ backendRefs: [{ name: infra-backend-v1, port: 8082 }] }]`));
    await accepted("backend-protocol-ws");
    await served("/", (a) => a.status === 200);
    // The upstream client (golang.org/x/net/websocket) dials ws://<gateway>/ws with an Origin,
    // sends a text and a binary message and expects each echoed unchanged.
    const ws = new WebSocket(`ws://127.0.0.1:${httpPort()}/ws`, { headers: { Origin: "ws://gateway/HTTPRouteBackendProtocolWebSocket" } } as unknown as string[]);
    ws.binaryType = "arraybuffer";
    const replies: (string | number[])[] = [];
    const closed = new Promise<void>((r) => ws.addEventListener("close", () => r()));
    try {
      await new Promise<void>((resolve, reject) => {
        ws.addEventListener("open", () => resolve());
        ws.addEventListener("error", () => reject(new Error("websocket failed")));
      });
      ws.addEventListener("message", (e) => replies.push(typeof e.data === "string" ? e.data : [...new Uint8Array(e.data as ArrayBuffer)]));
      ws.send("Websocket Support!");
      await eventually(() => replies.length === 1, 10_000, "text reply");
      ws.send(new Uint8Array([1, 2, 3, 4, 5, 6, 7]));
      await eventually(() => replies.length === 2, 10_000, "binary reply");
    } finally {
      ws.close();
      await closed;
    }
    expect(replies).toEqual(["Websocket Support!", [1, 2, 3, 4, 5, 6, 7]]);
    expect(echoes.get(`${INFRA}/infra-backend-v1`)!.log.filter((l) => l.startsWith("WS "))).toContain(`WS /ws 127.0.0.1:${httpPort()}`);
  });

  test("HTTPRouteBackendProtocolH2C", async () => {
    // infra-backend-v1's second-port (8081) has appProtocol kubernetes.io/h2c: its pod speaks
    // HTTP/2 with prior knowledge only. The upstream client speaks it too, to the Gateway.
    apply(route("backend-protocol-h2c", `  parentRefs: [{ name: same-namespace }]
  rules: [{ backendRefs: [{ name: infra-backend-v1, port: 8081 }] }]`));
    await accepted("backend-protocol-h2c");
    const session = http2.connect(`http://127.0.0.1:${httpPort()}`);
    session.on("error", () => {});
    const get = () =>
      new Promise<{ status: number; body: { backend?: string; protocol?: string; path?: string } }>((resolve, reject) => {
        const req = session.request({ ":method": "GET", ":path": "/", ":authority": "example.com" });
        let status = 0;
        let text = "";
        req.on("response", (h) => (status = Number(h[":status"])));
        req.setEncoding("utf8");
        req.on("data", (c: string) => (text += c));
        req.on("end", () => {
          let body = {};
          try {
            body = JSON.parse(text);
          } catch {}
          resolve({ status, body });
        });
        req.on("error", reject);
        req.end();
      });
    try {
      let last: Awaited<ReturnType<typeof get>> | null = null;
      await eventually(async () => (last = await get()).status === 200, 10_000, "h2c request served");
      const a = await get();
      expect([a.status, a.body.backend, a.body.protocol, a.body.path]).toEqual([200, `${INFRA}/infra-backend-v1`, "HTTP/2.0", "/"]);
      expect(last!.status).toBe(200);
    } finally {
      session.close();
    }
    // The backend saw the request over HTTP/2 with the client's authority.
    expect(echoes.get(`${INFRA}/infra-backend-v1#h2c`)!.log).toContain("GET / example.com");
  });

  test("an h2c backend (no upstream test): HTTP/1.1 clients and request bodies reach it over HTTP/2; failures are HTTP answers", async () => {
    apply(route("backend-protocol-h2c-more", `  parentRefs: [{ name: same-namespace }]
  rules:
    - matches: [{ path: { type: PathPrefix, value: /h2c } }]
      backendRefs: [{ name: infra-backend-v1, port: 8081 }]
    - matches: [{ path: { type: PathPrefix, value: /down } }]
      backendRefs: [{ name: h2c-down, port: 8081 }]`));
    apply(`
apiVersion: v1
kind: Service
metadata: { name: h2c-down, namespace: ${INFRA} }
spec: { ports: [{ name: h2c, port: 8081, appProtocol: kubernetes.io/h2c }] }
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: h2c-down-x, namespace: ${INFRA}, labels: { kubernetes.io/service-name: h2c-down } }
addressType: IPv4
ports: [{ name: h2c, port: 1 }]
endpoints: [{ addresses: ["127.0.0.1"], conditions: { ready: true } }]`);
    await accepted("backend-protocol-h2c-more");
    const get = await served("/h2c/x?y=1", (a) => a.status === 200);
    expect([get.backend, get.path, get.headers.host ?? "(no host field: :authority)"]).toEqual([`${INFRA}/infra-backend-v1`, "/h2c/x?y=1", "(no host field: :authority)"]);
    const res = await fetch(`http://127.0.0.1:${httpPort()}/h2c/post`, { method: "POST", headers: { host: "example.com", "content-type": "text/plain" }, body: "hello over h2c" });
    const body = (await res.json()) as { protocol: string; body: string; headers: Record<string, string> };
    expect([res.status, body.protocol, body.body, body.headers.te ?? "(no te)"]).toEqual([200, "HTTP/2.0", "hello over h2c", "(no te)"]);
    // Nothing listens on port 1: an HTTP 502 from Portico, not a gRPC status.
    const down = await fetch(`http://127.0.0.1:${httpPort()}/down`, { headers: { host: "example.com" } });
    await down.text();
    expect([down.status, down.headers.get("grpc-status")]).toEqual([502, null]);
  });

  test("HTTPRouteBackendURLRewrite", async () => {
    // conformance/tests/httproute-backend-url-rewrite.go/.yaml (newer than v1.6.1; feature
    // HTTPRouteBackendURLRewrite): URLRewrite on a backendRef.
    apply(route("backend-url-rewrite", `  parentRefs: [{ name: same-namespace }]
  rules:
    - matches: [{ path: { type: PathPrefix, value: /full } }]
      backendRefs:
        - name: infra-backend-v1
          port: 8080
          filters: [{ type: URLRewrite, urlRewrite: { path: { type: ReplaceFullPath, replaceFullPath: /rewritten-full } } }]
    - matches: [{ path: { type: PathPrefix, value: /prefix } }]
      backendRefs:
        - name: infra-backend-v1
          port: 8080
          filters: [{ type: URLRewrite, urlRewrite: { path: { type: ReplacePrefixMatch, replacePrefixMatch: /rewritten-prefix } } }]`));
    await accepted("backend-url-rewrite");
    await served("/full/original", (a) => a.status === 200);
    const got: string[] = [];
    for (const path of ["/full/original", "/prefix/original"]) {
      const a = await ask(path);
      got.push(`${path} ${a.status} ${a.backend} ${a.path}`);
    }
    expect(got).toEqual([`/full/original 200 ${INFRA}/infra-backend-v1 /rewritten-full`, `/prefix/original 200 ${INFRA}/infra-backend-v1 /rewritten-prefix/original`]);
    const features = ((api.get("GatewayClass", null, "portico")!.status as { supportedFeatures: { name: string }[] }).supportedFeatures).map((f) => f.name);
    expect(features).toContain("HTTPRouteBackendURLRewrite");
  });

  test("HTTPRouteBackendRequestRedirect", async () => {
    // conformance/tests/httproute-backend-request-redirect.go/.yaml (newer than v1.6.1; feature
    // HTTPRouteBackendRequestRedirect): RequestRedirect on a backendRef, 302 with the path.
    apply(route("backend-request-redirect", `  parentRefs: [{ name: same-namespace }]
  rules:
    - matches: [{ path: { type: PathPrefix, value: /full } }]
      backendRefs:
        - name: infra-backend-v1
          port: 8080
          filters: [{ type: RequestRedirect, requestRedirect: { path: { type: ReplaceFullPath, replaceFullPath: /redirected-full } } }]
    - matches: [{ path: { type: PathPrefix, value: /prefix } }]
      backendRefs:
        - name: infra-backend-v1
          port: 8080
          filters: [{ type: RequestRedirect, requestRedirect: { path: { type: ReplacePrefixMatch, replacePrefixMatch: /redirected-prefix } } }]`));
    await accepted("backend-request-redirect");
    await served("/full/original", (a) => a.status === 302);
    const got: string[] = [];
    for (const path of ["/full/original", "/prefix/original"]) {
      const a = await ask(path);
      got.push(`${path} ${a.status} ${target(a.location)}`);
    }
    expect(got).toEqual(["/full/original 302 http://example.com/redirected-full", "/prefix/original 302 http://example.com/redirected-prefix/original"]);
    const features = ((api.get("GatewayClass", null, "portico")!.status as { supportedFeatures: { name: string }[] }).supportedFeatures).map((f) => f.name);
    expect(features).toContain("HTTPRouteBackendRequestRedirect");
  });

  test("a backendRef's URLRewrite and RequestRedirect apply to that backend's share only, after the rule's filters (no upstream test)", async () => {
    apply(route("backend-filters-split", `  parentRefs: [{ name: same-namespace }]
  rules:
    - matches: [{ path: { type: PathPrefix, value: /split } }]
      filters: [{ type: URLRewrite, urlRewrite: { hostname: rule.example, path: { type: ReplacePrefixMatch, replacePrefixMatch: /by-rule } } }]
      backendRefs:
        - { name: infra-backend-v1, port: 8080, weight: 1 }
        - name: infra-backend-v2
          port: 8080
          weight: 1
          filters: [{ type: URLRewrite, urlRewrite: { path: { type: ReplacePrefixMatch, replacePrefixMatch: /by-backend } } }]
    - matches: [{ path: { type: PathPrefix, value: /clash } }]
      filters: [{ type: RequestRedirect, requestRedirect: { statusCode: 301 } }]
      backendRefs:
        - name: infra-backend-v1
          port: 8080
          filters: [{ type: URLRewrite, urlRewrite: { hostname: a.example } }]`));
    await served("/split/x", (a) => a.status === 200);
    const seen = new Set<string>();
    for (let i = 0; i < 40 && seen.size < 2; i++) {
      const a = await ask("/split/x");
      seen.add(`${a.backend} ${a.path} ${a.headers.host}`);
    }
    expect([...seen].sort()).toEqual([`${INFRA}/infra-backend-v1 /by-rule/x rule.example`, `${INFRA}/infra-backend-v2 /by-backend/x rule.example`]);
    // The rule's redirect answers before any backend: a backendRef's rewrite there is refused.
    expect((await ask("/clash")).status).toBe(500);
  });

  test("ReplacePrefixMatch beside a RegularExpression match: the rule is dropped (PartiallyInvalid, its requests 404), the route's other rules serve; a route left without a rule is not accepted", async () => {
    // HTTPPathModifier.replacePrefixMatch is "only compatible with a `PathPrefix` HTTPRouteMatch"
    // (apis/v1 httproute_types.go, and the CRD's CEL rules on HTTPRouteRule); a rule the spec
    // makes invalid is dropped, the route PartiallyInvalid=True "Dropped Rule" while a rule is
    // left (RouteConditionPartiallyInvalid, apis/v1 shared_types.go). ReplaceFullPath takes any
    // match type: on a RegularExpression match with groups it is the literal path.
    apply(route("regex-prefix-rewrite", `  parentRefs: [{ name: same-namespace }]
  rules:
    - matches: [{ path: { type: RegularExpression, value: "/api/(v[0-9]+)/(.*)" } }]
      filters: [{ type: URLRewrite, urlRewrite: { path: { type: ReplacePrefixMatch, replacePrefixMatch: /new } } }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
    - matches: [{ path: { type: RegularExpression, value: "/moved/(v[0-9]+)" } }]
      filters: [{ type: RequestRedirect, requestRedirect: { path: { type: ReplacePrefixMatch, replacePrefixMatch: /elsewhere } } }]
    - matches: [{ path: { type: RegularExpression, value: "/full/(v[0-9]+)/(.*)" } }]
      filters: [{ type: URLRewrite, urlRewrite: { path: { type: ReplaceFullPath, replaceFullPath: "/whole/$1" } } }]
      backendRefs: [{ name: infra-backend-v2, port: 8080 }]
    - matches: [{ path: { type: PathPrefix, value: /api } }]
      filters: [{ type: URLRewrite, urlRewrite: { path: { type: ReplacePrefixMatch, replacePrefixMatch: /v0 } } }]
      backendRefs: [{ name: infra-backend-v3, port: 8080 }]`));
    apply(route("regex-prefix-only", `  parentRefs: [{ name: same-namespace }]
  rules:
    - matches: [{ path: { type: RegularExpression, value: "/only/(.*)" } }]
      filters: [{ type: URLRewrite, urlRewrite: { path: { type: ReplacePrefixMatch, replacePrefixMatch: /x } } }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]`));
    type Cond = { type: string; status: string; reason: string; message: string; observedGeneration: number };
    const conds = (n: string) => ((api.get("HTTPRoute", INFRA, n)?.status as { parents?: { conditions: Cond[] }[] } | undefined)?.parents ?? [])[0]?.conditions ?? [];
    const show = (n: string) => conds(n).map((c) => `${c.type}=${c.status}/${c.reason}`).sort();
    await eventually(() => conds("regex-prefix-rewrite").length === 3 && conds("regex-prefix-only").length === 2, 10_000, "both routes' status");
    expect(show("regex-prefix-rewrite")).toEqual(["Accepted=True/Accepted", "PartiallyInvalid=True/UnsupportedValue", "ResolvedRefs=True/ResolvedRefs"]);
    const partial = conds("regex-prefix-rewrite").find((c) => c.type === "PartiallyInvalid")!;
    expect(partial.message.startsWith("Dropped Rule")).toBe(true);
    expect(partial.message).toContain("Rule 0");
    expect(partial.message).toContain("Rule 1");
    expect(partial.observedGeneration).toBe(1);
    expect(show("regex-prefix-only")).toEqual(["Accepted=False/UnsupportedValue", "ResolvedRefs=True/ResolvedRefs"]);
    await served("/full/v1/x", (a) => a.status === 200);
    const got: string[] = [];
    for (const path of ["/api/v1/items", "/moved/v2", "/full/v7/x", "/api", "/only/thing"]) {
      const a = await ask(path);
      got.push(`${path} ${a.status} ${a.backend ?? "-"} ${a.path ?? "-"} ${a.location ?? "-"}`);
    }
    expect(got).toEqual([
      // Dropped: not this rule's request; the route's PathPrefix /api rule takes it.
      `/api/v1/items 200 ${INFRA}/infra-backend-v3 /v0/v1/items -`,
      // Dropped, and no other rule matches: 404, neither a 500 nor a redirect.
      "/moved/v2 404 - - -",
      `/full/v7/x 200 ${INFRA}/infra-backend-v2 /whole/$1 -`,
      `/api 200 ${INFRA}/infra-backend-v3 /v0 -`,
      "/only/thing 404 - - -",
    ]);
  });

  test("RegularExpression path, header and query matches (implementation-specific; no upstream test)", async () => {
    apply(route("regex-matching", `  parentRefs: [{ name: same-namespace }]
  rules:
    - matches: [{ path: { type: RegularExpression, value: "/regex/v[0-9]+/items" } }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
    - matches: [{ path: { type: PathPrefix, value: /regex/v1 } }]
      backendRefs: [{ name: infra-backend-v2, port: 8080 }]
    - matches: [{ path: { type: PathPrefix, value: /hdr }, headers: [{ type: RegularExpression, name: version, value: "^v[12]$" }] }]
      backendRefs: [{ name: infra-backend-v3, port: 8080 }]
    - matches: [{ path: { type: PathPrefix, value: /qry }, queryParams: [{ type: RegularExpression, name: animal, value: "^(whale|dolphin)$" }] }]
      backendRefs: [{ name: infra-backend-v3, port: 8080 }]
    - matches: [{ path: { type: RegularExpression, value: "/hostile/(a+)+$" } }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]`));
    await accepted("regex-matching");
    const hostile = `/hostile/${"a".repeat(5000)}!`;
    const cases: [string, Record<string, string>, string][] = [
      // As ingress-nginx matches a use-regex path: anchored at the start only, case-insensitive.
      ["/regex/v2/items", {}, "v1"],
      ["/regex/V22/ITEMS/more", {}, "v1"],
      ["/regex/vx/items", {}, "404"],
      ["/x/regex/v2/items", {}, "404"],
      // Exact and PathPrefix come before a RegularExpression match.
      ["/regex/v1/items", {}, "v2"],
      // Header and query values: unanchored unless the pattern anchors, case-sensitive.
      ["/hdr", { version: "v1" }, "v3"],
      ["/hdr", { version: "v3" }, "404"],
      ["/hdr", { version: "V1" }, "404"],
      ["/hdr", {}, "404"],
      ["/qry?animal=dolphin", {}, "v3"],
      ["/qry?animal=whaleshark", {}, "404"],
      // Linear time: a pattern a backtracking engine takes forever on is answered.
      [hostile, {}, "404"],
      [`/hostile/${"a".repeat(5000)}`, {}, "v1"],
    ];
    const got: string[] = [];
    for (const [path, headers] of cases) {
      const a = await ask(path, { headers });
      got.push(`${path.slice(0, 40)} ${JSON.stringify(headers)} ${a.status === 404 ? "404" : a.backend}`);
    }
    expect(got).toEqual(cases.map(([p, h, v]) => `${p.slice(0, 40)} ${JSON.stringify(h)} ${v === "404" ? "404" : `${INFRA}/infra-backend-${v}`}`));
  });
};
