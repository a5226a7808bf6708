// A request body that stalls past client_body_timeout, and a request head that stalls past
// client_header_timeout, side by side: a real nginx configured as
// ingress-nginx configures it (nginx.tmpl: `reset_timedout_connection on`, client_body_timeout
// from the ConfigMap's client-body-timeout) and Portico. nginx reads the body
// (ngx_http_request_body.c: a read timeout returns NGX_HTTP_REQUEST_TIME_OUT, buffered or not)
// and ngx_http_finalize_request terminates a request finalized with that code instead of
// sending a page (ngx_http_request.c); ngx_http_free_request logs the 408 and, the connection
// being timed out, sets SO_LINGER 0: the client gets no byte and a reset. Portico does the
// same under --ingress-nginx-compat and answers 408 with `Connection: close` otherwise
// (docs/design.md, "Request framing and bodies"). A stalled head is the same in nginx
// (ngx_http_process_request_line and ngx_http_process_request_headers close a timed-out
// request with NGX_HTTP_REQUEST_TIME_OUT): the node:http2 listener's HTTP/1.1 side resets it
// too; Bun.serve shows no request before its head is complete, so there it is bounded by size
// only (docs/design.md, "Slow heads"). Short timeouts, loopback only; the nginx half is skipped
// where nginx is not installed.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import net from "node:net";
import { join } from "node:path";
import tls from "node:tls";
import { makeBackend, makeTable, RAW_LISTENERS, startRawProxy, answersAt, NGINX_BIN, startNginx, type RealNginx } from "./helpers.ts";
import { rawBackend, statuses, type RawBackend } from "./raw.ts";
import { eventually } from "../wait.ts";


/** What a client that stopped sending its body saw: the bytes, and whether the close was a reset. */
interface Outcome {
  readonly data: string;
  readonly reset: boolean;
}

const BODIES = {
  "Content-Length": "Content-Length: 10\r\n\r\nab",
  chunked: "Transfer-Encoding: chunked\r\n\r\n2\r\nab\r\n",
} as const;

/** A request head and the start of its body (or only the start of a head when `body` is null). */
const post = (path: string, body: string | null) => `POST ${path} HTTP/1.1\r\nHost: a.test\r\n${body ?? ""}`;

/** Send `bytes`, then nothing; resolve once the peer has closed (10 s at most). */
async function stall(port: number, bytes: string, useTls = false): Promise<Outcome> {
  let data = "";
  let reset = false;
  let closed = false;
  const sock: net.Socket = await new Promise((resolve, reject) => {
    const s: net.Socket = useTls
      ? tls.connect({ host: "127.0.0.1", port, rejectUnauthorized: false, ALPNProtocols: ["http/1.1"], servername: "a.test" }, () => resolve(s))
      : net.connect(port, "127.0.0.1", () => resolve(s));
    s.on("data", (d: Buffer) => {
      data += d.toString("latin1");
    });
    s.on("error", (e: NodeJS.ErrnoException) => {
      if (e.code === "ECONNRESET") reset = true;
    });
    s.on("close", () => {
      closed = true;
    });
    s.once("error", reject);
  });
  try {
    sock.write(Buffer.from(bytes, "latin1"));
    await eventually(() => closed, 10_000, "the peer closing");
    return { data, reset };
  } finally {
    sock.destroy();
  }
}

