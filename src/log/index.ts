export * from "./logger.ts";
export * from "./access.ts";
