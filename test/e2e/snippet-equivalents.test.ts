// The snippet equivalents `portico migrate` prints, applied and served by the real process:
// an Ingress whose server-snippet and configuration-snippet hold the patterns teams use, run
// through `portico migrate --output json`; then the Ingress without its snippets, with the
// annotations the report names and the companion Ingresses it writes, served from
// --manifests. Each request gets the answer nginx gave the original snippet, and a raw
// backend shows what reaches the pod.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CompanionIngress, MigrationReport } from "../../src/compile/migrate.ts";
import { rawBackend, type RawBackend } from "../proxy/raw.ts";
import { get, startPortico, waitReady, type Portico } from "./harness.ts";
import { ingress, service, slice, yamlDocs } from "./objects.ts";

const N = "nginx.ingress.kubernetes.io/";
const ROOT = join(import.meta.dir, "..", "..");

const SERVER_SNIPPET = [
  // nginx: a regex location of the server block is tried before the generated prefix
  // locations (ngx_http_core_module "location"), and `deny all` answers 403
  // (ngx_http_access_module); `~*` is case-insensitive.
  "location ~* ^/internal/ { deny all; }",
  // `=` is an exact match that ends the search; `return 301 URL` sends it as Location.
  "location = /old { return 301 https://new.example.com/page; }",
  // A server-level rewrite runs before any location; `permanent` answers 301 with the
  // replacement made absolute from the request's scheme and Host (absolute_redirect on).
  "rewrite ^/feed$ /rss.xml permanent;",
].join("\n");

const CONFIGURATION_SNIPPET = [
  // Inside the location: the URI is rewritten and proxied to the same backend, arguments kept
  // (ngx_http_rewrite_module `break`).
  "rewrite ^/legacy/(.*)$ /v2/$1 break;",
  'more_set_headers "X-Frame-Options: DENY";',
  "proxy_set_header X-Tenant acme;",
  // The rewrite phase's `if`: `~*` is a case-insensitive PCRE match of the header's value
  // ($http_user_agent: empty when absent), `return 403` answers at once (ngx_http_rewrite_module).
  'if ($http_user_agent ~* "(bot|crawler)") { return 403; }',
];

const original = (annotations: Record<string, string>) =>
  ingress("web", "blog", [{ host: "blog.test", paths: [{ path: "/", service: "app" }] }], { className: "nginx", annotations });

// A moved site: `return 301 URL` in the location answers every request with that Location,
// the query not appended (ngx_http_rewrite_module "return"); `add_header … always` adds the
// field to every answer, the redirect included (ngx_http_headers_module).
const MOVED_SNIPPET = 'return 301 https://www.example.com/;\nadd_header X-Moved "yes" always;';
const moved = (annotations: Record<string, string>) =>
  ingress("web", "moved", [{ host: "old.test", paths: [{ path: "/", service: "app" }] }], { className: "nginx", annotations });

