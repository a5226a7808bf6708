// Side by side with nginx as ingress-nginx renders a location: the same raw bytes
// (differential-nginx.corpus.ts) go to a real nginx with nginx.tmpl's request-side settings and
// `location /` (differential-nginx.harness.ts) and to Portico under --ingress-nginx-compat with
// the equivalent Ingress (one rule, Prefix `/`), each proxying to a raw backend that logs the
// bytes it receives. Compared: the statuses the client sees, and when the request reached the
// backend, the upstream request line, fields and body. Where they differ the case is listed in
// DIFFERENCES with both answers and the reason (docs/design.md, "Side by side with nginx"); every
// other case must agree. Loopback only; skipped where nginx is not installed.
//
// Fields not compared, and why:
// - X-Request-ID: a fresh 32-hex-digit id on each side (nginx's $request_id; headers.ts
//   requestIdFrom); the form is compared, and a client's own id must arrive unchanged.
// - X-Forwarded-Port: nginx sends its listening port ($server_port), Portico the port the client
//   addressed (docs/design.md, "Request framing and bodies", X-Forwarded-Port).
// - Connection: nginx sends none (`Connection $connection_upgrade`, empty with an upstream
//   keepalive pool), Bun's fetch sends `keep-alive`; both keep the upstream connection.
// - User-Agent `Bun/…` and Accept `*/*` when the client sent none: Bun's fetch adds them
//   (docs/design.md, "Bun facts measured here").
// - Content-Length: 0 on a request without a body whose method may carry one (OPTIONS,
//   DELETE, PATCH, POST): Bun's fetch sends it (RFC 9110 §8.6 allows it).
// - Repeated field lines: nginx relays each line, Bun joins them into one (", ", "; " for
//   Cookie), the same field by RFC 9110 §5.3 and RFC 6265 §5.4 (docs/design.md, "Bun facts").
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { nginxPage } from "../../src/http/status-page.ts";
import { BUN_MAX_HEADER_SIZE, processHeaderLimit } from "../../src/config/header-buffers.ts";
import { makeBackend, makeTable, NGINX_BIN, startRawProxy, type RawProxy } from "./helpers.ts";
import { CASES } from "./differential-nginx.corpus.ts";
import { nginxSide, porticoSide, type Outcome, type Side } from "./differential-nginx.harness.ts";
import { firstResponse, headFields, rawBackend, statuses, type RawBackend } from "./raw.ts";

/** The statuses and the upstream request line, as one string: `200 GET /a HTTP/1.1`, `400 -`, `none -`. */
function head(o: Outcome): string {
  return `${o.statuses.join(",") || "none"} ${o.line ?? "-"}`;
}

const GENERATED_ID = /^[0-9a-f]{32}$/;

/** The upstream fields compared, by name, each as one value; the ignored ones (above) left out. */
function comparable(o: Outcome, other: Outcome): Record<string, string> {
  const out: Record<string, string> = {};
  const f = o.fields ?? {};
  const g = other.fields ?? {};
  for (const [k, vs] of Object.entries(f)) {
    if (k === "x-forwarded-port" || k === "connection") continue;
    if ((k === "user-agent" && vs[0]?.startsWith("Bun/")) || (k === "accept" && vs[0] === "*/*")) {
      if (g[k] === undefined) continue;
    }
    if (k === "content-length" && vs[0] === "0" && g[k] === undefined && o.body === "") continue;
    const v = vs.join(k === "cookie" ? "; " : ", ");
    out[k] = k === "x-request-id" && GENERATED_ID.test(v) ? "<generated>" : v;
  }
  return out;
}

interface Difference {
  /** nginx's answer and Portico's, as head() writes them. */
  readonly nginx: string;
  readonly portico: string;
  /** Upstream fields that differ too: [nginx's, Portico's] (undefined: not sent). */
  readonly fields?: Readonly<Record<string, readonly [string | undefined, string | undefined]>>;
  /** Where the difference is decided. */
  readonly why: string;
}

