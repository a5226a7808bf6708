// The routes view (`portico routes`, /debug/routes?format=text) says what each route's requests
// get: a route refused for a snippet or a missing auth Secret, redirected, or without endpoints
// is not shown as a healthy "1 of 1" only; canaries have their own row with their rules, and a
// regex host's paths are shown as the locations nginx tries (docs/design.md "Explain").
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { compile } from "../../src/compile/compile.ts";
import type { CompileConfig } from "../../src/compile/config.ts";
import { serializeTable } from "../../src/table/serialize.ts";
import { formatRoutesText } from "../../src/table/text.ts";
import { DEFAULT_COMPILE_CONFIG } from "../compile/config.ts";
import { loadFixture } from "../compile/snapshot.ts";
import { service, slice } from "../e2e/objects.ts";

function routesText(fixture: string): string {
  const fx = loadFixture(readFileSync(join(import.meta.dir, "..", "fixtures", fixture), "utf8"));
  return formatRoutesText(serializeTable(compile(fx.snapshot, { ...DEFAULT_COMPILE_CONFIG, ...fx.config } as CompileConfig).table));
}

test("each route says what its requests get, and why one gets no pod", () => {
  expect(routesText("answers.yaml")).toBe(
    [
      "HOST             PATH  TYPE    BACKEND       ENDPOINTS             TLS  INGRESS             ANSWERS",
      "approot.test     /     Prefix  ans/web:80    1 of 1                no   ans/approot         \"/\" gets 302 to /app; proxied",
      "away.test        /     Prefix  ans/web:80    1 of 1                no   ans/away            302 to https://status.example.com/maintenance",
      "basic.test       /     Prefix  ans/web:80    1 of 1                no   ans/basic           401 without credentials (basic, realm \"Staff only\"); proxied",
      "dead.test        /     Prefix  ans/empty:80  0 of 0 (NoEndpoints)  no   ans/dead            503 no endpoints (NoEndpoints)",
      "fallback.test    /     Prefix  ans/empty:80  0 of 0 (NoEndpoints)  no   ans/fallback        no endpoints (NoEndpoints): default-backend ans/next:0 takes the requests; proxied",
      "moved.test       /     Prefix  ans/web:80    1 of 1                no   ans/moved           301 to https://new.example.com/home",
      "mtls-no-ca.test  /     Prefix  ans/web:80    1 of 1                no   ans/mtls-no-ca      403 refused: Secret ans/missing-ca (auth-tls-secret) not found",
      "mtls-page.test   /     Prefix  ans/web:80    1 of 1                no   ans/mtls-page       302 to https://help.example.com/certificates without a client certificate; proxied",
      "mtls.test        /     Prefix  ans/web:80    1 of 1                no   ans/mtls            400 without a client certificate; proxied",
      "nosecret.test    /     Prefix  ans/web:80    1 of 1                no   ans/no-secret       503 refused: Secret ans/missing (auth-secret) not found",
      "office.test      /     Prefix  ans/web:80    1 of 1                no   ans/office          403 unless the client is in 10.0.0.0/8, 192.168.0.0/16; proxied",
      "release.test     /     Prefix  ans/web:80    1 of 1                no   ans/release         proxied to the canary ans/next:80 (weight 100 of 100)",
      "release.test     /     canary  ans/next:80   1 of 1                no   ans/release-canary  canary: weight 100 of 100",
      "secure.test      /     Prefix  ans/web:80    1 of 1                yes  ans/secure          HTTP: redirect to HTTPS; proxied",
      "snippet.test     /     Prefix  ans/web:80    1 of 1                no   ans/snippet         503 refused: nginx.ingress.kubernetes.io/server-snippet may refuse requests (location)",
      "sso.test         /     Prefix  ans/web:80    1 of 1                no   ans/sso             the auth service decides (its 401 becomes 302 to auth-signin); proxied",
      "www.brand.test   /     Prefix  ans/web:80    1 of 1                no   ans/www             the other www name redirects here; proxied",
      "",
      "16 hosts, 16 routes, 4 backends (1 without endpoints); 6 routes answering every request itself (see ANSWERS)",
      "",
    ].join("\n"),
  );
});

test("a canary has its own row under main's, with what sends a request to it", () => {
  const text = routesText("canary.yaml");
  expect(text).toMatch(/^shop\.test +\/ +Prefix +shop\/main:80 +1 of 1 +no +shop\/main +proxied \(10 of 100 to the canary\)$/m);
  expect(text).toMatch(/^shop\.test +\/ +canary +shop\/canary:80 +1 of 1 +no +shop\/canary +canary: header x-canary, cookie canary, weight 10 of 100$/m);
});

