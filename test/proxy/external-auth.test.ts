// External authentication (auth-url and its family) through a real proxy, the route options
// made by the real annotation parser, a real auth service and a real backend on 127.0.0.1,
// both raw sockets that log every byte they receive. Expectations come from ingress-nginx at
// dbb11b92: the auth location of rootfs/etc/nginx/template/nginx.tmpl, buildAuthSignURL and
// buildAuthResponseHeaders in internal/ingress/controller/template/template.go,
// internal/ingress/annotations/authreq/main.go and test/e2e/annotations/auth.go; nginx's
// auth_request for the status mapping. Portico's differences are the README's.
//
// What is real and what is injected: the auth service runs on 127.0.0.1, which the address
// policy (src/proxy/upstream/external.ts) refuses. So most tests inject, as test/proxy/externalname.test.ts
// does, a lookup (the name auth.test.svc → 127.0.0.1) and a check permitting exactly 127.0.0.1:
// the request is then made by the real code to the address the check saw. The policy itself is
// exercised without injection in "the address policy" below: a loopback auth URL gets 500 and
// the auth service sees no connection.
import { afterEach, describe, expect, test } from "bun:test";
import { parseAnnotations } from "../../src/compile/annotations.ts";
import { NGINX_PREFIX } from "../../src/annotations/spec.ts";
import { compile } from "../../src/compile/compile.ts";
import { METADATA_REASON } from "../../src/config/address-policy.ts";
import type { Logger } from "../../src/log/logger.ts";
import { createExternalResolver, forbiddenReason, ownAddresses, type ExternalResolver } from "../../src/proxy/upstream/external.ts";
import { createProxyHandler } from "../../src/proxy/pipeline/handler.ts";
import { startHttpListener } from "../../src/proxy/pipeline/listener.ts";
import { POLICY_KINDS } from "../../src/kinds/registry.ts";
import type { PolicyKind } from "../../src/kinds/types.ts";
import type { AccessRecord } from "../../src/proxy/types.ts";
import { lookup } from "../../src/table/lookup.ts";
import { DEFAULT_COMPILE_CONFIG } from "../compile/config.ts";
import { loadFixture } from "../compile/snapshot.ts";
import { externalAuthWith, makeBackend, makeTable, quietLog, rawRequest, statusLine, testConfig } from "./helpers.ts";
import { eventually } from "../wait.ts";
import { rawBackend, type RawBackend, type RawRequest, headFields } from "./raw.ts";
import * as K from "../../src/kinds/index.ts";

const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

const reply = (status: string, headers: string[] = [], body = "") =>
  `HTTP/1.1 ${status}\r\n${headers.map((h) => `${h}\r\n`).join("")}content-length: ${body.length}\r\n\r\n${body}`;

interface Setup {
  /** The proxy's port. */
  port: number;
  auth: RawBackend;
  be: RawBackend;
  records: AccessRecord[];
  /** No request in the proxy's handler (each one still running counts). */
  idle(): boolean;
  problems: readonly string[];
  send(method: string, path: string, headers?: Record<string, string>, body?: string): Promise<{ raw: string; status: number; headers: Record<string, string[]> }>;
}

/**
 * A proxy whose one route (host app.test unless `host` says otherwise) carries `annotations`
 * (nginx names without the prefix; `AUTH` in a value becomes the auth service's host:port).
 * `inject` false runs the real address policy and resolver.
 */
