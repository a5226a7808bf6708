// The migration report: the fixtures' report as checked in, and the rules it follows, each on a
// small snapshot compiled by the real compiler.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { GUARDS_ACCESS, NOT_IMPLEMENTED } from "../../src/annotations/not-implemented.ts";
import { IMPLEMENTED } from "../../src/annotations/registry.ts";
import { compatOf } from "../../src/annotations/spec.ts";
import { Compiler } from "../../src/compile/compile.ts";
import { compatCounts, migrationReport, type IngressReport, type MigrationReport } from "../../src/compile/migrate.ts";
import { parseArgs } from "../../src/config/parse.ts";
import type { Config } from "../../src/config/types.ts";
import { loadFixture } from "../compile/snapshot.ts";
import { silentLogger } from "../../src/log/logger.ts";
import { loadOnce } from "../../src/runtime/load.ts";
import { expectedReport, MIGRATE_EXPECTED, MIGRATE_MANIFESTS } from "./expected.ts";

const parsed = parseArgs(["migrate"], {});
if (parsed.type !== "migrate") throw new Error("migrate flags");
const config: Config = parsed.config;

/** One Ingress of class nginx per entry, with these annotations and a Service with an endpoint. */
function reportOf(ingresses: { name: string; annotations?: Record<string, string>; path?: string; tls?: boolean | "secret-only"; service?: string }[], extra = ""): MigrationReport {
  const docs = ingresses.map((i) =>
    JSON.stringify({
      apiVersion: "networking.k8s.io/v1",
      kind: "Ingress",
      metadata: { name: i.name, namespace: "t", annotations: i.annotations ?? {} },
      spec: {
        ingressClassName: "nginx",
        ...(i.tls === "secret-only" ? { tls: [{ secretName: "s" }] } : i.tls ? { tls: [{ hosts: [`${i.name}.test`], secretName: "s" }] } : {}),
        rules: [{ host: `${i.name}.test`, http: { paths: [{ path: i.path ?? "/", pathType: "Prefix", backend: { service: { name: i.service ?? "web", port: { number: 80 } } } }] } }],
      },
    }),
  );
  const web = [
    { apiVersion: "v1", kind: "Service", metadata: { name: "web", namespace: "t" }, spec: { ports: [{ port: 80 }] } },
    { apiVersion: "discovery.k8s.io/v1", kind: "EndpointSlice", metadata: { name: "web-1", namespace: "t", labels: { "kubernetes.io/service-name": "web" } }, addressType: "IPv4", ports: [{ port: 8080 }], endpoints: [{ addresses: ["10.0.0.1"], conditions: { ready: true } }] },
  ].map((o) => JSON.stringify(o));
  const fx = loadFixture([...docs, ...web, extra].filter((d) => d !== "").join("\n---\n"));
  return migrationReport(new Compiler(config).inspect(fx.snapshot, []), config);
}

const one = (annotations: Record<string, string>, opts: { path?: string; tls?: boolean | "secret-only"; service?: string } = {}): IngressReport => reportOf([{ name: "a", annotations, ...opts }]).ingresses[0]!;

describe("the fixtures' report", () => {
  test("is the checked-in one (regenerate: bun scripts/migrate-report.ts --write, then review the diff)", async () => {
    const now = await expectedReport();
    expect(now.text).toBe(readFileSync(MIGRATE_EXPECTED.text, "utf8"));
    expect(now.json).toBe(readFileSync(MIGRATE_EXPECTED.json, "utf8"));
  });

  test("the live metric's counts (compatCounts) are the summary's", async () => {
    const report = JSON.parse(readFileSync(MIGRATE_EXPECTED.json, "utf8")) as MigrationReport;
    const o = parseArgs(["migrate", "--manifests", MIGRATE_MANIFESTS], {});
    if (o.type !== "migrate") throw new Error("flags");
    const { snapshot } = await loadOnce(o.config, { log: silentLogger, quiet: silentLogger });
    const s = report.summary;
    expect(compatCounts(new Compiler(o.config).inspect(snapshot, []))).toEqual({ unchanged: s.unchanged, differs: s.differs, "partly-served": s.partlyServed, refused: s.refused });
    expect(s.unchanged + s.differs + s.partlyServed + s.refused).toBe(s.ingresses);
  });
});