test("a regex host's paths are the locations nginx tries, not prefixes", () => {
  const text = routesText("regex.yaml");
  expect(text).toMatch(/^r\.test +~\* "\^\/foo\/bar\/\(\.\+\)" +regex \(ImplementationSpecific\) +default\/svc:80 +1 of 1 +no +default\/b-regex +rewrite-target \/\$1; proxied$/m);
  expect(text).toMatch(/^r\.test +~\* "\^\/v\[12\]\/items\/", ~\* "\^\/v\[12\]\/items" +regex \(Prefix\) /m);
});

test("a host's implicit / location has its row: the first Ingress's policies, then the default backend or 404", () => {
  const rows = routesText("implicit-root.yaml").split("\n").filter((l) => l.includes("(other paths)"));
  const answers = Object.fromEntries(rows.map((l) => [l.split(/\s+/)[0], l.slice(l.lastIndexOf("  ") + 2)]));
  expect(answers).toEqual({
    "away.root.test": "302 to https://elsewhere.example/landing (rewrite-target)",
    "basic.root.test": '401 without credentials (basic, realm "Staff only"); 404 (no default backend)',
    "exact.root.test": "301 to https://exact.example.com/",
    "moved.root.test": "301 to https://new.example.com/home",
    "office.root.test": "403 unless the client is in 10.0.0.0/8; 404 (no default backend)",
    "secure.root.test": "HTTP: redirect to HTTPS; 404 (no default backend)",
  });
});

test("what every request and answer get (add-headers, proxy-set-headers, --block-*, --server-header), and a route's mirror and custom-headers", () => {
  const docs = [
    { apiVersion: "networking.k8s.io/v1", kind: "IngressClass", metadata: { name: "portico" }, spec: { controller: "portico.dev/ingress-controller" } },
    service("g", "web"),
    slice("g", "web", [8080]),
    { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "add", namespace: "g" }, data: { "X-Added": "yes", "X-Uri": "$uri" } },
    { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "set", namespace: "g" }, data: { "X-Set": "from-global", "X-Empty": "" } },
    { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "custom", namespace: "g" }, data: { "X-Custom": "c1" } },
    {
      apiVersion: "networking.k8s.io/v1",
      kind: "Ingress",
      metadata: { name: "m", namespace: "g", annotations: { "nginx.ingress.kubernetes.io/mirror-target": "http://mirror.example/copy$request_uri", "nginx.ingress.kubernetes.io/custom-headers": "g/custom" } },
      spec: { ingressClassName: "portico", rules: [{ host: "m.test", http: { paths: [{ path: "/", pathType: "Prefix", backend: { service: { name: "web", port: { number: 80 } } } }] } }] },
    },
  ];
  const fx = loadFixture(docs.map((d) => JSON.stringify(d)).join("\n---\n"));
  const config = { ...DEFAULT_COMPILE_CONFIG, addHeaders: { namespace: "g", name: "add" }, proxySetHeaders: { namespace: "g", name: "set" }, globalAllowedResponseHeaders: ["X-Custom"] } as CompileConfig;
  const text = formatRoutesText(serializeTable(compile(fx.snapshot, config).table), { blockCidrs: ["10.0.0.0/8"], blockUserAgents: ["~*badbot"], serverHeader: "portico" });
  expect(text).toContain("answer fields X-Custom: c1 (custom-headers); a copy to http://mirror.example/copy$request_uri (mirror-target; its answer is ignored); proxied");
  expect(text.trimEnd().split("\n").slice(-3)).toEqual([
    "Every host, before any route: 403 for clients in 10.0.0.0/8; User-Agent ~*badbot (block-cidrs, block-user-agents, block-referers)",
    "Every proxied request: x-empty: (removed), x-set: from-global (proxy-set-headers)",
    "Every answer: x-added: yes, x-uri: $uri (add-headers); Server: portico (--server-header)",
  ]);
  // use-proxy-protocol, global-auth-url, use-gzip/enable-brotli and server-tokens false change
  // whether and how every request is answered (serving/front.ts, compile/global-auth.ts, http/gzip.ts, http/headers.ts).
  const more = formatRoutesText(serializeTable(compile(fx.snapshot, config).table), { useProxyProtocol: true, globalAuthUrl: "http://auth.example/verify", gzip: true, gzipLevel: 5, brotli: true, serverHeader: "none" });
  expect(more.trimEnd().split("\n").slice(-5)).toEqual([
    "Every connection: a PROXY protocol header first, or it is closed without an answer (use-proxy-protocol)",
    "Every proxied request: x-empty: (removed), x-set: from-global (proxy-set-headers)",
    'Every route of an Ingress without auth-url and without enable-global-auth: "false" (no-auth-locations exempt): the auth service http://auth.example/verify decides (global-auth-url)',
    "Every pod answer of a listed type (200, 403, 404): br (brotli-level 4), else gzip (gzip-level 5) for a client that accepts it (enable-brotli, use-gzip)",
    "Every answer: x-added: yes, x-uri: $uri (add-headers); no Server field (--server-header=none)",
  ]);
});
