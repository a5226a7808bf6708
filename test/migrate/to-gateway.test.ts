// `portico migrate --to gateway-api`, proved: the Ingresses are converted by the real command,
// then served by two real Porticos (the Ingresses by one, the emitted Gateway API objects by
// the other, each from --manifests) in front of the same raw backends, and every request of a
// mapping the conversion calls equivalent gets the same answer from both: status, Location, and
// the request line and headers the backend receives. The migration fixtures are converted too:
// every annotation of ours on every Ingress gets a note (never dropped silently).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadAll } from "js-yaml";
import type { ConversionNote } from "../../src/compile/to-gateway.ts";
import { allStarted, startPortico, type Portico } from "../e2e/harness.ts";
import { namedBackend, rawBackend, type RawBackend } from "../proxy/raw.ts";
import { eventually } from "../wait.ts";
import { prove, type ProofReport } from "./prove.ts";

const ROOT = join(import.meta.dir, "..", "..");
const cmd = process.env.PORTICO_BIN ? [process.env.PORTICO_BIN] : [process.execPath, join(ROOT, "src", "main.ts")];
const NOTE = "# portico-note: ";

type Obj = Record<string, unknown> & { kind: string; metadata: { name: string; namespace?: string; annotations?: Record<string, string> } };

async function convert(manifests: string, extra: string[] = []): Promise<{ code: number; objects: Obj[]; notes: ConversionNote[]; yaml: string; stderr: string }> {
  const p = Bun.spawn([...cmd, "migrate", "--to", "gateway-api", "--manifests", manifests, ...extra], { stdout: "pipe", stderr: "pipe", cwd: ROOT });
  const [yaml, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  const notes = yaml
    .split("\n")
    .filter((l) => l.startsWith(NOTE))
    .map((l) => JSON.parse(l.slice(NOTE.length)) as ConversionNote);
  const objects = loadAll(yaml).filter((d) => d !== null) as Obj[];
  return { code, objects, notes, yaml, stderr };
}

const N = "nginx.ingress.kubernetes.io/";

describe("the migration fixtures", () => {
  const FIXTURES = join(ROOT, "test", "fixtures", "migrate", "manifests");
  let out: Awaited<ReturnType<typeof convert>>;
  beforeAll(async () => {
    out = await convert(FIXTURES);
  });

  test("every annotation of ours on a served Ingress has a note; what nothing carries says so", () => {
    // Exit 3: some annotations are carried by Portico's extension or by nothing (as `migrate`).
    expect(out.code).toBe(3);
    const served = new Set(["shop/storefront", "shop/api", "shop/api-canary", "ops/dashboard", "ops/grafana", "web/public-api", "web/security-headers", "web/security-headers-moved", "web/old-domain", "web/https-only", "web/blog", "legacy/intranet"]);
    const docs: Obj[] = [];
    for (const f of readdirSync(FIXTURES).sort()) for (const d of loadAll(readFileSync(join(FIXTURES, f), "utf8"))) if (d !== null) docs.push(d as Obj);
    for (const ing of docs.filter((d) => d.kind === "Ingress")) {
      const key = `${ing.metadata.namespace}/${ing.metadata.name}`;
      const ours = Object.keys(ing.metadata.annotations ?? {}).filter((k) => k.startsWith(N) || k.startsWith("portico.dev/")).filter((k) => k !== "kubernetes.io/ingress.class");
      const noted = new Set(out.notes.filter((n) => n.ingress === key).map((n) => n.annotation));
      if (served.has(key)) expect({ key, missing: ours.filter((k) => !noted.has(k)) }).toEqual({ key, missing: [] });
      else expect({ key, noted: [...noted] }).toEqual({ key, noted: [] });
    }
    const of = (ing: string, ann: string) => out.notes.find((n) => n.ingress === ing && n.annotation === `${N}${ann}`)?.carriedAs;
    expect(of("ops/grafana", "auth-url")).toBe("portico-extension");
    expect(of("ops/grafana", "auth-signin")).toBe("portico-extension");
    expect(of("web/blog", "server-snippet")).toBe("not-expressible");
    expect(of("legacy/intranet", "proxy-body-sise")).toBe("not-expressible");
    expect(of("shop/api-canary", "canary-weight")).toBe("gateway-api");
    expect(of("web/public-api", "enable-cors")).toBe("gateway-api");
  });

  test("--output json holds the same objects and notes; a bad --to is a bad flag (exit 2)", async () => {
    const p = Bun.spawn([...cmd, "migrate", "--to", "gateway-api", "--output", "json", "--manifests", FIXTURES], { stdout: "pipe", stderr: "pipe", cwd: ROOT });
    const [text, code] = await Promise.all([new Response(p.stdout).text(), p.exited]);
    expect(code).toBe(3);
    expect(JSON.parse(text)).toEqual({ objects: out.objects, notes: out.notes, invalidObjects: [] });
    const bad = Bun.spawn([...cmd, "migrate", "--to", "istio", "--manifests", FIXTURES], { stdout: "pipe", stderr: "pipe", cwd: ROOT });
    const [err, badCode] = await Promise.all([new Response(bad.stderr).text(), bad.exited]);
    expect(badCode).toBe(2);
    expect(err).toContain('--to: expected gateway-api, got "istio"');
  });

  test("an access check or a refusing snippet never becomes an open route: the rules name Portico's policy", () => {
    const route = (ns: string, name: string) => out.objects.find((o) => o.kind === "HTTPRoute" && o.metadata.namespace === ns && o.metadata.name === name) as unknown as { spec: { rules: { filters?: unknown[] }[] } };
    for (const [ns, name] of [["ops", "grafana"], ["ops", "dashboard"], ["web", "blog"], ["web", "old-domain"]] as const) {
      for (const rule of route(ns, name).spec.rules) expect(rule.filters?.[0]).toEqual({ type: "ExtensionRef", extensionRef: { group: "portico.dev", kind: "IngressNginxPolicy", name } });
      const policy = out.objects.find((o) => o.kind === "IngressNginxPolicy" && o.metadata.namespace === ns && o.metadata.name === name);
      expect(policy).toBeDefined();
    }
    // The `/v1(/|$)(.*)` → `/$2` idiom is a prefix replaced (Portico's Gateway API compile does
    // not serve URLRewrite yet, so this one is checked as written, not served).
    const api = route("shop", "api").spec.rules[0] as unknown as { matches: unknown; filters: unknown[] };
    expect(api.matches).toEqual([{ path: { type: "PathPrefix", value: "/v1" } }]);
    expect(api.filters[1]).toEqual({ type: "URLRewrite", urlRewrite: { path: { type: "ReplacePrefixMatch", replacePrefixMatch: "/" } } });
    // A certificate in the route's namespace, the Gateway elsewhere: a ReferenceGrant lets the Gateway read it.
    const grant = out.objects.find((o) => o.kind === "ReferenceGrant" && o.metadata.namespace === "ops") as unknown as { spec: unknown };
    expect(grant.spec).toEqual({ from: [{ group: "gateway.networking.k8s.io", kind: "Gateway", namespace: "portico" }], to: [{ group: "", kind: "Secret", name: "grafana-tls" }] });
  });
});

test("an Ingress with backend-protocol GRPC becomes a GRPCRoute matching its services and methods; a path gRPC cannot name is noted", async () => {
  const dir = mkdtempSync(join(tmpdir(), "portico-to-grpc-"));
  try {
    writeFileSync(
      join(dir, "grpc.yaml"),
      `apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: { name: nginx }
spec: { controller: k8s.io/ingress-nginx }
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: rpc
  namespace: apps
  annotations: { ${N}backend-protocol: GRPC }
spec:
  ingressClassName: nginx
  rules:
    - host: rpc.test
      http:
        paths:
          - { path: /echo.Echo/, pathType: Prefix, backend: { service: { name: echo, port: { number: 50051 } } } }
          - { path: /health.Health/Check, pathType: Exact, backend: { service: { name: health, port: { number: 50051 } } } }
          - { path: /v1/static, pathType: Prefix, backend: { service: { name: echo, port: { number: 50051 } } } }
`,
    );
    const out = await convert(dir);
    const route = out.objects.find((o) => o.kind === "GRPCRoute") as unknown as { apiVersion: string; spec: unknown };
    expect(route.apiVersion).toBe("gateway.networking.k8s.io/v1");
    expect(route.spec).toEqual({
      parentRefs: [{ group: "gateway.networking.k8s.io", kind: "Gateway", namespace: "portico", name: "portico" }],
      hostnames: ["rpc.test"],
      rules: [
        { matches: [{ method: { type: "Exact", service: "echo.Echo" } }], backendRefs: [{ name: "echo", port: 50051 }] },
        { matches: [{ method: { type: "Exact", service: "health.Health", method: "Check" } }], backendRefs: [{ name: "health", port: 50051 }] },
      ],
    });
    expect(out.notes.filter((n) => n.carriedAs === "not-expressible").map((n) => n.text)).toEqual([
      'path "/v1/static" (PathPrefix) is not a gRPC service or method: a GRPCRoute cannot match it, and the rule is left out',
    ]);
    expect(out.code).toBe(3);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a host with more paths than a route's 16 rules is written as several routes", async () => {
  const dir = mkdtempSync(join(tmpdir(), "portico-to-gateway-many-"));
  try {
    const paths = Array.from({ length: 17 }, (_, i) => `          - { path: /p${i}, pathType: Prefix, backend: { service: { name: s, port: { number: 80 } } } }`).join("\n");
    writeFileSync(
      join(dir, "many.yaml"),
      `apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: { name: nginx }
spec: { controller: k8s.io/ingress-nginx }
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: { name: many, namespace: apps }
spec:
  ingressClassName: nginx
  rules:
    - host: many.test
      http:
        paths:
${paths}
`,
    );
    const out = await convert(dir);
    expect(out.code).toBe(0);
    const routes = out.objects.filter((o) => o.kind === "HTTPRoute") as unknown as { metadata: { name: string }; spec: { hostnames: string[]; rules: { matches: { path: { value: string } }[] }[] } }[];
    expect(routes.map((r) => [r.metadata.name, r.spec.hostnames, r.spec.rules.length])).toEqual([["many", ["many.test"], 16], ["many-2", ["many.test"], 1]]);
    expect(routes.flatMap((r) => r.spec.rules.map((x) => x.matches[0]!.path.value))).toEqual(Array.from({ length: 17 }, (_, i) => `/p${i}`));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

describe("served side by side", () => {
  let dir: string;
  let ing: Portico;
  let gw: Portico;
  const backends = new Map<string, RawBackend & { name: string }>();
  /** An auth-url service on loopback, which both Porticos refuse to ask (never connected to). */
  let auth: RawBackend;
  let conv: Awaited<ReturnType<typeof convert>>;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "portico-to-gateway-"));
    for (const s of ["a", "b"]) backends.set(s, await namedBackend(s));
    // A backend that never answers: proxy-read-timeout's 504.
    backends.set("slow", { ...(await rawBackend(() => null)), name: "slow" });
    auth = await rawBackend(() => "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    const svc = (name: string) => `apiVersion: v1
kind: Service
metadata: { name: ${name}, namespace: web }
spec: { ports: [{ name: http, port: 80 }] }
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: ${name}-1, namespace: web, labels: { kubernetes.io/service-name: ${name} } }
addressType: IPv4
ports: [{ name: http, port: ${backends.get(name)!.port} }]
endpoints: [{ addresses: [127.0.0.1], conditions: { ready: true } }]
`;
    const ingress = (name: string, host: string, annotations: Record<string, string>, paths: string, tls = "") => `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: ${name}
  namespace: web
  annotations: ${JSON.stringify(annotations)}
spec:
  ingressClassName: nginx
  ${tls}
  rules: [{ host: ${host}, http: { paths: ${paths} } }]
`;
    const p = (path: string, type: string, service: string) => `{ path: "${path}", pathType: ${type}, backend: { service: { name: ${service}, port: { number: 80 } } } }`;
    // basic auth's users (htpasswd `{SHA}`: base64 of SHA-1 of "secret"), in the Ingress's namespace.
    const users = `alice:{SHA}${require("node:crypto").createHash("sha1").update("secret").digest("base64")}\n`;
    const secret = `apiVersion: v1
kind: Secret
metadata: { name: basic-users, namespace: web }
type: Opaque
data: { auth: ${Buffer.from(users).toString("base64")} }
`;
    const services = `${svc("a")}---\n${svc("b")}---\n${svc("slow")}---\n${secret}`;
    const authUrl = `http://127.0.0.1:${auth.port}/check`;
    const ingresses = [
      `apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: { name: nginx }
spec: { controller: k8s.io/ingress-nginx }
`,
      ingress("plain", "plain.test", {}, `[${p("/app", "Prefix", "a")}, ${p("/exact", "Exact", "b")}]`),
      ingress("headers", "headers.test", { "portico.dev/request-headers": "X-Tenant: acme" }, `[${p("/", "Prefix", "a")}]`),
      ingress("main", "canary.test", {}, `[${p("/", "Prefix", "a")}]`),
      ingress("canary", "canary.test", { [`${N}canary`]: "true", [`${N}canary-by-header`]: "X-Canary" }, `[${p("/", "Prefix", "b")}]`),
      ingress("main-v", "canaryv.test", {}, `[${p("/", "Prefix", "a")}]`),
      ingress("canary-v", "canaryv.test", { [`${N}canary`]: "true", [`${N}canary-by-header`]: "X-Env", [`${N}canary-by-header-value`]: "blue" }, `[${p("/", "Prefix", "b")}]`),
      ingress("approot", "approot.test", { [`${N}app-root`]: "/home" }, `[${p("/", "Prefix", "a")}]`),
      ingress("moved", "moved.test", { [`${N}permanent-redirect`]: "https://new.test/landing" }, `[${p("/", "Prefix", "a")}]`),
      ingress("temp", "temp.test", { [`${N}temporal-redirect`]: "http://new.test:8080/t" }, `[${p("/", "Prefix", "a")}]`),
      ingress("secure", "secure.test", {}, `[${p("/", "Prefix", "a")}]`, "tls: [{ hosts: [secure.test], secretName: secure-tls }]"),
      // What only Portico's IngressNginxPolicy carries (an ExtensionRef on every rule).
      ingress("deny", "deny.test", { [`${N}whitelist-source-range`]: "10.0.0.0/8" }, `[${p("/", "Prefix", "a")}]`),
      ingress("allow", "allow.test", { [`${N}whitelist-source-range`]: "127.0.0.1/32" }, `[${p("/", "Prefix", "a")}]`),
      // A loopback auth-url is refused (503, the address policy) by both: the same answer. With
      // an auth service Portico may reach: test/gateway/extension.test.ts.
      ingress("authurl", "authurl.test", { [`${N}auth-url`]: authUrl, [`${N}auth-signin`]: "https://login.test/start" }, `[${p("/", "Prefix", "a")}]`),
      ingress("basic", "basic.test", { [`${N}auth-type`]: "basic", [`${N}auth-secret`]: "basic-users", [`${N}auth-realm`]: "Staff" }, `[${p("/", "Prefix", "a")}]`),
      ingress("body", "body.test", { [`${N}proxy-body-size`]: "1k" }, `[${p("/", "Prefix", "a")}]`),
      ingress("timeout", "timeout.test", { [`${N}proxy-read-timeout`]: "1", [`${N}proxy-next-upstream-tries`]: "1" }, `[${p("/", "Prefix", "slow")}]`),
    ];
    writeFileSync(join(dir, "services.yaml"), services);
    writeFileSync(join(dir, "ingresses.yaml"), ingresses.join("---\n"));
    // Both serve redirects to HTTPS with 301 (Portico's Gateway API RequestRedirect serves 301 and 302).
    conv = await convert(dir, ["--http-redirect-code", "301"]);
    const gwDir = join(dir, "gateway");
    require("node:fs").mkdirSync(gwDir);
    writeFileSync(join(gwDir, "services.yaml"), services);
    writeFileSync(join(gwDir, "gateway.yaml"), conv.yaml);
    [ing, gw] = await allStarted([
      startPortico(["--manifests", dir, "--ingress-nginx-compat", "--http-redirect-code", "301", "--access-log", "off"]),
      startPortico(["--manifests", gwDir, "--http-redirect-code", "301", "--access-log", "off"]),
    ]);
  });

  afterAll(async () => {
    await Promise.all([ing?.stop("SIGKILL"), gw?.stop("SIGKILL")]);
    for (const b of backends.values()) await b.stop();
    await auth?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** One answer, and what the backend received for it (request line, the headers that matter). */
  async function ask(p: Portico, host: string, path: string, headers: Record<string, string> = {}, sent?: string) {
    const before = new Map([...backends].map(([k, b]) => [k, b.hits.length]));
    const res = await fetch(`${p.http}${path}`, { method: sent === undefined ? "GET" : "POST", body: sent, headers: { host, connection: "close", ...headers }, redirect: "manual" });
    const body = await res.text();
    let received: { backend: string; line: string; headers: string[] } | null = null;
    for (const [k, b] of backends) {
      if (b.hits.length > (before.get(k) ?? 0)) {
        const head = b.hits.at(-1)!.head.split("\r\n");
        // Fields that carry the request (not per-connection or per-request ids).
        const keep = head.slice(1).filter((l) => /^(host|x-tenant|x-forwarded-host|x-forwarded-proto|x-canary|x-env|x-original-uri)\s*:/i.test(l)).map((l) => l.toLowerCase()).sort();
        received = { backend: k, line: head[0]!, headers: keep };
      }
    }
    // The body of a backend's answer is its name (in `received`); Portico's own 404 page when no
    // route matches is not part of a mapping (the Gateway API form has no default backend).
    void body;
    return { status: res.status, challenge: res.headers.get("www-authenticate"), location: res.headers.get("location")?.replace(String(p.ports.http), "PORT").replace(String(p.ports.https), "TLSPORT") ?? null, received };
  }

  const cases: [string, string, Record<string, string>?][] = [
    ["plain.test", "/app"],
    ["plain.test", "/app/x?q=1"],
    ["plain.test", "/application"],
    ["plain.test", "/exact"],
    ["plain.test", "/exact/"],
    ["plain.test", "/other"],
    ["headers.test", "/h?x=y"],
    ["headers.test", "/", { "x-tenant": "evil" }],
    ["canary.test", "/c"],
    ["canary.test", "/c", { "x-canary": "always" }],
    ["canary.test", "/c", { "x-canary": "never" }],
    ["canary.test", "/c", { "x-canary": "Always" }],
    ["canaryv.test", "/v", { "x-env": "blue" }],
    ["canaryv.test", "/v", { "x-env": "green" }],
    ["canaryv.test", "/v"],
    ["approot.test", "/"],
    ["approot.test", "/x"],
    ["moved.test", "/"],
    ["moved.test", "/deep/path"],
    ["temp.test", "/a/b"],
    ["secure.test", "/s?q=1"],
    ["deny.test", "/d"],
    ["allow.test", "/a"],
    ["authurl.test", "/u", { "x-token": "good" }],
    ["basic.test", "/b"],
    ["basic.test", "/b", { authorization: `Basic ${btoa("alice:wrong")}` }],
    ["basic.test", "/b", { authorization: `Basic ${btoa("alice:secret")}` }],
    ["body.test", "/small"],
    ["timeout.test", "/t"],
  ];

  /** The answers the IngressNginxPolicy mappings must give, so two equal answers are the mappings' own. */
  const extensionAnswers: [string, string, Record<string, string> | undefined, number][] = [
    ["deny.test", "/d", undefined, 403],
    ["allow.test", "/a", undefined, 200],
    ["authurl.test", "/u", { "x-token": "good" }, 503],
    ["basic.test", "/b", undefined, 401],
    ["basic.test", "/b", { authorization: `Basic ${btoa("alice:secret")}` }, 200],
    ["timeout.test", "/t", undefined, 504],
  ];

  test("every request of an equivalent mapping gets the same answer from the Ingress and from its Gateway API form", async () => {
    // 3 (EXIT_CHANGES): some annotations are carried in IngressNginxPolicy, which the notes say.
    expect(conv.code).toBe(3);
    await eventually(async () => (await ask(ing, "plain.test", "/app")).status === 200 && (await ask(gw, "plain.test", "/app")).status === 200, 15_000);
    await eventually(async () => (await ask(gw, "secure.test", "/")).status === 301 && (await ask(gw, "canaryv.test", "/")).status === 200, 15_000);
    const differ: unknown[] = [];
    for (const [host, path, headers] of cases) {
      const a = await ask(ing, host, path, headers);
      const b = await ask(gw, host, path, headers);
      if (JSON.stringify(a) !== JSON.stringify(b)) differ.push({ host, path, headers, ingress: a, gateway: b });
    }
    if (process.env.TO_GATEWAY_VERBOSE) for (const [host, path, headers] of cases) console.log(host, path, headers ?? "", JSON.stringify(await ask(gw, host, path, headers)));
    expect(differ).toEqual([]);
    // The stated difference of the HTTPS redirect: RequestRedirect keeps the trailing `/` that
    // ingress-nginx cuts (NGINX-COMPAT.md 1.4, "Trailing-slash quirk"); the note says so.
    expect([(await ask(ing, "secure.test", "/dir/")).location, (await ask(gw, "secure.test", "/dir/")).location]).toEqual(["https://secure.test/dir", "https://secure.test/dir/"]);
    expect(conv.notes.find((n) => n.ingress === "web/secure" && n.annotation === `${N}ssl-redirect`)?.text).toContain("it keeps a trailing `/` ingress-nginx cuts");
    // The answers are the mappings' own, not two equal 404s.
    expect((await ask(gw, "canary.test", "/c", { "x-canary": "always" })).received?.backend).toBe("b");
    expect((await ask(gw, "headers.test", "/", { "x-tenant": "evil" })).received?.headers).toContain("x-tenant: acme");
    expect((await ask(gw, "moved.test", "/deep/path")).location).toBe("https://new.test/landing");
    expect((await ask(gw, "approot.test", "/")).status).toBe(302);
  });

  test("the annotations carried in IngressNginxPolicy answer through the HTTPRoute as through the Ingress: allowlist, auth-url's refusal, basic auth, body size, timeout", async () => {
    const policies = conv.objects.filter((o) => o.kind === "IngressNginxPolicy").map((o) => o.metadata.name);
    expect(policies).toEqual(expect.arrayContaining(["deny", "allow", "authurl", "basic", "body", "timeout"]));
    await eventually(async () => (await ask(gw, "basic.test", "/b")).status === 401 && (await ask(gw, "deny.test", "/")).status === 403, 15_000);
    for (const [host, path, headers, status] of extensionAnswers) {
      const a = await ask(ing, host, path, headers);
      const b = await ask(gw, host, path, headers);
      expect({ host, path, status: a.status }).toEqual({ host, path, status });
      expect({ host, path, answer: b }).toEqual({ host, path, answer: a });
    }
    expect((await ask(gw, "basic.test", "/b")).challenge).toBe('Basic realm="Staff"');
    expect(auth.hits).toEqual([]);
    // proxy-body-size: a body over 1k is refused before the backend sees it, one under it passes.
    const big = "x".repeat(2048);
    for (const p of [ing, gw]) {
      expect((await ask(p, "body.test", "/up", {}, big)).status).toBe(413);
      expect((await ask(p, "body.test", "/up", {}, "small")).status).toBe(200);
    }
  });
});

describe("CORS, regex mode, X-Forwarded-Prefix and HSTS: written as Gateway API filters and matches, and proved by serving both forms", () => {
  const SET = join(ROOT, "test", "fixtures", "migrate", "gateway", "filters.yaml");
  let proof: ProofReport;
  beforeAll(async () => {
    proof = await prove(SET);
  });

  const parent = { group: "gateway.networking.k8s.io", kind: "Gateway", namespace: "portico", name: "portico" };
  const route = (name: string) => (proof.objectsList.find((o) => o.kind === "HTTPRoute" && o.metadata?.name === name) as { spec: unknown } | undefined)?.spec;
  const noteOf = (ing: string, ann: string) => proof.notesList.find((x) => x.ingress === `web/${ing}` && x.annotation === ann);
  const DEFAULT_HEADERS = ["DNT", "Keep-Alive", "User-Agent", "X-Requested-With", "If-Modified-Since", "Cache-Control", "Content-Type", "Range", "Authorization"];

  test("enable-cors and cors-*: the CORS filter, without the origins and methods its CRD cannot hold, each left out by name", () => {
    expect(proof.exitCode).toBe(0);
    expect(route("cors-list")).toEqual({
      parentRefs: [parent],
      hostnames: ["cors.test"],
      rules: [{
        matches: [{ path: { type: "PathPrefix", value: "/" } }],
        filters: [{ type: "CORS", cors: { allowOrigins: ["https://app.test"], allowMethods: ["GET", "POST"], allowHeaders: DEFAULT_HEADERS, maxAge: 600 } }],
        backendRefs: [{ name: "a", port: 80 }],
      }],
    });
    // ingress-nginx's defaults (cors/main.go): every origin, its methods and headers, credentials on, 1728000 s.
    expect(route("cors-any")).toEqual({
      parentRefs: [parent],
      hostnames: ["corsany.test"],
      rules: [{
        matches: [{ path: { type: "PathPrefix", value: "/" } }],
        filters: [{ type: "CORS", cors: { allowOrigins: ["*"], allowMethods: ["GET", "PUT", "POST", "DELETE", "PATCH", "OPTIONS"], allowHeaders: DEFAULT_HEADERS, allowCredentials: true, maxAge: 1728000 } }],
        backendRefs: [{ name: "a", port: 80 }],
      }],
    });
    expect(noteOf("cors-list", `${N}cors-allow-origin`)?.text).toBe(
      'the CORS filter\'s allowOrigins, without what it cannot hold: origin "null" (allowOrigins takes http and https origins only); origin "ftp://files.test" (allowOrigins takes http and https origins only) (left out; see enable-cors for the other differences)',
    );
    expect(noteOf("cors-list", `${N}cors-allow-methods`)?.text).toContain('method "PURGE" (not in allowMethods\' enum)');
    const list = noteOf("cors-list", `${N}enable-cors`)!;
    expect(list.carriedAs).toBe("gateway-api");
    for (const clause of [
      "an answer that is not a preflight carries Access-Control-Allow-Origin only; ingress-nginx adds -Allow-Methods, -Allow-Headers and -Max-Age to it too",
      "the preflight's 204 has no `Content-Type: text/plain charset=UTF-8`",
      "Access-Control-Allow-Headers is sent lower-cased and joined with `, `",
      "a preflight from an Origin not allowed is answered 204 without CORS fields (ingress-nginx proxies it to the backend)",
      "an answer to a request with an Origin carries `Vary: Origin`",
    ]) expect(list.text).toContain(clause);
    const any = noteOf("cors-any", `${N}enable-cors`)!.text;
    expect(any).toContain("only a request with an Origin gets CORS fields (ingress-nginx's `*` mode puts them on every answer, with or without Origin)");
    expect(any).toContain("Access-Control-Allow-Origin echoes the Origin, with `Vary: Origin` (ingress-nginx adds none), where ingress-nginx sends `*`");
  });

  test("a host in regex mode: every path of every Ingress there is a RegularExpression match, as ingress-nginx writes it", () => {
    expect(route("regex")).toEqual({ parentRefs: [parent], hostnames: ["rx.test"], rules: [{ matches: [{ path: { type: "RegularExpression", value: "/api/v[0-9]+" } }], backendRefs: [{ name: "a", port: 80 }] }] });
    expect(route("plain-on-regex-host")).toEqual({ parentRefs: [parent], hostnames: ["rx.test"], rules: [{ matches: [{ path: { type: "RegularExpression", value: "/static" } }], backendRefs: [{ name: "b", port: 80 }] }] });
    expect(noteOf("plain-on-regex-host", "")).toEqual({
      ingress: "web/plain-on-regex-host",
      annotation: "",
      value: "",
      carriedAs: "implementation-specific",
      text: 'host rx.test is in ingress-nginx\'s regex mode (Ingress web/regex sets use-regex): this Ingress\'s paths are RegularExpression matches too, as ingress-nginx writes them (`~* "^<path>"`)',
    });
  });

  test("x-forwarded-prefix with the `(/|$)(.*)` rewrite, response headers and HSTS: header modifiers, no extension", () => {
    expect(route("prefixed")).toEqual({
      parentRefs: [parent],
      hostnames: ["rw.test"],
      rules: [{
        matches: [{ path: { type: "PathPrefix", value: "/app" } }],
        filters: [
          { type: "RequestHeaderModifier", requestHeaderModifier: { set: [{ name: "X-Forwarded-Prefix", value: "/app" }] } },
          { type: "URLRewrite", urlRewrite: { path: { type: "ReplacePrefixMatch", replacePrefixMatch: "/" } } },
        ],
        backendRefs: [{ name: "a", port: 80 }],
      }],
    });
    expect(noteOf("prefixed", `${N}x-forwarded-prefix`)?.carriedAs).toBe("gateway-api");
    // ingress-nginx's hsts defaults (max-age 31536000, includeSubDomains), on the HTTPS listener's route only.
    expect(route("secure")).toEqual({
      parentRefs: [{ ...parent, sectionName: "https-secure-test" }],
      hostnames: ["secure.test"],
      rules: [{
        matches: [{ path: { type: "PathPrefix", value: "/" } }],
        filters: [{ type: "ResponseHeaderModifier", responseHeaderModifier: { set: [{ name: "X-Frame-Options", value: "DENY" }, { name: "Strict-Transport-Security", value: "max-age=31536000; includeSubDomains" }] } }],
        backendRefs: [{ name: "b", port: 80 }],
      }],
    });
    expect(proof.objectsList.some((o) => o.kind === "IngressNginxPolicy")).toBe(false);
    // A configuration-snippet of literal header settings: the two modifiers (ingress-nginx runs
    // more_set_headers on every answer and proxy_set_header on every proxied request).
    expect(route("snippet-headers")).toEqual({
      parentRefs: [parent],
      hostnames: ["snip.test"],
      rules: [{
        matches: [{ path: { type: "PathPrefix", value: "/" } }],
        filters: [
          { type: "RequestHeaderModifier", requestHeaderModifier: { set: [{ name: "X-Tenant", value: "acme" }] } },
          { type: "ResponseHeaderModifier", responseHeaderModifier: { set: [{ name: "X-Frame-Options", value: "SAMEORIGIN" }] } },
        ],
        backendRefs: [{ name: "a", port: 80 }],
      }],
    });
    expect(noteOf("snippet-headers", `${N}configuration-snippet`)?.carriedAs).toBe("gateway-api");
  });

  test("the proof: every request of the sample gets the same answer from both forms but the stated differences", () => {
    // What differs, compactly: the request, both statuses, which backend got it, and the response fields only one side sent.
    const shown = proof.differing.map((d) => ({
      ask: `${d.request.method} ${d.request.scheme}://${d.request.host}${d.request.path}${d.request.why.includes(", ") ? ` (${d.request.why.slice(d.request.why.indexOf(", ") + 2)})` : ""}`,
      status: [d.ingress.status, d.gateway.status],
      backend: [d.ingress.received?.backend ?? null, d.gateway.received?.backend ?? null],
      onlyIngress: d.ingress.fields.filter((f) => !d.gateway.fields.includes(f)),
      onlyGateway: d.gateway.fields.filter((f) => !d.ingress.fields.includes(f)),
    }));
    const NGINX_HEADERS = "access-control-allow-headers: DNT,Keep-Alive,User-Agent,X-Requested-With,If-Modified-Since,Cache-Control,Content-Type,Range,Authorization";
    const GATEWAY_HEADERS = "access-control-allow-headers: dnt, keep-alive, user-agent, x-requested-with, if-modified-since, cache-control, content-type, range, authorization";
    const METHODS = "access-control-allow-methods: GET, PUT, POST, DELETE, PATCH, OPTIONS";
    const ANY_SIMPLE = ["access-control-allow-origin: *", NGINX_HEADERS, METHODS, "access-control-max-age: 1728000"].sort();
    expect(shown).toEqual([
      // An origin list: Portico's enable-cors puts Vary: Origin on every answer (ingress-nginx on none), the filter only with an Origin.
      { ask: "GET http://cors.test/", status: [200, 200], backend: ["web/a", "web/a"], onlyIngress: ["vary: Origin"], onlyGateway: [] },
      { ask: "OPTIONS http://cors.test/ (CORS preflight from an allowed Origin)", status: [204, 204], backend: [null, null], onlyIngress: [NGINX_HEADERS, "access-control-allow-methods: GET, POST, PURGE", "content-type: text/plain charset=UTF-8"], onlyGateway: [GATEWAY_HEADERS, "access-control-allow-methods: GET, POST"] },
      { ask: "GET http://cors.test/ (CORS simple request from an allowed Origin)", status: [200, 200], backend: ["web/a", "web/a"], onlyIngress: [NGINX_HEADERS, "access-control-allow-methods: GET, POST, PURGE", "access-control-max-age: 600"], onlyGateway: [] },
      { ask: "OPTIONS http://cors.test/ (CORS preflight from an Origin not in the list)", status: [200, 204], backend: ["web/a", null], onlyIngress: ["content-type: text/plain"], onlyGateway: [] },
      { ask: "GET http://cors.test/x", status: [200, 200], backend: ["web/a", "web/a"], onlyIngress: ["vary: Origin"], onlyGateway: [] },
      // `*` with credentials: ingress-nginx's fields on every answer, `*`; the filter echoes an Origin.
      { ask: "GET http://corsany.test/", status: [200, 200], backend: ["web/a", "web/a"], onlyIngress: ["access-control-allow-credentials: true", ...ANY_SIMPLE].sort(), onlyGateway: [] },
      { ask: "OPTIONS http://corsany.test/ (CORS preflight from an allowed Origin)", status: [204, 204], backend: [null, null], onlyIngress: [NGINX_HEADERS, "access-control-allow-origin: *", "content-type: text/plain charset=UTF-8"], onlyGateway: [GATEWAY_HEADERS, "access-control-allow-origin: https://origin.test", "vary: Origin"] },
      { ask: "GET http://corsany.test/ (CORS simple request from an allowed Origin)", status: [200, 200], backend: ["web/a", "web/a"], onlyIngress: ANY_SIMPLE, onlyGateway: ["access-control-allow-origin: https://origin.test", "vary: Origin"] },
      { ask: "OPTIONS http://corsany.test/ (CORS preflight from an Origin not in the list)", status: [204, 204], backend: [null, null], onlyIngress: [NGINX_HEADERS, "access-control-allow-origin: *", "content-type: text/plain charset=UTF-8"], onlyGateway: [GATEWAY_HEADERS, "access-control-allow-origin: https://not-allowed.test", "vary: Origin"] },
      { ask: "GET http://corsany.test/ (CORS simple request from an Origin not in the list)", status: [200, 200], backend: ["web/a", "web/a"], onlyIngress: ANY_SIMPLE, onlyGateway: ["access-control-allow-origin: https://not-allowed.test", "vary: Origin"] },
      { ask: "GET http://corsany.test/x", status: [200, 200], backend: ["web/a", "web/a"], onlyIngress: ["access-control-allow-credentials: true", ...ANY_SIMPLE].sort(), onlyGateway: [] },
      // The rewrite idiom as PathPrefix is case-sensitive; nginx's `~*` location is not (the rewrite-target note).
      { ask: "GET http://rw.test/APP/X", status: [200, 404], backend: ["web/a", null], onlyIngress: ["content-type: text/plain"], onlyGateway: ["cache-control: no-store", "content-type: text/html"] },
      { ask: "GET http://rw.test/APP", status: [200, 404], backend: ["web/a", null], onlyIngress: ["content-type: text/plain"], onlyGateway: ["cache-control: no-store", "content-type: text/html"] },
      // The HTTPS redirect keeps the `/` ingress-nginx cuts (the ssl-redirect note).
      { ask: "GET http://secure.test/", status: [308, 308], backend: [null, null], onlyIngress: ["location: https://secure.test"], onlyGateway: ["location: https://secure.test/"] },
      // Portico does not run the snippet when serving the Ingress; ingress-nginx did, as the Gateway API form does.
      { ask: "GET http://snip.test/", status: [200, 200], backend: ["web/a", "web/a"], onlyIngress: [], onlyGateway: ["x-frame-options: SAMEORIGIN"] },
      { ask: "GET http://snip.test/x", status: [200, 200], backend: ["web/a", "web/a"], onlyIngress: [], onlyGateway: ["x-frame-options: SAMEORIGIN"] },
    ]);
    for (const d of proof.differing.filter((x) => x.request.host === "snip.test")) expect(d.gateway.received?.fields.filter((f) => !d.ingress.received?.fields.includes(f))).toEqual(["x-tenant: acme"]);
    // The rest is the same: the regex host (a path matching the pattern, the case-insensitive
    // spread to /static), the rewritten request with its X-Forwarded-Prefix, HSTS and the response header.
    const asked = (host: string, path: string, scheme = "http") => proof.differing.some((d) => d.request.host === host && d.request.path === path && d.request.scheme === scheme);
    for (const [host, path, scheme] of [["rx.test", "/api/v1"], ["rx.test", "/API/V1"], ["rx.test", "/STATIC"], ["rx.test", "/staticx"], ["rw.test", "/app/x"], ["secure.test", "/", "https"]] as const) expect({ host, path, differs: asked(host, path, scheme) }).toEqual({ host, path, differs: false });
    expect(proof.asked).toBeGreaterThan(proof.differing.length + 10);
  });
});

describe("paths and hosts: a claimed path, spec.defaultBackend, a path that is its own rewrite-target, a wildcard TLS host, the implicit / location's redirect", () => {
  const SET = join(ROOT, "test", "fixtures", "migrate", "gateway", "hosts.yaml");
  let proof: ProofReport;
  beforeAll(async () => {
    proof = await prove(SET);
  });
  const parent = { group: "gateway.networking.k8s.io", kind: "Gateway", namespace: "portico", name: "portico" };
  const routes = () => Object.fromEntries(proof.objectsList.filter((o) => o.kind === "HTTPRoute").map((o) => [o.metadata?.name, o.spec]));
  const redirect = { type: "RequestRedirect", requestRedirect: { scheme: "https", hostname: "new.test", path: { type: "ReplaceFullPath", replaceFullPath: "/home" }, statusCode: 301 } };

  test("the routes written", () => {
    expect(routes()).toEqual({
      // The older Ingress's rule only (ingress-nginx serves the oldest claim); no route for the newer.
      older: { parentRefs: [parent], hostnames: ["claim.test"], rules: [{ matches: [{ path: { type: "PathPrefix", value: "/app" } }], backendRefs: [{ name: "b", port: 80 }] }] },
      // spec.defaultBackend: the host's root location.
      "with-default": {
        parentRefs: [parent],
        hostnames: ["fallback.test"],
        rules: [
          { matches: [{ path: { type: "PathPrefix", value: "/only" } }], backendRefs: [{ name: "a", port: 80 }] },
          { matches: [{ path: { type: "PathPrefix", value: "/" } }], backendRefs: [{ name: "b", port: 80 }] },
        ],
      },
      // Without rules: the catch-all server, a route without hostnames.
      "catch-all": { parentRefs: [parent], rules: [{ backendRefs: [{ name: "a", port: 80 }] }] },
      // `/docs` is its own target (no rewrite there); `/` is rewritten to it, which puts the host in regex mode.
      "same-target": {
        parentRefs: [parent],
        hostnames: ["same.test"],
        rules: [
          { matches: [{ path: { type: "RegularExpression", value: "/docs" } }], backendRefs: [{ name: "a", port: 80 }] },
          { matches: [{ path: { type: "RegularExpression", value: "/" } }], filters: [{ type: "URLRewrite", urlRewrite: { path: { type: "ReplaceFullPath", replaceFullPath: "/docs" } } }], backendRefs: [{ name: "b", port: 80 }] },
        ],
      },
      // one.apps.test is covered by the `*.apps.test` certificate: on its listener, with the redirect and HSTS.
      wild: {
        parentRefs: [{ ...parent, sectionName: "https-wildcard-apps-test" }],
        hostnames: ["one.apps.test"],
        rules: [{ matches: [{ path: { type: "PathPrefix", value: "/shop" } }], filters: [{ type: "ResponseHeaderModifier", responseHeaderModifier: { set: [{ name: "Strict-Transport-Security", value: "max-age=31536000; includeSubDomains" }] } }], backendRefs: [{ name: "a", port: 80 }] }],
      },
      "wild-to-https": { parentRefs: [{ ...parent, sectionName: "http" }], hostnames: ["one.apps.test"], rules: [{ filters: [{ type: "RequestRedirect", requestRedirect: { scheme: "https", statusCode: 308 } }] }] },
      // The implicit `/` location carries the redirect of the host's first Ingress.
      moved: {
        parentRefs: [parent],
        hostnames: ["moved.test"],
        rules: [{ matches: [{ path: { type: "PathPrefix", value: "/old" } }], filters: [redirect] }, { matches: [{ path: { type: "PathPrefix", value: "/" } }], filters: [redirect] }],
      },
    });
    expect(proof.notesList.find((n) => n.ingress === "web/newer")?.text).toBe('path "/app" on claim.test: Ingress web/older is older and serves it, as in ingress-nginx; this Ingress\'s rule for it is not written');
    expect(proof.exitCode).toBe(0);
  });

  test("the proof: every answer the same but HSTS on an HTTPS answer the catch-all route gives", () => {
    expect(proof.differing.map((d) => [d.request.scheme, d.request.host, d.request.path, d.ingress.status, d.gateway.status, d.ingress.received?.backend, d.gateway.received?.backend, d.ingress.fields.filter((f) => !d.gateway.fields.includes(f)), d.gateway.fields.filter((f) => !d.ingress.fields.includes(f))])).toEqual([
      ["https", "one.apps.test", "/shopx", 200, 200, "web/a", "web/a", ["strict-transport-security: max-age=31536000; includeSubDomains"], []],
      ["https", "one.apps.test", "/SHOP", 200, 200, "web/a", "web/a", ["strict-transport-security: max-age=31536000; includeSubDomains"], []],
    ]);
    // 28 requests: each host's paths (and the paths next to them), HTTPS for one.apps.test.
    expect(proof.asked).toBe(28);
    expect(proof.notesList.find((n) => n.ingress === "web/wild" && n.annotation === "")?.text).toContain("an HTTPS answer no rule of the host's routes gives (a 404, a route without hostnames) carries none");
  });
});

describe("host settings said by Gateway API, not copied into the policy: upstream-vhost, server-alias, from-to-www-redirect, error pages, a capture-free regex rewrite, an absolute rewrite-target, Portico's force-ssl-redirect, canary-* on no canary", () => {
  const SET = join(ROOT, "test", "fixtures", "migrate", "gateway", "host-settings.yaml");
  let proof: ProofReport;
  beforeAll(async () => {
    // The sample asks the aliases and the www name too (src/runtime/prove.ts sampleOf).
    proof = await prove(SET);
  });
  const parent = { group: "gateway.networking.k8s.io", kind: "Gateway", namespace: "portico", name: "portico" };
  const to = (name: string) => [{ name, port: 80 }];

  test("the objects written: no IngressNginxPolicy, no ExtensionRef", () => {
    expect(proof.objectsList.filter((o) => o.kind === "IngressNginxPolicy")).toEqual([]);
    expect(Object.fromEntries(proof.objectsList.filter((o) => o.kind === "HTTPRoute").map((o) => [o.metadata?.name, o.spec]))).toEqual({
      // upstream-vhost: the Host the backend gets.
      vhost: { parentRefs: [parent], hostnames: ["vhost.test"], rules: [{ matches: [{ path: { type: "PathPrefix", value: "/" } }], filters: [{ type: "URLRewrite", urlRewrite: { hostname: "internal.example" } }], backendRefs: to("a") }] },
      // server-alias: vhost.test is an Ingress host, which wins; alias-two.test is another hostname of the route.
      alias: { parentRefs: [parent], hostnames: ["alias.test", "alias-two.test"], rules: [{ matches: [{ path: { type: "PathPrefix", value: "/app" } }], backendRefs: to("b") }] },
      // An alias names the whole server: another Ingress's route of the host takes it too.
      "alias-more": { parentRefs: [parent], hostnames: ["alias.test", "alias-two.test"], rules: [{ matches: [{ path: { type: "PathPrefix", value: "/more" } }], backendRefs: to("a") }] },
      // from-to-www-redirect: the other name's route redirects to the host with http-redirect-code.
      brand: { parentRefs: [parent], hostnames: ["brand.test"], rules: [{ matches: [{ path: { type: "PathPrefix", value: "/" } }], backendRefs: to("a") }] },
      "brand-from-www": { parentRefs: [parent], hostnames: ["www.brand.test"], rules: [{ filters: [{ type: "RequestRedirect", requestRedirect: { hostname: "brand.test", statusCode: 308 } }] }] },
      // default-backend and custom-http-errors: nothing to write (noted).
      errors: { parentRefs: [parent], hostnames: ["errors.test"], rules: [{ matches: [{ path: { type: "PathPrefix", value: "/" } }], backendRefs: to("a") }] },
      // `/$2` on `/healthz`, which has no groups: each capture is empty, the target the literal `/`.
      captures: {
        parentRefs: [parent],
        hostnames: ["rw.test"],
        rules: [
          { matches: [{ path: { type: "PathPrefix", value: "/v1" } }], filters: [{ type: "URLRewrite", urlRewrite: { path: { type: "ReplacePrefixMatch", replacePrefixMatch: "/" } } }], backendRefs: to("a") },
          { matches: [{ path: { type: "RegularExpression", value: "/healthz" } }], filters: [{ type: "URLRewrite", urlRewrite: { path: { type: "ReplaceFullPath", replaceFullPath: "/" } } }], backendRefs: to("b") },
        ],
      },
      // An absolute target: nginx answers 302 to it (the query string appended), as RequestRedirect does.
      // portico.dev/force-ssl-redirect: the HTTP listener's redirect route and the HTTPS route with HSTS.
      forced: {
        parentRefs: [{ ...parent, sectionName: "https-forced-test" }],
        hostnames: ["forced.test"],
        rules: [{ matches: [{ path: { type: "PathPrefix", value: "/" } }], filters: [{ type: "ResponseHeaderModifier", responseHeaderModifier: { set: [{ name: "Strict-Transport-Security", value: "max-age=31536000; includeSubDomains" }] } }], backendRefs: to("a") }],
      },
      "forced-to-https": { parentRefs: [{ ...parent, sectionName: "http" }], hostnames: ["forced.test"], rules: [{ filters: [{ type: "RequestRedirect", requestRedirect: { scheme: "https", statusCode: 308 } }] }] },
      // `canary: "false"`: ingress-nginx reads no canary-* key; a plain route.
      "not-canary": { parentRefs: [parent], hostnames: ["not-canary.test"], rules: [{ matches: [{ path: { type: "PathPrefix", value: "/" } }], backendRefs: to("b") }] },
      away: { parentRefs: [parent], hostnames: ["away.test"], rules: [{ matches: [{ path: { type: "RegularExpression", value: "/foo" } }], filters: [{ type: "RequestRedirect", requestRedirect: { scheme: "https", hostname: "elsewhere.example", path: { type: "ReplaceFullPath", replaceFullPath: "/landing" }, statusCode: 302 } }] }] },
    });
    const carried = Object.fromEntries(proof.notesList.filter((x) => x.annotation !== "").map((x) => [`${x.ingress} ${x.annotation.replace(N, "")}`, x.carriedAs]));
    expect(carried).toEqual({
      "web/vhost upstream-vhost": "gateway-api",
      "web/alias server-alias": "gateway-api",
      "web/brand from-to-www-redirect": "gateway-api",
      "web/errors default-backend": "not-expressible",
      "web/errors custom-http-errors": "not-expressible",
      "web/captures rewrite-target": "gateway-api",
      "web/captures use-regex": "implementation-specific",
      "web/away rewrite-target": "gateway-api",
      "web/forced portico.dev/force-ssl-redirect": "gateway-api",
      "web/not-canary canary": "gateway-api",
      "web/not-canary canary-weight": "gateway-api",
    });
    expect(proof.exitCode).toBe(3);
  });

  test("the proof: the same answers but the stated differences (the www redirect's Location, the case of the rewrite idiom's prefix)", () => {
    expect(proof.differing.map((d) => [d.request.host + d.request.path, d.ingress.status, d.gateway.status, d.ingress.location, d.gateway.location, d.ingress.received?.backend ?? null, d.gateway.received?.backend ?? null])).toEqual([
      // The from-to-www-redirect note: no `:80`, and the trailing `/` kept.
      ["www.brand.test/", 308, 308, "http://brand.test:80", "http://brand.test/", null, null],
      ["www.brand.test/x", 308, 308, "http://brand.test:80/x", "http://brand.test/x", null, null],
      ["www.brand.test/x/", 308, 308, "http://brand.test:80/x", "http://brand.test/x/", null, null],
      ["www.brand.test/x/x", 308, 308, "http://brand.test:80/x/x", "http://brand.test/x/x", null, null],
      ["www.brand.test/xx", 308, 308, "http://brand.test:80/xx", "http://brand.test/xx", null, null],
      ["www.brand.test/X/", 308, 308, "http://brand.test:80/X", "http://brand.test/X/", null, null],
      // The rewrite-target note: the idiom's PathPrefix is case-sensitive, nginx's `~*` location is not.
      ["rw.test/V1/X", 200, 404, null, null, "web/a", null],
      ["rw.test/V1", 200, 404, null, null, "web/a", null],
      // The ssl-redirect note: the HTTPS redirect keeps the `/` ingress-nginx cuts.
      ["forced.test/", 308, 308, "https://forced.test", "https://forced.test/", null, null],
    ]);
    // The rest (the Host internal.example, the alias, errors.test, /healthz rewritten to `/`,
    // away.test's 302, not-canary.test, alias-two.test's /app and /more, vhost.test/app: the alias that is an Ingress host is not one) is the same on both sides.
    expect(proof.asked).toBe(56);
  });
});
