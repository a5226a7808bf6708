export * from "./types.ts";
export { allRoutes, DEFAULT_ROUTE_OPTIONS, hostCount } from "./routes.ts";
export { buildTable, comparePrecedence } from "./build.ts";
export { lookup, matchPath, selectHost } from "./lookup.ts";
export { TableHolder } from "./holder.ts";
export { serializeTable, type SerializedRoute, type SerializedTable } from "./serialize.ts";
export { pathSegments } from "./segments.ts";
