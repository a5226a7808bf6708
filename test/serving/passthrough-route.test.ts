// Which connections --enable-ssl-passthrough passes through, compiled from Ingresses
// (compile marks the routes, serving/passthrough.ts passthroughRoute chooses). ingress-nginx:
// any Ingress of a host setting ssl-passthrough marks the host's server (controller.go
// createServers: `servers[host].SSLPassthrough = true`); the backend is the host's `/`
// location's, and a host whose `/` is the default backend is not passed through
// (getBackendServers: "has no default backend, ignoring SSL Passthrough"); the TCP proxy
// compares the SNI with each passthrough server's name as written (tcp.go TCPProxy.Get), so a
// wildcard host never matches a name under it.
import { describe, expect, test } from "bun:test";
import { compile } from "../../src/compile/compile.ts";
import type { CompileConfig } from "../../src/compile/config.ts";
import type { Kind, KindObjects } from "../../src/model/kinds.ts";
import type { Ingress } from "../../src/model/schemas.ts";
import { passthroughRoute } from "../../src/serving/passthrough.ts";
import { DEFAULT_COMPILE_CONFIG } from "../compile/config.ts";
import { snapshotOf } from "../compile/snapshot.ts";

const PASS = { "nginx.ingress.kubernetes.io/ssl-passthrough": "true" };
const ON: CompileConfig = Object.freeze({ ...DEFAULT_COMPILE_CONFIG, enableSslPassthrough: true });

function ingress(name: string, annotations: Record<string, string>, host: string, paths: [string, string][], created = "2026-01-01T00:00:00Z"): Ingress {
  return {
    metadata: { name, namespace: "argo", annotations, creationTimestamp: created },
    spec: {
      ingressClassName: "portico",
      rules: [{ host, http: { paths: paths.map(([path, svc]) => ({ path, pathType: "Prefix", backend: { service: { name: svc, port: { number: 443 } } } })) } }],
    },
  } as Ingress;
}

const tableOf = (config: CompileConfig, ...ings: Ingress[]) =>
  compile(snapshotOf(ings.map((o) => ({ kind: "Ingress" as Kind, object: o as KindObjects[Kind] }))), config).table;

describe("passthroughRoute", () => {
  test("the annotated host's / route, its backend; another host and an unknown name are terminated", () => {
    const t = tableOf(ON, ingress("argocd", PASS, "argocd.test", [["/", "argocd-server"]]), ingress("web", {}, "web.test", [["/", "web"]]));
    expect(passthroughRoute(t, "argocd.test")?.backend.service).toBe("argocd-server");
    expect(passthroughRoute(t, "web.test")).toBeNull();
    expect(passthroughRoute(t, "unknown.test")).toBeNull();
  });

  test("without --enable-ssl-passthrough nothing is passed through", () => {
    const t = tableOf(DEFAULT_COMPILE_CONFIG, ingress("argocd", PASS, "argocd.test", [["/", "argocd-server"]]));
    expect(passthroughRoute(t, "argocd.test")).toBeNull();
  });

  test("one Ingress of the host sets it: the whole host goes to the / path's backend, whichever Ingress declares /", () => {
    const t = tableOf(ON, ingress("root", {}, "app.test", [["/", "root-svc"]]), ingress("api", PASS, "app.test", [["/api", "api-svc"]], "2026-02-01T00:00:00Z"));
    expect(passthroughRoute(t, "app.test")?.backend.service).toBe("root-svc");
  });

  test("a host without a / path is not passed through (its / would be the default backend)", () => {
    const t = tableOf(ON, ingress("api", PASS, "api.test", [["/api", "api-svc"]]));
    expect(passthroughRoute(t, "api.test")).toBeNull();
  });

  test("a wildcard host never matches a name under it", () => {
    const t = tableOf(ON, ingress("wild", PASS, "*.wild.test", [["/", "svc"]]));
    expect(passthroughRoute(t, "a.wild.test")).toBeNull();
  });

  test("'false' (as ParseBool reads it) passes nothing through", () => {
    const t = tableOf(ON, ingress("argocd", { "nginx.ingress.kubernetes.io/ssl-passthrough": "False" }, "argocd.test", [["/", "argocd-server"]]));
    expect(passthroughRoute(t, "argocd.test")).toBeNull();
  });
});
