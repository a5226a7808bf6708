// HTTPRouteMultipleGateways (GATEWAY-HTTP core, kubernetes-sigs/gateway-api v1.6,
// conformance/tests/httproute-multiple-gateways.go/.yaml) through a real Portico with
// --gateway-ports (docs/design.md "Gateways with their own address"): each Gateway is reached
// as the upstream client reaches it, at its first `status.addresses` entry on its listener's
// declared port (conformance/utils/kubernetes WaitForGatewayAddress), with that address:port as
// Host. Nothing on loopback answers 10.96.x.y:80, so the test plays the two cluster parts that
// would: the API server's ClusterIP allocator (it fills spec.clusterIP of each Service Portico
// creates) and kube-proxy (a connection to ClusterIP:port goes to the Service's targetPort on
// its pod, Portico on 127.0.0.1).
import { afterAll, describe, expect, test } from "bun:test";
import * as grpc from "@grpc/grpc-js";
import * as loader from "@grpc/proto-loader";
import { join } from "node:path";
import { tlsSecret } from "../e2e/objects.ts";
import { createCertificate } from "../tls/pki.ts";
import { eventually } from "../wait.ts";
import { api, apply, cleanup, conformanceBase, created, freeRange, INFRA, portico, RANGE_SIZE, route, SERVICE_NS } from "./base-harness.ts";

/** What the tests started beside the base (stopped after the file). */
const stops: (() => Promise<void>)[] = [];
let from = 0;

type Svc = { metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> }; spec: { type?: string; clusterIP?: string; selector?: Record<string, string>; ports?: { name?: string; port: number; targetPort?: number | string }[] } };
const gatewayServices = (): Svc[] => (api.list("Service") as unknown as Svc[]).filter((s) => s.metadata.labels?.["app.kubernetes.io/managed-by"] === "portico-gateway");

let nextIp = 1;
/** The API server's ClusterIP allocator: each new Service gets an address once. */
function allocateClusterIps(): void {
  for (const s of gatewayServices()) {
    if (s.spec.clusterIP) continue;
    const full = api.get("Service", SERVICE_NS, s.metadata.name)!;
    api.update("Service", { ...full, spec: { ...(full.spec as object), clusterIP: `10.96.1.${nextIp++}` } });
  }
}

/** kube-proxy: ClusterIP:port → the Service's targetPort on the Portico pod (loopback). */
function dialable(gwAddr: string): string {
  const [ip, port] = [gwAddr.slice(0, gwAddr.lastIndexOf(":")), Number(gwAddr.slice(gwAddr.lastIndexOf(":") + 1))];
  for (const s of api.list("Service") as unknown as Svc[]) {
    if (s.spec.clusterIP !== ip) continue;
    const p = s.spec.ports?.find((x) => x.port === port);
    if (typeof p?.targetPort === "number") return `127.0.0.1:${p.targetPort}`;
  }
  throw new Error(`nothing answers ${gwAddr}`);
}

type Cond = { type: string; status: string; observedGeneration: number };
const accepted = (conds: Cond[] | undefined, gen: number) => ["Accepted", "Programmed"].every((t) => conds?.some((c) => c.type === t && c.status === "True" && c.observedGeneration === gen));

/**
 * GatewayAndHTTPRoutesMustBeAccepted: the Gateway accepted and programmed at its generation
 * with an address, each route accepted by it; returns `address:listener port`, as upstream.
 */
async function gatewayAndRoutesAccepted(gw: string, routes: string[], listener?: string): Promise<string> {
  let addr = "";
  await eventually(
    () => {
      allocateClusterIps();
      const g = api.get("Gateway", INFRA, gw);
      const st = g?.status as { conditions?: Cond[]; addresses?: { type?: string; value: string }[] } | undefined;
      if (!g || !accepted(st?.conditions, g.metadata.generation as number)) return false;
      const a = st?.addresses?.find((x) => x.type !== undefined);
      if (!a) return false;
      // NewGatewayRef(gwNN, listener): that listener's port, else the first listener's.
      const ls = (g.spec as { listeners: { name: string; port: number }[] }).listeners;
      const port = (ls.find((x) => x.name === listener) ?? ls[0]!).port;
      for (const r of routes) {
        const parents = (api.get("HTTPRoute", INFRA, r)?.status as { parents?: { parentRef: { name: string }; conditions: Cond[] }[] } | undefined)?.parents ?? [];
        const p = parents.find((x) => x.parentRef.name === gw);
        if (!p?.conditions.some((c) => c.type === "Accepted" && c.status === "True")) return false;
      }
      addr = `${a.value}:${port}`;
      return true;
    },
    15_000,
    `${gw} and its routes accepted with an address`,
  );
  return addr;
}

