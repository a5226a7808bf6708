// Source ranges and basic authentication with hostile input, through a real proxy (Bun.serve on
// loopback, a dual-stack one for IPv4-mapped peers) to a raw-socket backend that logs the
// header bytes it receives. Route options come from the real annotation parser and
// compile/access.ts, as the compiler builds them.
import { afterEach, describe, expect, spyOn, test } from "bun:test";
import { parseAnnotations } from "../../src/compile/annotations.ts";
import { resolveAccess } from "../../src/compile/access.ts";
import { compile } from "../../src/compile/compile.ts";
import { loadFixture } from "../compile/snapshot.ts";
import { ingress as ingressObject, ingressClass, service, slice, yamlDocs } from "../e2e/objects.ts";
import { DEFAULT_COMPILE_CONFIG } from "../compile/config.ts";
import type { Config } from "../../src/config/types.ts";
import type { Ingress, Secret } from "../../src/model/schemas.ts";
import { CHECKS_PER_ROUTE, PASSWORD_CHECKS, WAITING_PER_ROUTE } from "../../src/kinds/basic-auth.ts";
import * as crypt from "../../src/proxy/crypt/crypt.ts";
import { createProxyHandler } from "../../src/proxy/pipeline/handler.ts";
import { startHttpListener } from "../../src/proxy/pipeline/listener.ts";
import { lookup } from "../../src/table/lookup.ts";
import type { StagePolicy } from "../../src/policy/stages.ts";
import type { RouteOptions, RouteTable } from "../../src/table/types.ts";
import { makeBackend, makeTable, quietLog, rawRequest, startProxy, statusLine, testConfig, wsFirstReply } from "./helpers.ts";
import { namedBackend, rawBackend, wsUpgrade } from "./raw.ts";
import { eventually } from "../wait.ts";

const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

const N = "nginx.ingress.kubernetes.io/";

/** A raw-socket backend that logs each request as received and answers 200 "ok"; stopped after the test. */
async function okBackend() {
  const b = await rawBackend();
  cleanup.push(() => b.stop());
  return b;
}

const ingress = (annotations: Record<string, string>): Ingress =>
  ({ metadata: { name: "app", namespace: "shop", annotations }, spec: { rules: [] } }) as unknown as Ingress;

/** Route options exactly as the compiler makes them from these annotations and Secrets. */
function optionsOf(annotations: Record<string, string>, secrets: Secret[] = [], config = DEFAULT_COMPILE_CONFIG): RouteOptions {
  const map = new Map(secrets.map((s) => [`${s.metadata.namespace}/${s.metadata.name}`, s]));
  return resolveAccess(parseAnnotations(annotations), ingress(annotations), map, config).annotations.options;
}

const usersSecret = (auth: string): Secret =>
  ({ metadata: { name: "users", namespace: "shop" }, type: "Opaque", data: { auth: Buffer.from(auth, "latin1").toString("base64") } }) as Secret;

async function start(options: RouteOptions, config: Partial<Config> = {}, hostname = "127.0.0.1") {
  const be = await okBackend();
  const table: RouteTable = makeTable([{ host: "app.test", backend: makeBackend([be.port]), options }]);
  const handler = createProxyHandler({ config: testConfig(config), table: () => table, lookup, log: quietLog, scheme: "http" });
  const server = startHttpListener({ hostname, port: 0, handler });
  cleanup.push(() => server.stop(true));
  const port = server.port as number;
  const get = async (headers: Record<string, string> = {}, host = "127.0.0.1") => {
    const res = await fetch(`http://${host}:${port}/x`, { headers: { host: "app.test", ...headers } });
    return { status: res.status, headers: res.headers, body: await res.text() };
  };
  return { port, backend: be, get };
}

const basic = (userPass: string | Uint8Array) => `Basic ${Buffer.from(userPass as string, typeof userPass === "string" ? "latin1" : undefined).toString("base64")}`;

