// ingress-nginx's regex-mode routing and rewrite-target, one host at a time, through the whole
// chain the compiler will use: hostUsesRegex → compileRegexHost (expand, order, compile) →
// first match → rewrite. Expected values come from the sources named on each test:
//   BLOG = kubernetes.io blog "Before You Migrate: Five Surprising Ingress-NGINX Behaviors You
//          Need to Know" (2026-02-27), sections 1-3;
//   PM   = ingress-nginx docs/user-guide/ingress-path-matching.md;
//   RW   = ingress-nginx docs/examples/rewrite/README.md;
//   E2E  = ingress-nginx test/e2e/annotations/rewrite.go;
//   LOC  = ingress-nginx internal/ingress/controller/location.go updateServerLocations.
import { describe, expect, test } from "bun:test";
import { compileRegexHost, compileRewriteTarget, type HostPath, hostUsesRegex, isValidRewriteTarget, needsRewrite } from "./index.ts";

interface Ref {
  readonly backend: string;
  readonly rewriteTarget: string;
}

/** One path of one Ingress: annotations as ingress-nginx would have parsed them. */
function path(
  p: string,
  pathType: HostPath<Ref>["pathType"],
  backend: string,
  ann: { useRegex?: boolean; rewriteTarget?: string } = {},
): HostPath<Ref> {
  const raw = ann.rewriteTarget ?? "";
  const rewriteTarget = isValidRewriteTarget(raw) ? raw : "";
  return { path: p, pathType, useRegex: ann.useRegex ?? false, rewriteTarget, ref: { backend, rewriteTarget } };
}

/** The implicit "/" location every host gets (controller.go createServers), to the default backend. */
const root = (ann: { useRegex?: boolean; rewriteTarget?: string } = {}) => path("/", "Prefix", "default-backend", ann);

/** What nginx does with `uri` on this host: the backend and the URI it is sent (or null: no location). */
function serve(paths: HostPath<Ref>[], uri: string): { backend: string; uri: string } | null {
  expect(hostUsesRegex(paths)).toBe(true);
  const host = compileRegexHost(paths);
  expect(host.refused).toEqual([]);
  const hit = host.match(uri);
  if (hit === null) return null;
  const loc = hit.location;
  const ref = loc.location.ref;
  // template.go buildProxyPass: a rewrite only where the location's own target differs from its path.
  if (loc.location.origin !== "as-written" || !needsRewrite({ path: loc.location.path, rewriteTarget: ref.rewriteTarget })) {
    return { backend: ref.backend, uri };
  }
  const rw = compileRewriteTarget(ref.rewriteTarget, loc.re);
  if (!rw.ok) throw new Error(rw.reason);
  return { backend: ref.backend, uri: rw.rewrite.expand(hit.match) };
}

describe("regex paths are case-insensitive prefix matches (BLOG §1)", () => {
  const host = [root(), path("/[A-Z]{3}", "ImplementationSpecific", "httpbin", { useRegex: true })];

  test("/[A-Z]{3} serves /uuid and /uuid/some/other/path", () => {
    expect(serve(host, "/uuid")).toEqual({ backend: "httpbin", uri: "/uuid" });
    expect(serve(host, "/uuid/some/other/path")).toEqual({ backend: "httpbin", uri: "/uuid/some/other/path" });
    expect(serve(host, "/ABC")).toEqual({ backend: "httpbin", uri: "/ABC" });
  });

  test("a path with fewer than three letters falls through to the implicit / location", () => {
    expect(serve(host, "/ab")).toEqual({ backend: "default-backend", uri: "/ab" });
    expect(serve(host, "/a1b")).toEqual({ backend: "default-backend", uri: "/a1b" });
  });
});

describe("use-regex applies to every path of the host, across Ingresses (BLOG §2)", () => {
  const regexIngress = path("/api/v[0-9]+", "ImplementationSpecific", "api", { useRegex: true });
  const other = path("/Header", "Exact", "httpbin");

  test("a sibling Ingress's Exact /Header serves /headers", () => {
    const host = [root(), regexIngress, other];
    expect(serve(host, "/headers")).toEqual({ backend: "httpbin", uri: "/headers" });
    expect(serve(host, "/HEADER/x")).toEqual({ backend: "httpbin", uri: "/HEADER/x" });
    expect(serve(host, "/api/v2/users")).toEqual({ backend: "api", uri: "/api/v2/users" });
  });

  test("without the use-regex Ingress the host is not in regex mode", () => {
    expect(hostUsesRegex([root(), other])).toBe(false);
  });
});

describe("rewrite-target implies regex for the whole host (BLOG §3)", () => {
  const host = [root(), path("/IP", "Exact", "httpbin", { rewriteTarget: "/uuid" }), path("/Header", "Exact", "httpbin")];

  test("/ip is rewritten to /uuid and /headers reaches the Exact /Header location unchanged", () => {
    expect(hostUsesRegex(host)).toBe(true);
    expect(serve(host, "/ip")).toEqual({ backend: "httpbin", uri: "/uuid" });
    expect(serve(host, "/ip/anything")).toEqual({ backend: "httpbin", uri: "/uuid" });
    expect(serve(host, "/headers")).toEqual({ backend: "httpbin", uri: "/headers" });
  });

  test("a target equal to the path, or one ingress-nginx refuses, implies nothing (template.go needsRewrite, rewrite/main.go)", () => {
    expect(hostUsesRegex([root(), path("/IP", "Exact", "httpbin", { rewriteTarget: "/IP" })])).toBe(false);
    expect(hostUsesRegex([root(), path("/IP", "Exact", "httpbin", { rewriteTarget: "/uuid?x=1" })])).toBe(false);
  });
});

