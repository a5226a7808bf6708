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
import type { Obj } from "./lib/cluster.ts";
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

let compiler = new Compiler(CONFIG);
let last: CompileResult = compiler.compile(store.snapshot());
if ((last.gateway?.routes.length ?? 0) !== size) throw new Error(`expected ${size} route statuses, got ${last.gateway?.routes.length}`);

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
}
const rows: Row[] = [];
/** `change(k)` before each timed compile; `setup(k)`, untimed and not compiled, before it (a status write). */
function measure(change: string, edit: (k: number) => void, opts: { setup?: (k: number) => void; settings?: (k: number) => CompileConfig } = {}): void {
  const times: number[] = [];
  const counts: number[] = [];
  for (let k = 0; k < rounds; k++) {
    opts.setup?.(k);
    edit(k);
    const snap = store.snapshot();
    const t0 = performance.now();
    if (opts.settings) compiler = new Compiler(opts.settings(k), { previous: compiler } as ConstructorParameters<typeof Compiler>[1]);
    const r = compiler.compile(snap);
    times.push(performance.now() - t0);
    counts.push(compiledAgain(last, r));
    last = r;
  }
  rows.push({ change, ms: median(times), min: Math.min(...times), routes: median(counts) });
  process.stderr.write(`${change}: ${median(times).toFixed(1)} ms, ${median(counts)} routes\n`);
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
measure("settings: ssl-redirect (a new Compiler)", () => {}, { settings: (k) => ({ ...CONFIG, sslRedirect: k % 2 === 0 ? !CONFIG.sslRedirect : CONFIG.sslRedirect }) });
measure("settings: allowlist-source-range (a new Compiler)", () => {}, { settings: (k) => ({ ...CONFIG, allowlistSourceRange: k % 2 === 0 ? ["10.0.0.0/8"] : [] }) });

console.log(`size ${size} Ingresses + ${size} HTTPRoutes (${READERS.length} name an IngressNginxPolicy), ${rounds} rounds, load ${loadavg().map((x) => x.toFixed(2)).join(" ")}, bun ${Bun.version}`);
console.log("| change | compile median (min) | routes compiled again |");
console.log("|---|---:|---:|");
for (const r of rows) console.log(`| ${r.change} | ${r.ms.toFixed(1)} (${r.min.toFixed(1)}) ms | ${r.routes} |`);
