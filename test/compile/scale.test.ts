// Correctness at scale: 10,000 Ingresses (scale.ts: one host and two paths each, a tenth of the
// hosts wildcards, a quarter with spec.tls) compile into a table that routes every request to the
// Ingress and path the rules say, agrees with the naive reference matcher, and marks exactly
// the TLS hosts. How fast that is belongs to bench/control-plane.ts (compile time, lookup ns).
import { expect, test } from "bun:test";
import { compile } from "../../src/compile/compile.ts";
import { DEFAULT_COMPILE_CONFIG } from "./config.ts";
import { lookup } from "../../src/table/lookup.ts";
import type { Match } from "../../src/table/types.ts";
import { referenceLookup } from "../table/reference.ts";
import { syntheticSnapshot } from "./scale.ts";

const N = 10_000;

/** What a request routed to: `namespace/name path type via tls`, or "404". */
const where = (m: Match | null): string =>
  m === null ? "404" : `${m.route.ingress.namespace}/${m.route.ingress.name} ${m.route.path} ${m.route.pathType} ${m.via} ${m.route.tls ? "tls" : "plain"}`;

test("10k Ingresses: every request routes where the rules say, as the reference matcher does", () => {
  const result = compile(syntheticSnapshot(N), DEFAULT_COMPILE_CONFIG);
  expect(result.table.routeCount).toBe(2 * N);
  expect(result.diagnostics.filter((d) => d.severity !== "warning")).toEqual([]);

  const wrong: string[] = [];
  const check = (host: string, path: string, want: string, withReference: boolean) => {
    const got = where(lookup(result.table, host, path));
    if (got !== want) wrong.push(`${host}${path}: got ${got}, want ${want}`);
    if (withReference) {
      const ref = where(referenceLookup(result.table, host, path));
      if (ref !== got) wrong.push(`${host}${path}: lookup ${got}, reference ${ref}`);
    }
  };

  for (let i = 0; i < N; i++) {
    const ing = `team-${i % 50}/app-${i}`;
    const wildcard = i % 10 === 0;
    // A wildcard rule is reached through one extra label. Every rule host of an Ingress with
    // spec.tls is a TLS host, the wildcard one too though spec.tls lists only app-<i>: as
    // ingress-nginx's createServers, which gives it the default certificate when
    // extractTLSSecretName finds no entry listing or naming it.
    const host = wildcard ? `x.w${i}.example.com` : `app-${i}.example.com`;
    const via = wildcard ? "wildcard-host" : "exact-host";
    const tls = i % 4 === 0 ? "tls" : "plain";
    const api = `/api/v${i % 3}/items`;
    const apiType = i % 2 ? "Exact" : "Prefix";
    const root = `${ing} / Prefix ${via} ${tls}`;
    // The reference matcher scans every route: check it on one Ingress in 50.
    const ref = i % 50 === 7;
    check(host, "/", root, ref);
    check(host, "/static/app.js", root, ref);
    check(host, api, `${ing} ${api} ${apiType} ${via} ${tls}`, ref);
    // Below an Exact path only "/" matches; below a Prefix path the longer rule wins.
    check(host, `${api}/42`, apiType === "Exact" ? root : `${ing} ${api} Prefix ${via} ${tls}`, ref);
    check(host, `/api/v${(i + 1) % 3}/items`, root, ref);
    // Prefix matches whole path elements: /api/v0/itemsX is not under /api/v0/items.
    check(host, `${api}X`, root, ref);
    if (wildcard) {
      // `*.w<i>` matches exactly one label: neither the bare suffix nor two labels.
      check(`w${i}.example.com`, "/", "404", ref);
      check(`a.b.w${i}.example.com`, "/", "404", ref);
    }
  }
  check("unknown.example.com", "/", "404", true);
  expect(wrong.slice(0, 20)).toEqual([]);
}, 60_000);