async function setup(
  annotations: Record<string, string>,
  authReply: (r: RawRequest) => string | null,
  opts: {
    backendReply?: string; inject?: boolean; host?: string | null; path?: string; authPort?: number; authOnHead?: (head: string, sock: import("node:net").Socket) => void;
    /** Replaces the injected resolver (the auth host is then auth.test.svc whatever `inject` says). */
    resolver?: ExternalResolver; log?: Logger;
  } = {},
): Promise<Setup> {
  const auth = await rawBackend(authReply, opts.authOnHead);
  cleanup.push(() => auth.stop());
  const be = await rawBackend(() => opts.backendReply ?? reply("200 OK", ["content-type: text/plain"], "ok"));
  cleanup.push(() => be.stop());
  const authHost = opts.inject === false ? `127.0.0.1:${opts.authPort ?? auth.port}` : `auth.test.svc:${opts.authPort ?? auth.port}`;
  const parsed = parseAnnotations(Object.fromEntries(Object.entries(annotations).map(([k, val]) => [NGINX_PREFIX + k, val.replaceAll("AUTH", authHost).replaceAll("PORT", String(opts.authPort ?? auth.port))])));
  const kinds = new Map<string, PolicyKind>(POLICY_KINDS);
  if (opts.resolver !== undefined) kinds.set(K.EXTERNAL_AUTH.id, externalAuthWith({ resolver: opts.resolver }));
  else if (opts.inject !== false) {
    const resolver = createExternalResolver({
      lookup: async (name) => (name === "auth.test.svc" ? ["127.0.0.1"] : Promise.reject(Object.assign(new Error("ENOTFOUND"), { code: "ENOTFOUND" }))),
      check: (a) => (a === "127.0.0.1" ? null : "not the test address"),
    });
    kinds.set(K.EXTERNAL_AUTH.id, externalAuthWith({ resolver }));
  }
  const host = opts.host === undefined ? "app.test" : opts.host;
  const table = makeTable([{ host, path: opts.path ?? "/", backend: makeBackend([be.port]), options: parsed.options }]);
  const records: AccessRecord[] = [];
  const handler = createProxyHandler({
    config: testConfig(), table: () => table, lookup, log: opts.log ?? quietLog, scheme: "http", policyKinds: kinds,
    hooks: { onRequestDone: (r) => records.push(r) },
  });
  const server = startHttpListener({ hostname: "127.0.0.1", port: 0, handler });
  cleanup.push(() => server.stop(true));
  const send: Setup["send"] = async (method, path, headers = {}, body = "") => {
    const lines = Object.entries({ host: host ?? "app.test", ...headers }).map(([k, val]) => `${k}: ${val}\r\n`).join("");
    const extra = body === "" ? "" : `content-length: ${body.length}\r\n`;
    const raw = await rawRequest(server.port as number, `${method} ${path} HTTP/1.1\r\n${lines}${extra}connection: close\r\n\r\n${body}`, 5_000);
    return { raw, status: statusLine(raw), headers: headFields(raw.slice(0, raw.indexOf("\r\n\r\n"))) };
  };
  return { port: server.port as number, auth, be, records, idle: () => handler.inflight.count === 0, problems: parsed.problems, send };
}

const OK = () => reply("200 OK");

describe("external auth: a request Bun gives up on", () => {
  // Bun 1.4.5 aborts a request when the same read holds another one behind it, and answers
  // neither (docs/bun-upstream-reports.md §1). The pipelining guard keeps such a request from
  // the backend; the auth service is an upstream too, and must not act on it either.
  test("pipelined behind nothing answered: the auth service sees no request the client was not answered", async () => {
    const s = await setup({ "auth-url": "http://AUTH/check" }, OK);
    const raw = await rawRequest(s.port, "GET /a HTTP/1.1\r\nHost: app.test\r\n\r\nGET /b HTTP/1.1\r\nHost: app.test\r\nConnection: close\r\n\r\n", 3_000);
    // The sequence point: Bun handed the handler what it parsed from that read before it
    // closed the connection, and an upstream request is sent before its handler is done. Once
    // the handler is idle, whatever reached the auth service or the backend is there.
    await eventually(() => s.idle() && s.records.length > 0, 5_000, "the handler idle, the first request recorded");
    // Bun 1.4.5 answers neither request, so neither the auth service nor the backend saw one.
    expect(raw.match(/HTTP\/1\.1 \d{3}/g) ?? []).toEqual([]);
    expect(s.auth.requests()).toEqual([]);
    expect(s.be.requests()).toEqual([]);
    // The first request was handled (and left unanswered: the client was gone), the second never.
    expect(s.records.map((r) => [r.path, r.status, r.error, r.upstream])).toEqual([["/a", 499, "ClientClosed", null]]);
  });
});

