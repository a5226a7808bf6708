// Routing through the real handler and listener: host, wildcard, Exact/Prefix, hostless,
// default backend, 404, 503, HTTPS redirect, HSTS and the forwarded fields. Every case runs
// three times, and must answer identically each time: over HTTP/1.1 to Bun.serve on the plain
// port, over HTTP/2 to the HTTPS listener, and over HTTP/3 to that listener's QUIC side
// (--http3; Bun's fetch the QUIC client). The handler's scheme is the test's in all three.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { echoBackend, makeBackend, makeTable, startProxyOver, TRANSPORTS, type TransportProxy } from "./helpers.ts";

const backends = ["a", "a-exact", "wild", "any", "def"].map((n) => echoBackend(n));
const [a, aExact, wild, any, def] = backends;
afterAll(async () => {
  for (const b of backends) await b.stop();
});

describe.each(TRANSPORTS)("over %s", (transport) => {
  let proxy: TransportProxy;

  beforeAll(async () => {
    const table = makeTable(
      [
        { host: "a.test", path: "/app", pathType: "Prefix", backend: makeBackend([a!.port]) },
        { host: "a.test", path: "/app/exact", pathType: "Exact", backend: makeBackend([aExact!.port]) },
        { host: "a.test", path: "/down", backend: makeBackend([]) },
        { host: "a.test", path: "/nosvc", backend: makeBackend([], { status: "ServiceNotFound" }) },
        { host: "*.w.test", path: "/", backend: makeBackend([wild!.port]) },
        { host: null, path: "/any", backend: makeBackend([any!.port]) },
        { host: "secure.test", path: "/", backend: makeBackend([a!.port]), tls: true },
        { host: "optout.test", path: "/", backend: makeBackend([a!.port]), tls: true, options: { sslRedirect: false } },
        { host: "force.test", path: "/", backend: makeBackend([a!.port]), options: { forceSslRedirect: true } },
      ],
      null,
    );
    proxy = await startProxyOver(transport, table);
  });
  afterAll(async () => {
    await proxy.stop();
  });

  async function get(host: string, path: string) {
    const r = await proxy.request(path, { headers: { host }, redirect: "manual" });
    const text = await r.text();
    return { status: r.status, text, json: r.headers.get("content-type")?.includes("json") ? JSON.parse(text) : null, headers: r.headers };
  }

  test("exact host, Prefix and Exact paths", async () => {
    expect((await get("a.test", "/app")).json.name).toBe("a");
    expect((await get("A.TEST:1234", "/app/x/y?q=1")).json).toMatchObject({ name: "a", path: "/app/x/y?q=1" });
    expect((await get("a.test", "/app/exact")).json.name).toBe("a-exact");
    expect((await get("a.test", "/app/exact/more")).json.name).toBe("a");
    expect((await get("a.test", "/appx")).status).toBe(404);
  });

  test("wildcard matches one label only; hostless rules catch other hosts", async () => {
    expect((await get("x.w.test", "/foo")).json.name).toBe("wild");
    expect((await get("a.b.w.test", "/any")).json.name).toBe("any");
    expect((await get("w.test", "/nope")).status).toBe(404);
    expect((await get("other.test", "/any/1")).json.name).toBe("any");
  });

  test("404 body is fixed text and 503 for no endpoints or missing service", async () => {
    const r = await get("nothing.test", "/<script>");
    expect(r.status).toBe(404);
    expect(r.text).toBe("no route\n");
    expect(r.headers.get("x-request-id")).toBeTruthy();
    expect((await get("a.test", "/down")).status).toBe(503);
    expect((await get("a.test", "/nosvc")).status).toBe(503);
  });

  test("default backend takes unmatched requests", async () => {
    const t = makeTable([{ host: "a.test", path: "/app", backend: makeBackend([a!.port]) }], { backend: makeBackend([def!.port]) });
    const p = await startProxyOver(transport, t);
    try {
      const r = await p.request("/zzz", { headers: { host: "unknown.test" } });
      expect(((await r.json()) as { name: string }).name).toBe("def");
    } finally {
      await p.stop();
    }
  });

  test("HTTP → HTTPS 308 for TLS hosts, opt-out and force", async () => {
    const r = await get("secure.test", "/p/../x?y=1");
    expect(r.status).toBe(308);
    // No port although --https-port is 8443 here: ingress-nginx leaves it out
    // (test/e2e/settings/tls.go "should not use ports during the HTTP to HTTPS redirection").
    expect(r.headers.get("location")).toBe("https://secure.test/x?y=1");
    expect((await get("optout.test", "/")).status).toBe(200);
    expect((await get("force.test", "/a")).headers.get("location")).toBe("https://force.test/a");
  });

  test("HSTS on https responses only", async () => {
    const t = makeTable([{ host: "secure.test", path: "/", backend: makeBackend([a!.port]), tls: true }]);
    const p = await startProxyOver(transport, t, {}, {}, "https");
    try {
      const r = await p.request("/", { headers: { host: "secure.test" } });
      expect(r.status).toBe(200);
      expect(r.headers.get("strict-transport-security")).toBe("max-age=31536000");
      const seen = ((await r.json()) as { headers: Record<string, string> }).headers;
      expect([seen["x-forwarded-proto"], seen["x-forwarded-scheme"], seen["x-forwarded-port"]]).toEqual(["https", "https", "443"]);
    } finally {
      await p.stop();
    }
    expect((await get("optout.test", "/")).headers.get("strict-transport-security")).toBeNull();
  });

  test("the backend sees the forwarded fields of the handler's scheme, whatever the wire", async () => {
    const fwd = (j: { headers: Record<string, string> }) =>
      Object.fromEntries(Object.entries(j.headers).filter(([k]) => k === "host" || k.startsWith("x-forwarded-") || k.startsWith("x-original-") || k === "x-real-ip" || k === "x-scheme"));
    // nginx.tmpl's location block sets these (ingress-nginx test/e2e/settings/forwarded_headers.go);
    // X-Forwarded-Port is the port the client addressed (docs/design.md, "Request headers").
    expect(fwd((await get("a.test", "/app/fwd")).json)).toEqual({
      host: "a.test", "x-forwarded-for": "127.0.0.1", "x-forwarded-host": "a.test", "x-forwarded-port": "80",
      "x-forwarded-proto": "http", "x-forwarded-scheme": "http", "x-real-ip": "127.0.0.1", "x-scheme": "http",
    });
    // An untrusted client's own copies are not believed, only passed on as X-Original-*.
    const r = await proxy.request("/app/fwd", { headers: { host: "a.test:1234", "x-forwarded-for": "192.0.2.7", "x-forwarded-host": "evil.test", "x-forwarded-proto": "https", "x-forwarded-port": "9" } });
    expect(fwd((await r.json()) as { headers: Record<string, string> })).toEqual({
      host: "a.test:1234", "x-forwarded-for": "127.0.0.1", "x-forwarded-host": "a.test:1234", "x-forwarded-port": "1234",
      "x-forwarded-proto": "http", "x-forwarded-scheme": "http", "x-real-ip": "127.0.0.1", "x-scheme": "http",
      "x-original-forwarded-for": "192.0.2.7", "x-original-forwarded-host": "evil.test",
    });
  });

  test("access record: route, backend, bytes, upstream; HEAD keeps Content-Length", async () => {
    const r = await proxy.request("/app/rec?x=1", { method: "POST", body: "12345", headers: { host: "a.test", "x-request-id": "rec-1" } });
    const text = await r.text();
    expect(r.headers.get("content-length")).toBe(String(Buffer.byteLength(text)));
    const rec = proxy.records.find((x) => x.requestId === "rec-1")!;
    expect(rec).toMatchObject({
      method: "POST", host: "a.test", path: "/app/rec", status: 200, bytesIn: 5, bytesOut: Buffer.byteLength(text),
      upstream: `127.0.0.1:${a!.port}`, upstreamStatus: 200, ingress: "default/ing", service: `default/svc-${a!.port}:80`,
      websocket: false, error: null, scheme: "http", client: "127.0.0.1",
    });
    expect(rec.durationMs).toBeGreaterThan(0);
    const head = await proxy.request("/app/rec", { method: "HEAD", headers: { host: "a.test" } });
    expect(head.status).toBe(200);
    expect(Number(head.headers.get("content-length"))).toBeGreaterThan(0);
  });

  test("behind a trusted TLS-terminating proxy, X-Forwarded-Proto: https means no redirect and HSTS", async () => {
    const t = makeTable([{ host: "secure.test", path: "/", backend: makeBackend([a!.port]), tls: true }]);
    const p = await startProxyOver(transport, t, { trustedProxies: ["127.0.0.1/32"] });
    try {
      const r = await p.request("/", { headers: { host: "secure.test", "x-forwarded-proto": "https" }, redirect: "manual" });
      expect(r.status).toBe(200);
      expect(r.headers.get("strict-transport-security")).toBe("max-age=31536000");
      const plain = await p.request("/", { headers: { host: "secure.test" }, redirect: "manual" });
      expect(plain.status).toBe(308);
    } finally {
      await p.stop();
    }
    // The same header from an untrusted client changes nothing.
    const spoofed = await proxy.request("/", { headers: { host: "secure.test", "x-forwarded-proto": "https" }, redirect: "manual" });
    expect(spoofed.status).toBe(308);
  });
});
