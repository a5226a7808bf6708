// The access log as ingress-nginx users turn it off, through the real process from
// --manifests: the annotation enable-access-log: "false" (ingress-nginx
// internal/ingress/annotations/log/main.go; nginx.tmpl writes `access_log off;` into the
// Ingress's locations, test/e2e/annotations/log.go "set access_log off") and the ConfigMap's
// disable-access-log / disable-http-access-log (nginx.tmpl `{{ if or $cfg.DisableAccessLog
// $cfg.DisableHTTPAccessLog }} access_log off;` in the http block,
// test/e2e/annotations/disableaccesslog.go), ingress-nginx at dbb11b92. Requests still answer
// 200; only the line is gone.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { rawBackend, type RawBackend } from "../proxy/raw.ts";
import { configMapManifests, get, startPortico, type ConfigMapManifests, type Portico } from "./harness.ts";
import { ingress, ingressClass, service, slice, yamlDocs } from "./objects.ts";

const N = "nginx.ingress.kubernetes.io/";

/** The access-log lines (JSON with a request_id) among the process's output. */
function accessLines(p: Portico): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  for (const l of p.lines) {
    if (!l.startsWith("{")) continue;
    try {
      const o = JSON.parse(l) as Record<string, unknown>;
      if (typeof o.request_id === "string" && typeof o.status === "number") out.push(o);
    } catch {}
  }
  return out;
}

let backend: RawBackend;
beforeAll(async () => {
  backend = await rawBackend();
});
afterAll(async () => {
  await backend?.stop();
});

const objects = (annotations: Record<string, string>) => [
  ingressClass(),
  service("shop", "web"),
  slice("shop", "web", [backend.port]),
  ingress("shop", "quiet", [{ host: "quiet.test", paths: [{ path: "/", service: "web" }] }], { annotations }),
  ingress("shop", "loud", [{ host: "loud.test", paths: [{ path: "/", service: "web" }] }]),
];

describe("enable-access-log per Ingress", () => {
  let dir: string;
  let portico: Portico;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "portico-access-log-"));
    writeFileSync(join(dir, "all.yaml"), yamlDocs(objects({ [`${N}enable-access-log`]: "false" })));
    // Two workers: the route setting crosses to them with the table (table/wire.ts).
    portico = await startPortico(["--manifests", dir, "--workers", "2"]);
  });
  afterAll(async () => {
    await portico?.stop("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  test('"false": a request to that Ingress writes no line; a request to another Ingress still does', async () => {
    expect((await get(portico.http, "quiet.test", "/quiet-1")).status).toBe(200);
    expect((await get(portico.http, "loud.test", "/loud-1")).status).toBe(200);
    await portico.waitForLine(/"path":"\/loud-1"/);
    // SIGTERM drains every worker and flushes its access log before the process exits: every
    // line that would be written is out by then (the sequence point for the absence).
    expect(await portico.stop("SIGTERM")).toBe(0);
    const paths = accessLines(portico).map((l) => `${l.host as string}${l.path as string}`);
    expect(paths).toContain("loud.test/loud-1");
    expect(paths.filter((p) => p.startsWith("quiet.test"))).toEqual([]);
    // Both reached the pod: only the line is gone.
    expect(backend.lines().filter((l) => l.includes("/quiet-1") || l.includes("/loud-1"))).toEqual(["GET /quiet-1 HTTP/1.1", "GET /loud-1 HTTP/1.1"]);
  });
});

for (const key of ["disable-access-log", "disable-http-access-log"]) {
  describe(`ConfigMap ${key}: "true"`, () => {
    let m: ConfigMapManifests;
    let portico: Portico;
    beforeAll(async () => {
      m = configMapManifests("portico-access-log-cm-");
      m.writeObjects(yamlDocs(objects({})));
      m.writeConfigMap({ [key]: "true" });
      portico = await startPortico([...m.args]);
    });
    afterAll(async () => {
      await portico?.stop("SIGKILL");
      m?.remove();
    });

    test("requests answer 200 and no access-log line is written", async () => {
      expect((await get(portico.http, "loud.test", `/${key}`)).status).toBe(200);
      // SIGTERM drains and flushes the access log before the process exits: every line it
      // would have written is out by then.
      expect(await portico.stop("SIGTERM")).toBe(0);
      expect(accessLines(portico)).toEqual([]);
    });
  });
}

// disable-stream-access-log turns off nginx's stream block log only (tcp-services and
// udp-services, which Portico does not proxy): HTTP requests are still logged.
describe('ConfigMap disable-stream-access-log: "true"', () => {
  let m: ConfigMapManifests;
  let portico: Portico;
  beforeAll(async () => {
    m = configMapManifests("portico-access-log-stream-");
    m.writeObjects(yamlDocs(objects({})));
    m.writeConfigMap({ "disable-stream-access-log": "true" });
    portico = await startPortico([...m.args]);
  });
  afterAll(async () => {
    await portico?.stop("SIGKILL");
    m?.remove();
  });

  test("requests answer 200 and are still logged", async () => {
    expect((await get(portico.http, "loud.test", "/stream-off")).status).toBe(200);
    await portico.waitForLine(/"path":"\/stream-off"/);
    expect(accessLines(portico).map((l) => [l.host, l.path, l.status])).toEqual([["loud.test", "/stream-off", 200]]);
    // On main the key was reported as not honoured (UnsupportedConfigKey); it is the same now.
    expect(portico.lines.filter((l) => l.includes("UnsupportedConfigKey"))).toEqual([]);
  });
});