describe.skipIf(NGINX_BIN === null)("nginx, as ingress-nginx configures it", () => {
  let nginx: RealNginx;
  let port: number;
  let be: RawBackend;
  beforeAll(async () => {
    be = await rawBackend();
    nginx = await startNginx({
      prefix: "portico-nginx-body-timeout-",
      http: (port, dir) => `access_log ${dir}/access.log;
        reset_timedout_connection on;
        client_body_timeout 300ms; client_header_timeout 300ms;
        server { listen 127.0.0.1:${port};
          location = /ping { return 200; }
          location /buffered { proxy_pass http://127.0.0.1:${be.port}; }
          location /streamed { proxy_request_buffering off; proxy_http_version 1.1; proxy_pass http://127.0.0.1:${be.port}; }
        }`,
      ready: answersAt("/ping"),
    });
    port = nginx.port;
  });
  afterAll(async () => {
    await nginx?.stop();
    await be.stop();
  });

  for (const path of ["/buffered", "/streamed"]) {
    for (const [framing, body] of Object.entries(BODIES)) {
      test(`${path.slice(1)}, ${framing}: no byte, a reset, and a 408 in the access log`, async () => {
        expect(await stall(port, post(path, body))).toEqual({ data: "", reset: true });
        await eventually(() => readFileSync(join(nginx.dir, "access.log"), "latin1").includes(`"POST ${path} HTTP/1.1" 408 0 `), 3_000, "the access log line");
      });
    }
  }

  test("a head that stops half-way: no byte, a reset, and a 408 in the access log", async () => {
    expect(await stall(port, post("/head", null))).toEqual({ data: "", reset: true });
    await eventually(() => readFileSync(join(nginx.dir, "access.log"), "latin1").includes(`"POST /head HTTP/1.1" 408 0 `), 3_000, "the access log line");
  });
});

for (const kind of RAW_LISTENERS) describe(`Portico (${kind})`, () => {
  let be: RawBackend;
  beforeAll(async () => {
    be = await rawBackend();
  });
  afterAll(async () => {
    await be.stop();
  });
  const start = (compat: boolean, requestBufferSize?: number) =>
    startRawProxy(kind, makeTable([{ host: null, path: "/", backend: makeBackend([be.port]) }]), {
      ingressNginxCompat: compat, clientBodyTimeoutMs: 300, clientHeaderTimeoutMs: 300, clientBodyMinRate: null, ...(requestBufferSize === undefined ? {} : { requestBufferSize }),
    });

  for (const [mode, size] of [["buffered", undefined], ["streamed", 0]] as const) {
    for (const [framing, body] of Object.entries(BODIES)) {
      test(`--ingress-nginx-compat, ${mode}, ${framing}: no byte and a reset, as nginx; the record says 408 with nothing sent`, async () => {
        const p = start(true, size);
        try {
          expect(await stall(p.port, post(`/${mode}`, body), p.tls)).toEqual({ data: "", reset: true });
          await eventually(() => p.records.length === 1, 3_000, "the access record");
          expect(p.records[0]).toMatchObject({ status: 408, bytesOut: 0, error: "ClientBodyTimeout" });
          // The pod never gets the body whole.
          expect(be.hits.filter((r) => r.line.startsWith(`POST /${mode} `))).toEqual([]);
        } finally {
          await p.stop();
        }
      });
    }
  }

  test("without it: Portico's 408 with Connection: close, then the close", async () => {
    const p = start(false);
    try {
      const got = await stall(p.port, post("/plain", BODIES["Content-Length"]), p.tls);
      expect(statuses(got.data)).toEqual([408]);
      expect(got.data.toLowerCase()).toContain("\r\nconnection: close\r\n");
      expect(got.data).toContain("request body timeout\n");
      expect(p.records.at(-1)).toMatchObject({ status: 408, error: "ClientBodyTimeout" });
    } finally {
      await p.stop();
    }
  });

  // Only the node:http2 listener sees a connection before its head is complete.
  test.skipIf(kind === "bun-http")("a head that stops half-way, in either mode: no byte and a reset, as nginx", async () => {
    for (const compat of [true, false]) {
      const p = start(compat);
      try {
        expect(await stall(p.port, post("/head", null), p.tls)).toEqual({ data: "", reset: true });
        expect(be.hits.filter((r) => r.line.startsWith("POST /head "))).toEqual([]);
      } finally {
        await p.stop();
      }
    }
  });
});
