export * from "./app.ts";
export * from "./exposition.ts";
export * from "./instruments.ts";
export * from "./metrics.ts";
export * from "./readiness.ts";
export * from "./registry.ts";
