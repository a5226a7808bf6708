// The listener checks of a table (src/table/listener-needs.ts) keep their answers per host
// entry: a long-lived Compiler hands the next table the same entry object for an unchanged
// host, so the answer must still follow the hosts that did change (docs/design.md, "Where
// Bun.serve falls short"). Tables come from the real Store and Compiler, as in production.
import { expect, test } from "bun:test";
import { Compiler } from "../../src/compile/compile.ts";
import { DEFAULT_COMPILE_CONFIG } from "../compile/config.ts";
import { parseObject, type Kind } from "../../src/model/kinds.ts";
import { Store } from "../../src/store/store.ts";
import { answersGrpc, needsNodeListener } from "../../src/table/listener-needs.ts";

const store = new Store();
function put(kind: Kind, object: Record<string, unknown>): void {
  const parsed = parseObject(kind, object);
  if (!parsed.ok) throw new Error(parsed.diagnostic.message);
  store.apply({ type: "MODIFIED", kind, object: parsed.object } as Parameters<Store["apply"]>[0]);
}

function ingress(i: number, protocol: string | null): Record<string, unknown> {
  return {
    apiVersion: "networking.k8s.io/v1",
    kind: "Ingress",
    metadata: { name: `app-${i}`, namespace: "default", ...(protocol ? { annotations: { "nginx.ingress.kubernetes.io/backend-protocol": protocol } } : {}) },
    spec: {
      ingressClassName: "portico",
      rules: [{ host: `app-${i}.example.test`, http: { paths: [{ path: "/", pathType: "Prefix", backend: { service: { name: `svc-${i}`, port: { number: 80 } } } }] } }],
    },
  };
}

test("the gRPC answer follows the one host that changed while the others' entries are reused", () => {
  put("IngressClass", { apiVersion: "networking.k8s.io/v1", kind: "IngressClass", metadata: { name: "portico" }, spec: { controller: DEFAULT_COMPILE_CONFIG.controllerName } });
  for (let i = 0; i < 20; i++) {
    put("Service", { apiVersion: "v1", kind: "Service", metadata: { name: `svc-${i}`, namespace: "default" }, spec: { ports: [{ port: 80 }] } });
    put("Ingress", ingress(i, null));
  }
  const compiler = new Compiler(DEFAULT_COMPILE_CONFIG);
  const first = compiler.compile(store.snapshot()).table;
  expect(first.exact.size).toBe(20);
  expect(answersGrpc(first)).toBe(false);
  expect(needsNodeListener(first)).toBe(false);

  put("Ingress", ingress(7, "GRPC"));
  const second = compiler.compile(store.snapshot()).table;
  // The unchanged hosts are the same entry objects (what the per-host answers rely on).
  expect(second.exact.get("app-3.example.test")).toBe(first.exact.get("app-3.example.test")!);
  expect(second.exact.get("app-7.example.test")).not.toBe(first.exact.get("app-7.example.test")!);
  expect(answersGrpc(second)).toBe(true);
  expect(needsNodeListener(second)).toBe(true);

  put("Ingress", ingress(7, null));
  const third = compiler.compile(store.snapshot()).table;
  expect(third.exact.get("app-3.example.test")).toBe(first.exact.get("app-3.example.test")!);
  expect(answersGrpc(third)).toBe(false);
  expect(needsNodeListener(third)).toBe(false);
  // The first table's answer is its own, asked again.
  expect(answersGrpc(first)).toBe(false);
  expect(answersGrpc(second)).toBe(true);
});
