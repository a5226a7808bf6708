// Test helper: hand-made routes for table tests (no compile step).
import { DEFAULT_ROUTE_OPTIONS } from "../../src/table/routes.ts";
import type { Backend, Route } from "../../src/table/types.ts";

const backend: Backend = {
  id: "default/svc:80",
  namespace: "default",
  service: "svc",
  port: "80",
  status: "ok",
  endpoints: [],
  allEndpoints: [],
  scheme: "http",
  serverName: "svc.default.svc",
  externalName: false,
};

export function mkRoute(host: string | null, path: string, pathType: "Exact" | "Prefix", name = "ing", index = 0): Route {
  return {
    ingress: { namespace: "default", name },
    host,
    path,
    pathType,
    declaredPathType: pathType,
    source: "rule",
    ruleIndex: 0,
    pathIndex: index,
    backend,
    options: DEFAULT_ROUTE_OPTIONS,
    tls: false,
  };
}
