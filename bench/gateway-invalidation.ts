// What one change costs the compile at 10,000 Ingresses beside 10,000 HTTPRoutes, per kind of
// change (docs/design.md "Gateway API", "What a change compiles again"): in-process, one
// long-lived Compiler fed by a real Store, as runtime/controller.ts runs it. For each change:
// the compile's time (median over the rounds) and how many Gateway API routes it compiled
// again, counted as route status objects that are not the previous compile's (an unchanged
// route keeps its status object; a compiled one gets a new one), so the same script measures
// any tree. `bun bench/gateway-invalidation.ts [--size N] [--rounds R]`
import { parseArgs } from "node:util";
import { loadavg } from "node:os";
import { Compiler } from "../src/compile/compile.ts";
import type { CompileConfig } from "../src/compile/config.ts";
import type { CompileResult } from "../src/compile/types.ts";
import { isKind, parseObject, type Kind } from "../src/model/kinds.ts";
import { Store } from "../src/store/store.ts";
import { DEFAULT_COMPILE_CONFIG } from "../test/compile/config.ts";
import { createCertificate } from "../test/tls/pki.ts";
import { generate, httpRouteOf, ingressOf, nsOf } from "./lib/cp-gen.ts";
import { endpointSlice, type Obj } from "./lib/cluster.ts";
import { median } from "./lib/report.ts";

const { values: flags } = parseArgs({ options: { size: { type: "string", default: "10000" }, rounds: { type: "string", default: "9" } } });
const size = Number(flags.size);
const rounds = Number(flags.rounds);
if (!Number.isInteger(size) || size < 100 || size > 100_000 || !Number.isInteger(rounds) || rounds < 1 || rounds > 100) {
  console.error("--size takes 100..100000, --rounds 1..100");
  process.exit(2);
}

const N = "nginx.ingress.kubernetes.io/";
const NS = nsOf(0);
// add-headers names a ConfigMap, as ingress-nginx's ConfigMap key does (compile/global-headers.ts).
const CONFIG: CompileConfig = Object.freeze({ ...DEFAULT_COMPILE_CONFIG, addHeaders: { namespace: "default", name: "global" } });
/** HTTPRoutes i = 0, 50, 100, ... (namespace team-0) name the policy: 20 of them. */
const READERS = Array.from({ length: 20 }, (_, k) => k * 50).filter((i) => i < size);

const store = new Store();
store.setSettingsConfigMaps(["default/global"]);
function put(type: "ADDED" | "MODIFIED" | "DELETED", kind: string, object: Obj): void {
  if (!isKind(kind)) throw new Error(`unknown kind ${kind}`);
  const parsed = parseObject(kind as Kind, object);
  if (!parsed.ok) throw new Error(`${kind} rejected: ${parsed.diagnostic.message}`);
  store.apply({ type, kind, object: parsed.object } as Parameters<Store["apply"]>[0]);
}
const configMap = (ns: string, name: string, value: string, rv: number): Obj => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: ns, resourceVersion: String(rv) }, data: { "X-Tenant": value } });
const policy = (url: string, rv: number): Obj => ({
  apiVersion: "portico.dev/v1alpha1",
  kind: "IngressNginxPolicy",
  metadata: { name: "pol", namespace: NS, resourceVersion: String(rv) },
  spec: { annotations: { [`${N}auth-url`]: url, [`${N}auth-proxy-set-headers`]: `${NS}/h` } },
});
const namespace = (name: string, label: string, rv: number): Obj => ({ apiVersion: "v1", kind: "Namespace", metadata: { name, resourceVersion: String(rv), labels: { team: label } } });
const grant: Obj = {
  apiVersion: "gateway.networking.k8s.io/v1beta1",
  kind: "ReferenceGrant",
  metadata: { name: "from-team-1", namespace: nsOf(2) },
  spec: { from: [{ group: "gateway.networking.k8s.io", kind: "HTTPRoute", namespace: nsOf(1) }], to: [{ group: "", kind: "Service" }] },
};
function reader(i: number, rv: string): Obj {
  const r = httpRouteOf(i, null, rv) as Obj & { spec: { rules: Record<string, unknown>[] } };
  r.spec.rules[0] = { ...r.spec.rules[0], filters: [{ type: "ExtensionRef", extensionRef: { group: "portico.dev", kind: "IngressNginxPolicy", name: "pol" } }] };
  return r;
}