describe("source ranges", () => {
  test("allowed and refused peers; a refused request never reaches the backend", async () => {
    const open = await start(optionsOf({ [`${N}allowlist-source-range`]: "127.0.0.0/8" }));
    expect((await open.get()).status).toBe(200);
    const shut = await start(optionsOf({ [`${N}allowlist-source-range`]: "10.0.0.0/8,2001:db8::/32" }));
    const r = await shut.get();
    expect(r.status).toBe(403);
    expect(r.body).toBe("forbidden\n");
    expect(shut.backend.heads()).toHaveLength(0);
  });

  test("a spoofed X-Forwarded-For from a peer that is not a trusted proxy changes nothing", async () => {
    const allow = await start(optionsOf({ [`${N}allowlist-source-range`]: "10.0.0.0/8" }));
    for (const xff of ["10.1.2.3", "10.1.2.3, 10.0.0.1", "127.0.0.1, 10.1.2.3"]) expect((await allow.get({ "x-forwarded-for": xff })).status).toBe(403);
    expect(await allow.get({ "x-real-ip": "10.1.2.3", forwarded: "for=10.1.2.3" })).toMatchObject({ status: 403 });
    const deny = await start(optionsOf({ [`${N}denylist-source-range`]: "127.0.0.1" }));
    expect((await deny.get({ "x-forwarded-for": "10.1.2.3" })).status).toBe(403);
  });

  test("behind a trusted proxy, the right-most untrusted X-Forwarded-For entry is the client", async () => {
    const p = await start(optionsOf({ [`${N}allowlist-source-range`]: "10.0.0.0/8" }), { trustedProxies: ["127.0.0.1/32"] });
    const cases: [string | null, number][] = [
      ["10.1.2.3", 200],
      ["10.1.2.3, 127.0.0.1", 200], // the trusted hop is skipped
      ["11.0.0.1", 403],
      ["10.1.2.3, 11.0.0.1", 403], // the client claims 10.1.2.3; the proxy saw 11.0.0.1
      ["::ffff:10.1.2.3", 200], // IPv4-mapped: checked as IPv4
      ["10.1.2.3:5000", 403], // not an IP literal: refused, never guessed
      ["garbage", 403],
      ["", 403], // no entry: the peer itself, outside the list
      [null, 403],
    ];
    for (const [xff, status] of cases) expect({ xff, status: (await p.get(xff === null ? {} : { "x-forwarded-for": xff })).status }).toEqual({ xff, status });
  });

  test("deny wins over allow (ingress-nginx writes deny before allow): its e2e example", async () => {
    const p = await start(optionsOf({ [`${N}allowlist-source-range`]: "18.0.0.0/8", [`${N}denylist-source-range`]: "18.1.0.0/16" }), { trustedProxies: ["127.0.0.1/32"] });
    expect((await p.get({ "x-forwarded-for": "18.1.0.1" })).status).toBe(403);
    expect((await p.get({ "x-forwarded-for": "18.2.0.1" })).status).toBe(200);
    const same = await start(optionsOf({ [`${N}allowlist-source-range`]: "127.0.0.0/8", [`${N}denylist-source-range`]: "127.0.0.1" }));
    expect((await same.get()).status).toBe(403);
  });

  test("a dual-stack listener: an IPv4 client (::ffff:127.0.0.1) meets IPv4 rules, never IPv6 ones", async () => {
    const cases: [Record<string, string>, number, number][] = [
      // [annotations, status from 127.0.0.1, status from ::1]
      [{ [`${N}allowlist-source-range`]: "127.0.0.1" }, 200, 403],
      [{ [`${N}allowlist-source-range`]: "::1" }, 403, 200],
      [{ [`${N}allowlist-source-range`]: "::/0" }, 403, 200], // BlockList alone would let the IPv4 client in
      [{ [`${N}denylist-source-range`]: "::/0" }, 200, 403],
      [{ [`${N}denylist-source-range`]: "127.0.0.0/8" }, 403, 200],
      [{ [`${N}allowlist-source-range`]: "0.0.0.0/0" }, 200, 403],
    ];
    for (const [ann, v4, v6] of cases) {
      const p = await start(optionsOf(ann), {}, "::");
      expect({ ann, v4: (await p.get({}, "127.0.0.1")).status, v6: (await p.get({}, "[::1]")).status }).toEqual({ ann, v4, v6 });
    }
  });

  test("a bad CIDR, an empty list or an IPv4-mapped range refuses every request (503), never serves open", async () => {
    for (const value of ["10.0.0.0/8,not-a-cidr", "", "::ffff:127.0.0.0/104", "127.0.0.1/33"]) {
      for (const name of ["allowlist-source-range", "denylist-source-range"]) {
        const p = await start(optionsOf({ [`${N}${name}`]: value }));
        const r = await p.get();
        expect({ name, value, status: r.status }).toEqual({ name, value, status: 503 });
        expect(p.backend.heads()).toHaveLength(0);
      }
    }
  });

  test("a refused route refuses a CORS preflight too: ingress-nginx denies the location before answering one", async () => {
    const p = await start(optionsOf({ [`${N}allowlist-source-range`]: "bogus", [`${N}enable-cors`]: "true" }));
    const r = await fetch(`http://127.0.0.1:${p.port}/x`, { method: "OPTIONS", headers: { host: "app.test", origin: "https://a.test", "access-control-request-method": "GET" } });
    expect(r.status).toBe(503);
    const ok = await start(optionsOf({ [`${N}allowlist-source-range`]: "10.0.0.0/8", [`${N}enable-cors`]: "true" }));
    const pre = await fetch(`http://127.0.0.1:${ok.port}/x`, { method: "OPTIONS", headers: { host: "app.test", origin: "https://a.test", "access-control-request-method": "GET" } });
    expect(pre.status).toBe(204); // a preflight never carries credentials: answered before access, as in ingress-nginx
    const refused = await ok.get({ origin: "https://a.test" });
    expect(refused.status).toBe(403);
    expect(refused.headers.get("access-control-allow-origin")).toBe("*"); // on every status, as more_set_headers
  });

  test("the flags apply to Ingresses without their own list; an annotation replaces its own kind only", async () => {
    const flags = { ...DEFAULT_COMPILE_CONFIG, allowlistSourceRange: ["10.0.0.0/8"], denylistSourceRange: ["127.0.0.2"] };
    expect((await (await start(optionsOf({}, [], flags))).get()).status).toBe(403);
    expect((await (await start(optionsOf({ [`${N}allowlist-source-range`]: "127.0.0.0/8" }, [], flags))).get()).status).toBe(200);
    const denyOverride = { ...flags, allowlistSourceRange: [], denylistSourceRange: ["127.0.0.1"] };
    expect((await (await start(optionsOf({}, [], denyOverride))).get()).status).toBe(403);
    expect((await (await start(optionsOf({ [`${N}denylist-source-range`]: "10.0.0.0/8" }, [], denyOverride))).get()).status).toBe(200);
  });
});