describe("statuses follow the registry at run time", () => {
  test("every not-implemented ingress-nginx annotation is not served, and says what ingress-nginx did", () => {
    for (const a of NOT_IMPLEMENTED) {
      const name = a.nginx[0]!;
      if (name.endsWith("-snippet")) continue; // snippets have their own reading (below)
      const r = one({ [name]: "x" });
      const item = r.annotations.find((i) => i.name === name)!;
      expect(item.status, name).toBe("not-served");
      expect(item.text, name).toContain(a.description);
      // One that guards access refuses the whole Ingress rather than serve it unchecked.
      expect(r.status, name).toBe(GUARDS_ACCESS.has(name) ? "refused" : "partly-served");
    }
  });

  test("every implemented ingress-nginx name is served the same or with the registry's difference", () => {
    for (const a of IMPLEMENTED) {
      for (const name of a.nginx) {
        if (a.compat.kind !== "same" && a.compat.kind !== "differs") continue;
        // A valid value per family is beyond this test: an invalid one must still say "differs".
        const item = one({ [name]: "1" }).annotations.find((i) => i.name === name)!;
        if (item.text.startsWith("Portico refuses the value")) expect(item.status).toBe("differs");
        else {
          // The compat of this value: a family may call some values of a differing annotation the same.
          const c = compatOf(a, "1", { [name]: "1" });
          if (c.kind === "same") expect(item).toMatchObject({ status: "same", text: "served the same" });
          else expect(item).toMatchObject({ status: "differs", text: c.kind === "differs" ? c.difference : "" });
        }
      }
    }
  });

  test("the proxy-ssl-* annotations are served, no longer reported unsupported", () => {
    const r = one({ "nginx.ingress.kubernetes.io/proxy-ssl-secret": "default/upstream", "nginx.ingress.kubernetes.io/proxy-ssl-verify": "on", "nginx.ingress.kubernetes.io/proxy-ssl-protocols": "TLSv1.3" });
    expect(r.annotations.map((a) => [a.name.slice("nginx.ingress.kubernetes.io/".length), a.status])).toEqual([["proxy-ssl-protocols", "same"], ["proxy-ssl-secret", "differs"], ["proxy-ssl-verify", "same"]]);
  });

  test("ssl-ciphers and ssl-prefer-server-ciphers are served, no longer reported unsupported", () => {
    const N = "nginx.ingress.kubernetes.io/";
    const r = one({ [`${N}ssl-ciphers`]: "ECDHE-RSA-AES256-GCM-SHA384", [`${N}ssl-prefer-server-ciphers`]: "true" });
    expect(r.annotations.map((a) => [a.name.slice(N.length), a.status])).toEqual([["ssl-ciphers", "differs"], ["ssl-prefer-server-ciphers", "same"]]);
    // false cannot apply per host: refused, the server's order stays.
    const off = one({ [`${N}ssl-prefer-server-ciphers`]: "false" });
    expect(off.annotations.map((a) => [a.name.slice(N.length), a.status])).toEqual([["ssl-prefer-server-ciphers", "differs"]]);
    expect(JSON.stringify([r, off])).not.toContain("not supported by Portico");
  });

  // ngx_http_upstream.c ngx_http_upstream_send_response: `r->limit_rate = 0` for an unbuffered
  // answer (proxy_buffering off, ingress-nginx's default), so limit-rate alone paces nothing.
  test("limit-rate on an Ingress whose answers are unbuffered is reported as having no effect there", () => {
    const N = "nginx.ingress.kubernetes.io/";
    const NOTE = "as in ingress-nginx, limit-rate paces only buffered answers: set proxy-buffering: on";
    for (const extra of [{}, { [`${N}proxy-buffering`]: "off" }] as Record<string, string>[]) {
      const r = one({ ...extra, [`${N}limit-rate`]: "90", [`${N}limit-rate-after`]: "10" });
      for (const name of ["limit-rate", "limit-rate-after"]) {
        const a = r.annotations.find((x) => x.name === `${N}${name}`)!;
        expect(a.status).toBe("differs");
        expect(a.text).toStartWith("No effect on answers that are not buffered");
        expect(a.text).toContain(NOTE);
      }
    }
    const on = one({ [`${N}proxy-buffering`]: "on", [`${N}limit-rate`]: "90" }).annotations.find((x) => x.name === `${N}limit-rate`)!;
    expect(on.status).toBe("differs");
    expect(on.text).not.toContain(NOTE);
    expect(on.text).toContain("sent chunked");
  });

  test("enable-access-log, connection-proxy-header, limit-rate and limit-rate-after are served, no longer reported unsupported", () => {
    const N = "nginx.ingress.kubernetes.io/";
    const r = one({ [`${N}enable-access-log`]: "false", [`${N}connection-proxy-header`]: "keep-alive", [`${N}limit-rate`]: "90", [`${N}limit-rate-after`]: "10" });
    expect(r.annotations.map((a) => [a.name.slice(N.length), a.status])).toEqual([
      ["connection-proxy-header", "same"], ["enable-access-log", "same"], ["limit-rate", "differs"], ["limit-rate-after", "differs"],
    ]);
    expect(r.status).toBe("differs");
    // 0 is no limit in both.
    expect(one({ [`${N}limit-rate`]: "0" }).status).toBe("unchanged");
    expect(JSON.stringify(r)).not.toContain("not supported by Portico");
  });

  test("satisfy and the mirror annotations are served, no longer reported unsupported", () => {
    const r = one({ "nginx.ingress.kubernetes.io/satisfy": "any", "nginx.ingress.kubernetes.io/allowlist-source-range": "10.0.0.0/8" });
    expect(r.annotations.find((a) => a.name === "nginx.ingress.kubernetes.io/satisfy")).toMatchObject({ status: "same", text: "served the same" });
    const m = one({ "nginx.ingress.kubernetes.io/mirror-target": "https://shadow.example/$request_uri", "nginx.ingress.kubernetes.io/mirror-host": "shadow.example", "nginx.ingress.kubernetes.io/mirror-request-body": "on" });
    expect(m.annotations.map((a) => [a.name.slice("nginx.ingress.kubernetes.io/".length), a.status])).toEqual([["mirror-host", "same"], ["mirror-request-body", "same"], ["mirror-target", "differs"]]);
    expect(m.status).toBe("differs");
  });

  test("proxy-redirect-from/-to and proxy-cookie-domain/-path are served, no longer reported unsupported", () => {
    const N = "nginx.ingress.kubernetes.io/";
    const r = one({ [`${N}proxy-redirect-from`]: "hello.com", [`${N}proxy-redirect-to`]: "goodbye.com", [`${N}proxy-cookie-domain`]: "localhost example.org", [`${N}proxy-cookie-path`]: "/one/ /" });
    expect(r.annotations.map((a) => [a.name.slice(N.length), a.status])).toEqual([
      ["proxy-cookie-domain", "same"], ["proxy-cookie-path", "same"], ["proxy-redirect-from", "same"], ["proxy-redirect-to", "same"],
    ]);
    expect(r.status).toBe("unchanged");
    // The Ingress's own relative-redirects is the one difference left for an accepted value.
    const rel = one({ [`${N}proxy-redirect-from`]: "http://pod/", [`${N}proxy-redirect-to`]: "/", [`${N}relative-redirects`]: "true" });
    expect(rel.annotations.find((a) => a.name === `${N}proxy-redirect-from`)?.status).toBe("differs");
  });

  test("an Ingress with no annotation moves unchanged; Portico's own and unknown names change nothing", () => {
    expect(one({}).status).toBe("unchanged");
    const r = one({ "portico.dev/response-headers": "X-A: 1", "nginx.ingress.kubernetes.io/no-such-thing": "1", "example.com/other": "x" });
    expect(r.status).toBe("unchanged");
    expect(r.annotations.map((a) => [a.name, a.status])).toEqual([
      ["nginx.ingress.kubernetes.io/no-such-thing", "unknown"],
      ["portico.dev/response-headers", "portico"],
    ]);
  });

  test("custom-headers is served: the same for a <namespace>/<name> value, and the ConfigMap's problems are the compiler's", () => {
    const item = one({ "nginx.ingress.kubernetes.io/custom-headers": "t/custom-headers" }).annotations.find((a) => a.name.endsWith("/custom-headers"))!;
    expect(item.status).toBe("same");
    // customheaders/main.go: a missing ConfigMap denies the location (503), in both.
    const r = reportOf([{ name: "a", annotations: { "nginx.ingress.kubernetes.io/custom-headers": "t/custom-headers" } }]);
    expect(JSON.stringify(r)).not.toContain("not supported by Portico");
  });

  test("enable-global-auth moves unchanged: Portico opts the Ingress out of --global-auth-url as ingress-nginx does (authreqglobal)", () => {
    const r = one({ "nginx.ingress.kubernetes.io/enable-global-auth": "false" });
    expect(r.status).toBe("unchanged");
    expect(r.annotations.map((a) => [a.name, a.status, a.text])).toEqual([["nginx.ingress.kubernetes.io/enable-global-auth", "same", "served the same"]]);
  });

  test("a value Portico refuses is a difference, in the compiler's words", () => {
    const item = one({ "nginx.ingress.kubernetes.io/proxy-body-size": "lots" }).annotations[0]!;
    expect(item.status).toBe("differs");
    expect(item.text).toStartWith("Portico refuses the value: expected a byte size");
  });

  test("a difference is stated for the value this Ingress uses", () => {
    // Two exact origins: nothing about `*`, `null` or entries ingress-nginx's validator refuses.
    const cors = one({ "nginx.ingress.kubernetes.io/enable-cors": "true", "nginx.ingress.kubernetes.io/cors-allow-origin": "https://app.example.com, https://admin.example.com" });
    const origin = cors.annotations.find((a) => a.name.endsWith("cors-allow-origin"))!;
    expect(origin.text).toBe(
      "An `Origin` must equal `https://app.example.com` or `https://admin.example.com`, in any case; ingress-nginx's regex is anchored only at the end, so it also takes an `Origin` that merely ends with one.",
    );
    expect(cors.annotations.find((a) => a.name.endsWith("enable-cors"))!.text).not.toContain("`false`");
    // `true`: the sentence on `false` does not concern it; whole seconds: the units do not either.
    const r = one({ "nginx.ingress.kubernetes.io/use-regex": "true", "nginx.ingress.kubernetes.io/proxy-read-timeout": "120" }, { path: "/api/(.*)" });
    expect(r.annotations.find((a) => a.name.endsWith("use-regex"))!.text).not.toContain("`false` is served the same");
    expect(r.annotations.find((a) => a.name.endsWith("proxy-read-timeout"))!.text).not.toContain("500ms");
    expect(one({ "nginx.ingress.kubernetes.io/proxy-read-timeout": "1500ms" }).annotations[0]!.text).toContain("500ms");
    // A valid list: the rules for a bad list and for the global one are left out.
    const allow = one({ "nginx.ingress.kubernetes.io/whitelist-source-range": "10.0.0.0/8" }).annotations[0]!;
    expect(allow).toMatchObject({ status: "differs" });
    expect(allow.text).not.toContain("bad or empty list");
    expect(allow.text).not.toContain("::ffff:");
    // An accepted redirect: what a malformed one does is left out; a code with nothing else to say is the same.
    const redirect = one({ "nginx.ingress.kubernetes.io/temporal-redirect": "https://x.test/", "nginx.ingress.kubernetes.io/temporal-redirect-code": "307" });
    expect(redirect.annotations.find((a) => a.name.endsWith("temporal-redirect"))!.text).toBe("Without --ingress-nginx-compat the redirect has an empty body (nginx sends a short HTML page, as Portico does with the flag).");
    expect(redirect.annotations.find((a) => a.name.endsWith("-code"))!).toMatchObject({ status: "same", text: "served the same" });
    // A value that is not among those served the same: the sentence naming them is left out.
    const retries = one({ "nginx.ingress.kubernetes.io/proxy-next-upstream": "error timeout http_502" }).annotations[0]!;
    expect(retries.status).toBe("differs");
    expect(retries.text).not.toContain("served the same");
  });

  test("a portico.dev name set next to the ingress-nginx one is the one Portico reads", () => {
    const r = one({ "nginx.ingress.kubernetes.io/proxy-body-size": "1m", "portico.dev/max-body-size": "2m" });
    expect(r.annotations.find((a) => a.name.startsWith("nginx"))!.text).toBe('Portico reads portico.dev/max-body-size (set on this Ingress, to "2m") instead');
  });
});