const run = (args: string[]) => {
  const r = Bun.spawnSync([process.execPath, join(ROOT, "src", "main.ts"), ...args], { stdin: "ignore", env: { ...process.env, PORTICO_HTTP_PORT: "" } });
  return { code: r.exitCode, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
};

let before: string;
let served: string;
let backend: RawBackend;
let portico: Portico;
let report: MigrationReport;
let companions: CompanionIngress[];
let text: string;

beforeAll(async () => {
  backend = await rawBackend();
  before = mkdtempSync(join(tmpdir(), "portico-snippets-"));
  served = mkdtempSync(join(tmpdir(), "portico-snippets-"));
  const base = [service("web", "app"), slice("web", "app", [backend.port])];
  writeFileSync(
    join(before, "all.yaml"),
    yamlDocs([
      ...base,
      original({ [`${N}server-snippet`]: SERVER_SNIPPET, [`${N}configuration-snippet`]: CONFIGURATION_SNIPPET.join("\n") }),
      moved({ [`${N}configuration-snippet`]: MOVED_SNIPPET }),
    ]),
  );
  const json = run(["migrate", "--manifests", before, "--output", "json"]);
  report = JSON.parse(json.stdout) as MigrationReport;
  text = run(["migrate", "--manifests", before]).stdout;
  // What the report says to do: add the annotations it names, apply the Ingresses it writes,
  // remove the snippets.
  const snippetsOf = (key: string) => report.ingresses.find((i) => i.ingress === key)!.annotations.filter((a) => a.snippet !== undefined);
  const added = (key: string) => Object.fromEntries(snippetsOf(key).flatMap((a) => a.snippet!.instead.map((s) => [s.annotation, s.value])));
  companions = [...snippetsOf("web/blog"), ...snippetsOf("web/moved")].flatMap((a) => [...a.snippet!.companions]);
  writeFileSync(
    join(served, "all.yaml"),
    yamlDocs([...base, original(added("web/blog")), moved(added("web/moved")), ...companions.map((c) => c.manifest as Record<string, unknown>)]),
  );
  portico = await startPortico(["--manifests", served, "--ingress-nginx-compat", "--access-log", "off"]);
  await waitReady(portico);
});

afterAll(async () => {
  await portico?.stop("SIGKILL");
  await backend?.stop();
  for (const d of [before, served]) if (d) rmSync(d, { recursive: true, force: true });
});

describe("the report", () => {
  test("understands every directive and writes one companion Ingress per location or rewrite", () => {
    const i = report.ingresses.find((x) => x.ingress === "web/blog")!;
    const m = report.ingresses.find((x) => x.ingress === "web/moved")!;
    expect(m.annotations[0]!.snippet!.directives[1]!.note).toContain("its own answers (redirects, errors) do not carry it");
    // Still refused while the snippets are set: nothing is served unchecked meanwhile.
    expect(i.status).toBe("refused");
    for (const a of i.annotations) expect(a.snippet?.notUnderstood, a.name).toBe(0);
    expect(companions.map((c) => c.name)).toEqual(["blog-configuration-snippet-1", "blog-server-snippet-1", "blog-server-snippet-2", "blog-server-snippet-3"]);
    expect(companions.map((c) => (c.manifest as { metadata: { annotations: unknown } }).metadata.annotations)).toEqual([
      // The rewritten request reaches the pod through it: it carries the header annotations too.
      {
        [`${N}use-regex`]: "true",
        [`${N}rewrite-target`]: "/v2/$1",
        "portico.dev/request-headers": "X-Tenant: acme",
        "portico.dev/response-headers": "X-Frame-Options: DENY",
        "portico.dev/deny-request-headers": "User-Agent ~* (bot|crawler)",
      },
      { [`${N}use-regex`]: "true", [`${N}denylist-source-range`]: "0.0.0.0/0,::/0" },
      // The host is in regex mode (the other companions): an exact path is written `<path>$`.
      { [`${N}use-regex`]: "true", [`${N}permanent-redirect`]: "https://new.example.com/page" },
      { [`${N}use-regex`]: "true", [`${N}permanent-redirect`]: "/rss.xml" },
    ]);
    // The text report prints them as YAML to apply.
    expect(text).toContain("      and apply (then remove the snippet):\n        # blog-server-snippet-1: for location ~* ^/internal/ { … }\n        ---\n        apiVersion: networking.k8s.io/v1\n        kind: Ingress\n");
  });
});

describe("the applied equivalents answer as nginx answered the snippets", () => {
  test("location ~* ^/internal/ { deny all; }: 403 in any case, never at the pod", async () => {
    const n = backend.hits.length;
    expect((await get(portico.http, "blog.test", "/internal/metrics")).status).toBe(403);
    expect((await get(portico.http, "blog.test", "/INTERNAL/metrics")).status).toBe(403);
    expect(backend.hits.length).toBe(n);
  });

  test("location = /old { return 301 URL; }: the exact path only", async () => {
    const r = await get(portico.http, "blog.test", "/old");
    expect(r.status).toBe(301);
    expect(r.headers.get("location")).toBe("https://new.example.com/page");
    // `/older` is no exact match: it reaches the pod unchanged.
    expect((await get(portico.http, "blog.test", "/older")).status).toBe(200);
    expect(backend.lines().at(-1)).toBe("GET /older HTTP/1.1");
  });

  test("rewrite ^/feed$ /rss.xml permanent: 301 to the absolute URL", async () => {
    const r = await get(portico.http, "blog.test", "/feed");
    expect(r.status).toBe(301);
    expect(r.headers.get("location")).toBe("http://blog.test/rss.xml");
  });

  test("rewrite … break, more_set_headers, proxy_set_header: what reaches the pod, what the client gets", async () => {
    const r = await get(portico.http, "blog.test", "/legacy/a/b?x=1");
    expect(r.status).toBe(200);
    expect(r.headers.get("x-frame-options")).toBe("DENY");
    const hit = backend.hits.at(-1)!;
    expect(hit.line).toBe("GET /v2/a/b?x=1 HTTP/1.1");
    expect(hit.head).toMatch(/\r\nx-tenant: acme\r\n/i);
    // Every other path of the Ingress, as before.
    const other = await get(portico.http, "blog.test", "/posts/1");
    expect(other.status).toBe(200);
    expect(other.headers.get("x-frame-options")).toBe("DENY");
    expect(backend.hits.at(-1)!.line).toBe("GET /posts/1 HTTP/1.1");
    expect(backend.hits.at(-1)!.head).toMatch(/\r\nx-tenant: acme\r\n/i);
  });

  test("return 301 URL: every path redirects, the query left out (add_header … always is the stated difference)", async () => {
    const n = backend.hits.length;
    for (const path of ["/", "/a/b?x=1"]) {
      const r = await get(portico.http, "old.test", path);
      expect(r.status, path).toBe(301);
      expect(r.headers.get("location"), path).toBe("https://www.example.com/");
      // nginx's `always` put X-Moved on this 301 too; portico.dev/response-headers is set on
      // relayed answers only, as the report's note on the directive says.
      expect(r.headers.get("x-moved"), path).toBeNull();
    }
    expect(backend.hits.length).toBe(n);
  });

  test("if ($http_user_agent ~* \"(bot|crawler)\") { return 403; }: on every path, the rewritten ones too", async () => {
    const n = backend.hits.length;
    for (const [path, ua] of [["/posts/1", "Googlebot/2.1"], ["/posts/1", "SOME-CRAWLER"], ["/legacy/x", "bingbot"]] as const) {
      expect((await get(portico.http, "blog.test", path, { headers: { "user-agent": ua } })).status, `${path} ${ua}`).toBe(403);
    }
    expect(backend.hits.length).toBe(n);
    expect((await get(portico.http, "blog.test", "/posts/1", { headers: { "user-agent": "Mozilla/5.0" } })).status).toBe(200);
    expect(backend.hits.at(-1)!.head).toMatch(/\r\nuser-agent: Mozilla\/5\.0\r\n/i);
  });
});