describe("external auth: what the auth service receives", () => {
  test("the client's headers without body, the template's fields replacing the client's spoofs; then the body reaches the backend", async () => {
    const s = await setup({ "auth-url": "http://AUTH/check?site=1" }, OK);
    const r = await s.send("POST", "/p/./q?a=b", {
      "x-original-url": "http://evil/", "x-original-method": "DELETE", "x-sent-from": "me", "x-auth-request-redirect": "http://evil/",
      "x-original-uri": "/evil", "x-scheme": "https", "x-forwarded-for": "6.6.6.6", "x-real-ip": "6.6.6.6",
      "x-forwarded-proto": "https", "x-forwarded-host": "evil", "forwarded": "for=6.6.6.6", "ssl-client-verify": "SUCCESS",
      "x_original_url": "http://underscore/", cookie: "session=abc", authorization: "Bearer t", "x-custom": "kept",
    }, "hello body");
    expect(r.status).toBe(200);
    const [a] = s.auth.requests();
    expect(s.auth.requests()).toHaveLength(1);
    // GET (an nginx subrequest), the auth URL's path and query, no body and no framing field.
    expect(a!.head.split("\r\n")[0]).toBe("GET /check?site=1 HTTP/1.1");
    expect(a!.body).toBe("");
    const f = headFields(a!.head);
    expect(f["content-length"]).toBeUndefined();
    expect(f["transfer-encoding"]).toBeUndefined();
    expect(f.host).toEqual(["auth.test.svc"]); // authURL.Hostname(): no port
    // $scheme://$http_host$request_uri, with the path Portico forwards (normalised).
    expect(f["x-original-url"]).toEqual(["http://app.test/p/q?a=b"]);
    expect(f["x-original-method"]).toEqual(["POST"]);
    expect(f["x-sent-from"]).toEqual(["nginx-ingress-controller"]);
    expect(f["x-real-ip"]).toEqual(["127.0.0.1"]);
    expect(f["x-forwarded-for"]).toEqual(["127.0.0.1"]);
    expect(f["x-auth-request-redirect"]).toEqual(["/p/q?a=b"]);
    expect(f["x-forwarded-proto"]).toBeUndefined(); // proxy_set_header X-Forwarded-Proto ""
    // Without auth-method the template sets neither; the client's are not passed (a difference).
    expect(f["x-original-uri"]).toBeUndefined();
    expect(f["x-scheme"]).toBeUndefined();
    for (const k of ["x-forwarded-host", "forwarded", "ssl-client-verify", "x_original_url"]) expect(f[k]).toBeUndefined();
    expect(f.cookie).toEqual(["session=abc"]);
    expect(f.authorization).toEqual(["Bearer t"]);
    expect(f["x-custom"]).toEqual(["kept"]);
    // The same X-Request-ID as the backend's request.
    const [b] = s.be.requests();
    expect(f["x-request-id"]).toEqual(headFields(b!.head)["x-request-id"]!);
    expect(b!.head.split("\r\n")[0]).toBe("POST /p/q?a=b HTTP/1.1");
    expect(b!.body).toBe("hello body");
  });

  test("auth-method: that method, still no body, plus X-Original-URI and X-Scheme", async () => {
    const s = await setup({ "auth-url": "http://AUTH/check", "auth-method": "POST", "auth-request-redirect": "https://app.test/after" }, OK);
    expect((await s.send("PUT", "/x?y=1", { "x-original-uri": "/evil" }, "data")).status).toBe(200);
    const [a] = s.auth.requests();
    expect(a!.head.split("\r\n")[0]).toBe("POST /check HTTP/1.1");
    expect(a!.body).toBe("");
    const f = headFields(a!.head);
    expect(f["x-original-uri"]).toEqual(["/x?y=1"]);
    expect(f["x-scheme"]).toEqual(["http"]);
    expect(f["x-original-method"]).toEqual(["PUT"]);
    expect(f["x-auth-request-redirect"]).toEqual(["https://app.test/after"]);
    expect(s.be.requests()[0]!.body).toBe("data");
  });
});

