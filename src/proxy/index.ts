// What serving/ assembles the request path from.
export { createBodyBudget } from "./buffer.ts";
export { createProxyHandler } from "./handler.ts";
export { startHttpListener, serveOptions } from "./listener.ts";
export { createDrain } from "./drain.ts";
export { createBalancer } from "./balancer.ts";
export { PASSWORD_CHECKS } from "./basic-auth.ts";
export type { Balancer } from "./balancer.ts";
export type { RequestServer } from "./types.ts";
