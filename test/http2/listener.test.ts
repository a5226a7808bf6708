// The HTTP/2 listener with real clients (curl, node:http2, raw frames, Bun's WebSocket): ALPN
// h2 and HTTP/1.1 on one port, per-SNI certificates and their live rotation, pseudo-headers,
// request bodies and their framing, drain by GOAWAY, WebSockets over its HTTP/1.1 side.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import net from "node:net";
import { createDrain } from "../../src/proxy/pipeline/drain.ts";
import { createCertificate } from "../tls/pki.ts";
import { buildTlsEntries } from "../../src/tls/sni.ts";
import { generateDefaultCertificate, DEFAULT_CERT_CN } from "../../src/tls/default-cert.ts";
import { createPemChecker } from "../../src/tls/pem.ts";
import { echoBackend, makeBackend, makeTable, quietLog } from "../proxy/helpers.ts";
import { binding, peerCertificate } from "../tls/helpers.ts";
import { FRAME, headersFrame, rawH2, frame } from "./frames.ts";
import { curl, h2Fetch, h2Request, h2Session, startTlsProxy, TLS_SETTINGS, type TlsProxy } from "./helpers.ts";
import { eventually } from "../wait.ts";

const echo = echoBackend("echo");
let proxy: TlsProxy;
beforeAll(() => {
  proxy = startTlsProxy(makeTable([{ host: null, path: "/", backend: makeBackend([echo.port]) }]), { hosts: ["a.test", "*.w.test"] });
});
afterAll(async () => {
  await proxy.stop();
  await echo.stop();
});

const resolve = (host: string) => ["--resolve", `${host}:${proxy.port}:127.0.0.1`];

test("curl here speaks HTTP/2", async () => {
  const v = await curl(["-V"]);
  expect(v.out).toMatch(/^Features:.*\bHTTP2\b/m);
});

test("one port: ALPN h2 for h2 clients, HTTP/1.1 for the others, the same handler behind both", async () => {
  const h2 = await curl(["-k", "--http2", "-w", "\n%{http_version}", ...resolve("a.test"), `https://a.test:${proxy.port}/v?x=1`]);
  const h1 = await curl(["-k", "--http1.1", "-w", "\n%{http_version}", ...resolve("a.test"), `https://a.test:${proxy.port}/v?x=1`]);
  for (const [r, version] of [[h2, "2"], [h1, "1.1"]] as const) {
    const [json, v] = r.out.split("\n");
    expect(v).toBe(version);
    const seen = JSON.parse(json!);
    expect(seen.path).toBe("/v?x=1");
    expect(seen.headers["x-forwarded-proto"]).toBe("https");
    expect(seen.headers.host).toBe(`a.test:${proxy.port}`);
  }
});