describe("basic authentication", () => {
  // alice: "s3cret" (`openssl passwd -apr1 -salt 8sFt66rZ s3cret`); bob: "hunter2" ({SHA},
  // `printf hunter2 | openssl sha1 -binary | base64`); "\xe9" (one latin1 byte) as a user name:
  // "pw"; long: a 1100-byte password, over MAX_CREDENTIALS_BYTES.
  const LONG = "y".repeat(1100);
  const FILE = `alice:$apr1$8sFt66rZ$5f4dG6uJPUDcCdyvCGEji1\nbob:{SHA}87u9ZqY9S/F0eUBXjsPQEDUw4h0=\n\u00e9:{PLAIN}pw\nlong:{PLAIN}${LONG}\n`;
  const auth = (extra: Record<string, string> = {}) =>
    optionsOf({ [`${N}auth-type`]: "basic", [`${N}auth-secret`]: "users", [`${N}auth-realm`]: "Staff only", ...extra }, [usersSecret(FILE)]);

  test("the fixtures are what the tools write", () => {
    expect(crypt.md5Crypt(Buffer.from("s3cret"), "$apr1$8sFt66rZ$", "$apr1$")).toBe("$apr1$8sFt66rZ$5f4dG6uJPUDcCdyvCGEji1");
    expect(crypt.sha1Hash(Buffer.from("hunter2"))).toBe("{SHA}87u9ZqY9S/F0eUBXjsPQEDUw4h0=");
  });

  test("no credentials: 401 with the realm, and the backend never sees the request", async () => {
    const p = await start(auth());
    const r = await p.get();
    expect(r.status).toBe(401);
    expect(r.headers.get("www-authenticate")).toBe('Basic realm="Staff only"');
    expect(r.headers.get("x-request-id")).not.toBeNull();
    expect(r.body).toBe("unauthorized\n");
    expect(p.backend.heads()).toHaveLength(0);
  });

  test("good credentials pass; the Authorization header is not forwarded, other headers are", async () => {
    const p = await start(auth());
    expect((await p.get({ authorization: basic("alice:s3cret"), "x-custom": "kept" })).status).toBe(200);
    expect((await p.get({ authorization: basic("bob:hunter2") })).status).toBe(200);
    expect(p.backend.heads()).toHaveLength(2);
    for (const head of p.backend.heads()) expect(head.toLowerCase()).not.toContain("authorization");
    expect(p.backend.heads()[0]?.toLowerCase()).toContain("x-custom: kept");
    // Without basic auth on the route, Authorization goes through (it is the backend's).
    const plain = await start(optionsOf({}));
    expect((await plain.get({ authorization: "Bearer abc" })).status).toBe(200);
    expect(plain.backend.heads()[0]).toContain("Bearer abc");
  });

  test("hostile and malformed credentials: each a 401, none reaching the backend", async () => {
    const p = await start(auth());
    const cases: [string, string][] = [
      ["wrong password", basic("alice:s3crets")],
      ["another user's password", basic("alice:hunter2")],
      ["unknown user", basic("mallory:s3cret")],
      ["user name differing in case", basic("Alice:s3cret")],
      ["user with a trailing space", basic("alice :s3cret")],
      ["no colon", basic("alice")],
      ["empty user", basic(":s3cret")],
      ["empty password", basic("alice:")],
      ["empty credentials", "Basic "],
      ["bad base64", "Basic !!!notbase64!!!"],
      ["base64 of 4n+1 characters", "Basic YWxpY2U6czNjcmV0Y"],
      ["base64 with a space inside", `Basic ${basic("alice:s3cret").slice(6, 10)} ${basic("alice:s3cret").slice(10)}`],
      ["another scheme", `Bearer ${basic("alice:s3cret").slice(6)}`],
      ["scheme without the space", `Basic${basic("alice:s3cret").slice(6)}`],
      ["a NUL in the password (nginx would check only 's3cret')", basic("alice:s3cret\u0000junk")],
      ["the UTF-8 encoding of a latin1 user name", `Basic ${Buffer.from("\u00e9:pw", "utf8").toString("base64")}`],
      ["a 6 KiB password", basic(`alice:${"x".repeat(6144)}`)],
      ["right, but over the 1 KiB limit (Portico refuses before hashing)", basic(`long:${LONG}`)],
    ];
    for (const [why, header] of cases) {
      const r = await p.get({ authorization: header });
      expect({ why, status: r.status }).toEqual({ why, status: 401 });
      expect(r.headers.get("www-authenticate")).toBe('Basic realm="Staff only"');
    }
    expect(p.backend.heads()).toHaveLength(0);
  });

  test("what nginx accepts: any case of `Basic`, extra spaces, no padding, bytes after `=`, 8-bit user names", async () => {
    const p = await start(auth());
    const b64 = basic("alice:s3cret").slice(6); // "YWxpY2U6czNjcmV0" has no padding to lose
    const padded = basic("bob:hunter2").slice(6); // "Ym9iOmh1bnRlcjI=" has one "="
    for (const header of [`basic ${b64}`, `BASIC ${b64}`, `Basic    ${b64}`, `Basic ${padded.replace("=", "")}`, `Basic ${padded}ignored`, `Basic ${Buffer.from("\u00e9:pw", "latin1").toString("base64")}`]) {
      expect({ header, status: (await p.get({ authorization: header })).status }).toEqual({ header, status: 200 });
    }
  });

  test("raw requests: two Authorization fields, a huge header, a non-UTF-8 value; no crash", async () => {
    const p = await start(auth());
    const req = (fields: string) => rawRequest(p.port, `GET /x HTTP/1.1\r\nHost: app.test\r\n${fields}Connection: close\r\n\r\n`);
    expect(statusLine(await req(`Authorization: ${basic("alice:s3cret")}\r\nAuthorization: ${basic("bob:hunter2")}\r\n`))).toBe(401);
    // 12 KB of header: under Bun's 16 KiB head limit, so it reaches the check and is refused.
    expect(statusLine(await req(`Authorization: Basic ${"QUFB".repeat(3000)}\r\n`))).toBe(401);
    expect(statusLine(await req("Authorization: Basic \xff\xfe\xe9\r\n"))).toBe(401);
    expect(statusLine(await req(`Authorization: ${basic("alice:s3cret")}\r\n`))).toBe(200);
    expect(p.backend.heads()).toHaveLength(1);
  });

  test("a route runs at most 4 costly checks with 16 waiting; the rest get 503 with Retry-After, never the backend", async () => {
    const p = await start(auth());
    const held: ((ok: boolean) => void)[] = [];
    let holding = true;
    const spy = spyOn(crypt, "verifyPassword").mockImplementation(() => (holding ? new Promise<boolean>((r) => held.push(r)) : Promise.resolve(false)));
    cleanup.push(() => spy.mockRestore());
    const peakBefore = PASSWORD_CHECKS.peakPerRoute;
    const busyBefore = PASSWORD_CHECKS.busy;
    // 30 wrong passwords for alice ($apr1$, checked on the hashing threads) at once.
    const answers: { status: number; retryAfter: string | null; body: string }[] = [];
    const all = Array.from({ length: 30 }, async (_, i) => {
      const r = await p.get({ authorization: basic(`alice:guess${i}`) });
      answers.push({ status: r.status, retryAfter: r.headers.get("retry-after"), body: r.body });
    });
    try {
      // Held checks never answer: once 10 have, 4 hold the slots and 16 wait.
      await eventually(() => answers.length === 30 - CHECKS_PER_ROUTE - WAITING_PER_ROUTE);
      expect(held).toHaveLength(CHECKS_PER_ROUTE);
      expect(answers.every((a) => a.status === 503 && a.retryAfter === "1" && a.body === "password checks busy, retry later\n")).toBe(true);
      expect(PASSWORD_CHECKS.busy - busyBefore).toBe(10);
      expect(Math.max(PASSWORD_CHECKS.peakPerRoute, peakBefore)).toBe(CHECKS_PER_ROUTE);
    } finally {
      holding = false;
      for (const release of held) release(false);
      await Promise.allSettled(all);
    }
    expect(answers.filter((a) => a.status === 401)).toHaveLength(CHECKS_PER_ROUTE + WAITING_PER_ROUTE);
    expect(spy).toHaveBeenCalledTimes(CHECKS_PER_ROUTE + WAITING_PER_ROUTE);
    expect(p.backend.heads()).toHaveLength(0);
    // The slots are all given back: the right password gets in.
    spy.mockRestore();
    expect((await p.get({ authorization: basic("alice:s3cret") })).status).toBe(200);
  });

  test("a check no hashing thread can run is a 503 (fail closed), never the backend", async () => {
    const p = await start(auth());
    const spy = spyOn(crypt, "verifyPassword").mockRejectedValue(new Error("hashing thread failed"));
    cleanup.push(() => spy.mockRestore());
    const r = await p.get({ authorization: basic("alice:s3cret") });
    expect(r.status).toBe(503);
    expect(p.backend.heads()).toHaveLength(0);
  });

  test("a successful login is remembered: the same credentials again pass without a check; a wrong password is checked each time", async () => {
    const p = await start(auth());
    const spy = spyOn(crypt, "verifyPassword");
    cleanup.push(() => spy.mockRestore());
    for (let i = 0; i < 3; i++) expect((await p.get({ authorization: basic("alice:s3cret") })).status).toBe(200);
    expect(spy).toHaveBeenCalledTimes(1);
    for (let i = 0; i < 3; i++) expect((await p.get({ authorization: basic("alice:s3crets") })).status).toBe(401);
    expect(spy).toHaveBeenCalledTimes(4);
    expect(p.backend.heads()).toHaveLength(3);
    for (const head of p.backend.heads()) expect(head.toLowerCase()).not.toContain("authorization");
  });

  test("an unknown user costs a verification like a wrong password (against another user's hash)", async () => {
    const p = await start(auth());
    const spy = spyOn(crypt, "verifyPassword");
    cleanup.push(() => spy.mockRestore());
    await p.get({ authorization: basic("mallory:s3cret") });
    await p.get({ authorization: basic("alice:wrong") });
    expect(spy).toHaveBeenCalledTimes(2);
    // Both against alice's apr1 hash: the first user's hash stands in for a missing one.
    expect(spy.mock.calls.map((c) => [c[1], c[2]])).toEqual([
      ["$apr1$8sFt66rZ$5f4dG6uJPUDcCdyvCGEji1", "apr1"],
      ["$apr1$8sFt66rZ$5f4dG6uJPUDcCdyvCGEji1", "apr1"],
    ]);
  });

  test("a missing Secret, a key missing, a cross-namespace Secret, digest: 503 for everyone, good credentials too", async () => {
    const good = { authorization: basic("alice:s3cret") };
    const cases: RouteOptions[] = [
      optionsOf({ [`${N}auth-type`]: "basic", [`${N}auth-secret`]: "users" }, []),
      optionsOf({ [`${N}auth-type`]: "basic", [`${N}auth-secret`]: "users" }, [{ ...usersSecret(FILE), data: { other: "eA==" } } as Secret]),
      optionsOf({ [`${N}auth-type`]: "basic", [`${N}auth-secret`]: "other/users" }, [{ ...usersSecret(FILE), metadata: { name: "users", namespace: "other" } } as Secret]),
      optionsOf({ [`${N}auth-type`]: "digest", [`${N}auth-secret`]: "users" }, [usersSecret(FILE)]),
      optionsOf({ [`${N}auth-secret`]: "users" }, [usersSecret(FILE)]),
    ];
    for (const options of cases) {
      const p = await start(options);
      expect((await p.get(good)).status).toBe(503);
      expect((await p.get()).status).toBe(503);
      expect(p.backend.heads()).toHaveLength(0);
    }
  });

  test("basic-auth policy whose users were never resolved: refused (500), not served", async () => {
    const p = await start(parseAnnotations({ [`${N}auth-type`]: "basic", [`${N}auth-secret`]: "users" }).options);
    expect((await p.get({ authorization: basic("alice:s3cret") })).status).toBe(500);
    expect(p.backend.heads()).toHaveLength(0);
  });

  test("source range first: a refused client gets 403 before being asked for credentials", async () => {
    const p = await start(auth({ [`${N}allowlist-source-range`]: "10.0.0.0/8" }));
    const r = await p.get({ authorization: basic("alice:s3cret") });
    expect(r.status).toBe(403);
    expect(r.headers.get("www-authenticate")).toBeNull();
  });

  test("a rule path under /.well-known/acme-challenge skips it, as ingress-nginx's no-auth-locations default does", async () => {
    const backend = await okBackend();
    const options = auth();
    const table = makeTable([
      { host: "app.test", path: "/.well-known/acme-challenge", backend: makeBackend([backend.port]), options },
      { host: "app.test", path: "/", backend: makeBackend([backend.port]), options },
    ]);
    const handler = createProxyHandler({ config: testConfig(), table: () => table, lookup, log: quietLog, scheme: "http" });
    const server = startHttpListener({ hostname: "127.0.0.1", port: 0, handler });
    cleanup.push(() => server.stop(true));
    const at = (path: string) => fetch(`http://127.0.0.1:${server.port}${path}`, { headers: { host: "app.test", authorization: "Bearer solver" } }).then((r) => r.status);
    expect(await at("/.well-known/acme-challenge/token")).toBe(200);
    // A request path that merely looks like one, routed by "/": still asked for credentials.
    expect(await at("/.well-known/acme-challengeX")).toBe(401);
    expect(await at("/x/.well-known/acme-challenge/token")).toBe(401);
    // Not authenticated there, so its Authorization is the backend's, as in ingress-nginx.
    expect(backend.heads()).toHaveLength(1);
    expect(backend.heads()[0]).toContain("Bearer solver");
  });

  test("a Secret with no usable user: every request gets 401", async () => {
    const p = await start(optionsOf({ [`${N}auth-type`]: "basic", [`${N}auth-secret`]: "users" }, [usersSecret("alice:plaintext\n")]));
    expect((await p.get({ authorization: basic("alice:plaintext") })).status).toBe(401);
  });
});

