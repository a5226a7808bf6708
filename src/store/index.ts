export * from "./types.ts";
export * from "./store.ts";
export * from "./coalescer.ts";
export { deepEqual, isTlsSecret, relevantEqual, SERVICE_NAME_LABEL } from "./relevance.ts";
