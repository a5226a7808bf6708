// A proxy in its own process, so a test can read the proxy's RSS alone (/proc/<pid>/status).
// Env: PORTICO_TEST_BACKEND_PORT. Prints "PORT <n>" when listening; exits on SIGTERM.
import { createProxyHandler } from "../../src/proxy/pipeline/handler.ts";
import { startHttpListener } from "../../src/proxy/pipeline/listener.ts";
import { lookup } from "../../src/table/lookup.ts";
import { makeBackend, makeTable, quietLog, testConfig } from "./helpers.ts";

const port = Number(process.env.PORTICO_TEST_BACKEND_PORT);
const table = makeTable([{ host: null, backend: makeBackend([port]) }]);
const handler = createProxyHandler({ config: testConfig(), table: () => table, lookup, log: quietLog, scheme: "http" });
const server = startHttpListener({ hostname: "127.0.0.1", port: 0, handler });
process.on("SIGTERM", () => {
  void server.stop(true).then(() => process.exit(0));
});
console.log(`PORT ${server.port}`);
