// ingress-nginx's `satisfy` annotation through a real proxy: route options made by the real
// annotation parser and compile/access.ts (resolveAccess, then satisfyAny, as compile/plan.ts), a real auth service
// and backend on 127.0.0.1, both raw sockets that log every byte they receive. The first two
// describes port kubernetes/ingress-nginx test/e2e/annotations/satisfy.go (at dbb11b92); the
// rest are nginx's `satisfy any` as ingress-nginx configures it (nginx.tmpl: `deny`/`allow`,
// auth_basic with `proxy_set_header Authorization ""`, auth_request and `error_page 401` for
// auth-signin in one location, with `satisfy any`), per ngx_http_core_access_phase: the first
// check that grants lets the request in, and when none does the answer is 401 if any check
// said 401, else 403.
//
// The auth service runs on 127.0.0.1, which the address policy refuses: as in
// test/proxy/external-auth.test.ts, the name auth.test.svc is resolved to 127.0.0.1 by an
// injected resolver whose check permits exactly that address, handed to the satisfy-any kind
// (which builds the external-auth check with the capabilities it is given).
import { afterEach, describe, expect, test } from "bun:test";
import { parseAnnotations } from "../../src/compile/annotations.ts";
import { resolveAccess, satisfyAny } from "../../src/compile/access.ts";
import { createAuthCache } from "../../src/proxy/policies/caps.ts";
import { createExternalResolver } from "../../src/proxy/upstream/external.ts";
import { createProxyHandler } from "../../src/proxy/pipeline/handler.ts";
import { startHttpListener } from "../../src/proxy/pipeline/listener.ts";
import { POLICY_KINDS } from "../../src/kinds/registry.ts";
import type { PolicyKind } from "../../src/kinds/types.ts";
import type { Ingress, Secret } from "../../src/model/schemas.ts";
import { lookup } from "../../src/table/lookup.ts";
import * as K from "../../src/kinds/index.ts";
import { DEFAULT_COMPILE_CONFIG } from "../compile/config.ts";
import { externalAuthWith, makeBackend, makeTable, quietLog, rawRequest, statusLine, testConfig, withCaps } from "./helpers.ts";
import { rawBackend, type RawBackend, type RawRequest, headFields } from "./raw.ts";

const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

const N = "nginx.ingress.kubernetes.io/";
const reply = (status: string, headers: string[] = []) => `HTTP/1.1 ${status}\r\n${headers.map((h) => `${h}\r\n`).join("")}content-length: 0\r\n\r\n`;
const basic = (user: string, pass: string) => `Basic ${Buffer.from(`${user}:${pass}`).toString("base64")}`;

// satisfy.go buildSecret("uname", "pwd", ...): an htpasswd line under `auth` (bcrypt; cost 4
// rather than the Go test's 14: the same format, a quicker test).
const HASH = await Bun.password.hash("pwd", { algorithm: "bcrypt", cost: 4 });
const SECRET: Secret = {
  metadata: { name: "basic-secret", namespace: "web" }, type: "Opaque",
  data: { auth: Buffer.from(`uname:${HASH}`, "latin1").toString("base64") },
} as unknown as Secret;
const BASIC = { "auth-type": "basic", "auth-secret": "basic-secret", "auth-realm": "test basic auth" };

interface Setup {
  auth: RawBackend;
  be: RawBackend;
  problems: readonly string[];
  unsupported: readonly string[];
  send(path: string, headers?: Record<string, string>): Promise<{ status: number; headers: Record<string, string[]> }>;
}

