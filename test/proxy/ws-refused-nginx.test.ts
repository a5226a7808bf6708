// A WebSocket handshake the pod answers with other than 101 (docs/design.md, "WebSocket
// handshakes the pod refuses"). ingress-nginx's location sends the handshake on as an ordinary
// proxied GET (nginx.tmpl: `proxy_set_header Upgrade $http_upgrade; proxy_set_header Connection
// $connection_upgrade;`), and ngx_http_proxy_module switches to tunnelling only on a 101
// (ngx_http_proxy_process_status / ngx_http_upstream_upgrade); any other status is relayed as
// the pod wrote it: status, fields, body. Side by side with a real nginx where one is installed,
// with a raw pod that logs the handshake it receives; a real WebSocket client sees the status.
// Loopback only.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { makeBackend, makeTable, NGINX_BIN, RAW_LISTENERS, startNginx, startRawProxy, answersAt, type RawProxy, type RealNginx } from "./helpers.ts";
import { chunkedData, headFields, rawBackend, rawClient, statuses, wsUpgrade, type RawBackend } from "./raw.ts";
import { eventually } from "../wait.ts";
import { buildTable } from "../../src/table/build.ts";
import { makeRoute } from "./helpers.ts";
import { compileLogTemplate } from "../../src/log/template.ts";
import { INGRESS_NGINX_LOG_FORMAT } from "../../src/policy/log-format.ts";

/** The pod's answers to a handshake, by path. */
const REFUSALS: Readonly<Record<string, string>> = {
  "/401": "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer realm=\"chat\", error=\"invalid_token\"\r\nContent-Type: application/json\r\nContent-Length: 25\r\n\r\n{\"error\":\"token expired\"}",
  "/403": "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nX-Reason: origin\r\nContent-Length: 17\r\n\r\norigin not served",
  "/404": "HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nContent-Length: 22\r\n\r\n<p>no such channel</p>",
  "/500": "HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\nContent-Length: 4\r\n\r\noops",
  // A body past what is read whole before answering (respond.ts): streamed, with backpressure.
  "/large": `HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: ${256 * 1024}\r\n\r\n${"0123456789abcdef".repeat(16 * 1024)}`,
  // A body of unknown length at first: chunked, relayed whole.
  "/chunked": "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
};

function pod(): Promise<RawBackend> {
  return rawBackend((req) => {
    const path = req.line.split(" ")[1] ?? "";
    return REFUSALS[path] ?? "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
  });
}

/** What a client reads: status, the end-to-end fields the pod set, the body (chunked decoded). */
interface Answer {
  readonly status: number;
  readonly fields: Record<string, string[]>;
  readonly body: string;
}

const POD_FIELDS = ["www-authenticate", "content-type", "x-reason"];

/** Whether `raw` holds one whole answer (Content-Length or chunked body read to its end). */
function whole(raw: string): boolean {
  const end = raw.indexOf("\r\n\r\n");
  if (end < 0) return false;
  const head = raw.slice(0, end);
  if (/\r\ntransfer-encoding: *chunked/i.test(head)) return raw.endsWith("0\r\n\r\n");
  const cl = /\r\ncontent-length: *(\d+)/i.exec(head);
  return raw.length >= end + 4 + Number(cl?.[1] ?? 0);
}

/** The handshake's answer (wsUpgrade: a browser's handshake), read to the end of its body. */
async function answer(target: { port: number; tls?: boolean }, path: string): Promise<Answer> {
  const c = await rawClient(target.port, target);
  let raw: string;
  try {
    c.write(wsUpgrade(path));
    await eventually(() => whole(c.data()) || c.closed(), 10_000, `the answer to ${path}`);
    raw = c.data();
  } finally {
    c.destroy();
  }
  const end = raw.indexOf("\r\n\r\n");
  const head = raw.slice(0, end);
  const all = headFields(head);
  const fields: Record<string, string[]> = {};
  for (const k of POD_FIELDS) if (all[k] !== undefined) fields[k] = all[k]!;
  const rest = raw.slice(end + 4);
  return { status: statuses(head)[0] ?? 0, fields, body: /\r\ntransfer-encoding: *chunked/i.test(head) ? chunkedData(rest) : rest };
}

/** What the pod wrote, as the client should read it. */
function expected(path: string): Answer {
  const raw = REFUSALS[path]!;
  const end = raw.indexOf("\r\n\r\n");
  const all = headFields(raw.slice(0, end));
  const fields: Record<string, string[]> = {};
  for (const k of POD_FIELDS) if (all[k] !== undefined) fields[k] = all[k]!;
  const rest = raw.slice(end + 4);
  return { status: statuses(raw)[0]!, fields, body: path === "/chunked" ? chunkedData(rest) : rest };
}

