// ingress-nginx's mirror-target, mirror-host and mirror-request-body through a real proxy:
// route options made by the real annotation parser, a raw-socket backend and mirror target
// that log every byte they receive (an HTTPS mirror on a Bun.serve with a certificate from
// test/tls/pki.ts). kubernetes/ingress-nginx test/e2e/annotations/mirror.go (at dbb11b92) only
// reads nginx.conf; each case here asserts what that configuration does to a request: the
// location's `mirror "/_mirror-<uid>"` and `mirror_request_body on|off`, and template.go
// buildMirrorLocations' `location = /_mirror-<uid> { internal; proxy_set_header Host <host>;
// proxy_pass <target>; }` (a proxy_pass with a URI replaces the location's name and appends the
// query; one with variables is sent as rendered).
//
// The mirror target runs on 127.0.0.1, which the address policy refuses: as in
// test/proxy/external-auth.test.ts, its name is resolved to 127.0.0.1 by an injected resolver
// whose check permits exactly that address. "the address policy" below runs the real one.
import { afterEach, describe, expect, test } from "bun:test";
import tls from "node:tls";
import { parseAnnotations } from "../../src/compile/annotations.ts";
import { createExternalResolver } from "../../src/proxy/upstream/external.ts";
import { policyCaps } from "../../src/proxy/policies/caps.ts";
import { createProxyHandler } from "../../src/proxy/pipeline/handler.ts";
import { startHttpListener } from "../../src/proxy/pipeline/listener.ts";
import { POLICY_KINDS } from "../../src/kinds/registry.ts";
import type { PolicyKind } from "../../src/kinds/types.ts";
import { lookup } from "../../src/table/lookup.ts";
import * as K from "../../src/kinds/index.ts";
import { createCertificate } from "../tls/pki.ts";
import { eventually } from "../wait.ts";
import { makeBackend, makeTable, quietLog, rawRequest, statusLine, testConfig, withCaps } from "./helpers.ts";
import { rawBackend, type RawBackend, headFields } from "./raw.ts";

const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

const N = "nginx.ingress.kubernetes.io/";
const HOST = "mirror.foo.com";

/** A proxy whose one route carries `annotations`; the names in `names` resolve to 127.0.0.1 unless `inject` is false. */
async function setup(annotations: Record<string, string>, opts: { inject?: boolean; names?: string[] } = {}) {
  const be = await rawBackend();
  cleanup.push(() => be.stop());
  const parsed = parseAnnotations(Object.fromEntries(Object.entries(annotations).map(([k, v]) => [N + k, v])));
  const kinds = new Map<string, PolicyKind>(POLICY_KINDS);
  if (opts.inject !== false) {
    const names = new Set(opts.names ?? []);
    const resolver = createExternalResolver({
      lookup: async (name) => (names.has(name) ? ["127.0.0.1"] : Promise.reject(Object.assign(new Error("ENOTFOUND"), { code: "ENOTFOUND" }))),
      check: (a) => (a === "127.0.0.1" ? null : "not the test address"),
    });
    kinds.set(K.INGRESS_MIRROR.id, withCaps(K.INGRESS_MIRROR, { resolve: (u, ms) => resolver.target(u, ms) }));
  }
  const table = makeTable([{ host: HOST, path: "/", backend: makeBackend([be.port]), options: parsed.options }]);
  const handler = createProxyHandler({ config: testConfig(), table: () => table, lookup, log: quietLog, scheme: "http", policyKinds: kinds });
  const server = startHttpListener({ hostname: "127.0.0.1", port: 0, handler });
  cleanup.push(() => server.stop(true));
  const send = async (method: string, path: string, body = "", headers: Record<string, string> = {}) => {
    const lines = Object.entries({ host: HOST, ...headers }).map(([k, v]) => `${k}: ${v}\r\n`).join("");
    const extra = body === "" ? "" : `content-length: ${body.length}\r\n`;
    const raw = await rawRequest(server.port as number, `${method} ${path} HTTP/1.1\r\n${lines}${extra}connection: close\r\n\r\n${body}`, 5_000);
    return { raw, status: statusLine(raw) };
  };
  return { be, problems: parsed.problems, unsupported: parsed.unsupported, send };
}

/** A mirror target that logs what it receives and answers `answer` (null: never answers). */
async function mirrorTarget(answer: string | null = "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"): Promise<RawBackend> {
  const m = await rawBackend(() => answer);
  cleanup.push(() => m.stop());
  return m;
}

