// Client certificates are a property of the host, as ingress-nginx sets ssl_verify_client on the
// whole server block (controller.go getBackendServers: the first Ingress of the host, in
// priority order, with a usable CA; a CA that cannot be used sets AuthTLSError, and nginx.tmpl
// answers 403 for the whole server). Checked through the compiler: every route of the host,
// from every Ingress, carries the winning policy; the default route takes the hostless one.
import { describe, expect, test } from "bun:test";
import { compile, Compiler } from "../../src/compile/compile.ts";
import type { CompileResult } from "../../src/compile/types.ts";
import type { Kind, KindObjects } from "../../src/model/kinds.ts";
import type { Ingress, Secret } from "../../src/model/schemas.ts";
import type { StagePolicy } from "../../src/policy/stages.ts";
import { allRoutes } from "../../src/table/routes.ts";
import { createCertificate } from "../tls/pki.ts";
import { DEFAULT_COMPILE_CONFIG } from "./config.ts";
import { snapshotOf } from "./snapshot.ts";

const N = "nginx.ingress.kubernetes.io/";
const caA = createCertificate({ subjectCN: "CA A", isCA: true });
const caB = createCertificate({ subjectCN: "CA B", isCA: true });

function ingress(name: string, created: string, annotations: Record<string, string>, rules: { host?: string; path: string }[], defaultBackend = false): Ingress {
  const backend = { service: { name: "web", port: { number: 80 } } };
  return {
    metadata: { name, namespace: "shop", annotations, creationTimestamp: created },
    spec: {
      ingressClassName: "portico",
      ...(defaultBackend ? { defaultBackend: backend } : {}),
      rules: rules.map((r) => ({ ...(r.host === undefined ? {} : { host: r.host }), http: { paths: [{ path: r.path, pathType: "Prefix", backend }] } })),
    },
  } as Ingress;
}

const caSecret = (name: string, pem: string): Secret =>
  ({ metadata: { name, namespace: "shop", resourceVersion: "1" }, type: "Opaque", data: { "ca.crt": Buffer.from(pem).toString("base64") } }) as Secret;

const objs = (...xs: (Ingress | Secret)[]) => xs.map((o) => ({ kind: ("spec" in o ? "Ingress" : "Secret") as Kind, object: o as KindObjects[Kind] }));

/** The client-certificate stages (and 403 refusals) of the route for host and path. */
function certStages(r: CompileResult, host: string | null, path: string): StagePolicy[] {
  const route = allRoutes(r.table).find((x) => x.host === host && x.path === path);
  if (route === undefined) throw new Error(`no route ${host} ${path}`);
  return (route.options.stages ?? []).filter((s) => s.kind === "client-cert" || s.kind === "certificate-refuse");
}

const OLD = "2026-01-01T00:00:00Z";
const NEW = "2026-02-01T00:00:00Z";
const tlsA = { [`${N}auth-tls-secret`]: "ca-a" };

