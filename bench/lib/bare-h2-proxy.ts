// The runtime's ceiling for Portico's design (bench/http2.ts): Bun.serve with its own HTTP/2
// (ALPN h2 beside HTTP/1.1 on TLS, h2c by prior knowledge on the plain port) forwarding every
// request with `fetch`, nothing else. `bun bench/lib/bare-h2-proxy.ts --https-port N
// --http-port N --cert FILE --key FILE --upstream http://127.0.0.1:PORT [--relay-stream]`.
// `--relay-stream`: the answer's body read in JavaScript and handed on in a default
// ReadableStream, chunk by chunk, as Portico's relay does, and nothing else (no count, no
// watchdog): what reading a body in JavaScript costs by itself (bench/results/relay-1mib.md).
import { parseArgs } from "node:util";

const { values: f } = parseArgs({
  options: { "https-port": { type: "string" }, "http-port": { type: "string" }, cert: { type: "string" }, key: { type: "string" }, upstream: { type: "string" }, "relay-stream": { type: "boolean", default: false } },
});
const upstream = String(f.upstream);
function relayed(up: Response): Response {
  if (up.body === null) return up;
  const reader = up.body.getReader();
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(c) {
        const r = await reader.read();
        if (r.done) c.close();
        else c.enqueue(r.value);
      },
      cancel: (e) => reader.cancel(e),
    },
    { highWaterMark: 0 },
  );
  return new Response(body, { status: up.status, headers: up.headers });
}
const forward = (req: Request) => {
  const path = req.url.slice(req.url.indexOf("/", req.url.indexOf("//") + 2));
  const up = fetch(upstream + path, { method: req.method, headers: req.headers, body: req.body, redirect: "manual", decompress: false });
  return f["relay-stream"] ? up.then(relayed) : up;
};
const tls = { cert: await Bun.file(String(f.cert)).text(), key: await Bun.file(String(f.key)).text() };
Bun.serve({ hostname: "127.0.0.1", port: Number(f["https-port"]), tls, http2: true, development: false, fetch: forward });
Bun.serve({ hostname: "127.0.0.1", port: Number(f["http-port"]), http2: true, development: false, fetch: forward });
console.log("ready");
