// A streamed upstream body relayed over h2 on the HTTPS port as it runs by default (Bun.serve's
// own HTTP/2; the body through src/proxy/pipeline/body.ts meterResponseBody): relayed whole, cut
// with a reset when the upstream fails mid-body (never a clean END_STREAM), and a client that
// resets its stream aborts the upstream transfer. test/proxy/failures.test.ts checks the same
// over HTTP/1.1.
import { afterAll, beforeAll, expect, test } from "bun:test";
import http2 from "node:http2";
import { h2Session } from "./client.ts";
import { makeBackend, makeTable, startProxyOver, type TransportProxy } from "../proxy/helpers.ts";
import { eventually } from "../wait.ts";

const SIZE = 3 * 1024 * 1024 + 7;
const big = new Uint8Array(SIZE);
for (let i = 0; i < SIZE; i++) big[i] = (i * 31 + 7) & 0xff;

let rawClosed = 0;
// Raw upstream: /whole sends SIZE bytes with Content-Length; /fail sends part of a declared
// length and resets; /trickle declares a length and sends 100 bytes every 20 ms until closed.
const upstream = Bun.listen({
  hostname: "127.0.0.1",
  port: 0,
  socket: {
    data(s, d) {
      const req = d.toString();
      if (req.startsWith("GET /whole")) {
        s.write(`HTTP/1.1 200 OK\r\nContent-Length: ${SIZE}\r\n\r\n`);
        const out = s as unknown as { rest: Uint8Array };
        out.rest = big;
        const n = s.write(big);
        out.rest = big.subarray(n);
      } else if (req.startsWith("GET /fail")) {
        s.write("HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\nhello");
        setTimeout(() => s.terminate(), 50);
      } else {
        s.write("HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n");
        const t = setInterval(() => {
          if (s.write("x".repeat(100)) < 0) clearInterval(t);
        }, 20);
        (s as unknown as { t: ReturnType<typeof setInterval> }).t = t;
      }
    },
    drain(s) {
      const out = s as unknown as { rest?: Uint8Array };
      if (out.rest === undefined || out.rest.byteLength === 0) return;
      const n = s.write(out.rest);
      out.rest = out.rest.subarray(n);
    },
    close(s) {
      rawClosed++;
      clearInterval((s as unknown as { t?: ReturnType<typeof setInterval> }).t);
    },
    open() {},
  },
});

let proxy: TransportProxy;
let session: http2.ClientHttp2Session;
beforeAll(async () => {
  proxy = await startProxyOver("h2", makeTable([{ host: null, backend: makeBackend([upstream.port]) }]), {}, {}, "https");
  session = await h2Session(proxy.port);
});
afterAll(async () => {
  session.close();
  await proxy.stop();
  upstream.stop(true);
});

/** One GET: what arrived, and how the stream ended (a clean END_STREAM or a reset). */
function get(path: string, cancelAfterFirst = false): Promise<{ status: number; body: Uint8Array; clean: boolean }> {
  return new Promise((resolve, reject) => {
    const st = session.request({ ":method": "GET", ":path": path, ":authority": "relay.test" });
    const chunks: Buffer[] = [];
    let status = 0;
    let ended = false;
    st.on("response", (h) => {
      status = Number(h[":status"]);
    });
    st.on("data", (d: Buffer) => {
      chunks.push(d);
      if (cancelAfterFirst) st.close(http2.constants.NGHTTP2_CANCEL);
    });
    st.on("end", () => {
      ended = true;
    });
    st.on("error", () => {});
    st.on("close", () => {
      if (status === 0) return reject(new Error(`no response (rst ${st.rstCode})`));
      resolve({ status, body: new Uint8Array(Buffer.concat(chunks)), clean: ended && st.rstCode === http2.constants.NGHTTP2_NO_ERROR });
    });
  });
}

test("a large body is relayed whole over h2, byte for byte", async () => {
  const r = await get("/whole");
  expect(r.status).toBe(200);
  expect(r.clean).toBe(true);
  expect(r.body.byteLength).toBe(SIZE);
  expect(Bun.hash(r.body)).toBe(Bun.hash(big));
  await eventually(() => proxy.records.some((x) => x.bytesOut === SIZE && x.error === null), 5_000, "the access record of the whole body");
});

test("an upstream failing mid-body resets the h2 stream: the client never sees a clean end", async () => {
  const r = await get("/fail");
  expect(r.status).toBe(200);
  expect(new TextDecoder().decode(r.body)).toStartWith("hello");
  expect(r.clean).toBe(false);
  await eventually(() => proxy.records.some((x) => x.error === "UpstreamAborted"), 5_000, "the access record of the cut transfer");
});

test("a client that resets its h2 stream mid-body aborts the upstream transfer", async () => {
  const closedBefore = rawClosed;
  const r = await get("/trickle", true);
  expect(r.status).toBe(200);
  expect(r.clean).toBe(false);
  await eventually(() => rawClosed > closedBefore, 5_000, "the upstream connection closed");
  await eventually(() => proxy.records.some((x) => x.error === "ClientClosed"), 5_000, "the access record of the client's reset");
});