describe("external auth: how the answer is mapped", () => {
  test("2xx passes; auth-response-headers replace the client's values, and one the auth answer lacks is removed", async () => {
    const s = await setup(
      { "auth-url": "http://AUTH/", "auth-response-headers": "X-Auth-User, authorization, X-Missing" },
      () => reply("202 Accepted", ["X-Auth-User: alice", "Authorization: Bearer from-auth"]),
    );
    const r = await s.send("GET", "/", { "x-auth-user": "mallory", authorization: "Basic c3Bvb2Y6eA==", "x-missing": "spoof" });
    expect(r.status).toBe(200);
    const f = headFields(s.be.requests()[0]!.head);
    expect(f["x-auth-user"]).toEqual(["alice"]);
    expect(f.authorization).toEqual(["Bearer from-auth"]);
    expect(f["x-missing"]).toBeUndefined();
  });

  // nginx sends each WWW-Authenticate it relays as a field line of its own (auth_request copies
  // the subrequest's list, ngx_http_auth_request_handler; the proxy module copies each upstream
  // line). Bun 1.4.5 joins them into one line on both sides: fetch's Headers keep one value per
  // name except Set-Cookie, and Bun.serve writes one line per name however the Response's
  // fields were given (docs/bun-upstream-reports.md §12). Pinned as it is: one line, the
  // challenges in order and none lost (RFC 9110 §11.6.1 allows the list form).
  test("two WWW-Authenticate lines, from the auth service's 401 or the backend's, reach the client as one list line (Bun's limit)", async () => {
    const two = ['WWW-Authenticate: Basic realm="a, b"', 'WWW-Authenticate: Bearer realm="c", error="invalid_token"'];
    const joined = ['Basic realm="a, b", Bearer realm="c", error="invalid_token"'];
    const viaAuth = await setup({ "auth-url": "http://AUTH/" }, () => reply("401 Unauthorized", two, "no"));
    const a = await viaAuth.send("GET", "/");
    expect(a.status).toBe(401);
    expect(a.headers["www-authenticate"]).toEqual(joined);
    const viaBackend = await setup({}, () => reply("200 OK"), { backendReply: reply("401 Unauthorized", two, "no") });
    const b = await viaBackend.send("GET", "/");
    expect(b.status).toBe(401);
    expect(b.headers["www-authenticate"]).toEqual(joined);
  });

  test("401 is relayed with the auth service's WWW-Authenticate; 403 is relayed; neither reaches the backend", async () => {
    let status = "401 Unauthorized";
    const s = await setup({ "auth-url": "http://AUTH/" }, () => reply(status, ['WWW-Authenticate: Bearer realm="x"', "X-Secret: no"], "auth body"));
    const a = await s.send("GET", "/");
    expect(a.status).toBe(401);
    expect(a.headers["www-authenticate"]).toEqual(['Bearer realm="x"']);
    expect(a.headers["x-secret"]).toBeUndefined();
    expect(a.raw).not.toContain("auth body");
    status = "403 Forbidden";
    const b = await s.send("GET", "/");
    expect(b.status).toBe(403);
    expect(b.headers["www-authenticate"]).toBeUndefined();
    expect(s.be.requests()).toHaveLength(0);
  });

  for (const [what, answer] of [
    ["302 (a redirect is not a pass)", reply("302 Found", ["Location: http://login/"])],
    ["500", reply("500 Internal Server Error")],
    ["404", reply("404 Not Found")],
    ["100-level garbage", "HTTP/1.1 abc\r\n\r\n"],
  ] as const) {
    test(`an auth service answering ${what} gives 500, the backend sees nothing`, async () => {
      const s = await setup({ "auth-url": "http://AUTH/" }, () => answer);
      const r = await s.send("GET", "/");
      expect(r.status).toBe(500);
      expect(r.headers.location).toBeUndefined();
      expect(s.be.requests()).toHaveLength(0);
      expect(s.records.map((x) => [x.status, x.error])).toEqual([[500, "AuthFailed"]]);
    });
  }

  test("an auth service that hangs: 500 once proxy-read-timeout (1 s) passes, never a pass", async () => {
    const s = await setup({ "auth-url": "http://AUTH/", "proxy-read-timeout": "1" }, () => null);
    const r = await s.send("GET", "/");
    expect(r.status).toBe(500);
    expect(s.auth.requests()).toHaveLength(1);
    expect(s.be.requests()).toHaveLength(0);
    expect(s.records[0]!.error).toBe("AuthFailed");
  });

  test("an auth service that closes the connection, and one that is not listening: 500", async () => {
    const s = await setup({ "auth-url": "http://AUTH/" }, () => null, { authOnHead: (_head, sock) => sock.destroy() });
    expect((await s.send("GET", "/")).status).toBe(500);
    expect(s.auth.used()).toHaveLength(1);
    expect(s.be.requests()).toHaveLength(0);
    const closed = await rawBackend(() => null);
    const port = closed.port;
    await closed.stop();
    const t = await setup({ "auth-url": "http://AUTH/" }, OK, { authPort: port });
    expect((await t.send("GET", "/")).status).toBe(500);
    expect(t.be.requests()).toHaveLength(0);
  });

  test("a name that does not resolve: 500", async () => {
    const s = await setup({ "auth-url": "http://nowhere.invalid/" }, OK);
    expect((await s.send("GET", "/")).status).toBe(500);
    expect(s.be.requests()).toHaveLength(0);
  });
});

