// The redirect, hosts and backend-protocol families read values as ingress-nginx's parsers
// do, including what an invalid value leads to there (internal/ingress/annotations/redirect,
// rewrite, portinredirect, upstreamvhost, backendprotocol; annotations.go Extract): a
// malformed redirect value refuses the Ingress, an empty one turns the redirect group off.
import { describe, expect, test } from "bun:test";
import { parseAnnotations } from "../compile/annotations.ts";
import { goUrlScheme } from "./redirects.ts";
import { NGINX_PREFIX } from "./spec.ts";

const parse = (ann: Record<string, string>) =>
  parseAnnotations(Object.fromEntries(Object.entries(ann).map(([k, v]) => [k.includes("/") ? k : `${NGINX_PREFIX}${k}`, v])));
const kinds = (ann: Record<string, string>) => parse(ann).options.stages?.map((s) => `${s.stage}/${s.kind}`) ?? [];
const redirectOf = (ann: Record<string, string>) => parse(ann).options.stages?.find((s) => s.kind === "redirect")?.params ?? null;
const DENIED = ["denied/denied"];

describe("redirect group (redirect.go Parse, in its order)", () => {
  test.each([
    // [annotations, expected redirect params]
    [{ "permanent-redirect": "https://x.example/a" }, { url: "https://x.example/a", code: 301, relative: false }],
    [{ "permanent-redirect": "https://x.example/", "permanent-redirect-code": "308" }, { url: "https://x.example/", code: 308, relative: false }],
    [{ "permanent-redirect": "https://x.example/", "permanent-redirect-code": "+302" }, { url: "https://x.example/", code: 302, relative: false }],
    [{ "permanent-redirect": "https://x.example/", "permanent-redirect-code": "309" }, { url: "https://x.example/", code: 301, relative: false }],
    [{ "permanent-redirect": "https://x.example/", "permanent-redirect-code": "-1" }, { url: "https://x.example/", code: 301, relative: false }],
    [{ "permanent-redirect": "https://x.example/", "permanent-redirect-code": "99999999999999999999" }, null],
    [{ "permanent-redirect": "/local", "relative-redirects": "true" }, { url: "/local", code: 301, relative: true }],
    // No scheme check for permanent-redirect (only temporal's isValidURL).
    [{ "permanent-redirect": "mailto:x" }, { url: "mailto:x", code: 301, relative: false }],
    [{ "temporal-redirect": "https://t.example/" }, { url: "https://t.example/", code: 302, relative: false }],
    [{ "temporal-redirect": "HTTP://t.example/", "temporal-redirect-code": "307" }, { url: "HTTP://t.example/", code: 307, relative: false }],
    [{ "temporal-redirect": "https://t.example/", "temporal-redirect-code": "308" }, { url: "https://t.example/", code: 302, relative: false }],
    // temporal wins, and permanent-redirect is then not read at all (a malformed one is harmless).
    [{ "temporal-redirect": "https://t.example/", "permanent-redirect": "bad value" }, { url: "https://t.example/", code: 302, relative: false }],
    // isValidURL only asks that the scheme start with "http".
    [{ "temporal-redirect": "httpx://t.example/" }, { url: "httpx://t.example/", code: 302, relative: false }],
  ] as [Record<string, string>, unknown][])("%o", (ann, expected) => {
    const p = parse(ann);
    expect(redirectOf(ann)).toEqual(expected as never);
    if (expected !== null) expect(p.problems).toEqual([]);
  });

  test("a malformed value (validation error) refuses the Ingress: one 503 policy, nothing else", () => {
    const cases: Record<string, string>[] = [
      { "permanent-redirect": "https://x.example/$1" },
      { "permanent-redirect": "https://x.example/ a" },
      { "permanent-redirect": "https://x.example/", "permanent-redirect-code": "abc" },
      { "permanent-redirect-code": "3O1" },
      { "temporal-redirect": "https://t.example/\"" },
      { "temporal-redirect": "https://t.example/", "temporal-redirect-code": "1.5" },
      { "from-to-www-redirect": "yes", "app-root": "/app" },
      { "relative-redirects": "maybe" },
      { "permanent-redirect": "https://x.example/\n" },
    ];
    for (const ann of cases) {
      const p = parse(ann);
      expect(kinds(ann)).toEqual(DENIED);
      expect(p.options.fromToWwwRedirect).toBe(false);
      expect(p.problems).toHaveLength(1);
      expect(p.problems[0]).toContain("every path of this Ingress answers 503 (ingress-nginx refuses the whole Ingress)");
    }
  });

  test("an empty value, or a temporal-redirect that is not http(s), turns the group off and nothing after it is read", () => {
    const off = "are ignored, as ingress-nginx ignores them";
    const cases: Record<string, string>[] = [
      { "from-to-www-redirect": "", "permanent-redirect": "https://x.example/$1" },
      { "permanent-redirect": "", "from-to-www-redirect": "true" },
      { "temporal-redirect": "ftp://t.example/", "from-to-www-redirect": "true" },
      { "temporal-redirect": "/relative" },
      { "temporal-redirect": ":8080" },
      { "temporal-redirect": "http://host:port/" },
      { "permanent-redirect": "https://x.example/", "permanent-redirect-code": "" },
    ];
    for (const ann of cases) {
      const p = parse(ann);
      expect(kinds(ann)).toEqual([]);
      expect(p.options.fromToWwwRedirect).toBe(false);
      expect(p.problems).toHaveLength(1);
      expect(p.problems[0]).toContain(off);
    }
    expect(parse({ "temporal-redirect": "ftp://t.example/" }).problems).toEqual([
      `annotation ${NGINX_PREFIX}temporal-redirect="ftp://t.example/": only http and https URLs are accepted; the Ingress's from-to-www-redirect, relative-redirects, permanent-redirect, temporal-redirect and their codes are ignored, as ingress-nginx ignores them`,
    ]);
  });

  test("the portico.dev/ name is read first and named in diagnostics", () => {
    const p = parse({ "portico.dev/permanent-redirect": "https://a.example/", "permanent-redirect": "https://b.example/" });
    expect(redirectOf({ "portico.dev/permanent-redirect": "https://a.example/" })).toEqual({ url: "https://a.example/", code: 301, relative: false });
    expect(p.problems).toEqual([]);
    expect(parse({ "portico.dev/temporal-redirect": "ftp://x/" }).problems[0]).toStartWith('annotation portico.dev/temporal-redirect="ftp://x/"');
  });

  test("from-to-www-redirect is a route option; with a redirect both apply", () => {
    expect(parse({ "from-to-www-redirect": "true" }).options.fromToWwwRedirect).toBe(true);
    expect(parse({ "from-to-www-redirect": "1" }).options.stages).toBeNull();
    const both = { "from-to-www-redirect": "t", "permanent-redirect": "https://x.example/" };
    expect(parse(both).options.fromToWwwRedirect).toBe(true);
    expect(kinds(both)).toEqual(["redirects/redirect"]);
  });

  test("Go's url.Parse scheme, for the characters the annotation allows", () => {
    expect(goUrlScheme("https://a.example/x?y=1")).toBe("https");
    expect(goUrlScheme("HTTP://a.example")).toBe("http");
    expect(goUrlScheme("/path")).toBe("");
    expect(goUrlScheme("1http://x")).toBeNull(); // no scheme, and a colon in the first segment
    expect(goUrlScheme(":x")).toBeNull(); // missing protocol scheme
    expect(goUrlScheme("http://a:8080/")).toBe("http");
    expect(goUrlScheme("http://a:80x/")).toBeNull(); // invalid port
    expect(goUrlScheme("mailto:x")).toBe("mailto");
  });
});