describe("the WebSocket path", () => {
  test("Authorization is not forwarded on an upgrade either", async () => {
    const seen: string[] = [];
    const upstream = Bun.serve({
      hostname: "127.0.0.1", port: 0,
      fetch(req, server) {
        seen.push(req.headers.get("authorization") ?? "(none)");
        return server.upgrade(req) ? undefined : new Response("no", { status: 400 });
      },
      websocket: { message(ws, m) { ws.send(m); } },
    });
    cleanup.push(() => upstream.stop(true));
    const options = optionsOf({ [`${N}auth-type`]: "basic", [`${N}auth-secret`]: "users" }, [usersSecret("alice:{PLAIN}pw\n")]);
    const table = makeTable([{ host: "app.test", backend: makeBackend([upstream.port as number]), options }]);
    const handler = createProxyHandler({ config: testConfig(), table: () => table, lookup, log: quietLog, scheme: "http" });
    const server = startHttpListener({ hostname: "127.0.0.1", port: 0, handler });
    cleanup.push(() => server.stop(true));
    const echoed = await wsFirstReply(`ws://127.0.0.1:${server.port}/`, { host: "app.test", authorization: basic("alice:pw") });
    expect(echoed).toBe("hi");
    expect(seen).toEqual(["(none)"]);
    const refused = await fetch(`http://127.0.0.1:${server.port}/`, { headers: { host: "app.test", upgrade: "websocket", connection: "upgrade", "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==", "sec-websocket-version": "13" } });
    expect(refused.status).toBe(401);
  });
});

