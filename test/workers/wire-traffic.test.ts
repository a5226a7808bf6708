// The affinity, balancing and limits stage policies cross the primary → worker IPC as JSON
// unchanged, frozen again, and the worker's proxy builds every one of them (their parameters
// are checked again there: a policy it could not build would answer 500).
import { expect, test } from "bun:test";
import { parseAnnotations } from "../../src/compile/annotations.ts";
import { POLICY_KINDS } from "../../src/kinds/registry.ts";
import { buildKind } from "../../src/proxy/policies/run.ts";
import { policyCaps } from "../../src/proxy/policies/caps.ts";
import { buildTable } from "../../src/table/build.ts";
import { lookup } from "../../src/table/lookup.ts";
import type { RouteTable } from "../../src/table/types.ts";
import { decodeTable, encodeTable, type WireTable } from "../../src/table/wire.ts";
import { mkRoute } from "../compile/routes.ts";
import { testConfig } from "../proxy/helpers.ts";

const roundTrip = (t: RouteTable): RouteTable => decodeTable(JSON.parse(JSON.stringify(encodeTable(t))) as WireTable);

test("limits, affinity, hash and ewma policies survive the wire and build on the worker's side", () => {
  const P = "nginx.ingress.kubernetes.io/";
  const sets: Record<string, string>[] = [
    { [`${P}limit-rps`]: "5", [`${P}limit-connections`]: "2", [`${P}limit-allowlist`]: "10.0.0.0/8,::1", [`${P}affinity`]: "cookie", [`${P}session-cookie-samesite`]: "Lax", [`${P}session-cookie-max-age`]: "-1" },
    { [`${P}limit-rpm`]: "x" }, // denied
    { [`${P}upstream-hash-by`]: "v1-${cookie_user}$http_x_team$remote_addr$request_uri", [`${P}upstream-hash-by-subset`]: "true" },
    { [`${P}load-balance`]: "ewma" },
  ];
  const routes = sets.map((ann, i) => ({ ...mkRoute(`h${i}.test`, "/", "Prefix"), options: parseAnnotations(ann).options }));
  const t = roundTrip(buildTable(routes, null));
  const frozen = (x: unknown): boolean => x === null || typeof x !== "object" || (Object.isFrozen(x) && Object.values(x).every(frozen));
  const kinds: string[] = [];
  for (let i = 0; i < sets.length; i++) {
    const stages = lookup(t, `h${i}.test`, "/")!.route.options.stages!;
    expect(stages).toEqual(routes[i]!.options.stages!);
    expect(frozen(stages)).toBe(true);
    for (const p of stages) {
      const kind = POLICY_KINDS.get(p.kind)!;
      expect(kind.stage).toBe(p.stage);
      expect(() => buildKind(kind, p.params, policyCaps(testConfig()))).not.toThrow();
      kinds.push(p.kind);
    }
  }
  // POLICY_STAGES order: the backend stage (affinity) before nginx's pre-access phase (limits).
  expect(kinds).toEqual(["affinity", "limits", "limits", "hash", "ewma"]);
});