const PATHS = "README \"How Portico reads request paths\"; docs/design.md \"Request paths\"";
const BUN_LINE = "Bun.serve's request-line parser answers (or closes) before Portico runs; docs/design.md \"Side by side with nginx\"";
const BUN_FIELD = "Bun.serve's field parser answers 400 before Portico runs (nginx ignores the line: ignore_invalid_headers on); docs/design.md \"Side by side with nginx\"";
const HOST = "RFC 9112 §3.2: an invalid Host gets 400; Portico's grammar is RFC 3986 reg-name as DNS names (request/host.ts); docs/design.md \"Side by side with nginx\"";
const BUN_SIZE = "Bun.serve's own header block limit (16 KiB without --max-http-header-size); docs/design.md \"Side by side with nginx\"";
const LONG_LINE = "docs/design.md \"Side by side with nginx\" (a field line over 8,192 bytes; validate.ts readFields)";
// Portico runs here in this test process, so Bun's parser limit is this process's: `bun run
// test` starts it with the one every Portico process runs with (config/header-buffers.ts), and
// then heads up to 4 8k are Portico's to judge, as nginx does; a bare `bun test` keeps Bun's 16 KiB.
const BUN_16K = processHeaderLimit() < BUN_MAX_HEADER_SIZE;
const BUN_TE = "Bun.serve answers 400 to any Transfer-Encoding but a lone chunked (nginx 501); README \"Answers Portico gives itself\"";

