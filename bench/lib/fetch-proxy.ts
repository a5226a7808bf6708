// A minimal `fetch` proxy with Portico's benchmark flags (--manifests, --http-port, --admin-port,
// --bind): a baseline for what Portico adds over a bare `fetch` proxy, and a stand-in to test
// the harness (`bun bench/run.ts --portico-main bench/lib/fetch-proxy.ts`). Plain HTTP only;
// reads the JSON-document manifests bench/lib/cluster.ts writes; round-robin over the
// EndpointSlice.
import { parseArgs } from "node:util";

const { values: f } = parseArgs({ strict: false, options: { manifests: { type: "string" }, "http-port": { type: "string" }, "admin-port": { type: "string" }, bind: { type: "string" } } });
const docs = (await Bun.file(String(f.manifests)).text()).split(/^---$/m).map((d) => d.trim()).filter(Boolean).map((d) => JSON.parse(d) as Record<string, unknown>);
const slice = docs.find((d) => d.kind === "EndpointSlice") as { endpoints: { addresses: string[] }[]; ports: { port: number }[] };
const origins = slice.endpoints.map((e) => `http://${e.addresses[0]}:${slice.ports[0]?.port}`);
const HOP = ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te", "trailer"];
let next = 0;
const hostname = String(f.bind ?? "127.0.0.1");
Bun.serve({
  hostname,
  port: Number(f["http-port"]),
  async fetch(req, server) {
    const i = req.url.indexOf("/", req.url.indexOf("//") + 2);
    const origin = origins[next++ % origins.length] as string;
    const headers = new Headers(req.headers);
    for (const h of HOP) headers.delete(h);
    headers.set("x-forwarded-for", server.requestIP(req)?.address ?? "");
    const res = await fetch(origin + req.url.slice(i), { method: req.method, headers, body: req.body, redirect: "manual", decompress: false });
    const out = new Headers(res.headers);
    for (const h of HOP) out.delete(h);
    return new Response(res.body, { status: res.status, headers: out });
  },
});
Bun.serve({ hostname, port: Number(f["admin-port"]), fetch: () => new Response("ok") });
