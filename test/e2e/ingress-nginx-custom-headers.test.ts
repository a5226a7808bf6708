// ingress-nginx's e2e cases for the custom-headers annotation and the add-headers,
// proxy-set-headers and block-* ConfigMap keys, run against the real Portico process
// (--manifests, --nginx-configmap), as test/e2e/ingress-nginx-e2e-audit.test.ts runs the
// others. Each case names its Go file (kubernetes/ingress-nginx test/e2e/, at dbb11b92) and
// the It(...) text; the expected answers are the ones that test asserts, and where it only
// reads nginx.conf, what that configuration does to a request (nginx.tmpl at the same commit).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { rawRequest } from "../proxy/helpers.ts";
import { namedBackend, type RawBackend } from "../proxy/raw.ts";
import { eventually } from "../wait.ts";
import { startPortico, type Portico } from "./harness.ts";
import { ingress, ingressClass, service, slice } from "./objects.ts";

const NGINX = "nginx.ingress.kubernetes.io/";
const configMap = (ns: string, name: string, data: Record<string, string>) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: ns }, data });

// global_access_block.go's UpdateNginxConfigMapData values (Go strings: `\\` is one backslash).
const BLOCKS = {
  "block-user-agents": "~*chrome\\/68\\.0\\.3440\\.106\\ safari\\/537\\.36,AlphaBot",
  "block-referers": "~*example\\.com,qwerty",
};

let dir = "";
let objects: Record<string, unknown>[] = [];
let portico: Portico;
let echo: RawBackend;
let sent = 0;

beforeAll(async () => {
  echo = await namedBackend("echo");
  dir = mkdtempSync(join(tmpdir(), "portico-e2e-cheaders-"));
  objects = [
    ingressClass(),
    service("web", "echo"), slice("web", "echo", [echo.port]),
    service("other", "echo"), slice("other", "echo", [echo.port]),
    // customheaders.go: f.CreateConfigMap("custom-headers", ...) in the test's namespace.
    configMap("web", "custom-headers", { "My-Custom-Header": "42", "My-Custom-Header-Dollar": "$remote_addr" }),
    configMap("ingress-nginx", "ingress-nginx-controller", {
      // customheaders.go: UpdateNginxConfigMapData("global-allowed-response-headers", ...).
      "global-allowed-response-headers": "My-Custom-Header,My-Custom-Header-Dollar",
      ...BLOCKS,
      // custom_header.go's first It; the second is switched to below, live.
      "add-headers": "web/add-headers-configmap",
      "proxy-set-headers": "web/proxy-headers",
    }),
    // custom_header.go: f.CreateConfigMap(cfgMap, h) in the test's namespace.
    configMap("web", "add-headers-configmap", { "X-A-Custom-Header": "customHeaderValue" }),
    configMap("web", "add-headers-configmap-two", { "X-First": "Prepare for trouble!", "X-Second": "And make it double!" }),
    // No upstream e2e case: nginx.tmpl's `proxy_set_header` lines in every location, variables expanded.
    configMap("web", "proxy-headers", { "X-Proxy-Tag": "$remote_addr for $host$request_uri", "X-Dropped": "" }),
    ingress("web", "plain", [{ host: "custom-headers-none", paths: [{ path: "/", service: "echo" }] }]),
    // global_access_block.go: NewSingleIngress(host, "/", host, ...).
    ingress("web", "block", [{ host: "global-access-block", paths: [{ path: "/", service: "echo" }] }]),
    ingress("web", "custom", [{ host: "custom-headers", paths: [{ path: "/", service: "echo" }] }], { annotations: { [`${NGINX}custom-headers`]: "web/custom-headers" } }),
    configMap("web", "not-allowed", { "X-Not-Allowed": "1" }),
    ingress("web", "not-allowed", [{ host: "custom-headers-not-allowed", paths: [{ path: "/", service: "echo" }] }], { annotations: { [`${NGINX}custom-headers`]: "web/not-allowed" } }),
    ingress("other", "elsewhere", [{ host: "custom-headers-elsewhere", paths: [{ path: "/", service: "echo" }] }], { annotations: { [`${NGINX}custom-headers`]: "web/custom-headers" } }),
    // "with an invalid secret": the namespace has no ConfigMap of that name.
    ingress("other", "custom", [{ host: "custom-headers-missing", paths: [{ path: "/", service: "echo" }] }], { annotations: { [`${NGINX}custom-headers`]: "other/custom-headers" } }),
  ];
  writeFileSync(join(dir, "all.yaml"), objects.map((o) => JSON.stringify(o)).join("\n---\n"));
  portico = await startPortico(["--manifests", dir, "--nginx-configmap", "ingress-nginx/ingress-nginx-controller", "--ingress-nginx-compat", "--ingress-class", "portico", "--controller-name", "portico.dev/ingress-controller"]);
});

