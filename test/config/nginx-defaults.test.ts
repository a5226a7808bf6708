// --ingress-nginx-compat serves ingress-nginx's defaults where config/nginx-defaults.ts says so
// (ingress-nginx v1.15.1 internal/ingress/controller/config/config.go NewDefault), a flag or its
// PORTICO_* twin still wins, and the README's table is the table.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as v from "valibot";
import { FLAGS } from "../../src/config/flags.ts";
import { NGINX_DEFAULTS } from "../../src/config/nginx-defaults.ts";
import { parseArgs } from "../../src/config/parse.ts";
import { createNginxSettings } from "../../src/runtime/nginx-settings.ts";
import type { Config } from "../../src/config/types.ts";
import { silentLogger } from "../../src/log/logger.ts";
import { nginxDefaultsTable } from "./nginx-defaults-table.ts";

function configOf(args: string[], env: Record<string, string> = {}): Config {
  const o = parseArgs(["--manifests", "x.yaml", ...args], env);
  if (o.type !== "run") throw new Error(JSON.stringify(o));
  return o.config;
}

const parsed = (key: keyof Config, text: string): any => v.parse(FLAGS[key].schema as v.GenericSchema<string, unknown>, text);

describe("ingress-nginx's defaults", () => {
  test("each row names a real flag by its name", () => {
    for (const d of NGINX_DEFAULTS) {
      if (d.flag === null) expect(d.flagName, d.setting).toBeNull();
      else expect(FLAGS[d.flag].name, d.setting).toBe(d.flagName!);
      if (d.compat === "ingress-nginx" && d.flag !== null) expect(d.flagValue, d.setting).toBeDefined();
    }
    expect(NGINX_DEFAULTS.filter((d) => d.compat === "ingress-nginx").map((d) => d.setting)).toEqual(["proxy-body-size", "hsts-include-subdomains", "client-body-timeout", "proxy-read-timeout", "server-tokens", "proxy_hide_header (nginx)", "compute-full-forwarded-for"]);
  });

  for (const d of NGINX_DEFAULTS.filter((x) => x.flag !== null)) {
    const key = d.flag!;
    test(`${d.setting}: --${d.flagName} is ${d.compat === "ingress-nginx" ? `${d.flagValue} with --ingress-nginx-compat` : "Portico's in both modes"}; a flag wins`, () => {
      const plain = configOf([]);
      expect(plain[key]).toEqual(FLAGS[key].fallback());
      const compat = configOf(["--ingress-nginx-compat"]);
      expect(compat[key]).toEqual(d.compat === "ingress-nginx" ? parsed(key, d.flagValue!) : FLAGS[key].fallback());
      // The PORTICO_* twin turns compat on just the same.
      expect(configOf([], { PORTICO_INGRESS_NGINX_COMPAT: "true" })[key]).toEqual(compat[key]);
    });
  }

  test("a flag given wins over the compat default", () => {
    expect(configOf(["--ingress-nginx-compat", "--max-body-size", "10m"]).maxBodySize).toBe(10 * 1024 * 1024);
    expect(configOf(["--ingress-nginx-compat", "--hsts-include-subdomains=false"]).hstsIncludeSubdomains).toBe(false);
    expect(configOf(["--ingress-nginx-compat"], { PORTICO_MAX_BODY_SIZE: "0" }).maxBodySize).toBe(parsed("maxBodySize", "0"));
  });

  // nginx's proxy_read_timeout is one timer for the head and every gap of a body or tunnel
  // (ngx_http_upstream.c, ngx_http_upstream_process_non_buffered_request and
  // ngx_http_upstream_process_upgraded): under compat the idle time is 60 s, or follows a given
  // --response-timeout; without compat Portico's own 60 s / 5 min stay.
  test("proxy-read-timeout: compat's idle time is ingress-nginx's 60 s, or a given --response-timeout", () => {
    expect(configOf(["--ingress-nginx-compat"])).toMatchObject({ responseTimeoutMs: 60_000, streamIdleTimeoutMs: 60_000 });
    expect(configOf(["--ingress-nginx-compat", "--response-timeout", "90s"])).toMatchObject({ responseTimeoutMs: 90_000, streamIdleTimeoutMs: 90_000 });
    expect(configOf(["--ingress-nginx-compat"], { PORTICO_RESPONSE_TIMEOUT: "2m" })).toMatchObject({ responseTimeoutMs: 120_000, streamIdleTimeoutMs: 120_000 });
    expect(configOf(["--ingress-nginx-compat", "--response-timeout", "90s", "--stream-idle-timeout", "10m"])).toMatchObject({ responseTimeoutMs: 90_000, streamIdleTimeoutMs: 600_000 });
    expect(configOf([])).toMatchObject({ responseTimeoutMs: 60_000, streamIdleTimeoutMs: 300_000 });
    expect(configOf(["--response-timeout", "90s"])).toMatchObject({ responseTimeoutMs: 90_000, streamIdleTimeoutMs: 300_000 });
  });

  // ingress-nginx's ConfigMap proxy-read-timeout sets both timers (runtime/nginx-settings.ts);
  // a flag given wins over the key. Under compat the idle time that follows a given
  // --response-timeout is given as well: the key must not move it alone, which would leave two
  // timers where nginx has one.
  test("proxy-read-timeout in the ConfigMap moves neither timer when compat's idle time follows a given --response-timeout", () => {
    const ref = { namespace: "ingress-nginx", name: "ingress-nginx-controller" };
    const served = (args: string[]) => {
      const o = parseArgs(["--manifests", "x.yaml", ...args], {});
      if (o.type !== "run") throw new Error(JSON.stringify(o));
      const s = createNginxSettings({ base: o.config, explicit: o.explicit, ref, log: silentLogger, onDiagnostics: () => {}, onCompileConfig: () => {} });
      s.update({ apiVersion: "v1", kind: "ConfigMap", metadata: ref, data: { "proxy-read-timeout": "120" } });
      return [s.config.responseTimeoutMs, s.config.streamIdleTimeoutMs];
    };
    expect(served(["--ingress-nginx-compat", "--response-timeout=30s"])).toEqual([30_000, 30_000]);
    expect(served(["--ingress-nginx-compat"])).toEqual([120_000, 120_000]);
    expect(served(["--ingress-nginx-compat", "--response-timeout=30s", "--stream-idle-timeout=10m"])).toEqual([30_000, 600_000]);
    // Without compat the idle time does not follow --response-timeout: the key sets it.
    expect(served(["--response-timeout=30s"])).toEqual([30_000, 120_000]);
  });

  test("the README's table is the table", () => {
    const readme = readFileSync(join(import.meta.dir, "..", "..", "README.md"), "utf8");
    expect(readme).toContain(nginxDefaultsTable());
  });
});