describe.each(RAW_LISTENERS)("%s: the pod's answer to a handshake it refuses reaches the client", (kind) => {
  let be: RawBackend;
  let p: RawProxy;
  beforeAll(async () => {
    be = await pod();
    p = startRawProxy(kind, makeTable([{ host: null, path: "/", backend: makeBackend([be.port]) }]));
  });
  afterAll(async () => {
    await p?.stop();
    await be?.stop();
  });

  test.each(Object.keys(REFUSALS))("%s: status, fields and body as the pod wrote them; recorded once", async (path) => {
    const before = be.hits.length;
    expect(await answer(p, path)).toEqual(expected(path));
    // The pod received the handshake once, as a WebSocket handshake.
    expect(be.hits.length).toBe(before + 1);
    const sent = headFields(be.hits.at(-1)!.head);
    expect([sent.upgrade, sent["sec-websocket-version"]]).toEqual([["websocket"], ["13"]]);
    const status = expected(path).status;
    expect(p.records.at(-1)).toMatchObject({ status, upstreamStatus: status, websocket: true, upstream: `127.0.0.1:${be.port}` });
  });
});

test("a WebSocket client sees the pod's status, not 502", async () => {
  const be = await pod();
  const p = startRawProxy("bun-http", makeTable([{ host: null, path: "/", backend: makeBackend([be.port]) }]));
  try {
    for (const code of [401, 403, 404, 500]) {
      const ws = new WebSocket(`ws://127.0.0.1:${p.port}/${code}`);
      // Bun's client names the status of a refused handshake in its error event (measured on 1.4.5).
      const message = await new Promise<string>((resolve) => {
        ws.onerror = (e) => resolve((e as ErrorEvent).message);
        ws.onopen = () => resolve("opened");
      });
      expect(message).toContain(`Expected 101 status code: ${code}`);
    }
  } finally {
    await p.stop();
    await be.stop();
  }
});

// nginx tries another endpoint only on an error or a timeout (proxy_next_upstream error
// timeout, ingress-nginx's default), never on an answer: one pod sees the handshake, once, and
// neither is backed off.
test("a refusal is an answer: one pod sees it, once, and the next handshake is not steered away from it", async () => {
  const pods = [await pod(), await pod()];
  const p = startRawProxy("bun-http", makeTable([{ host: null, path: "/", backend: makeBackend(pods.map((b) => b.port)) }]));
  try {
    expect((await answer(p, "/401")).status).toBe(401);
    expect(pods.map((b) => b.hits.length).sort()).toEqual([0, 1]);
    expect((await answer(p, "/403")).status).toBe(403);
    // Round robin goes on to the other pod: the first was not marked failed.
    expect(pods.map((b) => b.hits.length)).toEqual([1, 1]);
  } finally {
    await p.stop();
    for (const b of pods) await b.stop();
  }
});

// custom-http-errors: proxy_intercept_errors acts on the pod's answer whatever the request, so
// a listed status from a refused handshake gets the error backend's page (nginx.tmpl's
// error_page for each listed code, X-Code carrying the status).
test("custom-http-errors replaces a refused handshake's listed status as any proxied answer's", async () => {
  const be = await pod();
  const errors = await rawBackend(() => "HTTP/1.1 403 Forbidden\r\nContent-Type: text/html\r\nContent-Length: 11\r\n\r\ncustom page");
  const p = startRawProxy("bun-http", buildTable([{
    ...makeRoute({ backend: makeBackend([be.port]) }),
    errorPages: { codes: [403], intercept: true, backend: makeBackend([errors.port], { id: "default/errors:0", service: "errors" }) },
  }], null));
  try {
    const got = await answer(p, "/403");
    expect([got.status, got.body]).toEqual([403, "custom page"]);
    expect(headFields(errors.hits.at(-1)!.head)["x-code"]).toEqual(["403"]);
  } finally {
    await p.stop();
    await be.stop();
    await errors.stop();
  }
});

