// Connection framing over raw sockets (docs/design.md, "Request framing and bodies"): a
// rejected request ends its connection, every request that reaches a backend is answered,
// a body whose framing breaks never reaches the backend whole, and an invalid upstream
// response is a 502. Backends log the bytes they receive; assertions are on those bytes.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { makeBackend, makeTable, RAW_LISTENERS, startRawProxy, type RawListener, type RawProxy } from "./helpers.ts";
import { exchangeToClose, rawBackend, rawClient, statuses, type RawBackend } from "./raw.ts";
import { eventually } from "../wait.ts";

const DEL = "\x7f";

const smuggled = "GET /__smuggled HTTP/1.1\r\nHost: a.test\r\n\r\n";

// Each listener an HTTP/1.1 client can reach: Portico's behaviour, not the parser's.
for (const kind of RAW_LISTENERS) describe(kind, () => {
  let be: RawBackend;
  let proxy: RawProxy;
  beforeAll(async () => {
    be = await rawBackend();
    proxy = startRawProxy(kind, makeTable([{ host: null, path: "/", backend: makeBackend([be.port]) }]));
  });
  afterAll(async () => {
    await proxy.stop();
    await be.stop();
  });


  describe("a rejected request ends its connection", () => {
    test("DEL in a header value: one 400, the connection closes, the bytes after it are never run", async () => {
      // The reported reproduction: Content-Length 4 covers only the chunk-size line, so the
      // smuggled request follows the body on the same connection.
      const body = `${smuggled.length.toString(16)}\r\n${smuggled}\r\n0\r\n\r\n`;
      const bytes = `POST / HTTP/1.1\r\nHost: a.test\r\nX-T: a${DEL}b\r\nContent-Length: 4\r\n\r\n${body}`;
      const r = await exchangeToClose(proxy, bytes);
      expect(r.closed).toBe(true);
      expect(statuses(r.data)).toEqual([400]);
      expect(r.data.toLowerCase()).toContain("connection: close");
      // Anything Bun still ran has reached the backend once the handler is idle.
      await eventually(() => proxy.handler.inflight.count === 0, 5_000, "the handler idle");
      expect(be.conns.some((c) => c.bytes.includes("__smuggled"))).toBe(false);
    });

    test("DEL in a header value, plain keep-alive request behind it: never run", async () => {
      const bytes = `POST / HTTP/1.1\r\nHost: a.test\r\nX-T: a${DEL}b\r\nContent-Length: 4\r\n\r\nabcd${smuggled}`;
      const r = await exchangeToClose(proxy, bytes);
      expect(statuses(r.data)).toEqual([400]);
      await eventually(() => proxy.handler.inflight.count === 0, 5_000, "the handler idle");
      expect(be.conns.some((c) => c.bytes.includes("__smuggled"))).toBe(false);
    });

    // Requests the parser takes and the handler refuses, each with a GET pipelined behind it
    // in the same write. node's parser (the HTTPS port's node:http2 listener) hands over both
    // at once; the refusal's `Connection: close` must end the line there, so the pipelined
    // one is never run. With `identity, chunked` node decodes the chunked body and so reads
    // the GET as a request of its own, where a proxy reading framing otherwise would not: the
    // classic TE smuggling shape (RFC 9112 §6.3: chunked not the only coding is a 400 and a
    // close; nginx answers 501 for any Transfer-Encoding but chunked,
    // ngx_http_process_request_header).
    for (const [name, first] of [
      ["Transfer-Encoding: identity, chunked", "POST / HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: identity, chunked\r\n\r\n0\r\n\r\n"],
      ["an encoded slash in the path (a GET)", "GET /a%2Fb HTTP/1.1\r\nHost: a.test\r\n\r\n"],
    ] as const) {
      test(`refused by Portico with a request pipelined behind (${name}): one 400, the second never run`, async () => {
        const before = be.hits.length;
        const r = await exchangeToClose(proxy, `${first}${smuggled}`);
        expect(r.closed).toBe(true);
        expect(statuses(r.data)).toEqual([400]);
        expect(r.data.toLowerCase()).toContain("connection: close");
        await eventually(() => proxy.handler.inflight.count === 0, 5_000, "the handler idle");
        expect(be.hits.slice(before).map((q) => q.line)).toEqual([]);
      });
    }

    test("every answer Portico gives a request with a body closes the connection (404 here)", async () => {
      const be404 = await rawBackend();
      const p = startRawProxy(kind, makeTable([{ host: "only.test", path: "/", backend: makeBackend([be404.port]) }]));
      try {
        const r = await exchangeToClose(p, `POST / HTTP/1.1\r\nHost: other.test\r\nContent-Length: 4\r\n\r\nabcd${smuggled}`);
        expect(r.closed).toBe(true);
        expect(statuses(r.data)).toEqual([404]);
        await eventually(() => p.handler.inflight.count === 0, 5_000, "the handler idle");
        expect(be404.used()).toHaveLength(0);
      } finally {
        await p.stop();
        await be404.stop();
      }
    });
  });

  describe("header names with underscores", () => {
    const bytes =
      "GET /u HTTP/1.1\r\nHost: a.test\r\nX_Forwarded_For: 6.6.6.6\r\nX_Custom: 1\r\nX-Plain: 2\r\nConnection: close\r\n\r\n";

    test("are dropped by default, as nginx does", async () => {
      const before = be.requests().length;
      const r = await exchangeToClose(proxy, bytes);
      expect(statuses(r.data)).toEqual([200]);
      const got = be.requests().slice(before).find((q) => q.head.startsWith("GET /u "));
      expect(got).toBeDefined();
      const head = got!.head.toLowerCase();
      expect(head).not.toContain("x_forwarded_for");
      expect(head).not.toContain("x_custom");
      expect(head).not.toContain("6.6.6.6");
      expect(head).toContain("x-plain: 2");
      expect(head).toContain("x-forwarded-for: 127.0.0.1");
    });

    test("are forwarded with --enable-underscores-in-headers", async () => {
      const b2 = await rawBackend();
      const p = startRawProxy(kind, makeTable([{ host: null, path: "/", backend: makeBackend([b2.port]) }]), { enableUnderscoresInHeaders: true });
      try {
        const r = await exchangeToClose(p, bytes);
        expect(statuses(r.data)).toEqual([200]);
        const head = b2.requests()[0]!.head.toLowerCase();
        expect(head).toContain("x_custom: 1");
        expect(head).toContain("x_forwarded_for: 6.6.6.6");
        // Our own X-Forwarded-For is still the one set from the peer.
        expect(head).toContain("x-forwarded-for: 127.0.0.1");
      } finally {
        await p.stop();
        await b2.stop();
      }
    });
  });

  // RFC 9110 §7.6.1: a proxy removes the fields a Connection list names. A client could so name
  // Host, and the pod got the Host fetch makes up (its own address): a vhost-routing pod then
  // serves its default host for a request Portico routed by the client's. Host is the next
  // hop's authority (RFC 9110 §7.2), which Portico always sends, as ingress-nginx always sets
  // it (nginx.tmpl: proxy_set_header Host $best_http_host); the fields Portico sets itself are
  // likewise set after the list is applied.
  test("a Connection list naming Host and the forwarded fields: the backend gets them as Portico sets them", async () => {
    const before = be.hits.length;
    const r = await exchangeToClose(proxy, "GET /named HTTP/1.1\r\nHost: a.test\r\nConnection: close, Host, X-Forwarded-For, X-Real-IP, X-Forwarded-Host, X-Hop\r\nX-Hop: 1\r\nX-Keep: 2\r\n\r\n");
    expect(statuses(r.data)).toEqual([200]);
    const head = be.hits.slice(before).find((q) => q.line.startsWith("GET /named "))!.head.toLowerCase();
    expect(head).toMatch(/\r\nhost: a\.test(\r\n|$)/);
    expect(head).toContain("\r\nx-forwarded-host: a.test\r\n");
    expect(head).toContain("\r\nx-forwarded-for: 127.0.0.1\r\n");
    expect(head).toContain("\r\nx-real-ip: 127.0.0.1\r\n");
    expect(head).toContain("\r\nx-keep: 2\r\n");
    expect(head).not.toContain("x-hop");
  });

  describe("pipelined requests", () => {
    // RFC 9112 §9.3.2: a server answers pipelined requests in the order received. node's
    // HTTP/1.1 parser (the HTTPS listener) holds the second request until the first is
    // answered. Bun.serve (the plain port) cannot answer either: it closes the connection as it
    // parses a request behind a pending one, before any code of ours can write
    // (docs/bun-upstream-reports.md §1). There the rule is that no backend acts on a request
    // whose client gets no answer: in one read, neither request is sent upstream.
    const reply = (req: { line: string }) => {
      const name = req.line.split(" ")[1]!.slice(1);
      return `HTTP/1.1 200 OK\r\nContent-Length: ${name.length}\r\n\r\n${name}`;
    };
    const bodies = (raw: string) => [...raw.matchAll(/\r\n\r\n(p\d+)/g)].map((m) => m[1]);
    /** A backend that answers every request at once but holds `GET <path>`'s answer until `held[i]()`. */
    const holding = async (path: string) => {
      const held: Array<() => void> = [];
      const b = await rawBackend((req, conn) => {
        if (!req.line.startsWith(`GET ${path} `)) return reply(req);
        held.push(() => conn.socket.write(reply(req)));
        return null;
      });
      return { b, held };
    };

    for (const [name, first] of [
      ["two GETs", "GET /p1 HTTP/1.1\r\nHost: a.test\r\n\r\n"],
      ["a POST with its body, then a GET", "POST /p1 HTTP/1.1\r\nHost: a.test\r\nContent-Length: 5\r\n\r\nhello"],
    ] as const) {
      test(`${name} in one write: ${kind === "bun-http" ? "nothing answered, nothing sent upstream" : "both answered in order"}`, async () => {
        const b = await rawBackend(reply);
        const p = startRawProxy(kind, makeTable([{ host: null, path: "/", backend: makeBackend([b.port]) }]));
        try {
          const r = await exchangeToClose(p, `${first}GET /p2 HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n`);
          expect(r.closed).toBe(true);
          if (kind === "h2-https-h1") {
            expect(statuses(r.data)).toEqual([200, 200]);
            expect(bodies(r.data)).toEqual(["p1", "p2"]);
            expect(b.lines().map((l) => l.split(" ").slice(0, 2).join(" "))).toEqual([first.split(" ").slice(0, 2).join(" "), "GET /p2"]);
          } else {
            expect(r.data).toBe("");
            // Anything still running has reached the backend once the handler is idle.
            await eventually(() => p.handler.inflight.count === 0, 5_000, "the handler idle");
            expect(b.used()).toHaveLength(0);
            expect(p.records.map((q) => [q.path, q.status])).toEqual([["/p1", 499]]);
          }
        } finally {
          await p.stop();
          await b.stop();
        }
      });
    }

    // RFC 9112 §9.6: after a request with `close` the server answers it and processes nothing
    // more on the connection (nginx: keep-alive off, the rest unread). node's parser calls the
    // bytes after it an error; its default answer was a 400 in place of the first answer,
    // though the first request had gone upstream.
    test.skipIf(kind !== "h2-https-h1")("a request marked Connection: close with another behind: the first answered, the second never run", async () => {
      const b = await rawBackend(reply);
      const p = startRawProxy(kind, makeTable([{ host: null, path: "/", backend: makeBackend([b.port]) }]));
      try {
        const r = await exchangeToClose(p, `GET /p1 HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n${smuggled}`);
        expect(r.closed).toBe(true);
        expect(statuses(r.data)).toEqual([200]);
        expect(bodies(r.data)).toEqual(["p1"]);
        await eventually(() => p.handler.inflight.count === 0, 5_000, "the handler idle");
        expect(b.lines()).toEqual(["GET /p1 HTTP/1.1"]);
      } finally {
        await p.stop();
        await b.stop();
      }
    });

    test.skipIf(kind !== "h2-https-h1")("20 GETs in one write: all answered in order, each sent upstream after the answer before it", async () => {
      let open = 0;
      let most = 0;
      const b = await rawBackend((req, conn) => {
        open++;
        most = Math.max(most, open);
        setTimeout(() => {
          open--;
          conn.socket.write(reply(req));
        }, 5);
        return null;
      });
      const p = startRawProxy(kind, makeTable([{ host: null, path: "/", backend: makeBackend([b.port]) }]));
      try {
        let bytes = "";
        for (let i = 1; i <= 20; i++) bytes += `GET /p${i} HTTP/1.1\r\nHost: a.test\r\n${i === 20 ? "Connection: close\r\n" : ""}\r\n`;
        const r = await exchangeToClose(p, bytes);
        expect(bodies(r.data)).toEqual(Array.from({ length: 20 }, (_, i) => `p${i + 1}`));
        expect(b.lines().map((l) => l.split(" ")[1])).toEqual(Array.from({ length: 20 }, (_, i) => `/p${i + 1}`));
        expect(most).toBe(1);
      } finally {
        await p.stop();
        await b.stop();
      }
    });

    test.skipIf(kind !== "h2-https-h1")("more than 32 requests waiting behind one upstream: the connection ends, the waiting ones sent nowhere", async () => {
      const { b } = await holding("/p0");
      const p = startRawProxy(kind, makeTable([{ host: null, path: "/", backend: makeBackend([b.port]) }]));
      const c = await rawClient(p.port, p);
      try {
        let bytes = "";
        for (let i = 0; i < 40; i++) bytes += `GET /p${i} HTTP/1.1\r\nHost: a.test\r\n\r\n`;
        c.write(bytes);
        await eventually(c.closed);
        expect(c.data()).toBe("");
        // Anything still running has reached the backend once the handler is idle.
        await eventually(() => p.handler.inflight.count === 0, 5_000, "the handler idle");
        expect(b.lines().every((l) => l.startsWith("GET /p0 "))).toBe(true);
      } finally {
        c.destroy();
        await p.stop();
        await b.stop();
      }
    });

    test.skipIf(kind !== "h2-https-h1")("a POST with a body behind a pending GET: the connection ends, the POST sent nowhere", async () => {
      const { b, held } = await holding("/p1");
      const p = startRawProxy(kind, makeTable([{ host: null, path: "/", backend: makeBackend([b.port]) }]));
      try {
        const r = await exchangeToClose(p, "GET /p1 HTTP/1.1\r\nHost: a.test\r\n\r\nPOST /p2 HTTP/1.1\r\nHost: a.test\r\nContent-Length: 5\r\n\r\nhello");
        expect(r.closed).toBe(true);
        expect(r.data).toBe("");
        // The sequence point: /p1 answered upstream lets its handler finish; the connection is
        // gone, so nothing of it is parsed later. Once the handler is idle, anything sent
        // upstream for the POST has reached the backend.
        await eventually(() => held.length === 1, 5_000, "/p1 at the backend");
        held[0]!();
        await eventually(() => p.handler.inflight.count === 0, 5_000, "the handler idle");
        expect(b.lines().map((l) => l.split(" ")[1])).toEqual(["/p1"]);
      } finally {
        await p.stop();
        await b.stop();
      }
    });

    test(`a GET pipelined in a later read while the first is upstream: ${kind === "bun-http" ? "the first aborted upstream, the second never sent" : "answered after the first"}`, async () => {
      const { b, held } = await holding("/p1");
      const p = startRawProxy(kind, makeTable([{ host: null, path: "/", backend: makeBackend([b.port]) }]));
      const c = await rawClient(p.port, p);
      try {
        c.write("GET /p1 HTTP/1.1\r\nHost: a.test\r\n\r\n");
        await eventually(() => held.length === 1);
        c.write("GET /p2 HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n");
        if (kind === "h2-https-h1") {
          // node queues /p2 behind the pending /p1: it reaches the backend only once /p1 is
          // answered. Showing that it has not yet takes a wait.
          await Bun.sleep(100);
          expect(b.lines().map((l) => l.split(" ")[1])).toEqual(["/p1"]);
          held[0]!();
          await eventually(c.closed);
          expect(statuses(c.data())).toEqual([200, 200]);
          expect(bodies(c.data())).toEqual(["p1", "p2"]);
          expect(b.lines().map((l) => l.split(" ")[1])).toEqual(["/p1", "/p2"]);
        } else {
          // Bun closes the connection unanswered; Portico aborts /p1 upstream as for a client
          // that left, and /p2 never runs.
          await eventually(c.closed);
          expect(c.data()).toBe("");
          await eventually(() => b.conns.some((x) => x.requests.some((q) => q.line.startsWith("GET /p1 ")) && x.closed));
          await eventually(() => p.records.length === 1);
          expect(p.records.map((q) => [q.path, q.status])).toEqual([["/p1", 499]]);
          expect(b.lines().map((l) => l.split(" ")[1])).toEqual(["/p1"]);
        }
      } finally {
        c.destroy();
        await p.stop();
        await b.stop();
      }
    });
  });

  describe("every request that reaches a backend is answered", () => {
    test("POSTs one at a time on a keep-alive connection, each sent as the answer before it arrives: all answered", async () => {
      const c = await rawClient(proxy.port, proxy);
      try {
        for (let i = 1; i <= 5; i++) {
          c.write(`POST /k${i} HTTP/1.1\r\nHost: a.test\r\nContent-Length: 5\r\n${i === 5 ? "Connection: close\r\n" : ""}\r\nhello`);
          await eventually(() => statuses(c.data()).length === i);
        }
        await eventually(c.closed);
        expect(statuses(c.data())).toEqual([200, 200, 200, 200, 200]);
      } finally {
        c.destroy();
      }
    });

    test("one request at a time on a keep-alive connection still works", async () => {
      const c = await rawClient(proxy.port, proxy);
      try {
        c.write("GET /k1 HTTP/1.1\r\nHost: a.test\r\n\r\n");
        await eventually(() => statuses(c.data()).length === 1);
        c.write("GET /k2 HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n");
        await eventually(c.closed);
        expect(statuses(c.data())).toEqual([200, 200]);
      } finally {
        c.destroy();
      }
    });
  });

  describe("a request whose chunked framing breaks never reaches the backend whole", () => {
    const head = "POST /up HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n";
    const wholeUp = (b: RawBackend) => b.requests().filter((q) => q.head.startsWith("POST /up "));

    for (const [name, tail] of [
      ["a malformed trailer", "0\r\nbad trailer\r\n\r\n"],
      ["junk where the final CRLF belongs", "0\r\nXX\r\n\r\n"],
      ["a bad chunk size", "zz\r\nworld\r\n0\r\n\r\n"],
    ] as const) {
      test(`${name}, after the upstream got the first chunk: 400, and the upstream sees an aborted body`, async () => {
        const b = await rawBackend();
        // Streamed (proxy-request-buffering off), so the upstream has the first chunk already.
        const p = startRawProxy(kind, makeTable([{ host: null, path: "/", backend: makeBackend([b.port]), options: { requestBufferSize: 0 } }]));
        const c = await rawClient(p.port, p);
        try {
          c.write(`${head}5\r\nhello\r\n`);
          // The request is under way upstream before the framing breaks.
          await eventually(() => b.used().some((x) => x.bytes.includes("hello")));
          c.write(tail);
          await eventually(c.closed);
          expect(statuses(c.data())).toEqual([400]);
          const conn = b.used().find((x) => x.bytes.includes("POST /up "))!;
          await eventually(() => conn.closed);
          expect(wholeUp(b)).toEqual([]);
        } finally {
          c.destroy();
          await p.stop();
          await b.stop();
        }
      });

      test(`${name}, all in one write: 400, and no whole request upstream`, async () => {
        const b = await rawBackend();
        const p = startRawProxy(kind, makeTable([{ host: null, path: "/", backend: makeBackend([b.port]) }]));
        try {
          const r = await exchangeToClose(p, `${head}5\r\nhello\r\n${tail}`);
          expect(statuses(r.data)).toEqual([400]);
          await eventually(() => b.used().every((x) => x.closed), 2_000);
          expect(wholeUp(b)).toEqual([]);
        } finally {
          await p.stop();
          await b.stop();
        }
      });
    }

    test("a well-framed chunked body still goes through whole", async () => {
      const r = await exchangeToClose(proxy, `${head.replace("\r\n\r\n", "\r\nConnection: close\r\n\r\n")}5\r\nhello\r\n0\r\n\r\n`);
      expect(statuses(r.data)).toEqual([200]);
      expect(be.requests().some((q) => q.head.startsWith("POST /up ") && q.body.includes("hello"))).toBe(true);
    });
  });

  describe("an invalid upstream response is a 502", () => {
    const replies: Array<[string, string]> = [
      ["a header block over --max-response-header-size", `HTTP/1.1 200 OK\r\nX-Big: ${"a".repeat(200_000)}\r\nContent-Length: 2\r\n\r\nok`],
      ["a bad first chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n"],
      ["a bad chunk size after data, in the same packet", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nzz\r\n"],
      ["a bad status line", "HTTP/1.1 2x0 OK\r\nContent-Length: 2\r\n\r\nok"],
      // RFC 9110 §15: outside 100..599 a status is invalid, a server error to the client.
      // Bun's fetch hands these over as numbers; the relay failed on them as Portico's own 500.
      ["a status below 100 (099)", "HTTP/1.1 099 X\r\nContent-Length: 2\r\n\r\nok"],
      ["a status 000", "HTTP/1.1 000 X\r\nContent-Length: 2\r\n\r\nok"],
      ["a status above 599 (999)", "HTTP/1.1 999 X\r\nContent-Length: 2\r\n\r\nok"],
      ["two Content-Length values", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nokk"],
    ];
    for (const [name, reply] of replies) {
      test(name, async () => {
        const b = await rawBackend(() => reply);
        const p = startRawProxy(kind, makeTable([{ host: null, path: "/", backend: makeBackend([b.port]) }]));
        try {
          const r = await exchangeToClose(p, "GET /x HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n");
          expect(b.requests()).toHaveLength(1);
          expect(statuses(r.data)).toEqual([502]);
          expect(r.data).not.toContain("aaaa");
          expect(p.records.at(-1)!.error).toBe("UpstreamInvalid");
        } finally {
          await p.stop();
          await b.stop();
        }
      });
    }

    // Response queue poisoning: bytes a pod sends past its answer's end (a second response
    // behind a Content-Length body, or a body on a 204, 304 or HEAD answer, which have none:
    // RFC 9110 §6.4.1) must never be read as the answer to the next request sent on that
    // pooled connection, another client's. Bun's fetch drops such a connection (measured).
    const EVIL = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nevil";
    for (const [name, method, first] of [
      ["a second response behind a Content-Length body", "GET", `HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok${EVIL}`],
      ["a body on a 204", "GET", `HTTP/1.1 204 No Content\r\nContent-Length: ${EVIL.length}\r\n\r\n${EVIL}`],
      ["a body on a 304", "GET", `HTTP/1.1 304 Not Modified\r\nContent-Length: ${EVIL.length}\r\n\r\n${EVIL}`],
      ["a body on a HEAD answer", "HEAD", `HTTP/1.1 200 OK\r\nContent-Length: ${EVIL.length}\r\n\r\n${EVIL}`],
    ] as const) {
      test(`bytes past the end of an answer (${name}) never answer the next client's request`, async () => {
        let n = 0;
        const b = await rawBackend(() => (++n === 1 ? first : "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ngood"));
        const p = startRawProxy(kind, makeTable([{ host: null, path: "/", backend: makeBackend([b.port]) }]));
        try {
          await exchangeToClose(p, `${method} /first HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n`);
          for (const path of ["/second", "/third"]) {
            const r = await exchangeToClose(p, `GET ${path} HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n`);
            expect(statuses(r.data)).toEqual([200]);
            expect(r.data.endsWith("\r\n\r\ngood")).toBe(true);
          }
          expect(b.lines().map((l) => l.split(" ")[1])).toEqual(["/first", "/second", "/third"]);
        } finally {
          await p.stop();
          await b.stop();
        }
      });
    }

    test("a header block under the limit is relayed", async () => {
      const b = await rawBackend(() => `HTTP/1.1 200 OK\r\nX-Big: ${"a".repeat(30_000)}\r\nContent-Length: 2\r\n\r\nok`);
      const p = startRawProxy(kind, makeTable([{ host: null, path: "/", backend: makeBackend([b.port]) }]));
      try {
        const r = await exchangeToClose(p, "GET /x HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n");
        expect(statuses(r.data)).toEqual([200]);
        expect(r.data).toContain("a".repeat(30_000));
      } finally {
        await p.stop();
        await b.stop();
      }
    });

    test("framing that breaks after the status went out aborts the client transfer (no last chunk)", async () => {
      // The status cannot be taken back once sent: the client must see a truncated transfer,
      // never a complete one.
      let upstream: import("node:net").Socket | null = null;
      const b = await rawBackend(() => null, (_h, s) => {
        upstream = s;
        s.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n");
      });
      const p = startRawProxy(kind, makeTable([{ host: null, path: "/", backend: makeBackend([b.port]) }]));
      const c = await rawClient(p.port, p);
      try {
        c.write("GET /late HTTP/1.1\r\nHost: a.test\r\n\r\n");
        await eventually(() => c.data().includes("hello"));
        upstream!.write("zz\r\nmore\r\n0\r\n\r\n");
        await eventually(c.closed);
        expect(statuses(c.data())).toEqual([200]);
        expect(c.data()).not.toContain("\r\n0\r\n\r\n");
      } finally {
        c.destroy();
        await p.stop();
        await b.stop();
      }
    });
  });
});
