// upstreamHeaders on the native-copy path (a `filtered` list from the validation pass): the
// Connection options are dropped as RFC 9110 §7.6.1 says whatever the list's form, and Host
// is the client's unless upstream-vhost names another.
import { expect, test } from "bun:test";
import { downstreamHeaders, isFilteredRequestHeader, scanResponseHeaders, upstreamHeaders, type ForwardContext } from "./headers.ts";

const ctx: ForwardContext = { peer: "10.0.0.9", trusted: false, scheme: "http", host: "a.test", port: null, requestId: "rid", underscores: false };

function forward(fields: Record<string, string>, c: ForwardContext = ctx): Headers {
  const h = new Headers(fields);
  const filtered: string[] = [];
  h.forEach((_v, k) => {
    if (isFilteredRequestHeader(k)) filtered.push(k);
  });
  return upstreamHeaders(h, c, c.peer, false, filtered);
}

test("Connection: keep-alive drops Keep-Alive and Connection, keeps the rest", () => {
  const out = forward({ host: "a.test", connection: "keep-alive", "keep-alive": "timeout=5", accept: "*/*" });
  expect(out.has("connection")).toBe(false);
  expect(out.has("keep-alive")).toBe(false);
  expect(out.get("accept")).toBe("*/*");
  expect(out.get("host")).toBe("a.test");
});

test("Connection: close drops a field the option names", () => {
  const out = forward({ host: "a.test", connection: "close", close: "x" });
  expect(out.has("close")).toBe(false);
  expect(out.has("connection")).toBe(false);
});

test("a listed field goes, an unlisted one stays", () => {
  const out = forward({ host: "a.test", connection: "x-hop, keep-alive", "x-hop": "1", "x-end": "2" });
  expect(out.has("x-hop")).toBe(false);
  expect(out.get("x-end")).toBe("2");
});

test("Host: the client's on the copy, upstream-vhost's when set", () => {
  expect(forward({ host: "a.test:8080" }, { ...ctx, host: "a.test:8080" }).get("host")).toBe("a.test:8080");
  expect(forward({ host: "a.test" }, { ...ctx, upstreamHost: "b.internal" }).get("host")).toBe("b.internal");
  expect(forward({ host: "a.test" }).get("x-forwarded-host")).toBe("a.test");
});

test("downstream: Connection and what it names go, keep-alive, close or a list", () => {
  const answer = (fields: Record<string, string>) => {
    const h = new Headers(fields);
    return downstreamHeaders(h, "rid", null, null, scanResponseHeaders(h));
  };
  const a = answer({ connection: "keep-alive", "keep-alive": "timeout=5", "content-length": "2" });
  expect([a.has("connection"), a.has("keep-alive"), a.get("content-length")]).toEqual([false, false, "2"]);
  const b = answer({ connection: "close", close: "x", "x-keep": "1" });
  expect([b.has("connection"), b.has("close"), b.get("x-keep")]).toEqual([false, false, "1"]);
  const c = answer({ connection: "x-hop, keep-alive", "x-hop": "1", "x-keep": "1" });
  expect([c.has("x-hop"), c.get("x-keep"), c.get("x-request-id")]).toEqual([false, "1", "rid"]);
});