// The access line of a refused handshake whose answer an error page takes: nginx keeps a state
// for the pod that answered and one for the error backend, and ngx_http_upstream.c's
// ngx_http_upstream_addr_variable / _status_variable / _response_time_variable write one value
// per state, " : " where the error_page's internal redirect starts a new group. The pod's 403
// is intercepted (nothing of its body read: length 0); the error backend answers 404.
test("a refused handshake taken by an error page logs the pod, then the error backend (ingress-nginx's line)", async () => {
  const be = await pod();
  const errors = await rawBackend(() => "HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nContent-Length: 11\r\n\r\ncustom page");
  const p = startRawProxy("bun-http", buildTable([{
    ...makeRoute({ backend: makeBackend([be.port]) }),
    errorPages: { codes: [403], intercept: true, backend: makeBackend([errors.port], { id: "default/errors:0", service: "errors" }) },
  }], null), { accessLogTemplate: INGRESS_NGINX_LOG_FORMAT, accessLog: "stdout" });
  try {
    const got = await answer(p, "/403");
    expect([got.status, got.body]).toEqual([404, "custom page"]);
    await eventually(() => p.records.length === 1, 10_000, "the access record");
    const rec = p.records[0]!;
    const line = compileLogTemplate(INGRESS_NGINX_LOG_FORMAT, "default")(rec);
    // The line's tail: $upstream_addr $upstream_response_length $upstream_response_time
    // $upstream_status $req_id.
    const tail = line.slice(line.lastIndexOf("] ") + 2).split(" ");
    const t = /^\d+\.\d{3}$/;
    expect(tail.length).toBe(13);
    expect([tail[0], tail[1], tail[2], tail[3], tail[4], tail[5], tail[7], tail[9], tail[10], tail[11], tail[12]]).toEqual([
      `127.0.0.1:${be.port}`, ":", `127.0.0.1:${errors.port}`, "0", ":", "11", ":", "403", ":", "404", rec.requestId,
    ]);
    expect([t.test(tail[6]!), t.test(tail[8]!)]).toEqual([true, true]);
  } finally {
    await p.stop();
    await be.stop();
    await errors.stop();
  }
});

describe.skipIf(NGINX_BIN === null)("side by side with nginx (ingress-nginx's location)", () => {
  let nginxPod: RawBackend;
  let porticoPod: RawBackend;
  let nginx: RealNginx;
  let p: RawProxy;
  beforeAll(async () => {
    nginxPod = await pod();
    porticoPod = await pod();
    nginx = await startNginx({
      prefix: "portico-nginx-wsrefused-",
      http: (port) => `access_log off;
        map $http_upgrade $connection_upgrade { default upgrade; '' ''; }
        upstream upstream_balancer { server 127.0.0.1:${nginxPod.port}; keepalive 320; }
        server {
          listen 127.0.0.1:${port} default_server;
          location / {
            proxy_set_header Host $http_host;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection $connection_upgrade;
            proxy_buffering off;
            proxy_http_version 1.1;
            proxy_next_upstream error timeout;
            proxy_pass http://upstream_balancer;
          }
        }`,
      ready: answersAt("/ready"),
    });
    p = startRawProxy("bun-http", makeTable([{ host: null, path: "/", backend: makeBackend([porticoPod.port]) }]));
  });
  afterAll(async () => {
    await p?.stop();
    await nginx?.stop();
    await nginxPod?.stop();
    await porticoPod?.stop();
  });

  test.each(Object.keys(REFUSALS))("%s: the same answer from both", async (path) => {
    const fromNginx = await answer(nginx, path);
    expect(fromNginx).toEqual(expected(path));
    expect(await answer(p, path)).toEqual(fromNginx);
  });
});

// RFC 6455 §4.1: the offered subprotocols are distinct tokens. `ws`'s client refuses any other
// offer before connecting; that is the client's malformed handshake, so no pod is contacted or
// marked failed (nginx would pass it on and let the pod refuse it; docs/design.md, "WebSocket
// handshakes the pod refuses").
// The refusal is an upstream answer like any other: $upstream_response_length is the pod's body
// as read (nginx's u->state->response_length, ngx_http_upstream_response_length_variable), and
// with gzip on (ngx_http_gzip_filter_module compresses a 403 as a 200) $body_bytes_sent is what
// the client was sent, the compressed bytes: the two differ.
test("a refused handshake compressed by gzip logs the pod's body length as $upstream_response_length", async () => {
  const be = await pod();
  const p = startRawProxy("bun-http", makeTable([{ host: null, path: "/", backend: makeBackend([be.port]) }]), {
    gzip: true, accessLogTemplate: "$upstream_addr|$upstream_status|$upstream_response_length|$body_bytes_sent", accessLog: "stdout",
  });
  try {
    const c = await rawClient(p.port, {});
    let raw: string;
    try {
      c.write(wsUpgrade("/large").replace("\r\n\r\n", "\r\nAccept-Encoding: gzip\r\n\r\n"));
      await eventually(() => whole(c.data()) || c.closed(), 10_000, "the answer to /large");
      raw = c.data();
    } finally {
      c.destroy();
    }
    const head = raw.slice(0, raw.indexOf("\r\n\r\n")).toLowerCase();
    expect(statuses(raw)[0]).toBe(403);
    expect(head).toContain("content-encoding: gzip");
    await eventually(() => p.records.length === 1, 10_000, "the access record");
    const rec = p.records[0]!;
    expect(rec.bytesOut).toBeGreaterThan(0);
    expect(rec.bytesOut).toBeLessThan(256 * 1024);
    expect(compileLogTemplate("$upstream_addr|$upstream_status|$upstream_response_length|$body_bytes_sent", "default")(rec)).toBe(
      `127.0.0.1:${be.port}|403|${256 * 1024}|${rec.bytesOut}`,
    );
  } finally {
    await p.stop();
    await be.stop();
  }
});

