// portico.dev/request-headers and portico.dev/response-headers through a real proxy: the
// request bytes a raw-socket backend receives and the response bytes a raw-socket client
// receives. The route options come from the real annotation parser.
import { afterEach, describe, expect, test } from "bun:test";
import type { RouteOptions } from "../../src/table/types.ts";
import { makeBackend, makeTable, optionsOf, rawRequest, startProxy, statusLine } from "./helpers.ts";
import { fieldValues, namedBackend, rawBackend, wsUpgrade, type RawBackend } from "./raw.ts";
import * as K from "../../src/kinds/index.ts";
import { parseAnnotations } from "../../src/compile/annotations.ts";

const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

/** A pod that logs each request head and answers with fields of its own (some to be replaced). */
async function pod(): Promise<RawBackend> {
  const b = await rawBackend(() => "HTTP/1.1 200 OK\r\nX-Frame-Options: SAMEORIGIN\r\nX-Pod: p1\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
  cleanup.push(() => b.stop());
  return b;
}

function proxyFor(port: number, options: Partial<RouteOptions>, host = "a.test") {
  const p = startProxy(makeTable([{ host, backend: makeBackend([port]), options }]));
  cleanup.push(() => p.stop());
  return p;
}


const head = (raw: string) => raw.slice(0, raw.indexOf("\r\n\r\n"));

describe("portico.dev/request-headers", () => {
  test("the pod receives the fields, replacing what the client sent; a repeated name keeps every value", async () => {
    const p = await pod();
    const proxy = proxyFor(p.port, optionsOf({ "portico.dev/request-headers": "X-Env: prod\nX-Multi: one\nX-Multi: two" }));
    const raw = await rawRequest(proxy.port, "GET /x HTTP/1.1\r\nHost: a.test\r\nX-Env: from-client\r\nX-Env: again\r\nX-Keep: yes\r\nConnection: close\r\n\r\n");
    expect(statusLine(raw)).toBe(200);
    const got = p.heads()[0]!;
    expect(got.split("\r\n")[0]).toBe("GET /x HTTP/1.1");
    expect(fieldValues(got, "x-env")).toEqual(["prod"]);
    // RFC 9110 §5.3: a repeated field is one list; the client sends it as one line.
    expect(fieldValues(got, "x-multi")).toEqual(["one, two"]);
    expect(fieldValues(got, "x-keep")).toEqual(["yes"]);
    // Portico's own fields are still Portico's.
    expect(fieldValues(got, "x-forwarded-for")).toEqual(["127.0.0.1"]);
  });

  test("a WebSocket handshake to the pod carries them too", async () => {
    const b = await namedBackend("ws");
    cleanup.push(() => b.stop());
    const proxy = proxyFor(b.port, optionsOf({ "portico.dev/request-headers": "X-Env: prod" }));
    const raw = await rawRequest(proxy.port, wsUpgrade("/chat"), 500);
    expect(statusLine(raw)).toBe(101);
    expect(fieldValues(b.hits[0]!.head, "x-env")).toEqual(["prod"]);
  });
});

describe("portico.dev/response-headers", () => {
  test("the client receives the fields on a relayed response, replacing the pod's", async () => {
    const p = await pod();
    const proxy = proxyFor(p.port, optionsOf({ "portico.dev/response-headers": "X-Frame-Options: DENY, Cache-Control: no-store, private" }));
    const raw = await rawRequest(proxy.port, "GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n");
    expect(statusLine(raw)).toBe(200);
    const h = head(raw);
    expect(fieldValues(h, "x-frame-options")).toEqual(["DENY"]);
    expect(fieldValues(h, "cache-control")).toEqual(["no-store, private"]);
    expect(fieldValues(h, "x-pod")).toEqual(["p1"]);
    expect(raw.endsWith("\r\n\r\nok")).toBe(true);
  });

  test("without the annotation the pod's fields pass unchanged", async () => {
    const p = await pod();
    const proxy = proxyFor(p.port, {});
    const raw = await rawRequest(proxy.port, "GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n");
    expect(fieldValues(head(raw), "x-frame-options")).toEqual(["SAMEORIGIN"]);
  });

  test("Portico's own answers (503: no endpoint) do not carry them", async () => {
    const proxy = startProxy(makeTable([{ host: "a.test", backend: makeBackend([]), options: optionsOf({ "portico.dev/response-headers": "X-Frame-Options: DENY" }) }]));
    cleanup.push(() => proxy.stop());
    const raw = await rawRequest(proxy.port, "GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n");
    expect(statusLine(raw)).toBe(503);
    expect(fieldValues(head(raw), "x-frame-options")).toEqual([]);
  });
});

test("a refused field that reaches the proxy anyway (a hand-made table) fails closed with 500, and the pod sees nothing", async () => {
  const p = await pod();
  const stages = [{ stage: "forwarding" as const, kind: K.HEADERS.id, params: { request: [["Host", "internal.test"]], response: [] } }];
  const proxy = proxyFor(p.port, { stages });
  const raw = await rawRequest(proxy.port, "GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n");
  expect(statusLine(raw)).toBe(500);
  expect(p.heads()).toEqual([]);
});

describe("portico.dev/deny-request-headers next to a refusal Portico must make", () => {
  test("a snippet that may refuse requests answers 503 to every request, a header the deny list names included", async () => {
    // The route's diagnostic says every request is refused with 503 (annotations/parse.ts); the
    // snippet's refusal is supplied ahead of the families' stages (compile/stages.ts), so the
    // header rule, later in the same `denied` stage, never answers first.
    const a = parseAnnotations({
      "nginx.ingress.kubernetes.io/configuration-snippet": "deny all;",
      "portico.dev/deny-request-headers": "403 X-Block ~ ^yes$",
    });
    expect(a.problems.some((p) => p.includes("every request to this Ingress's paths is refused with 503"))).toBe(true);
    const b = await pod();
    const p = proxyFor(b.port, a.options);
    for (const extra of ["", "X-Block: yes\r\n"]) {
      const raw = await rawRequest(p.port, `GET / HTTP/1.1\r\nHost: a.test\r\n${extra}Connection: close\r\n\r\n`);
      expect(statusLine(raw)).toBe(503);
    }
    expect(b.hits.length).toBe(0);
  });
});
