// What serving/ assembles the request path from.
export { createProxyHandler } from "./handler.ts";
export { startHttpListener, serveOptions } from "./listener.ts";
export { createDrain } from "./drain.ts";
export { createBalancer } from "./balancer.ts";
