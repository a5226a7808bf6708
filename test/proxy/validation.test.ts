// Malformed requests and path rules over raw sockets: each gets a 400 with
// a fixed body, and the backend sees nothing.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { BAD_REQUESTS as bad, req } from "./bad-requests.ts";
import { echoBackend, makeBackend, makeTable, rawRequest, startProxy, statusLine, type TestProxy } from "./helpers.ts";

const be = echoBackend();
let proxy: TestProxy;
beforeAll(() => {
  proxy = startProxy(makeTable([{ host: null, path: "/", backend: makeBackend([be.port]) }]));
});
afterAll(async () => {
  await proxy.stop();
  await be.stop();
});

for (const [name, bytes] of bad) {
  test(`400: ${name}`, async () => {
    const before = be.seen.length;
    const raw = await rawRequest(proxy.port, bytes);
    expect(statusLine(raw)).toBe(400);
    // Fixed body (ours) or Bun's own empty 400: never an echo of the input.
    expect(raw).not.toContain("evil");
    expect(be.seen.length).toBe(before);
  });
}

test("dot segments and unreserved escapes are normalised, and the routed path is forwarded", async () => {
  const raw = await rawRequest(proxy.port, req("GET /x/../%7Euser/./%41%62/%2e%2e/c?q=%2F HTTP/1.1"));
  expect(statusLine(raw)).toBe(200);
  const body = JSON.parse(raw.slice(raw.indexOf("\r\n\r\n") + 4)) as { path: string };
  expect(body.path).toBe("/~user/c?q=%2F");
});

test("raw backslash never reaches the backend as a backslash", async () => {
  // Bun's WHATWG parser turns a raw "\" into "/" before the handler runs (docs/design.md "Bun
  // facts measured here"), so the path we route is the path we forward; our own check refuses
  // any "\" that survives.
  const raw = await rawRequest(proxy.port, req("GET /a\\..\\admin HTTP/1.1"));
  expect(statusLine(raw)).toBe(200);
  expect(new URL(be.seen.at(-1)!.url).pathname).toBe("/admin");
});

test("absolute-form target: routed and forwarded by one authority", async () => {
  // Bun 1.4.5 rebuilds req.url from Host and drops the absolute-form authority, so the
  // authority the backend sees is always the one we routed by (validate.ts).
  const raw = await rawRequest(proxy.port, req("GET http://other.test/p HTTP/1.1", ["Host: a.test"]));
  expect(statusLine(raw)).toBe(200);
  expect(be.seen.at(-1)!.headers.host).toBe("a.test");
});

test("a good request on the same listener still works", async () => {
  const raw = await rawRequest(proxy.port, req("GET /ok HTTP/1.1"));
  expect(statusLine(raw)).toBe(200);
});

test("HTTP/1.0 without Host is routed by the empty host (hostless rules, defaults)", async () => {
  const raw = await rawRequest(proxy.port, "GET /old HTTP/1.0\r\n\r\n");
  expect(statusLine(raw)).toBe(200);
  expect(be.seen.at(-1)!.url).toEndWith("/old");
});