// Each case whose answers differ, with both answers. Long request lines are cut in the names only.
const DIFFERENCES: Readonly<Record<string, Difference>> = {
  "GET with a body": { nginx: "200 GET / HTTP/1.1", portico: "400 -", why: "docs/design.md \"Request framing and bodies\" (GET, HEAD and TRACE with a body get 400)" },
  "target: dot-dot segment": { nginx: "200 GET /a/../b HTTP/1.1", portico: "200 GET /b HTTP/1.1", why: PATHS },
  "target: dot-dot past the root": { nginx: "400 -", portico: "200 GET /b HTTP/1.1", why: `${PATHS} (RFC 3986 §5.2.4 drops a .. above the root)` },
  "target: dot segment": { nginx: "200 GET /./a HTTP/1.1", portico: "200 GET /a HTTP/1.1", why: PATHS },
  "target: trailing dot-dot": { nginx: "200 GET /a/b/.. HTTP/1.1", portico: "200 GET /a/ HTTP/1.1", why: PATHS },
  "target: encoded dot-dot": { nginx: "400 -", portico: "200 GET /x HTTP/1.1", why: PATHS },
  "target: encoded dot-dot, upper case": { nginx: "200 GET /a/%2E%2E/x HTTP/1.1", portico: "200 GET /x HTTP/1.1", why: PATHS },
  "target: encoded slash": { nginx: "200 GET /a%2Fb HTTP/1.1", portico: "400 -", why: PATHS },
  "target: repeated slashes": { nginx: "200 GET //a//b HTTP/1.1", portico: "200 GET /a/b HTTP/1.1", why: `${PATHS} (nginx merges them for location matching only)` },
  "target: matrix parameter": { nginx: "200 GET /a;b=c HTTP/1.1", portico: "400 -", why: PATHS },
  "target: unreserved escape": { nginx: "200 GET /%41%7e HTTP/1.1", portico: "200 GET /A~ HTTP/1.1", why: PATHS },
  "target: raw UTF-8": { nginx: "200 GET /caf\xc3\xa9 HTTP/1.1", portico: "200 GET /caf%C3%A9 HTTP/1.1", why: PATHS },
  "target: raw invalid UTF-8": { nginx: "200 GET /\xff HTTP/1.1", portico: "400 -", why: PATHS },
  "target: backslash": { nginx: "200 GET /a\\b HTTP/1.1", portico: "200 GET /a/b HTTP/1.1", why: PATHS },
  "target: fragment": { nginx: "200 GET /a#frag HTTP/1.1", portico: "400 -", why: PATHS },
  "target: fragment after query": { nginx: "200 GET /a?b#frag HTTP/1.1", portico: "400 -", why: PATHS },
  "target: double quote": { nginx: '200 GET /a"b HTTP/1.1', portico: "200 GET /a%22b HTTP/1.1", why: PATHS },
  "target: angle brackets": { nginx: "200 GET /<a> HTTP/1.1", portico: "200 GET /%3Ca%3E HTTP/1.1", why: PATHS },
  "target: curly braces": { nginx: "200 GET /{a} HTTP/1.1", portico: "200 GET /%7Ba%7D HTTP/1.1", why: PATHS },
  "target: pipe and caret": { nginx: "200 GET /a|b^c HTTP/1.1", portico: "200 GET /a|b%5Ec HTTP/1.1", why: PATHS },
  "target: absolute-form with dot-dot": { nginx: "200 GET /a/../b HTTP/1.1", portico: "200 GET /b HTTP/1.1", why: PATHS },
  "target: absolute-form with userinfo": { nginx: "400 -", portico: "200 GET /x HTTP/1.1", why: "Bun replaces the target's authority with Host before Portico sees it; README \"How Portico reads request paths\" (absolute-form)" },
  "target: absolute-form, other scheme": { nginx: "200 GET /x HTTP/1.1", portico: "400 -", why: BUN_LINE },
  "line: lower-case method": { nginx: "400 -", portico: "none -", why: BUN_LINE },
  "line: mixed-case method": { nginx: "400 -", portico: "none -", why: BUN_LINE },
  "line: unknown method": { nginx: "200 FOO / HTTP/1.1", portico: "none -", why: BUN_LINE },
  "line: method with an underscore": { nginx: "200 MY_METHOD / HTTP/1.1", portico: "400 -", why: BUN_LINE },
  "line: method with a dash": { nginx: "200 MY-METHOD / HTTP/1.1", portico: "none -", why: BUN_LINE },
  "line: long method (32)": { nginx: `200 ${"M".repeat(32)} / HTTP/1.1`, portico: "none -", why: BUN_LINE },
  "line: very long method (200)": { nginx: `200 ${"M".repeat(200)} / HTTP/1.1`, portico: "none -", why: BUN_LINE },
  // nginx answers an HTTP/0.9 request with the bare body (no status line) and asks upstream in 1.1.
  "line: HTTP/0.9 style line": { nginx: "none GET / HTTP/1.1", portico: "505 -", why: BUN_LINE },
  "line: HTTP/1.2": { nginx: "200 GET / HTTP/1.1", portico: "505 -", why: BUN_LINE },
  "line: HTTP/1.10": { nginx: "200 GET / HTTP/1.1", portico: "505 -", why: BUN_LINE },
  "line: lower-case version": { nginx: "400 -", portico: "505 -", why: BUN_LINE },
  "line: two spaces after the method": { nginx: "200 GET / HTTP/1.1", portico: "400 -", why: BUN_LINE },
  "line: two spaces before the version": { nginx: "200 GET / HTTP/1.1", portico: "505 -", why: BUN_LINE },
  "line: tab as separator": { nginx: "400 -", portico: "505 -", why: BUN_LINE },
  "line: space in the target": { nginx: "400 -", portico: "505 -", why: BUN_LINE },
  "line: trailing space": { nginx: "200 GET / HTTP/1.1", portico: "505 -", why: BUN_LINE },
  "host: Host with userinfo": { nginx: "200 GET / HTTP/1.1", portico: "400 -", why: `${HOST}; README "Answers Portico gives itself" (userinfo in Host)` },
  "host: Host with a bad port": { nginx: "200 GET / HTTP/1.1", portico: "400 -", why: HOST },
  "host: Host with a backslash": { nginx: "200 GET / HTTP/1.1", portico: "400 -", why: HOST },
  "host: Host with a leading dot": { nginx: "200 GET / HTTP/1.1", portico: "400 -", why: HOST },
  "host: Host with a high byte": { nginx: "200 GET / HTTP/1.1", portico: "400 -", why: HOST },
  "field: invalid character in a name (@)": { nginx: "200 GET / HTTP/1.1", portico: "400 -", why: BUN_FIELD },
  "field: invalid character in a name (high byte)": { nginx: "200 GET / HTTP/1.1", portico: "400 -", why: BUN_FIELD },
  "field: field line without a colon": { nginx: "200 GET / HTTP/1.1", portico: "400 -", why: BUN_FIELD },
  // nginx holds the request line and all field lines in four 8 KiB buffers, and so does Portico
  // (admit.ts); a Bun.serve started without the raised limit answers 431 past 16 KiB first.
  ...(BUN_16K
    ? {
        "field: four 7000-byte lines": { nginx: "200 GET / HTTP/1.1", portico: "431 -", why: BUN_SIZE },
        "field: five 7000-byte lines": { nginx: "400 -", portico: "431 -", why: BUN_SIZE },
      }
    : {}),
  // Bun hands over the trimmed value only: the line is counted with one space after the colon,
  // and a value that Bun may have joined from shorter lines is not counted.
  "field: field line of 8192 bytes without a space": { nginx: "200 GET / HTTP/1.1", portico: "400 -", why: LONG_LINE },
  "field: one Cookie line of 9000 bytes with pairs": { nginx: "400 -", portico: "200 GET / HTTP/1.1", why: LONG_LINE },
  "field: value with DEL": { nginx: "200 GET / HTTP/1.1", portico: "400 -", why: "RFC 9110 §5.5: DEL is no field-vchar; README \"Answers Portico gives itself\" (control characters in headers)" },
  "field: Connection naming a field": {
    nginx: "200 GET / HTTP/1.1", portico: "200 GET / HTTP/1.1", fields: { "x-hop": ["1", undefined] },
    why: "RFC 9110 §7.6.1; docs/design.md \"Request framing and bodies\" (fields a client's Connection names are removed)",
  },
  "field: Forwarded": {
    nginx: "200 GET / HTTP/1.1", portico: "200 GET / HTTP/1.1", fields: { forwarded: ["for=1.2.3.4", undefined] },
    why: "an untrusted peer's forwarding fields are dropped (headers.ts FORWARDED); docs/design.md \"Side by side with nginx\"",
  },
  // nginx's template sends Upgrade and `Connection: upgrade` upstream for any Upgrade field;
  // Portico treats the request as the plain GET it is (RFC 9110 §7.8) and drops the hop-by-hop Upgrade.
  "field: Upgrade without Connection: upgrade": {
    nginx: "200 GET / HTTP/1.1", portico: "200 GET / HTTP/1.1", fields: { upgrade: ["websocket", undefined] },
    why: "RFC 9110 §7.6.1, §7.8; docs/design.md \"Side by side with nginx\"",
  },
  "field: WebSocket handshake the pod answers 200": {
    nginx: "200 GET / HTTP/1.1", portico: "200 GET / HTTP/1.1",
    fields: { "sec-websocket-key": ["dGhlIHNhbXBsZSBub25jZQ==", "<Bun's own>"], "sec-websocket-extensions": [undefined, "permessage-deflate; client_max_window_bits"] },
    why: "Portico opens its own WebSocket to the pod (its own key and extensions) before upgrading the client; the pod's answer other than 101 is relayed as nginx relays it (docs/design.md \"WebSocket handshakes the pod refuses\")",
  },
  "field: Expect: 100-continue without a body": { nginx: "100,200 GET / HTTP/1.1", portico: "100,100,200 GET / HTTP/1.1", why: "Bun.serve writes 100 Continue itself, twice for a request without a body when a websocket handler is configured (Portico's is); docs/design.md \"Side by side with nginx\"" },
  "body: chunked with a quoted extension": { nginx: "200 POST / HTTP/1.1", portico: "400 -", why: "Bun.serve's chunked parser refuses it (docs/design.md \"Side by side with nginx\")" },
  "body: chunked with a trailer": { nginx: "200 POST / HTTP/1.1", portico: "400 -", why: "Bun.serve's chunked parser refuses a trailer section (docs/design.md \"Side by side with nginx\")" },
  "body: TE gzip, chunked": { nginx: "501 -", portico: "400 -", why: BUN_TE },
  "body: TE chunked, gzip": { nginx: "501 -", portico: "400 -", why: BUN_TE },
  "body: TE identity": { nginx: "501 -", portico: "400 -", why: BUN_TE },
  "body: TE unknown": { nginx: "501 -", portico: "400 -", why: BUN_TE },
  // nginx sends $http_host, empty here, so no Host at all; fetch names the pod's address (RFC 9112 §3.2 asks for a Host).
  "1.0: HTTP/1.0 without Host": {
    nginx: "200 GET / HTTP/1.1", portico: "200 GET / HTTP/1.1", fields: { host: [undefined, "<the pod's address>"] },
    why: "docs/design.md \"Side by side with nginx\"",
  },
};

