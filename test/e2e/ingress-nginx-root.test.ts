// ingress-nginx's implicit "/" location through the real Portico process (--manifests): a path
// that no path of a host matches is not a bare 404 or default-backend answer; it runs the
// policies of the host's first Ingress, then goes to the default backend. Each expected answer
// names the ingress-nginx source (kubernetes/ingress-nginx at dbb11b92) it follows:
//   CS   internal/ingress/controller/controller.go createServers: every host gets a location
//        "/" (`IsDefBackend: true`, `Backend: un`, the default upstream) with
//        locationApplyAnnotations(loc, anns) of the first Ingress (in ListIngresses order) that
//        names the host; canary Ingresses are skipped;
//   LAA  controller.go locationApplyAnnotations: the annotations that location carries
//        (BasicDigestAuth, ExternalAuth, Redirect, Rewrite, Allowlist, Denylist, Proxy (its
//        body size: nginx client_max_body_size, 413 above it), ...);
//   GBS  controller.go getBackendServers: only a Prefix "/" path replaces that location;
//   SORT internal/ingress/controller/store/store.go sortIngressSlice: oldest creationTimestamp first;
//   TPL  rootfs/etc/nginx/template/nginx.tmpl: the location's `return <code> <url>` for
//        permanent-redirect, auth_basic for basic auth, the Lua HTTPS redirect;
//   TG   internal/ingress/controller/template/template.go buildProxyPass: `rewrite "(?i)/"
//        <target> break;` for the location "/" (an http(s):// target is nginx's 302, the
//        request's arguments appended: ngx_http_rewrite_module.c).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { rawRequest } from "../proxy/helpers.ts";
import { namedBackend, type RawBackend } from "../proxy/raw.ts";
import { startPortico, type Portico } from "./harness.ts";
import { ingress, ingressClass, service, slice } from "./objects.ts";

const N = "nginx.ingress.kubernetes.io/";
const SERVICES = ["app", "fallback", "older", "newer"] as const;
type Svc = (typeof SERVICES)[number];

// alice:$apr1$abcdefgh$h9FWgUz3n9YxylKLlR5SQ/ (the password is "secret"), as test/fixtures/answers.yaml.
const HTPASSWD = "YWxpY2U6JGFwcjEkYWJjZGVmZ2gkaDlGV2dVejNuOVl4eWxLTGxSNVNRLwo=";
const ALICE = `Basic ${Buffer.from("alice:secret").toString("base64")}`;

const at = (o: Record<string, unknown>, created: string): Record<string, unknown> => ({
  ...o,
  metadata: { ...(o.metadata as Record<string, unknown>), creationTimestamp: created },
});

const INGRESSES = [
  // The first case: only /foo and /bar, with basic authentication.
  ingress("web", "auth", [{ host: "auth.root.test", paths: [{ path: "/foo", service: "app" }, { path: "/bar", service: "app" }] }], {
    annotations: { [`${N}auth-type`]: "basic", [`${N}auth-secret`]: "users", [`${N}auth-realm`]: "Staff only" },
  }),
  // permanent-redirect on /old.
  ingress("web", "moved", [{ host: "moved.root.test", paths: [{ path: "/old", service: "app" }] }], {
    annotations: { [`${N}permanent-redirect`]: "https://new.example.com/home" },
  }),
  // An absolute rewrite-target (the host is in regex mode).
  ingress("web", "away", [{ host: "away.root.test", paths: [{ path: "/foo", type: "ImplementationSpecific", service: "app" }] }], {
    annotations: { [`${N}rewrite-target`]: "https://elsewhere.example/landing" },
  }),
  // A Prefix "/" path replaces the implicit location: its own policies and backend.
  ingress("web", "rooted", [{ host: "rooted.root.test", paths: [{ path: "/", service: "app" }] }]),
  // Two Ingresses on one host: the older one's policies (none) apply to the implicit location,
  // not the newer one's redirect.
  at(ingress("web", "a-newer", [{ host: "order.root.test", paths: [{ path: "/new", service: "newer" }] }], {
    annotations: { [`${N}permanent-redirect`]: "https://newer.example.com/" },
  }), "2024-02-01T00:00:00Z"),
  at(ingress("web", "z-older", [{ host: "order.root.test", paths: [{ path: "/old", service: "older" }] }]), "2024-01-01T00:00:00Z"),
  // ... and the other way round.
  at(ingress("web", "b-older", [{ host: "order2.root.test", paths: [{ path: "/old", service: "older" }] }], {
    annotations: { [`${N}permanent-redirect`]: "https://older.example.com/" },
  }), "2024-01-01T00:00:00Z"),
  at(ingress("web", "y-newer", [{ host: "order2.root.test", paths: [{ path: "/new", service: "newer" }] }]), "2024-02-01T00:00:00Z"),
  // proxy-body-size only (no policy that answers by itself): the implicit location's limit.
  ingress("web", "small", [{ host: "small.root.test", paths: [{ path: "/upload", service: "app" }] }], {
    annotations: { [`${N}proxy-body-size`]: "1k" },
  }),
  // The catch-all: an Ingress with only a spec.defaultBackend (the oldest: it wins over
  // --default-backend-service, as ingress-nginx's catch-all server takes it).
  at(ingress("web", "catch-all", [], { defaultBackend: "fallback" }), "2020-01-01T00:00:00Z"),
  // An Ingress with rules and a spec.defaultBackend: its hosts' implicit location goes there (CS `un`).
  at(ingress("web", "own-default", [{ host: "owndefault.root.test", paths: [{ path: "/x", service: "app" }] }], { defaultBackend: "newer" }), "2024-03-01T00:00:00Z"),
  // A source-range allow list that the test client (127.0.0.1) is not in.
  ingress("web", "office", [{ host: "office.root.test", paths: [{ path: "/intranet", service: "app" }] }], {
    annotations: { [`${N}whitelist-source-range`]: "10.0.0.0/8" },
  }),
];

