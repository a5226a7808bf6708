// The largest request head, side by side: a real nginx with ingress-nginx's
// large-client-header-buffers (`4 8k`, internal/ingress/controller/config/config.go, and its
// client-header-buffer-size `1k`) reads a head into those buffers, a header line into one of
// them, and answers 400 with the page of its internal 494 "Request Header Or Cookie Too Large"
// to a head or a line that does not fit (ngx_http_request.c ngx_http_alloc_large_header_buffer;
// ngx_http_special_response.c ngx_http_error_494_page, keep-alive off). Portico does the same
// under --ingress-nginx-compat, in a process started as every Portico process is (Bun's parser
// limit raised to 64 KiB: config/header-buffers.ts); without the flag a head over the limit gets
// 431. Raw sockets, loopback only; the nginx half is skipped where nginx is not installed.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as http2 from "node:http2";
import { nginxPage } from "../../src/http/status-page.ts";
import { answersAt, NGINX_BIN, spawnProxyProcess, startNginx, type RealNginx } from "./helpers.ts";
import { firstResponse, rawBackend, statuses, type RawBackend } from "./raw.ts";

/**
 * A request whose head (request line to the blank line, CRLFs included) is exactly `bytes`
 * long, in header lines of `line` bytes (CRLF included), the last one shorter.
 */
function headOf(bytes: number, line = 4000): string {
  const start = "GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n";
  let rest = bytes - start.length - 2;
  let head = start;
  for (let i = 0; rest > 0; i++) {
    const n = Math.min(line, rest);
    const name = `x-big-${String(i).padStart(3, "0")}: `;
    if (n < name.length + 3) throw new Error("bad arithmetic");
    head += `${name}${"c".repeat(n - name.length - 2)}\r\n`;
    rest -= n;
  }
  head += "\r\n";
  if (head.length !== bytes) throw new Error("bad arithmetic");
  return head;
}

const KIB = 1024;
/** [what, request, status] with ingress-nginx's `4 8k`. */
const DEFAULT_CASES: readonly (readonly [string, string, number])[] = [
  ["a 15 KiB head", headOf(15 * KIB), 200],
  ["a 17 KiB head", headOf(17 * KIB), 200],
  ["a 24 KiB head", headOf(24 * KIB), 200],
  ["a 31 KiB head", headOf(31 * KIB), 200],
  ["a 33 KiB head", headOf(33 * KIB), 400],
  // One line fills an 8 KiB buffer exactly, CRLF included; one byte more does not fit.
  ["an 8,192-byte header line", headOf(8192 + 200, 8192), 200],
  ["an 8,193-byte header line", headOf(8193 + 200, 8193), 400],
];
/** With `4 16k` (what ingress-nginx users set for large SSO cookies). */
const LARGE_CASES: readonly (readonly [string, string, number])[] = [
  ["a 33 KiB head", headOf(33 * KIB), 200],
  ["a 60 KiB head", headOf(60 * KIB), 200],
  ["a 12 KiB header line", headOf(13 * KIB, 12 * KIB), 200],
  ["a 16,385-byte header line", headOf(16385 + 200, 16385), 400],
];

function expectTooLarge(got: string): void {
  expect(statuses(got)).toEqual([400]);
  expect(got.toLowerCase()).toContain("\r\nconnection: close\r\n");
  expect(got.endsWith(`\r\n\r\n${nginxPage(400, null, "Request Header Or Cookie Too Large")}`)).toBe(true);
}

for (const [buffers, cases] of [["4 8k", DEFAULT_CASES], ["4 16k", LARGE_CASES]] as const) {
  describe.skipIf(NGINX_BIN === null)(`nginx with large_client_header_buffers ${buffers}`, () => {
    let nginx: RealNginx;
    beforeAll(async () => {
      nginx = await startNginx({
        prefix: "portico-nginx-head-",
        http: (port) => `access_log off;
          client_header_buffer_size 1k;
          large_client_header_buffers ${buffers};
          server { listen 127.0.0.1:${port}; location / { return 200; } }`,
        ready: answersAt("/"),
      });
    });
    afterAll(() => nginx?.stop());

    for (const [what, request, status] of cases) {
      test(`${what}: ${status}`, async () => {
        const got = await firstResponse(nginx, request);
        if (status === 400) expectTooLarge(got);
        else expect(statuses(got)).toEqual([status]);
      });
    }
  });

  describe(`Portico --ingress-nginx-compat --large-client-header-buffers="${buffers}"`, () => {
    let be: RawBackend;
    let proxy: Awaited<ReturnType<typeof spawnProxyProcess>>;
    beforeAll(async () => {
      be = await rawBackend();
      proxy = await spawnProxyProcess({ PORTICO_TEST_BACKEND_PORT: String(be.port), PORTICO_TEST_COMPAT: "1", PORTICO_TEST_HEADER_BUFFERS: buffers });
    });
    afterAll(async () => {
      proxy?.proc.kill();
      await proxy?.proc.exited;
      await be?.stop();
    });

    for (const [what, request, status] of cases) {
      test(`${what}: ${status}${status === 400 ? ", nginx's page, nothing upstream" : ""}`, async () => {
        const before = be.hits.length;
        const got = await firstResponse(proxy, request);
        if (status === 400) {
          expectTooLarge(got);
          expect(be.hits.length).toBe(before);
        } else {
          expect(statuses(got)).toEqual([status]);
          // The backend got every line.
          expect(be.hits.at(-1)?.head.length).toBeGreaterThan(request.length - 300);
        }
      });
    }
  });
}