test("an offer of subprotocols that are not distinct tokens is the client's 400; no pod is contacted", async () => {
  const pods = [await pod(), await pod()];
  const p = startRawProxy("bun-http", makeTable([{ host: null, path: "/", backend: makeBackend(pods.map((b) => b.port)) }]));
  try {
    for (const offer of ["chat v1", "chat, chat"]) {
      const c = await rawClient(p.port);
      try {
        c.write(wsUpgrade("/401").replace("\r\n\r\n", `\r\nSec-WebSocket-Protocol: ${offer}\r\n\r\n`));
        await eventually(() => statuses(c.data()).length > 0 || c.closed(), 10_000, "an answer");
        expect(statuses(c.data())).toEqual([400]);
      } finally {
        c.destroy();
      }
    }
    expect(pods.map((b) => b.hits.length)).toEqual([0, 0]);
    // Both pods still take handshakes: neither was marked failed.
    expect((await answer(p, "/401")).status).toBe(401);
    expect((await answer(p, "/401")).status).toBe(401);
    expect(pods.map((b) => b.hits.length)).toEqual([1, 1]);
  } finally {
    await p.stop();
    for (const b of pods) await b.stop();
  }
});

// The same malformed offer with --access-log-template: no pod was contacted, so no upstream
// state exists and nginx's $upstream_addr and $upstream_status are not found, written `-`
// (ngx_http_upstream_addr_variable / _status_variable: r->upstream_states empty), although the
// handshake had already chosen an endpoint when `ws` refused the offer.
test("an offer of subprotocols that are not distinct tokens logs $upstream_addr and $upstream_status as -", async () => {
  const be = await pod();
  const format = "$status|$upstream_addr|$upstream_status|$upstream_response_time";
  const p = startRawProxy("bun-http", makeTable([{ host: null, path: "/", backend: makeBackend([be.port]) }]), { accessLogTemplate: format, accessLog: "stdout" });
  try {
    const c = await rawClient(p.port);
    try {
      c.write(wsUpgrade("/401").replace("\r\n\r\n", "\r\nSec-WebSocket-Protocol: chat, chat\r\n\r\n"));
      await eventually(() => statuses(c.data()).length > 0 || c.closed(), 10_000, "an answer");
      expect(statuses(c.data())).toEqual([400]);
    } finally {
      c.destroy();
    }
    await eventually(() => p.records.length === 1, 10_000, "the access record");
    expect(be.hits.length).toBe(0);
    expect(compileLogTemplate(format, "default")(p.records[0]!)).toBe("400|-|-|-");
  } finally {
    await p.stop();
    await be.stop();
  }
});

// A refusal whose body the pod cuts short gets what a plain GET's answer cut short the same way
// gets (respond.ts: a small declared body is read whole before the status goes out, so 502),
// and the process serves on.
test("a refusal body cut short is answered as a plain GET's; the next handshake is served", async () => {
  const be = await rawBackend((req, conn) => {
    if (req.line.includes("/cut")) {
      conn.socket.end(Buffer.from("HTTP/1.1 403 Forbidden\r\nContent-Length: 100\r\n\r\nonly ten b", "latin1"));
      return null;
    }
    return REFUSALS["/401"]!;
  });
  const p = startRawProxy("bun-http", makeTable([{ host: null, path: "/", backend: makeBackend([be.port]) }]));
  const first = async (bytes: string) => {
    const c = await rawClient(p.port);
    try {
      c.write(bytes);
      await eventually(() => whole(c.data()) || c.closed(), 10_000, "an answer");
      return statuses(c.data());
    } finally {
      c.destroy();
    }
  };
  try {
    const plain = await first("GET /cut HTTP/1.1\r\nHost: a.test\r\n\r\n");
    expect(plain).toEqual([502]);
    expect(await first(wsUpgrade("/cut"))).toEqual(plain);
    expect(p.records.at(-1)).toMatchObject({ status: 502, websocket: true });
    expect(await answer(p, "/401")).toEqual(expected("/401"));
  } finally {
    await p.stop();
    await be.stop();
  }
});
