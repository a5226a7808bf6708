// gRPC through Portico with a real client and server (@grpc/grpc-js): the four call kinds over
// GRPC (h2c) and GRPCS backends, statuses and trailers relayed, Portico's own failures as gRPC
// statuses, grpc-timeout, cancellation from either side, a backend dying mid-stream, an
// endpoint change during a long stream, long streams kept while messages flow, one upstream
// connection for many calls. Raw node:http2 backends stand in where grpc-js would hide what
// Portico does (a backend that ignores grpc-timeout, one that resets a stream).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as grpc from "@grpc/grpc-js";
import http2 from "node:http2";
import { join } from "node:path";
import { createCertificate } from "../tls/pki.ts";
import { makeBackend, makeTable, type RouteSpec } from "../proxy/helpers.ts";

import { h2Session, startTlsProxy, type TlsProxy } from "../http2/helpers.ts";
import { bidiExchange, clientStream, collect, echoClient, startEchoServer, unary, type EchoServer } from "./server.ts";
import { eventually } from "../wait.ts";

// biome-ignore lint: grpc-js clients are typed at run time.
type Any = any;

let plain: EchoServer;
let secure: EchoServer;
let proxy: TlsProxy;
const routes = (extra: RouteSpec[] = []): RouteSpec[] => [
  { host: "grpc.test", backend: makeBackend([plain.port], { scheme: "grpc" }) },
  { host: "grpcs.test", backend: makeBackend([secure.port], { scheme: "grpcs", serverName: "echo.default.svc" }) },
  { host: "down.test", backend: makeBackend([], { scheme: "grpc" }) },
  ...extra,
];

beforeAll(async () => {
  plain = await startEchoServer(undefined, "plain");
  const pem = createCertificate({ subjectCN: "echo.default.svc", sans: ["echo.default.svc"] });
  secure = await startEchoServer(grpc.ServerCredentials.createSsl(null, [{ private_key: Buffer.from(pem.keyPem), cert_chain: Buffer.from(pem.certPem) }]), "secure");
  // The HTTPS port as serveTraffic runs it: a gRPC route puts it on node:http2 (serving/https.ts).
  proxy = startTlsProxy(makeTable(routes()), { hosts: ["grpc.test"], kind: "serving" });
});
afterAll(async () => {
  await proxy.stop();
  await plain.stop();
  await secure.stop();
});