describe("app-root (rewrite.go: an unusable value is ignored)", () => {
  test.each([
    ["/foo", ["server/app-root"], 0],
    ["/a/b:c~d", ["server/app-root"], 0],
    ["foo", [], 1],
    ["http://x.example/app", [], 1],
    ["/$request_uri", ["server/app-root"], 0],
    ["/login$is_args$args", ["server/app-root"], 0],
    ["/login/$cookie_x", [], 1],
    ["/login$", [], 1],
    ["/a b", [], 1],
    ["", [], 1],
  ] as [string, string[], number][])("%p", (value, expected, problems) => {
    const p = parse({ "app-root": value });
    expect(kinds({ "app-root": value })).toEqual(expected);
    expect(p.problems).toHaveLength(problems);
    if (problems > 0) expect(p.problems[0]).toEndWith("; ignored, as ingress-nginx ignores an app-root it cannot use");
  });

  test("app-root does not depend on the redirect group", () => {
    expect(kinds({ "app-root": "/app", "from-to-www-redirect": "" })).toEqual(["server/app-root"]);
  });
});

describe("use-port-in-redirects, preserve-trailing-slash (invalid: the default)", () => {
  test("route options", () => {
    expect(parse({ "use-port-in-redirects": "true" }).options.usePortInRedirects).toBe(true);
    expect(parse({ "use-port-in-redirects": "on" }).options.usePortInRedirects).toBe(false);
    expect(parse({ "use-port-in-redirects": "on" }).problems).toHaveLength(1);
    expect(parse({ "preserve-trailing-slash": "TRUE" }).options.preserveTrailingSlash).toBe(true);
    expect(parse({ "preserve-trailing-slash": "" }).options.preserveTrailingSlash).toBe(false);
  });
});

