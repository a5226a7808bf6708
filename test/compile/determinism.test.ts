// compile() is pure and deterministic: Map insertion order does not change the output, the
// input is not mutated, and two runs give equal results.
import { expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { compile } from "../../src/compile/compile.ts";
import type { CompileConfig } from "../../src/compile/config.ts";
import { DEFAULT_COMPILE_CONFIG } from "./config.ts";
import { serializeTable } from "../../src/table/serialize.ts";
import type { Snapshot } from "../../src/store/types.ts";
import { loadFixture } from "./snapshot.ts";

const reversed = <K, V>(m: ReadonlyMap<K, V>): Map<K, V> => new Map([...m].reverse());

function deepFreeze<T>(o: T): T {
  if (o && typeof o === "object" && !Object.isFrozen(o)) {
    Object.freeze(o);
    if (o instanceof Map) for (const v of o.values()) deepFreeze(v);
    else for (const v of Object.values(o)) deepFreeze(v);
  }
  return o;
}

const dir = join(import.meta.dir, "..", "fixtures");
for (const file of readdirSync(dir).filter((f) => f.endsWith(".yaml"))) {
  test(`deterministic and non-mutating: ${file}`, () => {
    const fx = loadFixture(readFileSync(join(dir, file), "utf8"));
    const config = { ...DEFAULT_COMPILE_CONFIG, ...fx.config } as CompileConfig;
    const s = fx.snapshot;
    const before = JSON.stringify([...s.ingresses.values(), ...s.services.values(), ...s.secrets.values()]);
    const flipped: Snapshot = {
      ingresses: reversed(s.ingresses),
      ingressClasses: reversed(s.ingressClasses),
      services: reversed(s.services),
      endpointSlices: new Map([...s.endpointSlices].reverse().map(([k, v]) => [k, [...v].reverse()])),
      secrets: reversed(s.secrets),
      namespaces: reversed(s.namespaces),
      gatewayClasses: reversed(s.gatewayClasses),
      gateways: reversed(s.gateways),
      httpRoutes: reversed(s.httpRoutes),
      grpcRoutes: reversed(s.grpcRoutes),
      referenceGrants: reversed(s.referenceGrants),
    };
    const view = (snap: Snapshot) => {
      const r = compile(snap, config);
      return JSON.stringify({ t: serializeTable(r.table), c: r.certificates, s: r.statuses, d: r.diagnostics });
    };
    const a = view(s);
    deepFreeze(flipped.ingresses);
    expect(view(flipped)).toBe(a);
    expect(view(s)).toBe(a);
    expect(JSON.stringify([...s.ingresses.values(), ...s.services.values(), ...s.secrets.values()])).toBe(before);
  });
}
