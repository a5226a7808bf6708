// Portico's own answers under --ingress-nginx-compat carry nginx's built-in pages as
// ingress-nginx configures them (server_tokens off; nginx src/http/ngx_http_special_response.c):
// first the pages themselves against a real nginx on loopback (skipped where nginx is not
// installed), then the answers of a running proxy, status by status, with their exact bodies and
// Content-Type. Outside compat mode the short text answers stay.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { parseAnnotations } from "../../src/compile/annotations.ts";
import { nginxPads, nginxPage, nginxRedirectPage } from "../../src/http/status-page.ts";
import { makeBackend, makeTable, startProxy, type TestProxy, answersAt, NGINX_BIN, startNginx, type RealNginx } from "./helpers.ts";
import { rawBackend } from "./raw.ts";

const CHROME = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
const FIREFOX = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0";
const CURL = "curl/7.88.1";

// The statuses Portico answers itself, and nginx's internal codes for the two client-certificate
// 400 pages (ngx_http_request.h: NGX_HTTPS_CERT_ERROR 495, NGX_HTTPS_NO_CERT 496). Not 408:
// nginx sends no page for it (ngx_http_finalize_request terminates a request finalized with
// NGX_HTTP_REQUEST_TIME_OUT, so a client_body_timeout closes the connection unanswered).
const STATUSES = [400, 401, 403, 404, 405, 413, 414, 421, 429, 500, 502, 503, 504];
const CERT = [[495, "The SSL certificate error"], [496, "No required SSL certificate was sent"]] as const;

// The redirects nginx makes itself (`return 30x <url>`, ngx_http_special_response.c).
const REDIRECTS = [301, 302, 303, 307, 308];


describe.skipIf(NGINX_BIN === null)("nginx's pages, from a real nginx with server_tokens off", () => {
  let nginx: RealNginx;
  let port: number;
  beforeAll(async () => {
    const locations = [...STATUSES, ...CERT.map(([c]) => c)].map((s) => `location = /s${s} { return ${s}; }`)
      .concat(REDIRECTS.map((s) => `location = /r${s} { return ${s} https://a.test/x; }`)).join("\n      ");
    nginx = await startNginx({
      prefix: "portico-nginx-pages-",
      http: (port) => `access_log off;
        server { listen 127.0.0.1:${port};
          ${locations}
        }`,
      ready: answersAt("/s404"),
    });
    port = nginx.port;
  });
  afterAll(() => nginx?.stop());

  for (const ua of [CURL, CHROME, FIREFOX]) {
    test(`every status, byte for byte (User-Agent ${ua.slice(0, 20)}…)`, async () => {
      for (const s of STATUSES) {
        const res = await fetch(`http://127.0.0.1:${port}/s${s}`, { headers: { "user-agent": ua } });
        expect(res.status, String(s)).toBe(s);
        expect(res.headers.get("content-type"), String(s)).toBe("text/html");
        expect(await res.text(), String(s)).toBe(nginxPage(s, ua)!);
      }
      for (const [code, title] of CERT) {
        const res = await fetch(`http://127.0.0.1:${port}/s${code}`, { headers: { "user-agent": ua } });
        expect(res.status).toBe(400);
        expect(await res.text()).toBe(nginxPage(400, ua, title)!);
      }
    });
  }

  test("the redirects nginx makes itself carry its page, never padded", async () => {
    for (const ua of [CURL, CHROME]) {
      for (const s of REDIRECTS) {
        const res = await fetch(`http://127.0.0.1:${port}/r${s}`, { headers: { "user-agent": ua }, redirect: "manual" });
        expect([res.status, res.headers.get("location"), res.headers.get("content-type")], String(s)).toEqual([s, "https://a.test/x", "text/html"]);
        expect(await res.text(), String(s)).toBe(nginxRedirectPage(s)!);
      }
    }
  });
});

test("padding follows ngx_http_process_user_agent: MSIE and Chrome, not Gecko, Opera or other agents", () => {
  expect([CHROME, FIREFOX, CURL, "Mozilla/4.0 (compatible; MSIE 8.0; Windows NT 6.1)", "Opera/9.80 (Windows NT 6.1) Chrome/1", "MSIE 5"].map(nginxPads))
    .toEqual([true, false, false, true, false, false]);
  expect(nginxPage(404, null)).toBe("<html>\r\n<head><title>404 Not Found</title></head>\r\n<body>\r\n<center><h1>404 Not Found</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n");
});

test("--ingress-nginx-compat: the pod's Server field does not reach the client (nginx.tmpl more_clear_headers Server; proxy_hide_header default)", async () => {
  const be = await rawBackend(() => "HTTP/1.1 200 OK\r\nServer: gunicorn/21\r\nContent-Length: 2\r\n\r\nok");
  const table = makeTable([{ host: "ok.test", backend: makeBackend([be.port]) }]);
  const compat = startProxy(table, { ingressNginxCompat: true });
  const plain = startProxy(table);
  try {
    const a = await compat.request("/", { headers: { host: "ok.test" } });
    expect([a.status, a.headers.get("server"), await a.text()]).toEqual([200, null, "ok"]);
    const b = await plain.request("/", { headers: { host: "ok.test" } });
    expect([b.status, b.headers.get("server"), await b.text()]).toEqual([200, "gunicorn/21", "ok"]);
  } finally {
    await compat.stop();
    await plain.stop();
    be.stop();
  }
});