describe("snippets", () => {
  const SNIPPET = "nginx.ingress.kubernetes.io/configuration-snippet";

  test("understood directives name the annotations that replace them; once added, the snippet is no change", () => {
    const before = one({ [SNIPPET]: 'more_set_headers "X-Frame-Options: DENY";\nproxy_set_header X-Env prod;' });
    expect(before.status).toBe("partly-served");
    expect(before.annotations[0]!.snippet!.instead).toEqual([
      { annotation: "portico.dev/request-headers", value: "X-Env: prod", implemented: true },
      { annotation: "portico.dev/response-headers", value: "X-Frame-Options: DENY", implemented: true },
    ]);
    const after = one({
      [SNIPPET]: 'more_set_headers "X-Frame-Options: DENY";\nproxy_set_header X-Env prod;',
      "portico.dev/response-headers": "x-frame-options: DENY",
      "portico.dev/request-headers": "X-Env: prod",
    });
    expect(after.annotations[0]).toMatchObject({ status: "same", snippet: { instead: [], notUnderstood: 0 } });
    expect(after.status).toBe("unchanged");
  });

  test("a header with another value does not count as replaced", () => {
    const r = one({ [SNIPPET]: 'more_set_headers "X-Frame-Options: DENY";', "portico.dev/response-headers": "X-Frame-Options: SAMEORIGIN" });
    expect(r.status).toBe("partly-served");
  });

  test("a directive not understood is counted and the snippet is not served", () => {
    const item = one({ [SNIPPET]: "rewrite ^/x(?=y) /x break;\nmore_set_headers 'X-A: 1';" }).annotations[0]!;
    expect(item).toMatchObject({ status: "not-served", snippet: { notUnderstood: 1 } });
    expect(item.text).toBe(
      "never executed: 1 of 2 directives not understood; what they did is lost; and while the snippet is set every path of the Ingress answers 503, because it may refuse requests (rewrite): remove it once what replaces it is in place",
    );
  });

  test("the HTTPS redirect idiom names Portico's redirect; the route is refused until the snippet is removed", () => {
    const s = "if ($scheme = http) { return 301 https://$host$request_uri; }";
    const tls = one({ [SNIPPET]: s }, { tls: true });
    // An `if` block is never known to be harmless (annotations/snippet-scan.ts).
    expect(tls.status).toBe("refused");
    expect(tls.annotations[0]!).toMatchObject({ status: "not-served", snippet: { instead: [] } });
    expect(tls.annotations[0]!.text).toContain("the Ingress's Portico annotations do what its directive does, with the differences noted; and while the snippet is set every path of the Ingress answers 503, because it may refuse requests (if)");
    const plain = one({ [SNIPPET]: s });
    expect(plain.annotations[0]!.snippet!.instead).toEqual([{ annotation: "nginx.ingress.kubernetes.io/force-ssl-redirect", value: "true", implemented: true }]);
  });

  test("spec.tls without hosts makes the rule hosts TLS hosts: ssl-redirect already does the snippet's redirect", () => {
    // ingress-nginx's createServers gives every rule host of an Ingress with spec.tls a
    // certificate (extractTLSSecretName: the entry listing it, or whose certificate names it,
    // else the default one), and lua_ingress.lua redirects a host with a certificate.
    const s = "if ($scheme = http) { return 301 https://$host$request_uri; }";
    const hostless = one({ [SNIPPET]: s }, { tls: "secret-only" });
    expect(hostless.annotations[0]!).toMatchObject({ status: "not-served", snippet: { instead: [] } });
    expect(hostless.annotations[0]!.text).toContain("the Ingress's Portico annotations do what its directive does");
  });

  test("a companion Ingress is written only where it takes exactly the snippet's requests", () => {
    const SERVER = "nginx.ingress.kubernetes.io/server-snippet";
    const deny = "location ~* ^/internal/ { deny all; }";
    const companions = (r: IngressReport) => r.annotations.flatMap((a) => a.snippet?.companions ?? []);
    expect(companions(one({ [SERVER]: deny })).map((c) => c.name)).toEqual(["a-server-snippet-1"]);
    // Another Ingress of the host has a longer path under the denied one: in regex mode it
    // would be matched first (nginx tried the snippet's regex location first), so no companion.
    const longer = JSON.stringify({
      apiVersion: "networking.k8s.io/v1", kind: "Ingress", metadata: { name: "z", namespace: "t" },
      spec: { ingressClassName: "nginx", rules: [{ host: "a.test", http: { paths: [{ path: "/internal/api", pathType: "Prefix", backend: { service: { name: "web", port: { number: 80 } } } }] } }] },
    });
    const shadowed = reportOf([{ name: "a", annotations: { [SERVER]: deny } }], longer).ingresses.find((i) => i.ingress === "t/a")!;
    expect(companions(shadowed)).toEqual([]);
    expect(shadowed.annotations[0]!.snippet!.directives[0]).toMatchObject({ understood: false, note: "no companion Ingress can do it: t/z has the longer path /internal/api on the same host, which would be matched before the denied one" });
    // A configuration-snippet ran only inside the Ingress's own paths.
    const outside = one({ [SNIPPET]: "rewrite ^/old/(.*)$ /new/$1 break;" }, { path: "/app" });
    expect(outside.annotations[0]!.snippet!.directives[0]!.note).toBe("no companion Ingress can do it: no path of the Ingress takes /old/, so the directive never ran there");
  });

  test("a rewritten request keeps the Ingress's checks: the companion carries its annotations, never its snippets", () => {
    const r = one({
      [SNIPPET]: "rewrite ^/old/(.*)$ /new/$1 break;",
      "nginx.ingress.kubernetes.io/auth-type": "basic",
      "nginx.ingress.kubernetes.io/auth-secret": "users",
      "nginx.ingress.kubernetes.io/whitelist-source-range": "10.0.0.0/8",
    });
    const [c] = r.annotations.find((a) => a.name === SNIPPET)!.snippet!.companions;
    expect((c!.manifest as { metadata: { annotations: Record<string, string> } }).metadata.annotations).toEqual({
      "nginx.ingress.kubernetes.io/auth-type": "basic",
      "nginx.ingress.kubernetes.io/auth-secret": "users",
      "nginx.ingress.kubernetes.io/whitelist-source-range": "10.0.0.0/8",
      "nginx.ingress.kubernetes.io/use-regex": "true",
      "nginx.ingress.kubernetes.io/rewrite-target": "/new/$1",
    });
  });

  test("a header `if` becomes deny-request-headers; a server-snippet's only where no other Ingress shares the host", () => {
    const ua = 'if ($http_user_agent ~* "bot") { return 403; }';
    expect(one({ [SNIPPET]: ua }).annotations[0]!.snippet!.instead).toEqual([{ annotation: "portico.dev/deny-request-headers", value: "User-Agent ~* bot", implemented: true }]);
    // Done once the Ingress carries the rule.
    expect(one({ [SNIPPET]: ua, "portico.dev/deny-request-headers": "User-Agent ~* bot" }).annotations[0]!.snippet!.instead).toEqual([]);
    const SERVER = "nginx.ingress.kubernetes.io/server-snippet";
    const neighbour = JSON.stringify({
      apiVersion: "networking.k8s.io/v1", kind: "Ingress", metadata: { name: "z", namespace: "t" },
      spec: { ingressClassName: "nginx", rules: [{ host: "a.test", http: { paths: [{ path: "/z", pathType: "Prefix", backend: { service: { name: "web", port: { number: 80 } } } }] } }] },
    });
    const shared = reportOf([{ name: "a", annotations: { [SERVER]: ua } }], neighbour).ingresses.find((i) => i.ingress === "t/a")!;
    expect(shared.annotations[0]!.snippet!.directives[0]).toMatchObject({ understood: false, note: "no annotation can do it: t/z serves the same host, and the server-snippet checked its requests too" });
  });

  test("malformed snippet text is not served and says why", () => {
    expect(one({ "nginx.ingress.kubernetes.io/server-snippet": "location / {" }).annotations[0]!.text).toContain("not readable as nginx configuration");
  });
});