/** Field values that are not fixed by the request: the Sec-WebSocket-Key Bun makes, the pod's address. */
function expectedField(v: string | undefined, got: string | undefined): string | undefined {
  if (v === "<Bun's own>") return got !== undefined && /^[A-Za-z0-9+/]{22}==$/.test(got) ? v : got;
  if (v === "<the pod's address>") return got !== undefined && /^127\.0\.0\.1:\d+$/.test(got) ? v : got;
  return got;
}

describe.skipIf(NGINX_BIN === null)("differential: nginx (ingress-nginx's location /) and Portico --ingress-nginx-compat, the same bytes", () => {
  let nginx: Side;
  let portico: Side;
  beforeAll(async () => {
    nginx = await nginxSide();
    portico = await porticoSide();
  });
  afterAll(async () => {
    await nginx?.stop();
    await portico?.stop();
  });

  test("every listed difference names a case of the corpus", () => {
    const names = new Set(CASES.map((c) => c.name));
    expect(Object.keys(DIFFERENCES).filter((n) => !names.has(n))).toEqual([]);
    expect(CASES.length).toBe(names.size);
  });

  for (const c of CASES) {
    test(c.name, async () => {
      const a = await nginx.send(c.bytes);
      const b = await portico.send(c.bytes);
      const known = DIFFERENCES[c.name];
      const fa = comparable(a, b);
      const fb = comparable(b, a);
      if (known === undefined) {
        expect(head(b)).toBe(head(a));
        if (a.line !== null) {
          expect(fb).toEqual(fa);
          expect(b.body).toBe(a.body);
        }
        return;
      }
      expect([head(a), head(b)]).toEqual([known.nginx, known.portico]);
      if (a.line === null || b.line === null) return;
      const named = known.fields ?? {};
      for (const [k, [na, nb]] of Object.entries(named)) {
        expect([k, fa[k], expectedField(nb, fb[k])]).toEqual([k, na, nb]);
        delete fa[k];
        delete fb[k];
      }
      expect(fb).toEqual(fa);
    });
  }

  // The answers Portico now gives as nginx does, byte for byte past the status line.
  const PAGES: ReadonlyArray<readonly [string, string, number, string]> = [
    ["TRACE", "TRACE / HTTP/1.1\r\nHost: a.test\r\n\r\n", 405, nginxPage(405, null)!],
    ["TRACE with a body", "TRACE / HTTP/1.1\r\nHost: a.test\r\nContent-Length: 3\r\n\r\nabc", 405, nginxPage(405, null)!],
    ["a field line of 8193 bytes", `GET / HTTP/1.1\r\nHost: a.test\r\nX-Long: ${"v".repeat(8183)}\r\n\r\n`, 400, nginxPage(400, null, "Request Header Or Cookie Too Large")!],
  ];
  for (const [name, bytes, status, page] of PAGES) {
    test(`${name}: ${status}, nginx's page, Connection: close, on both`, async () => {
      for (const port of [nginx, portico].map((s) => s.port)) {
        const got = await firstResponse({ port }, bytes);
        expect(got.startsWith(`HTTP/1.1 ${status} `)).toBe(true);
        expect(got.toLowerCase()).toContain("\r\nconnection: close\r\n");
        expect(got.endsWith(`\r\n\r\n${page}`)).toBe(true);
      }
    });
  }
});