/** One request as the upstream client sends it: to gwAddr, with gwAddr as Host. */
async function get(gwAddr: string, path: string): Promise<{ status: number; backend: string | null }> {
  const res = await fetch(`http://${dialable(gwAddr)}${path}`, { headers: { host: gwAddr }, redirect: "manual" });
  const text = await res.text();
  let backend: string | null = null;
  try {
    backend = (JSON.parse(text) as { backend?: string }).backend ?? null;
  } catch {
    // Portico's own answer
  }
  return { status: res.status, backend };
}

/** MakeRequestAndExpectEventuallyConsistentResponse: the answer settles on the expected one. */
async function expectBackend(gwAddr: string, path: string, backend: string): Promise<void> {
  let last: unknown = null;
  await eventually(async () => {
    const a = await get(gwAddr, path);
    last = a;
    return a.status === 200 && a.backend === `${INFRA}/${backend}`;
  }, 10_000).catch((e: unknown) => {
    throw new Error(`${gwAddr}${path}: wanted 200 from ${backend}, last answer ${JSON.stringify(last)} (${String(e)})`);
  });
}

/** The suite, against one Portico with --gateway-ports and `--workers N`. */
export function ownAddressSuite(tag: string, workers: number): void {
  conformanceBase(tag, {
    args: () => ["--publish-service", `${SERVICE_NS}/portico`, "--gateway-ports", `${(from = freeRange())}-${from + RANGE_SIZE - 1}`, "--workers", String(workers)],
    before: () => {
      // Portico's own Service (k8s/service.yaml, as a ClusterIP here): the Gateways' Services copy
      // its namespace, selector and type.
      api.create("Service", {
        metadata: { name: "portico", namespace: SERVICE_NS },
        spec: { type: "ClusterIP", clusterIP: "10.96.0.10", selector: { "app.kubernetes.io/name": "portico" }, ports: [{ name: "http", port: 80, targetPort: "http" }] },
      });
    },
  });

  afterAll(async () => {
    for (const stop of stops.splice(0)) await stop();
  });
  describe(`GATEWAY-HTTP: each Gateway at its own address (--gateway-ports, --workers ${workers})`, tests);
}

