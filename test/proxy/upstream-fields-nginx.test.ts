// The pod's response fields nginx does not pass to the client, side by side: nginx's proxy module
// hides Date, Server, X-Pad and five X-Accel-* fields unless proxy_pass_header names them
// (ngx_http_proxy_module.c ngx_http_proxy_hide_headers; the proxy_hide_header documentation) and
// sends its own Date. ingress-nginx names none of them but Server (nginx.tmpl: `proxy_pass_header
// Server` only with allow-backend-server-header) and, with server-tokens false (config.go
// NewDefault), clears nginx's own Server (`more_clear_headers Server`); with server-tokens true
// nginx names itself (`server_tokens on`). Under --ingress-nginx-compat Portico passes on what
// nginx passes and lets its listener write the Date; --server-header (server-tokens) decides the
// Server field: none, or portico/<version> (never a claim to be nginx). Raw sockets, loopback
// only; the nginx half is skipped where nginx is not installed.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { VERSION } from "../../src/version.ts";
import { makeBackend, makeTable, RAW_LISTENERS, startProxy, startProxyOver, startRawProxy, answersAt, NGINX_BIN, startNginx, type RealNginx } from "./helpers.ts";
import { firstResponse, rawBackend, type RawBackend } from "./raw.ts";


const POD_DATE = "Mon, 01 Jan 2001 00:00:00 GMT";
// Every field of the pod's answer but its framing. X-Accel-Redirect is left to the Portico half:
// nginx acts on it (an internal redirect to its URI) rather than passing it.
const POD_FIELDS: ReadonlyArray<readonly [string, string]> = [
  ["Date", POD_DATE],
  ["Server", "gunicorn/21.2.0"],
  ["X-Pad", "avoid browser bug"],
  ["X-Accel-Expires", "10"],
  ["X-Accel-Limit-Rate", "1000000"],
  ["X-Accel-Buffering", "no"],
  ["X-Accel-Charset", "utf-8"],
  ["X-Accel-Other", "kept"],
  ["X-App", "1"],
  ["Content-Type", "text/plain"],
];
const POD_ANSWER = `HTTP/1.1 200 OK\r\n${POD_FIELDS.map(([k, v]) => `${k}: ${v}\r\n`).join("")}Content-Length: 2\r\nConnection: close\r\n\r\nok`;
const REQUEST = "GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n";

/** The response's field lines as [lower-case name, value], in order. */
function fieldsOf(raw: string): Array<[string, string]> {
  const head = raw.slice(0, raw.indexOf("\r\n\r\n"));
  return head.split("\r\n").slice(1).map((l) => {
    const i = l.indexOf(":");
    return [l.slice(0, i).toLowerCase(), l.slice(i + 1).trim()];
  });
}

/** The pod's fields that reached the client with the pod's value, lower-case, sorted. */
function passedOn(raw: string): string[] {
  const got = fieldsOf(raw);
  return POD_FIELDS.filter(([k, v]) => got.some(([n, x]) => n === k.toLowerCase() && x === v)).map(([k]) => k.toLowerCase()).sort();
}

const values = (raw: string, name: string) => fieldsOf(raw).filter(([n]) => n === name).map(([, v]) => v);

// What nginx passes of POD_FIELDS (checked against a real nginx below).
const NGINX_PASSES = ["content-type", "x-accel-other", "x-app"];

let pod: RawBackend;
beforeAll(async () => {
  pod = await rawBackend(() => POD_ANSWER);
});
afterAll(async () => {
  await pod?.stop();
});

describe.skipIf(NGINX_BIN === null)("a real nginx proxying the same answer (proxy_pass, server_tokens off)", () => {
  let nginx: RealNginx;
  let port: number;
  beforeAll(async () => {
    nginx = await startNginx({
      prefix: "portico-nginx-fields-",
      http: (port) => `access_log off;
        server { listen 127.0.0.1:${port}; location / { proxy_pass http://127.0.0.1:${pod.port}; } }`,
      ready: answersAt("/"),
    });
    port = nginx.port;
  });
  afterAll(() => nginx?.stop());

  test("Date, Server, X-Pad and the five X-Accel-* fields stay behind; one Date, nginx's own", async () => {
    const got = await firstResponse({ port }, REQUEST);
    expect(got.startsWith("HTTP/1.1 200 ")).toBe(true);
    expect(passedOn(got)).toEqual(NGINX_PASSES);
    const dates = values(got, "date");
    expect(dates.length).toBe(1);
    expect(dates[0]).not.toBe(POD_DATE);
    // Stock nginx's own Server (server_tokens off: no version); ingress-nginx's headers-more
    // `more_clear_headers Server` removes even this one.
    expect(values(got, "server")).toEqual(["nginx"]);
  });
});

