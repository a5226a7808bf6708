// The floor under Portico's HTTPS cost per request (bench/paired-tls.ts --proxy / --baseline-proxy):
// bench/lib/bare-h2-proxy.ts's Bun.serve({ tls, http2: true }) `fetch` proxy plus only the work
// every proxied request owes to behave as ingress-nginx does, the fixed items of docs/design.md
// "Performance notes": the peer address (server.requestIP: X-Forwarded-For, X-Real-IP), an
// AbortController whose signal fetch gets (a client that leaves, the response deadline and the
// shutdown grace period abort the upstream request), a copied Headers with X-Forwarded-For,
// -Host, -Port, -Proto, -Scheme, X-Real-IP and X-Request-ID set (ingress-nginx's template sets
// each on every proxied request), and a new Response around a small body read whole (Bun keeps
// Content-Length only on a buffered body). No routing, validation, policies, metrics or log.
// `bun bench/lib/duties-proxy.ts --https-port N --http-port N --cert FILE --key FILE
// --upstream http://127.0.0.1:PORT`.
import { parseArgs } from "node:util";
import type { Server } from "bun";

const { values: f } = parseArgs({ options: { "https-port": { type: "string" }, "http-port": { type: "string" }, cert: { type: "string" }, key: { type: "string" }, upstream: { type: "string" } } });
const upstream = String(f.upstream);

// X-Request-ID: 16 random bytes as 32 hex digits, as ingress-nginx's $req_id; drawn from a pool
// refilled 4 KiB at a time, as Portico does, so the floor does not pay a syscall per request.
const pool = new Uint8Array(4096);
let used = pool.length;
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));
function requestId(): string {
  if (used + 16 > pool.length) {
    crypto.getRandomValues(pool);
    used = 0;
  }
  let s = "";
  for (let i = used; i < used + 16; i++) s += HEX[pool[i] as number];
  used += 16;
  return s;
}

// DUTIES_OMIT (a comma list of ip, signal, headers, response) leaves duties out, to price each
// one against the full set in separate runs; unset, all of them.
const omit = new Set((process.env.DUTIES_OMIT ?? "").split(",").filter((s) => s !== ""));
const IP = !omit.has("ip");
const SIGNAL = !omit.has("signal");
const HEADERS = !omit.has("headers");
const RESPONSE = !omit.has("response");
// DUTIES_EXTRA=reqsignal also reads the request's own signal (Portico watches it so that a client
// that leaves aborts the upstream request), to price Bun making it.
const REQ_SIGNAL = (process.env.DUTIES_EXTRA ?? "").split(",").includes("reqsignal");

// The small body as Portico's respond.ts takes it: read whole, and when it came with the head
// (Bun.peek sees the read fulfilled) wrapped at once, with no extra promise turn.
function small(up: Response): Response | Promise<Response> {
  const read = up.arrayBuffer();
  if (Bun.peek.status(read) === "fulfilled") return wrap(up, Bun.peek(read) as ArrayBuffer);
  return read.then((buf) => wrap(up, buf));
}
function wrap(up: Response, buf: ArrayBuffer): Response {
  return new Response(buf, { status: up.status, statusText: up.statusText, headers: up.headers });
}

function forwarder(proto: "https" | "http", port: string) {
  return (req: Request, server: Server<undefined>): Promise<Response> => {
    const url = req.url;
    const start = url.indexOf("//") + 2;
    const slash = url.indexOf("/", start);
    const path = url.slice(slash);
    const peer = IP ? (server.requestIP(req)?.address ?? "") : "127.0.0.1";
    const signal = SIGNAL ? new AbortController().signal : null;
    if (REQ_SIGNAL && req.signal.aborted) return Promise.resolve(new Response(null, { status: 499 }));
    let headers = req.headers;
    if (HEADERS) {
      headers = new Headers(req.headers);
      headers.set("x-forwarded-for", peer);
      headers.set("x-forwarded-host", req.headers.get("host") ?? url.slice(start, slash));
      headers.set("x-forwarded-port", port);
      headers.set("x-forwarded-proto", proto);
      headers.set("x-forwarded-scheme", proto);
      headers.set("x-real-ip", peer);
      headers.set("x-request-id", requestId());
    }
    const up = fetch(upstream + path, { method: req.method, headers, body: req.body, signal, redirect: "manual", decompress: false });
    return RESPONSE ? up.then(small) : up;
  };
}

const tls = { cert: await Bun.file(String(f.cert)).text(), key: await Bun.file(String(f.key)).text() };
Bun.serve({ hostname: "127.0.0.1", port: Number(f["https-port"]), tls, http2: true, development: false, fetch: forwarder("https", String(f["https-port"])) });
Bun.serve({ hostname: "127.0.0.1", port: Number(f["http-port"]), http2: true, development: false, fetch: forwarder("http", String(f["http-port"])) });
console.log("ready");