describe("external auth: sign-in redirect", () => {
  test("a 401 becomes a 302 to auth-signin with rd=<scheme>://<Host><escaped URI> (test/e2e/annotations/auth.go)", async () => {
    const s = await setup({ "auth-url": "http://AUTH/", "auth-signin": "http://$host/auth/start" }, () => reply("401 Unauthorized"));
    const r = await s.send("GET", "/?a=b&c=d");
    expect(r.status).toBe(302);
    expect(r.headers.location).toEqual(["http://app.test/auth/start?rd=http://app.test%2F%3Fa%3Db%26c%3Dd"]);
    expect(s.be.requests()).toHaveLength(0);
  });

  test("auth-signin-redirect-param renames rd; a URL with a query gets &", async () => {
    const s = await setup(
      { "auth-url": "http://AUTH/", "auth-signin": "http://$host/auth/start?x=1", "auth-signin-redirect-param": "orig" },
      () => reply("401 Unauthorized"),
    );
    expect((await s.send("GET", "/?a=b&c=d")).headers.location).toEqual(["http://app.test/auth/start?x=1&orig=http://app.test%2F%3Fa%3Db%26c%3Dd"]);
  });

  test("oauth2-proxy's documented annotations: rd=$escaped_request_uri is kept as written", async () => {
    const s = await setup(
      { "auth-url": "http://AUTH/oauth2/auth", "auth-signin": "https://$host/oauth2/start?rd=$escaped_request_uri" },
      () => reply("401 Unauthorized", ["Set-Cookie: _oauth2_proxy_csrf=x; Path=/"]),
    );
    const r = await s.send("GET", "/dash board/?q=a b".replaceAll(" ", "%20"));
    expect(r.status).toBe(302);
    expect(r.headers.location).toEqual(["https://app.test/oauth2/start?rd=%2Fdash%2520board%2F%3Fq%3Da%2520b"]);
    // add_header Set-Cookie $auth_cookie in the sign-in location: 302 is one of its statuses.
    expect(r.headers["set-cookie"]).toEqual(["_oauth2_proxy_csrf=x; Path=/"]);
  });

  test("an auth-signin with a variable Portico does not evaluate is ignored with a diagnostic: the 401 is relayed", async () => {
    const s = await setup({ "auth-url": "http://AUTH/", "auth-signin": "https://$host/start?u=$remote_user" }, () => reply("401 Unauthorized"));
    expect(s.problems.join("\n")).toContain("the variable $remote_user is not supported");
    expect((await s.send("GET", "/")).status).toBe(401);
  });
});