describe("access annotations Portico does not implement", () => {
  // Access control fails closed (docs/design.md, "Annotations and policies"): an access check
  // Portico cannot run is refused with 503. Every access annotation is implemented now
  // (auth-url: test/proxy/external-auth.test.ts; auth-tls-*: test/proxy/client-certs.test.ts);
  // auth-tls-match-cn without the CA it depends on is refused by its family instead.
  test("auth-tls-match-cn without auth-tls-secret: every request refused with 503, the backend never reached", async () => {
    const ann = { [`${N}auth-tls-match-cn`]: "CN=alice" };
    expect(parseAnnotations(ann).problems).toEqual([expect.stringContaining("without auth-tls-secret")]);
    const p = await start(optionsOf(ann));
    const r = await p.get({ authorization: basic("alice:secret") });
    expect(r.status).toBe(503);
    expect(p.backend.heads()).toHaveLength(0);
  });

  test("their tuning annotations alone change nothing (ingress-nginx reads them only with the guard)", async () => {
    const p = await start(optionsOf({ [`${N}auth-signin`]: "https://login.test/start" }));
    // auth-signin without auth-url: ingress-nginx's authreq parser stops at the missing URL.
    // (auth-tls-* without auth-tls-secret is refused instead: test/proxy/client-certs.test.ts.)
    expect((await p.get()).status).toBe(200);
  });
});