const cert = createCertificate({ subjectCN: "*.bench.test", sans: ["*.bench.test"] });
const cluster = generate({ ingresses: size, httpRoutes: size, tlsCount: Math.min(500, size / 2), addresses: ["127.0.0.1"], port: 8080, cert: { cert: cert.certPem, key: cert.keyPem } });
for (const { kind, object } of cluster.objects) put("ADDED", kind, object);
for (const i of READERS) put("MODIFIED", "HTTPRoute", reader(i, "1"));
put("ADDED", "IngressNginxPolicy", policy("http://auth.example/", 1));
put("ADDED", "ConfigMap", configMap(NS, "h", "a", 1));
put("ADDED", "ConfigMap", configMap(NS, "other", "a", 1));
put("ADDED", "ConfigMap", configMap("default", "global", "a", 1));
for (let n = 0; n < 50; n++) put("ADDED", "Namespace", namespace(nsOf(n), "a", 1));
// A second Gateway, "side", with an HTTP listener and an HTTPS one whose certificate is the
// Secret side-cert, and 20 HTTPRoutes of its own: what a change of one Gateway, or of its
// listener's Secret, compiles again beside the 10,000 routes of the other.
const SIDE_ROUTES = 20;
const sideCert = (rv: number): Obj => {
  const c = createCertificate({ subjectCN: "side.bench.test", sans: ["side.bench.test"] });
  return { apiVersion: "v1", kind: "Secret", type: "kubernetes.io/tls", metadata: { name: "side-cert", namespace: "default", resourceVersion: String(rv) }, data: { "tls.crt": Buffer.from(c.certPem).toString("base64"), "tls.key": Buffer.from(c.keyPem).toString("base64") } };
};
const sideGateway = (extraPort: number | null, rv: number): Obj => ({
  apiVersion: "gateway.networking.k8s.io/v1",
  kind: "Gateway",
  metadata: { name: "side", namespace: "default", uid: "uid-gw-side", resourceVersion: String(rv), generation: rv },
  spec: {
    gatewayClassName: (cluster.objects.find((o) => o.kind === "Gateway")!.object as { spec: { gatewayClassName: string } }).spec.gatewayClassName,
    listeners: [
      { name: "http", port: 80, protocol: "HTTP", hostname: "side.bench.test", allowedRoutes: { namespaces: { from: "All" } } },
      { name: "https", port: 443, protocol: "HTTPS", hostname: "side.bench.test", tls: { mode: "Terminate", certificateRefs: [{ name: "side-cert" }] }, allowedRoutes: { namespaces: { from: "All" } } },
      ...(extraPort === null ? [] : [{ name: "extra", port: extraPort, protocol: "HTTP", hostname: "extra.side.bench.test", allowedRoutes: { namespaces: { from: "Same" } } }]),
    ],
  },
});
put("ADDED", "Secret", sideCert(1));
put("ADDED", "Gateway", sideGateway(null, 1));
for (let k = 0; k < SIDE_ROUTES; k++) {
  const r = httpRouteOf(k, null, "1") as Obj & { metadata: Record<string, unknown>; spec: Record<string, unknown> };
  put("ADDED", "HTTPRoute", { ...r, metadata: { ...r.metadata, name: `side-${k}`, uid: `uid-side-${k}` }, spec: { ...r.spec, parentRefs: [{ name: "side", namespace: "default" }], hostnames: ["side.bench.test"] } });
}

let compiler = new Compiler(CONFIG);
let last: CompileResult = compiler.compile(store.snapshot());
if ((last.gateway?.routes.length ?? 0) !== size + SIDE_ROUTES) throw new Error(`expected ${size + SIDE_ROUTES} route statuses, got ${last.gateway?.routes.length}`);

/** Ingress host entries of `next` that are not `prev`'s objects: the hosts built again. */
function hostsAgain(prev: CompileResult, next: CompileResult): number {
  let n = 0;
  for (const [h, e] of next.table.exact) if (prev.table.exact.get(h) !== e) n++;
  return n;
}

