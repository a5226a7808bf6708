// Host-wide policies across namespaces. ingress-nginx merges the server-level annotations of
// every Ingress of a host into its one server block, whatever their namespaces
// (controller.go createServers/getBackendServers; nginx.tmpl answers the server's AuthTLSError
// with `return 403` before any location), so a tenant's Ingress for another tenant's host with
// an unusable auth-tls-secret makes all of that host answer 403. Portico does the same by
// default; --host-policy-scope=namespace keeps the host-wide policies of the namespace of the
// host's oldest Ingress only (docs/design.md, "Host-wide policies").
import { describe, expect, test } from "bun:test";
import { compile, Compiler } from "../../src/compile/compile.ts";
import type { CompileConfig } from "../../src/compile/config.ts";
import type { CompileResult } from "../../src/compile/types.ts";
import type { Kind, KindObjects } from "../../src/model/kinds.ts";
import type { Ingress, Secret } from "../../src/model/schemas.ts";
import type { StagePolicy } from "../../src/policy/stages.ts";
import { lookup } from "../../src/table/lookup.ts";
import { allRoutes } from "../../src/table/routes.ts";
import { createCertificate } from "../tls/pki.ts";
import { DEFAULT_COMPILE_CONFIG } from "./config.ts";
import { snapshotOf } from "./snapshot.ts";

const N = "nginx.ingress.kubernetes.io/";
const ca = createCertificate({ subjectCN: "Shop CA", isCA: true });
const SCOPED: CompileConfig = Object.freeze({ ...DEFAULT_COMPILE_CONFIG, hostPolicyScope: "namespace" });

const OLD = "2026-01-01T00:00:00Z";
const NEW = "2026-02-01T00:00:00Z";

function ingress(namespace: string, name: string, created: string, annotations: Record<string, string>, host: string, path: string, tlsHosts?: string[]): Ingress {
  return {
    metadata: { name, namespace, annotations, creationTimestamp: created },
    spec: {
      ingressClassName: "portico",
      ...(tlsHosts === undefined ? {} : { tls: [{ hosts: tlsHosts, secretName: "other-cert" }] }),
      rules: [{ host, http: { paths: [{ path, pathType: "Prefix", backend: { service: { name: "web", port: { number: 80 } } } }] } }],
    },
  } as Ingress;
}

const caSecret = (namespace: string, name: string): Secret =>
  ({ metadata: { name, namespace, resourceVersion: "1" }, type: "Opaque", data: { "ca.crt": Buffer.from(ca.certPem).toString("base64") } }) as Secret;

const objs = (...xs: (Ingress | Secret)[]) => snapshotOf(xs.map((o) => ({ kind: ("spec" in o ? "Ingress" : "Secret") as Kind, object: o as KindObjects[Kind] })));

function certStages(r: CompileResult, host: string, path: string): StagePolicy[] {
  const route = allRoutes(r.table).find((x) => x.host === host && x.path === path);
  if (route === undefined) throw new Error(`no route ${host} ${path}`);
  return (route.options.stages ?? []).filter((s) => s.kind === "client-cert" || s.kind === "certificate-refuse");
}

const ignored = (r: CompileResult) => r.diagnostics.filter((d) => d.reason === "HostPolicyIgnored").map((d) => ({ namespace: d.namespace, name: d.name, message: d.message }));

// The owner's Ingress, and a newer one from another namespace for the same host whose CA
// Secret does not exist.
const owner = ingress("shop", "storefront", OLD, {}, "app.test", "/");
const intruder = ingress("tenant-b", "grab", NEW, { [`${N}auth-tls-secret`]: "missing" }, "app.test", "/b");
const REFUSED: StagePolicy[] = [{ stage: "certificate", kind: "certificate-refuse", params: { status: 403, reason: expect.stringContaining("tenant-b/missing") } }];

