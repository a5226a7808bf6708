// Request bodies over raw sockets (docs/design.md, "Request framing and bodies"): a body on
// GET, HEAD or TRACE is refused cleanly, and a client that sends its body too slowly is cut
// (--client-body-timeout between reads, --client-body-min-rate overall) with 408, while the
// upstream sees an aborted body. Short timeouts, bounded counts and durations, loopback only.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { makeBackend, makeTable, RAW_LISTENERS, startRawProxy, type RawListener, type RawProxy } from "./helpers.ts";
import { exchangeToClose, rawBackend, rawClient, statuses, type RawBackend, type RawClient } from "./raw.ts";
import { eventually } from "../wait.ts";

let be: RawBackend;
beforeAll(async () => {
  be = await rawBackend();
});
afterAll(async () => {
  await be.stop();
});

function proxyFor(kind: RawListener, b: RawBackend, over: Parameters<typeof startRawProxy>[2] = {}): RawProxy {
  return startRawProxy(kind, makeTable([{ host: null, path: "/", backend: makeBackend([b.port]) }]), over);
}

/** A POST whose body never completes, on a fresh raw connection. */
async function slowPost(p: { port: number; tls: boolean }, declared: number, path = "/slow"): Promise<RawClient> {
  const c = await rawClient(p.port, p);
  c.write(`POST ${path} HTTP/1.1\r\nHost: a.test\r\nContent-Length: ${declared}\r\n\r\n`);
  return c;
}

