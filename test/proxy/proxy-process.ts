// A proxy in its own process, so a test can read the proxy's RSS alone (/proc/<pid>/status) or
// count what its own `fetch` does upstream (Bun's keep-alive pool is per process).
// Env: PORTICO_TEST_BACKEND_PORT; PORTICO_TEST_SLOW_PORT (optional: `/slow` goes there);
// PORTICO_TEST_GATE_HOLDS=1: the upstream pool gate holds requests past its cap as in a busy
// process, whatever the machine's load (src/proxy/upstream/pool-gate.ts), for at most
// PORTICO_TEST_GATE_WAIT_MS (default its MAX_WAIT_MS).
// PORTICO_TEST_COMPAT=1: --ingress-nginx-compat; PORTICO_TEST_HEADER_BUFFERS: the
// --large-client-header-buffers value (`4 16k`). PORTICO_TEST_COMPRESS=1: --gzip and --brotli.
// The plain port serves HTTP/1.1 and h2c, as serveTraffic binds it. Prints "PORT <n>" when
// listening; exits on SIGTERM.
import { createProxyHandler } from "../../src/proxy/pipeline/handler.ts";
import { startHttpListener } from "../../src/proxy/pipeline/listener.ts";
import { MAX_WAIT_MS, POOL_SLOTS, PoolGate, setUpstreamGate } from "../../src/proxy/upstream/pool-gate.ts";
import { lookup } from "../../src/table/lookup.ts";
import { makeBackend, makeTable, quietLog, testConfig, type RouteSpec } from "./helpers.ts";
import { parseHeaderBuffers } from "../../src/config/header-buffers.ts";

if (process.env.PORTICO_TEST_GATE_HOLDS === "1") {
  const waitMs = Number(process.env.PORTICO_TEST_GATE_WAIT_MS ?? MAX_WAIT_MS);
  setUpstreamGate(new PoolGate(POOL_SLOTS, waitMs, () => true));
}
const port = Number(process.env.PORTICO_TEST_BACKEND_PORT);
const routes: RouteSpec[] = [{ host: null, backend: makeBackend([port]) }];
const slow = process.env.PORTICO_TEST_SLOW_PORT;
if (slow !== undefined) routes.push({ host: null, path: "/slow", backend: makeBackend([Number(slow)]) });
const table = makeTable(routes);
const buffers = parseHeaderBuffers(process.env.PORTICO_TEST_HEADER_BUFFERS ?? "4 8k");
if (buffers === null) throw new Error("PORTICO_TEST_HEADER_BUFFERS: not a large-client-header-buffers value");
const compress = process.env.PORTICO_TEST_COMPRESS === "1";
const config = testConfig({ ingressNginxCompat: process.env.PORTICO_TEST_COMPAT === "1", largeClientHeaderBuffers: buffers, gzip: compress, brotli: compress });
const handler = createProxyHandler({ config, table: () => table, lookup, log: quietLog, scheme: "http" });
const server = startHttpListener({ hostname: "127.0.0.1", port: 0, handler, http2: true });
process.on("SIGTERM", () => {
  void server.stop(true).then(() => process.exit(0));
});
console.log(`PORT ${server.port}`);
