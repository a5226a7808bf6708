// The auth-cache-key cache shared by the workers of one Portico (src/proxy/shared/auth-cache.ts).
// ingress-nginx caches auth answers in one proxy_cache zone (`proxy_cache_path
// /tmp/nginx/nginx-cache-auth … keys_zone=auth_cache:10m`, and `proxy_cache auth_cache;
// proxy_cache_key "$cache_key";` in the auth location of rootfs/etc/nginx/template/nginx.tmpl),
// which every nginx worker reads and fills: an answer fetched through one worker is served
// from the cache by the others. Here two proxies stand for two workers, each with its own
// auth policy kind, over one table in shared memory. The real process cannot be used: its
// address policy refuses an auth service on loopback (external-auth.test.ts explains).
import { afterEach, describe, expect, test } from "bun:test";
import { parseAnnotations } from "../../src/compile/annotations.ts";
import { NGINX_PREFIX } from "../../src/annotations/spec.ts";
import { createAuthCache, layeredAuthCache } from "../../src/proxy/policies/caps.ts";
import type { AuthAnswer } from "../../src/kinds/types.ts";
import { createExternalResolver } from "../../src/proxy/upstream/external.ts";
import { createProxyHandler } from "../../src/proxy/pipeline/handler.ts";
import { startHttpListener } from "../../src/proxy/pipeline/listener.ts";
import { POLICY_KINDS } from "../../src/kinds/registry.ts";
import type { PolicyKind } from "../../src/kinds/types.ts";
import { createSharedAuthCache, formatSharedAuthCache, SHARED_AUTH_CACHE_BYTES } from "../../src/proxy/shared/auth-cache.ts";
import { lookup } from "../../src/table/lookup.ts";
import { externalAuthWith, makeBackend, makeTable, quietLog, rawRequest, statusLine, testConfig } from "./helpers.ts";
import { rawBackend } from "./raw.ts";
import * as K from "../../src/kinds/index.ts";

const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

function sharedMemory(): Uint8Array {
  const mem = new Uint8Array(SHARED_AUTH_CACHE_BYTES);
  formatSharedAuthCache(mem);
  return mem;
}

const reply = (status: string, headers: string[] = []) => `HTTP/1.1 ${status}\r\n${headers.map((h) => `${h}\r\n`).join("")}content-length: 0\r\n\r\n`;

const answer = (user: string): AuthAnswer => ({ status: 200, copy: { "x-user": user }, wwwAuthenticate: null, setCookies: [] });

describe("two workers, one auth cache", () => {
  test("an answer one worker got is served from the cache by the other; another key is asked; the copied fields are the key's", async () => {
    const auth = await rawBackend((req) => {
      const a = /\r\nauthorization: ([^\r]*)/i.exec(req.head)?.[1] ?? "none";
      return reply("200 OK", [`X-User: ${a}`]);
    });
    cleanup.push(() => auth.stop());
    const be = await rawBackend(() => reply("200 OK"));
    cleanup.push(() => be.stop());
    const parsed = parseAnnotations({
      [`${NGINX_PREFIX}auth-url`]: `http://auth.test.svc:${auth.port}/`,
      [`${NGINX_PREFIX}auth-cache-key`]: "$http_authorization",
      [`${NGINX_PREFIX}auth-cache-duration`]: "200 30m",
      [`${NGINX_PREFIX}auth-response-headers`]: "X-User",
    });
    const resolver = createExternalResolver({
      lookup: async (name) => (name === "auth.test.svc" ? ["127.0.0.1"] : Promise.reject(Object.assign(new Error("ENOTFOUND"), { code: "ENOTFOUND" }))),
      check: (a) => (a === "127.0.0.1" ? null : "not the test address"),
    });
    const mem = sharedMemory();
    const workers = [1, 2].map((pid) => {
      // Each worker builds its own routes from the table, with its own policy kind.
      const kinds = new Map<string, PolicyKind>(POLICY_KINDS);
      kinds.set(K.EXTERNAL_AUTH.id, externalAuthWith({ resolver, cache: createSharedAuthCache(mem, { pid }) }));
      const table = makeTable([{ host: "app.test", backend: makeBackend([be.port]), options: parsed.options }]);
      const handler = createProxyHandler({ config: testConfig(), table: () => table, lookup, log: quietLog, scheme: "http", policyKinds: kinds });
      const server = startHttpListener({ hostname: "127.0.0.1", port: 0, handler });
      cleanup.push(() => server.stop(true));
      return server.port as number;
    });
    const send = async (port: number, token: string) =>
      statusLine(await rawRequest(port, `GET / HTTP/1.1\r\nhost: app.test\r\nauthorization: ${token}\r\nconnection: close\r\n\r\n`, 5_000));
    expect(await send(workers[0]!, "Bearer one")).toBe(200);
    expect(await send(workers[1]!, "Bearer one")).toBe(200);
    expect(await send(workers[1]!, "Bearer one")).toBe(200);
    expect(auth.requests()).toHaveLength(1);
    expect(await send(workers[1]!, "Bearer two")).toBe(200);
    expect(await send(workers[0]!, "Bearer two")).toBe(200);
    expect(auth.requests()).toHaveLength(2);
    const users = be.requests().map((r) => /\r\nx-user: ([^\r]*)/i.exec(r.head)?.[1]);
    expect(users).toEqual(["Bearer one", "Bearer one", "Bearer one", "Bearer two", "Bearer two"]);
  });
});