describe("external auth: cookies from the auth answer", () => {
  const withCookie = () => reply("200 OK", ["Set-Cookie: alma=armud; Path=/", "Set-Cookie: second=2"]);

  test("on a 200 from the backend; not on the backend's 503 unless auth-always-set-cookie (test/e2e/annotations/auth.go)", async () => {
    const s = await setup({ "auth-url": "http://AUTH/" }, withCookie, { backendReply: reply("200 OK", ["Set-Cookie: be=1"], "ok") });
    expect((await s.send("GET", "/")).headers["set-cookie"]).toEqual(["be=1", "alma=armud; Path=/", "second=2"]);
    const t = await setup({ "auth-url": "http://AUTH/" }, withCookie, { backendReply: reply("503 Service Unavailable") });
    const r = await t.send("GET", "/");
    expect(r.status).toBe(503);
    expect(r.headers["set-cookie"]).toBeUndefined();
    const u = await setup({ "auth-url": "http://AUTH/", "auth-always-set-cookie": "true" }, withCookie, { backendReply: reply("503 Service Unavailable") });
    const w = await u.send("GET", "/");
    expect(w.status).toBe(503);
    expect(w.headers["set-cookie"]).toEqual(["alma=armud; Path=/", "second=2"]);
  });
});

describe("external auth: cache", () => {
  test("within auth-cache-duration a second request with the same key does not reach the auth service; another key does", async () => {
    const s = await setup(
      { "auth-url": "http://AUTH/", "auth-cache-key": "$http_authorization", "auth-cache-duration": "200 30m", "auth-response-headers": "X-User" },
      (req) => reply("200 OK", [`X-User: ${headFields(req.head).authorization?.[0] ?? "none"}`]),
    );
    for (let i = 0; i < 2; i++) expect((await s.send("GET", "/", { authorization: "Bearer one" })).status).toBe(200);
    expect(s.auth.requests()).toHaveLength(1);
    expect((await s.send("GET", "/", { authorization: "Bearer two" })).status).toBe(200);
    expect(s.auth.requests()).toHaveLength(2);
    // The cached answer's copied fields are the ones of that key.
    expect(s.be.requests().map((r) => headFields(r.head)["x-user"]![0])).toEqual(["Bearer one", "Bearer one", "Bearer two"]);
  });

  test("statuses not listed, answers that set a cookie or say no-store, and a key Portico cannot evaluate are not cached", async () => {
    const s = await setup({ "auth-url": "http://AUTH/", "auth-cache-key": "fixed", "auth-cache-duration": "200 30m" }, () => reply("401 Unauthorized"));
    await s.send("GET", "/");
    await s.send("GET", "/");
    expect(s.auth.requests()).toHaveLength(2);
    const t = await setup({ "auth-url": "http://AUTH/", "auth-cache-key": "fixed" }, () => reply("200 OK", ["Set-Cookie: a=1"]));
    await t.send("GET", "/");
    await t.send("GET", "/");
    expect(t.auth.requests()).toHaveLength(2);
    const u = await setup({ "auth-url": "http://AUTH/", "auth-cache-key": "$ssl_client_s_dn" }, OK);
    expect(u.problems.join("\n")).toContain("caching is off");
    await u.send("GET", "/");
    await u.send("GET", "/");
    expect(u.auth.requests()).toHaveLength(2);
  });
});

