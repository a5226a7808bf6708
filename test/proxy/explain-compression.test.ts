// Explain's `compression` (use-gzip, enable-brotli) for a request's Accept-Encoding, held to
// what a real listener sends: each request is explained with its Accept-Encoding, then sent to
// the proxy's handler on a real listener in front of a raw-socket pod that answers 200 with a
// text/html body over gzip-min-length. ingress-nginx: nginx.tmpl's gzip block (gzip_vary on,
// gzip_proxied any) and the brotli block; ngx_brotli's filter runs before gzip's, so a client
// accepting both gets br; ngx_http_gzip_accept_encoding reads the tokens and their `q`.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { compile, Compiler } from "../../src/compile/compile.ts";
import { explain } from "../../src/compile/explain.ts";
import { silentLogger } from "../../src/log/logger.ts";
import { createProxyHandler } from "../../src/proxy/pipeline/handler.ts";
import { startHttpListener } from "../../src/proxy/pipeline/listener.ts";
import type { Snapshot } from "../../src/store/types.ts";
import { lookup } from "../../src/table/lookup.ts";
import type { RouteTable } from "../../src/table/types.ts";
import { loadFixture } from "../compile/snapshot.ts";
import { ingress, ingressClass, service, slice, yamlDocs } from "../e2e/objects.ts";
import { rawRequest, statusLine, testConfig } from "./helpers.ts";
import { rawBackend, type RawBackend } from "./raw.ts";

const NS = "par4";
const BODY = "<p>".padEnd(600, "a");
let pod: RawBackend;
let snapshot: Snapshot;
let table: RouteTable;
let listener: ReturnType<typeof startHttpListener>;
const cfg = testConfig({ gzip: true, gzipLevel: 5, brotli: true });

beforeAll(async () => {
  pod = await rawBackend(() => `HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: ${BODY.length}\r\nconnection: close\r\n\r\n${BODY}`);
  snapshot = loadFixture(yamlDocs([ingressClass(), service(NS, "web"), slice(NS, "web", [pod.port]), ingress(NS, "web", [{ host: "gz.test", paths: [{ path: "/", service: "web" }] }])])).snapshot;
  table = compile(snapshot, cfg).table;
  const handler = createProxyHandler({ config: cfg, table: () => table, lookup, log: silentLogger, scheme: "http" });
  listener = startHttpListener({ hostname: "127.0.0.1", port: 0, handler });
});

afterAll(async () => {
  await listener?.stop(true);
  await pod?.stop();
});

test("explain's encoding and Vary for an Accept-Encoding are the answer's", async () => {
  const cases: [string | null, "br" | "gzip" | null][] = [
    [null, null],
    ["gzip", "gzip"],
    ["gzip, br", "br"],
    ["br;q=0, gzip", "gzip"],
    ["gzip;q=0", null],
    ["identity", null],
  ];
  for (const [ae, expected] of cases) {
    const r = explain(snapshot, cfg, { host: "gz.test", path: "/", scheme: "http", ...(ae === null ? {} : { acceptEncoding: ae }) }, new Compiler(cfg)).response;
    const c = r.compression;
    expect(c, `${ae}`).toBeDefined();
    expect(c!.encoding, `Accept-Encoding ${ae}`).toBe(expected);
    const raw = await rawRequest(listener.port as number, `GET / HTTP/1.1\r\nHost: gz.test\r\n${ae === null ? "" : `Accept-Encoding: ${ae}\r\n`}Connection: close\r\n\r\n`, 10_000);
    const head = raw.slice(0, raw.indexOf("\r\n\r\n"));
    expect(statusLine(raw)).toBe(200);
    expect(/\r\ncontent-encoding: ([^\r]*)/i.exec(head)?.[1] ?? null, `Accept-Encoding ${ae}`).toBe(c!.encoding);
    expect(/\r\nvary: [^\r]*accept-encoding/i.test(head), `Accept-Encoding ${ae}: Vary`).toBe(c!.vary);
  }
  const c = explain(snapshot, cfg, { host: "gz.test", path: "/", scheme: "http" }, new Compiler(cfg)).response.compression;
  // The flags as the ConfigMap's keys set them (gzip-level 5; brotli-level 4 and the minimums by default).
  expect({ gzip: c?.gzip?.level, gzipMin: c?.gzip?.minLength, brotli: c?.brotli?.level, brotliMin: c?.brotli?.minLength, vary: c?.vary }).toEqual({ gzip: 5, gzipMin: cfg.gzipMinLength, brotli: cfg.brotliLevel, brotliMin: cfg.brotliMinLength, vary: true });
  // With both off (ingress-nginx's defaults) nothing is compressed, and explain says nothing of it.
  const off = testConfig();
  expect(explain(snapshot, off, { host: "gz.test", path: "/", scheme: "http", acceptEncoding: "gzip" }, new Compiler(off)).response.compression).toBeUndefined();
});