/** Route statuses of `next` that are not `prev`'s objects: the routes compiled again. */
function compiledAgain(prev: CompileResult, next: CompileResult): number {
  const before = new Map((prev.gateway?.routes ?? []).map((r) => [r.key, r]));
  let n = 0;
  for (const r of next.gateway?.routes ?? []) if (before.get(r.key) !== r) n++;
  return n;
}

let rv = 10;
interface Row {
  readonly change: string;
  readonly ms: number;
  readonly min: number;
  readonly routes: number;
  readonly hosts: number;
}
const rows: Row[] = [];
/** `change(k)` before each timed compile; `setup(k)`, untimed and not compiled, before it (a status write). */
function measure(change: string, edit: (k: number) => void, opts: { setup?: (k: number) => void; settings?: (k: number) => CompileConfig } = {}): void {
  const times: number[] = [];
  const counts: number[] = [];
  const hosts: number[] = [];
  for (let k = 0; k < rounds; k++) {
    opts.setup?.(k);
    edit(k);
    const snap = store.snapshot();
    const t0 = performance.now();
    if (opts.settings) compiler = new Compiler(opts.settings(k), { previous: compiler } as ConstructorParameters<typeof Compiler>[1]);
    const r = compiler.compile(snap);
    times.push(performance.now() - t0);
    counts.push(compiledAgain(last, r));
    hosts.push(hostsAgain(last, r));
    last = r;
  }
  rows.push({ change, ms: median(times), min: Math.min(...times), routes: median(counts), hosts: median(hosts) });
  process.stderr.write(`${change}: ${median(times).toFixed(1)} ms, ${median(counts)} routes, ${median(hosts)} Ingress hosts\n`);
}

