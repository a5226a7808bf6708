// An Ingress's host and Gateway API routes of other namespaces (docs/design.md "Gateway API",
// "Ingress and HTTPRoute on one host"): a tenant allowed on a shared Gateway listener without a
// hostname must not take paths of a host another namespace's Ingress names, past that
// Ingress's access control; the Ingress's own namespace may still move its host to an
// HTTPRoute one path at a time. Objects in the fake API server, requests through a real
// Portico; the Ingress answers 403 by its whitelist-source-range (ingress-nginx's ipallowlist
// module denies with 403: internal/ingress/annotations/ipallowlist), as the client is 127.0.0.1.
import { afterEach, describe, expect, test } from "bun:test";
import type { ExplainResult } from "../../src/compile/explain-types.ts";
import { ingress, ingressClass, tlsSecret } from "../e2e/objects.ts";
import { createCertificate } from "../tls/pki.ts";
import { peerCertificate } from "../tls/helpers.ts";
import { eventually } from "../wait.ts";
import { APP, api, apply, ask, cleanup, conformanceBase, created, echoes, INFRA, portico, route, served, WEB } from "./base-harness.ts";

conformanceBase("ingress-hosts", {
  before: () => {
    api.create("IngressClass", ingressClass());
    // The shared Gateway: a listener without a hostname open to every namespace.
    api.create("Gateway", {
      metadata: { name: "open", namespace: INFRA },
      spec: { gatewayClassName: "portico", listeners: [{ name: "http", port: 80, protocol: "HTTP", allowedRoutes: { namespaces: { from: "All" } } }] },
    });
    // The victim: an Ingress in WEB naming secure.example, for 192.0.2.0/24 only, to a
    // Service on port 80 (what the objects helper names) in front of WEB's echo backend.
    api.create("Service", { metadata: { name: "secure-backend", namespace: WEB }, spec: { ports: [{ name: "http", port: 80 }] } });
    api.create("EndpointSlice", {
      metadata: { name: "secure-backend-x", namespace: WEB, labels: { "kubernetes.io/service-name": "secure-backend" } },
      addressType: "IPv4",
      ports: [{ name: "http", port: echoes.get(`${WEB}/web-backend`)!.port }],
      endpoints: [{ addresses: ["127.0.0.1"], conditions: { ready: true } }],
    });
    api.create("Ingress", ingress(WEB, "secure", [{ host: "secure.example", paths: [{ path: "/", service: "secure-backend" }] }], { annotations: { "nginx.ingress.kubernetes.io/whitelist-source-range": "192.0.2.0/24" } }));
  },
});

// What a test made goes again after it, passed or failed, so the next starts from the base.
afterEach(cleanup);

/** Creates an object the test's cleanup removes. */
function make(kind: string, o: Record<string, unknown>): void {
  api.create(kind, o);
  const m = o.metadata as { name: string; namespace?: string };
  created.push({ kind, ns: m.namespace ?? null, name: m.name });
}

/** A route in APP (the tenant) on the open listener: PathPrefix /admin to APP's backend. */
const tenantRoute = (hostnames: string) =>
  route(
    "takeover",
    `  parentRefs: [{ name: open, namespace: ${INFRA} }]
${hostnames}  rules: [{ matches: [{ path: { type: PathPrefix, value: /admin } }], backendRefs: [{ name: app-backend-v1, port: 8080 }] }]`,
    APP,
  );

/** Waits until the Ingress serves its host (its allowlist answers 403 to 127.0.0.1). */
async function ingressLive(): Promise<void> {
  await served("/", (a) => a.status === 403, { host: "secure.example" });
}

