export { createProxyHandler, type ProxyHandler } from "./handler.ts";
export { startHttpListener, serveOptions, type HttpListenerOptions } from "./listener.ts";
export { createDrain, type Drain, type DrainOptions } from "./drain.ts";
export { createBalancer, type Balancer } from "./balancer.ts";
export { ProxyError, type ProxyErrorCode } from "./errors.ts";
export type { AccessRecord, ProxyHooks, ProxyDeps, Logger, LookupFn } from "./types.ts";
