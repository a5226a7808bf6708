// The JS heap the Store holds for the control-plane benchmark's cluster (10k Ingresses, Services,
// EndpointSlices, 500 TLS Secrets, 10k HTTPRoutes; `--api-metadata` objects), validated and
// stored from each object's JSON text as a list page would be. The texts are kept apart, so the
// difference is what the stored objects hold. usage: bun bench/store-heap.ts [checkout root]
// (default: this one), to compare two builds from one benchmark.
import { fullGC, heapStats } from "bun:jsc";
import { join } from "node:path";
const root = process.argv[2] ?? join(import.meta.dir, "..");
const { generate } = await import(`${root}/bench/lib/cp-gen.ts`);
const { parseObject } = await import(`${root}/src/model/kinds.ts`);
const { Store } = await import(`${root}/src/store/store.ts`);
const mib = (b: number) => (b / 1048576).toFixed(1);
let texts: { kind: string; text: string }[] = [];
{
  // Stand-in PEM text of an ECDSA certificate's and key's length (only its size matters here).
  const c = generate({ ingresses: 10000, httpRoutes: 10000, tlsCount: 500, addresses: ["127.0.0.10", "127.0.0.11", "127.0.0.12"], port: 8080, cert: { cert: "-----BEGIN CERTIFICATE-----\n" + "A".repeat(700) + "\n-----END CERTIFICATE-----\n", key: "-----BEGIN PRIVATE KEY-----\n" + "B".repeat(200) + "\n-----END PRIVATE KEY-----\n" }, apiMetadata: true });
  texts = c.objects.map((o: { kind: string; object: unknown }) => ({ kind: o.kind, text: JSON.stringify(o.object) }));
}
const textBytes = texts.reduce((n, t) => n + t.text.length, 0);
fullGC(); fullGC();
const before = heapStats().heapSize;
const store = new Store();
let bad = 0;
for (const t of texts) {
  const p = parseObject(t.kind, JSON.parse(t.text));
  if (!p.ok) { bad++; continue; }
  store.apply({ type: "ADDED", kind: t.kind, object: p.object });
}
fullGC(); fullGC();
const after = heapStats().heapSize;
console.log(JSON.stringify({ root, objects: texts.length, invalid: bad, jsonMiB: mib(textBytes), storeMiB: mib(after - before), kept: store.snapshot().ingresses.size }));
