// --access-log-template's request variables through a real proxy: the record and the request
// it keeps (RequestView) as the handler leaves them, formatted as the access log's pump does.
// nginx's $request is the request line and $request_uri the target as received
// (ngx_http_variables.c: r->request_line, r->unparsed_uri), before any merging of slashes, so
// `//` in the target is logged as the client wrote it, with a Host or without one.
import { afterEach, describe, expect, test } from "bun:test";
import { compileLogTemplate } from "../../src/log/template.ts";
import { eventually } from "../wait.ts";
import { makeBackend, makeTable, rawRequest, startProxy, statusLine, type TestProxy } from "./helpers.ts";
import { headFields, OK_REPLY, rawBackend, type RawBackend } from "./raw.ts";

const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

async function proxy(): Promise<TestProxy> {
  const pod = await rawBackend(() => OK_REPLY);
  cleanup.push(() => pod.stop());
  const p = startProxy(makeTable([{ host: null, backend: makeBackend([pod.port]) }]), { accessLogTemplate: "$request|$request_uri", accessLog: "stdout" });
  cleanup.push(() => p.stop());
  return p;
}

describe("the request target in a template", () => {
  test("an HTTP/1.0 request without Host (Bun's url is the bare target) keeps its `//`", async () => {
    const p = await proxy();
    const line = compileLogTemplate("$request|$request_uri|$request_length", "default");
    expect(statusLine(await rawRequest(p.port, "GET /a//b?x=//y HTTP/1.0\r\n\r\n"))).toBe(200);
    await eventually(() => p.records.length === 1, 5_000, "the access record");
    // $request_length: the request line as Portico writes it (HTTP/1.1 for every h1 request),
    // CRLF, no fields, the empty line.
    const requestLine = "GET /a//b?x=//y HTTP/1.1";
    expect(line(p.records[0]!)).toBe(`${requestLine}|/a//b?x=//y|${requestLine.length + 2 + 2}`);
  });

  test("with a Host, as before", async () => {
    const p = await proxy();
    const line = compileLogTemplate("$request|$request_uri", "default");
    expect(statusLine(await rawRequest(p.port, "GET /a//b HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n"))).toBe(200);
    await eventually(() => p.records.length === 1, 5_000, "the access record");
    expect(line(p.records[0]!)).toBe("GET /a//b HTTP/1.1|/a//b");
  });
});

// nginx's $request_id is its own id for every request, 16 random bytes in hex, one value per
// request however often the format names it (ngx_http_variables.c
// ngx_http_variable_request_id); ingress-nginx's $req_id is the client's X-Request-ID when it
// sent one, else $request_id (nginx.tmpl: `map $http_x_request_id $req_id { default
// $http_x_request_id; "" $request_id; }`), and $req_id is what goes upstream
// (`proxy_set_header X-Request-ID $req_id`).
describe("$request_id and $req_id", () => {
  async function sent(): Promise<{ p: TestProxy; pod: RawBackend }> {
    const pod = await rawBackend(() => OK_REPLY);
    cleanup.push(() => pod.stop());
    const p = startProxy(makeTable([{ host: null, backend: makeBackend([pod.port]) }]), { accessLogTemplate: "$req_id|$request_id", accessLog: "stdout" });
    cleanup.push(() => p.stop());
    return { p, pod };
  }

  test("the client's X-Request-ID: $req_id and upstream; $request_id Portico's own, the same twice in a line", async () => {
    const { p, pod } = await sent();
    const line = compileLogTemplate("$req_id|$request_id|$request_id", "default");
    expect(statusLine(await rawRequest(p.port, "GET / HTTP/1.1\r\nHost: a.test\r\nX-Request-ID: client-id-1\r\nConnection: close\r\n\r\n"))).toBe(200);
    await eventually(() => p.records.length === 1, 5_000, "the access record");
    expect(headFields(pod.hits[0]!.head)["x-request-id"]).toEqual(["client-id-1"]);
    const [reqId, own, again] = line(p.records[0]!).split("|");
    expect(reqId).toBe("client-id-1");
    expect(own).toMatch(/^[0-9a-f]{32}$/);
    expect(again).toBe(own);
  });

  test("no X-Request-ID: both are the one id Portico made, which went upstream", async () => {
    const { p, pod } = await sent();
    const line = compileLogTemplate("$req_id|$request_id", "default");
    expect(statusLine(await rawRequest(p.port, "GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n"))).toBe(200);
    await eventually(() => p.records.length === 1, 5_000, "the access record");
    const up = headFields(pod.hits[0]!.head)["x-request-id"]![0]!;
    expect(up).toMatch(/^[0-9a-f]{32}$/);
    expect(line(p.records[0]!)).toBe(`${up}|${up}`);
  });
});
