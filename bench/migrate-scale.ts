// The migration report and the Gateway API conversion at scale (docs/design.md "The migration
// report", "Converting to Gateway API"): N generated Ingresses (bench/lib/cp-gen.ts), each
// with a configuration-snippet (a header the report replaces with an annotation) and a
// server-snippet (a `location` deny, which makes a companion Ingress), every tenth with
// use-regex. The time of migrationReport and of toGatewayApi over one compile, median of a
// few runs after one warm-up. Usage: [RUNS=4] bun bench/migrate-scale.ts [N ...] (default 1000 2000 5000 10000).
import { Compiler } from "../src/compile/compile.ts";
import { migrationReport } from "../src/compile/migrate.ts";
import { toGatewayApi } from "../src/compile/to-gateway.ts";
import { isKind, parseObject } from "../src/model/kinds.ts";
import { Store } from "../src/store/store.ts";
import { DEFAULT_COMPILE_CONFIG } from "../test/compile/config.ts";
import { CLASS, CONTROLLER } from "./lib/cluster.ts";
import { generate } from "./lib/cp-gen.ts";
import { median } from "./lib/report.ts";

const N = "nginx.ingress.kubernetes.io/";
const config = { ...DEFAULT_COMPILE_CONFIG, ingressClass: CLASS, controllerName: CONTROLLER, ingressNginxCompat: true };

function snapshotOf(n: number) {
  const c = generate({ ingresses: n, tlsCount: 0, addresses: ["127.0.0.1"], port: 8080, cert: { cert: "", key: "" } });
  const store = new Store();
  let i = 0;
  for (const { kind, object } of c.objects) {
    if (kind === "Ingress") {
      const meta = object.metadata as { annotations?: Record<string, string> };
      meta.annotations = {
        [`${N}configuration-snippet`]: 'more_set_headers "X-Frame-Options: DENY";',
        [`${N}server-snippet`]: "location /internal/ { deny all; }",
        ...(i % 10 === 0 ? { [`${N}use-regex`]: "true" } : {}),
      };
      i++;
    }
    if (!isKind(kind)) throw new Error(`generator made unknown kind ${kind}`);
    const parsed = parseObject(kind, object);
    if (!parsed.ok) throw new Error(`generated object rejected: ${parsed.diagnostic.message}`);
    store.apply({ type: "ADDED", kind, object: parsed.object } as Parameters<Store["apply"]>[0]);
  }
  return store.snapshot();
}

/** Runs per size, the first a warm-up (RUNS=2 for a slow tree). */
const RUNS = Math.max(2, Number(process.env.RUNS ?? 4));
const sizes = process.argv.slice(2).map(Number).filter((x) => x > 0);
for (const n of sizes.length > 0 ? sizes : [1000, 2000, 5000, 10000]) {
  const snap = snapshotOf(n);
  const view = new Compiler(config).inspect(snap, []);
  const report: number[] = [];
  const gateway: number[] = [];
  let companions = 0;
  for (let run = 0; run < RUNS; run++) {
    const t0 = performance.now();
    const r = migrationReport(view, config, null);
    const t1 = performance.now();
    toGatewayApi(view, { gatewayName: "portico", gatewayNamespace: "portico", controllerName: config.gatewayControllerName, httpRedirectCode: 308, hsts: null });
    const t2 = performance.now();
    companions = r.ingresses.reduce((s, x) => s + x.annotations.reduce((a, b) => a + (b.snippet?.companions.length ?? 0), 0), 0);
    // The first run warms the JIT up.
    if (run > 0) {
      report.push(t1 - t0);
      gateway.push(t2 - t1);
    }
  }
  console.log(`${n} Ingresses (${view.served.length} served, ${companions} companions): migrationReport ${median(report).toFixed(0)} ms, toGatewayApi ${median(gateway).toFixed(0)} ms`);
}