describe("diagnostics and refusals", () => {
  test("an Ingress whose every path Portico skips is not served at all", () => {
    const r = one({}, { path: "api" }); // not starting with "/": InvalidPath
    expect(r.status).toBe("refused");
    expect(r.refused).toContain("none of its paths");
    expect(r.diagnostics[0]).toMatchObject({ reason: "InvalidPath", effect: "not-served" });
  });

  test("an unreadable source-range list is refused in both; a snippet's refusal is Portico's own", () => {
    const bad = one({ "nginx.ingress.kubernetes.io/whitelist-source-range": "10.0.0.0/33" });
    expect(bad.status).toBe("refused");
    expect(bad.refused).toBe("every path answers 503 (ingress-nginx answers 503 too): allowlist-source-range is invalid");
    const snippet = one({ "nginx.ingress.kubernetes.io/server-snippet": "location /x { deny all; }\nif ($http_user_agent ~* bot) { return 403; }" });
    expect(snippet.status).toBe("refused");
    expect(snippet.refused).toStartWith("every path answers 503: ");
  });

  test("an access check Portico cannot run refuses the Ingress (503 on every path)", () => {
    // Every access annotation is implemented (GUARDS_ACCESS is empty); an auth-tls-match-cn
    // pattern the linear-time engine refuses is the check Portico cannot run now.
    expect(GUARDS_ACCESS.size).toBe(0);
    const r = one({ "nginx.ingress.kubernetes.io/auth-tls-secret": "ca", "nginx.ingress.kubernetes.io/auth-tls-match-cn": "CN=(a)\\1" });
    expect(r.status).toBe("refused");
    expect(r.refused).toStartWith("every path answers 503: ");
  });

  test("auth-tls-match-cn: a pattern the engine runs is the same as in ingress-nginx; one it refuses differs", () => {
    const status = (value: string) =>
      one({ "nginx.ingress.kubernetes.io/auth-tls-secret": "ca", "nginx.ingress.kubernetes.io/auth-tls-match-cn": value })
        .annotations.find((a) => a.name === "nginx.ingress.kubernetes.io/auth-tls-match-cn")?.status;
    expect(status("CN=(alice|bob)")).toBe("same");
    expect(status("CN=(a)\\1")).toBe("differs");
  });

  test("a missing basic-auth Secret answers 503 as ingress-nginx does: refused, and said to be the same there", () => {
    const r = one({ "nginx.ingress.kubernetes.io/auth-type": "basic", "nginx.ingress.kubernetes.io/auth-secret": "users" });
    // Never "unchanged" above "every path answers 503".
    expect(r.status).toBe("refused");
    expect(r.refused).toBe("every path answers 503 (ingress-nginx answers 503 too): Secret t/users (auth-secret) not found");
    expect(r.diagnostics).toEqual([expect.objectContaining({ reason: "SecretNotFound", effect: "same" })]);
    expect(r.annotations.every((a) => a.status === "same" || a.status === "differs")).toBe(true);
  });

  test("an ExternalName Service is a change (ingress-nginx proxies it); a missing Service is not", () => {
    const ext = JSON.stringify({ apiVersion: "v1", kind: "Service", metadata: { name: "ext", namespace: "t" }, spec: { type: "ExternalName", externalName: "api.example.com", ports: [{ port: 80 }] } });
    const r = reportOf([{ name: "a", service: "ext" }, { name: "b", service: "missing" }], ext);
    expect(r.ingresses[0]).toMatchObject({ status: "partly-served", diagnostics: [{ reason: "ExternalNameNotAllowed", effect: "not-served" }] });
    expect(r.ingresses[1]).toMatchObject({ status: "unchanged", diagnostics: [{ reason: "ServiceNotFound", effect: "same" }] });
  });

  test("compatCounts gives the summary's numbers", () => {
    const fx = loadFixture(
      [
        { name: "a", annotations: {} },
        { name: "b", annotations: { [NOT_IMPLEMENTED.find((a) => a.family !== "snippets")!.nginx[0]!]: "x" } },
        // Differs whatever the value (it bounds the response headers only).
        { name: "c", annotations: { "nginx.ingress.kubernetes.io/proxy-read-timeout": "120" } },
        // Differs only by its default: a value set is served the same, in the metric too.
        { name: "d", annotations: { "nginx.ingress.kubernetes.io/proxy-body-size": "1m", "nginx.ingress.kubernetes.io/ssl-redirect": "false" } },
      ]
        .map((i) => JSON.stringify({ apiVersion: "networking.k8s.io/v1", kind: "Ingress", metadata: { name: i.name, namespace: "t", annotations: i.annotations }, spec: { ingressClassName: "nginx", rules: [{ host: `${i.name}.test`, http: { paths: [{ path: "/", pathType: "Prefix", backend: { service: { name: "web", port: { number: 80 } } } }] } }] } }))
        .join("\n---\n"),
    );
    const view = new Compiler(config).inspect(fx.snapshot, []);
    const s = migrationReport(view, config).summary;
    expect(compatCounts(view)).toEqual({ unchanged: s.unchanged, differs: s.differs, "partly-served": s.partlyServed, refused: s.refused });
    expect(compatCounts(view)).toEqual({ unchanged: 2, differs: 1, "partly-served": 1, refused: 0 });
  });
});