describe("certificates", () => {
  test("SNI picks the host's certificate, a wildcard covers one label, the rest get the default", async () => {
    const h2 = { ALPNProtocols: ["h2"] };
    expect((await peerCertificate(proxy.port, "a.test", h2)).cn).toBe("a.test");
    expect((await peerCertificate(proxy.port, "A.Test", h2)).cn).toBe("a.test");
    expect((await peerCertificate(proxy.port, "x.w.test", h2)).cn).toBe("*.w.test");
    expect((await peerCertificate(proxy.port, "a.b.w.test", h2)).cn).toBe(DEFAULT_CERT_CN);
    expect((await peerCertificate(proxy.port, "nobody.test", h2)).cn).toBe(DEFAULT_CERT_CN);
    expect((await peerCertificate(proxy.port, undefined, h2)).cn).toBe(DEFAULT_CERT_CN);
  });

  test("a rotation serves new handshakes the new certificate; an open session keeps working", async () => {
    const p = startTlsProxy(makeTable([{ host: null, backend: makeBackend([echo.port]) }]), { hosts: ["r.test"] });
    try {
      const before = await h2Session(p.port, "r.test");
      expect((await h2Request(before, { ":path": "/1", ":authority": "r.test" })).status).toBe(200);
      const v2 = createCertificate({ subjectCN: "r.test v2", sans: ["r.test"] });
      const def2 = createCertificate({ subjectCN: "default v2", sans: ["portico.invalid"] });
      const built = buildTlsEntries([binding("r.test", "default/r", v2, "default/r@2")], { ...generateDefaultCertificate(), cert: def2.certPem, key: def2.keyPem, version: "d2" }, TLS_SETTINGS, { checker: createPemChecker() });
      p.listener.update(built.entries, built.fingerprint);
      expect(p.listener.rotations).toBe(1);
      expect((await peerCertificate(p.port, "r.test", { ALPNProtocols: ["h2"] })).cn).toBe("r.test v2");
      // Clients without SNI get the server's own context, swapped too.
      expect((await peerCertificate(p.port, undefined, { ALPNProtocols: ["h2"] })).cn).toBe("default v2");
      expect((await h2Request(before, { ":path": "/2", ":authority": "r.test" })).status).toBe(200);
      before.close();
    } finally {
      await p.stop();
    }
  });

  test("ten rotations under load: no request fails, on open sessions or on new ones", async () => {
    const p = startTlsProxy(makeTable([{ host: null, backend: makeBackend([echo.port]) }]), { hosts: ["load.test"] });
    const failures: string[] = [];
    let ok = 0;
    let running = true;
    const client = async (fresh: boolean) => {
      let s = await h2Session(p.port, "load.test");
      while (running) {
        try {
          const r = await h2Request(s, { ":path": "/l", ":authority": "load.test" });
          if (r.status === 200) ok++;
          else failures.push(`status ${r.status}`);
        } catch (e) {
          failures.push(String(e));
        }
        if (fresh) {
          s.close();
          s = await h2Session(p.port, "load.test").catch((e) => (failures.push(String(e)), h2Session(p.port, "load.test")));
        }
      }
      s.close();
    };
    try {
      const clients = [client(false), client(false), client(true), client(true)];
      for (let i = 1; i <= 10; i++) {
        const pem = createCertificate({ subjectCN: `load v${i}`, sans: ["load.test"] });
        const built = buildTlsEntries([binding("load.test", "default/load", pem, `default/load@${i}`)], generateDefaultCertificate(), TLS_SETTINGS, { checker: createPemChecker() });
        p.listener.update(built.entries, built.fingerprint);
        await eventually(() => ok >= i * 20);
      }
      running = false;
      await Promise.all(clients);
      expect(p.listener.rotations).toBe(10);
      expect(failures).toEqual([]);
      expect((await peerCertificate(p.port, "load.test", { ALPNProtocols: ["h2"] })).cn).toBe("load v10");
    } finally {
      running = false;
      await p.stop();
    }
  });

  test("--tls-min-version 1.3 refuses a TLS 1.2 client on the HTTP/2 listener too", async () => {
    const built = buildTlsEntries([], generateDefaultCertificate(), { ...TLS_SETTINGS, minVersion: "1.3" }, { checker: createPemChecker() });
    const p = startTlsProxy(makeTable([]));
    try {
      p.listener.update(built.entries, built.fingerprint);
      expect((await peerCertificate(p.port, "x.test", { maxVersion: "TLSv1.3", ALPNProtocols: ["h2"] })).protocol).toBe("TLSv1.3");
      await expect(peerCertificate(p.port, "x.test", { maxVersion: "TLSv1.2", ALPNProtocols: ["h2"] })).rejects.toThrow();
    } finally {
      await p.stop();
    }
  });
});