function tests(): void {
  test("HTTPRouteMultipleGateways", async () => {
    // The base's all-namespaces Gateway (conformance/base/manifests.yaml) and the test's routes.
    apply(`apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: all-namespaces, namespace: ${INFRA} }
spec:
  gatewayClassName: portico
  listeners: [{ name: http, port: 80, protocol: HTTP, allowedRoutes: { namespaces: { from: All } } }]`);
    apply(route("multiple-gateways-shared-route", `  parentRefs: [{ name: same-namespace }, { name: all-namespaces }]
  rules: [{ matches: [{ path: { type: PathPrefix, value: /shared } }], backendRefs: [{ name: infra-backend-v1, port: 8080 }] }]`));
    apply(route("same-namespace-dedicated-route", `  parentRefs: [{ name: same-namespace }]
  rules: [{ matches: [{ path: { type: PathPrefix, value: / } }], backendRefs: [{ name: infra-backend-v2, port: 8080 }] }]`));
    apply(route("all-namespaces-dedicated-route", `  parentRefs: [{ name: all-namespaces }]
  rules: [{ matches: [{ path: { type: PathPrefix, value: / } }], backendRefs: [{ name: infra-backend-v3, port: 8080 }] }]`));

    // "Gateway same-namespace"
    const same = await gatewayAndRoutesAccepted("same-namespace", ["multiple-gateways-shared-route", "same-namespace-dedicated-route"]);
    await expectBackend(same, "/shared", "infra-backend-v1");
    await expectBackend(same, "/", "infra-backend-v2");
    // "Gateway all-namespaces"
    const all = await gatewayAndRoutesAccepted("all-namespaces", ["multiple-gateways-shared-route", "all-namespaces-dedicated-route"]);
    await expectBackend(all, "/shared", "infra-backend-v1");
    await expectBackend(all, "/", "infra-backend-v3");
    expect(same).not.toBe(all);

    // What made it possible: one Service per Gateway beside Portico's, its selector and type,
    // the declared port 80 on a Portico port of the range.
    const svcs = gatewayServices();
    expect(svcs.map((s) => s.metadata.annotations?.["portico.dev/gateway"]).sort()).toEqual([`${INFRA}/all-namespaces`, `${INFRA}/same-namespace`]);
    for (const s of svcs) {
      expect(s.spec.type).toBe("ClusterIP");
      expect(s.spec.selector).toEqual({ "app.kubernetes.io/name": "portico" });
      expect(s.spec.ports).toHaveLength(1);
      expect(s.spec.ports![0]!.port).toBe(80);
      const target = s.spec.ports![0]!.targetPort as number;
      expect(target >= from && target < from + RANGE_SIZE).toBe(true);
    }
    // The shared HTTP port serves Ingresses alone now: no Gateway's rule answers there.
    const shared = await fetch(`${portico.http}/shared`, { headers: { host: "example.com" } });
    expect(shared.status).toBe(404);
    await shared.text();

    // A Gateway deleted: its Service goes, and its port stops answering; the other stays.
    const gone = dialable(all);
    api.delete("Gateway", INFRA, "all-namespaces");
    created.splice(created.findIndex((c) => c.kind === "Gateway" && c.name === "all-namespaces"), 1);
    await eventually(() => gatewayServices().length === 1, 10_000, "the deleted Gateway's Service deleted");
    await eventually(
      async () => {
        try {
          const r = await fetch(`http://${gone}/`, { headers: { host: all } });
          await r.text();
          return false;
        } catch {
          return true; // connection refused: the port is closed
        }
      },
      10_000,
      "the deleted Gateway's port closed",
    );
    await expectBackend(same, "/", "infra-backend-v2");
    cleanup();
  });

  test("HTTPRouteRedirectPortAndScheme (extended: HTTPRoutePortRedirect, HTTPRouteSchemeRedirect, GatewayPort8080)", async () => {
    // conformance/base: same-namespace-with-https-listener and tls-validity-checks-certificate
    // (as test/gateway/serve.test.ts HTTPRouteHTTPSListener creates them);
    // conformance/tests/httproute-redirect-port-and-scheme.yaml: the Gateway on 8080 and the routes.
    const cert = createCertificate({ subjectCN: "example.org", sans: ["example.org", "second-example.org", "*.wildcard.org"] });
    api.create("Secret", tlsSecret(INFRA, "tls-validity-checks-certificate", cert.certPem, cert.keyPem));
    const l = (name: string, host: string | null) =>
      `    - { name: ${name}, port: 443, protocol: HTTPS, ${host ? `hostname: "${host}", ` : ""}allowedRoutes: { namespaces: { from: Same } }, tls: { certificateRefs: [{ group: "", kind: Secret, name: tls-validity-checks-certificate }] } }`;
    const redirect = (path: string, r: string) => `    - { matches: [{ path: { type: PathPrefix, value: ${path} } }], filters: [{ type: RequestRedirect, requestRedirect: { ${r}hostname: example.org } }] }`;
    apply(`apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: same-namespace-with-https-listener, namespace: ${INFRA} }
spec:
  gatewayClassName: portico
  listeners:
${[l("https", null), l("https-with-hostname", "second-example.org"), l("https-with-wildcard-hostname", "*.wildcard.org"), l("https-with-hostname-matching-wildcard", "fourth-example.wildcard.org")].join("\n")}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: same-namespace-with-http-listener-on-8080, namespace: ${INFRA} }
spec:
  gatewayClassName: portico
  listeners: [{ name: http, port: 8080, protocol: HTTP, allowedRoutes: { namespaces: { from: Same } } }]`);
    apply(route("http-route-for-listener-on-port-80", `  parentRefs: [{ name: same-namespace }]
  rules:
${[
  redirect("/scheme-nil-and-port-nil", ""),
  redirect("/scheme-nil-and-port-80", "port: 80, "),
  redirect("/scheme-nil-and-port-8080", "port: 8080, "),
  redirect("/scheme-https-and-port-nil", "scheme: https, "),
  redirect("/scheme-https-and-port-443", "scheme: https, port: 443, "),
  redirect("/scheme-https-and-port-8443", "scheme: https, port: 8443, "),
].join("\n")}`));
    apply(route("http-route-for-listener-on-port-8080", `  parentRefs: [{ name: same-namespace-with-http-listener-on-8080 }]
  rules:
${[redirect("/scheme-nil-and-port-nil", ""), redirect("/scheme-nil-and-port-80", "port: 80, "), redirect("/scheme-https-and-port-nil", "scheme: https, ")].join("\n")}`));
    apply(route("http-route-for-listener-on-port-443", `  parentRefs: [{ name: same-namespace-with-https-listener }]
  rules:
${[
  redirect("/scheme-nil-and-port-nil", ""),
  redirect("/scheme-nil-and-port-443", "port: 443, "),
  redirect("/scheme-nil-and-port-8443", "port: 8443, "),
  redirect("/scheme-http-and-port-nil", "scheme: http, "),
  redirect("/scheme-http-and-port-80", "scheme: http, port: 80, "),
  redirect("/scheme-http-and-port-8080", "scheme: http, port: 8080, "),
].join("\n")}`));

    const gw80 = await gatewayAndRoutesAccepted("same-namespace", ["http-route-for-listener-on-port-80"]);
    const gw8080 = await gatewayAndRoutesAccepted("same-namespace-with-http-listener-on-8080", ["http-route-for-listener-on-port-8080"]);
    const gw443 = await gatewayAndRoutesAccepted("same-namespace-with-https-listener", ["http-route-for-listener-on-port-443"]);
    expect([gw80.endsWith(":80"), gw8080.endsWith(":8080"), gw443.endsWith(":443")]).toEqual([true, true, true]);

    /**
     * The upstream check (conformance/utils/http CompareRoundTrip with setRedirectRequestDefaults):
     * 302; scheme, host and path as expected (path: the request's); the port as expected, or,
     * when none is expected, absent or the scheme's default.
     */
    const check = async (gwAddr: string, tls: boolean, path: string, want: { scheme: string; port?: string }): Promise<string> => {
      let got = "";
      const ok = (): boolean => {
        const m = /^(\d+) (.*)$/.exec(got);
        if (!m || m[1] !== "302") return false;
        let u: URL;
        try {
          u = new URL(m[2]!);
        } catch {
          return false;
        }
        const scheme = u.protocol.slice(0, -1);
        // WHATWG URL drops a default port, as Go's url.Port() keeps it: both accepted upstream.
        const portOk = want.port === undefined ? u.port === "" : u.port === want.port;
        return scheme === want.scheme && u.hostname === "example.org" && u.pathname === path && portOk;
      };
      await eventually(async () => {
        try {
          const res = tls
            ? await fetch(`https://${dialable(gwAddr)}${path}`, { headers: { host: "example.org" }, redirect: "manual", tls: { ca: cert.certPem, serverName: "example.org" } } as RequestInit)
            : await fetch(`http://${dialable(gwAddr)}${path}`, { headers: { host: gwAddr }, redirect: "manual" });
          await res.text();
          got = `${res.status} ${res.headers.get("location")}`;
        } catch (e) {
          got = String(e);
        }
        return ok();
      }, 10_000).catch(() => undefined);
      return `${path} ${ok() ? "ok" : `got ${got}`}`;
    };
    const cases: [string, boolean, string, { scheme: string; port?: string }][] = [
      // http-listener-on-80
      [gw80, false, "/scheme-nil-and-port-nil", { scheme: "http" }],
      [gw80, false, "/scheme-nil-and-port-80", { scheme: "http" }],
      [gw80, false, "/scheme-nil-and-port-8080", { scheme: "http", port: "8080" }],
      [gw80, false, "/scheme-https-and-port-nil", { scheme: "https" }],
      [gw80, false, "/scheme-https-and-port-443", { scheme: "https" }],
      [gw80, false, "/scheme-https-and-port-8443", { scheme: "https", port: "8443" }],
      // http-listener-on-8080
      [gw8080, false, "/scheme-nil-and-port-nil", { scheme: "http", port: "8080" }],
      [gw8080, false, "/scheme-nil-and-port-80", { scheme: "http" }],
      [gw8080, false, "/scheme-https-and-port-nil", { scheme: "https" }],
      // https-listener-on-443 (Host and SNI example.org, the certificate checked)
      [gw443, true, "/scheme-nil-and-port-nil", { scheme: "https" }],
      [gw443, true, "/scheme-nil-and-port-443", { scheme: "https" }],
      [gw443, true, "/scheme-nil-and-port-8443", { scheme: "https", port: "8443" }],
      [gw443, true, "/scheme-http-and-port-nil", { scheme: "http" }],
      [gw443, true, "/scheme-http-and-port-80", { scheme: "http" }],
      [gw443, true, "/scheme-http-and-port-8080", { scheme: "http", port: "8080" }],
    ];
    const results: string[] = [];
    for (const [addr, tls, path, want] of cases) results.push(`${addr === gw80 ? "80" : addr === gw8080 ? "8080" : "443"} ${await check(addr, tls, path, want)}`);
    expect(results).toEqual(cases.map(([addr, , path]) => `${addr === gw80 ? "80" : addr === gw8080 ? "8080" : "443"} ${path} ok`));
    // The Gateway's Service maps each declared port to its own Portico port.
    const svc = gatewayServices().find((x) => x.metadata.annotations?.["portico.dev/gateway"] === `${INFRA}/same-namespace-with-http-listener-on-8080`)!;
    expect(svc.spec.ports!.map((p) => `${p.name} ${p.port}`)).toEqual(["http-8080 8080"]);
    // GatewayPort8080 is listed with --gateway-ports, so a conformance run selects this test.
    const features = (api.get("GatewayClass", null, "portico")!.status as { supportedFeatures?: { name: string }[] }).supportedFeatures!.map((f) => f.name);
    expect(features).toContain("GatewayPort8080");
    cleanup();
    api.delete("Secret", INFRA, "tls-validity-checks-certificate");
  });

  test("HTTPRouteListenerPortMatching (extended: HTTPRouteParentRefPort)", async () => {
    // conformance/tests/httproute-listener-port-matching.yaml
    const l = (name: string, port: number, host: string) => `    - { name: ${name}, port: ${port}, protocol: HTTP, allowedRoutes: { namespaces: { from: Same } }, hostname: ${host} }`;
    apply(`apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: httproute-listener-port-matching, namespace: ${INFRA} }
spec:
  gatewayClassName: portico
  listeners:
${[l("listener-1", 80, "foo.com"), l("listener-2", 8080, "foo.com"), l("listener-3", 8080, "bar.com"), l("listener-4", 8090, "foo.com"), l("listener-5", 8090, "bar.com")].join("\n")}`);
    const parent = (extra: string) => `  parentRefs: [{ name: httproute-listener-port-matching, namespace: ${INFRA}, ${extra} }]`;
    apply(route("backend-v1", `${parent("port: 80")}
  rules: [{ backendRefs: [{ name: infra-backend-v1, port: 8080 }] }]`));
    apply(route("backend-v2", `${parent("port: 8080")}
  rules: [{ backendRefs: [{ name: infra-backend-v2, port: 8080 }] }]`));
    apply(route("backend-v3", `${parent("port: 8090, sectionName: listener-4")}
  rules: [{ backendRefs: [{ name: infra-backend-v3, port: 8080 }] }]`));
    const gw = "httproute-listener-port-matching";
    const gw80 = await gatewayAndRoutesAccepted(gw, ["backend-v1"], "listener-1");
    const gw8080 = await gatewayAndRoutesAccepted(gw, ["backend-v2"], "listener-2");
    const gw8090 = await gatewayAndRoutesAccepted(gw, ["backend-v3"], "listener-4");
    // The upstream cases: the Host's port picks the address (gwAddr80 without one).
    const cases: [string, string][] = [
      ["foo.com", "infra-backend-v1"],
      ["foo.com:8080", "infra-backend-v2"],
      ["bar.com:8080", "infra-backend-v2"],
      ["foo.com:8090", "infra-backend-v3"],
      ["bar.com:8090", "404"],
    ];
    const results: string[] = [];
    for (const [host, want] of cases) {
      const addr = host.endsWith(":8080") ? gw8080 : host.endsWith(":8090") ? gw8090 : gw80;
      let got = "";
      await eventually(async () => {
        const res = await fetch(`http://${dialable(addr)}/`, { headers: { host } });
        const text = await res.text();
        got = res.status === 200 ? ((JSON.parse(text) as { backend: string }).backend.split("/")[1] ?? "") : String(res.status);
        return got === want;
      }, 10_000).catch(() => undefined);
      results.push(`${host} ${got}`);
    }
    expect(results).toEqual(cases.map(([host, want]) => `${host} ${want}`));
    // One Service for the Gateway, one port per declared port.
    const svc = gatewayServices().find((x) => x.metadata.annotations?.["portico.dev/gateway"] === `${INFRA}/${gw}`)!;
    expect(svc.spec.ports!.map((p) => `${p.name} ${p.port}`)).toEqual(["http-80 80", "http-8080 8080", "http-8090 8090"]);
    // HTTPRouteParentRefPort is listed with --gateway-ports, so a conformance run selects this test.
    const features = (api.get("GatewayClass", null, "portico")!.status as { supportedFeatures?: { name: string }[] }).supportedFeatures!.map((f) => f.name);
    expect(features).toContain("HTTPRouteParentRefPort");
    cleanup();
  });

  test("HTTPRouteInvalidParentRefSectionNameNotMatchingPort (extended: HTTPRouteParentRefPort)", async () => {
    apply(`apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: gateway-with-one-not-matching-port-and-section-name-route, namespace: ${INFRA} }
spec:
  gatewayClassName: portico
  listeners: [{ name: http, port: 80, protocol: HTTP, allowedRoutes: { kinds: [{ kind: HTTPRoute }], namespaces: { from: All } } }]`);
    apply(route("httproute-listener-section-name-not-matching-port", `  parentRefs: [{ name: gateway-with-one-not-matching-port-and-section-name-route, namespace: ${INFRA}, sectionName: http, port: 81 }]
  rules: [{ backendRefs: [{ name: infra-backend-v1, kind: Service, port: 8080 }] }]`));
    type C = { type: string; status: string; reason: string };
    const parents = () => ((api.get("HTTPRoute", INFRA, "httproute-listener-section-name-not-matching-port")?.status as { parents?: { conditions: C[] }[] } | undefined)?.parents ?? []);
    await eventually(() => parents().length === 1, 10_000, "route status");
    // HTTPRouteMustHaveCondition: Accepted=False/NoMatchingParent; HTTPRouteMustHaveNoAcceptedParents.
    expect(parents().map((p) => p.conditions.filter((c) => c.type === "Accepted").map((c) => `${c.status}/${c.reason}`))).toEqual([["False/NoMatchingParent"]]);
    // GatewayMustHaveZeroRoutes.
    const gwStatus = () => api.get("Gateway", INFRA, "gateway-with-one-not-matching-port-and-section-name-route")?.status as { listeners?: { attachedRoutes: number }[] } | undefined;
    await eventually(() => (gwStatus()?.listeners?.length ?? 0) === 1, 10_000, "gateway status");
    expect(gwStatus()!.listeners!.map((x) => x.attachedRoutes)).toEqual([0]);
    cleanup();
  });

  test("a Gateway is Programmed only once its Service has an address: Programmed=False AddressNotAssigned before", async () => {
    // GatewayConditionProgrammed (apis/v1 gateway_types.go): False with AddressNotAssigned while
    // "the underlying implementation and network have yet to dynamically assign addresses".
    apply(`apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: waits-for-address, namespace: ${INFRA} }
spec:
  gatewayClassName: portico
  listeners: [{ name: http, port: 80, protocol: HTTP, allowedRoutes: { namespaces: { from: Same } } }]`);
    type C = { type: string; status: string; reason: string; observedGeneration: number };
    type St = { conditions?: C[]; addresses?: { type: string; value: string }[]; listeners?: { name: string; conditions: C[] }[] };
    const st = () => api.get("Gateway", INFRA, "waits-for-address")?.status as St | undefined;
    const gwSvc = () => gatewayServices().find((x) => x.metadata.annotations?.["portico.dev/gateway"] === `${INFRA}/waits-for-address`);
    // The leader made the Service; nothing has given it a cluster IP yet (this test plays the
    // allocator, and has not run it).
    await eventually(() => gwSvc() !== undefined && (st()?.conditions?.length ?? 0) > 0, 15_000, "the Gateway's Service and status");
    expect(gwSvc()!.spec.clusterIP).toBeUndefined();
    const show = () => (st()?.conditions ?? []).map((c) => `${c.type}=${c.status}/${c.reason}@${c.observedGeneration}`).sort();
    expect(show()).toEqual(["Accepted=True/Accepted@1", "Programmed=False/AddressNotAssigned@1"]);
    expect(st()!.addresses ?? []).toEqual([]);
    // Its listener is bound and valid: only the Gateway waits for the address.
    expect(st()!.listeners!.map((l) => l.conditions.filter((c) => c.type === "Programmed").map((c) => c.status))).toEqual([["True"]]);
    allocateClusterIps();
    const ip = gwSvc()!.spec.clusterIP!;
    await eventually(() => st()?.conditions?.some((c) => c.type === "Programmed" && c.status === "True") === true, 15_000, "Programmed once the Service has an address");
    expect(show()).toEqual(["Accepted=True/Accepted@1", "Programmed=True/Programmed@1"]);
    expect(st()!.addresses).toEqual([{ type: "IPAddress", value: ip }]);
    cleanup();
  });

  test("GatewayWithAttachedRoutesWithPort8080 (extended: GatewayPort8080)", async () => {
    // conformance/tests/gateway-with-attached-routes-with-port-8080.yaml, expectations of
    // gateway-with-attached-routes.go (GatewayStatusMustHaveListeners: conditions at the latest
    // generation, then each listener's supportedKinds, Accepted and ResolvedRefs True, attachedRoutes).
    apply(`apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: gateway-with-two-listeners-and-one-attached-route, namespace: ${INFRA} }
spec:
  gatewayClassName: portico
  listeners:
  - { name: http-unattached, port: 8080, protocol: HTTP, allowedRoutes: { kinds: [{ kind: HTTPRoute }], namespaces: { from: All } } }
  - { name: http, port: 80, protocol: HTTP, allowedRoutes: { kinds: [{ kind: HTTPRoute }], namespaces: { from: All } } }`);
    apply(route("http-route-4-port-8080", `  parentRefs: [{ kind: Gateway, name: gateway-with-two-listeners-and-one-attached-route, namespace: ${INFRA}, sectionName: http }]
  rules: [{ backendRefs: [{ name: infra-backend-v1, port: 8080 }] }]`));
    type C = { type: string; status: string; observedGeneration: number };
    type L = { name: string; supportedKinds: { group?: string; kind: string }[]; attachedRoutes: number; conditions: C[] };
    const got = () => {
      allocateClusterIps();
      const g = api.get("Gateway", INFRA, "gateway-with-two-listeners-and-one-attached-route");
      const s = g?.status as { conditions?: C[]; listeners?: L[] } | undefined;
      if (!g || !s?.conditions?.length || !s.conditions.every((c) => c.observedGeneration === g.metadata.generation)) return null;
      return (s.listeners ?? []).map((l) => {
        const ok = ["Accepted", "ResolvedRefs"].every((t) => l.conditions.some((c) => c.type === t && c.status === "True"));
        return `${l.name} ${l.supportedKinds.map((k) => `${k.group}/${k.kind}`).join(",")} ${ok ? "Accepted,ResolvedRefs" : "not ready"} ${l.attachedRoutes}`;
      });
    };
    const want = ["http-unattached gateway.networking.k8s.io/HTTPRoute Accepted,ResolvedRefs 0", "http gateway.networking.k8s.io/HTTPRoute Accepted,ResolvedRefs 1"];
    await eventually(() => JSON.stringify(got()) === JSON.stringify(want), 15_000).catch(() => undefined);
    expect(got()).toEqual(want);
    cleanup();
  });

  test("GatewayNameMaximumLength with a Service of its own (its name fits a DNS label)", async () => {
    // conformance/tests/gateway-name-maximum-length.go/.yaml (newer than v1.6.1): a Gateway with
    // a 253-character name is reconciled, GatewayMustHaveLatestConditions. With --gateway-ports
    // its Service name is cut to a DNS label (63 characters) and keeps its hash.
    const name = "gateway-name-maximum-length-" + "a".repeat(253 - "gateway-name-maximum-length-".length);
    apply(`apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: ${name}, namespace: ${INFRA}, annotations: { gateway-api/skip-this-for-readiness: "true" } }
spec:
  gatewayClassName: portico
  listeners: [{ name: http, port: 80, protocol: HTTP }]`);
    type C = { type: string; status: string; observedGeneration: number };
    const conds = () => ((api.get("Gateway", INFRA, name)?.status as { conditions?: C[] } | undefined)?.conditions ?? []);
    await eventually(() => {
      allocateClusterIps();
      return conds().length > 0 && conds().every((c) => c.observedGeneration === 1) && conds().some((c) => c.type === "Programmed" && c.status === "True");
    }, 15_000, "the long-named Gateway's conditions at generation 1");
    const svc = gatewayServices().find((x) => x.metadata.annotations?.["portico.dev/gateway"] === `${INFRA}/${name}`)!;
    expect(svc.metadata.name.length <= 63 && /^portico-gw-gateway-name-maximum-length-a+-[0-9a-f]{8}$/.test(svc.metadata.name)).toBe(true);
    cleanup();
  });

  test("a GRPCRoute on a Gateway's own port: h2c with its trailers, as on the shared plain port", async () => {
    // A GrpcEcho backend (test/gateway/grpcecho.proto, the conformance echo service).
    const def = loader.loadSync(join(import.meta.dir, "grpcecho.proto"), { keepCase: false, defaults: true });
    // biome-ignore lint: grpc-js builds the service types at run time.
    const pkg = (grpc.loadPackageDefinition(def) as any).gateway_api_conformance.echo_basic.grpcecho;
    const server = new grpc.Server();
    server.addService(pkg.GrpcEcho.service, {
      Echo: (_call: unknown, cb: (e: null, r: unknown) => void) => cb(null, { backend: `${INFRA}/grpc-own`, method: "Echo", headers: {} }),
    });
    const port = await new Promise<number>((resolve, reject) => server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))));
    stops.push(() => new Promise<void>((r) => server.tryShutdown(() => r())).then(() => server.forceShutdown()));
    api.create("Service", { metadata: { name: "grpc-own", namespace: INFRA }, spec: { ports: [{ name: "grpc", port: 8080, appProtocol: "kubernetes.io/h2c" }] } });
    api.create("EndpointSlice", {
      metadata: { name: "grpc-own-x", namespace: INFRA, labels: { "kubernetes.io/service-name": "grpc-own" } },
      addressType: "IPv4",
      ports: [{ name: "grpc", port }],
      endpoints: [{ addresses: ["127.0.0.1"], conditions: { ready: true } }],
    });
    created.push({ kind: "EndpointSlice", ns: INFRA, name: "grpc-own-x" }, { kind: "Service", ns: INFRA, name: "grpc-own" });
    apply(`apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: grpc-own-port, namespace: ${INFRA} }
spec:
  gatewayClassName: portico
  listeners: [{ name: http, port: 80, protocol: HTTP, allowedRoutes: { namespaces: { from: Same } } }]
---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: { name: grpc-own-route, namespace: ${INFRA} }
spec:
  parentRefs: [{ name: grpc-own-port }]
  rules: [{ backendRefs: [{ name: grpc-own, port: 8080 }] }]`);
    let addr = "";
    await eventually(
      () => {
        allocateClusterIps();
        const g = api.get("Gateway", INFRA, "grpc-own-port");
        const a = (g?.status as { addresses?: { value: string }[] } | undefined)?.addresses?.[0];
        if (!a) return false;
        addr = `${a.value}:80`;
        return true;
      },
      15_000,
      "grpc-own-port with an address",
    );
    // The upstream gRPC client dials the Gateway's address with cleartext HTTP/2, prior knowledge.
    const client = new pkg.GrpcEcho(dialable(addr), grpc.credentials.createInsecure(), { "grpc.default_authority": "example.com" });
    const call = () =>
      new Promise<string>((resolve) => {
        client.Echo({}, new grpc.Metadata(), { deadline: Date.now() + 5_000 }, (err: grpc.ServiceError | null, res: { backend?: string } | null) => resolve(err ? `code ${err.code} ${err.details}` : `OK ${res?.backend}`));
      });
    let got = "";
    await eventually(async () => (got = await call()) === `OK ${INFRA}/grpc-own`, 15_000).catch(() => undefined);
    client.close();
    expect(got).toBe(`OK ${INFRA}/grpc-own`);
    cleanup();
  });
}