describe("--host-policy-scope", () => {
  test("all (the default, ingress-nginx's merge): another namespace's unusable auth-tls-secret makes the owner's paths 403", () => {
    expect(DEFAULT_COMPILE_CONFIG.hostPolicyScope).toBe("all");
    const r = compile(objs(owner, intruder), DEFAULT_COMPILE_CONFIG);
    expect(certStages(r, "app.test", "/")).toEqual(REFUSED);
    expect(certStages(r, "app.test", "/b")).toEqual(REFUSED);
    expect(ignored(r)).toEqual([]);
  });

  test("namespace: the other namespace's auth-tls-* is ignored on that host, with a diagnostic naming the Ingress and the annotation", () => {
    const r = compile(objs(owner, intruder), SCOPED);
    expect(certStages(r, "app.test", "/")).toEqual([]);
    // Its own paths are not covered by its own CA either: the host has no client-certificate policy.
    expect(certStages(r, "app.test", "/b")).toEqual([]);
    expect(ignored(r)).toEqual([
      {
        namespace: "tenant-b",
        name: "grab",
        message:
          "nginx.ingress.kubernetes.io/auth-tls-secret is ignored on host app.test: with --host-policy-scope=namespace only Ingresses in namespace shop, " +
          "that of the host's oldest Ingress shop/storefront (created 2026-01-01T00:00:00Z), set its host-wide policies",
      },
    ]);
    // Its SecretNotFound is still reported for the Ingress itself.
    expect(r.diagnostics.some((d) => d.reason === "SecretNotFound" && d.name === "grab")).toBe(true);
  });

  test("namespace: the owner namespace's policy still covers every path of the host, the other namespace's included", () => {
    const own = ingress("shop", "storefront", OLD, { [`${N}auth-tls-secret`]: "ca" }, "app.test", "/");
    const plain = ingress("tenant-b", "plain", NEW, {}, "app.test", "/b");
    const r = compile(objs(own, plain, caSecret("shop", "ca")), SCOPED);
    for (const path of ["/", "/b"]) expect(certStages(r, "app.test", path)[0]).toMatchObject({ kind: "client-cert", params: { secret: "shop/ca" } });
    expect(ignored(r)).toEqual([]);
  });

  test("namespace: another Ingress of the owner's namespace still sets host-wide policies (the scope is the namespace, not one Ingress)", () => {
    const sibling = ingress("shop", "later", NEW, { [`${N}auth-tls-secret`]: "missing" }, "app.test", "/later");
    const r = compile(objs(owner, sibling), SCOPED);
    expect(certStages(r, "app.test", "/")).toEqual([{ stage: "certificate", kind: "certificate-refuse", params: { status: 403, reason: expect.stringContaining("shop/missing") } }]);
    expect(ignored(r)).toEqual([]);
  });

  test("namespace: the oldest Ingress decides the owner, then namespace/name at equal age", () => {
    const olderIntruder = ingress("tenant-b", "grab", "2025-12-01T00:00:00Z", { [`${N}auth-tls-secret`]: "missing" }, "app.test", "/b");
    expect(certStages(compile(objs(owner, olderIntruder), SCOPED), "app.test", "/")).toEqual(REFUSED);
    // Same age: "shop/…" sorts after "a-team/…", so a-team owns the host.
    const sameAge = ingress("a-team", "grab", OLD, { [`${N}auth-tls-secret`]: "missing" }, "app.test", "/b");
    const r = compile(objs(owner, sameAge), SCOPED);
    expect(certStages(r, "app.test", "/")[0]).toMatchObject({ kind: "certificate-refuse" });
    expect(ignored(r)).toEqual([]);
  });

  test("namespace: app-root, from-to-www-redirect and server-alias of another namespace are ignored; applied without the flag", () => {
    const intruder2 = ingress("tenant-b", "grab", NEW, { [`${N}app-root`]: "/elsewhere", [`${N}from-to-www-redirect`]: "true", [`${N}server-alias`]: "alias.test" }, "app.test", "/b");
    const snapshot = objs(owner, intruder2);

    const merged = compile(snapshot, DEFAULT_COMPILE_CONFIG);
    expect(lookup(merged.table, "app.test", "/")?.route.options.stages?.map((s) => s.kind)).toEqual(["app-root"]);
    expect(lookup(merged.table, "www.app.test", "/")?.route.options.stages?.map((s) => s.kind)).toEqual(["www-redirect"]);
    expect(Object.fromEntries(merged.table.aliasKeys)).toEqual({ "alias.test": "app.test" });

    const scoped = compile(snapshot, SCOPED);
    const root = lookup(scoped.table, "app.test", "/");
    expect(root?.route.ingress).toEqual({ namespace: "shop", name: "storefront" });
    expect(root?.route.options.stages ?? null).toBeNull();
    expect(lookup(scoped.table, "app.test", "/b")?.route.options).toMatchObject({ fromToWwwRedirect: false, stages: null });
    expect(lookup(scoped.table, "www.app.test", "/")).toBeNull();
    expect(scoped.table.aliasKeys.size).toBe(0);
    expect(lookup(scoped.table, "alias.test", "/")).toBeNull();
    expect(ignored(scoped)).toEqual([
      {
        namespace: "tenant-b",
        name: "grab",
        message: expect.stringContaining(
          "nginx.ingress.kubernetes.io/app-root, nginx.ingress.kubernetes.io/from-to-www-redirect, nginx.ingress.kubernetes.io/server-alias are ignored on host app.test:",
        ),
      },
    ]);
  });

  test("namespace: a canary Ingress of another namespace does not set the host's client certificates either", () => {
    const canary = ingress("tenant-b", "canary", NEW, { [`${N}canary`]: "true", [`${N}canary-weight`]: "10", [`${N}auth-tls-secret`]: "missing" }, "app.test", "/");
    expect(certStages(compile(objs(owner, canary), DEFAULT_COMPILE_CONFIG), "app.test", "/")).toEqual(REFUSED);
    const r = compile(objs(owner, canary), SCOPED);
    expect(certStages(r, "app.test", "/")).toEqual([]);
    expect(ignored(r)).toEqual([{ namespace: "tenant-b", name: "canary", message: expect.stringContaining("nginx.ingress.kubernetes.io/auth-tls-secret is ignored on host app.test:") }]);
  });

  test("namespace: another namespace's spec.tls neither binds a certificate for the host nor turns on its HTTPS redirect, by name or by wildcard", () => {
    const tlsIntruder = ingress("tenant-b", "grab", NEW, {}, "app.test", "/b", ["app.test", "*.example.test"]);
    const wild = ingress("shop", "wild", OLD, {}, "shop.example.test", "/");
    const routeTls = (r: CompileResult, host: string, path: string) => allRoutes(r.table).find((x) => x.host === host && x.path === path)?.tls;

    // ingress-nginx: any Ingress's spec.tls gives the server its certificate, and ssl-redirect follows.
    const merged = compile(objs(owner, wild, tlsIntruder), DEFAULT_COMPILE_CONFIG);
    expect([routeTls(merged, "app.test", "/"), routeTls(merged, "shop.example.test", "/")]).toEqual([true, true]);
    expect(merged.certificates.map((b) => b.host)).toEqual(["*.example.test", "app.test"]);

    const scoped = compile(objs(owner, wild, tlsIntruder), SCOPED);
    expect([routeTls(scoped, "app.test", "/"), routeTls(scoped, "app.test", "/b"), routeTls(scoped, "shop.example.test", "/")]).toEqual([false, false, false]);
    // The wildcard names no host of another namespace's rules: its certificate is still served for SNI.
    expect(scoped.certificates.map((b) => b.host)).toEqual(["*.example.test"]);
    expect(ignored(scoped)).toEqual([
      { namespace: "tenant-b", name: "grab", message: expect.stringContaining("spec.tls is ignored on host app.test: with --host-policy-scope=namespace only Ingresses in namespace shop") },
    ]);

    // Ownership moves with the Ingresses in a long-lived Compiler, and coverage with it.
    const c = new Compiler(SCOPED);
    expect(routeTls(c.compile(objs(owner, tlsIntruder)), "app.test", "/b")).toBe(false);
    const alone = c.compile(objs(tlsIntruder));
    expect(routeTls(alone, "app.test", "/b")).toBe(true);
    expect(alone.certificates.map((b) => b.host)).toEqual(["*.example.test", "app.test"]);
    expect(routeTls(c.compile(objs(owner, tlsIntruder)), "app.test", "/")).toBe(false);
  });

  test("a rule host no spec.tls entry lists: the first Ingress with rules and spec.tls decides (createServers), in the owner's namespace when scoped", () => {
    // extractTLSSecretName finds nothing for app.test in `tls: [{secretName: other-cert}]` (no
    // such Secret), so createServers gives the server the default certificate, and the host is
    // a TLS host all the same (lua_ingress.lua redirects a host with a certificate).
    const hostless = (namespace: string, name: string, created: string, path: string): Ingress => {
      const i = ingress(namespace, name, created, {}, "app.test", path);
      return { ...i, spec: { ...i.spec, tls: [{ secretName: "other-cert" }] } } as Ingress;
    };
    const between = hostless("tenant-b", "grab", "2026-01-15T00:00:00Z", "/b");
    const later = hostless("shop", "later", NEW, "/later");
    const routeTls = (r: CompileResult, path: string) => allRoutes(r.table).find((x) => x.host === "app.test" && x.path === path)?.tls;
    const bound = (r: CompileResult) => r.certificates.filter((b) => b.host === "app.test").map((b) => ({ ingress: b.ingress, secret: b.secret, matchedBy: b.matchedBy }));

    const merged = compile(objs(owner, between, later), DEFAULT_COMPILE_CONFIG);
    expect([routeTls(merged, "/"), routeTls(merged, "/b"), routeTls(merged, "/later")]).toEqual([true, true, true]);
    expect(bound(merged)).toEqual([{ ingress: "tenant-b/grab", secret: null, matchedBy: "none" }]);

    const scoped = compile(objs(owner, between, later), SCOPED);
    expect([routeTls(scoped, "/"), routeTls(scoped, "/b"), routeTls(scoped, "/later")]).toEqual([true, true, true]);
    expect(bound(scoped)).toEqual([{ ingress: "shop/later", secret: null, matchedBy: "none" }]);
    // Without an Ingress of the owner's namespace with spec.tls, no TLS from another namespace.
    const alone = compile(objs(owner, between), SCOPED);
    expect([routeTls(alone, "/"), routeTls(alone, "/b")]).toEqual([false, false]);
    expect(bound(alone)).toEqual([]);
  });

  test("namespace: in a long-lived Compiler, ownership follows the oldest Ingress as Ingresses come and go", () => {
    const c = new Compiler(SCOPED);
    expect(certStages(c.compile(objs(owner, intruder)), "app.test", "/b")).toEqual([]);
    // The owner's Ingress goes: tenant-b's is now the host's oldest, and its policy applies.
    const r = c.compile(objs(intruder));
    expect(certStages(r, "app.test", "/b")).toEqual(REFUSED);
    expect(ignored(r)).toEqual([]);
    // It comes back newer than tenant-b's: tenant-b owns the host now.
    const back = ingress("shop", "storefront", "2026-03-01T00:00:00Z", {}, "app.test", "/");
    expect(certStages(c.compile(objs(back, intruder)), "app.test", "/")).toEqual(REFUSED);
    // The fresh compile agrees.
    expect(certStages(compile(objs(back, intruder), SCOPED), "app.test", "/")).toEqual(REFUSED);
  });
});