measure("HTTPRoute spec edited", (k) => put("MODIFIED", "HTTPRoute", httpRouteOf(1 + ((k * 7919) % (size - 1)), `/edit-${k}`, String(rv++))));
measure("Ingress spec edited", (k) => put("MODIFIED", "Ingress", ingressOf(600 + ((k * 7919) % (size - 600)), false, `/edit-${k}`, String(rv++))));
measure("ConfigMap no route reads: data", (k) => put("MODIFIED", "ConfigMap", configMap(NS, "other", `v${k}`, rv++)));
measure("add-headers ConfigMap (settings): data", (k) => put("MODIFIED", "ConfigMap", configMap("default", "global", `v${k}`, rv++)));
measure("policy's ConfigMap (20 routes read it): metadata only", () => put("MODIFIED", "ConfigMap", configMap(NS, "h", "a", rv++)));
measure("policy's ConfigMap (20 routes read it): data", (k) => put("MODIFIED", "ConfigMap", configMap(NS, "h", `v${k}`, rv++)));
measure("IngressNginxPolicy (20 routes name it)", (k) => put("MODIFIED", "IngressNginxPolicy", policy(`http://auth${k}.example/`, rv++)));
measure("Namespace labels (no listener selects)", (k) => put("MODIFIED", "Namespace", namespace(nsOf(1), `v${k}`, rv++)));
measure("Namespace created or deleted", (k) => put(k % 2 === 0 ? "ADDED" : "DELETED", "Namespace", namespace("extra", "a", rv++)));
measure("ReferenceGrant from team-1's HTTPRoutes, added or deleted", (k) => put(k % 2 === 0 ? "ADDED" : "DELETED", "ReferenceGrant", grant));
measure(
  "HTTPRoute edited after the Gateway's status was written",
  (k) => put("MODIFIED", "HTTPRoute", httpRouteOf(2 + ((k * 7919) % (size - 2)), `/st-${k}`, String(rv++))),
  {
    setup: (k) => {
      const gw = store.get("Gateway", "default/edge")!;
      store.apply({ type: "MODIFIED", kind: "Gateway", object: { ...gw, metadata: { ...gw.metadata, resourceVersion: String(rv++) }, status: { conditions: [{ type: "Programmed", status: "True", reason: `r${k}`, message: "", lastTransitionTime: "2026-11-28T00:00:00Z" }] } } as Parameters<Store["apply"]>[0]["object"] } as Parameters<Store["apply"]>[0]);
    },
  },
);
measure(
  "HTTPRoute edited after every route's status was written",
  (k) => put("MODIFIED", "HTTPRoute", httpRouteOf(3 + ((k * 7919) % (size - 3)), `/all-${k}`, String(rv++))),
  {
    setup: (k) => {
      for (const r of [...store.snapshot().httpRoutes.values()]) {
        store.apply({ type: "MODIFIED", kind: "HTTPRoute", object: { ...r, metadata: { ...r.metadata, resourceVersion: String(rv++) }, status: { parents: [{ parentRef: { name: "edge" }, controllerName: "x", conditions: [{ type: "Accepted", status: "True", reason: `r${k}`, message: "", lastTransitionTime: "2026-11-28T00:00:00Z" }] }] } } as Parameters<Store["apply"]>[0]["object"] } as Parameters<Store["apply"]>[0]);
      }
    },
  },
);
// EndpointSlices: the most frequent change in a live cluster. Service i's slice (cp-gen.ts) is
// read by Ingress i and HTTPRoute i. Edited: one endpoint's ready condition (read), then the
// same slice with only its resourceVersion and the controller's trigger-time annotation new (not
// read), then a relist of every slice, unchanged (a watch that expired: every object new).
const slice = (i: number, ready: boolean, rv: number, stamp = ""): Obj => {
  const s = endpointSlice(nsOf(i), `svc-${i}`, ["127.0.0.1", "127.0.0.2"], 8080, String(rv)) as Obj & { metadata: Record<string, unknown>; endpoints: { conditions: Record<string, boolean> }[] };
  s.endpoints[1]!.conditions = { ready, serving: ready, terminating: false };
  if (stamp !== "") s.metadata.annotations = { "endpoints.kubernetes.io/last-change-trigger-time": stamp };
  return s;
};
measure("EndpointSlice: one endpoint's ready flips", (k) => put("MODIFIED", "EndpointSlice", slice(1 + ((k * 7919) % (size - 1)), k % 2 === 0, rv++)));
for (let i = 0; i < rounds; i++) put("MODIFIED", "EndpointSlice", slice(1 + ((i * 104729) % (size - 1)), true, rv++));
measure("EndpointSlice: resourceVersion and annotation only", (k) => put("MODIFIED", "EndpointSlice", slice(1 + ((k * 104729) % (size - 1)), true, rv++, `2026-11-28T00:00:0${k % 10}Z`)));
measure("EndpointSlices relisted, unchanged (every object new)", () => {
  const all = [...store.view("EndpointSlice").values()].map((s) => ({ ...s, metadata: { ...s.metadata } }));
  store.replace("EndpointSlice", all);
});
measure("Service relisted, unchanged (every object new)", () => {
  const all = [...store.view("Service").values()].map((s) => ({ ...s, metadata: { ...s.metadata } }));
  store.replace("Service", all);
});
measure(`the second Gateway's spec: a listener added or removed (${SIDE_ROUTES} routes on it)`, (k) => put("MODIFIED", "Gateway", sideGateway(k % 2 === 0 ? 8081 : null, rv++)));
measure("the second Gateway's listener Secret: a new certificate", () => put("MODIFIED", "Secret", sideCert(rv++)));
measure("settings: ssl-redirect (a new Compiler)", () => {}, { settings: (k) => ({ ...CONFIG, sslRedirect: k % 2 === 0 ? !CONFIG.sslRedirect : CONFIG.sslRedirect }) });
measure("settings: allowlist-source-range (a new Compiler)", () => {}, { settings: (k) => ({ ...CONFIG, allowlistSourceRange: k % 2 === 0 ? ["10.0.0.0/8"] : [] }) });

console.log(`size ${size} Ingresses + ${size} HTTPRoutes (${READERS.length} name an IngressNginxPolicy), ${rounds} rounds, load ${loadavg().map((x) => x.toFixed(2)).join(" ")}, bun ${Bun.version}`);
console.log("| change | compile median (min) | routes compiled again | Ingress hosts built again |");
console.log("|---|---:|---:|---:|");
for (const r of rows) console.log(`| ${r.change} | ${r.ms.toFixed(1)} (${r.min.toFixed(1)}) ms | ${r.routes} | ${r.hosts} |`);