// Each listener an HTTP/1.1 client can reach: Portico's behaviour, not the parser's.
for (const kind of RAW_LISTENERS) describe(kind, () => {
  describe("a body on GET, HEAD or TRACE", () => {
    let proxy: RawProxy;
    beforeAll(() => {
      proxy = proxyFor(kind, be);
    });
    afterAll(async () => {
      await proxy.stop();
    });

    for (const method of ["GET", "HEAD", "TRACE"]) {
      for (const [framing, rest] of [
        ["Content-Length", "Content-Length: 5\r\n\r\nhello"],
        ["chunked", "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"],
      ] as const) {
        test(`${method} with a ${framing} body: 400 (not 500), the connection closes, nothing upstream`, async () => {
          const before = be.used().length;
          const r = await exchangeToClose(proxy, `${method} /b HTTP/1.1\r\nHost: a.test\r\n${rest}`);
          expect(r.closed).toBe(true);
          expect(statuses(r.data)).toEqual([400]);
          expect(r.data.toLowerCase()).toContain("connection: close");
          const rec = proxy.records.at(-1)!;
          expect(rec.status).toBe(400);
          expect(rec.error).toBe("BadRequest");
          expect(be.used().length).toBe(before);
        });
      }
    }

    test("GET with Content-Length: 0 is a GET without a body, forwarded", async () => {
      const r = await exchangeToClose(proxy, "GET /zero HTTP/1.1\r\nHost: a.test\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
      expect(statuses(r.data)).toEqual([200]);
      expect(be.requests().some((q) => q.head.startsWith("GET /zero "))).toBe(true);
    });

    test("OPTIONS and DELETE bodies are forwarded whole", async () => {
      for (const m of ["OPTIONS", "DELETE"]) {
        const r = await exchangeToClose(proxy, `${m} /o HTTP/1.1\r\nHost: a.test\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello`);
        expect(statuses(r.data)).toEqual([200]);
        const got = be.requests().filter((q) => q.head.startsWith(`${m} /o `)).at(-1);
        expect(got?.body).toBe("hello");
      }
    });
  });

  describe("--client-body-timeout and --client-body-min-rate", () => {
    test("no body byte for longer than the timeout: 408, closed, and the upstream sees an aborted body", async () => {
      const b = await rawBackend();
      const p = proxyFor(kind, b, { clientBodyTimeoutMs: 300, clientBodyMinRate: null });
      const c = await slowPost(p, 10);
      try {
        c.write("ab");
        await eventually(c.closed, 10_000);
        expect(statuses(c.data())).toEqual([408]);
        expect(c.data().toLowerCase()).toContain("connection: close");
        expect(p.records.at(-1)!.error).toBe("ClientBodyTimeout");
        await eventually(() => b.used().every((x) => x.closed), 2_000);
        expect(b.used().every((x) => x.closed)).toBe(true);
        expect(b.requests().filter((q) => q.head.startsWith("POST /slow "))).toEqual([]);
      } finally {
        c.destroy();
        await p.stop();
        await b.stop();
      }
    });

    test("headers and then no body at all: 408", async () => {
      const b = await rawBackend();
      const p = proxyFor(kind, b, { clientBodyTimeoutMs: 300, clientBodyMinRate: null });
      const c = await slowPost(p, 10);
      try {
        await eventually(c.closed, 10_000);
        expect(statuses(c.data())).toEqual([408]);
        expect(b.requests()).toEqual([]);
      } finally {
        c.destroy();
        await p.stop();
        await b.stop();
      }
    });

    test("a trickle whose every gap is under the timeout is cut by the minimum rate: 408", async () => {
      // Gap limit 1 s, bytes every 200 ms: only the rate (100 B/s beyond the first second of
      // waiting) can end it. The trickle is bounded (60 bytes of 100) so a failure ends too.
      const b = await rawBackend();
      const p = proxyFor(kind, b, { clientBodyTimeoutMs: 1_000, clientBodyMinRate: 100 });
      const c = await slowPost(p, 100);
      try {
        let sent = 0;
        for (; sent < 60 && !c.closed(); sent++) {
          c.write("x");
          await Bun.sleep(200); // the slow client's pace, the behaviour under test
        }
        await eventually(c.closed, 5_000);
        expect(statuses(c.data())).toEqual([408]);
        // Cut while it was still trickling, not by the gap after it stopped.
        expect(sent).toBeLessThan(60);
        expect(b.requests().filter((q) => q.head.startsWith("POST /slow "))).toEqual([]);
      } finally {
        c.destroy();
        await p.stop();
        await b.stop();
      }
    });

    test("an upload with pauses shorter than the timeout goes through whole", async () => {
      const b = await rawBackend();
      const p = proxyFor(kind, b, { clientBodyTimeoutMs: 1_000, clientBodyMinRate: null });
      const c = await slowPost(p, 25, "/steady");
      try {
        for (let i = 0; i < 5; i++) {
          c.write("abcde");
          await Bun.sleep(100); // the client's pace on purpose
        }
        await eventually(() => statuses(c.data()).length === 1);
        expect(statuses(c.data())).toEqual([200]);
        const got = b.requests().find((q) => q.head.startsWith("POST /steady "));
        expect(got?.body).toBe("abcde".repeat(5));
      } finally {
        c.destroy();
        await p.stop();
        await b.stop();
      }
    });

    test("200 trickling clients at once are all cut with 408 while other requests are served", async () => {
      const N = 200;
      const b = await rawBackend();
      const p = proxyFor(kind, b, { clientBodyTimeoutMs: 500, clientBodyMinRate: 100 });
      const clients: RawClient[] = [];
      let ticks = 0;
      // One byte per client every 150 ms (under the gap limit), for at most 60 ticks (9 s).
      const timer = setInterval(() => {
        if (++ticks > 60) return;
        for (const c of clients) c.write("x");
      }, 150);
      try {
        for (let i = 0; i < N; i++) clients.push(await slowPost(p, 1_000));
        // Other traffic, in rounds of 10, from while the tricklers hold their requests open until
        // the last of them is cut (at most 300 rounds).
        let served = 0;
        let sent = 0;
        for (let round = 0; round < 300 && (round < 5 || !clients.every((c) => c.closed())); round++) {
          const rs = await Promise.all(
            Array.from({ length: 10 }, () => p.request("/fast", { headers: { host: "a.test" } }).then(async (r) => [r.status, await r.text()] as const)),
          );
          sent += rs.length;
          for (const [status, text] of rs) if (status === 200 && text === "ok") served++;
        }
        expect(served).toBe(sent);
        await eventually(() => clients.every((c) => c.closed()), 20_000);
        const got = clients.map((c) => statuses(c.data()));
        expect(got.filter((s) => s.length === 1 && s[0] === 408)).toHaveLength(N);
        // No trickled body reached the backend whole, and every upstream request was ended.
        expect(b.requests().filter((q) => q.head.startsWith("POST /slow "))).toEqual([]);
        await eventually(() => b.used().filter((x) => x.bytes.includes("POST /slow ")).every((x) => x.closed), 5_000);
        expect(p.records.filter((r) => r.error === "ClientBodyTimeout")).toHaveLength(N);
      } finally {
        clearInterval(timer);
        for (const c of clients) c.destroy();
        await p.stop();
        await b.stop();
      }
    }, 60_000);
  });
});
