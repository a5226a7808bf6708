// ingress-nginx's extractTLSSecretName (internal/ingress/controller/controller.go) in a
// long-lived Compiler: the second pass (a rule host no spec.tls entry lists takes the first
// entry whose Secret's certificate names it, else createServers' default certificate) follows
// the Secrets and the Ingress as they change, without a full rebuild.
import { describe, expect, test } from "bun:test";
import { Compiler } from "../../src/compile/compile.ts";
import type { CompileResult } from "../../src/compile/types.ts";
import type { Kind, KindObjects } from "../../src/model/kinds.ts";
import type { Ingress, Secret } from "../../src/model/schemas.ts";
import { allRoutes } from "../../src/table/routes.ts";
import { createCertificate } from "../tls/pki.ts";
import { DEFAULT_COMPILE_CONFIG } from "./config.ts";
import { snapshotOf } from "./snapshot.ts";

const named = createCertificate({ subjectCN: "app", sans: ["app.test"] });
const other = createCertificate({ subjectCN: "other", sans: ["other.test"] });

function app(tls: { hosts?: string[]; secretName?: string }[] | undefined): Ingress {
  return {
    metadata: { name: "app", namespace: "shop", creationTimestamp: "2026-01-01T00:00:00Z", resourceVersion: JSON.stringify(tls ?? null) },
    spec: {
      ingressClassName: "portico",
      ...(tls === undefined ? {} : { tls }),
      rules: [{ host: "app.test", http: { paths: [{ path: "/", pathType: "Prefix", backend: { service: { name: "web", port: { number: 80 } } } }] } }],
    },
  } as Ingress;
}
const secret = (pem: { certPem: string; keyPem: string }, rv: string): Secret =>
  ({
    metadata: { name: "app-tls", namespace: "shop", uid: "u", resourceVersion: rv },
    type: "kubernetes.io/tls",
    data: { "tls.crt": Buffer.from(pem.certPem).toString("base64"), "tls.key": Buffer.from(pem.keyPem).toString("base64") },
  }) as Secret;
const objs = (...xs: (Ingress | Secret)[]) => snapshotOf(xs.map((o) => ({ kind: ("spec" in o ? "Ingress" : "Secret") as Kind, object: o as KindObjects[Kind] })));

const view = (r: CompileResult) => ({
  tls: allRoutes(r.table).find((x) => x.host === "app.test")?.tls,
  bound: r.certificates.filter((b) => b.host === "app.test").map((b) => ({ secret: b.secret, ingress: b.ingress, matchedBy: b.matchedBy })),
});

describe("extractTLSSecretName's second pass, incrementally", () => {
  test("a Secret that comes, changes and goes; spec.tls that goes", () => {
    const c = new Compiler(DEFAULT_COMPILE_CONFIG);
    const hostless = app([{ secretName: "app-tls" }]);
    // No Secret yet: extractTLSSecretName returns "", createServers serves the default certificate.
    const first = c.compile(objs(hostless));
    expect(view(first)).toEqual({ tls: true, bound: [{ secret: null, ingress: "shop/app", matchedBy: "none" }] });
    expect(first.diagnostics.filter((d) => d.reason === "SecretNotFound").map((d) => d.message)).toEqual([
      "TLS Secret shop/app-tls not found; the rule hosts no spec.tls entry lists get the default certificate",
    ]);
    // The Secret's certificate names app.test: it is served.
    expect(view(c.compile(objs(hostless, secret(named, "1"))))).toEqual({ tls: true, bound: [{ secret: "shop/app-tls", ingress: "shop/app", matchedBy: "certificate" }] });
    // Rotated to a certificate that does not name it: the default again, still a TLS host.
    expect(view(c.compile(objs(hostless, secret(other, "2"))))).toEqual({ tls: true, bound: [{ secret: null, ingress: "shop/app", matchedBy: "none" }] });
    // Listed: the first pass, whatever the certificate says (tls/sni.ts then checks the names).
    expect(view(c.compile(objs(app([{ hosts: ["app.test"], secretName: "app-tls" }]), secret(other, "2"))))).toEqual({
      tls: true,
      bound: [{ secret: "shop/app-tls", ingress: "shop/app", matchedBy: undefined }],
    });
    // No spec.tls: no certificate of its own and no HTTPS redirect.
    expect(view(c.compile(objs(app(undefined), secret(named, "1"))))).toEqual({ tls: false, bound: [] });
  });
});