describe("upstream-vhost (upstreamvhost/main.go, ValidateServerName)", () => {
  const vhost = (value: string) => {
    const p = parse({ "upstream-vhost": value });
    return { stages: p.options.stages?.map((s) => ({ kind: s.kind, ...s.params })) ?? [], problems: p.problems.length };
  };
  test.each([
    ["upstreamvhost.bar.com", [{ kind: "upstream-vhost", host: "upstreamvhost.bar.com" }], 0],
    [" internal.svc:8080 ", [{ kind: "upstream-vhost", host: "internal.svc:8080" }], 0],
    ["10.0.0.1", [{ kind: "upstream-vhost", host: "10.0.0.1" }], 0],
    // Portico interpolates no nginx variable, and sends only a Host value: ignored.
    ["$host", [], 1],
    ["$service_name.$namespace.svc", [], 1],
    ["a/b", [], 1],
    ["   ", [], 1],
    ["", [], 1],
    // Characters ingress-nginx refuses: the Ingress is refused.
    ["a b", [{ kind: "denied", reason: "annotation upstream-vhost is malformed" }], 1],
    ["host\"x", [{ kind: "denied", reason: "annotation upstream-vhost is malformed" }], 1],
    ["host\r\nx: y", [{ kind: "denied", reason: "annotation upstream-vhost is malformed" }], 1],
  ] as [string, unknown[], number][])("%p", (value, stages, problems) => {
    expect(vhost(value)).toEqual({ stages, problems } as never);
  });
});

describe("backend-protocol", () => {
  test("AUTO_HTTP resolves HTTP backends and switches per request", () => {
    const p = parse({ "backend-protocol": "auto_http" });
    expect(p.scheme).toBe("http");
    expect(kinds({ "backend-protocol": "auto_http" })).toEqual(["forwarding/auto-http"]);
    expect(parse({ "backend-protocol": "HTTPS" }).scheme).toBe("https");
    expect(parse({ "backend-protocol": "FCGI" }).problems).toHaveLength(1);
  });
});

test("stages come out in POLICY_STAGES order", () => {
  const all = { "app-root": "/a", "permanent-redirect": "https://x.example/", "backend-protocol": "AUTO_HTTP", "upstream-vhost": "v.example" };
  expect(kinds(all)).toEqual(["server/app-root", "redirects/redirect", "forwarding/auto-http", "forwarding/upstream-vhost"]);
});

describe("server-alias (alias/main.go, ValidateArrayOfServerName)", () => {
  const aliases = (value: string) => {
    const p = parse({ "server-alias": value });
    return { aliases: p.policies.hosts.aliases, denied: p.denied, problems: p.problems.length };
  };
  test.each([
    // Split on commas, trimmed, empty parts skipped, deduplicated and sorted (lowercased here: hosts are).
    ["bar.test", { aliases: ["bar.test"], denied: null, problems: 0 }],
    ["b.test, a.test ,,A.test", { aliases: ["a.test", "b.test"], denied: null, problems: 0 }],
    // Names Portico cannot serve as nginx would: that alias only is dropped.
    ["~^www\\d+\\.x\\.test$,ok.test", { aliases: ["ok.test"], denied: null, problems: 1 }],
    ["*.x.test", { aliases: [], denied: null, problems: 1 }],
    ["www.x.*", { aliases: [], denied: null, problems: 1 }],
    [" , ", { aliases: [], denied: null, problems: 1 }],
    ["", { aliases: [], denied: null, problems: 1 }],
    // Characters ingress-nginx refuses in a server name: the Ingress is refused.
    ["bar.test baz.test", { aliases: [], denied: "annotation server-alias is malformed", problems: 1 }],
    ["bar.test;", { aliases: [], denied: "annotation server-alias is malformed", problems: 1 }],
  ] as [string, unknown][])("%p", (value, expected) => {
    expect(aliases(value)).toEqual(expected as never);
  });

  test("a refused Ingress has no aliases for the compiler either (plan.ts reads `denied`)", () => {
    const p = parse({ "server-alias": "bar.test", "permanent-redirect": "bad value" });
    expect(p.denied).not.toBeNull();
    expect(p.options.stages?.map((s) => s.kind)).toEqual(["denied"]);
  });
});

describe("service-upstream (serviceupstream/main.go: an invalid value is false)", () => {
  test("values", () => {
    expect(parse({ "service-upstream": "true" }).policies.hosts.serviceUpstream).toBe(true);
    expect(parse({ "service-upstream": "yes" }).policies.hosts.serviceUpstream).toBe(false);
    expect(parse({ "service-upstream": "yes" }).problems).toHaveLength(1);
    // A compile-time choice: no stage policy, no route option.
    expect(parse({ "service-upstream": "1" }).options.stages).toBeNull();
  });
});
