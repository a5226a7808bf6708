// A hostile or broken pod behind an HTTP/2 backend (backend-protocol GRPC, and a Gateway API
// backend of appProtocol kubernetes.io/h2c), answering with raw frames no HTTP/2 library would
// send: a response without :status or with one outside 200..599 (RFC 9113 §8.3.2, RFC 9110
// §15), field values with CR, LF or NUL, uppercase or connection-specific names (§8.2). Each
// is Portico's 502 (gRPC: Trailers-Only UNAVAILABLE), never a header line relayed, and the
// next request on the same listener is served.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import http2 from "node:http2";
import net from "node:net";
import { makeBackend, makeTable } from "../proxy/helpers.ts";
import { FRAME, frame, hpack } from "../http2/frames.ts";
import { startTlsProxy, type TlsProxy } from "../http2/helpers.ts";

type Fields = ReadonlyArray<readonly [string, string]>;
const PREFACE_LENGTH = 24;

/**
 * An h2c pod (prior knowledge, RFC 9113 §3.3) that answers every stream with `head` (a
 * well-formed 200 when null), then "ok" and trailers with grpc-status 0.
 */
async function rawPod(head: Fields | null) {
  const sockets = new Set<net.Socket>();
  const srv = net.createServer((s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
    s.on("error", () => {});
    let buf = Buffer.alloc(0);
    let preface = false;
    s.write(frame(FRAME.SETTINGS, 0, 0));
    s.on("data", (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      if (!preface) {
        if (buf.length < PREFACE_LENGTH) return;
        buf = buf.subarray(PREFACE_LENGTH);
        preface = true;
      }
      while (buf.length >= 9) {
        const len = buf.readUIntBE(0, 3);
        if (buf.length < 9 + len) break;
        const type = buf[3]!;
        const flags = buf[4]!;
        const id = buf.readUInt32BE(5) & 0x7fffffff;
        buf = buf.subarray(9 + len);
        if (type === FRAME.SETTINGS && (flags & 1) === 0) s.write(frame(FRAME.SETTINGS, 1, 0));
        if (type !== FRAME.HEADERS) continue;
        s.write(frame(FRAME.HEADERS, 4, id, hpack(head ?? [[":status", "200"], ["content-type", "application/grpc"]])));
        s.write(frame(FRAME.DATA, 0, id, Buffer.from("\x00\x00\x00\x00\x02ok", "latin1")));
        s.write(frame(FRAME.HEADERS, 5, id, hpack([["grpc-status", "0"]])));
      }
    });
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", () => r()));
  return {
    port: (srv.address() as net.AddressInfo).port,
    stop: () => new Promise<void>((r) => {
      for (const s of sockets) s.destroy();
      srv.close(() => r());
    }),
  };
}

const GRPC_CT: readonly [string, string] = ["content-type", "application/grpc"];
const HEADS: ReadonlyArray<readonly [string, Fields]> = [
  ["no :status", [GRPC_CT]],
  [":status 600", [[":status", "600"], GRPC_CT]],
  [":status 999", [[":status", "999"], GRPC_CT]],
  [":status 101", [[":status", "101"], GRPC_CT]],
  [":status not a number", [[":status", "2xx"], GRPC_CT]],
  ["CR LF in a value", [[":status", "200"], GRPC_CT, ["x-evil", "a\r\nset-cookie: evil=1"]]],
  ["NUL in a value", [[":status", "200"], GRPC_CT, ["x-evil", "a\0b"]]],
  ["an uppercase name", [[":status", "200"], GRPC_CT, ["X-Evil", "a"]]],
  ["a connection-specific field", [[":status", "200"], GRPC_CT, ["connection", "close"]]],
];

type Pod = Awaited<ReturnType<typeof rawPod>>;
let good: Pod;
let bad: Pod[];
let proxy: TlsProxy;
beforeAll(async () => {
  good = await rawPod(null);
  bad = await Promise.all(HEADS.map(([, h]) => rawPod(h)));
  // /bad/<i> goes to the i-th pod, anything else to the good one, on both kinds of backend.
  const routes = (host: string, scheme: "grpc" | "h2c") => [
    { host, path: "/", backend: makeBackend([good.port], { scheme }) },
    ...bad.map((p, i) => ({ host, path: `/bad/${i}`, backend: makeBackend([p.port], { scheme }) })),
  ];
  proxy = startTlsProxy(makeTable([...routes("grpc.test", "grpc"), ...routes("h2c.test", "h2c")]), { kind: "h2" });
});
afterAll(async () => {
  await proxy.stop();
  await Promise.all([good, ...bad].map((p) => p.stop()));
});

interface Answer {
  readonly status: number;
  readonly headers: http2.IncomingHttpHeaders;
  readonly body: string;
}

async function call(host: string, path: string): Promise<Answer> {
  const s = http2.connect(`https://127.0.0.1:${proxy.port}`, { rejectUnauthorized: false });
  s.on("error", () => {});
  try {
    return await new Promise<Answer>((resolve, reject) => {
      // Portico answers its own failures as gRPC when the request is (content-type).
      const kind = host === "grpc.test" ? { "content-type": "application/grpc", te: "trailers" } : { "content-type": "application/octet-stream" };
      const headers = { ":method": "POST", ":path": path, ":authority": host, ...kind };
      const r = s.request(headers);
      let got: http2.IncomingHttpHeaders | null = null;
      let body = "";
      r.on("response", (h) => (got = h));
      r.on("data", (d: Buffer) => (body += d.toString("latin1")));
      r.on("error", reject);
      r.on("close", () => (got === null ? reject(new Error(`no answer (rst ${r.rstCode})`)) : resolve({ status: Number(got[":status"]), headers: got, body })));
      r.end(Buffer.from([0, 0, 0, 0, 0]));
    });
  } finally {
    s.close();
  }
}

describe.each([["an h2c backend (plain HTTP over HTTP/2)", "h2c.test"], ["a gRPC backend", "grpc.test"]])("%s", (_label, host) => {
  HEADS.forEach(([name], i) => {
    test(`a pod answering with ${name}: Portico's own error, nothing of the pod's head relayed; the next call is served`, async () => {
      const r = await call(host, `/bad/${i}`);
      if (host === "grpc.test") {
        // Portico's own failure on a gRPC request is Trailers-Only (grpc-status.ts): 14 is UNAVAILABLE.
        expect(r.status).toBe(200);
        expect(r.headers["grpc-status"]).toBe("14");
      } else {
        expect(r.status).toBe(502);
      }
      expect(JSON.stringify(r.headers)).not.toContain("evil");
      const after = await call(host, "/good");
      expect(after.status).toBe(200);
      expect(after.body).toBe("\x00\x00\x00\x00\x02ok");
    });
  });
});
