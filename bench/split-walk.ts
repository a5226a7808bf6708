// What the SNI split's questions cost each new route table (table/listener-needs.ts; docs/design.md
// "HTTP/2 and gRPC"), at 10,000 Ingresses beside 10,000 HTTPRoutes on a Gateway with an HTTP and
// an HTTPS listener, and a few GRPCRoutes on that Gateway: in-process, one long-lived Compiler fed
// by a real Store, as runtime/controller.ts runs it. For each kind of change, the time serve.ts
// and tls-split.ts spend on the new table (needsNodeListener, everyHostNeedsNode, then
// hostsMovedToNode against the previous table), median over the rounds; the compile itself is
// not counted. `bun bench/split-walk.ts [--size N] [--grpc G] [--rounds R]`
import { parseArgs } from "node:util";
import { Compiler } from "../src/compile/compile.ts";
import { isKind, parseObject, type Kind } from "../src/model/kinds.ts";
import { Store } from "../src/store/store.ts";
import { everyHostNeedsNode, hostNeedsNode, hostsMovedToNode, needsNodeListener } from "../src/table/listener-needs.ts";
import type { RouteTable } from "../src/table/types.ts";
import { DEFAULT_COMPILE_CONFIG } from "../test/compile/config.ts";
import { createCertificate } from "../test/tls/pki.ts";
import { gatewayBase, tlsSecret, type Obj } from "./lib/cluster.ts";
import { generate, httpRouteOf, ingressOf, nsOf } from "./lib/cp-gen.ts";
import { median } from "./lib/report.ts";

const { values: flags } = parseArgs({ options: { size: { type: "string", default: "10000" }, grpc: { type: "string", default: "5" }, rounds: { type: "string", default: "15" } } });
const size = Number(flags.size);
const grpcCount = Number(flags.grpc);
const rounds = Number(flags.rounds);
if (!Number.isInteger(size) || size < 100 || size > 100_000 || !Number.isInteger(grpcCount) || grpcCount < 1 || grpcCount > 1000 || !Number.isInteger(rounds) || rounds < 1 || rounds > 100) {
  console.error("--size takes 100..100000, --grpc 1..1000, --rounds 1..100");
  process.exit(2);
}

const store = new Store();
function put(type: "ADDED" | "MODIFIED", kind: string, object: Obj): void {
  if (!isKind(kind)) throw new Error(`unknown kind ${kind}`);
  const parsed = parseObject(kind as Kind, object);
  if (!parsed.ok) throw new Error(`${kind} rejected: ${parsed.diagnostic.message}`);
  store.apply({ type, kind, object: parsed.object } as Parameters<Store["apply"]>[0]);
}

const cert = createCertificate({ subjectCN: "*.bench.test", sans: ["*.bench.test"] });
const cluster = generate({ ingresses: size, httpRoutes: size, tlsCount: Math.min(500, size / 2), addresses: ["127.0.0.1"], port: 8080, cert: { cert: cert.certPem, key: cert.keyPem } });
for (const { kind, object } of cluster.objects) put("ADDED", kind, object);
// The bench Gateway with an HTTPS listener beside its HTTP one: every HTTPRoute (no sectionName) attaches to both.
const gw = gatewayBase().find((o) => o.kind === "Gateway") as Obj & { spec: { listeners: Obj[] } };
put("ADDED", "Secret", tlsSecret("default", "edge-cert", cert.certPem, cert.keyPem));
put("MODIFIED", "Gateway", { ...gw, metadata: { ...(gw.metadata as object), resourceVersion: "2" }, spec: { ...gw.spec, listeners: [...gw.spec.listeners, { name: "https", port: 443, protocol: "HTTPS", allowedRoutes: { namespaces: { from: "All" } }, tls: { certificateRefs: [{ name: "edge-cert" }] } }] } });

const grpcRoute = (k: number, host: string, rv: string): Obj => ({
  apiVersion: "gateway.networking.k8s.io/v1", kind: "GRPCRoute",
  metadata: { name: `rpc-${k}`, namespace: nsOf(k), uid: `uid-rpc-${k}`, resourceVersion: rv, generation: Number(rv), creationTimestamp: "2026-01-01T00:00:00Z" },
  spec: { parentRefs: [{ name: "edge", namespace: "default" }], hostnames: [host], rules: [{ backendRefs: [{ name: `svc-${k}`, port: 80 }] }] },
});
for (let k = 0; k < grpcCount; k++) put("ADDED", "GRPCRoute", grpcRoute(k, `rpc-${k}.bench.test`, "1"));

const compiler = new Compiler(DEFAULT_COMPILE_CONFIG);
let table: RouteTable = compiler.compile(store.snapshot()).table;

/** What serve.ts (fit) and tls-split.ts (refit) ask of a new table, in ms. */
function ask(prev: RouteTable, next: RouteTable): { ms: number; fitMs: number; kind: string; moved: boolean } {
  const t0 = performance.now();
  const kind = !needsNodeListener(next) ? "bun" : everyHostNeedsNode(next) ? "node" : "split";
  const t1 = performance.now();
  const moved = kind === "split" && hostsMovedToNode(prev, next);
  return { ms: performance.now() - t0, fitMs: t1 - t0, kind, moved };
}

const first = ask(table, table);
console.log(`first table (every entry new): ${first.ms.toFixed(2)} ms, listener ${first.kind}`);
// A tree without per-host Gateway answers puts the whole port on node:http2 (then nothing is compared).
if (first.kind === "split" && (!hostNeedsNode(table, "rpc-0.bench.test") || hostNeedsNode(table, "gw-1.bench.test") || hostNeedsNode(table, "app-1.bench.test"))) throw new Error("unexpected per-host answers");

const changes: Record<string, (r: number) => void> = {
  "one HTTPRoute edited": (r) => put("MODIFIED", "HTTPRoute", httpRouteOf(7, `/edit-${r}`, String(r + 2))),
  "one Ingress edited": (r) => put("MODIFIED", "Ingress", ingressOf(8, false, `/edit-${r}`, String(r + 2))),
  "one GRPCRoute's hostname changed (a host moves)": (r) => put("MODIFIED", "GRPCRoute", grpcRoute(0, `rpc-0-${r}.bench.test`, String(r + 2))),
};
for (const [name, change] of Object.entries(changes)) {
  const ms: number[] = [];
  const fit: number[] = [];
  let moved = 0;
  for (let r = 0; r < rounds; r++) {
    change(r);
    const next = compiler.compile(store.snapshot()).table;
    const a = ask(table, next);
    table = next;
    if (a.kind !== first.kind) throw new Error(`the listener changed from ${first.kind} to ${a.kind}`);
    ms.push(a.ms);
    fit.push(a.fitMs);
    if (a.moved) moved++;
  }
  console.log(`${name}: median ${median(ms).toFixed(3)} ms (listener kind ${median(fit).toFixed(3)} ms, the rest hostsMovedToNode), max ${Math.max(...ms).toFixed(3)} ms (${rounds} rounds, hosts moved in ${moved})`);
}
