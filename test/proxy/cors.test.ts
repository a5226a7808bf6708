// CORS through a real proxy, the route options made by the real annotation parser, to a
// raw-socket backend that logs the requests it receives. Expectations come from ingress-nginx
// at dbb11b92: the template's CORS block (rootfs/etc/nginx/template/nginx.tmpl), its origin
// regex (buildOriginRegex / buildCorsOriginRegex in internal/ingress/controller/template/
// template.go), the parser's defaults (internal/ingress/annotations/cors/main.go) and
// test/e2e/annotations/cors.go; Portico's differences are the README's.
import { afterEach, describe, expect, test } from "bun:test";
import { parseAnnotations } from "../../src/compile/annotations.ts";
import { NGINX_PREFIX } from "../../src/annotations/spec.ts";
import { createProxyHandler } from "../../src/proxy/pipeline/handler.ts";
import { startHttpListener } from "../../src/proxy/pipeline/listener.ts";
import { POLICY_KINDS } from "../../src/kinds/registry.ts";
import type { PolicyKind } from "../../src/kinds/types.ts";
import { lookup } from "../../src/table/lookup.ts";
import { makeBackend, makeTable, quietLog, rawRequest, statusLine, testConfig } from "./helpers.ts";
import { testKind } from "./helpers.ts";
import { rawBackend, type RawBackend } from "./raw.ts";

const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

const DEFAULT_HEADERS = "DNT,Keep-Alive,User-Agent,X-Requested-With,If-Modified-Since,Cache-Control,Content-Type,Range,Authorization";
const DEFAULT_METHODS = "GET, PUT, POST, DELETE, PATCH, OPTIONS";

/** The backend's answer: it sets its own CORS and Vary fields, which the route's must replace (more_set_headers) or extend. */
const BACKEND_REPLY =
  "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nVary: Accept-Encoding\r\nAccess-Control-Allow-Origin: https://backend-said.example\r\n\r\nok";

/**
 * A proxy whose one route carries `annotations` (nginx names, without the prefix). An extra
 * `authentication` stage kind "deny-all" answers 401 to every request that reaches it, so a
 * test can tell whether an answer came before authentication.
 */
async function setup(annotations: Record<string, string>, withAuth = false) {
  const be: RawBackend = await rawBackend(() => BACKEND_REPLY);
  cleanup.push(() => be.stop());
  const parsed = parseAnnotations(Object.fromEntries(Object.entries(annotations).map(([k, val]) => [NGINX_PREFIX + k, val])));
  const stages = parsed.options.stages === null ? [] : [...parsed.options.stages];
  if (withAuth) stages.push({ stage: "authentication", kind: "deny-all", params: {} });
  const kinds = new Map<string, PolicyKind>(POLICY_KINDS);
  kinds.set(
    "deny-all",
    testKind("authentication", () => (flow) => new Response("auth\n", { status: 401, headers: { ...flow.responseHeaders, "www-authenticate": 'Basic realm="x"' } })),
  );
  const table = makeTable([{ host: "cors.foo.com", backend: makeBackend([be.port]), options: { ...parsed.options, stages: stages.length ? stages : null } }]);
  const handler = createProxyHandler({ config: testConfig(), table: () => table, lookup, log: quietLog, scheme: "http", policyKinds: kinds });
  const server = startHttpListener({ hostname: "127.0.0.1", port: 0, handler });
  cleanup.push(() => server.stop(true));
  const send = async (method: string, headers: Record<string, string> = {}, body = "") => {
    const lines = Object.entries({ host: "cors.foo.com", ...headers }).map(([k, val]) => `${k}: ${val}\r\n`).join("");
    const extra = body === "" ? "" : `content-length: ${body.length}\r\n`;
    const raw = await rawRequest(server.port as number, `${method} /p HTTP/1.1\r\n${lines}${extra}connection: close\r\n\r\n${body}`);
    return { raw, status: statusLine(raw), headers: headersOf(raw), body: raw.slice(raw.indexOf("\r\n\r\n") + 4) };
  };
  return { be, send, parsed };
}

/** Response fields by lower-cased name; a repeated field keeps every value (a duplicate is a defect here). */
function headersOf(raw: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const line of raw.slice(0, raw.indexOf("\r\n\r\n")).split("\r\n").slice(1)) {
    const i = line.indexOf(":");
    const k = line.slice(0, i).toLowerCase();
    (out[k] ??= []).push(line.slice(i + 1).trim());
  }
  return out;
}

/** The CORS fields of an answer, each with its one value. */
function corsOf(h: Record<string, string[]>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, vals] of Object.entries(h)) {
    if (k.startsWith("access-control-") || k === "vary") {
      expect(vals).toHaveLength(1);
      out[k] = vals[0]!;
    }
  }
  return out;
}

