// An HTTP/2 request whose answer comes before its body ends, side by side with a real nginx
// (http2 on, as ingress-nginx's use-http2 default): nginx sends a complete early answer (413 on
// a declared length over client_max_body_size) and then resets the stream with NO_ERROR, as
// RFC 9113 §8.1 allows, so the client stops sending (ngx_http_v2_close_stream: RST_STREAM
// NO_ERROR while the request side is open); a body that stalls past client_body_timeout gets
// no answer and RST_STREAM PROTOCOL_ERROR (the request is terminated, fc->timedout). Portico's
// node:http2 listener does both (408 and a reset NO_ERROR without --ingress-nginx-compat);
// Bun.serve's HTTP/2 resets with a code of its own. node:http2 clients, loopback only; the
// nginx half is skipped where nginx is not installed.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import http2 from "node:http2";
import { nginxPage } from "../../src/http/status-page.ts";
import { makeBackend, makeTable, NGINX_BIN, startNginx, type RealNginx } from "../proxy/helpers.ts";
import { rawBackend, type RawBackend } from "../proxy/raw.ts";
import { createCertificate } from "../tls/pki.ts";
import { eventually } from "../wait.ts";
import { h2Session, startTlsProxy, type Listener } from "./helpers.ts";


/** What the client saw on one stream: the status (null: no answer), the body, and the RST_STREAM code it ended with. */
interface StreamEnd {
  readonly status: number | null;
  readonly body: string;
  readonly rstCode: number | undefined;
}

/**
 * A POST declaring 10 bytes that sends 2 and then nothing, never ending its side: the stream can
 * only close by a reset from the server. Resolves on that close (10 s at most).
 */
async function earlyPost(s: http2.ClientHttp2Session, path: string): Promise<StreamEnd> {
  const st = s.request({ ":method": "POST", ":path": path, "content-length": "10" }, { endStream: false });
  st.write("ab");
  let status: number | null = null;
  let body = "";
  let closed = false;
  st.on("response", (h) => (status = Number(h[":status"])));
  st.on("data", (c: Buffer) => (body += c.toString("latin1")));
  st.on("close", () => (closed = true));
  st.on("error", () => {});
  try {
    await eventually(() => closed, 10_000, "the stream closing");
  } finally {
    if (!closed) st.close(http2.constants.NGHTTP2_CANCEL);
  }
  return { status, body, rstCode: st.rstCode };
}

describe.skipIf(NGINX_BIN === null)("nginx with http2", () => {
  let nginx: RealNginx;
  let port: number;
  let be: RawBackend;
  let session: http2.ClientHttp2Session;
  beforeAll(async () => {
    be = await rawBackend();
    const cert = createCertificate({ subjectCN: "a.test", sans: ["a.test"] });
    nginx = await startNginx({
      prefix: "portico-nginx-h2-early-",
      files: { "cert.pem": cert.certPem, "key.pem": cert.keyPem },
      http: (port, dir) => `access_log off;
        reset_timedout_connection on; client_body_timeout 300ms;
        server { listen 127.0.0.1:${port} ssl http2; ssl_certificate ${dir}/cert.pem; ssl_certificate_key ${dir}/key.pem;
          location /small { client_max_body_size 4; proxy_pass http://127.0.0.1:${be.port}; }
          location / { proxy_pass http://127.0.0.1:${be.port}; }
        }`,
      ready: (port) => h2Session(port).then((s) => (session = s), () => false).then(Boolean),
    });
    port = nginx.port;
  });
  afterAll(async () => {
    session?.destroy();
    await nginx?.stop();
    await be.stop();
  });

  test("a declared body over the limit: the whole 413, then RST_STREAM NO_ERROR", async () => {
    expect(await earlyPost(session, "/small")).toEqual({ status: 413, body: nginxPage(413, null)!, rstCode: http2.constants.NGHTTP2_NO_ERROR });
  });

  test("a body that stalls: no answer, RST_STREAM PROTOCOL_ERROR", async () => {
    expect(await earlyPost(session, "/stall")).toEqual({ status: null, body: "", rstCode: http2.constants.NGHTTP2_PROTOCOL_ERROR });
  });
});

for (const kind of ["h2", "bunh2"] as const satisfies readonly Listener[]) describe(`Portico (${kind === "h2" ? "node:http2 listener" : "Bun.serve"})`, () => {
  let be: RawBackend;
  beforeAll(async () => {
    be = await rawBackend();
  });
  afterAll(async () => {
    await be.stop();
  });
  const start = (compat: boolean) =>
    startTlsProxy(
      makeTable([
        { host: null, path: "/small", backend: makeBackend([be.port]), options: { maxBodySize: 4 } },
        { host: null, path: "/", backend: makeBackend([be.port]) },
      ]),
      { kind, config: { ingressNginxCompat: compat, clientBodyTimeoutMs: 300, clientBodyMinRate: null } },
    );

  test("--ingress-nginx-compat: the whole 413 then RST_STREAM NO_ERROR; a stalled body gets no answer and a reset", async () => {
    const p = start(true);
    const s = await h2Session(p.port);
    try {
      expect(await earlyPost(s, "/small")).toEqual({ status: 413, body: nginxPage(413, null)!, rstCode: http2.constants.NGHTTP2_NO_ERROR });
      const stalled = await earlyPost(s, "/stall");
      expect([stalled.status, stalled.body]).toEqual([null, ""]);
      // nginx's code on the node:http2 listener; Bun.serve chooses its own (INTERNAL_ERROR).
      if (kind === "h2") expect(stalled.rstCode).toBe(http2.constants.NGHTTP2_PROTOCOL_ERROR);
      else expect(stalled.rstCode).not.toBe(http2.constants.NGHTTP2_NO_ERROR);
      expect(p.records.at(-1)).toMatchObject({ status: 408, bytesOut: 0, error: "ClientBodyTimeout" });
    } finally {
      s.destroy();
      await p.stop();
    }
  });

  // The handler counts a stream closed before its answer ended as the client's reset (rapid-reset
  // guard, streams.ts); this reset is the server's own, after the answer.
  test.skipIf(kind === "bunh2")("early answers by the dozen are not counted as the client's resets", async () => {
    let abuse = 0;
    const p = startTlsProxy(makeTable([{ host: null, path: "/", backend: makeBackend([be.port]), options: { maxBodySize: 4 } }]), {
      kind, maxResetsPerSecond: 5, onAbuse: () => void abuse++,
    });
    const s = await h2Session(p.port);
    try {
      const ends = await Promise.all(Array.from({ length: 30 }, () => earlyPost(s, "/many")));
      expect(ends.map((e) => [e.status, e.rstCode])).toEqual(ends.map(() => [413, http2.constants.NGHTTP2_NO_ERROR]));
      expect(abuse).toBe(0);
      expect(s.closed || s.destroyed).toBe(false);
    } finally {
      s.destroy();
      await p.stop();
    }
  });

  test("without it: the whole 408, then RST_STREAM NO_ERROR", async () => {
    const p = start(false);
    const s = await h2Session(p.port);
    try {
      expect(await earlyPost(s, "/stall")).toEqual({ status: 408, body: "request body timeout\n", rstCode: http2.constants.NGHTTP2_NO_ERROR });
    } finally {
      s.destroy();
      await p.stop();
    }
  });
});