describe("a refusal survives the compile step that completes access", () => {
  // compile/access.ts rebuilds the source-range and basic-auth stages from the flags and the
  // Secret; a refusal parse.ts made for another reason must come through it unchanged.
  const users = usersSecret("alice:{PLAIN}secret\n");
  const cases: [string, Record<string, string>][] = [
    ["an access check Portico cannot run, next to basic auth", { [`${N}auth-tls-match-cn`]: "CN=alice", [`${N}auth-type`]: "basic", [`${N}auth-secret`]: "users" }],
    ["an external-auth configuration Portico refuses, under a global allow list", { [`${N}auth-url`]: "http://auth.shop.svc/check", [`${N}auth-cache-duration`]: "soon" }],
  ];
  test.each(cases)("%s: 503, the backend never reached", async (_name, annotations) => {
    const config = { ...DEFAULT_COMPILE_CONFIG, allowlistSourceRange: ["127.0.0.0/8"] };
    const p = await start(optionsOf(annotations, [users], config));
    const r = await p.get({ authorization: basic("alice:secret") });
    expect(r.status).toBe(503);
    expect(p.backend.heads()).toHaveLength(0);
  });
});

describe("headers a backend may take as the proxy's word", () => {
  // ingress-nginx sets ssl-client-verify, -subject-dn, -issuer-dn (and -cert) only on a server
  // with auth-tls-secret (nginx.tmpl) and passes a client's own copies everywhere else, so a
  // backend that trusts them can be told `SUCCESS` by anyone who reaches it through another
  // route. A client's copies are never Portico's word: dropped from every peer, trusted proxies
  // included (a route with client certificates sets them from the verified certificate:
  // test/proxy/client-certs.test.ts).
  const SPOOF = "ssl-client-verify: SUCCESS\r\nSSL-Client-Subject-DN: CN=admin\r\nssl-client-issuer-dn: CN=Corp CA\r\nssl-client-cert: -----BEGIN%20CERTIFICATE-----\r\n";

  for (const [who, config] of [["a client", {}], ["a trusted proxy", { trustedProxies: ["127.0.0.0/8"] }]] as const) {
    test(`ssl-client-* from ${who} never reach the backend, over HTTP and WebSocket`, async () => {
      const be = await namedBackend("be");
      cleanup.push(() => be.stop());
      const proxy = startProxy(makeTable([{ host: "a.test", backend: makeBackend([be.port]) }]), config);
      cleanup.push(() => proxy.stop());
      expect(statusLine(await rawRequest(proxy.port, `GET /x HTTP/1.1\r\nHost: a.test\r\n${SPOOF}Connection: close\r\n\r\n`))).toBe(200);
      const ws = await rawRequest(proxy.port, wsUpgrade("/ws").replace("\r\n\r\n", `\r\n${SPOOF}\r\n`), 1_000);
      expect(statusLine(ws)).toBe(101);
      expect(be.hits.map((h) => h.line)).toEqual(["GET /x HTTP/1.1", "GET /ws HTTP/1.1"]);
      for (const h of be.hits) expect(h.head.toLowerCase()).not.toContain("ssl-client");
    });
  }

  test("X_Forwarded_For (underscores) neither passes nor moves the client address behind a trusted proxy", async () => {
    const p = await start(optionsOf({ [`${N}allowlist-source-range`]: "10.0.0.0/8" }), { trustedProxies: ["127.0.0.1/32"] });
    const r = await rawRequest(p.port, "GET /x HTTP/1.1\r\nHost: app.test\r\nX_Forwarded_For: 10.1.2.3\r\nX_Real_IP: 10.1.2.3\r\nConnection: close\r\n\r\n");
    expect(statusLine(r)).toBe(403);
    expect(p.backend.heads()).toHaveLength(0);
    const open = await start(optionsOf({ [`${N}allowlist-source-range`]: "127.0.0.0/8" }));
    expect(statusLine(await rawRequest(open.port, "GET /x HTTP/1.1\r\nHost: app.test\r\nX_Forwarded_For: 10.1.2.3\r\nConnection: close\r\n\r\n"))).toBe(200);
    expect(open.backend.heads()[0]?.toLowerCase()).not.toContain("x_forwarded_for");
  });
});