describe("requests", () => {
  test(":authority is the host; split cookie fields are joined with '; ' (RFC 9113 §8.2.3)", async () => {
    const s = await h2Session(proxy.port);
    try {
      const r = await h2Request(s, { ":path": "/c", ":authority": "Host.Test:8443", cookie: ["a=1", "b=2"] });
      const seen = JSON.parse(String(r.body));
      expect(seen.headers.host).toBe("Host.Test:8443");
      expect(seen.headers.cookie).toBe("a=1; b=2");
    } finally {
      s.close();
    }
  });

  test("a Host field naming another host than :authority is refused (RFC 9113 §8.3.1)", async () => {
    const before = echo.seen.length;
    const c = await rawH2(proxy.port);
    c.write(headersFrame(1, [[":method", "GET"], [":scheme", "https"], [":authority", "a.test"], [":path", "/"], ["host", "evil.test"]]));
    await eventually(() => c.frames.some((f) => f.type === FRAME.HEADERS && f.id === 1));
    const status = c.frames.find((f) => f.type === FRAME.HEADERS && f.id === 1)!;
    // ":status: 400" as HPACK static index 8..14 or a literal; node:http2 encodes 400 as index 12 (0x8c).
    expect(status.payload[0]).toBe(0x8c);
    c.close();
    expect(echo.seen.length).toBe(before);
  });

  test("a method `new Request` would rewrite (unknown, lowercase) is refused, not turned into GET", async () => {
    const s = await h2Session(proxy.port);
    try {
      const before = echo.seen.length;
      expect((await h2Request(s, { ":method": "BREW", ":path": "/" })).status).toBe(400);
      expect((await h2Request(s, { ":method": "PROPFIND", ":path": "/" })).status).toBe(200);
      expect(echo.seen.length).toBe(before + 1);
      expect(echo.seen.at(-1)!.method).toBe("PROPFIND");
    } finally {
      s.close();
    }
  });

  test("a streamed upload reaches the backend whole; a body longer than its Content-Length is reset", async () => {
    const s = await h2Session(proxy.port);
    try {
      const big = "x".repeat(3 * 1024 * 1024);
      const r = await h2Request(s, { ":method": "POST", ":path": "/up" }, big);
      expect(r.status).toBe(200);
      expect(JSON.parse(String(r.body)).body.length).toBe(big.length);
    } finally {
      s.close();
    }
    const c = await rawH2(proxy.port);
    const fields = [[":method", "POST"], [":scheme", "https"], [":authority", "a.test"], [":path", "/cl"], ["content-length", "3"]] as const;
    c.write(headersFrame(1, fields, { endStream: false }));
    c.write(frame(FRAME.DATA, 1, 1, Buffer.from("too long")));
    await eventually(() => c.resets().has(1));
    expect(c.resets().get(1)).toBe(1); // PROTOCOL_ERROR
    expect(echo.seen.some((x) => x.url.endsWith("/cl"))).toBe(false);
    c.close();
  });

  test("a GET with a body is refused as on Bun.serve, without ending the connection", async () => {
    const s = await h2Session(proxy.port);
    let goaway = false;
    s.on("goaway", () => (goaway = true));
    try {
      expect((await h2Request(s, { ":method": "GET", ":path": "/getbody" }, "q=1")).status).toBe(400);
      expect(echo.seen.some((x) => x.url.endsWith("/getbody"))).toBe(false);
      // An HTTP/1.1 connection would close here (the body may be unread); HTTP/2 streams are
      // framed apart, so the next request goes on the same connection.
      expect((await h2Request(s, { ":path": "/after" })).status).toBe(200);
      expect(goaway).toBe(false);
    } finally {
      s.close();
    }
  });

  test("a Content-Length on a HEADERS frame that ends the stream is malformed (RFC 9113 §8.1.1)", async () => {
    // Bun's frame parser resets it before the listener sees it; request.ts checks it as well.
    const c = await rawH2(proxy.port);
    c.write(headersFrame(1, [[":method", "POST"], [":scheme", "https"], [":authority", "a.test"], [":path", "/nobody"], ["content-length", "5"]]));
    await eventually(() => c.resets().has(1));
    expect(c.resets().get(1)).toBe(1); // PROTOCOL_ERROR
    expect(echo.seen.some((x) => x.url.endsWith("/nobody"))).toBe(false);
    c.close();
  });
});