afterAll(async () => {
  await portico?.stop();
  await echo?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

interface Outcome {
  readonly status: number;
  readonly head: string;
  readonly body: string;
  readonly upstream: string | null;
}

async function send(host: string, headers: Record<string, string> = {}, target = "/"): Promise<Outcome> {
  const id = `cheaders-${++sent}`;
  const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("");
  const raw = await rawRequest(portico.ports.http, `GET ${target} HTTP/1.1\r\nHost: ${host}\r\nX-Request-ID: ${id}\r\n${extra}Connection: close\r\n\r\n`, 20_000);
  const end = raw.indexOf("\r\n\r\n");
  const hits = echo.hits.filter((h) => field(h.head, "x-request-id") === id);
  expect(hits.length).toBeLessThanOrEqual(1);
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1] ?? 0), head: raw.slice(0, end), body: raw.slice(end + 4), upstream: hits[0]?.head ?? null };
}

/** A field of a head (case-insensitive name), or null; at most one may be present. */
function field(head: string, name: string): string | null {
  const hits = head.split("\r\n").slice(1).filter((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`));
  expect(hits.length).toBeLessThanOrEqual(1);
  return hits[0] === undefined ? null : hits[0].slice(name.length + 1).trim();
}

describe("annotations/customheaders.go", () => {
  test("should return status code 200 when no custom-headers is configured", async () => {
    const out = await send("custom-headers-none");
    expect(out.status).toBe(200);
    expect(field(out.upstream as string, "host")).toBe("custom-headers-none");
    expect(field(out.head, "my-custom-header")).toBeNull();
  });

  test("should return status code 503 when custom-headers is configured with an invalid secret", async () => {
    // customheaders/main.go: GetConfigMap fails, NewLocationDenied: the location answers 503.
    const out = await send("custom-headers-missing");
    expect(out.status).toBe(503);
    expect(out.body).toContain("503 Service Temporarily Unavailable");
    expect(out.upstream).toBeNull();
  });

  test(`should set "more_set_headers 'My-Custom-Header' '42';" when custom-headers are set`, async () => {
    const out = await send("custom-headers");
    expect(out.status).toBe(200);
    expect(field(out.head, "my-custom-header")).toBe("42");
    // nginx.tmpl escapeLiteralDollar: the value is sent as written, not expanded.
    expect(field(out.head, "my-custom-header-dollar")).toBe("$remote_addr");
    expect(out.upstream).not.toBeNull();
  });
});

/** Writes the manifests again (a live ConfigMap edit, as UpdateNginxConfigMapData). */
const rewrite = () => writeFileSync(join(dir, "all.yaml"), objects.map((o) => JSON.stringify(o)).join("\n---\n"));
const controllerData = () => (objects.find((o) => (o.metadata as { name: string }).name === "ingress-nginx-controller") as { data: Record<string, string> }).data;

describe("settings/custom_header.go", () => {
  test("Add a custom header", async () => {
    const out = await send("custom-headers-none");
    expect(out.status).toBe(200);
    expect(field(out.head, "x-a-custom-header")).toBe("customHeaderValue");
    // more_set_headers in the http block: every answer, the catch-all server's 404 too.
    const none = await send("no-such-host");
    expect(none.status).toBe(404);
    expect(field(none.head, "x-a-custom-header")).toBe("customHeaderValue");
    // An answer given before the route step (a request line past nginx's 8k buffer, admit.ts):
    // every answer carries add-headers (docs/design.md, "ingress-nginx's ConfigMap").
    const long = await send("custom-headers-none", {}, `/${"a".repeat(8300)}`);
    expect(long.status).toBe(414);
    expect(field(long.head, "x-a-custom-header")).toBe("customHeaderValue");
  });

  test("Add multiple custom headers", async () => {
    controllerData()["add-headers"] = "web/add-headers-configmap-two";
    rewrite();
    await eventually(async () => field((await send("custom-headers-none")).head, "x-first") !== null, 20_000, "add-headers switched");
    const out = await send("custom-headers-none");
    expect(out.status).toBe(200);
    expect(field(out.head, "x-first")).toBe("Prepare for trouble!");
    expect(field(out.head, "x-second")).toBe("And make it double!");
    expect(field(out.head, "x-a-custom-header")).toBeNull();
  });
});

describe("proxy-set-headers (nginx.tmpl proxy_set_header in every location)", () => {
  test("each entry replaces the client's field on the request to the pod, variables expanded; an empty value sends none", async () => {
    const out = await send("custom-headers-none", { "X-Proxy-Tag": "from-client", "X-Dropped": "from-client" }, "/p?q=1");
    expect(out.status).toBe(200);
    const up = out.upstream as string;
    expect(field(up, "x-proxy-tag")).toBe("127.0.0.1 for custom-headers-none/p?q=1");
    expect(field(up, "x-dropped")).toBeNull();
    // An edit of the named ConfigMap applies at once (ingress-nginx: at its next reload).
    (objects.find((o) => (o.metadata as { name: string }).name === "proxy-headers") as { data: Record<string, string> }).data["X-Proxy-Tag"] = "v2";
    rewrite();
    await eventually(async () => field((await send("custom-headers-none")).upstream ?? "", "x-proxy-tag") === "v2", 20_000, "proxy-set-headers ConfigMap edited");
  });
});

describe("custom-headers: what else denies the location", () => {
  test("a header not listed in global-allowed-response-headers: 503 (customheaders/main.go), nothing reaches the pod", async () => {
    const out = await send("custom-headers-not-allowed");
    expect(out.status).toBe(503);
    expect(out.upstream).toBeNull();
  });

  test("a ConfigMap of another namespace: 503 (ingress-nginx's documentation allows the Ingress's own only)", async () => {
    const out = await send("custom-headers-elsewhere");
    expect(out.status).toBe(503);
    expect(out.upstream).toBeNull();
  });
});

describe("settings/global_access_block.go", () => {
  const CHROME_68 = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/68.0.3440.106 Safari/537.36";
  const IPHONE = "Mozilla/5.0 (iPhone; CPU iPhone OS 11_4_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/11.0 Mobile/15E148 Safari/604.1";

  test("should block User-Agents defined in the ConfigMap", async () => {
    // `map $http_user_agent $block_ua`: `~*` is a caseless regex, a bare entry an exact value.
    for (const ua of [CHROME_68, "AlphaBot"]) {
      const out = await send("global-access-block", { "User-Agent": ua });
      expect(out.status).toBe(403);
      expect(out.upstream).toBeNull();
    }
    // Exact map keys are compared without regard to case (ngx_http_map_find lowercases).
    expect((await send("global-access-block", { "User-Agent": "alphabot" })).status).toBe(403);
    // nginx.tmpl writes the `if ($block_ua)` into every server, the catch-all one too.
    expect((await send("no-such-host", { "User-Agent": "AlphaBot" })).status).toBe(403);
    expect((await send("no-such-host")).status).toBe(404);
    const ok = await send("global-access-block", { "User-Agent": IPHONE });
    expect(ok.status).toBe(200);
    expect(field(ok.upstream as string, "user-agent")).toBe(IPHONE);
    // Not a prefix match: AlphaBot is an exact value.
    expect((await send("global-access-block", { "User-Agent": "AlphaBot/2" })).status).toBe(200);
  });

  test("should block Referers defined in the ConfigMap", async () => {
    for (const referer of ["example.com", "qwerty"]) {
      const out = await send("global-access-block", { Referer: referer });
      expect(out.status).toBe(403);
      expect(out.upstream).toBeNull();
    }
    // The regex is unanchored: any Referer holding example.com, in any case.
    expect((await send("global-access-block", { Referer: "https://www.EXAMPLE.com/page" })).status).toBe(403);
    const ok = await send("global-access-block", { Referer: "qwerty123" });
    expect(ok.status).toBe(200);
    expect(field(ok.upstream as string, "referer")).toBe("qwerty123");
  });

  // Last: it blocks this client (127.0.0.1) from every host of the process.
  test("should block CIDRs defined in the ConfigMap", async () => {
    expect((await send("global-access-block")).status).toBe(200);
    // UpdateNginxConfigMapData("block-cidrs", ...): the Go test's client is inside one of these
    // cluster ranges; this one connects from loopback, so 127.0.0.0/8 joins them. A live change,
    // as the Go test's: the ConfigMap is rewritten in the --manifests file.
    controllerData()["block-cidrs"] = "172.16.0.0/12,192.168.0.0/16,10.0.0.0/8,127.0.0.0/8";
    rewrite();
    await eventually(async () => (await send("global-access-block")).status === 403, 20_000, "block-cidrs applied");
    const out = await send("global-access-block");
    expect(out.status).toBe(403);
    expect(out.upstream).toBeNull();
    // Every host, whatever its Ingress says.
    expect((await send("custom-headers")).status).toBe(403);
  });
});