describe("access policies whose parameters arrive malformed (a worker's table comes as JSON)", () => {
  // The compiler writes a source-range policy only with at least one non-empty list
  // (annotations/access-stages.ts sourceRangeStage); anything else is not what it checked, so
  // the route must refuse (the runner's 500), never let every client through.
  const cases: [string, StagePolicy["params"]][] = [
    ["no lists at all", {}],
    ["both lists null", { allow: null, deny: null }],
    ["an empty allow list", { allow: [], deny: null }],
    ["empty lists", { allow: [], deny: [] }],
    ["an allow list that is a string", { allow: "10.0.0.0/8", deny: null }],
    ["an allow list holding a bad CIDR", { allow: ["10.0.0.0/33"], deny: null }],
  ];
  test.each(cases)("source-range with %s: 500, the backend never reached", async (_why, params) => {
    const p = await start({ stages: [{ stage: "access", kind: "source-range", params }] } as unknown as RouteOptions);
    expect((await p.get()).status).toBe(500);
    expect(p.backend.heads()).toHaveLength(0);
  });

  test("a refuse policy without an error status: 500, never served", async () => {
    for (const params of [{}, { status: 200 }, { status: "503" }]) {
      const p = await start({ stages: [{ stage: "denied", kind: "refuse", params }] } as unknown as RouteOptions);
      expect({ params, status: (await p.get()).status }).toEqual({ params, status: 500 });
      expect(p.backend.heads()).toHaveLength(0);
    }
  });
});

describe("the /.well-known/acme-challenge exemption reads the rule path as written", () => {
  // ingress-nginx's isLocationInLocationList (template.go) compares the location's path as
  // written (strings.HasPrefix on loc.Path) with each no-auth-locations entry: a rule written
  // `//.well-known/acme-challenge` or `/%2Ewell-known/acme-challenge` is not exempt there,
  // though Portico routes it as `/.well-known/acme-challenge`. Compiled from real objects, so
  // the Route carries what the compiler decided.
  test("only a rule whose written path starts with the entry skips authentication", async () => {
    const backend = await okBackend();
    const users = { apiVersion: "v1", kind: "Secret", type: "Opaque", metadata: { name: "users", namespace: "shop" }, data: { auth: Buffer.from("alice:{PLAIN}pw\n").toString("base64") } };
    const annotations = { [`${N}auth-type`]: "basic", [`${N}auth-secret`]: "users" };
    const docs = yamlDocs([
      ingressClass(),
      service("shop", "web"),
      slice("shop", "web", [backend.port]),
      users,
      ingressObject("shop", "exempt", [{ host: "c.test", paths: [{ path: "/.well-known/acme-challenge", service: "web" }] }], { annotations }),
      ingressObject("shop", "slashes", [{ host: "a.test", paths: [{ path: "//.well-known/acme-challenge", type: "ImplementationSpecific", service: "web" }] }], { annotations }),
      ingressObject("shop", "escaped", [{ host: "b.test", paths: [{ path: "/%2Ewell-known/acme-challenge", service: "web" }] }], { annotations }),
    ]);
    const result = compile(loadFixture(docs).snapshot, DEFAULT_COMPILE_CONFIG);
    const proxy = startProxy(result.table);
    cleanup.push(() => proxy.stop());
    const at = (host: string) => fetch(`${proxy.url}/.well-known/acme-challenge/token`, { headers: { host } }).then((r) => r.status);
    expect({ c: await at("c.test"), a: await at("a.test"), b: await at("b.test") }).toEqual({ c: 200, a: 401, b: 401 });
    expect(backend.heads()).toHaveLength(1);
  });
});