// The rules above that are not nginx's alone hold without --ingress-nginx-compat too; the two
// that are (TRACE, a long field line) are then left to the pod and to Bun's limits.
describe("Portico without --ingress-nginx-compat", () => {
  let be: RawBackend;
  let p: RawProxy;
  beforeAll(async () => {
    be = await rawBackend();
    p = startRawProxy("bun-http", makeTable([{ host: null, path: "/", backend: makeBackend([be.port]) }]));
  });
  afterAll(async () => {
    await p?.stop();
    await be?.stop();
  });
  const send = async (fields: string, line = "GET / HTTP/1.1") => {
    const before = be.hits.length;
    const got = await firstResponse(p, `${line}\r\nHost: a.test\r\n${fields}Connection: close\r\n\r\n`);
    return { status: statuses(got), upstream: be.hits[before] === undefined ? null : headFields(be.hits[before]!.head) };
  };

  test("field names with bytes other than letters, digits and - are dropped; the others pass", async () => {
    const { status, upstream } = await send("X.Dot: 1\r\nX!Bang: 2\r\nX-Ok-9: 3\r\n");
    expect(status).toEqual([200]);
    expect([upstream?.["x.dot"], upstream?.["x!bang"], upstream?.["x-ok-9"]]).toEqual([undefined, undefined, ["3"]]);
  });

  test("Upgrade: websocket without Connection: upgrade is a plain GET, its Upgrade dropped", async () => {
    const { status, upstream } = await send("Upgrade: websocket\r\n");
    expect(status).toEqual([200]);
    expect(upstream?.upgrade).toBeUndefined();
    expect(upstream?.["sec-websocket-key"]).toBeUndefined();
  });

  test("Host with an empty port is the default port", async () => {
    const got = await firstResponse(p, "GET / HTTP/1.1\r\nHost: a.test:\r\nConnection: close\r\n\r\n");
    expect(statuses(got)).toEqual([200]);
    expect(headFields(be.hits.at(-1)!.head)["x-forwarded-port"]).toEqual(["80"]);
  });

  test("TRACE and a field line over 8 KiB are forwarded", async () => {
    expect((await send("", "TRACE / HTTP/1.1")).status).toEqual([200]);
    const long = await send(`X-Long: ${"v".repeat(9000)}\r\n`);
    expect([long.status, long.upstream?.["x-long"]?.[0]?.length]).toEqual([[200], 9000]);
  });
});

// nginx relays a pod's answer to a WebSocket handshake, and tries another endpoint only on an
// error or a timeout (proxy_next_upstream error timeout), never on an answer.
describe("a WebSocket handshake a pod answers with other than 101", () => {
  test("one pod sees it, once; its answer is relayed and recorded (test/proxy/ws-refused-nginx.test.ts: side by side)", async () => {
    const pods = [await rawBackend(), await rawBackend()];
    const p = startRawProxy("bun-http", makeTable([{ host: null, path: "/", backend: makeBackend(pods.map((b) => b.port)) }]));
    try {
      const got = await firstResponse(p, "GET / HTTP/1.1\r\nHost: a.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n");
      expect(statuses(got)).toEqual([200]);
      expect(got.endsWith("\r\n\r\nok")).toBe(true);
      expect(pods.map((b) => b.hits.length).sort()).toEqual([0, 1]);
      expect(p.records.at(-1)).toMatchObject({ status: 200, upstreamStatus: 200, websocket: true });
    } finally {
      await p.stop();
      for (const b of pods) await b.stop();
    }
  });
});