const ALL_DEFAULTS = (origin: string) => ({
  "access-control-allow-origin": origin,
  "access-control-allow-credentials": "true",
  "access-control-allow-methods": DEFAULT_METHODS,
  "access-control-allow-headers": DEFAULT_HEADERS,
  "access-control-max-age": "1728000",
});

const preflight = (origin: string, more: Record<string, string> = {}) => ({ origin, "access-control-request-method": "PUT", ...more });

describe("CORS: * mode (cors-allow-origin unset)", () => {
  test("a GET gets ingress-nginx's default headers with Access-Control-Allow-Origin: *, replacing the backend's, with or without Origin", async () => {
    const { send, be } = await setup({ "enable-cors": "true" });
    for (const h of [{ origin: "https://anything.example" }, {}] as Record<string, string>[]) {
      const r = await send("GET", h);
      expect(r.status).toBe(200);
      expect(r.body).toBe("ok");
      // Nothing depends on Origin in * mode, so the backend's Vary is left alone.
      expect(corsOf(r.headers)).toEqual({ ...ALL_DEFAULTS("*"), vary: "Accept-Encoding" });
    }
    expect(be.requests()).toHaveLength(2);
  });

  test("a preflight is answered 204 by Portico with the template's fields; the backend sees nothing", async () => {
    const { send, be } = await setup({ "enable-cors": "true" });
    const r = await send("OPTIONS", preflight("https://app.example"));
    expect(r.status).toBe(204);
    expect(corsOf(r.headers)).toEqual(ALL_DEFAULTS("*"));
    expect(r.headers["content-type"]).toEqual(["text/plain charset=UTF-8"]);
    expect(r.headers["x-request-id"]).toHaveLength(1);
    expect(r.body).toBe("");
    expect(be.requests()).toHaveLength(0);
  });

  test("an OPTIONS that is no preflight (no Access-Control-Request-Method, or no Origin) goes to the backend, with the CORS fields on its answer", async () => {
    const { send, be } = await setup({ "enable-cors": "true" });
    const a = await send("OPTIONS", { origin: "https://app.example" });
    const b = await send("OPTIONS", { "access-control-request-method": "PUT" });
    for (const r of [a, b]) {
      expect(r.status).toBe(200);
      expect(corsOf(r.headers)).toEqual({ ...ALL_DEFAULTS("*"), vary: "Accept-Encoding" });
    }
    expect(be.requests().map((q) => q.head.split("\r\n")[0])).toEqual(["OPTIONS /p HTTP/1.1", "OPTIONS /p HTTP/1.1"]);
  });

  test("cors-allow-credentials false leaves Access-Control-Allow-Credentials out; other values as given", async () => {
    const { send } = await setup({
      "enable-cors": "true", "cors-allow-credentials": "false", "cors-allow-methods": "POST, GET",
      "cors-allow-headers": "DNT, User-Agent", "cors-expose-headers": "X-CustomResponseHeader, X-CustomSecondHeader", "cors-max-age": "200",
    });
    const r = await send("OPTIONS", preflight("https://app.example"));
    expect(r.status).toBe(204);
    expect(corsOf(r.headers)).toEqual({
      "access-control-allow-origin": "*", "access-control-allow-methods": "POST, GET", "access-control-allow-headers": "DNT, User-Agent",
      "access-control-expose-headers": "X-CustomResponseHeader, X-CustomSecondHeader", "access-control-max-age": "200",
    });
  });

  test("invalid values fall back to the defaults (ingress-nginx's parser), and are diagnostics", async () => {
    const { send, parsed } = await setup({ "enable-cors": "true", "cors-allow-methods": "GET;", "cors-max-age": "1d", "cors-allow-credentials": "yes" });
    expect(parsed.problems).toHaveLength(3);
    const r = await send("OPTIONS", preflight("https://app.example"));
    expect(corsOf(r.headers)).toEqual(ALL_DEFAULTS("*"));
  });
});