describe.each([["GRPC (h2c)", "grpc.test"], ["GRPCS", "grpcs.test"]])("%s backend", (_label, host) => {
  test("unary: message, request metadata and response trailers relayed", async () => {
    const c = echoClient(proxy.port, host);
    const r = await unary(c, { text: "hi", n: 7 }, { metadata: { "x-trace": "abc" } });
    expect(r.err).toBeNull();
    expect(r.res).toMatchObject({ text: `${host === "grpc.test" ? "plain" : "secure"}:hi`, n: 7 });
    expect(r.trailers?.get("x-served-by")).toEqual([host === "grpc.test" ? "plain" : "secure"]);
    const seen = (host === "grpc.test" ? plain : secure).seen.at(-1)!;
    expect(seen.metadata["x-trace"]).toBe("abc");
    expect(seen.metadata["x-forwarded-proto"]).toBe("https");
    c.close();
  });

  test("server streaming, client streaming and bidirectional streaming", async () => {
    const c = echoClient(proxy.port, host);
    const ss = await collect(c.ServerStream({ text: "s", n: 5 }));
    expect(ss.status.code).toBe(grpc.status.OK);
    expect(ss.msgs.map((m) => m.text)).toEqual(["s-0", "s-1", "s-2", "s-3", "s-4"]);

    const cs = await clientStream(c, ["a", "b", "c"]);
    expect(cs).toMatchObject({ text: "a,b,c", n: 3 });

    // Each reply before the next message: the two directions interleave on one stream.
    expect(await bidiExchange(c, ["x", "y", "z"])).toEqual({ replies: ["bidi:x", "bidi:y", "bidi:z"], code: grpc.status.OK });
    c.close();
  });

  test("an error status and its message are relayed from the trailers", async () => {
    const c = echoClient(proxy.port, host);
    const r = await unary(c, { text: "nope", action: "fail" });
    expect(r.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(r.err?.details).toBe("refused nope");
    c.close();
  });
});

describe("Portico's own failures are gRPC statuses (Trailers-Only)", () => {
  test("no endpoints → UNAVAILABLE; no route → UNIMPLEMENTED; each logged with its grpc_status", async () => {
    const down = await unary(echoClient(proxy.port, "down.test"), { text: "x" });
    expect(down.err?.code).toBe(grpc.status.UNAVAILABLE);
    expect(down.err?.details).toBe("no endpoints");
    const none = await unary(echoClient(proxy.port, "nowhere.test"), { text: "x" });
    expect(none.err?.code).toBe(grpc.status.UNIMPLEMENTED);
    const recs = proxy.records.filter((r) => r.host === "down.test" || r.host === "nowhere.test");
    expect(recs.map((r) => [r.status, r.grpcStatus, r.error, r.protocol])).toEqual([
      [200, 14, "NoEndpoints", "h2"],
      [200, 12, "NoRoute", "h2"],
    ]);
  });

  test("connect failure on the only endpoint → UNAVAILABLE", async () => {
    const tmp = await startEchoServer();
    const dead = tmp.port;
    await tmp.stop();
    proxy.setTable(makeTable(routes([{ host: "dead.test", backend: makeBackend([dead], { scheme: "grpc" }) }])));
    try {
      const r = await unary(echoClient(proxy.port, "dead.test"), { text: "x" });
      expect(r.err?.code).toBe(grpc.status.UNAVAILABLE);
      expect(r.err?.details).toBe("upstream connect failed");
    } finally {
      proxy.setTable(makeTable(routes()));
    }
  });

  test("a dead endpoint before a live one: the call is sent to the live one (nothing was sent)", async () => {
    const tmp = await startEchoServer();
    const dead = tmp.port;
    await tmp.stop();
    proxy.setTable(makeTable(routes([{ host: "retry.test", backend: makeBackend([dead, plain.port], { scheme: "grpc" }) }])));
    try {
      const c = echoClient(proxy.port, "retry.test");
      // The balancer starts anywhere: enough calls that one begins on the dead endpoint.
      for (let i = 0; i < 4; i++) expect((await unary(c, { text: String(i) })).err).toBeNull();
      c.close();
    } finally {
      proxy.setTable(makeTable(routes()));
    }
  });
});

describe("deadlines and cancellation", () => {
  test("a client deadline shorter than the backend's answer ends DEADLINE_EXCEEDED", async () => {
    const c = echoClient(proxy.port, "grpc.test");
    const r = await unary(c, { text: "slow", delayMs: 2_000 }, { deadlineMs: 200 });
    expect(r.err?.code).toBe(grpc.status.DEADLINE_EXCEEDED);
    c.close();
  });

  test("grpc-timeout is forwarded and Portico holds the call to it when the backend does not", async () => {
    // A backend that reads grpc-timeout but never answers within it (nor ends the call).
    let timeoutSeen: string | undefined;
    let upstreamClosed = false;
    const raw = http2.createServer();
    raw.on("stream", (s: http2.ServerHttp2Stream, h) => {
      timeoutSeen = h["grpc-timeout"] as string;
      s.on("error", () => {});
      s.on("close", () => (upstreamClosed = true));
      s.respond({ ":status": 200, "content-type": "application/grpc" });
    });
    await new Promise<void>((r) => raw.listen(0, "127.0.0.1", r));
    proxy.setTable(makeTable(routes([{ host: "ignore.test", backend: makeBackend([(raw.address() as { port: number }).port], { scheme: "grpc" }) }])));
    const s = await h2Session(proxy.port, "ignore.test");
    try {
      const req = s.request({ ":method": "POST", ":path": "/portico.test.Echo/Unary", ":authority": "ignore.test", "content-type": "application/grpc", te: "trailers", "grpc-timeout": "300m" });
      req.end(Buffer.from([0, 0, 0, 0, 0]));
      let trailers: http2.IncomingHttpHeaders | null = null;
      req.on("trailers", (t) => (trailers = t));
      req.on("data", () => {});
      req.on("error", () => {});
      await eventually(() => trailers !== null, 5_000);
      expect(trailers!["grpc-status"]).toBe("4");
      expect(timeoutSeen).toBe("300m");
      await eventually(() => upstreamClosed);
    } finally {
      s.close();
      raw.close();
      proxy.setTable(makeTable(routes()));
    }
  });

  test("the client cancels a server stream: the backend sees the call cancelled", async () => {
    const before = plain.cancelled;
    const c = echoClient(proxy.port, "grpc.test");
    const call = c.ServerStream({ text: "c", n: 1_000, delayMs: 20 });
    const done = collect(call);
    await new Promise((r) => call.once("data", r));
    call.cancel();
    expect((await done).status.code).toBe(grpc.status.CANCELLED);
    await eventually(() => plain.cancelled > before);
    c.close();
  });

  // Bun 1.4.5's node:http2 client reports the backend's RST_STREAM as a plain end without
  // its code, so Portico cannot say CANCELLED; what it guarantees is a status, not a reset.
  test("the backend resets a stream mid-way (RST_STREAM CANCEL): the client gets a status, UNAVAILABLE", async () => {
    const raw = http2.createServer();
    raw.on("stream", (s: http2.ServerHttp2Stream) => {
      s.on("error", () => {});
      s.respond({ ":status": 200, "content-type": "application/grpc" });
      // One message (text "m"), then the reset.
      s.write(Buffer.from([0, 0, 0, 0, 3, 0x0a, 0x01, 0x6d]));
      setTimeout(() => s.close(http2.constants.NGHTTP2_CANCEL), 50);
    });
    await new Promise<void>((r) => raw.listen(0, "127.0.0.1", r));
    proxy.setTable(makeTable(routes([{ host: "rst.test", backend: makeBackend([(raw.address() as { port: number }).port], { scheme: "grpc" }) }])));
    try {
      const c = echoClient(proxy.port, "rst.test");
      const r = await collect(c.ServerStream({ text: "x", n: 3 }));
      expect(r.msgs.map((m) => m.text)).toEqual(["m"]);
      expect(r.status.code).toBe(grpc.status.UNAVAILABLE);
      expect(r.status.details).toBe("upstream stream ended without status");
      c.close();
    } finally {
      raw.close();
      proxy.setTable(makeTable(routes()));
    }
  });
});

test("a backend process killed mid-stream: the client gets UNAVAILABLE; the next call too, from Portico", async () => {
  const child = Bun.spawn([process.execPath, join(import.meta.dir, "server.ts"), "child"], { stdout: "pipe", stderr: "ignore" });
  try {
    const reader = child.stdout.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    const port = Number(first.trim());
    proxy.setTable(makeTable(routes([{ host: "child.test", backend: makeBackend([port], { scheme: "grpc" }) }])));
    const c = echoClient(proxy.port, "child.test");
    const call = c.ServerStream({ text: "k", n: 1_000, delayMs: 20 });
    const done = collect(call);
    await new Promise((r) => call.once("data", r));
    child.kill("SIGKILL");
    const r = await done;
    expect(r.msgs.length).toBeGreaterThan(0);
    expect(r.status.code).toBe(grpc.status.UNAVAILABLE);
    const after = await unary(c, { text: "again" });
    expect(after.err?.code).toBe(grpc.status.UNAVAILABLE);
    c.close();
  } finally {
    child.kill("SIGKILL");
    proxy.setTable(makeTable(routes()));
  }
});

test("an endpoint change during a long stream: the stream finishes where it began, new calls go to the new endpoint", async () => {
  const other = await startEchoServer(undefined, "other");
  try {
    const c = echoClient(proxy.port, "grpc.test");
    const call = c.ServerStream({ text: "long", n: 10, delayMs: 30 });
    const done = collect(call);
    await new Promise((r) => call.once("data", r));
    proxy.setTable(makeTable([{ host: "grpc.test", backend: makeBackend([other.port], { scheme: "grpc" }) }]));
    const r = await done;
    expect(r.status.code).toBe(grpc.status.OK);
    expect(r.msgs).toHaveLength(10);
    expect((await unary(c, { text: "next" })).res?.text).toBe("other:next");
    c.close();
  } finally {
    proxy.setTable(makeTable(routes()));
    await other.stop();
  }
});

test("a stream longer than every timeout is not cut while messages flow; an idle one is (DEADLINE_EXCEEDED)", async () => {
  const p = startTlsProxy(makeTable(routes()), { kind: "serving", config: { streamIdleTimeoutMs: 400, responseTimeoutMs: 400 } });
  try {
    const c = echoClient(p.port, "grpc.test");
    // 15 messages 100 ms apart: 1.5 s in all, past both 400 ms timeouts, never 400 ms idle.
    const flowing = await collect(c.ServerStream({ text: "f", n: 15, delayMs: 100 }));
    expect(flowing.status.code).toBe(grpc.status.OK);
    expect(flowing.msgs).toHaveLength(15);
    // Two messages, then silence with the call left open.
    const idle = await collect(c.ServerStream({ text: "i", n: 2, action: "hang" }));
    expect(idle.msgs).toHaveLength(2);
    expect(idle.status.code).toBe(grpc.status.DEADLINE_EXCEEDED);
    expect(idle.status.details).toBe("stream idle");
    c.close();
  } finally {
    await p.stop();
  }
});

test("many calls, some concurrent, share one upstream HTTP/2 connection", async () => {
  let sessions = 0;
  const raw = http2.createServer();
  raw.on("session", () => sessions++);
  raw.on("stream", (s: http2.ServerHttp2Stream) => {
    s.on("error", () => {});
    s.respond({ ":status": 200, "content-type": "application/grpc" }, { waitForTrailers: true });
    s.on("wantTrailers", () => s.sendTrailers({ "grpc-status": "0" }));
    s.end(Buffer.from([0, 0, 0, 0, 0]));
  });
  await new Promise<void>((r) => raw.listen(0, "127.0.0.1", r));
  proxy.setTable(makeTable(routes([{ host: "pool.test", backend: makeBackend([(raw.address() as { port: number }).port], { scheme: "grpc" }) }])));
  try {
    const c = echoClient(proxy.port, "pool.test");
    for (let round = 0; round < 3; round++) {
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => unary(c, { text: String(i) })));
      expect(results.every((r) => r.err === null)).toBe(true);
    }
    expect(sessions).toBe(1);
    c.close();
  } finally {
    raw.close();
    proxy.setTable(makeTable(routes()));
  }
});
