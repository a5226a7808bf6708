// Canary Ingresses end to end: the real process (--manifests) → compile → the `backend` stage
// → two real backends on 127.0.0.1 that answer with their name. Expectations follow
// ingress-nginx's route_to_alternative_balancer (rootfs/etc/nginx/lua/balancer.lua) and its
// e2e suite (test/e2e/annotations/canary.go): header, then cookie, then weight; `always` /
// `never` only without canary-by-header-value; any other value falls through.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ExplainResult } from "../../src/compile/explain-types.ts";
import { eventually, get, startBackend, startPortico, type Backend, type Portico } from "./harness.ts";
import { ingress, ingressClass, service, slice, yamlDocs } from "./objects.ts";

let dir: string;
let portico: Portico;
let main: Backend;
let canary: Backend;

const A = "nginx.ingress.kubernetes.io/";
const canaryIngress = (name: string, path: string, annotations: Record<string, string>) =>
  ingress("shop", name, [{ host: "shop.test", paths: [{ path, service: "canary" }] }], { annotations: { [`${A}canary`]: "true", ...annotations } });

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
        ]
      : []),
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

  test("deleting the canary Ingresses restores main-only routing live", async () => {
    writeManifests(false);
    await eventually(async () => (await who("/w")) === "main", 5000);
    expect(await who("/", { "x-canary": "always" })).toBe("main");
    expect(await who("/p", { "x-version": "beta3" })).toBe("main");
    writeManifests(true);
    await eventually(async () => (await who("/w")) === "canary", 5000);
    expect(await who("/", { "x-canary": "always" })).toBe("canary");
  });
});