describe("host-wide client certificates", () => {
  test("the first Ingress's policy covers another Ingress's paths on the same host, not other hosts", () => {
    const r = compile(
      snapshotOf(objs(
        ingress("first", OLD, tlsA, [{ host: "app.test", path: "/secure" }]),
        ingress("second", NEW, {}, [{ host: "app.test", path: "/open" }, { host: "other.test", path: "/" }]),
        caSecret("ca-a", caA.certPem),
      )),
      DEFAULT_COMPILE_CONFIG,
    );
    const own = certStages(r, "app.test", "/secure");
    expect(own).toHaveLength(1);
    expect(own[0]).toMatchObject({ kind: "client-cert", params: { secret: "shop/ca-a", verify: "on" } });
    // The hole this closes: /open was served without a certificate.
    expect(certStages(r, "app.test", "/open")).toEqual(own);
    expect(certStages(r, "other.test", "/")).toEqual([]);
    const d = r.diagnostics.find((x) => x.reason === "HostClientCertificates");
    expect(d).toMatchObject({ namespace: "shop", name: "second", severity: "warning" });
    expect(d?.message).toContain("shop/first");
  });

  test("the priority order decides, not the order of the objects: the older Ingress's CA wins for both", () => {
    const tlsB = { [`${N}auth-tls-secret`]: "ca-b", [`${N}auth-tls-verify-client`]: "optional" };
    const r = compile(
      snapshotOf(objs(
        ingress("young", NEW, tlsB, [{ host: "app.test", path: "/b" }]),
        ingress("old", OLD, tlsA, [{ host: "app.test", path: "/a" }]),
        caSecret("ca-a", caA.certPem),
        caSecret("ca-b", caB.certPem),
      )),
      DEFAULT_COMPILE_CONFIG,
    );
    for (const path of ["/a", "/b"]) {
      const s = certStages(r, "app.test", path);
      expect(s).toHaveLength(1);
      expect(s[0]?.params).toMatchObject({ secret: "shop/ca-a", verify: "on" });
    }
  });

  test("an Ingress without auth-tls before the one with it does not clear it (nginx keeps looking for a CA)", () => {
    const r = compile(
      snapshotOf(objs(ingress("plain", OLD, {}, [{ host: "app.test", path: "/p" }]), ingress("mtls", NEW, tlsA, [{ host: "app.test", path: "/m" }]), caSecret("ca-a", caA.certPem))),
      DEFAULT_COMPILE_CONFIG,
    );
    expect(certStages(r, "app.test", "/p")[0]?.params).toMatchObject({ secret: "shop/ca-a" });
  });

  test("a CA that cannot be used on any Ingress of the host makes the whole host 403, a usable CA elsewhere or not", () => {
    const r = compile(
      snapshotOf(objs(
        ingress("good", OLD, tlsA, [{ host: "app.test", path: "/good" }]),
        ingress("broken", NEW, { [`${N}auth-tls-secret`]: "missing" }, [{ host: "app.test", path: "/broken" }]),
        ingress("plain", NEW, {}, [{ host: "app.test", path: "/plain" }]),
        caSecret("ca-a", caA.certPem),
      )),
      DEFAULT_COMPILE_CONFIG,
    );
    for (const path of ["/good", "/broken", "/plain"]) {
      const s = certStages(r, "app.test", path);
      expect({ path, s }).toEqual({ path, s: [{ stage: "certificate", kind: "certificate-refuse", params: { status: 403, reason: expect.stringContaining("shop/missing") } }] });
    }
  });

  test("the host's stage is first among the denied stages (nginx answers it at the server level)", () => {
    const r = compile(
      snapshotOf(objs(
        ingress("first", OLD, tlsA, [{ host: "app.test", path: "/a" }]),
        ingress("second", NEW, { [`${N}whitelist-source-range`]: "not-a-cidr" }, [{ host: "app.test", path: "/b" }]),
        caSecret("ca-a", caA.certPem),
      )),
      DEFAULT_COMPILE_CONFIG,
    );
    const route = allRoutes(r.table).find((x) => x.path === "/b");
    expect(route?.options.stages?.map((s) => s.kind)).toEqual(["client-cert", "refuse"]);
  });

  test("hostless rules share one policy, and the default route (nginx's catch-all server) takes it", () => {
    const r = compile(
      snapshotOf(objs(
        ingress("any", OLD, tlsA, [{ path: "/x" }]),
        ingress("fallback", NEW, {}, [{ path: "/y" }], true),
        caSecret("ca-a", caA.certPem),
      )),
      DEFAULT_COMPILE_CONFIG,
    );
    expect(certStages(r, null, "/y")[0]?.params).toMatchObject({ secret: "shop/ca-a" });
    expect(r.table.defaultRoute?.source).toBe("defaultBackend");
    expect((r.table.defaultRoute?.options.stages ?? []).filter((s) => s.kind === "client-cert")[0]?.params).toMatchObject({ secret: "shop/ca-a" });
  });

  test("a CA Secret change reaches every Ingress of the host in a long-lived Compiler", () => {
    const c = new Compiler(DEFAULT_COMPILE_CONFIG);
    const ings = [ingress("first", OLD, tlsA, [{ host: "app.test", path: "/a" }]), ingress("second", NEW, {}, [{ host: "app.test", path: "/b" }])];
    const before = c.compile(snapshotOf(objs(...ings, caSecret("ca-a", caA.certPem))));
    expect(certStages(before, "app.test", "/b")[0]).toMatchObject({ kind: "client-cert", params: { secret: "shop/ca-a", ca: [expect.stringContaining("BEGIN CERTIFICATE")] } });
    const after = c.compile(snapshotOf(objs(...ings)));
    expect(certStages(after, "app.test", "/b")).toEqual([{ stage: "certificate", kind: "certificate-refuse", params: { status: 403, reason: expect.stringContaining("not found") } }]);
  });

  test("no auth-tls anywhere: the routes keep their Ingress's own options object (nothing rebuilt)", () => {
    const r = compile(snapshotOf(objs(ingress("a", OLD, {}, [{ host: "app.test", path: "/" }]))), DEFAULT_COMPILE_CONFIG);
    expect(certStages(r, "app.test", "/")).toEqual([]);
    expect(r.diagnostics.filter((d) => d.reason === "HostClientCertificates")).toEqual([]);
  });
});
