// The HTTP/1.1 side of the HTTP/2 listener (clients that do not offer h2 in ALPN) is parsed by
// node:http as Bun implements it, not by Bun.serve: it must refuse every malformed request
// Bun.serve refuses (the same list as test/proxy/validation.test.ts) with nothing reaching the
// backend, refuse smuggling attempts, and keep a connection's requests apart.
import { afterAll, beforeAll, expect, test } from "bun:test";
import tls from "node:tls";
import { BAD_REQUESTS, req } from "../proxy/bad-requests.ts";
import { echoBackend, makeBackend, makeTable } from "../proxy/helpers.ts";
import { startTlsProxy, type TlsProxy } from "./helpers.ts";
import { eventually } from "../wait.ts";

const be = echoBackend();
let proxy: TlsProxy;
beforeAll(() => {
  proxy = startTlsProxy(makeTable([{ host: null, path: "/", backend: makeBackend([be.port]) }]));
});
afterAll(async () => {
  await proxy.stop();
  await be.stop();
});

/** Bytes over TLS with ALPN http/1.1 only; everything received until close (or 2 s). */
function exchange(bytes: string): Promise<{ data: string; alpn: string | false }> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const s = tls.connect({ host: "127.0.0.1", port: proxy.port, rejectUnauthorized: false, ALPNProtocols: ["http/1.1"], servername: "a.test" }, () => s.write(bytes));
    const done = () => {
      clearTimeout(t);
      resolve({ data: Buffer.concat(chunks).toString("latin1"), alpn: s.alpnProtocol ?? false });
    };
    const t = setTimeout(() => s.destroy(), 2_000);
    s.on("data", (d: Buffer) => chunks.push(d));
    s.on("close", done);
    s.on("error", () => {});
  });
}

const statuses = (raw: string) => [...raw.matchAll(/HTTP\/1\.[01] (\d{3}) /g)].map((m) => Number(m[1]));
const DEL = "\x7f";
const smuggled = "GET /__smuggled HTTP/1.1\r\nHost: a.test\r\n\r\n";

const more: ReadonlyArray<readonly [string, string]> = [
  ["obs-fold", req("GET / HTTP/1.1", ["Host: a.test", "X-A: b", " c"])],
  ["two Content-Length", req("POST / HTTP/1.1", ["Host: a.test", "Content-Length: 1", "Content-Length: 2"], "ab")],
  ["space before colon", req("GET / HTTP/1.1", ["Host: a.test", "X-A : b"])],
  ["DEL in a value, a request smuggled behind the body", `POST / HTTP/1.1\r\nHost: a.test\r\nX-T: a${DEL}b\r\nContent-Length: 4\r\n\r\nabcd${smuggled}`],
  ["lowercase method", req("get / HTTP/1.1")],
  ["unknown method", req("BREW / HTTP/1.1")],
  ["bad chunk size", req("POST / HTTP/1.1", ["Host: a.test", "Transfer-Encoding: chunked"], "ffffffffffffffffff1\r\nhello\r\n0\r\n\r\n")],
];

for (const [name, bytes] of [...BAD_REQUESTS, ...more]) {
  test(`400: ${name}`, async () => {
    const before = be.seen.length;
    const r = await exchange(bytes);
    expect(r.alpn).toBe("http/1.1");
    expect(statuses(r.data)).toEqual([400]);
    expect(r.data).not.toContain("evil");
    // Anything still running has reached the backend once the handler is idle.
    await eventually(() => proxy.handler.inflight.count === 0, 5_000, "the handler idle");
    expect(be.seen.length).toBe(before);
  });
}

test("keep-alive: two requests on one connection are answered in order; HTTP/1.0 without Host routes", async () => {
  const r = await exchange(`GET /one HTTP/1.1\r\nHost: a.test\r\n\r\nGET /two HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n`);
  expect(statuses(r.data)).toEqual([200, 200]);
  expect(r.data.indexOf('"/one"')).toBeLessThan(r.data.indexOf('"/two"'));
  const old = await exchange("GET /old HTTP/1.0\r\n\r\n");
  expect(statuses(old.data)).toEqual([200]);
  expect(be.seen.at(-1)!.url).toEndWith("/old");
});

test("a chunked upload is de-chunked and forwarded whole; the access record says h1", async () => {
  const r = await exchange(req("POST /up HTTP/1.1", ["Host: a.test", "Transfer-Encoding: chunked", "X-Request-Id: h1side-1"], "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"));
  expect(statuses(r.data)).toEqual([200]);
  expect(JSON.parse(r.data.slice(r.data.indexOf("\r\n\r\n") + 4)).body).toBe("hello world");
  const rec = proxy.records.find((x) => x.requestId === "h1side-1");
  expect(rec?.protocol).toBe("h1");
  expect(rec?.bytesIn).toBe(11);
});

// A request line naming another major version than 1 on an HTTP/1.1 connection: HTTP/2 is
// negotiated by ALPN or the preface only (RFC 9113 §3). nginx answers 505 to a major version
// above 1 (ngx_http_parse_request_line NGX_HTTP_PARSE_INVALID_VERSION; measured on 1.22) and
// 400 to `HTTP/0.9` written out; Bun.serve answers 505 to both, and so does this listener now.
// node's parser took `HTTP/2.0` and the connection hung unanswered.
for (const version of ["HTTP/2.0", "HTTP/0.9"]) {
  test(`a request line with ${version}: 505, the connection closes, nothing upstream`, async () => {
    const before = be.seen.length;
    const r = await exchange(`GET / ${version}\r\nHost: a.test\r\n\r\n`);
    expect(statuses(r.data)).toEqual([505]);
    expect(r.data.toLowerCase()).toContain("connection: close");
    expect(be.seen.length).toBe(before);
  });
}