// ingress-nginx's gzip-disable is nginx's `gzip_disable` (nginx.tmpl's gzip block), run by
// ngx_http_gzip_ok on the request's User-Agent (a case-insensitive regex; `msie6` is nginx's own
// test for MSIE 4-6 without SV1); ngx_brotli never reads it. block-user-agents is nginx.tmpl's
// `map $http_user_agent $block_ua` (403 for a listed value). Explain takes the User-Agent and
// asks the relay's own decision (http/gzip.ts gzipAnswer) and the route step's list.
test("explain's encoding for a User-Agent under gzip-disable, and a blocked User-Agent, are the answer's", async () => {
  const MSIE6 = "Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1)";
  // SV1 (XP SP2) fixed MSIE 6's gzip: nginx's msie6 test lets it through.
  const SV1 = "Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1; SV1)";
  const FIREFOX = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";
  const BADBOT = "Mozilla/5.0 (compatible; BadBot/1.0)";
  const runs: [string, [string | null, "gzip" | null | 403][]][] = [
    ["msie6", [[null, "gzip"], [FIREFOX, "gzip"], [MSIE6, null], [SV1, "gzip"], ["curl/8.5.0", "gzip"], [BADBOT, 403]]],
    // A regex: case-insensitive, unanchored.
    ["CURL/|wget", [[null, "gzip"], [FIREFOX, "gzip"], ["curl/8.5.0", null], ["Wget/1.21", null], [MSIE6, "gzip"], [BADBOT, 403]]],
  ];
  for (const [gzipDisable, cases] of runs) {
    const disabled = testConfig({ gzip: true, gzipDisable, blockUserAgents: ["~*badbot"] });
    const t = compile(snapshot, disabled).table;
    const l = startHttpListener({ hostname: "127.0.0.1", port: 0, handler: createProxyHandler({ config: disabled, table: () => t, lookup, log: silentLogger, scheme: "http" }) });
    try {
      for (const [ua, expected] of cases) {
        const what = `gzip-disable ${gzipDisable}, User-Agent ${ua}`;
        const r = explain(snapshot, disabled, { host: "gz.test", path: "/", scheme: "http", acceptEncoding: "gzip", ...(ua === null ? {} : { userAgent: ua }) }, new Compiler(disabled)).response;
        const raw = await rawRequest(l.port as number, `GET / HTTP/1.1\r\nHost: gz.test\r\n${ua === null ? "" : `User-Agent: ${ua}\r\n`}Accept-Encoding: gzip\r\nConnection: close\r\n\r\n`, 10_000);
        const head = raw.slice(0, raw.indexOf("\r\n\r\n"));
        if (expected === 403) {
          expect(r, what).toMatchObject({ kind: "refused", status: 403, by: "block" });
          expect(statusLine(raw), what).toBe(403);
          continue;
        }
        expect(r.kind, what).toBe("proxied");
        expect(r.compression?.encoding, what).toBe(expected);
        expect(statusLine(raw), what).toBe(200);
        expect(/\r\ncontent-encoding: ([^\r]*)/i.exec(head)?.[1] ?? null, what).toBe(expected);
      }
    } finally {
      await l.stop(true);
    }
  }
});
