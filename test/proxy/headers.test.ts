// Header rules: hop-by-hop stripping both ways, X-Forwarded-* from an
// untrusted client replaced, appended for a trusted one, X-Request-ID kept or generated and
// echoed, Set-Cookie lines kept apart, Host preserved.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { makeBackend, makeTable, rawRequest, startProxy, statusLine, type TestProxy } from "./helpers.ts";

let seen: Record<string, string> = {};
const backend = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch(req) {
    seen = {};
    req.headers.forEach((v, k) => { seen[k] = v; });
    const h = new Headers();
    h.append("set-cookie", "a=1; Path=/");
    h.append("set-cookie", "b=2; Path=/");
    h.set("connection", "x-secret-hop");
    h.set("x-secret-hop", "1");
    h.set("keep-alive", "timeout=99");
    h.set("proxy-authenticate", "Basic");
    h.set("trailer", "x-t");
    h.set("x-kept", "yes");
    return new Response("ok", { headers: h });
  },
});
let proxy: TestProxy;
let trusted: TestProxy;
let addressOnly: TestProxy;
let clientOnly: TestProxy;
beforeAll(() => {
  const t = makeTable([{ host: null, path: "/", backend: makeBackend([backend.port as number]) }]);
  proxy = startProxy(t);
  trusted = startProxy(t, { trustedProxies: ["127.0.0.0/8"] });
  addressOnly = startProxy(t, { trustedProxies: ["127.0.0.0/8"], trustedProxyHeaders: "address" });
  clientOnly = startProxy(t, { trustedProxies: ["127.0.0.0/8"], computeFullForwardedFor: false });
});
afterAll(async () => {
  await proxy.stop();
  await trusted.stop();
  await addressOnly.stop();
  await clientOnly.stop();
  await backend.stop(true);
});

const spoof = {
  host: "app.test:8080",
  connection: "keep-alive, x-client-hop",
  "x-client-hop": "1",
  "keep-alive": "timeout=5",
  te: "trailers",
  "proxy-authorization": "Basic Zm9vOmJhcg==",
  "x-forwarded-for": "6.6.6.6",
  "x-forwarded-proto": "https",
  "x-forwarded-host": "evil.test",
  "x-forwarded-port": "1",
  "x-real-ip": "6.6.6.6",
  forwarded: "for=6.6.6.6",
  "x-other": "kept",
};

test("request: hop-by-hop and spoofed forwarding headers never reach the backend", async () => {
  const r = await fetch(proxy.url + "/h", { headers: spoof });
  expect(r.status).toBe(200);
  for (const k of ["x-client-hop", "keep-alive", "te", "proxy-authorization", "forwarded", "upgrade", "trailer"]) {
    expect(seen[k]).toBeUndefined();
  }
  expect(seen["host"]).toBe("app.test:8080");
  expect(seen["x-forwarded-for"]).toBe("127.0.0.1");
  expect(seen["x-real-ip"]).toBe("127.0.0.1");
  expect(seen["x-forwarded-proto"]).toBe("http");
  expect(seen["x-forwarded-host"]).toBe("app.test:8080");
  expect(seen["x-forwarded-port"]).toBe("8080");
  expect(seen["x-other"]).toBe("kept");
});

test("response: hop-by-hop stripped, Set-Cookie lines survive, other headers kept", async () => {
  const raw = await rawRequest(proxy.port, "GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n");
  expect(statusLine(raw)).toBe(200);
  const head = raw.slice(0, raw.indexOf("\r\n\r\n")).toLowerCase();
  expect(head).not.toContain("x-secret-hop");
  expect(head).not.toContain("timeout=99");
  expect(head).not.toContain("proxy-authenticate");
  expect(head).not.toContain("trailer:");
  expect(head).toContain("x-kept: yes");
  expect(head.match(/^set-cookie:/gm)?.length).toBe(2);
  const r = await fetch(proxy.url + "/");
  expect(r.headers.getSetCookie()).toEqual(["a=1; Path=/", "b=2; Path=/"]);
});

test("X-Request-ID: sane value kept and echoed, bad one replaced", async () => {
  let r = await fetch(proxy.url + "/", { headers: { "x-request-id": "abc-123.def_4" } });
  expect(r.headers.get("x-request-id")).toBe("abc-123.def_4");
  expect(seen["x-request-id"]).toBe("abc-123.def_4");
  r = await fetch(proxy.url + "/", { headers: { "x-request-id": "bad id<script>" } });
  const id = r.headers.get("x-request-id")!;
  expect(id).toMatch(/^[0-9a-f]{32}$/);
  expect(seen["x-request-id"]).toBe(id);
  r = await fetch(proxy.url + "/", { headers: { "x-request-id": "a".repeat(201) } });
  expect(r.headers.get("x-request-id")).not.toBe("a".repeat(201));
  r = await fetch(proxy.url + "/");
  expect(r.headers.get("x-request-id")).toMatch(/^[0-9a-f]{32}$/); // nginx $request_id: 16 random bytes in hex
});

test("trusted proxy: X-Forwarded-For appended, its X-Forwarded-* kept, real IP from the chain", async () => {
  await fetch(trusted.url + "/", { headers: { "x-forwarded-for": "203.0.113.9, 10.0.0.2", "x-forwarded-proto": "https" } });
  expect(seen["x-forwarded-for"]).toBe("203.0.113.9, 10.0.0.2, 127.0.0.1");
  expect(seen["x-forwarded-proto"]).toBe("https");
  expect(seen["x-real-ip"]).toBe("10.0.0.2");
});

// ingress-nginx's enable-real-ip: the realip module reads X-Forwarded-For alone (nginx.tmpl
// real_ip_header); X-Forwarded-Proto, -Host, -Port are believed only with use-forwarded-headers
// (rootfs/etc/nginx/lua/lua_ingress.lua rewrite()).
test("--trusted-proxy-headers=address: the client address from the chain, the other forwarded fields Portico's own", async () => {
  const headers = { host: "app.test", "x-forwarded-for": "203.0.113.9, 10.0.0.2", "x-forwarded-proto": "https", "x-forwarded-host": "evil.test", "x-forwarded-port": "1" };
  const r = await fetch(addressOnly.url + "/", { headers });
  expect(r.status).toBe(200);
  await r.text();
  expect(seen["x-real-ip"]).toBe("10.0.0.2");
  expect(seen["x-forwarded-for"]).toBe("203.0.113.9, 10.0.0.2, 127.0.0.1");
  expect([seen["host"], seen["x-forwarded-host"], seen["x-forwarded-proto"], seen["x-forwarded-port"]]).toEqual(["app.test", "app.test", "http", "80"]);
});

// nginx.tmpl: without compute-full-forwarded-for, proxy_set_header X-Forwarded-For $remote_addr,
// the address the realip module found (real_ip_recursive on: the right-most untrusted entry).
test("--compute-full-forwarded-for=false: X-Forwarded-For is the client address alone", async () => {
  const r = await fetch(clientOnly.url + "/", { headers: { host: "app.test", "x-forwarded-for": "203.0.113.9, 10.0.0.2", "x-forwarded-host": "shop.example, other.example" } });
  expect(r.status).toBe(200);
  await r.text();
  expect([seen["x-forwarded-for"], seen["x-real-ip"]]).toEqual(["10.0.0.2", "10.0.0.2"]);
  // $best_http_host: the first X-Forwarded-Host entry, as Host and X-Forwarded-Host.
  expect([seen["host"], seen["x-forwarded-host"]]).toEqual(["shop.example", "shop.example"]);
});