describe("Portico's own answers", () => {
  const N = "nginx.ingress.kubernetes.io/";
  let be: Awaited<ReturnType<typeof rawBackend>>;
  const proxies: TestProxy[] = [];
  const start = (compat: boolean) => {
    const opts = (a: Record<string, string>) => parseAnnotations(a).options;
    const table = makeTable([
      { host: "ok.test", backend: makeBackend([be.port]) },
      { host: "down.test", backend: makeBackend([]) },
      { host: "deny.test", backend: makeBackend([be.port]), options: opts({ [`${N}denylist-source-range`]: "127.0.0.0/8" }) },
      { host: "limit.test", backend: makeBackend([be.port]), options: { maxBodySize: 4 } },
    ]);
    const p = startProxy(table, { ingressNginxCompat: compat });
    proxies.push(p);
    return p;
  };
  beforeAll(async () => {
    be = await rawBackend();
  });
  afterAll(async () => {
    for (const p of proxies) await p.stop();
    be.stop();
  });

  const ask = async (p: TestProxy, host: string, ua: string, init: { method?: string; body?: string } = {}) => {
    const res = await p.request("/x", { ...init, headers: { host, "user-agent": ua } });
    return { status: res.status, type: res.headers.get("content-type"), body: await res.text() };
  };

  test("with --ingress-nginx-compat: 404 no route, 503 no endpoints, 403 denied, 413 too large: nginx's pages", async () => {
    const p = start(true);
    for (const ua of [CURL, CHROME]) {
      expect(await ask(p, "nowhere.test", ua)).toEqual({ status: 404, type: "text/html", body: nginxPage(404, ua)! });
      expect(await ask(p, "down.test", ua)).toEqual({ status: 503, type: "text/html", body: nginxPage(503, ua)! });
      expect(await ask(p, "deny.test", ua)).toEqual({ status: 403, type: "text/html", body: nginxPage(403, ua)! });
      expect(await ask(p, "limit.test", ua, { method: "POST", body: "0123456789" })).toEqual({ status: 413, type: "text/html", body: nginxPage(413, ua)! });
    }
    expect(await ask(p, "ok.test", CURL)).toMatchObject({ status: 200 });
    // The access log counts the bytes the client got.
    const r404 = p.records.find((r) => r.status === 404)!;
    expect(r404.bytesOut).toBe(nginxPage(404, CURL)!.length);
  });

  test("with --ingress-nginx-compat: the redirects Portico makes carry nginx's redirect page (HTTPS redirect, permanent-redirect, temporal-redirect)", async () => {
    const opts = (a: Record<string, string>) => parseAnnotations(a).options;
    const table = makeTable([
      { host: "tls.test", backend: makeBackend([be.port]), tls: true },
      { host: "moved.test", backend: makeBackend([be.port]), options: opts({ [`${N}permanent-redirect`]: "https://new.test/" }) },
      { host: "temp.test", backend: makeBackend([be.port]), options: opts({ [`${N}temporal-redirect`]: "https://new.test/", [`${N}temporal-redirect-code`]: "307" }) },
    ]);
    for (const compat of [true, false]) {
      const p = startProxy(table, { ingressNginxCompat: compat });
      proxies.push(p);
      const go = async (host: string) => {
        const res = await p.request("/x", { headers: { host, "user-agent": CHROME }, redirect: "manual" });
        return [res.status, res.headers.get("location"), res.headers.get("content-type"), await res.text()];
      };
      // lua_ingress.lua ngx.redirect (308, http-redirect-code) and nginx.tmpl `return <code> <url>`.
      expect(await go("tls.test")).toEqual([308, "https://tls.test/x", compat ? "text/html" : null, compat ? nginxRedirectPage(308) : ""]);
      expect(await go("moved.test")).toEqual([301, "https://new.test/", compat ? "text/html" : null, compat ? nginxRedirectPage(301) : ""]);
      expect(await go("temp.test")).toEqual([307, "https://new.test/", compat ? "text/html" : null, compat ? nginxRedirectPage(307) : ""]);
      expect(be.hits.filter((h) => /^host: (tls|moved|temp)\.test/im.test(h.head))).toEqual([]);
    }
  });

  test("without it: Portico's short text answers", async () => {
    const p = start(false);
    expect(await ask(p, "nowhere.test", CHROME)).toEqual({ status: 404, type: "text/plain; charset=utf-8", body: "no route\n" });
    expect(await ask(p, "down.test", CHROME)).toEqual({ status: 503, type: "text/plain; charset=utf-8", body: "service unavailable\n" });
    expect(await ask(p, "deny.test", CHROME)).toEqual({ status: 403, type: "text/plain; charset=utf-8", body: "forbidden\n" });
  });
});