/** A proxy whose route for `host` carries `annotations` (nginx names without the prefix; AUTH is the auth service). */
async function setup(host: string, annotations: Record<string, string>, authReply: (r: RawRequest) => string = () => reply("200 OK")): Promise<Setup> {
  const auth = await rawBackend(authReply);
  cleanup.push(() => auth.stop());
  const be = await rawBackend();
  cleanup.push(() => be.stop());
  const raw = Object.fromEntries(Object.entries(annotations).map(([k, v]) => [N + k, v.replaceAll("AUTH", `auth.test.svc:${auth.port}`)]));
  const ing = { metadata: { name: host, namespace: "web", annotations: raw }, spec: { rules: [] } } as unknown as Ingress;
  const parsed = parseAnnotations(raw);
  const options = satisfyAny(resolveAccess(parsed, ing, new Map([["web/basic-secret", SECRET]]), DEFAULT_COMPILE_CONFIG).annotations).options;
  const resolver = createExternalResolver({
    lookup: async (name) => (name === "auth.test.svc" ? ["127.0.0.1"] : Promise.reject(Object.assign(new Error("ENOTFOUND"), { code: "ENOTFOUND" }))),
    check: (a) => (a === "127.0.0.1" ? null : "not the test address"),
  });
  const kinds = new Map<string, PolicyKind>(POLICY_KINDS);
  kinds.set(K.EXTERNAL_AUTH.id, externalAuthWith({ resolver }));
  const cache = createAuthCache();
  kinds.set(K.SATISFY_ANY.id, withCaps(K.SATISFY_ANY, { resolve: (u, ms) => resolver.target(u, ms), authCache: () => cache }));
  const table = makeTable([{ host, path: "/", backend: makeBackend([be.port]), options }]);
  const handler = createProxyHandler({ config: testConfig(), table: () => table, lookup, log: quietLog, scheme: "http", policyKinds: kinds });
  const server = startHttpListener({ hostname: "127.0.0.1", port: 0, handler });
  cleanup.push(() => server.stop(true));
  const send: Setup["send"] = async (path, headers = {}) => {
    const lines = Object.entries({ host, ...headers }).map(([k, v]) => `${k}: ${v}\r\n`).join("");
    const out = await rawRequest(server.port as number, `GET ${path} HTTP/1.1\r\n${lines}connection: close\r\n\r\n`, 5_000);
    return { status: statusLine(out), headers: headFields(out.slice(0, out.indexOf("\r\n\r\n"))) };
  };
  return { auth, be, problems: parsed.problems, unsupported: parsed.unsupported, send };
}

describe("satisfy.go", () => {
  test("should configure satisfy directive correctly", async () => {
    for (const value of ["all", "any"]) {
      const s = await setup("satisfy", { satisfy: value });
      // Read, not reported as unsupported or invalid.
      expect(s.unsupported).toEqual([]);
      expect(s.problems).toEqual([]);
      const r = await s.send("/");
      expect(r.status).toBe(200);
      expect(s.be.lines()).toEqual(["GET / HTTP/1.1"]);
      expect(headFields(s.be.heads()[0]!).host).toEqual(["satisfy"]);
    }
  });

  test("should allow multiple auth with satisfy any", async () => {
    // The Go test's auth-url is httpbin's /basic-auth/user/password: 401 without those credentials.
    const s = await setup("auth", {
      ...BASIC,
      "auth-url": "http://AUTH/basic-auth/user/password",
      "auth-signin": "http://$host/auth/start",
      satisfy: "any",
    }, (r) => (headFields(r.head).authorization?.[0] === basic("user", "password") ? reply("200 OK") : reply("401 Unauthorized", ['www-authenticate: Basic realm="Fake Realm"'])));
    const ok = await s.send("/", { authorization: basic("uname", "pwd") });
    expect(ok.status).toBe(200);
    // The password sufficed: no auth subrequest (the phase ended), and the backend gets no
    // Authorization (nginx.tmpl: proxy_set_header Authorization "").
    expect(s.auth.requests()).toEqual([]);
    expect(s.be.lines()).toEqual(["GET / HTTP/1.1"]);
    expect(headFields(s.be.heads()[0]!).authorization).toBeUndefined();

    const denied = await s.send("/?a=b&c=d");
    expect(denied.status).toBe(302);
    expect(denied.headers.location).toEqual([`http://auth/auth/start?rd=http://auth${encodeURIComponent("/?a=b&c=d")}`]);
    expect(s.auth.requests()).toHaveLength(1);
    expect(s.be.lines()).toHaveLength(1);
  });
});