describe("ssl-ciphers: the host's cipher list (nginx's server-level ssl_ciphers)", () => {
  const AES256 = "ECDHE-RSA-AES256-GCM-SHA384";
  const AES128 = "ECDHE-RSA-AES128-GCM-SHA256";
  const older = ingress("shop", "storefront", OLD, { [`${N}ssl-ciphers`]: AES256 }, "app.test", "/");
  const newer = ingress("tenant-b", "grab", NEW, { [`${N}ssl-ciphers`]: AES128 }, "app.test", "/b");
  const newerFirst = ingress("tenant-b", "other", NEW, { [`${N}ssl-ciphers`]: AES128 }, "other.test", "/");

  test("all: the first Ingress of the host in priority order that sets it decides (controller.go createServers)", () => {
    const r = compile(objs(newer, older), DEFAULT_COMPILE_CONFIG);
    expect([...(r.hostTls ?? [])]).toEqual([["app.test", { ciphers: AES256, ingress: "shop/storefront" }]]);
    // An Ingress without the annotation leaves the list to a later one.
    const r2 = compile(objs(ingress("shop", "storefront", OLD, {}, "app.test", "/"), newer, newerFirst), DEFAULT_COMPILE_CONFIG);
    expect(new Map(r2.hostTls)).toEqual(new Map([["app.test", { ciphers: AES128, ingress: "tenant-b/grab" }], ["other.test", { ciphers: AES128, ingress: "tenant-b/other" }]]));
    expect(ignored(r2)).toEqual([]);
  });

  test("namespace: another namespace's list is ignored with a HostPolicyIgnored; the owner keeps the listener's", () => {
    const r = compile(objs(ingress("shop", "storefront", OLD, {}, "app.test", "/"), newer), SCOPED);
    expect([...(r.hostTls ?? [])]).toEqual([]);
    expect(ignored(r)).toEqual([{ namespace: "tenant-b", name: "grab", message: expect.stringContaining(`${N}ssl-ciphers`) }]);
  });
});