interface Expect {
  readonly status: number;
  readonly backend?: Svc;
  readonly line?: string;
  readonly location?: string;
  readonly challenge?: string;
}

interface Case {
  readonly name: string;
  readonly source: string;
  readonly host: string;
  readonly target: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly expect: Expect;
}

const proxied = (backend: Svc, line: string): Expect => ({ status: 200, backend, line });

const CASES: Case[] = [
  { name: "basic auth runs on a path no Ingress has: 401", source: "CS; LAA BasicDigestAuth; TPL auth_basic", host: "auth.root.test", target: "/?a=b", expect: { status: 401, challenge: 'Basic realm="Staff only"' } },
  { name: "... with credentials: the default backend, the request as sent", source: "CS (Backend: the default upstream)", host: "auth.root.test", target: "/?a=b", headers: { Authorization: ALICE }, expect: proxied("fallback", "GET /?a=b HTTP/1.1") },
  { name: "... and any other path", source: "CS", host: "auth.root.test", target: "/elsewhere/x", headers: { Authorization: ALICE }, expect: proxied("fallback", "GET /elsewhere/x HTTP/1.1") },
  { name: "the Ingress's own path", source: "GBS", host: "auth.root.test", target: "/foo", headers: { Authorization: ALICE }, expect: proxied("app", "GET /foo HTTP/1.1") },
  { name: "permanent-redirect answers a path no Ingress has: 301", source: "CS; LAA Redirect; TPL `return 301 <url>`", host: "moved.root.test", target: "/elsewhere", expect: { status: 301, location: "https://new.example.com/home" } },
  { name: "an absolute rewrite-target answers the implicit location: 302, arguments appended", source: "CS; LAA Rewrite; TG buildProxyPass", host: "away.root.test", target: "/other?a=b", expect: { status: 302, location: "https://elsewhere.example/landing?a=b" } },
  { name: "a Prefix / path replaces the implicit location", source: "GBS", host: "rooted.root.test", target: "/anything", expect: proxied("app", "GET /anything HTTP/1.1") },
  { name: "the older Ingress decides: no redirect, the default backend", source: "SORT; CS (first Ingress of the host)", host: "order.root.test", target: "/elsewhere", expect: proxied("fallback", "GET /elsewhere HTTP/1.1") },
  { name: "... the newer one's redirect stays on its own path", source: "LAA", host: "order.root.test", target: "/new", expect: { status: 301, location: "https://newer.example.com/" } },
  { name: "the older Ingress's redirect applies to the implicit location", source: "SORT; CS", host: "order2.root.test", target: "/elsewhere", expect: { status: 301, location: "https://older.example.com/" } },
  { name: "... and the newer Ingress's path is its own", source: "GBS", host: "order2.root.test", target: "/new", expect: proxied("newer", "GET /new HTTP/1.1") },
  { name: "a source-range allow list refuses the implicit location: 403", source: "CS; LAA Allowlist", host: "office.root.test", target: "/", expect: { status: 403 } },
  { name: "a host nobody names: the default backend", source: "CS (the catch-all server `_`)", host: "nobody.root.test", target: "/x", expect: proxied("fallback", "GET /x HTTP/1.1") },
  { name: "the first Ingress's own spec.defaultBackend takes its host's other paths", source: "CS (`un`: the Ingress's spec.defaultBackend, \"for all its rules\")", host: "owndefault.root.test", target: "/elsewhere", expect: proxied("newer", "GET /elsewhere HTTP/1.1") },
  { name: "... and its own path is its own", source: "GBS", host: "owndefault.root.test", target: "/x", expect: proxied("app", "GET /x HTTP/1.1") },
];