describe("satisfy any: the source ranges or the authentication", () => {
  test("a client inside the allow list needs no password, and its Authorization still does not reach the backend", async () => {
    const s = await setup("in.test", { ...BASIC, "allowlist-source-range": "127.0.0.1/32", satisfy: "any" });
    expect((await s.send("/")).status).toBe(200);
    expect((await s.send("/", { authorization: basic("uname", "wrong") })).status).toBe(200);
    expect(s.be.lines()).toEqual(["GET / HTTP/1.1", "GET / HTTP/1.1"]);
    expect(s.be.heads().map((h) => headFields(h).authorization)).toEqual([undefined, undefined]);
  });

  test("a client outside the allow list gets in with the password; without it, 401 (not 403) with the challenge", async () => {
    const s = await setup("out.test", { ...BASIC, "allowlist-source-range": "10.0.0.0/8", satisfy: "any" });
    expect((await s.send("/", { authorization: basic("uname", "pwd") })).status).toBe(200);
    const r = await s.send("/");
    expect(r.status).toBe(401);
    expect(r.headers["www-authenticate"]).toEqual(['Basic realm="test basic auth"']);
    expect(s.be.lines()).toEqual(["GET / HTTP/1.1"]);
  });

  test("a denied client gets in with the password (a deny list is one check among others); without it, 401", async () => {
    const s = await setup("deny.test", { ...BASIC, "denylist-source-range": "127.0.0.1", satisfy: "any" });
    expect((await s.send("/", { authorization: basic("uname", "pwd") })).status).toBe(200);
    expect((await s.send("/")).status).toBe(401);
    expect(s.be.lines()).toEqual(["GET / HTTP/1.1"]);
  });

  test("the address and the auth service both refusing with 403: 403", async () => {
    const s = await setup("forbid.test", { "allowlist-source-range": "10.0.0.0/8", "auth-url": "http://AUTH/check", satisfy: "any" }, () => reply("403 Forbidden"));
    expect((await s.send("/")).status).toBe(403);
    expect(s.auth.requests()).toHaveLength(1);
    expect(s.be.lines()).toEqual([]);
  });

  test("the password and the auth service both refusing with 401 (no auth-signin): 401 with both challenges, basic's first", async () => {
    const s = await setup("challenges.test", { ...BASIC, "auth-url": "http://AUTH/check", satisfy: "any" }, () => reply("401 Unauthorized", ['www-authenticate: Bearer realm="svc"']));
    const r = await s.send("/");
    expect(r.status).toBe(401);
    // nginx writes two fields; Bun.serve joins the values of one name (other than Set-Cookie)
    // into one field, which RFC 9110 §5.3 makes the same list of challenges.
    expect(r.headers["www-authenticate"]).toEqual(['Basic realm="test basic auth", Bearer realm="svc"']);
    expect(s.be.lines()).toEqual([]);
  });

  test("an auth service that fails is 500 at once, even with satisfy any", async () => {
    const s = await setup("fail.test", { "allowlist-source-range": "10.0.0.0/8", "auth-url": "http://AUTH/check", satisfy: "any" }, () => reply("502 Bad Gateway"));
    expect((await s.send("/")).status).toBe(500);
    expect(s.be.lines()).toEqual([]);
  });

  test("satisfy all, and a value that is neither (nginx's default, all): the address and the password each needed", async () => {
    for (const value of ["all", "some"]) {
      const s = await setup("all.test", { ...BASIC, "allowlist-source-range": "127.0.0.1/32", satisfy: value });
      expect((await s.send("/")).status).toBe(401);
      expect((await s.send("/", { authorization: basic("uname", "pwd") })).status).toBe(200);
    }
  });
});