describe("CORS: an origin list", () => {
  const LIST = "https://origin.cors.com:8080, https://*.example.com, null";

  test("a matching Origin is echoed, with Vary: Origin added to the backend's Vary", async () => {
    const { send } = await setup({ "enable-cors": "true", "cors-allow-origin": LIST });
    for (const origin of ["https://origin.cors.com:8080", "https://a.example.com", "https://A-1.Example.COM", "null"]) {
      const r = await send("GET", { origin });
      expect(r.status).toBe(200);
      expect(corsOf(r.headers)).toEqual({ ...ALL_DEFAULTS(origin), vary: "Accept-Encoding, Origin" });
    }
  });

  test("origins that only look allowed get no CORS field (the backend's own is relayed as it sent it), and are still proxied", async () => {
    const { send, be } = await setup({ "enable-cors": "true", "cors-allow-origin": LIST });
    const hostile = [
      "https://evil-example.com", // not a subdomain of example.com
      "https://example.com.evil.com", // example.com as a prefix
      "https://a.b.example.com", // two labels for a one-label wildcard
      "https://example.com", // the wildcard needs one label
      "https://.example.com", // an empty label
      "http://a.example.com", // another scheme
      "https://a.example.com:8443", // a port the entry does not name
      "https://a.example.com/", // a trailing slash
      "https://origin.cors.com", // the entry's port left out
      "https://origin.cors.com:80800", // a longer port
      "https://x.evil.com/https://a.example.com", // ends with an allowed origin: ingress-nginx's regex takes it
      "https://evil-null", // ends with "null": ingress-nginx's regex takes it
      "https://a.example.com, https://evil.com", // two Origin values joined
      "", // empty
    ];
    for (const origin of hostile) {
      const r = await send("GET", { origin });
      expect(r.status).toBe(200);
      expect(corsOf(r.headers)).toEqual({
        "access-control-allow-origin": "https://backend-said.example",
        vary: "Accept-Encoding, Origin",
      });
    }
    expect(be.requests()).toHaveLength(hostile.length);
  });

  test("a preflight from an origin that is not allowed is proxied like any OPTIONS (ingress-nginx: no 204 without a match)", async () => {
    const { send, be } = await setup({ "enable-cors": "true", "cors-allow-origin": LIST });
    const r = await send("OPTIONS", preflight("https://evil-example.com"));
    expect(r.status).toBe(200);
    expect(r.headers["access-control-allow-methods"]).toBeUndefined();
    expect(be.requests()).toHaveLength(1);
  });

  test("a preflight from an allowed origin with credentials: 204, the Origin echoed with Allow-Credentials, never *", async () => {
    const { send, be } = await setup({ "enable-cors": "true", "cors-allow-origin": LIST });
    const r = await send("OPTIONS", preflight("https://app.example.com", { cookie: "session=1", authorization: "Bearer x", "access-control-request-headers": "authorization" }));
    expect(r.status).toBe(204);
    expect(corsOf(r.headers)).toEqual({ ...ALL_DEFAULTS("https://app.example.com"), vary: "Origin" });
    expect(be.requests()).toHaveLength(0);
  });

  test("a request without Origin gets no CORS field but Vary: Origin (the answer depends on it)", async () => {
    const { send } = await setup({ "enable-cors": "true", "cors-allow-origin": "https://a.com" });
    const r = await send("GET");
    expect(corsOf(r.headers)).toEqual({ "access-control-allow-origin": "https://backend-said.example", vary: "Accept-Encoding, Origin" });
  });

  test("a list with no valid origin allows none (ingress-nginx would allow every origin): preflights go to the backend", async () => {
    const { send, be, parsed } = await setup({ "enable-cors": "true", "cors-allow-origin": "https://a.com/" });
    expect(parsed.problems.length).toBeGreaterThan(0);
    const r = await send("OPTIONS", preflight("https://a.com"));
    expect(r.status).toBe(200);
    expect(r.headers["access-control-allow-methods"]).toBeUndefined();
    expect(be.requests()).toHaveLength(1);
  });
});

describe("CORS and authentication", () => {
  test("a preflight is answered before authentication; other requests get the auth answer with the CORS fields (more_set_headers on every status)", async () => {
    const { send, be } = await setup({ "enable-cors": "true", "cors-allow-origin": "https://app.example.com" }, true);
    const pre = await send("OPTIONS", preflight("https://app.example.com"));
    expect(pre.status).toBe(204);
    const get = await send("GET", { origin: "https://app.example.com" });
    expect(get.status).toBe(401);
    expect(get.headers["www-authenticate"]).toEqual(['Basic realm="x"']);
    expect(corsOf(get.headers)).toEqual({ ...ALL_DEFAULTS("https://app.example.com"), vary: "Origin" });
    // An OPTIONS that is no preflight is not exempt from authentication.
    expect((await send("OPTIONS", { origin: "https://app.example.com" })).status).toBe(401);
    // Nor is a preflight from an origin that is not allowed.
    expect((await send("OPTIONS", preflight("https://evil.com"))).status).toBe(401);
    expect(be.requests()).toHaveLength(0);
  });

  test("Portico's own error answers carry the CORS fields too (503 without endpoints)", async () => {
    const parsed = parseAnnotations({ [`${NGINX_PREFIX}enable-cors`]: "true" });
    const table = makeTable([{ host: "cors.foo.com", backend: makeBackend([]), options: parsed.options }]);
    const handler = createProxyHandler({ config: testConfig(), table: () => table, lookup, log: quietLog, scheme: "http" });
    const server = startHttpListener({ hostname: "127.0.0.1", port: 0, handler });
    cleanup.push(() => server.stop(true));
    const raw = await rawRequest(server.port as number, "GET / HTTP/1.1\r\nhost: cors.foo.com\r\norigin: https://x.example\r\nconnection: close\r\n\r\n");
    expect(statusLine(raw)).toBe(503);
    expect(corsOf(headersOf(raw))).toEqual(ALL_DEFAULTS("*"));
  });
});