describe("Portico without --ingress-nginx-compat (4 8k)", () => {
  let be: RawBackend;
  let proxy: Awaited<ReturnType<typeof spawnProxyProcess>>;
  beforeAll(async () => {
    be = await rawBackend();
    proxy = await spawnProxyProcess({ PORTICO_TEST_BACKEND_PORT: String(be.port) });
  });
  afterAll(async () => {
    proxy?.proc.kill();
    await proxy?.proc.exited;
    await be?.stop();
  });

  test("a 31 KiB head and an 8,193-byte line are served; a 33 KiB head gets 431 with Connection: close, nothing upstream", async () => {
    expect(statuses(await firstResponse(proxy, headOf(31 * KIB)))).toEqual([200]);
    expect(statuses(await firstResponse(proxy, headOf(8193 + 200, 8193)))).toEqual([200]);
    const before = be.hits.length;
    const got = await firstResponse(proxy, headOf(33 * KIB));
    expect(statuses(got)).toEqual([431]);
    expect(got.toLowerCase()).toContain("\r\nconnection: close\r\n");
    expect(got.endsWith("\r\n\r\nrequest header fields too large\n")).toBe(true);
    expect(be.hits.length).toBe(before);
  });
});

// Over HTTP/2 (h2c with prior knowledge) nginx counts the decoded fields against the same
// buffers and ends the connection past them: GOAWAY ENHANCE_YOUR_CALM (11),
// ngx_http_v2_state_header_block / ngx_http_v2_state_field_len, "client sent too large header".
// Bun.serve cannot tell Portico which protocol a request came on, so Portico answers the same
// 400 as over HTTP/1.1; below the limit both serve.
/** `:status` of one request with `bytes` of header fields (4,000 a field), or how it ended. */
async function h2Status(port: number, bytes: number): Promise<string> {
  const c = http2.connect(`http://127.0.0.1:${port}`, { maxSendHeaderBlockLength: 1 << 20 });
  try {
    return await new Promise<string>((resolve) => {
      c.on("error", () => resolve("error"));
      c.on("goaway", (code) => resolve(`goaway ${code}`));
      const h: Record<string, string> = { ":path": "/", ":authority": "a.test" };
      for (let i = 0, rest = bytes; rest > 0; i++, rest -= 4000) h[`x-big-${String(i).padStart(3, "0")}`] = "c".repeat(Math.min(4000, rest) - 10);
      const r = c.request(h, { endStream: true });
      r.on("response", (head) => resolve(String(head[":status"])));
      r.on("error", () => resolve("stream error"));
      r.resume();
    });
  } finally {
    c.destroy();
  }
}

const H2_CASES = [
  [17 * KIB, "200", "200"],
  [31 * KIB, "200", "200"],
  [33 * KIB, `goaway ${http2.constants.NGHTTP2_ENHANCE_YOUR_CALM}`, "400"],
] as const;

describe.skipIf(NGINX_BIN === null)("nginx over h2c with large_client_header_buffers 4 8k", () => {
  let nginx: RealNginx;
  beforeAll(async () => {
    nginx = await startNginx({
      prefix: "portico-nginx-head-h2-",
      http: (port) => `access_log off;
        client_header_buffer_size 1k;
        large_client_header_buffers 4 8k;
        server { listen 127.0.0.1:${port} http2; location / { return 200; } }`,
      ready: async (port) => (await h2Status(port, 100).catch(() => "")) === "200",
    });
  });
  afterAll(() => nginx?.stop());

  for (const [bytes, status] of H2_CASES) {
    test(`${bytes / KIB} KiB of fields: ${status}`, async () => {
      expect(await h2Status(nginx.port, bytes)).toBe(status);
    });
  }
});

describe("Portico over h2c, --ingress-nginx-compat", () => {
  let be: RawBackend;
  let proxy: Awaited<ReturnType<typeof spawnProxyProcess>>;
  beforeAll(async () => {
    be = await rawBackend();
    proxy = await spawnProxyProcess({ PORTICO_TEST_BACKEND_PORT: String(be.port), PORTICO_TEST_COMPAT: "1" });
  });
  afterAll(async () => {
    proxy?.proc.kill();
    await proxy?.proc.exited;
    await be?.stop();
  });

  for (const [bytes, , status] of H2_CASES) {
    test(`${bytes / KIB} KiB of fields: ${status}`, async () => {
      expect(await h2Status(proxy.port, bytes)).toBe(status);
    });
  }
});
