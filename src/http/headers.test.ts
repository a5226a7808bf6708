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

// The native-copy path skips the X-Forwarded-* lookups the `filtered` list says are absent: a
// client's own X-Original-* copies must still go, and the fields it did send still count
// (ingress-nginx's nginx.tmpl: X-Original-Forwarded-For is $http_x_forwarded_for).
test("a client's own X-Original-Forwarded-For and -Host are dropped without X-Forwarded-For", () => {
  const out = forward({ host: "a.test", "x-original-forwarded-for": "6.6.6.6", "x-original-forwarded-host": "evil.test" });
  expect(out.has("x-original-forwarded-for")).toBe(false);
  expect(out.has("x-original-forwarded-host")).toBe(false);
  expect(out.get("x-forwarded-for")).toBe("10.0.0.9");
});

test("X-Original-Forwarded-For and -Host carry what the client sent, in place of its own copies", () => {
  const out = forward({ host: "a.test", "x-forwarded-for": "1.2.3.4", "x-forwarded-host": "b.test", "x-original-forwarded-for": "6.6.6.6" });
  expect(out.get("x-original-forwarded-for")).toBe("1.2.3.4");
  expect(out.get("x-original-forwarded-host")).toBe("b.test");
  // An untrusted peer's X-Forwarded-For and -Host are its own words: replaced.
  expect(out.get("x-forwarded-for")).toBe("10.0.0.9");
  expect(out.get("x-forwarded-host")).toBe("a.test");
});

test("a trusted peer's X-Forwarded-Proto is kept and named by X-Forwarded-Scheme and X-Scheme; an untrusted one's is not", () => {
  const fields = { host: "a.test", "x-forwarded-proto": "https" };
  const trusted = forward(fields, { ...ctx, trusted: true });
  expect([trusted.get("x-forwarded-proto"), trusted.get("x-forwarded-scheme"), trusted.get("x-scheme")]).toEqual(["https", "https", "https"]);
  const plain = forward(fields);
  expect([plain.get("x-forwarded-proto"), plain.get("x-forwarded-scheme"), plain.get("x-scheme")]).toEqual(["http", "http", "http"]);
});

// The pipeline's validation pass keeps the Connection value aside and leaves Connection out of
// the filtered list (validate.ts readFields): the field and the options it names still go.
function forwardKept(fields: Record<string, string>): Headers {
  const h = new Headers(fields);
  const filtered: string[] = [];
  h.forEach((_v, k) => {
    if (k !== "connection" && isFilteredRequestHeader(k)) filtered.push(k);
  });
  return upstreamHeaders(h, { ...ctx, connection: h.get("connection") }, ctx.peer, false, filtered);
}

test("with the Connection value given, Connection and the fields it names are dropped though the list leaves it out", () => {
  const alone = forwardKept({ host: "a.test", connection: "keep-alive", accept: "*/*" });
  expect(alone.has("connection")).toBe(false);
  expect(alone.get("accept")).toBe("*/*");
  const named = forwardKept({ host: "a.test", connection: "x-hop", "x-hop": "1", accept: "*/*" });
  expect(named.has("connection")).toBe(false);
  expect(named.has("x-hop")).toBe(false);
  expect(named.get("accept")).toBe("*/*");
});

test("a response's Connection and the fields it names are dropped by the scan's value alone", () => {
  for (const [c, extra] of [["keep-alive", "keep-alive"], ["x-hop", "x-hop"], ["close", "close"]] as const) {
    const up = new Headers({ connection: c, [extra]: "1", "content-type": "text/plain" });
    const scan = scanResponseHeaders(up);
    const out = downstreamHeaders(up, "rid", null, null, scan);
    expect([c, out.has("connection"), out.has(extra), out.get("content-type")]).toEqual([c, false, false, "text/plain"]);
  }
});
