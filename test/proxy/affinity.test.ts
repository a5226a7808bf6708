// Cookie affinity (src/kinds/affinity.ts) and hashing (hash-by.ts) through a real proxy to real
// backends on 127.0.0.1, endpoints changing under live sessions. Cookie attributes are
// compared whole, as ingress-nginx writes them: rootfs/etc/nginx/lua/balancer/sticky.lua
// set_cookie, lua-resty-cookie f418d770 `bake` (attribute order), nginx's
// ngx_http_cookie_time (Expires), and its test/e2e/annotations/affinity.go,
// affinitymode.go (Path, Domain, Expires, Max-Age, Secure by scheme, persistent mode).
import { afterEach, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { parseAnnotations } from "../../src/compile/annotations.ts";
import { AFFINITY, affinityCookie, type AffinityParams, backendKey, cookieBackendKey, cookieTime, rejectsSameSiteNone } from "../../src/kinds/affinity.ts";
import { createBalancer } from "../../src/proxy/upstream/balancer.ts";
import { createProxyHandler } from "../../src/proxy/pipeline/handler.ts";
import { startHttpListener } from "../../src/proxy/pipeline/listener.ts";
import { POLICY_KINDS } from "../../src/kinds/registry.ts";
import type { PolicyKind } from "../../src/kinds/types.ts";
import { lookup } from "../../src/table/lookup.ts";
import type { Backend, RouteTable } from "../../src/table/types.ts";
import { canaryStagePolicy } from "../../src/annotations/canary.ts";
import { buildTable } from "../../src/table/build.ts";
import { assembleStages } from "../../src/compile/stages.ts";
import { makeBackend, makeRoute, makeTable, rawRequest, statusLine, quietLog, testConfig, withCaps } from "./helpers.ts";
import { seeded } from "./seeded.ts";

const P = "nginx.ingress.kubernetes.io/";
const NOW = 1_790_000_000; // 2026-09-21T14:13:20Z
const md5hex = (s: string) => createHash("md5").update(s).digest("hex");
const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

/** n named backends on 127.0.0.1; each answers its name (and upgrades WebSockets). */
function pods(n: number, prefix = "pod") {
  return Array.from({ length: n }, (_, i) => {
    const name = `${prefix}${i}`;
    const s = Bun.serve({
      hostname: "127.0.0.1", port: 0,
      fetch: (req, server) => (req.headers.get("upgrade") === "websocket" && server.upgrade(req, { data: undefined }) ? undefined : new Response(name)),
      websocket: { message() {} },
    });
    cleanup.push(() => s.stop(true));
    return { name, port: s.port as number, stop: () => s.stop(true) };
  });
}

const stagesOf = (ann: Record<string, string>) => parseAnnotations(Object.fromEntries(Object.entries(ann).map(([k, v]) => [P + k, v]))).options.stages;

function proxy(table: RouteTable, opts: { scheme?: "http" | "https"; seed?: number } = {}) {
  let current = table;
  const kinds = new Map<string, PolicyKind>([...POLICY_KINDS, ["affinity", withCaps(AFFINITY, { random: seeded(opts.seed ?? 1), now: () => NOW * 1000 })]]);
  const balancer = createBalancer();
  const handler = createProxyHandler({
    config: testConfig(), table: () => current, lookup, log: quietLog, scheme: opts.scheme ?? "http", policyKinds: kinds, balancer,
  });
  const server = startHttpListener({ hostname: "127.0.0.1", port: 0, handler });
  cleanup.push(() => server.stop(true));
  return {
    url: `http://127.0.0.1:${server.port}`, port: server.port as number, balancer,
    setTable(t: RouteTable) {
      current = t;
    },
  };
}

async function get(url: string, headers: Record<string, string>): Promise<{ status: number; body: string; setCookie: string | null }> {
  const r = await fetch(url, { headers });
  return { status: r.status, body: await r.text(), setCookie: r.headers.get("set-cookie") };
}

/** The cookie pair to send back (the part before the first `;`). */
const pair = (setCookie: string): string => setCookie.slice(0, setCookie.indexOf(";"));

const svc = (ports: number[]): Backend => makeBackend(ports, { id: "default/web:80", service: "web" });

describe("the cookie", () => {
  test("defaults: INGRESSCOOKIE=<random key>|<backend key>; Path=<the route's path>; HttpOnly", async () => {
    const [a] = pods(1);
    const p = proxy(makeTable([{ host: "s.test", path: "/shop", backend: svc([a!.port]), options: { stages: stagesOf({ affinity: "cookie" }) } }]));
    const r = await get(`${p.url}/shop/cart`, { host: "s.test" });
    expect(r.status).toBe(200);
    // ingress-nginx's backend key for upstream "default-web-80": md5hex(md5hex(name)..name).
    const bk = md5hex(md5hex("default-web-80") + "default-web-80");
    expect(backendKey(svc([a!.port]))).toBe(bk);
    expect(r.setCookie).toMatch(new RegExp(`^INGRESSCOOKIE=[0-9a-f]{16}\\|${bk}; Path=/shop; HttpOnly$`));
  });

  test("every attribute, in lua-resty-cookie's order; Expires in nginx's cookie time", async () => {
    const [a] = pods(1);
    const stages = stagesOf({
      affinity: "cookie", "session-cookie-name": "SERVERID", "session-cookie-path": "/something", "session-cookie-domain": "foo.bar",
      "session-cookie-expires": "172800", "session-cookie-max-age": "259200", "session-cookie-samesite": "None", "session-cookie-secure": "true",
    });
    const p = proxy(makeTable([{ host: "s.test", backend: svc([a!.port]), options: { stages } }]));
    const r = await get(`${p.url}/`, { host: "s.test" });
    expect(cookieTime(NOW + 172800)).toBe("Wed, 23-Sep-26 14:13:20 GMT");
    expect(r.setCookie).toMatch(
      /^SERVERID=[0-9a-f]{16}\|[0-9a-f]{32}; Expires=Wed, 23-Sep-26 14:13:20 GMT; Max-Age=259200; Domain=foo\.bar; Path=\/something; Secure; HttpOnly; SameSite=None$/,
    );
  });

  test("a route path that cannot be a cookie Path (a regex with `;`, a space) gives Path=/; session-cookie-path wins", () => {
    const params: AffinityParams = {
      mode: "balanced", name: "A", path: null, domain: null, maxAge: null, expires: null,
      sameSite: null, conditionalSameSiteNone: false, secure: false, changeOnFailure: false,
    };
    const at = (path: string, over: Partial<AffinityParams> = {}) => affinityCookie({ ...params, ...over }, "v", { path, https: false, userAgent: null, nowSeconds: 0 });
    expect(at("/app")).toBe("A=v; Path=/app; HttpOnly");
    expect(at("/foo/.*")).toBe("A=v; Path=/foo/.*; HttpOnly");
    expect(at("/a;b")).toBe("A=v; Path=/; HttpOnly");
    expect(at("/(x|y) z")).toBe("A=v; Path=/; HttpOnly");
    expect(at("/a;b", { path: "/foo/bar" })).toBe("A=v; Path=/foo/bar; HttpOnly");
  });

  test("nginx's cookie time: two-digit years up to 2037, four after", () => {
    expect(cookieTime(0)).toBe("Thu, 01-Jan-70 00:00:00 GMT");
    expect(cookieTime(Date.UTC(2037, 11, 31, 23, 59, 59) / 1000)).toBe("Thu, 31-Dec-37 23:59:59 GMT");
    expect(cookieTime(Date.UTC(2038, 0, 1) / 1000)).toBe("Fri, 01-Jan-2038 00:00:00 GMT");
  });

  test("Secure follows the scheme unless forced: session-cookie-secure false still gets Secure on HTTPS (affinity.go)", async () => {
    const [a] = pods(1);
    const table = makeTable([{ host: "s.test", backend: svc([a!.port]), options: { stages: stagesOf({ affinity: "cookie", "session-cookie-secure": "false" }) } }]);
    const plain = await get(`${proxy(table).url}/`, { host: "s.test" });
    expect(plain.setCookie).not.toContain("; Secure");
    const tls = await get(`${proxy(table, { scheme: "https" }).url}/`, { host: "s.test" });
    expect(tls.setCookie).toContain("; Path=/; Secure; HttpOnly");
  });

  test("conditional SameSite=None is left out for clients that reject it (util/same_site.lua)", async () => {
    const [a] = pods(1);
    const stages = stagesOf({ affinity: "cookie", "session-cookie-samesite": "None", "session-cookie-conditional-samesite-none": "true" });
    const p = proxy(makeTable([{ host: "s.test", backend: svc([a!.port]), options: { stages } }]));
    const old = "Mozilla/5.0 (iPhone; CPU iPhone OS 12_0 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148";
    const modern = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/120.0 Safari/537.36";
    expect((await get(`${p.url}/`, { host: "s.test", "user-agent": old })).setCookie).toEndWith("; HttpOnly");
    expect((await get(`${p.url}/`, { host: "s.test", "user-agent": modern })).setCookie).toEndWith("; HttpOnly; SameSite=None");
    expect(rejectsSameSiteNone("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_14_6) AppleWebKit/605.1.15 Version/12.1 Safari/605.1.15")).toBe(true);
    expect(rejectsSameSiteNone("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_14_6) Chrome/90.0 Safari/537.36")).toBe(false);
    expect(rejectsSameSiteNone("Mozilla/5.0 Chrome/59.0.3071 Safari/537.36")).toBe(true);
    expect(rejectsSameSiteNone(null)).toBe(false);
  });

  test("the WebSocket handshake carries the cookie too", async () => {
    const [a] = pods(1);
    const p = proxy(makeTable([{ host: "s.test", backend: svc([a!.port]), options: { stages: stagesOf({ affinity: "cookie" }) } }]));
    const raw = await rawRequest(
      p.port,
      "GET /ws HTTP/1.1\r\nHost: s.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
      500,
    );
    expect(statusLine(raw)).toBe(101);
    expect(raw).toMatch(/\r\nset-cookie: INGRESSCOOKIE=[0-9a-f]{16}\|[0-9a-f]{32}; Path=\/; HttpOnly\r\n/i);
  });
});

/** Open `n` sessions: their cookies and the pod each landed on. */
async function sessions(url: string, n: number): Promise<{ cookie: string; pod: string }[]> {
  const out: { cookie: string; pod: string }[] = [];
  for (let i = 0; i < n; i++) {
    const r = await get(url, { host: "s.test" });
    expect(r.setCookie).not.toBeNull();
    out.push({ cookie: pair(r.setCookie!), pod: r.body });
  }
  return out;
}

describe("stickiness across endpoint changes", () => {
  test("balanced: a session stays on its pod while the pod stays; the sessions of a removed pod move, without a new cookie", async () => {
    const ps = pods(5);
    const p = proxy(makeTable([{ host: "s.test", backend: svc(ps.map((x) => x.port)), options: { stages: stagesOf({ affinity: "cookie" }) } }]));
    const open = await sessions(`${p.url}/`, 40);
    expect(new Set(open.map((s) => s.pod)).size).toBeGreaterThan(2); // new sessions spread
    for (const s of open.slice(0, 10)) {
      const again = await get(`${p.url}/`, { host: "s.test", cookie: `other=1; ${s.cookie}` });
      expect([again.body, again.setCookie]).toEqual([s.pod, null]);
    }
    // pod2 leaves the endpoints (a new Backend object, as the compiler makes on a change).
    const left = ps.filter((x) => x.name !== "pod2");
    p.setTable(makeTable([{ host: "s.test", backend: svc(left.map((x) => x.port)), options: { stages: stagesOf({ affinity: "cookie" }) } }]));
    let moved = 0;
    for (const s of open) {
      const r = await get(`${p.url}/`, { host: "s.test", cookie: s.cookie });
      expect(r.setCookie).toBeNull(); // ingress-nginx reissues nothing in balanced mode
      if (s.pod === "pod2") {
        expect(r.body).not.toBe("pod2");
        moved++;
      } else {
        expect(r.body).toBe(s.pod);
      }
    }
    expect(moved).toBe(open.filter((s) => s.pod === "pod2").length);
    // A pod comes: only sessions that move go to it.
    const extra = pods(1, "new")[0]!;
    p.setTable(makeTable([{ host: "s.test", backend: svc([...left.map((x) => x.port), extra.port]), options: { stages: stagesOf({ affinity: "cookie" }) } }]));
    for (const s of open.filter((x) => x.pod !== "pod2")) {
      const r = await get(`${p.url}/`, { host: "s.test", cookie: s.cookie });
      if (r.body !== s.pod) expect(r.body).toBe(extra.name); // stays, or goes to the new pod only
    }
  });

  test("persistent: sessions stay through scaling up; when their pod goes they get a new pod and a new cookie", async () => {
    const ps = pods(3);
    const stages = stagesOf({ affinity: "cookie", "affinity-mode": "persistent" });
    const p = proxy(makeTable([{ host: "s.test", backend: svc(ps.map((x) => x.port)), options: { stages } }]));
    const open = await sessions(`${p.url}/`, 12);
    // The key is ingress-nginx's md5hex(upstream name .. "ip:port") of the pod.
    for (const s of open) {
      const port = ps.find((x) => x.name === s.pod)!.port;
      expect(s.cookie).toBe(`INGRESSCOOKIE=${md5hex(`default-web-80127.0.0.1:${port}`)}|${md5hex(md5hex("default-web-80") + "default-web-80")}`);
    }
    const more = [...ps, ...pods(4, "more")];
    p.setTable(makeTable([{ host: "s.test", backend: svc(more.map((x) => x.port)), options: { stages } }]));
    for (const s of open) {
      const r = await get(`${p.url}/`, { host: "s.test", cookie: s.cookie });
      expect([r.body, r.setCookie]).toEqual([s.pod, null]);
    }
    const victim = open[0]!.pod;
    p.setTable(makeTable([{ host: "s.test", backend: svc(more.filter((x) => x.name !== victim).map((x) => x.port)), options: { stages } }]));
    const r = await get(`${p.url}/`, { host: "s.test", cookie: open[0]!.cookie });
    expect(r.body).not.toBe(victim);
    expect(r.setCookie).not.toBeNull();
    expect(pair(r.setCookie!)).not.toBe(open[0]!.cookie);
    const next = await get(`${p.url}/`, { host: "s.test", cookie: pair(r.setCookie!) });
    expect([next.body, next.setCookie]).toEqual([r.body, null]);
  });

  test("change-on-failure: false retries the cookie's pod (502 when it is down); true moves to another pod and reissues the cookie", async () => {
    for (const [flag, expectMove] of [["false", false], ["true", true]] as const) {
      const ps = pods(3);
      const stages = stagesOf({ affinity: "cookie", "session-cookie-change-on-failure": flag });
      const p = proxy(makeTable([{ host: "s.test", backend: svc(ps.map((x) => x.port)), options: { stages } }]));
      const [s] = await sessions(`${p.url}/`, 1);
      const pod = ps.find((x) => x.name === s!.pod)!;
      await pod.stop();
      const r = await get(`${p.url}/`, { host: "s.test", cookie: s!.cookie });
      if (!expectMove) {
        expect(r.status).toBe(502);
      } else {
        expect(r.status).toBe(200);
        expect(r.body).not.toBe(s!.pod);
        expect(pair(r.setCookie!)).not.toBe(s!.cookie);
      }
    }
  });

  test("the canary seam: the cookie names its backend, so a canary step can tell main's sessions from the canary's", async () => {
    const [a] = pods(1);
    const p = proxy(makeTable([{ host: "s.test", backend: svc([a!.port]), options: { stages: stagesOf({ affinity: "cookie" }) } }]));
    const r = await get(`${p.url}/`, { host: "s.test" });
    const req = new Request("http://s.test/", { headers: { cookie: pair(r.setCookie!) } });
    expect(cookieBackendKey(req, "INGRESSCOOKIE")).toBe(backendKey(svc([a!.port])));
    expect(cookieBackendKey(req, "INGRESSCOOKIE")).not.toBe(backendKey(makeBackend([a!.port], { id: "default/web-canary:80", service: "web-canary" })));
    expect(cookieBackendKey(new Request("http://s.test/"), "INGRESSCOOKIE")).toBeNull();
  });
});

test("with a canary: a client sent to the canary gets a canary pod and a cookie naming the canary's backend", async () => {
  const [m, c] = [pods(1, "main")[0]!, pods(1, "canary")[0]!];
  const main = svc([m.port]);
  const canary = makeBackend([c.port], { id: "default/web-canary:80", service: "web-canary" });
  const rules = { header: "x-canary", headerValue: null, headerPattern: null, cookie: null, weight: 0, weightTotal: 100 };
  // The compiler's order: the canary step first, then the affinity step picks within its choice.
  const stages = assembleStages(canaryStagePolicy(rules, { cookie: "INGRESSCOOKIE", sticky: true }), stagesOf({ affinity: "cookie" }));
  const route = { ...makeRoute({ host: "s.test", backend: main, options: { stages } }), canary: { ingress: { namespace: "default", name: "ing-canary" }, backend: canary } };
  const p = proxy(buildTable([route], null));
  const toCanary = await get(`${p.url}/`, { host: "s.test", "x-canary": "always" });
  expect(toCanary.body).toBe("canary0");
  expect(pair(toCanary.setCookie!).split("|")[1]).toBe(backendKey(canary));
  const toMain = await get(`${p.url}/`, { host: "s.test" });
  expect(toMain.body).toBe("main0");
  expect(pair(toMain.setCookie!).split("|")[1]).toBe(backendKey(main));
  // Each cookie keeps its side, whatever the header says, and is not reissued.
  expect(await get(`${p.url}/`, { host: "s.test", cookie: pair(toCanary.setCookie!) })).toMatchObject({ body: "canary0", setCookie: null });
  expect(await get(`${p.url}/`, { host: "s.test", "x-canary": "always", cookie: pair(toMain.setCookie!) })).toMatchObject({ body: "main0", setCookie: null });
});

test("with a legacy canary: the canary's answer sets no cookie and a canary cookie does not keep the client there", async () => {
  const [m, c] = [pods(1, "main")[0]!, pods(1, "canary")[0]!];
  const main = svc([m.port]);
  const canary = makeBackend([c.port], { id: "default/web-canary:80", service: "web-canary" });
  const rules = { header: "x-canary", headerValue: null, headerPattern: null, cookie: null, weight: 0, weightTotal: 100 };
  const stages = assembleStages(canaryStagePolicy(rules, { cookie: "INGRESSCOOKIE", sticky: false }), stagesOf({ affinity: "cookie" }));
  const route = { ...makeRoute({ host: "s.test", backend: main, options: { stages } }), canary: { ingress: { namespace: "default", name: "ing-canary" }, backend: canary } };
  const p = proxy(buildTable([route], null));
  expect(await get(`${p.url}/`, { host: "s.test", "x-canary": "always" })).toMatchObject({ body: "canary0", setCookie: null });
  const canaryCookie = `INGRESSCOOKIE=0123456789abcdef|${backendKey(canary)}`;
  expect((await get(`${p.url}/`, { host: "s.test", cookie: canaryCookie })).body).toBe("main0"); // weight 0 decides
  const toMain = await get(`${p.url}/`, { host: "s.test" });
  expect(toMain.body).toBe("main0");
  expect(await get(`${p.url}/`, { host: "s.test", "x-canary": "always", cookie: pair(toMain.setCookie!) })).toMatchObject({ body: "main0", setCookie: null });
});

describe("upstream-hash-by through the proxy", () => {
  test("$http_x_user: a user stays on one pod; when another pod goes, users elsewhere do not move", async () => {
    const ps = pods(5);
    const stages = stagesOf({ "upstream-hash-by": "$http_x_user" });
    const p = proxy(makeTable([{ host: "s.test", backend: svc(ps.map((x) => x.port)), options: { stages } }]));
    const users = Array.from({ length: 40 }, (_, i) => `user-${i}`);
    const where = new Map<string, string>();
    for (const u of users) {
      const first = await get(`${p.url}/`, { host: "s.test", "x-user": u });
      const second = await get(`${p.url}/other?x=1`, { host: "s.test", "x-user": u });
      expect(second.body).toBe(first.body);
      where.set(u, first.body);
    }
    expect(new Set(where.values()).size).toBeGreaterThan(2);
    const gone = where.get("user-0")!;
    p.setTable(makeTable([{ host: "s.test", backend: svc(ps.filter((x) => x.name !== gone).map((x) => x.port)), options: { stages } }]));
    for (const u of users) {
      const r = await get(`${p.url}/`, { host: "s.test", "x-user": u });
      if (where.get(u) === gone) expect(r.body).not.toBe(gone);
      else expect(r.body).toBe(where.get(u)!);
    }
  });

  test("ewma: answers feed the scores the next choice reads", async () => {
    const ps = pods(2);
    const p = proxy(makeTable([{ host: "s.test", backend: svc(ps.map((x) => x.port)), options: { stages: stagesOf({ "load-balance": "ewma" }) } }]));
    for (const x of ps) expect(p.balancer.ewmaScore(`127.0.0.1:${x.port}`)).toBeNull();
    for (let i = 0; i < 10; i++) expect((await get(`${p.url}/`, { host: "s.test" })).status).toBe(200);
    const scored = ps.filter((x) => p.balancer.ewmaScore(`127.0.0.1:${x.port}`) !== null);
    expect(scored.length).toBeGreaterThan(0);
  });
});
