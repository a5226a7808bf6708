export { createProxyHandler, type ProxyHandler } from "./handler.ts";
export { startHttpListener, serveOptions, IDLE_TIMEOUT_S, BUN_MAX_BODY, type HttpListenerOptions } from "./listener.ts";
export { createDrain, type Drain, type DrainOptions } from "./drain.ts";
export { createBalancer, type Balancer } from "./balancer.ts";
export { ProxyError, errorResponse, statusOf, type ProxyErrorCode } from "./errors.ts";
export type { AccessRecord, ProxyHooks, ProxyDeps, LookupFn } from "./types.ts";
export type { WsData } from "./websocket.ts";
