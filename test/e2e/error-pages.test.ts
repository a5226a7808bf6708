// Error pages end to end: the real process (--manifests, --custom-http-errors,
// --default-backend-service) → compile → proxy, a pod that answers the status its path names,
// and an error backend on a raw socket that logs the request head it received. Expectations
// come from ingress-nginx at dbb11b92: rootfs/etc/nginx/template/nginx.tmpl (the location's
// `error_page N = @custom_…` ~1398-1405, the CUSTOM_ERRORS named location ~834-866, the
// fallback location's headers ~1380-1388), internal/ingress/controller/controller.go (which
// upstream the error requests and the fallback use), docs/user-guide/custom-errors.md ("NGINX
// does not change the response"), and its e2e tests annotations/default_backend.go and
// annotations/disableproxyintercepterrors.go.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { rawBackend, type RawBackend, type RawRequest } from "../proxy/raw.ts";
import { freePort, get, startPortico, type Portico } from "./harness.ts";
import { ingress, ingressClass, service, slice, yamlDocs } from "./objects.ts";

const A = "nginx.ingress.kubernetes.io/";

interface Head {
  line: string;
  headers: Record<string, string>;
}

/**
 * The error backend: logs each request head as received and answers with the status the
 * X-Code field names on `/` (an error page "is expected to return the correct HTTP status
 * code"), 200 elsewhere; the body names what it saw.
 */
async function rawErrorBackend(): Promise<RawBackend> {
  return rawBackend((req) => {
    const { line, headers } = headOf(req);
    const target = line.split(" ")[1] ?? "";
    const status = target.split("?")[0] === "/" && headers["x-code"] ? Number(headers["x-code"]) : 200;
    const body = `page ${headers["x-code"] ?? "-"} ${line}`;
    return `HTTP/1.1 ${status} Page\r\nContent-Type: text/plain\r\nX-Error-Page: yes\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`;
  });
}

/** A request's line and its header fields (names lower-cased, values trimmed). */
function headOf(req: RawRequest): Head {
  const headers: Record<string, string> = {};
  for (const l of req.head.split("\r\n").slice(1)) {
    const i = l.indexOf(":");
    headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
  }
  return { line: req.line, headers };
}

/** The pod: `/status/N` answers N with "app N"; anything else 200 "app <path>". Counts requests. */
function statusPod() {
  let hits = 0;
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      hits++;
      await req.arrayBuffer();
      const path = new URL(req.url).pathname;
      const m = /^\/status\/(\d{3})$/.exec(path);
      return new Response(`app ${m ? m[1] : path}`, { status: m ? Number(m[1]) : 200, headers: { "x-app": "yes" } });
    },
  });
  return { port: server.port as number, hits: () => hits, stop: () => server.stop(true) };
}

let dir: string;
let portico: Portico;
let pod: ReturnType<typeof statusPod>;
let pages: RawBackend;

beforeAll(async () => {
  pod = statusPod();
  pages = await rawErrorBackend();
  dir = mkdtempSync(join(tmpdir(), "portico-errpages-"));
  const objs = [
    ingressClass(),
    service("shop", "app"),
    slice("shop", "app", [pod.port]),
    service("shop", "errors"),
    slice("shop", "errors", [pages.port]),
    service("shop", "down"),
    slice("shop", "down", []),
    // A Service with a ready endpoint nobody listens on: the error backend that fails.
    service("shop", "dead"),
    slice("shop", "dead", [freePort()]),
    ingress("shop", "pages", [{ host: "pages.test", paths: [{ path: "/", service: "app" }] }], {
      annotations: { [`${A}custom-http-errors`]: "404, 503,500", [`${A}default-backend`]: "errors" },
    }),
    ingress("shop", "optout", [{ host: "optout.test", paths: [{ path: "/", service: "app" }, { path: "/down", service: "down" }] }], {
      annotations: { [`${A}custom-http-errors`]: "404,503", [`${A}disable-proxy-intercept-errors`]: "true" },
    }),
    ingress("shop", "fallback", [{ host: "fallback.test", paths: [{ path: "/", service: "down" }] }], {
      annotations: { [`${A}default-backend`]: "errors" },
    }),
    ingress("shop", "plain", [{ host: "plain.test", paths: [{ path: "/", service: "app" }, { path: "/down", service: "down" }] }]),
    ingress("shop", "deadpages", [{ host: "dead.test", paths: [{ path: "/", service: "app" }] }], {
      annotations: { [`${A}custom-http-errors`]: "404", [`${A}default-backend`]: "dead" },
    }),
  ];
  writeFileSync(join(dir, "all.yaml"), yamlDocs(objs));
  portico = await startPortico([
    "--manifests", dir, "--log-level", "warn", "--access-log", "off",
    "--default-backend-service", "shop/errors:80", "--custom-http-errors", "404",
    "--connect-timeout", "2s",
  ]);
});