describe("Portico", () => {
  for (const kind of RAW_LISTENERS) {
    test(`--ingress-nginx-compat (${kind}): the pod's fields nginx passes, and no others; one Date, the listener's; no Server`, async () => {
      const p = startRawProxy(kind, makeTable([{ host: "a.test", backend: makeBackend([pod.port]) }]), { ingressNginxCompat: true });
      try {
        const got = await firstResponse(p, REQUEST);
        expect(got.startsWith("HTTP/1.1 200 ")).toBe(true);
        expect(passedOn(got)).toEqual(NGINX_PASSES);
        const dates = values(got, "date");
        expect(dates.length).toBe(1);
        expect(dates[0]).not.toBe(POD_DATE);
        expect(new Date(dates[0]!).getTime()).toBeGreaterThan(Date.parse(POD_DATE));
        expect(values(got, "server")).toEqual([]);
      } finally {
        await p.stop();
      }
    });
  }

  test("--ingress-nginx-compat over HTTP/2: the same fields", async () => {
    const p = await startProxyOver("h2", makeTable([{ host: "a.test", backend: makeBackend([pod.port]) }]), { ingressNginxCompat: true });
    try {
      const res = await p.request("/", { headers: { host: "a.test" } });
      expect(res.status).toBe(200);
      const passed = POD_FIELDS.filter(([k, v]) => res.headers.get(k) === v).map(([k]) => k.toLowerCase()).sort();
      expect(passed).toEqual(NGINX_PASSES);
      expect(res.headers.get("date")).not.toBeNull();
      expect(res.headers.get("server")).toBeNull();
    } finally {
      await p.stop();
    }
  });

  test("--ingress-nginx-compat: X-Accel-Redirect does not reach the client (nginx follows it; Portico serves the pod's answer)", async () => {
    const redirecting = await rawBackend(() => "HTTP/1.1 200 OK\r\nX-Accel-Redirect: /internal/file\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
    const p = startProxy(makeTable([{ host: "a.test", backend: makeBackend([redirecting.port]) }]), { ingressNginxCompat: true });
    try {
      const got = await firstResponse(p, REQUEST);
      expect(got.startsWith("HTTP/1.1 200 ")).toBe(true);
      expect(values(got, "x-accel-redirect")).toEqual([]);
      expect(got.endsWith("\r\n\r\nok")).toBe(true);
      expect(redirecting.hits.length).toBe(1);
    } finally {
      await p.stop();
      await redirecting.stop();
    }
  });

  test("without --ingress-nginx-compat every field of the pod's answer is passed on (Portico's default)", async () => {
    const p = startProxy(makeTable([{ host: "a.test", backend: makeBackend([pod.port]) }]));
    try {
      const got = await firstResponse(p, REQUEST);
      expect(passedOn(got)).toEqual(POD_FIELDS.map(([k]) => k.toLowerCase()).sort());
      expect(values(got, "date")).toEqual([POD_DATE]);
    } finally {
      await p.stop();
    }
  });

  test("--server-header=portico (server-tokens true): portico/<version> on proxied answers and Portico's own, the pod's replaced", async () => {
    const p = startProxy(makeTable([{ host: "a.test", backend: makeBackend([pod.port]) }]), { ingressNginxCompat: true, serverHeader: "portico" });
    try {
      const proxied = await firstResponse(p, REQUEST);
      const own = await firstResponse(p, "GET / HTTP/1.1\r\nHost: nowhere.test\r\nConnection: close\r\n\r\n");
      expect([proxied.slice(0, 12), own.slice(0, 12)]).toEqual(["HTTP/1.1 200", "HTTP/1.1 404"]);
      expect([values(proxied, "server"), values(own, "server")]).toEqual([[`portico/${VERSION}`], [`portico/${VERSION}`]]);
    } finally {
      await p.stop();
    }
  });

  test("--server-header=none without compat: no Server field, the other fields passed on", async () => {
    const p = startProxy(makeTable([{ host: "a.test", backend: makeBackend([pod.port]) }]), { serverHeader: "none" });
    try {
      const got = await firstResponse(p, REQUEST);
      expect(values(got, "server")).toEqual([]);
      expect(values(got, "x-pad")).toEqual(["avoid browser bug"]);
    } finally {
      await p.stop();
    }
  });
});