describe("external auth: refused configurations (fail closed, 503, nothing contacted)", () => {
  for (const [what, ann] of [
    ["an invalid auth-cache-duration", { "auth-cache-duration": "200 soon" }],
    ["an auth-cache-duration nginx would refuse", { "auth-cache-duration": "200 1h 30m" }],
    ["an invalid auth-request-redirect", { "auth-request-redirect": "http://x/<script>" }],
    ["an invalid auth-always-set-cookie", { "auth-always-set-cookie": "yes" }],
    ["an invalid auth-method", { "auth-method": "get" }],
    ["an invalid auth-response-headers", { "auth-response-headers": "X-A, X:B" }],
    ["auth-proxy-set-headers with characters ingress-nginx's validator refuses", { "auth-proxy-set-headers": "ns/auth@headers" }],
    ["an auth-url without host", { "auth-url": "http:///check" }],
    ["an auth-url with another scheme", { "auth-url": "ftp://AUTH/" }],
    ["an auth-url with a variable other than $host", { "auth-url": "http://AUTH/$request_uri" }],
    ["an auth-url with a character ingress-nginx refuses", { "auth-url": "http://AUTH/a%2e" }],
  ] as const) {
    test(`${what}: every request 503 with a diagnostic`, async () => {
      const s = await setup({ "auth-url": "http://AUTH/", ...ann }, OK);
      expect(s.problems.length).toBeGreaterThan(0);
      const r = await s.send("GET", "/");
      expect(r.status).toBe(503);
      expect(s.records.map((x) => x.status)).toEqual([503]);
      expect(r.raw).toEndWith("service unavailable\n");
      expect(s.auth.used()).toHaveLength(0);
      expect(s.be.requests()).toHaveLength(0);
    });
  }
});

/** Every metadata address outside link-local, and the IPv4 ones in their IPv6 spellings. */
const METADATA_FORMS = [
  "fd00:ec2::254", "fd00:ec2::23", "fd20:ce::254", "fd00:42::42",
  "100.100.100.200", "::ffff:100.100.100.200", "::ffff:6464:64c8", "::100.100.100.200", "64:ff9b::6464:64c8",
  "192.0.0.192", "::ffff:192.0.0.192", "64:ff9b::c000:c0",
  "168.63.129.16", "::ffff:a83f:8110", "64:ff9b::a83f:8110",
] as const;