afterAll(async () => {
  await portico?.stop("SIGKILL");
  pod?.stop();
  await pages?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** The error backend's next request head, from what one request makes it receive. */
async function pageRequest(send: () => Promise<unknown>): Promise<Head | undefined> {
  const before = pages.hits.length;
  await send();
  expect(pages.hits.length).toBe(before + 1);
  const hit = pages.hits[before];
  return hit === undefined ? undefined : headOf(hit);
}

describe("custom-http-errors with default-backend", () => {
  test("a listed status from the pod: the error backend's answer as it is, and the request CUSTOM_ERRORS sends", async () => {
    let r!: Awaited<ReturnType<typeof get>>;
    const head = await pageRequest(async () => {
      r = await get(portico.http, "pages.test", "/status/404?q=1&b=%41", {
        headers: { accept: "application/json", "x-request-id": "req-1", "user-agent": "t", "x-real-ip": "6.6.6.6" },
      });
    });
    // Status, headers and body are the error backend's (error_page N = @… with no code).
    expect(r.status).toBe(404);
    expect(r.body).toBe("page 404 GET /?q=1&b=%41 HTTP/1.1");
    expect(r.headers.get("x-error-page")).toBe("yes");
    expect(r.headers.get("x-app")).toBeNull();
    expect(r.headers.get("x-request-id")).toBe("req-1");
    // `rewrite (.*) / break;` keeps the arguments; the method is the client's.
    expect(head?.line).toBe("GET /?q=1&b=%41 HTTP/1.1");
    const h = head?.headers ?? {};
    // nginx.tmpl CUSTOM_ERRORS, in template order.
    expect(h["x-code"]).toBe("404");
    expect(h["x-format"]).toBe("application/json");
    expect(h["x-original-uri"]).toBe("/status/404?q=1&b=%41");
    expect(h["x-namespace"]).toBe("shop");
    expect(h["x-ingress-name"]).toBe("pages");
    expect(h["x-service-name"]).toBe("app");
    expect(h["x-service-port"]).toBe("80");
    expect(h["x-request-id"]).toBe("req-1");
    expect(h["x-forwarded-for"]).toBe("127.0.0.1");
    expect(h.host).toBe("pages.test");
    // The whole head: the client's own fields pass (proxy_pass_request_headers: Accept,
    // User-Agent, the Accept-Encoding the test client adds), the location sets no other
    // forwarding field, an unchecked client's X-Real-IP is never forwarded, no body framing.
    // Connection: keep-alive is Bun's fetch (nginx's named location sends HTTP/1.0, close).
    expect(h).toEqual({
      accept: "application/json", "accept-encoding": "gzip, deflate, br, zstd", host: "pages.test", "user-agent": "t",
      "x-code": "404", "x-format": "application/json", "x-forwarded-for": "127.0.0.1", "x-ingress-name": "pages", "x-namespace": "shop",
      "x-original-uri": "/status/404?q=1&b=%41", "x-request-id": "req-1", "x-service-name": "app", "x-service-port": "80", connection: "keep-alive",
    });
  });

  test("X-Format is not sent without Accept (nginx sends no field with an empty value)", async () => {
    const head = await pageRequest(() => fetch(`${portico.http}/status/500`, { headers: { host: "pages.test", accept: "" } }));
    expect(head?.headers["x-code"]).toBe("500");
    expect(head?.headers["x-format"]).toBeUndefined();
  });

  test("a POST keeps its method and its query, and sends no body", async () => {
    let status = 0;
    const head = await pageRequest(async () => {
      const r = await fetch(`${portico.http}/status/503?x`, { method: "POST", body: "payload", headers: { host: "pages.test" } });
      status = r.status;
      await r.text();
    });
    expect(status).toBe(503);
    expect(head?.line).toBe("POST /?x HTTP/1.1");
    expect(head?.headers["content-length"] ?? "0").toBe("0");
    expect(head?.headers["transfer-encoding"]).toBeUndefined();
  });

  test("unlisted statuses are the pod's, untouched", async () => {
    const before = pages.heads.length;
    for (const s of [200, 403, 502]) {
      const r = await get(portico.http, "pages.test", `/status/${s}`);
      expect(r.status).toBe(s);
      expect(r.body).toBe(`app ${s}`);
      expect(r.headers.get("x-app")).toBe("yes");
    }
    expect(pages.heads.length).toBe(before);
  });

  test("an error backend that cannot be reached: Portico's own 502, not the pod's answer (no second error page)", async () => {
    const r = await get(portico.http, "dead.test", "/status/404");
    expect(r.status).toBe(502);
    expect(r.body).toBe("bad gateway\n");
  });
});

describe("disable-proxy-intercept-errors", () => {
  test("no effect while --custom-http-errors is set: the location inherits the http level's proxy_intercept_errors on", async () => {
    // nginx.tmpl ~493 writes `proxy_intercept_errors on` in http{} for the flag's list; ~1399
    // writes it in the location only without the opt-out, and nothing turns it off. Without the
    // flag the pod's answer is relayed (test/proxy/error-pages.test.ts).
    let r!: Awaited<ReturnType<typeof get>>;
    const head = await pageRequest(async () => {
      r = await get(portico.http, "optout.test", "/status/404");
    });
    expect(r.status).toBe(404);
    expect(r.body).toBe("page 404 GET / HTTP/1.1");
    // The annotation's list, not the flag's, and its error backend: the flag's (no default-backend here).
    expect(head?.headers["x-ingress-name"]).toBe("optout");
  });

  test("Portico's own listed 503 (no endpoints) still goes to the error backend: --default-backend-service here", async () => {
    let r!: Awaited<ReturnType<typeof get>>;
    const head = await pageRequest(async () => {
      r = await get(portico.http, "optout.test", "/down/x");
    });
    expect(r.status).toBe(503);
    expect(r.body).toBe("page 503 GET / HTTP/1.1");
    expect(head?.headers["x-service-name"]).toBe("down");
    expect(head?.headers["x-ingress-name"]).toBe("optout");
    expect(head?.headers["x-original-uri"]).toBe("/down/x");
  });
});

describe("--custom-http-errors on Ingresses without the annotation", () => {
  test("a listed status goes to --default-backend-service; others are the pod's", async () => {
    let r!: Awaited<ReturnType<typeof get>>;
    const head = await pageRequest(async () => {
      r = await get(portico.http, "plain.test", "/status/404");
    });
    expect(r.status).toBe(404);
    expect(head?.headers["x-ingress-name"]).toBe("plain");
    const other = await get(portico.http, "plain.test", "/status/503");
    expect(other.body).toBe("app 503");
    // 503 is not in the flag's list: Portico's own 503 stays.
    const own = await get(portico.http, "plain.test", "/down");
    expect(own.status).toBe(503);
    expect(own.body).toBe("service unavailable\n");
  });
});

describe("default-backend while the Service has no endpoints", () => {
  test("ordinary proxying to it, path kept, with the fallback location's headers (e2e default_backend.go)", async () => {
    let r!: Awaited<ReturnType<typeof get>>;
    const head = await pageRequest(async () => {
      r = await get(portico.http, "fallback.test", "/alma/armud?z=1", { headers: { "x-request-id": "something-unique", accept: "text/html" } });
    });
    expect(r.status).toBe(200);
    expect(head?.line).toBe("GET /alma/armud?z=1 HTTP/1.1");
    const h = head?.headers ?? {};
    expect(h["x-code"]).toBe("503");
    expect(h["x-format"]).toBe("text/html");
    expect(h["x-namespace"]).toBe("shop");
    expect(h["x-ingress-name"]).toBe("fallback");
    expect(h["x-service-name"]).toBe("down");
    expect(h["x-service-port"]).toBe("80");
    expect(h["x-request-id"]).toBe("something-unique");
    // An ordinary proxied request otherwise: the usual forwarding fields, no X-Original-URI
    // (the fallback location does not set it).
    expect(h["x-forwarded-proto"]).toBe("http");
    expect(h["x-real-ip"]).toBe("127.0.0.1");
    expect(h["x-original-uri"]).toBeUndefined();
  });

  test("/debug/routes lists the fallback and the error pages", async () => {
    const t = (await (await fetch(`${portico.admin}/debug/routes`)).json()) as {
      hosts: { host: string; routes: { fallback?: string; errorPages?: { codes: number[]; intercept: boolean; backend: string | null } }[] }[];
    };
    const route = (host: string) => t.hosts.find((x) => x.host === host)?.routes[0];
    expect(route("fallback.test")?.fallback).toBe("shop/errors:0");
    expect(route("pages.test")?.errorPages).toEqual({ codes: [404, 500, 503], intercept: true, backend: "shop/errors:0" });
    expect(route("plain.test")?.errorPages).toEqual({ codes: [404], intercept: true, backend: "shop/errors:80" });
    // The opt-out: nginx.tmpl writes no proxy_intercept_errors in the location, but the flag's
    // list turns it on at the http level, which the location inherits.
    expect(route("optout.test")?.errorPages?.intercept).toBe(true);
  });
});