describe("every way a compiled route reaches a backend passes its access control", () => {
  const users = { apiVersion: "v1", kind: "Secret", type: "Opaque", metadata: { name: "users", namespace: "shop" }, data: { auth: Buffer.from("alice:{PLAIN}pw\n").toString("base64") } };
  const protectedBy = { [`${N}auth-type`]: "basic", [`${N}auth-secret`]: "users", [`${N}denylist-source-range`]: "10.0.0.0/8" };

  function serve(objects: object[]) {
    const result = compile(loadFixture(yamlDocs([ingressClass(), users, ...objects] as Parameters<typeof yamlDocs>[0])).snapshot, DEFAULT_COMPILE_CONFIG);
    const proxy = startProxy(result.table);
    cleanup.push(() => proxy.stop());
    return (host: string, headers: Record<string, string> = {}) => fetch(`${proxy.url}/app`, { headers: { host, ...headers } }).then((r) => r.status);
  }

  test("a canary (weight 100, by header, by cookie) takes main's authentication; its own annotations open nothing", async () => {
    const main = await okBackend();
    const canary = await okBackend();
    const get = serve([
      service("shop", "main"), slice("shop", "main", [main.port]), service("shop", "canary"), slice("shop", "canary", [canary.port]),
      ingressObject("shop", "main", [{ host: "a.test", paths: [{ path: "/", service: "main" }] }], { annotations: protectedBy }),
      ingressObject("shop", "canary", [{ host: "a.test", paths: [{ path: "/", service: "canary" }] }], {
        annotations: { [`${N}canary`]: "true", [`${N}canary-weight`]: "100", [`${N}canary-by-header`]: "x-canary", [`${N}canary-by-cookie`]: "x-canary", [`${N}auth-type`]: "basic", [`${N}auth-secret`]: "nobody", [`${N}allowlist-source-range`]: "0.0.0.0/0" },
      }),
    ]);
    const tries: Record<string, string>[] = [{}, { "x-canary": "always" }, { cookie: "x-canary=always" }, { authorization: basic("alice:wrong") }];
    for (const h of tries) {
      expect({ h, status: await get("a.test", h) }).toEqual({ h, status: 401 });
    }
    expect(canary.heads()).toHaveLength(0);
    expect(await get("a.test", { authorization: basic("alice:pw") })).toBe(200);
    expect(canary.heads()).toHaveLength(1);
    expect(canary.heads()[0]!.toLowerCase()).not.toContain("authorization");
    expect(main.heads()).toHaveLength(0);
  });

  test("spec.defaultBackend takes its Ingress's access control, for any host and path that reach it", async () => {
    const be = await okBackend();
    const get = serve([
      service("shop", "web"), slice("shop", "web", [be.port]),
      ingressObject("shop", "catch-all", [], { defaultBackend: "web", annotations: protectedBy }),
    ]);
    expect({ any: await get("anything.test"), ip: await get("127.0.0.1") }).toEqual({ any: 401, ip: 401 });
    expect(be.heads()).toHaveLength(0);
    expect(await get("anything.test", { authorization: basic("alice:pw") })).toBe(200);
    expect(be.heads()).toHaveLength(1);
  });
});

describe("snippets that restricted access under ingress-nginx", () => {
  // Snippets never run in Portico. One that held an access rule where snippets ran (nginx's
  // allow/deny, auth_basic, auth_request, `return 403`) must not leave the route open.
  const refused: [string, string][] = [
    ["configuration-snippet", "deny all;"],
    ["configuration-snippet", "allow 10.0.0.0/8;\ndeny all;"],
    ["configuration-snippet", 'if ($http_x_token != "s3cret") { return 403; }'],
    ["server-snippet", "location /admin { auth_basic \"x\"; auth_basic_user_file /etc/htpasswd; }"],
    ["configuration-snippet", "deny all"], // unreadable (no `;`): an access rule cannot be ruled out
    // Not access directives, but each kept requests from the backend where snippets ran: only
    // a snippet whose every directive is known to be harmless leaves the route served.
    ["configuration-snippet", 'if ($http_x_api_key != "s3cr3t") { return 444; }'],
    ["server-snippet", 'location ~* "^/actuator" { return 404; }'],
    ["configuration-snippet", "location /x { internal; }"],
    ["configuration-snippet", "access_by_lua_file /etc/nginx/lua/gate.lua;"],
    ["server-snippet", "ssl_verify_client on;"],
    ["configuration-snippet", 'if ($cookie_session = "") { return 302 https://login.example.com/?next=$request_uri; }'],
    ["configuration-snippet", "return 410;"],
    ["configuration-snippet", "more_set_headers 'X-A: 1';\nsome_module_we_never_heard_of on;"],
    ["configuration-snippet", 'proxy_set_header X-Remote-User "";'],
    // nginx sent the backend its own X-Remote-User (empty without a login: not passed); served
    // without the snippet, a client's `X-Remote-User: admin` would reach it instead.
    ["configuration-snippet", "proxy_set_header X-Remote-User $remote_user;"],
    ["configuration-snippet", 'more_set_input_headers "X-Client-Verify: $ssl_client_verify";'],
  ];
  test.each(refused)("%s %p: 503, the backend never reached", async (name, text) => {
    const p = await start(optionsOf({ [`${N}${name}`]: text }));
    expect((await p.get()).status).toBe(503);
    expect(p.backend.heads()).toHaveLength(0);
  });

  test("a snippet without an access rule is not executed and does not refuse the route", async () => {
    for (const text of [
      'more_set_headers "X-Frame-Options: DENY";',
      "add_header X-Frame-Options DENY;",
      "proxy_set_header X-Deny no;",
      // Fields Portico writes itself whatever the client sent: the snippet changed nothing there.
      'proxy_set_header Connection ""; proxy_set_header X-Real-IP $remote_addr; proxy_set_header X-Original-Host $host;',
      "proxy_buffering off;\nproxy_read_timeout 120s; # return 403;\nclient_max_body_size 8m;\ngzip on;",
      'more_clear_headers Server; proxy_hide_header X-Powered-By; add_header X-Note "if ($x) { return 403; }";',
    ]) {
      const p = await start(optionsOf({ [`${N}configuration-snippet`]: text }));
      expect({ text, status: (await p.get()).status }).toEqual({ text, status: 200 });
    }
  });
});
