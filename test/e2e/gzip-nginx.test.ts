// ingress-nginx's gzip settings (ConfigMap use-gzip, gzip-level, gzip-min-length, gzip-types,
// gzip-disable) against the real Portico process (--manifests, --nginx-configmap, edited while
// serving). The six cases of kubernetes/ingress-nginx test/e2e/settings/gzip.go (at dbb11b92)
// assert nginx.conf text plus one request each; here each asserts what that configuration
// does to requests (nginx.tmpl's gzip block: gzip_http_version 1.1, gzip_proxied any,
// gzip_vary on), with a raw-socket backend answering as httpbun's /xml, /html and /bytes/N do.
// The rest follows nginx's ngx_http_gzip_filter_module header filter: docs/design.md
// "Response compression".
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import net from "node:net";
import { brotliCompressSync, brotliDecompressSync, constants as zlibConstants, gunzipSync } from "node:zlib";
import { rawBackend, type RawBackend } from "../proxy/raw.ts";
import { startPortico, waitReady, type Portico } from "./harness.ts";
import { ingress, ingressClass, service, slice, yamlDocs } from "./objects.ts";
import { eventually } from "../wait.ts";

const CM = { namespace: "ingress-nginx", name: "ingress-nginx-controller" };
const configMap = (data: Record<string, string>) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { ...CM }, data });

// httpbun's /xml answer is an XML document of a few hundred bytes (above gzip-min-length 256).
const XML = `<?xml version='1.0' encoding='us-ascii'?>\n<slideshow title="Sample Slide Show" date="Date of publication" author="Yours Truly">\n${"  <slide type=\"all\"><title>Wake up to WonderWidgets!</title></slide>\n".repeat(8)}</slideshow>\n`;
const HTML = `<!DOCTYPE html>\n<html><head></head><body>${"<p>Herman Melville - Moby-Dick</p>\n".repeat(12)}</body></html>\n`;
const STREAM_CHUNK = "line of streamed text, compressible\n".repeat(1000);

// 108000 bytes of pseudo-random words: text whose brotli size tells the quality apart (on one
// repeated line every quality gives about 40 bytes).
const WORDS = (() => {
  const words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu"];
  let seed = 7;
  let t = "";
  while (t.length < 108_000) {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    t += words[seed % words.length] + (seed % 7 === 0 ? "\n" : " ");
  }
  return t.slice(0, 108_000);
})();

const answer = (status: string, fields: Record<string, string>, body: string) =>
  `HTTP/1.1 ${status}\r\n${Object.entries(fields).map(([k, v]) => `${k}: ${v}\r\n`).join("")}Content-Length: ${Buffer.byteLength(body, "latin1")}\r\n\r\n${body}`;

function reply(path: string): string {
  const bytes = /^\/bytes\/(\d+)$/.exec(path);
  if (bytes) return answer("200 OK", { "Content-Type": "application/octet-stream" }, "b".repeat(Number(bytes[1])));
  switch (path) {
    case "/xml": return answer("200 OK", { "Content-Type": "application/xml" }, XML);
    case "/html": return answer("200 OK", { "Content-Type": "text/html; charset=utf-8" }, HTML);
    case "/etag": return answer("200 OK", { "Content-Type": "text/plain", ETag: '"abc"', "Accept-Ranges": "bytes", Vary: "Origin" }, XML);
    case "/encoded": return answer("200 OK", { "Content-Type": "text/plain", "Content-Encoding": "br" }, XML);
    case "/partial": return answer("206 Partial Content", { "Content-Type": "text/plain", "Content-Range": `bytes 0-${XML.length - 1}/9999` }, XML);
    case "/missing": return answer("404 Not Found", { "Content-Type": "text/plain" }, XML);
    case "/server-error": return answer("500 Internal Server Error", { "Content-Type": "text/plain" }, XML);
    // Chunked and over 64 KiB: the streamed relay, not the one read whole.
    case "/stream": {
      const chunk = (s: string) => `${s.length.toString(16)}\r\n${s}\r\n`;
      return `HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n${chunk(STREAM_CHUNK).repeat(3)}0\r\n\r\n`;
    }
    case "/words": {
      const third = WORDS.length / 3;
      const chunk = (s: string) => `${s.length.toString(16)}\r\n${s}\r\n`;
      const parts = [WORDS.slice(0, third), WORDS.slice(third, 2 * third), WORDS.slice(2 * third)];
      return `HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n${parts.map(chunk).join("")}0\r\n\r\n`;
    }
    // Headers and one chunk, then nothing more: the body never ends (a client must give up).
    case "/endless": return `HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n${(STREAM_CHUNK.length * 2).toString(16)}\r\n${STREAM_CHUNK}${STREAM_CHUNK}\r\n`;
    default: return answer("200 OK", { "Content-Type": "text/plain" }, "ok");
  }
}

