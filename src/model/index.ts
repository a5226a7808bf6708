export * from "./schemas.ts";
export * from "./kinds.ts";
export * from "./diagnostic.ts";
