// The path routed is the path forwarded, byte for byte, over HTTP and WebSocket (README "How
// Portico reads request paths"). Every assertion is on the request line a raw-socket backend
// received, never on a URL a server parsed for us.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { makeBackend, makeTable, RAW_LISTENERS, startRawProxy, statusLine, type RawProxy } from "./helpers.ts";
import { firstResponse, namedBackend, wsUpgrade, type RawBackend } from "./raw.ts";
import { eventually } from "../wait.ts";

// Seeded pseudo-random request targets built from the pieces that parsers disagree on.
const PIECES = ["", ".", "..", "%2e", "%2E%2e", ".%2e", "admin", "%61dmin", "ADMIN", "~", "%7e", "%25", "%252e", "\\", "x", "%c3%a9", "\xc3\xa9", "{", "|", "%3B", "%20", "'", "users"];
function targets(n: number, seed: number): string[] {
  let s = seed;
  const rnd = (k: number) => ((s = (s * 1103515245 + 12345) % 2 ** 31), s % k);
  const out: string[] = [];
  while (out.length < n) {
    let t = "";
    for (let segs = 1 + rnd(4); segs > 0; segs--) t += "/".repeat(1 + (rnd(4) === 0 ? 1 : 0)) + PIECES[rnd(PIECES.length)] + PIECES[rnd(PIECES.length)];
    out.push(t);
  }
  return out;
}

const routedTo = (path: string) => (/^\/admin(\/|$)/.test(path) ? "admin" : "public");

