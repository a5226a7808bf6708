// What serving/ assembles the request path from.
export { createBodyBudget } from "./pipeline/buffer.ts";
export { createProxyHandler } from "./pipeline/handler.ts";
export { startHttpListener, serveOptions } from "./pipeline/listener.ts";
export { createDrain } from "./pipeline/drain.ts";
export { createBalancer } from "./upstream/balancer.ts";
export { PASSWORD_CHECKS } from "../kinds/basic-auth.ts";
export type { Balancer } from "../kinds/types.ts";
export type { RequestServer } from "./types.ts";