describe("a host an Ingress names: only its owners' routes are asked first", () => {
  test("a tenant's route without hostnames on a listener from All does not take the Ingress's /admin", async () => {
    await ingressLive();
    apply(tenantRoute(""));
    // The route is live: it serves /admin on every host no Ingress names.
    const other = await served("/admin/x", (a) => a.backend === `${APP}/app-backend-v1`, { host: "other.example" });
    expect(other.status).toBe(200);
    expect(other.path).toBe("/admin/x");
    // On the Ingress's host the Ingress answers, with its allowlist.
    const held = await ask("/admin/x", { host: "secure.example" });
    expect(held.status).toBe(403);
    expect(held.backend).toBeNull();
    expect((await ask("/admin", { host: "secure.example:80" })).status).toBe(403);
    cleanup();
    await served("/admin/x", (a) => a.status === 404, { host: "other.example" });
  });

  test("a tenant's route naming the host is Accepted, not asked there, and explained", async () => {
    await ingressLive();
    apply(tenantRoute("  hostnames: [secure.example, tenant.example]\n"));
    await served("/admin", (a) => a.backend === `${APP}/app-backend-v1`, { host: "tenant.example" });
    const held = await ask("/admin", { host: "secure.example" });
    expect(held.status).toBe(403);
    expect(held.backend).toBeNull();
    // Accepted: the Gateway API has no condition for it.
    await eventually(() => {
      const r = api.get("HTTPRoute", APP, "takeover");
      const parents = (r?.status as { parents?: { conditions: { type: string; status: string }[] }[] } | undefined)?.parents ?? [];
      return parents.length === 1 && parents[0]!.conditions.some((c) => c.type === "Accepted" && c.status === "True");
    }, 10_000);
    // Explain: the Ingress's rule answers, and the route's diagnostic names the host and the Ingress.
    const r = (await (await fetch(`${portico.admin}/debug/explain?host=secure.example&path=/admin`)).json()) as ExplainResult;
    expect(r.gateway ?? null).toBeNull();
    expect(r.response.status).toBe(403);
    expect(r.match?.ingress).toBe(`${WEB}/secure`);
    expect(r.diagnostics.filter((d) => d.reason === "RouteHostHeldByIngress")).toEqual([
      {
        kind: "HTTPRoute",
        namespace: APP,
        name: "takeover",
        reason: "RouteHostHeldByIngress",
        message: "hostname secure.example is named by an Ingress of another namespace: only routes of the namespaces of its Ingresses are asked there; this route's rules are not",
        severity: "warning",
      },
    ]);
    cleanup();
    await served("/admin", (a) => a.status === 404, { host: "tenant.example" });
  });

  test("the Ingress's own namespace moves a path of its host to an HTTPRoute: asked first", async () => {
    await ingressLive();
    apply(
      route(
        "moved",
        `  parentRefs: [{ name: open, namespace: ${INFRA} }]
  hostnames: [secure.example]
  rules:
    - matches: [{ path: { type: PathPrefix, value: /admin } }]
      filters: [{ type: RequestHeaderModifier, requestHeaderModifier: { set: [{ name: x-via, value: owner-route }] } }]
      backendRefs: [{ name: web-backend, port: 8080 }]`,
        WEB,
      ),
    );
    // A tenant's catch-all beside it changes nothing on the host.
    apply(tenantRoute(""));
    await served("/admin", (a) => a.backend === `${APP}/app-backend-v1`, { host: "other.example" });
    const moved = await served("/admin/x", (a) => a.headers["x-via"] === "owner-route", { host: "secure.example" });
    expect(moved.status).toBe(200);
    expect(moved.backend).toBe(`${WEB}/web-backend`);
    expect(moved.headers["x-via"]).toBe("owner-route");
    // Paths the owner's route does not match still go to the Ingress.
    expect((await ask("/other", { host: "secure.example" })).status).toBe(403);
    // The tenant's catch-all still serves the hosts no Ingress names.
    expect((await ask("/admin", { host: "other.example" })).backend).toBe(`${APP}/app-backend-v1`);
    cleanup();
    await served("/admin/x", (a) => a.status === 403, { host: "secure.example" });
  });

  test("a wildcard Ingress host is held too, for one whole first label", async () => {
    make(
      "Ingress",
      ingress(WEB, "wild", [{ host: "*.wild.example", paths: [{ path: "/", service: "secure-backend" }] }], { annotations: { "nginx.ingress.kubernetes.io/whitelist-source-range": "192.0.2.0/24" } }),
    );
    await served("/", (a) => a.status === 403, { host: "a.wild.example" });
    apply(tenantRoute(""));
    await served("/admin", (a) => a.backend === `${APP}/app-backend-v1`, { host: "other.example" });
    expect((await ask("/admin", { host: "a.wild.example" })).status).toBe(403);
    // Two labels are not the Ingress wildcard's (one whole label): the tenant's route serves it.
    expect((await ask("/admin", { host: "a.b.wild.example" })).backend).toBe(`${APP}/app-backend-v1`);
  });
});

describe("TLS on a host an Ingress binds", () => {
  test("a route hostname on a listener without a hostname does not replace the Ingress's certificate", async () => {
    const ca = createCertificate({ subjectCN: "ingress-hosts CA", isCA: true });
    const own = createCertificate({ subjectCN: "secure.example", sans: ["secure.example"], issuer: { cert: ca.certPem, key: ca.keyPem } });
    const listener = createCertificate({ subjectCN: "gateway listener", sans: ["secure.example", "tenant.example"], issuer: { cert: ca.certPem, key: ca.keyPem } });
    make("Secret", tlsSecret(WEB, "secure-own", own.certPem, own.keyPem));
    make("Secret", tlsSecret(INFRA, "listener-cert", listener.certPem, listener.keyPem));
    make(
      "Ingress",
      ingress(WEB, "secure-tls", [{ host: "secure.example", paths: [{ path: "/tls-only", service: "secure-backend" }] }], { tls: [{ hosts: ["secure.example"], secretName: "secure-own" }] }),
    );
    apply(`
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: open-tls, namespace: ${INFRA} }
spec:
  gatewayClassName: portico
  listeners:
    - { name: https, port: 443, protocol: HTTPS, tls: { certificateRefs: [{ name: listener-cert }] }, allowedRoutes: { namespaces: { from: All } } }
---
${route(
  "tls-takeover",
  `  parentRefs: [{ name: open-tls, namespace: ${INFRA} }]
  hostnames: [secure.example, tenant.example]
  rules: [{ backendRefs: [{ name: app-backend-v1, port: 8080 }] }]`,
  APP,
).trim()}`);
    const subject = async (name: string) => (await peerCertificate(portico.ports.https, name)).cn;
    // The listener's certificate serves the route hostname no Ingress binds, and the Ingress
    // keeps its own for its host (both bindings are loaded together, once the change is live).
    let seen: [string, string] = ["", ""];
    await eventually(async () => {
      seen = [await subject("tenant.example"), await subject("secure.example")];
      return seen[0] === "gateway listener" && seen[1] !== "Portico Default Certificate";
    }, 10_000);
    expect(seen).toEqual(["gateway listener", "secure.example"]);
    const r = (await (await fetch(`${portico.admin}/debug/explain?host=secure.example&path=/tls-only&scheme=https`)).json()) as ExplainResult;
    expect(r.certificate?.secret).toBe(`${WEB}/secure-own`);
  });
});