// Each listener an HTTP/1.1 client can reach: Portico's behaviour, not the parser's.
for (const kind of RAW_LISTENERS) describe(kind, () => {
  const rawUtf8Refused = (target: string) => kind === "h2-https-h1" && /[\x80-\xff]/.test(target);
  let pub: RawBackend;
  let adm: RawBackend;
  let proxy: RawProxy;
  let pubId = "";
  let admId = "";

  beforeAll(async () => {
    pub = await namedBackend("public");
    adm = await namedBackend("admin");
    const pubB = makeBackend([pub.port]);
    const admB = makeBackend([adm.port]);
    pubId = pubB.id;
    admId = admB.id;
    // Rules without a host, so requests with and without Host (HTTP/1.0) use the same ones.
    proxy = startRawProxy(kind, makeTable([
      { host: null, path: "/", backend: pubB },
      { host: null, path: "/admin", backend: admB },
    ]));
  });
  afterAll(async () => {
    await proxy.stop();
    await pub.stop();
    await adm.stop();
  });

  const get11 = (target: string) => `GET ${target} HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n`;
  const get10 = (target: string) => `GET ${target} HTTP/1.0\r\n\r\n`;

  interface Outcome {
    status: number;
    /** Request lines each backend received for this request. */
    public: string[];
    admin: string[];
  }

  async function send(bytes: string): Promise<Outcome> {
    const p = pub.hits.length;
    const a = adm.hits.length;
    const raw = await firstResponse(proxy, bytes);
    return { status: statusLine(raw), public: pub.lines().slice(p), admin: adm.lines().slice(a) };
  }

  describe("HTTP: routed and forwarded as one path", () => {
    const toAdmin: Array<[string, string]> = [
      ["//admin/users", "/admin/users"],
      ["/\\admin", "/admin"],
      ["/.//admin", "/admin"],
      ["/..//admin", "/admin"],
      ["/%2e//admin", "/admin"],
      ["///admin//users/", "/admin/users/"],
      ["/x/..//admin?q=1", "/admin?q=1"],
    ];
    for (const [target, forwarded] of toAdmin) {
      test(`${target} → admin backend, request line ${forwarded}`, async () => {
        const o = await send(get11(target));
        expect(o.status).toBe(200);
        expect(o.public).toEqual([]);
        expect(o.admin).toEqual([`GET ${forwarded} HTTP/1.1`]);
        expect(proxy.records.at(-1)!.path).toBe(forwarded.split("?")[0]!);
      });
    }

    const refused: Array<[string, string]> = [
      ["path parameter", "/admin;x=1/secret"],
      ["path parameter on a dot segment", "/..;/admin"],
      ["session id in the path", "/app;jsessionid=0123"],
      ["overlong UTF-8 for '.'", "/%c0%ae%c0%ae/admin"],
      ["overlong UTF-8, upper case", "/x/%C0%AE%C0%AE/admin"],
      ["UTF-8 surrogate", "/%ed%a0%80"],
      ["raw byte that is not UTF-8 (Bun turns it into U+FFFD)", "/caf\xe9"],
      ["escaped U+FFFD", "/%ef%bf%bd"],
      ["escaped line feed", "/a%0Ab"],
      ["escaped DEL", "/a%7f"],
      ["raw DEL (Bun escapes it as %7F)", "/a\x7fb"],
    ];
    for (const [name, target] of refused) {
      test(`400, no backend reached: ${name}`, async () => {
        const o = await send(get11(target));
        expect(o.status).toBe(400);
        expect(o.public).toEqual([]);
        expect(o.admin).toEqual([]);
      });
    }

    test("non-ASCII: raw UTF-8 and its escapes in either case are one path, upper-case escapes", async () => {
      for (const target of ["/caf\xc3\xa9", "/caf%c3%a9", "/caf%C3%A9"]) {
        const o = await send(get11(target));
        // node's parser (the HTTPS listener) refuses raw non-ASCII in a target, as RFC 9112
        // §3.2 allows it none; Bun.serve reads it as UTF-8. Either way no other path is reached.
        if (rawUtf8Refused(target)) {
          expect(o.status).toBe(400);
          expect(o.public.length + o.admin.length).toBe(0);
          continue;
        }
        expect(o.status).toBe(200);
        expect(o.public).toEqual(["GET /caf%C3%A9 HTTP/1.1"]);
      }
    });

    test("escapes are decoded once: %252e stays %252e, %3B is data", async () => {
      let o = await send(get11("/x/%252e%252e/admin"));
      expect(o.public).toEqual(["GET /x/%252e%252e/admin HTTP/1.1"]);
      o = await send(get11("/admin%3bx=1/secret"));
      // One segment "admin%3Bx=1": not the /admin rule's segment, and forwarded as routed.
      expect(o.public).toEqual(["GET /admin%3Bx=1/secret HTTP/1.1"]);
      o = await send(get11("/%61dmin/%7Euser"));
      expect(o.admin).toEqual(["GET /admin/~user HTTP/1.1"]);
    });

    test("HTTP/1.0 without Host (Bun leaves req.url raw): the same rules, the same bytes", async () => {
      const cases: Array<[string, "public" | "admin", string]> = [
        ["/a{b}^", "public", "/a%7Bb%7D%5E"],
        ["/x/..//admin", "admin", "/admin"],
        ["/x\\..\\admin", "admin", "/admin"],
        ["/caf\xc3\xa9", "public", "/caf%C3%A9"],
        ["/q?a='b'", "public", "/q?a=%27b%27"],
      ];
      for (const [target, where, forwarded] of cases) {
        const o = await send(get10(target));
        if (rawUtf8Refused(target)) {
          expect(o.status, target).toBe(400);
          continue;
        }
        expect(o.status, target).toBe(200);
        expect(o[where], target).toEqual([`GET ${forwarded} HTTP/1.1`]);
        expect(proxy.records.at(-1)!.path).toBe(forwarded.split("?")[0]!);
      }
      for (const target of ["/caf\xe9", "/a;b", "/a\x7fb"]) expect((await send(get10(target))).status, target).toBe(400);
    });
  });

  test("generated targets: the backend's request line is the routed path, and that path routes to it", async () => {
    let forwarded = 0;
    for (const target of targets(250, 12345)) {
      const o = await send(get11(target));
      if (o.status === 400) {
        expect(o.public.length + o.admin.length, target).toBe(0);
        continue;
      }
      expect(o.status, target).toBe(200);
      const rec = proxy.records.at(-1)!;
      const where = routedTo(rec.path);
      expect(rec.service, target).toBe(where === "admin" ? admId : pubId);
      expect(o[where], target).toEqual([`GET ${rec.path} HTTP/1.1`]);
      expect(o[where === "admin" ? "public" : "admin"], target).toEqual([]);
      forwarded++;
    }
    // Most targets are routable: the property is not met by refusing everything.
    expect(forwarded).toBeGreaterThan(150);
  });

  describe("WebSocket: the upgrade carries the routed path", () => {
    test("//admin/users upgrades on the admin backend with /admin/users", async () => {
      const p = pub.hits.length;
      const a = adm.hits.length;
      const raw = await firstResponse(proxy, wsUpgrade("//admin/users"));
      expect(statusLine(raw)).toBe(101);
      expect(pub.lines().slice(p)).toEqual([]);
      expect(adm.lines().slice(a)).toEqual(["GET /admin/users HTTP/1.1"]);
    });

    test("a path the proxy refuses is refused before any upstream handshake", async () => {
      for (const target of ["/admin;x=1/secret", "/%c0%ae%c0%ae/admin"]) {
        const o = await send(wsUpgrade(target));
        expect(o.status, target).toBe(400);
        expect(o.public.length + o.admin.length).toBe(0);
      }
    });

    test("generated targets: the upstream handshake line is the routed path", async () => {
      let upgraded = 0;
      for (const target of targets(40, 777)) {
        // One answer per target: the upgrade is refused exactly when a plain GET of the same
        // target is (the path is read the same way before either is routed).
        const plain = (await send(get11(target))).status;
        const before = proxy.records.length;
        const o = await send(wsUpgrade(target));
        if (plain === 400) {
          expect([target, o.status, o.public.length + o.admin.length]).toEqual([target, 400, 0]);
          continue;
        }
        expect(o.status, target).toBe(101);
        // An upgrade's access record is written when the relay ends (the client socket is
        // closed by now): wait for it, then hold its routed path to the handshake line. (The
        // plain GET's record may land after `before`: the upgrade's is the one marked websocket.)
        await eventually(() => proxy.records.slice(before).some((r) => r.websocket), 5_000, "the upgrade's access record");
        const rec = proxy.records.slice(before).find((r) => r.websocket)!;
        const where = routedTo(rec.path);
        expect(rec.service, target).toBe(where === "admin" ? admId : pubId);
        expect(o[where], target).toEqual([`GET ${rec.path} HTTP/1.1`]);
        expect(o[where === "admin" ? "public" : "admin"], target).toEqual([]);
        upgraded++;
      }
      expect(upgraded).toBeGreaterThan(20);
    });
  });
});
