// The longest request line, side by side: a real nginx with ingress-nginx's
// large-client-header-buffers (`4 8k`, internal/ingress/controller/config/config.go) reads the
// line into one 8 KiB buffer and answers 414 to one that does not fit, CRLF included
// (ngx_http_request.c: ngx_http_alloc_large_header_buffer declines, "client sent too long URI";
// ngx_http_special_response.c turns keep-alive off for 414). Portico does the same under
// --ingress-nginx-compat, with nginx's page; without it Bun's own limits apply. Raw sockets,
// loopback only; the nginx half is skipped where nginx is not installed.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { nginxPage } from "../../src/http/status-page.ts";
import { makeBackend, makeTable, startProxy, answersAt, NGINX_BIN, startNginx, type RealNginx } from "./helpers.ts";
import { firstResponse, rawBackend, statuses, type RawBackend } from "./raw.ts";


/** A request whose request line is `length` bytes long before its CRLF. */
function requestWithLine(method: string, length: number, query = false): string {
  const fixed = `${method} / HTTP/1.1`.length;
  const pad = length - fixed;
  const target = query ? `/q?x=${"b".repeat(pad - 4)}` : `/${"a".repeat(pad)}`;
  const line = `${method} ${target} HTTP/1.1`;
  if (line.length !== length) throw new Error("bad arithmetic");
  return `${line}\r\nHost: a.test\r\nConnection: close\r\n\r\n`;
}

// 8190 + CRLF fills the buffer exactly; one byte more does not fit.
const CASES = [
  ["GET", 8190, false, 200],
  ["GET", 8191, false, 414],
  ["GET", 8191, true, 414],
  ["DELETE", 8190, true, 200],
  ["DELETE", 8191, false, 414],
] as const;

describe.skipIf(NGINX_BIN === null)("nginx with large_client_header_buffers 4 8k", () => {
  let nginx: RealNginx;
  let port: number;
  beforeAll(async () => {
    nginx = await startNginx({
      prefix: "portico-nginx-line-",
      http: (port) => `access_log off;
        large_client_header_buffers 4 8k;
        server { listen 127.0.0.1:${port}; location / { return 200; } }`,
      ready: answersAt("/"),
    });
    port = nginx.port;
  });
  afterAll(() => nginx?.stop());

  for (const [method, length, query, status] of CASES) {
    test(`${method}, a request line of ${length} bytes${query ? " (long query)" : ""}: ${status}`, async () => {
      const got = await firstResponse({ port }, requestWithLine(method, length, query));
      expect(statuses(got)).toEqual([status]);
      if (status === 414) {
        expect(got.toLowerCase()).toContain("\r\nconnection: close\r\n");
        expect(got.endsWith(`\r\n\r\n${nginxPage(414, null)}`)).toBe(true);
      }
    });
  }
});

describe("Portico", () => {
  let be: RawBackend;
  beforeAll(async () => {
    be = await rawBackend();
  });
  afterAll(async () => {
    await be.stop();
  });
  const table = () => makeTable([{ host: null, path: "/", backend: makeBackend([be.port]) }]);

  test("--ingress-nginx-compat: nginx's 414 page for a line that does not fit, with Connection: close; nothing upstream", async () => {
    const p = startProxy(table(), { ingressNginxCompat: true });
    try {
      for (const [method, length, query, status] of CASES) {
        const before = be.hits.length;
        const got = await firstResponse(p, requestWithLine(method, length, query));
        expect([method, length, statuses(got)]).toEqual([method, length, [status]]);
        if (status !== 414) continue;
        expect(got.toLowerCase()).toContain("\r\nconnection: close\r\n");
        expect(got.toLowerCase()).toContain("\r\ncontent-type: text/html\r\n");
        expect(got.endsWith(`\r\n\r\n${nginxPage(414, null)}`)).toBe(true);
        expect(be.hits.length).toBe(before);
        expect(p.records.at(-1)).toMatchObject({ status: 414, error: "UriTooLong" });
      }
    } finally {
      await p.stop();
    }
  });

  test("without it: the line is Bun's to bound, and an 8191-byte one is served", async () => {
    const p = startProxy(table());
    try {
      expect(statuses(await firstResponse(p, requestWithLine("GET", 8191)))).toEqual([200]);
    } finally {
      await p.stop();
    }
  });
});