/** A mirror target over TLS (a test/tls/pki.ts certificate for test.env.com) that logs each request head as received, and the SNI name it was asked for. */
async function tlsMirror(): Promise<{ port: number; heads: string[]; bodies: string[]; servernames: (string | false)[] }> {
  const cert = createCertificate({ subjectCN: "test.env.com", sans: ["test.env.com"] });
  const heads: string[] = [];
  const bodies: string[] = [];
  const servernames: (string | false)[] = [];
  const sockets = new Set<tls.TLSSocket>();
  // A TLS socket that logs the request head as received (Bun.serve would hand over a parsed URL).
  const server = tls.createServer({ cert: cert.certPem, key: cert.keyPem }, (sock) => {
    sockets.add(sock);
    sock.on("close", () => sockets.delete(sock));
    servernames.push((sock as unknown as { servername: string | false }).servername);
    let buf = "";
    sock.on("data", (d: Buffer) => {
      buf += d.toString("latin1");
      const end = buf.indexOf("\r\n\r\n");
      if (end < 0) return;
      const head = buf.slice(0, end);
      const n = Number(headFields(head)["content-length"]?.[0] ?? "0");
      if (buf.length < end + 4 + n) return;
      heads.push(head);
      bodies.push(buf.slice(end + 4, end + 4 + n));
      buf = "";
      sock.end("HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
    });
    sock.on("error", () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanup.push(() => {
    for (const sock of sockets) sock.destroy();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { port: (server.address() as import("node:net").AddressInfo).port, heads, bodies, servernames };
}

describe("mirror.go", () => {
  test("should set mirror-target to http://localhost/mirror", async () => {
    // The Go test's target with a name the test resolves to the loopback mirror target
    // (localhost itself is refused by the address policy: below).
    const m = await mirrorTarget();
    const s = await setup({ "mirror-target": `http://mirror.test.svc:${m.port}/mirror` }, { names: ["mirror.test.svc"] });
    expect(s.unsupported).toEqual([]);
    expect(s.problems).toEqual([]);
    const r = await s.send("POST", "/app/x?a=b", "hello", { "x-custom": "1" });
    expect(r.status).toBe(200);
    expect(s.be.lines()).toEqual(["POST /app/x?a=b HTTP/1.1"]);
    await eventually(() => m.requests().length === 1, 5_000, "the copy at the mirror target");
    const [copy] = m.requests();
    // proxy_pass with a URI: the target's path, the request's query; mirror_request_body on.
    expect(copy!.line).toBe("POST /mirror?a=b HTTP/1.1");
    const f = headFields(copy!.head);
    expect(f.host).toEqual(["mirror.test.svc"]);
    expect(f["x-custom"]).toEqual(["1"]);
    expect(f["content-length"]).toEqual(["5"]);
    expect(copy!.body).toBe("hello");
  });

  test("should set mirror-target to https://test.env.com/$request_uri", async () => {
    const m = await tlsMirror();
    const s = await setup({ "mirror-target": `https://test.env.com:${m.port}/$request_uri` }, { names: ["test.env.com"] });
    expect(s.problems).toEqual([]);
    const r = await s.send("GET", "/foo?bar=1");
    expect(r.status).toBe(200);
    await eventually(() => m.heads.length === 1, 5_000, "the copy at the HTTPS mirror");
    // proxy_pass with variables: the URL as rendered, "/" then $request_uri, which nginx sends
    // as "//foo?bar=1" (Bun's fetch would merge the two slashes: docs/bun-upstream-reports.md §17).
    expect(m.heads[0]!.split("\r\n")[0]).toBe("GET //foo?bar=1 HTTP/1.1");
    expect(headFields(m.heads[0]!).host).toEqual(["test.env.com"]);
  });

  test("should disable mirror-request-body", async () => {
    const m = await mirrorTarget();
    const s = await setup({ "mirror-target": `http://mirror.test.svc:${m.port}/mirror`, "mirror-request-body": "off" }, { names: ["mirror.test.svc"] });
    const r = await s.send("POST", "/", "hello");
    expect(r.status).toBe(200);
    expect(s.be.requests().map((q) => q.body)).toEqual(["hello"]);
    await eventually(() => m.requests().length === 1, 5_000, "the copy at the mirror target");
    const [copy] = m.requests();
    expect(copy!.line).toBe("POST /mirror HTTP/1.1");
    expect(copy!.body).toBe("");
    expect(headFields(copy!.head)["content-length"] ?? ["0"]).toEqual(["0"]);
  });
});

describe("mirror: fire and forget", () => {
  test("mirror-host sets the copy's Host; a target that never answers does not hold the client's answer", async () => {
    const m = await mirrorTarget(null);
    const s = await setup({ "mirror-target": `http://mirror.test.svc:${m.port}/m`, "mirror-host": "shadow.example" }, { names: ["mirror.test.svc"] });
    for (let i = 0; i < 3; i++) expect((await s.send("GET", `/r${i}`)).status).toBe(200);
    await eventually(() => m.requests().length === 3, 5_000, "three copies at the mirror target");
    expect(m.requests().map((q) => [q.line, headFields(q.head).host])).toEqual([0, 1, 2].map(() => ["GET /m HTTP/1.1", ["shadow.example"]]));
  });

  test("a target that refuses connections changes nothing for the client", async () => {
    const gone = await rawBackend();
    const port = gone.port;
    await gone.stop();
    const s = await setup({ "mirror-target": `http://mirror.test.svc:${port}/m` }, { names: ["mirror.test.svc"] });
    const r = await s.send("GET", "/x");
    expect(r.status).toBe(200);
    expect(s.be.lines()).toEqual(["GET /x HTTP/1.1"]);
  });
});

describe("mirror: bodies", () => {
  test("a body that streams (proxy-request-buffering off) is not held for a copy: that request is not mirrored", async () => {
    const m = await mirrorTarget();
    const s = await setup({ "mirror-target": `http://mirror.test.svc:${m.port}/m`, "proxy-request-buffering": "off" }, { names: ["mirror.test.svc"] });
    expect((await s.send("POST", "/a", "streamed")).status).toBe(200);
    // The backend has it (as streamed: framing aside, the bytes sent).
    expect(s.be.requests()).toHaveLength(1);
    expect(s.be.requests()[0]!.body).toContain("streamed");
    // The sequence point: the next request's copy arrives, and none came before it.
    expect((await s.send("GET", "/b")).status).toBe(200);
    await eventually(() => m.requests().length >= 1, 5_000, "the GET's copy");
    expect(m.lines()).toEqual(["GET /m HTTP/1.1"]);
  });
});

describe("mirror: the address policy", () => {
  test("http://localhost/mirror (the Go test's target) mirrors nothing, with a warning; the Ingress is served", async () => {
    const s = await setup({ "mirror-target": "http://localhost/mirror" }, { inject: false });
    expect(s.problems).toEqual(['annotation nginx.ingress.kubernetes.io/mirror-target="http://localhost/mirror": the address localhost is refused (loopback): Portico never connects to it; no request is mirrored']);
    expect((await s.send("GET", "/")).status).toBe(200);
  });

  test("a target whose name resolves to loopback gets no copy (the real resolver and check)", async () => {
    const m = await mirrorTarget();
    const s = await setup({ "mirror-target": `http://127.0.0.1.nip.invalid:${m.port}/m` }, { inject: false });
    expect((await s.send("GET", "/")).status).toBe(200);
    // A literal loopback address is refused when the Ingress is read.
    const lit = await setup({ "mirror-target": `http://127.0.0.1:${m.port}/m` }, { inject: false });
    expect(lit.problems[0]).toContain("is refused (loopback)");
    expect((await lit.send("GET", "/")).status).toBe(200);
    // The sequence point: a later copy to an allowed target arrives, and none came here before it.
    const other = await mirrorTarget();
    const ok = await setup({ "mirror-target": `http://mirror.test.svc:${other.port}/m` }, { names: ["mirror.test.svc"] });
    expect((await ok.send("GET", "/")).status).toBe(200);
    await eventually(() => other.requests().length === 1, 5_000, "the allowed copy");
    expect(m.requests()).toEqual([]);
  });

  test("a variable in the host is refused: the client would pick where the copy goes", async () => {
    const s = await setup({ "mirror-target": "http://$host/mirror" }, { inject: false });
    expect(s.problems[0]).toContain("no request is mirrored");
    expect((await s.send("GET", "/")).status).toBe(200);
  });
});

// Bun 1.4.5's fetch sends a request-target starting with "//" with one "/"
// (docs/bun-upstream-reports.md §17); such a copy goes through Bun's node:http client
// (proxy/policies/caps.ts), every other one through fetch. These pin that the two send the same
// request but for the path.
describe("mirror: a rendered path starting with //", () => {
  /** The head's fields but the connection's own (fetch keeps the connection, node:http closes it). */
  const fieldsOf = (head: string) => {
    const f = headFields(head);
    delete f.connection;
    return f;
  };

  test("over http: the request line as nginx sends it; method, fields and body as fetch sends them", async () => {
    const m = await mirrorTarget();
    const slash = await setup({ "mirror-target": `http://mirror.test.svc:${m.port}/$request_uri`, "mirror-host": "shadow.example" }, { names: ["mirror.test.svc"] });
    // The same copy with one "/": the fetch path, for comparison.
    const one = await setup({ "mirror-target": `http://mirror.test.svc:${m.port}$request_uri`, "mirror-host": "shadow.example" }, { names: ["mirror.test.svc"] });
    expect((await slash.send("POST", "/foo?bar=1", "hello", { "x-custom": "1", cookie: "a=b" })).status).toBe(200);
    await eventually(() => m.requests().length === 1, 5_000, "the // copy");
    expect((await one.send("POST", "/foo?bar=1", "hello", { "x-custom": "1", cookie: "a=b" })).status).toBe(200);
    await eventually(() => m.requests().length === 2, 5_000, "the fetch copy");
    const [viaHttp, viaFetch] = m.requests();
    expect(viaHttp!.line).toBe("POST //foo?bar=1 HTTP/1.1");
    expect(viaFetch!.line).toBe("POST /foo?bar=1 HTTP/1.1");
    expect(viaHttp!.body).toBe("hello");
    expect(viaFetch!.body).toBe("hello");
    expect(fieldsOf(viaHttp!.head)).toEqual(fieldsOf(viaFetch!.head));
    expect(fieldsOf(viaHttp!.head)).toMatchObject({ host: ["shadow.example"], "x-custom": ["1"], cookie: ["a=b"], "content-length": ["5"] });
    // The clients' own requests reached the backend untouched.
    expect(slash.be.lines()).toEqual(["POST /foo?bar=1 HTTP/1.1"]);
    expect(one.be.lines()).toEqual(["POST /foo?bar=1 HTTP/1.1"]);
  });

  test("over https: the same TLS as the fetch path (verification off, no SNI to an address)", async () => {
    const m = await tlsMirror();
    const slash = await setup({ "mirror-target": `https://test.env.com:${m.port}/$request_uri`, "mirror-request-body": "off" }, { names: ["test.env.com"] });
    const one = await setup({ "mirror-target": `https://test.env.com:${m.port}$request_uri`, "mirror-request-body": "off" }, { names: ["test.env.com"] });
    expect((await slash.send("DELETE", "/foo?bar=1", "gone")).status).toBe(200);
    await eventually(() => m.heads.length === 1, 5_000, "the // copy");
    expect((await one.send("DELETE", "/foo?bar=1", "gone")).status).toBe(200);
    await eventually(() => m.heads.length === 2, 5_000, "the fetch copy");
    expect(m.heads.map((h) => h.split("\r\n")[0])).toEqual(["DELETE //foo?bar=1 HTTP/1.1", "DELETE /foo?bar=1 HTTP/1.1"]);
    expect(fieldsOf(m.heads[0]!)).toEqual(fieldsOf(m.heads[1]!));
    expect(fieldsOf(m.heads[0]!).host).toEqual(["test.env.com"]);
    expect(m.bodies).toEqual(["", ""]);
    // The certificate is for test.env.com, not 127.0.0.1: both clients went on (not verified),
    // and neither named a server (fetch to an address sends no SNI; nginx: proxy_ssl_server_name off).
    expect(m.servernames).toEqual([false, false]);
  });

  test("a // copy whose target never answers is abandoned at its deadline, the connection closed", async () => {
    const m = await mirrorTarget(null);
    const caps = policyCaps(testConfig());
    const ac = new AbortController();
    const p = caps.subrequest(`http://127.0.0.1:${m.port}//slow`, { method: "GET", headers: new Headers({ host: "x.test" }), signal: ac.signal });
    const settled = p.then(() => "answered", () => "rejected");
    await eventually(() => m.requests().length === 1, 5_000, "the request at the target");
    expect(m.lines()).toEqual(["GET //slow HTTP/1.1"]);
    ac.abort(new DOMException("deadline", "TimeoutError"));
    expect(await settled).toBe("rejected");
    await eventually(() => m.conns.every((c) => c.closed), 5_000, "the connection closed");
  });
});
