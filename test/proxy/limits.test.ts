// Body limits: a declared length over the limit is refused before the
// upstream is contacted; a streamed body over the limit is cut and answered 413; the per-route
// annotation overrides the flag.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { makeBackend, makeTable, rawRequest, startProxy, statusLine, type TestProxy } from "./helpers.ts";

let hits = 0;
const backend = Bun.serve({
  hostname: "127.0.0.1", port: 0,
  async fetch(req) {
    hits++;
    const n = req.body ? (await req.arrayBuffer()).byteLength : 0;
    return new Response(`got ${n}`);
  },
});
let proxy: TestProxy;
beforeAll(() => {
  proxy = startProxy(
    makeTable([
      { host: "small.test", backend: makeBackend([backend.port as number]) },
      { host: "big.test", backend: makeBackend([backend.port as number]), options: { maxBodySize: 1_000_000 } },
    ]),
    { maxBodySize: 1000 },
  );
});
afterAll(async () => {
  await proxy.stop();
  await backend.stop(true);
});

test("Content-Length over the limit → 413 and the backend is never contacted", async () => {
  const before = hits;
  const raw = await rawRequest(proxy.port, `POST / HTTP/1.1\r\nHost: small.test\r\nContent-Length: 5000\r\nConnection: close\r\n\r\n${"x".repeat(5000)}`);
  expect(statusLine(raw)).toBe(413);
  expect(raw).toContain("request body too large");
  expect(hits).toBe(before);
});

test("chunked body over the limit → 413", async () => {
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(c) {
      if (sent >= 10_000) return c.close();
      sent += 500;
      c.enqueue(new Uint8Array(500));
    },
  });
  const r = await fetch(proxy.url + "/", { method: "POST", body, headers: { host: "small.test" }, duplex: "half" } as RequestInit);
  expect(r.status).toBe(413);
  expect(proxy.records.at(-1)).toMatchObject({ status: 413, error: "BodyTooLarge" });
});

test("within the limit passes; the route annotation raises it", async () => {
  let r = await fetch(proxy.url + "/", { method: "POST", body: "x".repeat(1000), headers: { host: "small.test" } });
  expect(await r.text()).toBe("got 1000");
  r = await fetch(proxy.url + "/", { method: "POST", body: "x".repeat(50_000), headers: { host: "big.test" } });
  expect(await r.text()).toBe("got 50000");
});
