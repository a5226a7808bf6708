import { expect, test } from "bun:test";
import { generate, requestMix } from "./cp-gen.ts";
import { runOffline } from "./cp-offline.ts";

const cert = { cert: "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n", key: "k" };

test("a generated cluster validates, compiles to 3 routes per Ingress, and the mix is 80% hits", () => {
  const c = generate({ ingresses: 40, tlsCount: 0, addresses: ["127.0.0.10", "127.0.0.11"], port: 8080, cert });
  expect(c.objects.filter((o) => o.kind === "Ingress")).toHaveLength(40);
  const r = runOffline(c, 1);
  expect(r.routes).toBe(120);
  expect(r.diagnostics).toBe(0);
  expect(r.hitRate).toBeGreaterThan(0.75);
  expect(r.hitRate).toBeLessThan(0.85);
});

test("the request mix is deterministic for a seed", () => {
  const c = generate({ ingresses: 10, tlsCount: 0, addresses: ["127.0.0.10"], port: 8080, cert });
  expect(requestMix(c, 50, 3)).toEqual(requestMix(c, 50, 3));
});