describe("first matching regex wins, longest path first (PM)", () => {
  test("documented trap: /foo/bar/[A-Z0-9]{3} beats /foo/bar/bar for /foo/bar/bar (PM, Warning)", () => {
    const host = [
      root(),
      path("/foo/bar/bar", "Prefix", "exact-looking", { useRegex: true }),
      path("/foo/bar/[A-Z0-9]{3}", "ImplementationSpecific", "regex", { useRegex: true }),
    ];
    expect(serve(host, "/foo/bar/bar")).toEqual({ backend: "regex", uri: "/foo/bar/bar" });
    expect(compileRegexHost(host).locations.map((l) => l.location.path)).toEqual(["/foo/bar/[A-Z0-9]{3}", "/foo/bar/bar", "/"]);
  });

  test("the same with the plain path in another Ingress and a rewrite (E2E 'should fail to use longest match for documented warning')", () => {
    const host = [
      root(),
      path("/foo/bar/bar", "Prefix", "plain"),
      path("/foo/bar/[a-z]{3}", "ImplementationSpecific", "regex", { useRegex: true, rewriteTarget: "/new/backend" }),
    ];
    expect(serve(host, "/foo/bar/bar")).toEqual({ backend: "regex", uri: "/new/backend" });
  });

  test("Path Priority example: /foo/bar/1 → service3; /foo/bar → service1; /foo/bar/ → service1, not the documented service2 (LOC)", () => {
    // The page predates location.go: the plain Prefix /foo/bar now also yields "^/foo/bar/",
    // which comes before service2's identical location (stable sort, input order), so nginx
    // gives /foo/bar/ to service1. The code is what runs; the note lists this disagreement.
    const host = [
      root(),
      path("/foo/bar", "Prefix", "service1"),
      path("/foo/bar/", "Prefix", "service2"),
      path("/foo/bar/(.+)", "ImplementationSpecific", "service3", { rewriteTarget: "/$1" }),
    ];
    expect(serve(host, "/foo/bar/1")).toEqual({ backend: "service3", uri: "/1" });
    expect(serve(host, "/foo/bar")).toEqual({ backend: "service1", uri: "/foo/bar" });
    expect(serve(host, "/foo/bar/")).toEqual({ backend: "service1", uri: "/foo/bar/" });
    expect(compileRegexHost(host).locations.map((l) => `${l.location.path} ${l.location.ref.backend}`)).toEqual([
      "/foo/bar/(.+) service3",
      "/foo/bar/ service1",
      "/foo/bar/ service2",
      "/foo/bar/ service2",
      "/foo/bar service1",
      "/ default-backend",
    ]);
  });

  test("a plain Prefix path keeps its exact copy: /foo stays with it, /foo/bar goes to /foo.+ (E2E 'should use ~* location modifier')", () => {
    const host = [root(), path("/foo", "Prefix", "plain"), path("/foo.+", "ImplementationSpecific", "regex", { useRegex: true, rewriteTarget: "/new/backend" })];
    expect(serve(host, "/foo")).toEqual({ backend: "plain", uri: "/foo" });
    expect(serve(host, "/foo/bar")).toEqual({ backend: "regex", uri: "/new/backend" });
  });

  test("a rewrite on / does not capture longer plain paths (E2E 'should use correct longest path match')", () => {
    const host = [path("/", "Prefix", "rewritten", { rewriteTarget: "/new/backend" }), path("/.well-known/acme/challenge", "Prefix", "acme")];
    expect(serve(host, "/.well-known/acme/challenge")).toEqual({ backend: "acme", uri: "/.well-known/acme/challenge" });
    expect(serve(host, "/other")).toEqual({ backend: "rewritten", uri: "/new/backend" });
  });

  test("paths go in raw: '.' matches any character", () => {
    const host = [root(), path("/.well-known", "Prefix", "acme", { useRegex: true })];
    expect(serve(host, "/Xwell-known/x")).toEqual({ backend: "acme", uri: "/Xwell-known/x" });
  });
});

describe("rewrite-target captures (RW, E2E)", () => {
  const host = [root(), path("/something(/|$)(.*)", "ImplementationSpecific", "http-svc", { useRegex: true, rewriteTarget: "/$2" })];

  test("/something(/|$)(.*) with /$2: /something → /, /something/ → /, /something/new → /new (RW)", () => {
    expect(serve(host, "/something")).toEqual({ backend: "http-svc", uri: "/" });
    expect(serve(host, "/something/")).toEqual({ backend: "http-svc", uri: "/" });
    expect(serve(host, "/something/new")).toEqual({ backend: "http-svc", uri: "/new" });
  });

  test("/foo/bar/(.+) with /new/backend/$1: /foo/bar/bar → /new/backend/bar (E2E 'should allow for custom rewrite parameters')", () => {
    const h = [root(), path("/foo/bar/(.+)", "ImplementationSpecific", "echo", { useRegex: true, rewriteTarget: "/new/backend/$1" })];
    expect(serve(h, "/foo/bar/bar")).toEqual({ backend: "echo", uri: "/new/backend/bar" });
  });

  test("/something → / with target / (E2E 'should write rewrite logs': rewritten data \"/\")", () => {
    const h = [root(), path("/something", "Prefix", "echo", { rewriteTarget: "/" })];
    expect(serve(h, "/something")).toEqual({ backend: "echo", uri: "/" });
  });
});