test("hop-by-hop fields from the backend never reach an HTTP/2 client (RFC 9113 §8.2.2)", async () => {
  // A raw backend: its response carries every connection-specific field there is.
  const raw = net.createServer((sock) => {
    sock.once("data", () => {
      sock.end("HTTP/1.1 200 OK\r\nConnection: keep-alive, x-hop\r\nKeep-Alive: timeout=5\r\nX-Hop: 1\r\nUpgrade: h2c\r\nProxy-Connection: keep-alive\r\nTransfer-Encoding: chunked\r\nX-Kept: yes\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
    });
  });
  await new Promise<void>((r) => raw.listen(0, "127.0.0.1", r));
  const port = (raw.address() as net.AddressInfo).port;
  const p = startTlsProxy(makeTable([{ host: null, backend: makeBackend([port]) }]));
  const s = await h2Session(p.port);
  try {
    const r = await h2Request(s, { ":path": "/" });
    expect(r.status).toBe(200);
    expect(String(r.body)).toBe("hello");
    expect(r.headers["x-kept"]).toBe("yes");
    for (const k of ["connection", "keep-alive", "x-hop", "upgrade", "proxy-connection", "transfer-encoding"]) expect(r.headers[k]).toBeUndefined();
  } finally {
    s.close();
    await p.stop();
    raw.close();
  }
});

describe("drain", () => {
  let release!: () => void;
  let gate: Promise<void>;
  const slow = Bun.serve({ hostname: "127.0.0.1", port: 0, async fetch(req) { if (new URL(req.url).pathname === "/slow") await gate; return new Response("done"); } });
  afterAll(() => slow.stop(true));

  test("while draining, where HTTP/1.1 gets Connection: close, HTTP/2 gets GOAWAY; streams in flight complete", async () => {
    gate = new Promise<void>((r) => (release = r));
    const p = startTlsProxy(makeTable([{ host: null, backend: makeBackend([slow.port as number]) }]));
    // A long delay: what is checked is the time before the listener stops accepting.
    const drain = createDrain({ config: { shutdownDelayMs: 60_000, shutdownGracePeriodMs: 5_000 }, servers: () => p.listener.servers, handlers: [p.handler], log: quietLog });
    const s = await h2Session(p.port);
    let goaway = false;
    s.on("goaway", () => (goaway = true));
    try {
      const inflight = h2Request(s, { ":path": "/slow" });
      await eventually(() => p.listener.servers[0]!.pendingRequests === 1);
      void drain.begin();
      const fast = await h2Request(s, { ":path": "/fast" });
      expect(fast.status).toBe(200);
      expect(fast.headers.connection).toBeUndefined();
      await eventually(() => goaway);
      release();
      const r = await inflight;
      expect(r.status).toBe(200);
      expect(String(r.body)).toBe("done");
      // Still accepting during the delay, as the HTTP/1.1 listeners are; that session is told too.
      const again = await h2Session(p.port);
      let told = false;
      again.on("goaway", () => (told = true));
      expect((await h2Request(again, { ":path": "/fast" })).status).toBe(200);
      await eventually(() => told);
      again.close();
    } finally {
      s.close();
      await p.stop();
    }
  });

  test("once stopped, new connections are refused and open sessions get GOAWAY", async () => {
    gate = Promise.resolve();
    const p = startTlsProxy(makeTable([{ host: null, backend: makeBackend([slow.port as number]) }]));
    const drain = createDrain({ config: { shutdownDelayMs: 0, shutdownGracePeriodMs: 5_000 }, servers: () => p.listener.servers, handlers: [p.handler], log: quietLog });
    const s = await h2Session(p.port);
    let goaway = false;
    s.on("goaway", () => (goaway = true));
    try {
      await drain.begin();
      await eventually(() => goaway);
      await expect(h2Session(p.port)).rejects.toThrow();
    } finally {
      s.close();
      await p.stop();
    }
  });
});

test("WebSocket over the listener's HTTP/1.1 side: subprotocol, frames both ways, close code", async () => {
  let closed: { code: number; reason: string } | null = null;
  const backend = Bun.serve<undefined>({
    hostname: "127.0.0.1", port: 0,
    fetch(req, server) {
      const ok = server.upgrade(req, { data: undefined, headers: { "sec-websocket-protocol": "chat.v2" } });
      return ok ? undefined : new Response("no", { status: 400 });
    },
    websocket: {
      message(ws, msg) { ws.send(typeof msg === "string" ? `echo:${msg}` : msg); },
      close(_ws, code, reason) { closed = { code, reason }; },
    },
  });
  const p = startTlsProxy(makeTable([{ host: null, backend: makeBackend([backend.port as number]) }]));
  try {
    const ws = new WebSocket(`wss://127.0.0.1:${p.port}/chat`, { protocols: ["chat.v1", "chat.v2"], tls: { rejectUnauthorized: false } } as unknown as string[]);
    ws.binaryType = "arraybuffer";
    await new Promise<void>((res, rej) => { ws.onopen = () => res(); ws.onerror = () => rej(new Error("ws error")); });
    expect(ws.protocol).toBe("chat.v2");
    const next = () => new Promise<string | ArrayBuffer>((res) => { ws.onmessage = (e) => res(e.data as string | ArrayBuffer); });
    let m = next();
    ws.send("hi");
    expect(await m).toBe("echo:hi");
    m = next();
    ws.send(new Uint8Array([1, 2, 3]));
    expect([...new Uint8Array((await m) as ArrayBuffer)]).toEqual([1, 2, 3]);
    ws.close(4001, "bye");
    await eventually(() => closed !== null);
    expect(closed!).toEqual({ code: 4001, reason: "bye" });
    await eventually(() => p.records.some((r) => r.websocket && r.status === 101));
  } finally {
    await p.stop();
    await backend.stop(true);
  }
});

test("a refused WebSocket handshake gets the handler's answer as HTTP/1.1", async () => {
  const p = startTlsProxy(makeTable([{ host: "ws.test", backend: makeBackend([]) }]));
  try {
    const r = await curl(["-k", "--http1.1", "-i", "-H", "Connection: Upgrade", "-H", "Upgrade: websocket", "-H", "Sec-WebSocket-Version: 13", "-H", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "--resolve", `ws.test:${p.port}:127.0.0.1`, `https://ws.test:${p.port}/`]);
    expect(r.out).toStartWith("HTTP/1.1 503");
  } finally {
    await p.stop();
  }
});

test("h2Fetch gives the routing suite what fetch gives it", async () => {
  const s = await h2Session(proxy.port);
  try {
    const r = await h2Fetch(s, "/f?q=1", { headers: { host: "f.test" } });
    expect(r.status).toBe(200);
    expect(((await r.json()) as { path: string }).path).toBe("/f?q=1");
  } finally {
    s.close();
  }
});
