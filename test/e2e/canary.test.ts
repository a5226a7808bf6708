// Canary Ingresses end to end: the real process (--manifests) → compile → the `backend` stage
// → two real backends on 127.0.0.1 that answer with their name. Expectations follow
// ingress-nginx's route_to_alternative_balancer (rootfs/etc/nginx/lua/balancer.lua) and its
// e2e suite (test/e2e/annotations/canary.go): header, then cookie, then weight; `always` /
// `never` only without canary-by-header-value; any other value falls through.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compile } from "../../src/compile/compile.ts";
import type { ExplainResult } from "../../src/compile/explain-types.ts";
import { lookup } from "../../src/table/lookup.ts";
import { decodeTable, encodeTable, type WireTable } from "../../src/table/wire.ts";
import { DEFAULT_COMPILE_CONFIG } from "../compile/config.ts";
import { loadFixture } from "../compile/snapshot.ts";
import { get, startBackend, startPortico, type Backend, type Portico } from "./harness.ts";
import { ingress, ingressClass, service, slice, yamlDocs } from "./objects.ts";
import { eventually } from "../wait.ts";

let dir: string;
let portico: Portico;
let main: Backend;
let canary: Backend;

const A = "nginx.ingress.kubernetes.io/";
const canaryIngress = (name: string, path: string, annotations: Record<string, string>) =>
  ingress("shop", name, [{ host: "shop.test", paths: [{ path, service: "canary" }] }], { annotations: { [`${A}canary`]: "true", ...annotations } });

const regexIngress = (name: string, svc: string, annotations: Record<string, string>) =>
  ingress("shop", name, [{ host: "regex.shop.test", paths: [{ path: "/api(/|$)(.*)", type: "ImplementationSpecific", service: svc }] }], { annotations });

function writeManifests(withCanaries: boolean): void {
  const objs = [
    ingressClass(),
    service("shop", "main"),
    slice("shop", "main", [main.port]),
    service("shop", "canary"),
    slice("shop", "canary", [canary.port]),
    ingress("shop", "main", [{ host: "shop.test", paths: ["/", "/v", "/p", "/w", "/i"].map((path) => ({ path, service: "main" })) }]),
    ...(withCanaries
      ? [
          canaryIngress("by-header", "/", { [`${A}canary-by-header`]: "X-Canary", [`${A}canary-by-cookie`]: "canary" }),
          canaryIngress("by-value", "/v", { [`${A}canary-by-header`]: "X-Version", [`${A}canary-by-header-value`]: "v2", [`${A}canary-by-cookie`]: "canary" }),
          canaryIngress("by-pattern", "/p", { [`${A}canary-by-header`]: "X-Version", [`${A}canary-by-header-pattern`]: "^(beta|rc)[0-9]+$" }),
          canaryIngress("by-weight", "/w", { [`${A}canary-by-header`]: "X-Canary", [`${A}canary-weight`]: "100" }),
          // Invalid weight: the whole canary is off, main answers, a diagnostic says why.
          canaryIngress("invalid", "/i", { [`${A}canary-by-header`]: "X-Canary", [`${A}canary-weight`]: "ten" }),
          regexIngress("regex-canary", "canary", { [`${A}canary`]: "true", [`${A}canary-by-header`]: "X-Canary" }),
        ]
      : []),
    // A host in ingress-nginx's regex mode, with main's rewrite-target.
    regexIngress("regex-main", "main", { [`${A}use-regex`]: "true", [`${A}rewrite-target`]: "/$2" }),
  ];
  writeFileSync(join(dir, "all.yaml"), yamlDocs(objs));
}

beforeAll(async () => {
  main = startBackend("main");
  canary = startBackend("canary");
  dir = mkdtempSync(join(tmpdir(), "portico-canary-"));
  writeManifests(true);
  portico = await startPortico(["--manifests", dir, "--log-level", "warn", "--access-log", "off"]);
});