describe("the shared table", () => {
  test("an answer expires after its duration, in every worker", () => {
    let t = 1_000;
    const mem = sharedMemory();
    const a = createSharedAuthCache(mem, { now: () => t, pid: 1 });
    const b = createSharedAuthCache(mem, { now: () => t, pid: 2 });
    expect(a.set("k", answer("u"), 500)).toBe(true);
    expect(b.get("k")).toEqual(answer("u"));
    t = 1_499;
    expect(b.get("k")?.copy).toEqual({ "x-user": "u" });
    t = 1_500;
    expect(b.get("k")).toBeUndefined();
    expect(a.get("k")).toBeUndefined();
  });

  test("a hit compares the whole key, not only its hash", () => {
    const mem = sharedMemory();
    const c = createSharedAuthCache(mem, { now: () => 0, pid: 1 });
    c.set("Bearer aaaa", answer("alice"), 60_000);
    // Another key under the same hash: rewrite the stored key in place (same length).
    const text = new TextDecoder("latin1").decode(mem);
    const at = text.indexOf('"Bearer aaaa"');
    expect(at).toBeGreaterThan(0);
    mem.set(new TextEncoder().encode('"Bearer bbbb"'), at);
    expect(c.get("Bearer aaaa")).toBeUndefined();
  });

  test("an answer too large for a slot is not shared; layered, the worker keeps it itself", () => {
    const mem = sharedMemory();
    const shared = createSharedAuthCache(mem, { now: () => 0, pid: 1 });
    const big = "x".repeat(4_000);
    expect(shared.set(big, answer("u"), 60_000)).toBe(false);
    expect(shared.get(big)).toBeUndefined();
    const layered = layeredAuthCache(shared, createAuthCache());
    expect(layered.set(big, answer("u"), 60_000)).toBe(true);
    expect(layered.get(big)).toEqual(answer("u"));
    expect(createSharedAuthCache(mem, { now: () => 0, pid: 2 }).get(big)).toBeUndefined();
  });

  test("bounded: past its slots the least recently read answers are forgotten, the latest kept", () => {
    let t = 0;
    const c = createSharedAuthCache(sharedMemory(), { now: () => t, pid: 1 });
    c.set("first", answer("first"), 3_600_000);
    for (let i = 0; i < 40_000; i++) {
      t += 0.01;
      c.set(`key ${i}`, answer(String(i)), 3_600_000);
    }
    expect(c.get("first")).toBeUndefined();
    expect(c.get("key 39999")).toEqual(answer("39999"));
  });
});