// settings/log-format.go, "Check log-format-upstream with log-format-escape-json and
// log-format-escape-none": the ConfigMap's format (the Go test's value, quotes included), one
// request with a header holding double quotes, and the line ingress-nginx writes for it
// (assert.Contains on its log; here the whole line). Each mode is a process of its own: the
// access log's format is read at start.
const LOG_FORMAT_CASES = [
  {
    it: "log-format-escape-json enabled",
    data: { "log-format-escape-json": "true", "log-format-upstream": '"{"my_header1":"$http_header1", "my_header2":"$http_header2"}"' },
    header: ["header1", 'Here is "header1" with json escape'],
    line: '"{"my_header1":"Here is \\"header1\\" with json escape", "my_header2":""}"',
  },
  {
    it: "log-format default escape",
    data: { "log-format-escape-json": "false", "log-format-upstream": '"{"my_header3":"$http_header3", "my_header4":"$http_header4"}"' },
    header: ["header3", 'Here is "header3" with default escape'],
    line: '"{"my_header3":"Here is \\x22header3\\x22 with default escape", "my_header4":"-"}"',
  },
  {
    it: "log-format-escape-none enabled",
    data: { "log-format-escape-none": "true", "log-format-upstream": '"{"my_header5":"$http_header5", "my_header6":"$http_header6"}"' },
    header: ["header5", 'Here is "header5" with none escape'],
    line: '"{"my_header5":"Here is "header5" with none escape", "my_header6":""}"',
  },
] as const;

for (const c of LOG_FORMAT_CASES) {
  describe(`ConfigMap log-format-upstream: ${c.it}`, () => {
    let m: ConfigMapManifests;
    let portico: Portico;
    beforeAll(async () => {
      m = configMapManifests("portico-log-format-");
      m.writeObjects(yamlDocs(objects({})));
      m.writeConfigMap({ ...c.data });
      portico = await startPortico([...m.args]);
    });
    afterAll(async () => {
      await portico?.stop("SIGKILL");
      m?.remove();
    });

    test("the request's line is the format with the header's value escaped as nginx escapes it", async () => {
      const [name, value] = c.header;
      expect((await get(portico.http, "loud.test", "/", { headers: { [name]: value } })).status).toBe(200);
      const line = await portico.waitForLine(/^"\{"my_header/);
      expect(line).toBe(c.line);
      // Portico's own JSON fields are not written beside it.
      expect(accessLines(portico)).toEqual([]);
    });
  });
}

// ingress-nginx's own default format (config.go logFormatUpstream), set explicitly: every
// variable it names, for one request through the real process, here with two workers (each
// gets the ConfigMap's flags in its environment, and writes the line itself).
describe("ConfigMap log-format-upstream: ingress-nginx's default format", () => {
  const FORMAT =
    '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" $request_length $request_time [$proxy_upstream_name] [$proxy_alternative_upstream_name] $upstream_addr $upstream_response_length $upstream_response_time $upstream_status $req_id';
  let m: ConfigMapManifests;
  let portico: Portico;
  beforeAll(async () => {
    m = configMapManifests("portico-log-format-default-");
    m.writeObjects(yamlDocs(objects({})));
    m.writeConfigMap({ "log-format-upstream": FORMAT });
    portico = await startPortico([...m.args, "--workers", "2"]);
  });
  afterAll(async () => {
    await portico?.stop("SIGKILL");
    m?.remove();
  });

  test("one request: every field as nginx writes it", async () => {
    const res = await fetch(`${portico.http}/shop/a%20b?x=1&y`, {
      headers: { host: "loud.test", "user-agent": "curl/8.5.0", authorization: `Basic ${Buffer.from("alice:pw").toString("base64")}`, "x-request-id": "abc-123" },
    });
    expect(res.status).toBe(200);
    await res.text();
    const line = await portico.waitForLine(/^127\.0\.0\.1 - alice /);
    const m = /^127\.0\.0\.1 - alice \[(\d\d\/[A-Z][a-z]{2}\/\d{4}:\d\d:\d\d:\d\d \+0000)\] "GET \/shop\/a%20b\?x=1&y HTTP\/1\.1" 200 2 "-" "curl\/8\.5\.0" (\d+) (\d+\.\d{3}) \[shop-web-80\] \[\] 127\.0\.0\.1:(\d+) 2 (\d+\.\d{3}) 200 abc-123$/.exec(line);
    expect(m, line).not.toBeNull();
    expect(Number(m![4])).toBe(backend.port);
    // The request line, the fields Bun's fetch sends and this test's own, and no body.
    expect(Number(m![2])).toBeGreaterThan(100);
  });
});