afterAll(async () => {
  await portico?.stop("SIGKILL");
  main?.stop();
  canary?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const who = async (path: string, headers: Record<string, string> = {}) => {
  const r = await get(portico.http, "shop.test", path, { headers });
  expect(r.status).toBe(200);
  return r.body.split(" ")[0];
};

describe("canary precedence through a real Portico", () => {
  // [path, request headers, backend]: weight is 0 except on /w.
  const table: [string, Record<string, string>, "main" | "canary"][] = [
    ["/", {}, "main"],
    ["/", { "x-canary": "always" }, "canary"],
    ["/", { "X-CANARY": "always" }, "canary"], // header names in any case
    ["/", { "x-canary": "Always" }, "main"], // the keywords are case-sensitive
    ["/", { "x-canary": "never", cookie: "canary=always" }, "main"], // header before cookie
    ["/", { "x-canary": "always", cookie: "canary=never" }, "canary"],
    ["/", { "x-canary": "maybe", cookie: "canary=always" }, "canary"], // other values fall through
    ["/", { cookie: "a=1; canary=always" }, "canary"],
    ["/", { cookie: "canary=never" }, "main"],
    ["/", { cookie: "canary=maybe" }, "main"], // falls through to weight 0
    ["/v", { "x-version": "v2" }, "canary"],
    ["/v", { "x-version": "V2" }, "main"], // exact and case-sensitive
    ["/v", { "x-version": "always" }, "main"], // a value replaces the keywords
    ["/v", { "x-version": "never", cookie: "canary=always" }, "canary"], // `never` is just another value: falls through
    ["/p", { "x-version": "beta3" }, "canary"],
    ["/p", { "x-version": "rc12" }, "canary"],
    ["/p", { "x-version": "xbeta3" }, "main"],
    ["/p", { "x-version": "always" }, "main"], // a pattern replaces the keywords too
    ["/w", {}, "canary"], // weight 100 of 100
    ["/w", { "x-canary": "never" }, "main"],
    ["/i", { "x-canary": "always" }, "main"], // an invalid canary is never half applied
  ];
  for (const [path, headers, expected] of table) {
    test(`${path} ${JSON.stringify(headers)} → ${expected}`, async () => {
      expect(await who(path, headers)).toBe(expected);
    });
  }

  test("the invalid canary is a diagnostic naming the value", async () => {
    const metrics = await (await fetch(`${portico.admin}/metrics`)).text();
    expect(metrics).toMatch(/^portico_diagnostics\{reason="InvalidAnnotation"\} 1$/m);
  });

  test("explain shows a route's canary rules", async () => {
    const r = (await (await fetch(`${portico.admin}/debug/explain?host=shop.test&path=/p/x`)).json()) as ExplainResult;
    expect(r.match?.ingress).toBe("shop/main");
    expect(r.match?.canary?.ingress).toBe("shop/by-pattern");
    expect(r.match?.canary?.backend.id).toBe("shop/canary:80");
    expect(r.match?.canary?.rules).toEqual({ header: "x-version", headerValue: null, headerPattern: "^(beta|rc)[0-9]+$", cookie: null, weight: 0, weightTotal: 100 });
    expect(r.candidates.find((c) => c.ingress === "shop/by-pattern")?.verdict).toBe("canary");
  });

  test("a regex-mode host: the canary is picked by header and gets main's rewrite", async () => {
    // mergeAlternativeBackends attaches the canary to main's location (path as written); the
    // location's rewrite applies whichever backend the balancer picks.
    const plain = await get(portico.http, "regex.shop.test", "/API/v1?q=1");
    expect([plain.status, plain.body]).toEqual([200, "main /v1"]);
    const picked = await get(portico.http, "regex.shop.test", "/API/v1?q=1", { headers: { "x-canary": "always" } });
    expect([picked.status, picked.body]).toEqual([200, "canary /v1"]);
    const never = await get(portico.http, "regex.shop.test", "/api", { headers: { "x-canary": "never" } });
    expect([never.status, never.body]).toEqual([200, "main /"]);
    const r = (await (await fetch(`${portico.admin}/debug/explain?host=regex.shop.test&path=/API/v1`)).json()) as ExplainResult;
    expect(r.match?.ingress).toBe("shop/regex-main");
    expect(r.match?.canary?.ingress).toBe("shop/regex-canary");
    const c = r.candidates.find((x) => x.ingress === "shop/regex-canary");
    expect(c?.verdict).toBe("canary");
    expect(c?.reason).toContain("the matched route");
  });

  test("deleting the canary Ingresses restores main-only routing live", async () => {
    writeManifests(false);
    await eventually(async () => (await who("/w")) === "main", 5000);
    expect(await who("/", { "x-canary": "always" })).toBe("main");
    expect(await who("/p", { "x-version": "beta3" })).toBe("main");
    expect((await get(portico.http, "regex.shop.test", "/api/v1", { headers: { "x-canary": "always" } })).body).toBe("main /v1");
    writeManifests(true);
    await eventually(async () => (await who("/w")) === "canary", 5000);
    expect(await who("/", { "x-canary": "always" })).toBe("canary");
  });
});

describe("canary on a host in regex mode (compile)", () => {
  // Main's paths on a regex host: a refused one first (a backreference), so claims and routes
  // do not line up; then two served ones.
  const regexMain = ingress(
    "shop",
    "main",
    [{ host: "rx.test", paths: ["/(a+)\\1", "/b", "/café"].map((path) => ({ path, type: "ImplementationSpecific" as const, service: "main" })) }],
    { annotations: { [`${A}use-regex`]: "true", [`${A}rewrite-target`]: "/new" } },
  );
  const regexCanary = ingress(
    "shop",
    "canary",
    [{ host: "rx.test", paths: ["/b", "/(a+)\\1", "/caf%C3%A9"].map((path) => ({ path, type: "ImplementationSpecific" as const, service: "canary" })) }],
    { annotations: { [`${A}canary`]: "true", [`${A}canary-by-header`]: "X-Canary" } },
  );
  const fx = loadFixture(
    yamlDocs([ingressClass(), service("shop", "main"), slice("shop", "main", [8080]), service("shop", "canary"), slice("shop", "canary", [8081]), regexMain, regexCanary]),
  );
  const result = compile(fx.snapshot, DEFAULT_COMPILE_CONFIG);

  test("the main regex route carries the canary, after main's rewrite stage", () => {
    const m = lookup(result.table, "rx.test", "/B/x");
    expect(m?.route.path).toBe("/b");
    expect(m?.route.ingress).toEqual({ namespace: "shop", name: "main" });
    expect(m?.route.canary?.ingress).toEqual({ namespace: "shop", name: "canary" });
    expect(m?.route.canary?.backend.id).toBe("shop/canary:80");
    expect(m?.route.options.stages?.map((p) => p.kind)).toEqual(["rewrite-target", "canary"]);
    expect(m?.regex?.captures).not.toBeNull();
  });

  test("in regex mode the path as written must match: /caf%C3%A9 is not main's /café", () => {
    expect(lookup(result.table, "rx.test", "/café")?.route.canary).toBeUndefined();
    const unused = result.diagnostics.filter((d) => d.name === "canary" && d.reason === "CanaryWithoutMain").map((d) => d.message);
    expect(unused).toHaveLength(2);
    expect(unused.find((m) => m.includes("/caf%C3%A9"))).toContain("no Ingress that is not a canary declares that host, path and pathType");
    // Main declares the backreference path, but it is not served: neither is its canary.
    expect(unused.find((m) => m.includes("/(a+)\\1"))).toContain("shop/main declares it, but that path is not served");
  });

  test("the wire carries the regex locations and the canary backend together", () => {
    const decoded = decodeTable(JSON.parse(JSON.stringify(encodeTable(result.table))) as WireTable);
    const m = lookup(decoded, "rx.test", "/B/x");
    expect(m?.route.path).toBe("/b");
    expect(m?.route.canary?.backend.id).toBe("shop/canary:80");
    expect(m?.regex?.captures).not.toBeNull();
    expect(lookup(decoded, "rx.test", "/café")?.route.canary).toBeUndefined();
  });
});
