// Explain's `response.auth` against a real auth service: the global auth of ingress-nginx's
// ConfigMap (global-auth-url, global-auth-response-headers, global-auth-signin, read by the real
// ConfigMap reader, runtime/nginx-settings.ts) and an Ingress's own auth-url with
// auth-response-headers and auth-proxy-set-headers. Each request is explained, then sent to a
// real listener in front of a raw-socket pod and a raw-socket auth service that log what they
// get: the auth service named is the one asked, the fields explain says are copied from its 2xx
// are the ones the pod receives (no other), the fields explain says are set on the auth
// request are there, and a 401 becomes the redirect explain's `location` names.
//
// ingress-nginx (dbb11b92): template.go shouldApplyGlobalAuth and nginx.tmpl's auth location
// (auth_request_set/proxy_set_header for each auth-response-headers name, the
// auth-proxy-set-headers ConfigMap's proxy_set_header lines in the auth location, error_page
// 401 to the signin URL with `rd`); settings/global_external_auth.go.
//
// The auth service runs on 127.0.0.1, which the address policy refuses: as in
// test/proxy/global-auth.test.ts, auth.test.svc is looked up as 127.0.0.1 and a check permits
// exactly that address, so the real code makes the auth request.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { compile, Compiler } from "../../src/compile/compile.ts";
import { explain } from "../../src/compile/explain.ts";
import type { Config } from "../../src/config/types.ts";
import * as K from "../../src/kinds/index.ts";
import { POLICY_KINDS } from "../../src/kinds/registry.ts";
import type { PolicyKind } from "../../src/kinds/types.ts";
import { createProxyHandler } from "../../src/proxy/pipeline/handler.ts";
import { startHttpListener } from "../../src/proxy/pipeline/listener.ts";
import { createExternalResolver } from "../../src/proxy/upstream/external.ts";
import { createNginxSettings } from "../../src/runtime/nginx-settings.ts";
import type { Snapshot } from "../../src/store/types.ts";
import { lookup } from "../../src/table/lookup.ts";
import type { RouteTable } from "../../src/table/types.ts";
import { loadFixture } from "../compile/snapshot.ts";
import { ingress, ingressClass, service, slice, yamlDocs } from "../e2e/objects.ts";
import { externalAuthWith, quietLog, rawRequest, statusLine } from "./helpers.ts";
import { testConfig } from "./helpers.ts";
import { rawBackend, type RawBackend } from "./raw.ts";

const N = "nginx.ingress.kubernetes.io/";
const NS = "par5";
let auth: RawBackend;
let pod: RawBackend;
let config: Config;
let snapshot: Snapshot;
let table: RouteTable;
let listener: ReturnType<typeof startHttpListener>;

/** Request fields by lowercased name. */
function fieldsOf(head: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of head.split("\r\n").slice(1)) {
    const i = line.indexOf(":");
    if (i > 0) out.set(line.slice(0, i).toLowerCase(), line.slice(i + 1).trim());
  }
  return out;
}

beforeAll(async () => {
  // /deny answers 401; anything else 200 with two fields, of which only the listed ones go on.
  auth = await rawBackend((r) =>
    r.line.startsWith("GET /deny")
      ? "HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\n\r\n"
      : "HTTP/1.1 200 OK\r\nx-user: alice\r\nx-other: not-copied\r\ncontent-length: 0\r\n\r\n",
  );
  pod = await rawBackend(() => "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
  const authAt = `auth.test.svc:${auth.port}`;
  const settings = createNginxSettings({
    base: testConfig(), explicit: new Set(), ref: { namespace: "ingress-nginx", name: "ingress-nginx-controller" }, log: quietLog,
    onDiagnostics: () => {}, onCompileConfig: () => {},
  });
  settings.update({
    apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "ingress-nginx", name: "ingress-nginx-controller" },
    data: { "global-auth-url": `http://${authAt}/global`, "global-auth-response-headers": "X-User", "global-auth-signin": "https://login.test/start" },
  });
  config = settings.config;
  const web = (name: string, host: string, annotations: Record<string, string> = {}) =>
    ingress(NS, name, [{ host, paths: [{ path: "/", service: "web" }] }], { annotations: Object.fromEntries(Object.entries(annotations).map(([k, v]) => [`${N}${k}`, v])) });
  snapshot = loadFixture(
    yamlDocs([
      ingressClass(), service(NS, "web"), slice(NS, "web", [pod.port]),
      { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "auth-fields", namespace: NS }, data: { "X-Tenant": "blue" } },
      web("global", "global.test"),
      web("global-deny", "global-deny.test", { "enable-global-auth": "false", "auth-url": `http://${authAt}/deny`, "auth-signin": "https://login.test/own" }),
      web("own", "own.test", { "auth-url": `http://${authAt}/own`, "auth-response-headers": "X-User", "auth-proxy-set-headers": `${NS}/auth-fields` }),
    ]),
  ).snapshot;
  table = compile(snapshot, config).table;
  const resolver = createExternalResolver({
    lookup: async (name) => (name === "auth.test.svc" ? ["127.0.0.1"] : Promise.reject(Object.assign(new Error("ENOTFOUND"), { code: "ENOTFOUND" }))),
    check: (a) => (a === "127.0.0.1" ? null : "not the test address"),
  });
  const kinds = new Map<string, PolicyKind>(POLICY_KINDS);
  kinds.set(K.EXTERNAL_AUTH.id, externalAuthWith({ resolver }));
  const handler = createProxyHandler({ config, table: () => table, lookup, log: quietLog, scheme: "http", policyKinds: kinds });
  listener = startHttpListener({ hostname: "127.0.0.1", port: 0, handler });
});

