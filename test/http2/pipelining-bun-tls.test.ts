// Two requests pipelined in one write over TLS (ALPN http/1.1) to the HTTPS port on Bun.serve.
// Bun closes such a connection without answering either (docs/bun-upstream-reports.md §1), so
// the rule held is the plain port's: no backend acts on a request whose client gets no
// answer. Over TLS Bun notices the second request some event-loop turns later than over TCP
// (docs/design.md, "Request framing and bodies"), which the pipelining guard must cover.
import { expect, test } from "bun:test";
import { makeBackend, makeTable } from "../proxy/helpers.ts";
import { exchangeToClose, rawBackend } from "../proxy/raw.ts";
import { startTlsProxy } from "./helpers.ts";
import { eventually } from "../wait.ts";

for (const kind of ["bun", "bunh2"] as const) {
  test(`${kind}: two GETs in one write: nothing answered, nothing sent upstream (10 connections)`, async () => {
    const be = await rawBackend();
    const proxy = startTlsProxy(makeTable([{ host: null, path: "/", backend: makeBackend([be.port]) }]), { kind });
    try {
      for (let i = 0; i < 10; i++) {
        const r = await exchangeToClose({ port: proxy.port, tls: true }, "GET /p1 HTTP/1.1\r\nHost: a.test\r\n\r\nGET /p2 HTTP/1.1\r\nHost: a.test\r\n\r\n");
        expect(r.closed).toBe(true);
        expect(r.data).toBe("");
      }
      // Anything still running has reached the backend once the handler is idle.
      await eventually(() => proxy.handler.inflight.count === 0, 5_000, "the handler idle");
      expect(be.used()).toHaveLength(0);
      expect(proxy.records.map((q) => [q.path, q.status])).toEqual(Array.from({ length: 10 }, () => ["/p1", 499]));
    } finally {
      await proxy.stop();
      await be.stop();
    }
  });
}
