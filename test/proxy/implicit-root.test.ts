// ingress-nginx's implicit "/" location with external authentication and without a default
// backend: the table the real compiler builds, served by the real proxy handler on 127.0.0.1,
// a raw-socket auth service and pod that log every byte. The auth service's name resolves to
// 127.0.0.1 through an injected lookup (as test/proxy/external-auth.test.ts does: the address
// policy refuses loopback). Expectations (kubernetes/ingress-nginx at dbb11b92):
//   CS  internal/ingress/controller/controller.go createServers: every host's location "/"
//       carries locationApplyAnnotations of its first Ingress (ExternalAuth included) and the
//       default upstream, which is ingress-nginx's own 404 server when no
//       --default-backend-service is set;
//   AUTH nginx.tmpl: auth_request, then `error_page 401 = <signin>` (`return 302` to
//       buildAuthSignURL: rd=$scheme://$http_host$escaped_request_uri); test/e2e/annotations/auth.go.
// explain is asked the same requests and must predict the same answers.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { compile } from "../../src/compile/compile.ts";
import type { CompileConfig } from "../../src/compile/config.ts";
import { explain } from "../../src/compile/explain.ts";
import { createExternalResolver } from "../../src/proxy/upstream/external.ts";
import { createProxyHandler } from "../../src/proxy/pipeline/handler.ts";
import { startHttpListener } from "../../src/proxy/pipeline/listener.ts";
import { POLICY_KINDS } from "../../src/kinds/registry.ts";
import type { PolicyKind } from "../../src/kinds/types.ts";
import { lookup } from "../../src/table/lookup.ts";
import type { Snapshot } from "../../src/store/types.ts";
import { DEFAULT_COMPILE_CONFIG } from "../compile/config.ts";
import { loadFixture } from "../compile/snapshot.ts";
import { externalAuthWith, quietLog, rawRequest, statusLine, testConfig } from "./helpers.ts";
import { rawBackend, type RawBackend } from "./raw.ts";
import * as K from "../../src/kinds/index.ts";

let auth: RawBackend;
let pod: RawBackend;
let server: ReturnType<typeof startHttpListener>;
let snapshot: Snapshot;
const config = DEFAULT_COMPILE_CONFIG as CompileConfig;

const yaml = (authPort: number, podPort: number) => `
kind: IngressClass
apiVersion: networking.k8s.io/v1
metadata: { name: portico }
spec: { controller: portico.dev/ingress-controller }
---
kind: Service
apiVersion: v1
metadata: { name: app, namespace: web }
spec: { ports: [{ port: 80 }] }
---
kind: EndpointSlice
apiVersion: discovery.k8s.io/v1
metadata: { name: app-a, namespace: web, labels: { kubernetes.io/service-name: app } }
addressType: IPv4
endpoints: [{ addresses: [127.0.0.1] }]
ports: [{ port: ${podPort} }]
---
kind: Ingress
apiVersion: networking.k8s.io/v1
metadata:
  name: sso
  namespace: web
  annotations:
    nginx.ingress.kubernetes.io/auth-url: http://auth.test.svc:${authPort}/check
    nginx.ingress.kubernetes.io/auth-signin: https://login.example.com/start
spec:
  ingressClassName: portico
  rules:
    - host: sso.test
      http:
        paths:
          - { path: /foo, pathType: Prefix, backend: { service: { name: app, port: { number: 80 } } } }
          - { path: /bar, pathType: Prefix, backend: { service: { name: app, port: { number: 80 } } } }
`;

beforeAll(async () => {
  // The auth service lets a request through only with the header "x-let-in: yes".
  auth = await rawBackend((r) =>
    /\r\nx-let-in: yes/i.test(r.head) ? "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n" : "HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\n\r\n",
  );
  pod = await rawBackend();
  snapshot = loadFixture(yaml(auth.port, pod.port)).snapshot;
  const table = compile(snapshot, config).table;
  const resolver = createExternalResolver({
    lookup: async (name) => (name === "auth.test.svc" ? ["127.0.0.1"] : Promise.reject(Object.assign(new Error("ENOTFOUND"), { code: "ENOTFOUND" }))),
    check: (a) => (a === "127.0.0.1" ? null : "not the test address"),
  });
  const kinds = new Map<string, PolicyKind>(POLICY_KINDS);
  kinds.set(K.EXTERNAL_AUTH.id, externalAuthWith({ resolver }));
  const handler = createProxyHandler({ config: testConfig(), table: () => table, lookup, log: quietLog, scheme: "http", policyKinds: kinds });
  server = startHttpListener({ hostname: "127.0.0.1", port: 0, handler });
});

afterAll(async () => {
  await server?.stop(true);
  await auth?.stop();
  await pod?.stop();
});

async function send(path: string, headers = ""): Promise<{ status: number; location: string | null }> {
  const raw = await rawRequest(server.port as number, `GET ${path} HTTP/1.1\r\nhost: sso.test\r\n${headers}connection: close\r\n\r\n`, 5_000);
  return { status: statusLine(raw), location: /\r\nlocation: ([^\r]*)/i.exec(raw.slice(0, raw.indexOf("\r\n\r\n")))?.[1] ?? null };
}

describe("the implicit / location with auth-url and no default backend", () => {
  test("GET /?a=b: the auth service is asked, its 401 becomes the sign-in 302 [CS; AUTH]", async () => {
    const asked = auth.hits.length;
    expect(await send("/?a=b")).toEqual({ status: 302, location: "https://login.example.com/start?rd=http://sso.test%2F%3Fa%3Db" });
    expect(auth.hits.length).toBe(asked + 1);
    expect(auth.hits.at(-1)?.line).toBe("GET /check HTTP/1.1");
    expect(pod.hits).toHaveLength(0);
  });

  test("let in by the auth service: ingress-nginx's default backend answers 404, the pod sees nothing [CS]", async () => {
    expect(await send("/elsewhere", "x-let-in: yes\r\n")).toEqual({ status: 404, location: null });
    expect(pod.hits).toHaveLength(0);
  });

  test("the Ingress's own paths are proxied once let in", async () => {
    expect(await send("/foo/x", "x-let-in: yes\r\n")).toEqual({ status: 200, location: null });
    expect(pod.hits.at(-1)?.line).toBe("GET /foo/x HTTP/1.1");
  });

  test("explain says the same: the implicit location, the auth service decides, the sign-in URL", () => {
    const r = explain(snapshot, config, { host: "sso.test", path: "/", scheme: "http" });
    expect(r.outcome).toBe("implicit-root");
    expect(r.match).toMatchObject({ source: "implicitRoot", ingress: "web/sso", hostEntry: "sso.test", backend: { id: "(default backend)" } });
    expect(r.response).toMatchObject({ kind: "depends", by: "external-auth", location: "https://login.example.com/start?rd=$scheme://$http_host$escaped_request_uri" });
    expect(r.response.notes.some((n) => n.includes('implicit "/" location runs the policies of web/sso'))).toBe(true);
  });
});