afterAll(async () => {
  await listener?.stop(true);
  await auth?.stop();
  await pod?.stop();
});

async function send(host: string, path: string) {
  const authBefore = auth.hits.length;
  const podBefore = pod.hits.length;
  const raw = await rawRequest(listener.port as number, `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`, 10_000);
  const head = raw.slice(0, raw.indexOf("\r\n\r\n"));
  return {
    status: statusLine(raw),
    location: /\r\nlocation: ([^\r]*)/i.exec(head)?.[1] ?? null,
    auth: auth.hits.length > authBefore ? auth.hits.at(-1)! : null,
    pod: pod.hits.length > podBefore ? fieldsOf(pod.hits.at(-1)!.head) : null,
  };
}

const ask = (host: string, path = "/x") => explain(snapshot, config, { host, path, scheme: "http", client: "127.0.0.1" }, new Compiler(config)).response;

describe("explain's auth is the auth service the request meets", () => {
  test("the ConfigMap's global-auth-url: asked at its URL; only global-auth-response-headers reach the pod", async () => {
    const r = ask("global.test");
    expect(r.auth).toMatchObject({ source: "global-auth-url", url: `http://auth.test.svc:${auth.port}/global`, ingress: `${NS}/global`, responseHeaders: ["x-user"], requestHeaders: [] });
    const real = await send("global.test", "/x");
    expect(real.status).toBe(200);
    expect(real.auth?.line).toBe(`GET ${new URL(r.auth!.url).pathname} HTTP/1.1`);
    for (const name of r.auth!.responseHeaders) expect(real.pod?.get(name), name).toBe("alice");
    expect(real.pod?.has("x-other")).toBe(false);
  });

  test("an Ingress's own auth-url, its 401 the auth-signin redirect explain names", async () => {
    const r = ask("global-deny.test");
    expect(r.auth).toMatchObject({ source: "auth-url", ingress: `${NS}/global-deny` });
    expect(r.notes).toContain(`${NS}/global-deny has its own auth-url, which replaces global-auth-url`);
    const real = await send("global-deny.test", "/x");
    expect(real.auth?.line).toBe(`GET ${new URL(r.auth!.url).pathname} HTTP/1.1`);
    // $escaped_request_uri and the others are expanded per request; the rest is as explain says.
    expect(real.status).toBe(302);
    expect(real.location).toBe("https://login.test/own?rd=http://global-deny.test%2Fx");
    expect(r.location).toBe("https://login.test/own?rd=$scheme://$http_host$escaped_request_uri");
    expect(real.pod).toBeNull();
  });

  test("auth-proxy-set-headers: the fields explain names are on the auth request; auth-response-headers on the pod's", async () => {
    const r = ask("own.test");
    expect(r.auth).toMatchObject({ source: "auth-url", responseHeaders: ["x-user"], requestHeaders: ["x-tenant"] });
    const real = await send("own.test", "/x");
    expect(real.status).toBe(200);
    const sent = fieldsOf(real.auth!.head);
    for (const name of r.auth!.requestHeaders) expect(sent.get(name.toLowerCase()), name).toBe("blue");
    expect(real.pod?.get("x-user")).toBe("alice");
    expect(real.pod?.has("x-other")).toBe(false);
  });
});