/**
 * A pod that streams a chunked text body for as long as its connection takes it, each chunk new
 * text (so no compressor shrinks it to nothing), up to FIREHOSE_CAP bytes: `sent` is what it
 * wrote, `waiting` whether its socket is full (the write is held until 'drain').
 */
const FIREHOSE_CAP = 160 * 1024 * 1024;
const firehoses: { sent: number; waiting: boolean; socket: net.Socket }[] = [];
function firehose(socket: net.Socket, cap = FIREHOSE_CAP): void {
  const f = { sent: 0, waiting: false, socket };
  firehoses.push(f);
  socket.write("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n");
  let seed = firehoses.length;
  const next = () => {
    const words: string[] = [];
    for (let n = 0; n < 64 * 1024; ) {
      seed = (Math.imul(seed, 1103515245) + 12345) & 0x7fffffff;
      const w = seed.toString(36);
      words.push(w);
      n += w.length + 1;
    }
    const text = words.join(" ");
    return `${text.length.toString(16)}\r\n${text}\r\n`;
  };
  const pump = () => {
    f.waiting = false;
    while (f.sent < cap && !socket.destroyed) {
      const c = next();
      f.sent += c.length;
      if (!socket.write(c, "latin1")) {
        f.waiting = true;
        socket.once("drain", pump);
        return;
      }
    }
  };
  pump();
}

let backend: RawBackend;
let portico: Portico;
let root: string;
const write = (data: Record<string, string>) => {
  writeFileSync(join(root, "cm.tmp"), yamlDocs([configMap(data)]));
  renameSync(join(root, "cm.tmp"), join(root, "manifests", "ingress-nginx.yaml"));
};

beforeAll(async () => {
  backend = await rawBackend((req) => {
    if (req.line.startsWith("GET /firehose ")) return (firehose(req.socket), null);
    // 4 MiB of a body that a test then cuts (resets), never sending the last chunk.
    if (req.line.startsWith("GET /cut ")) return (firehose(req.socket, 4 * 1024 * 1024), null);
    return reply(req.line.split(" ")[1] ?? "/");
  });
  root = mkdtempSync(join(tmpdir(), "portico-gzip-"));
  mkdirSync(join(root, "manifests"));
  writeFileSync(join(root, "manifests", "objects.yaml"), yamlDocs([
    ingressClass(),
    service("gzip", "httpbun"),
    slice("gzip", "httpbun", [backend.port]),
    ingress("gzip", "gzip", [{ host: "gzip", paths: [{ path: "/", service: "httpbun" }] }]),
  ]));
  write({});
  portico = await startPortico(["--manifests", join(root, "manifests"), "--nginx-configmap", `${CM.namespace}/${CM.name}`, "--access-log", "off", "--workers", "1"]);
  await waitReady(portico);
});
afterAll(async () => {
  await portico?.stop("SIGKILL");
  await backend?.stop();
  rmSync(root, { recursive: true, force: true });
});

interface Got { status: number; headers: Headers; raw: Buffer }
/** A GET as the Go test's client sends it (Accept-Encoding gzip unless told), the body as sent (not inflated). */
async function get(path: string, fields: Record<string, string> = {}, method = "GET"): Promise<Got> {
  const res = await fetch(`${portico.http}${path}`, { method, headers: { host: "gzip", "accept-encoding": "gzip", ...fields }, decompress: false } as RequestInit);
  return { status: res.status, headers: res.headers, raw: Buffer.from(await res.arrayBuffer()) };
}
const encoding = async (path: string, fields: Record<string, string> = {}) => (await get(path, fields)).headers.get("content-encoding");

/** The ConfigMap is written and a request shows it applied (the settings apply live). */
async function configure(data: Record<string, string>, applied: () => Promise<boolean>) {
  write(data);
  await eventually(applied, 15_000, `ConfigMap ${JSON.stringify(data)} applied`);
}