describe("external auth: the address policy (no injection)", () => {
  test("an auth-url on a literal loopback address or localhost: a diagnostic naming it and why, 503, never connected to", async () => {
    for (const [url, address] of [
      ["http://AUTH/", "127.0.0.1"],
      ["http://localhost:PORT/", "localhost"],
      ["http://127.1:PORT/", "127.0.0.1"], // WHATWG URL reads 127.1 as 127.0.0.1, as the data plane would
      ["http://app.localhost:PORT/", "app.localhost"], // RFC 6761 §6.3
    ] as const) {
      const s = await setup({ "auth-url": url }, OK, { inject: false });
      expect(s.problems).toEqual([expect.stringContaining(`the auth service's address ${address} is refused (loopback): Portico never connects to it; every request of the route answers 503`)]);
      expect((await s.send("GET", "/")).status).toBe(503);
      expect(s.auth.conns).toHaveLength(0);
      expect(s.be.requests()).toHaveLength(0);
    }
  });

  test("cloud metadata addresses and names in auth-url are refused when the Ingress is read", async () => {
    for (const [url, address] of [
      // (An IPv6 literal never gets this far: ingress-nginx's URL validator refuses `[`, so
      // such an auth-url is already a 503; IPv6 forms are reached through DNS, below.)
      ["http://100.100.100.200/latest/meta-data/", "100.100.100.200"], // Alibaba Cloud
      ["http://1684301000/", "100.100.100.200"], // the same as one number, as WHATWG URL reads it
      ["http://192.0.0.192/", "192.0.0.192"], // Oracle Cloud
      ["http://168.63.129.16/", "168.63.129.16"], // Azure WireServer
      ["http://metadata.google.internal/computeMetadata/v1/", "metadata.google.internal"],
      ["http://metadata.tencentyun.com/", "metadata.tencentyun.com"],
    ] as const) {
      const s = await setup({ "auth-url": url }, OK, { inject: false });
      expect({ url, problems: s.problems }).toEqual({ url, problems: [expect.stringContaining(`the auth service's address ${address} is refused (${METADATA_REASON})`)] });
      expect((await s.send("GET", "/")).status).toBe(503);
      expect(s.be.requests()).toHaveLength(0);
    }
    // Link-local ones (169.254.169.254: AWS, Azure, GCP...) are refused as link-local.
    const ll = await setup({ "auth-url": "http://169.254.169.254/" }, OK, { inject: false });
    expect(ll.problems).toEqual([expect.stringContaining("169.254.169.254 is refused (link-local)")]);
  });

  test("the refused auth-url is an InvalidAnnotation diagnostic on the Ingress (what becomes its Event)", () => {
    const fx = loadFixture(`
kind: Service
apiVersion: v1
metadata: { name: web, namespace: shop }
spec: { ports: [{ name: http, port: 80 }] }
---
kind: Ingress
apiVersion: networking.k8s.io/v1
metadata: { name: app, namespace: shop, annotations: { nginx.ingress.kubernetes.io/auth-url: "http://100.100.100.200/latest/meta-data/" } }
spec:
  ingressClassName: portico
  rules: [{ host: app.test, http: { paths: [{ path: /, pathType: Prefix, backend: { service: { name: web, port: { name: http } } } }] } }]
`);
    const d = compile(fx.snapshot, DEFAULT_COMPILE_CONFIG).diagnostics.filter((x) => x.reason === "InvalidAnnotation");
    expect(d).toEqual([
      expect.objectContaining({
        kind: "Ingress", namespace: "shop", name: "app",
        message: expect.stringContaining(`the auth service's address 100.100.100.200 is refused (${METADATA_REASON})`),
      }),
    ]);
  });

  test("a name that resolves only to refused addresses: 500, never connected to, logged once per route and address", async () => {
    const warned: { msg: string; fields: Record<string, unknown> }[] = [];
    const log: Logger = { ...quietLog, warn: (msg: string, fields?: Record<string, unknown>) => void warned.push({ msg, fields: fields ?? {} }) } as Logger;
    const seen: [string, string | null][] = [];
    const resolver = createExternalResolver({
      lookup: async (name) => (name === "auth.test.svc" ? [...METADATA_FORMS] : Promise.reject(Object.assign(new Error("ENOTFOUND"), { code: "ENOTFOUND" }))),
      // The real policy decides; a permitted address is still not connected to (loopback-only test).
      check: (a) => {
        const why = forbiddenReason(a, ownAddresses());
        seen.push([a, why]);
        return why ?? "test: only loopback is connected to";
      },
    });
    const s = await setup({ "auth-url": "http://AUTH/check" }, OK, { resolver, log });
    expect(s.problems).toEqual([]); // a name: only the lookup can tell
    for (let i = 0; i < 3; i++) expect((await s.send("GET", "/")).status).toBe(500);
    expect(s.records.map((r) => r.error)).toEqual(["AuthFailed", "AuthFailed", "AuthFailed"]);
    expect(seen.slice(0, METADATA_FORMS.length)).toEqual(METADATA_FORMS.map((a) => [a, METADATA_REASON]));
    expect(warned.map((w) => [w.fields.ingress, w.fields.address, w.fields.reason])).toEqual(METADATA_FORMS.map((a) => ["default/ing", a, METADATA_REASON]));
    expect(warned[0]!.msg).toContain("refused");
    expect(s.auth.conns).toHaveLength(0);
    expect(s.be.requests()).toHaveLength(0);
  });

  test("$host in auth-url on a host-less rule: 500, the client may not choose the auth server", async () => {
    const s = await setup({ "auth-url": "http://$host/check" }, OK, { host: null });
    expect((await s.send("GET", "/", { host: "auth.test.svc" })).status).toBe(500);
    expect(s.auth.conns).toHaveLength(0);
    expect(s.be.requests()).toHaveLength(0);
  });
});

describe("external auth: no-auth-locations", () => {
  test("a rule path under /.well-known/acme-challenge is not authenticated (ingress-nginx's no-auth-locations default)", async () => {
    const s = await setup({ "auth-url": "http://AUTH/" }, () => reply("401 Unauthorized"), { path: "/.well-known/acme-challenge" });
    expect((await s.send("GET", "/.well-known/acme-challenge/token")).status).toBe(200);
    expect(s.auth.used()).toHaveLength(0);
    const t = await setup({ "auth-url": "http://AUTH/" }, () => reply("401 Unauthorized"));
    expect((await t.send("GET", "/.well-known/acme-challenge/token")).status).toBe(401);
  });
});