let dir = "";
let portico: Portico;
const backends = new Map<Svc, RawBackend>();

beforeAll(async () => {
  for (const s of SERVICES) backends.set(s, await namedBackend(s));
  dir = mkdtempSync(join(tmpdir(), "portico-root-"));
  const objects = [
    ingressClass(),
    ...SERVICES.flatMap((s) => [service("web", s), slice("web", s, [(backends.get(s) as RawBackend).port])]),
    { apiVersion: "v1", kind: "Secret", type: "Opaque", metadata: { name: "users", namespace: "web" }, data: { auth: HTPASSWD } },
    ...INGRESSES,
  ];
  writeFileSync(join(dir, "all.yaml"), objects.map((o) => JSON.stringify(o)).join("\n---\n"));
  portico = await startPortico(["--manifests", dir, "--default-backend-service", "web/fallback:80"]);
});

afterAll(async () => {
  await portico?.stop();
  for (const b of backends.values()) await b.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

let sent = 0;

describe("ingress-nginx's implicit / location, request by request", () => {
  for (const c of CASES) {
    test(`${c.host} ${c.target}: ${c.name} [${c.source}]`, async () => {
      const id = `root-test-${++sent}`;
      const extra = Object.entries(c.headers ?? {}).map(([k, v]) => `${k}: ${v}\r\n`).join("");
      const raw = await rawRequest(portico.ports.http, `GET ${c.target} HTTP/1.1\r\nHost: ${c.host}\r\nX-Request-ID: ${id}\r\n${extra}Connection: close\r\n\r\n`, 20_000);
      const head = raw.slice(0, raw.indexOf("\r\n\r\n"));
      const hits = [...backends].flatMap(([svc, b]) => b.hits.filter((h) => h.head.includes(`\r\nx-request-id: ${id}\r\n`) || h.head.includes(`\r\nX-Request-ID: ${id}\r\n`)).map((h) => [svc, h] as const));
      expect(hits.length).toBeLessThanOrEqual(1);
      const [svc, hit] = hits[0] ?? [null, null];
      expect({
        status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0),
        backend: svc,
        line: hit?.line ?? null,
        location: /\r\nlocation: ([^\r]*)/i.exec(head)?.[1] ?? null,
        challenge: /\r\nwww-authenticate: ([^\r]*)/i.exec(head)?.[1] ?? null,
      }).toEqual({
        status: c.expect.status,
        backend: c.expect.backend ?? null,
        line: c.expect.line ?? null,
        location: c.expect.location ?? null,
        challenge: c.expect.challenge ?? null,
      });
    });
  }
});

describe("the implicit location carries the first Ingress's body size", () => {
  const post = async (path: string, bytes: number) => {
    const res = await fetch(`${portico.http}${path}`, { method: "POST", headers: { host: "small.root.test" }, body: "x".repeat(bytes) });
    await res.text();
    return res.status;
  };
  test("a POST over proxy-body-size to a path no Ingress has: 413 [CS; LAA Proxy]", async () => {
    const before = (backends.get("fallback") as RawBackend).hits.length;
    expect(await post("/elsewhere", 2048)).toBe(413);
    expect((backends.get("fallback") as RawBackend).hits.length).toBe(before);
  });
  test("... under it: the default backend", async () => {
    expect(await post("/elsewhere", 512)).toBe(200);
    expect((backends.get("fallback") as RawBackend).hits.at(-1)?.line).toBe("POST /elsewhere HTTP/1.1");
  });
});