describe("settings/gzip.go", () => {
  test("should be disabled by default", async () => {
    const r = await get("/xml");
    expect(r.status).toBe(200);
    expect(r.headers.get("content-encoding")).toBeNull();
    expect(r.headers.get("vary")).toBeNull();
    expect(r.raw.toString("latin1")).toBe(XML);
  });

  test("should be enabled with default settings", async () => {
    await configure({ "use-gzip": "true" }, async () => (await encoding("/xml")) === "gzip");
    const r = await get("/xml");
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe("application/xml");
    expect(r.headers.get("content-encoding")).toBe("gzip");
    expect(r.headers.get("vary")).toBe("Accept-Encoding");
    expect(r.headers.get("content-length")).toBe(String(r.raw.length));
    expect(gunzipSync(r.raw).toString("latin1")).toBe(XML);
  });

  test("should set gzip_comp_level to 4", async () => {
    // zlib's deflate at level 4, what nginx's gzip_comp_level 4 runs (the 10-byte gzip header aside).
    const deflated = (level: 1 | 4) => Buffer.from(Bun.gzipSync(Buffer.from(XML, "latin1"), { level })).subarray(10);
    expect(deflated(4).equals(deflated(1))).toBe(false);
    const level4 = async () => (await get("/xml")).raw.subarray(10).equals(deflated(4));
    await configure({ "use-gzip": "true", "gzip-level": "4" }, level4);
    const r = await get("/xml");
    expect(r.status).toBe(200);
    expect(r.headers.get("content-encoding")).toBe("gzip");
    expect(gunzipSync(r.raw).toString("latin1")).toBe(XML);
  });

  test("should set gzip_disable to msie6", async () => {
    await configure({ "use-gzip": "true", "gzip-disable": "msie6" }, async () => (await encoding("/xml", { "user-agent": "Mozilla/45.0 (compatible; MSIE 6.0; Windows NT 5.1)" })) === null);
    expect(await encoding("/xml", { "user-agent": "Mozilla/4.8 [en] (Windows NT 5.1; U)" })).toBe("gzip");
    const ie6 = await get("/xml", { "user-agent": "Mozilla/45.0 (compatible; MSIE 6.0; Windows NT 5.1)" });
    expect(ie6.status).toBe(200);
    expect(ie6.headers.get("content-encoding")).toBeNull();
    // gzip_vary: the answer could have been gzipped, so caches are told it varies.
    expect(ie6.headers.get("vary")).toBe("Accept-Encoding");
    expect(ie6.raw.toString("latin1")).toBe(XML);
  });

  test("should set gzip_min_length to 100", async () => {
    await configure({ "use-gzip": "true", "gzip-min-length": "100", "gzip-types": "application/octet-stream" }, async () => (await encoding("/bytes/100")) === "gzip");
    const short = await get("/bytes/99");
    expect(short.status).toBe(200);
    expect(short.headers.get("content-type")).toBe("application/octet-stream");
    expect(short.headers.get("content-encoding")).toBeNull();
    expect(short.raw.length).toBe(99);
    const long = await get("/bytes/100");
    expect(long.status).toBe(200);
    expect(long.headers.get("content-type")).toBe("application/octet-stream");
    expect(long.headers.get("content-encoding")).toBe("gzip");
    expect(gunzipSync(long.raw).toString("latin1")).toBe("b".repeat(100));
  });

  test("should set gzip_types to text/html", async () => {
    // Applied once application/octet-stream (the previous case's type) is no longer compressed.
    await configure({ "use-gzip": "true", "gzip-types": "text/html" }, async () => (await encoding("/bytes/300")) === null);
    const xml = await get("/xml");
    expect(xml.status).toBe(200);
    expect(xml.headers.get("content-type")).toBe("application/xml");
    expect(xml.headers.get("content-encoding")).toBeNull();
    const html = await get("/html");
    expect(html.status).toBe(200);
    expect(html.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(html.headers.get("content-encoding")).toBe("gzip");
    expect(gunzipSync(html.raw).toString("latin1")).toBe(HTML);
  });
});

// ngx_http_gzip_filter_module.c ngx_http_gzip_header_filter and ngx_http_core_module.c
// ngx_http_gzip_ok, under ingress-nginx's defaults with use-gzip true.
describe("nginx's gzip filter, beyond gzip.go", () => {
  beforeAll(async () => {
    await configure({ "use-gzip": "true", "gzip-types": "text/plain application/xml" }, async () => (await encoding("/etag")) === "gzip");
  });

  test("a client that does not accept gzip gets the body as it is, with Vary", async () => {
    for (const ae of ["identity", "gzip;q=0", "br, gzip; q=0.000", "*", "x-gzip2"]) {
      const r = await get("/xml", { "accept-encoding": ae });
      expect([ae, r.headers.get("content-encoding")]).toEqual([ae, null]);
      expect(r.headers.get("vary")).toBe("Accept-Encoding");
      expect(r.raw.toString("latin1")).toBe(XML);
    }
    for (const ae of ["GZIP", "deflate, gzip", "br,gzip;q=0.5", "gzip ;q=1"]) expect([ae, await encoding("/xml", { "accept-encoding": ae })]).toEqual([ae, "gzip"]);
  });

  test("a strong ETag turns weak, Accept-Ranges goes, the pod's Vary keeps its member", async () => {
    const r = await get("/etag");
    expect(r.headers.get("content-encoding")).toBe("gzip");
    expect(r.headers.get("etag")).toBe('W/"abc"');
    expect(r.headers.get("accept-ranges")).toBeNull();
    expect(r.headers.get("vary")).toBe("Origin, Accept-Encoding");
  });

  test("an answer the pod encoded, a 206, a 500 and HEAD are passed on as they are", async () => {
    const enc = await get("/encoded");
    expect(enc.headers.get("content-encoding")).toBe("br");
    expect(enc.raw.toString("latin1")).toBe(XML);
    for (const path of ["/partial", "/server-error"]) {
      const r = await get(path);
      expect([path, r.headers.get("content-encoding"), r.headers.get("vary"), r.raw.toString("latin1")]).toEqual([path, null, null, XML]);
    }
    const head = await get("/xml", {}, "HEAD");
    expect(head.status).toBe(200);
    expect(head.headers.get("content-encoding")).toBeNull();
    // 404 is one of the three statuses nginx compresses.
    expect(await encoding("/missing")).toBe("gzip");
  });

  test("a streamed body over 64 KiB is compressed as it streams (chunked, no Content-Length)", async () => {
    const r = await get("/stream");
    expect(r.status).toBe(200);
    expect(r.headers.get("content-encoding")).toBe("gzip");
    expect(r.headers.get("content-length")).toBeNull();
    expect(gunzipSync(r.raw).toString("latin1")).toBe(STREAM_CHUNK.repeat(3));
    expect(r.raw.length).toBeLessThan(STREAM_CHUNK.length);
  });

  test("a streamed body is compressed at gzip-level too (nginx's gzip_comp_level; ingress-nginx's default 1), not at zlib's default 6", async () => {
    const whole = Buffer.from(STREAM_CHUNK.repeat(3), "latin1");
    // RFC 1952 §2.3.1: XFL 4 ("compressor used fastest algorithm") is what zlib writes at
    // level 1 alone, 0 at 6. (A stream's deflate is not the one-shot call's byte for byte in
    // Bun's zlib: its blocks end where the pieces do; src/http/zlib-stream.test.ts.)
    const types = "text/plain application/xml";
    await configure({ "use-gzip": "true", "gzip-types": types }, async () => (await encoding("/stream")) === "gzip");
    const one = await get("/stream");
    expect(one.headers.get("content-encoding")).toBe("gzip");
    expect(one.headers.get("content-length")).toBeNull();
    expect(gunzipSync(one.raw).equals(whole)).toBe(true);
    expect(one.raw[8]).toBe(4);
    await configure({ "use-gzip": "true", "gzip-types": types, "gzip-level": "6" }, async () => (await get("/stream")).raw[8] === 0);
    const six = await get("/stream");
    expect(gunzipSync(six.raw).equals(whole)).toBe(true);
    expect(six.raw.length).toBeLessThan(one.raw.length);
  });

  test.each(["gzip", "identity"])("a client that goes away mid-stream ends the upstream body too (%s)", async (ae) => {
    // The request may go on a pooled connection opened earlier: the one whose last request it is.
    const endless = () => backend.conns.filter((c) => c.requests.at(-1)?.line.startsWith("GET /endless"));
    const before = new Set(endless());
    const ctl = new AbortController();
    const res = await fetch(`${portico.http}/endless`, { headers: { host: "gzip", "accept-encoding": ae }, decompress: false, signal: ctl.signal } as RequestInit);
    expect(res.headers.get("content-encoding")).toBe(ae === "gzip" ? "gzip" : null);
    ctl.abort();
    await res.arrayBuffer().catch(() => undefined);
    // The pod's connection of that request is closed by Portico: nothing is left reading it.
    await eventually(() => endless().some((c) => !before.has(c) && c.closed), 10_000, "upstream connection closed");
    // And Portico still answers.
    expect(await encoding("/xml")).toBe("gzip");
  });

  test("an unreadable gzip-level keeps the last good value and is reported", async () => {
    write({ "use-gzip": "true", "gzip-types": "text/plain application/xml", "gzip-level": "12" });
    await portico.waitForLine(/gzip-level=\\"12\\"/);
    expect(await encoding("/etag")).toBe("gzip");
  });
});

// kubernetes/ingress-nginx test/e2e/settings/brotli.go (nginx.tmpl's brotli block, ngx_brotli).
describe("settings/brotli.go", () => {
  test("should only compress responses that meet the `brotli-min-length` condition", async () => {
    await configure({ "enable-brotli": "true", "brotli-types": "application/octet-stream", "brotli-min-length": "24" }, async () => (await encoding("/bytes/24", { "accept-encoding": "br" })) === "br");
    const long = await get("/bytes/24", { "accept-encoding": "br" });
    expect(long.status).toBe(200);
    expect(long.headers.get("content-type")).toBe("application/octet-stream");
    expect(long.headers.get("content-encoding")).toBe("br");
    expect(brotliDecompressSync(long.raw).toString("latin1")).toBe("b".repeat(24));
    const short = await get("/bytes/23", { "accept-encoding": "br" });
    expect(short.status).toBe(200);
    expect(short.headers.get("content-type")).toBe("application/octet-stream");
    expect(short.headers.get("content-encoding")).toBeNull();
    expect(short.raw.toString("latin1")).toBe("b".repeat(23));
  });

  test("br is preferred to gzip when both are on and accepted; gzip for a client without br; streamed too", async () => {
    await configure({ "enable-brotli": "true", "use-gzip": "true" }, async () => (await encoding("/xml", { "accept-encoding": "gzip, br" })) === "br");
    const both = await get("/xml", { "accept-encoding": "gzip, deflate, br" });
    expect(both.headers.get("content-encoding")).toBe("br");
    expect(both.headers.get("vary")).toBe("Accept-Encoding");
    expect(brotliDecompressSync(both.raw).toString("latin1")).toBe(XML);
    expect(await encoding("/xml", { "accept-encoding": "gzip" })).toBe("gzip");
    const stream = await get("/stream", { "accept-encoding": "br" });
    expect(stream.headers.get("content-encoding")).toBe("br");
    expect(brotliDecompressSync(stream.raw).toString("latin1")).toBe(STREAM_CHUNK.repeat(3));
  });

  test("a small answer (read whole) is encoded with ngx_brotli's window too (brotli_window 512k), as a streamed one", async () => {
    // The window size is in the brotli stream's first bits (RFC 7932 §9.1 WBITS), so the bytes
    // differ from node:zlib's default window (22, 4 MiB) whatever the input's length.
    const at = (lgwin: number) => brotliCompressSync(Buffer.from(XML, "latin1"), { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 4, [zlibConstants.BROTLI_PARAM_LGWIN]: lgwin } });
    expect(at(19).equals(at(22))).toBe(false);
    await configure({ "enable-brotli": "true", "brotli-level": "4" }, async () => (await encoding("/xml", { "accept-encoding": "br" })) === "br");
    const r = await get("/xml", { "accept-encoding": "br" });
    expect(r.headers.get("content-encoding")).toBe("br");
    expect(r.headers.get("content-length")).toBe(String(r.raw.length));
    expect(r.raw.equals(at(19))).toBe(true);
  });

  test("a streamed answer is compressed at brotli-level too (ngx_brotli's brotli_comp_level), not at the encoder's default 11", async () => {
    // The streamed encoder is flushed after each piece Portico reads of the pod's body (as
    // ngx_brotli flushes on nginx's flush buffers), and where those reads end is not the pod's to
    // choose, so the bytes are not the one-shot call's; the quality is the one whose one-shot
    // size is nearest (measured on 1.4.5 for this text: 4 gives 11792 bytes, 6 8724, 11 6628;
    // a flush adds 5 to 60 bytes, 26 of them at quality 4 gave 12864).
    const whole = Buffer.from(WORDS, "latin1");
    const size = (quality: number) => brotliCompressSync(whole, { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: quality, [zlibConstants.BROTLI_PARAM_LGWIN]: 19 } }).length;
    const nearest = (n: number) => [4, 6, 11].reduce((a, b) => (Math.abs(size(b) - n) < Math.abs(size(a) - n) ? b : a));
    expect(new Set([size(4), size(6), size(11)]).size).toBe(3);
    await configure({ "enable-brotli": "true", "brotli-level": "4" }, async () => (await encoding("/xml", { "accept-encoding": "br" })) === "br");
    const four = await get("/words", { "accept-encoding": "br" });
    expect(four.headers.get("content-encoding")).toBe("br");
    expect(brotliDecompressSync(four.raw).toString("latin1")).toBe(WORDS);
    expect(nearest(four.raw.length)).toBe(4);
    await configure({ "enable-brotli": "true", "brotli-level": "6" }, async () => nearest((await get("/words", { "accept-encoding": "br" })).raw.length) === 6);
  });

  test.each(["br", "gzip", "identity"])("a pod that resets mid-body (%s): the client's answer is cut too, never ended as if whole", async (ae) => {
    await configure({ "enable-brotli": "true", "use-gzip": "true" }, async () => (await encoding("/xml", { "accept-encoding": ae })) === (ae === "identity" ? null : ae));
    const s = await new Promise<net.Socket>((resolve, reject) => {
      const c = net.connect(portico.ports.http, "127.0.0.1", () => resolve(c));
      c.once("error", reject);
    });
    const got: Buffer[] = [];
    const closed = new Promise<void>((resolve) => {
      s.on("data", (d: Buffer) => void got.push(d));
      s.on("error", () => {});
      s.on("close", () => resolve());
    });
    const before = firehoses.length;
    s.write(`GET /cut HTTP/1.1\r\nHost: gzip\r\nAccept-Encoding: ${ae}\r\n\r\n`);
    // The pod cuts once the client has the status and some of the body (the encoders are
    // flushed after each piece read, so some of the 4 MiB has come by then).
    await eventually(() => firehoses.length > before && Buffer.concat(got).includes("\r\n\r\n"), 30_000, "the status and some body reached the client");
    firehoses[before]!.socket.resetAndDestroy();
    await closed;
    const raw = Buffer.concat(got).toString("latin1");
    // RFC 9112 §7.1: only the last chunk ends a chunked body; a cut one is a connection closed
    // without it (nginx closes its client's connection so too).
    expect(raw).toStartWith("HTTP/1.1 200 ");
    expect(raw.toLowerCase()).toContain("\r\ntransfer-encoding: chunked\r\n");
    expect(raw.endsWith("\r\n0\r\n\r\n")).toBe(false);
    expect(await encoding("/xml", { "accept-encoding": ae })).toBe(ae === "identity" ? null : ae);
  });

  test.each(["br", "gzip", "identity"])("a client that stops reading a never-ending streamed answer (%s): the pod is held back, Portico buffers a bounded amount", async (ae) => {
    await configure({ "enable-brotli": "true", "use-gzip": "true" }, async () => (await encoding("/xml", { "accept-encoding": ae })) === (ae === "identity" ? null : ae));
    const before = firehoses.length;
    // A client that never reads: no 'data' listener, so nothing is taken off its socket past
    // the stream's own small buffer.
    const s = await new Promise<net.Socket>((resolve, reject) => {
      const c = net.connect(portico.ports.http, "127.0.0.1", () => resolve(c));
      c.once("error", reject);
    });
    s.write(`GET /firehose HTTP/1.1\r\nHost: gzip\r\nAccept-Encoding: ${ae}\r\n\r\n`);
    await eventually(() => firehoses.length > before, 10_000, "the pod got the request");
    const f = firehoses[before]!;
    // Backpressure reaches the pod: its writes stay held (the same count over 40 polls), far
    // below what it would send. Socket buffers on loopback hold a few MiB each way; a relay
    // that kept reading would take all FIREHOSE_CAP bytes.
    let last = -1;
    let same = 0;
    await eventually(() => {
      same = f.waiting && f.sent === last ? same + 1 : 0;
      last = f.sent;
      return same >= 40 || f.sent >= FIREHOSE_CAP;
    }, 120_000, "the pod's writes held, or all of them taken", 50);
    expect(f.sent).toBeLessThan(64 * 1024 * 1024);
    s.destroy();
    await eventually(() => f.socket.destroyed || f.socket.closed, 10_000, "the pod's connection closed after the client left");
    expect(await encoding("/xml", { "accept-encoding": ae })).toBe(ae === "identity" ? null : ae);
  });

});
