// compile/access.ts through the compiler: the flags' source ranges, the basic-auth Secret read
// into the users, and the 503 refusal (with a diagnostic) for whatever cannot be resolved.
import { describe, expect, test } from "bun:test";
import { compile, Compiler } from "../../src/compile/compile.ts";
import type { CompileConfig } from "../../src/compile/config.ts";
import { DEFAULT_COMPILE_CONFIG } from "./config.ts";
import type { CompileResult } from "../../src/compile/types.ts";
import type { Kind, KindObjects } from "../../src/model/kinds.ts";
import type { Ingress, Secret } from "../../src/model/schemas.ts";
import { allRoutes } from "../../src/table/routes.ts";
import { serializeTable } from "../../src/table/serialize.ts";
import type { StagePolicy } from "../../src/policy/stages.ts";
import { snapshotOf } from "./snapshot.ts";

const N = "nginx.ingress.kubernetes.io/";
const b64 = (s: string) => Buffer.from(s, "latin1").toString("base64");

function ingress(name: string, annotations: Record<string, string>, ns = "shop"): Ingress {
  return {
    metadata: { name, namespace: ns, annotations, creationTimestamp: "2026-01-01T00:00:00Z" },
    spec: { ingressClassName: "portico", rules: [{ host: `${name}.test`, http: { paths: [{ path: "/", pathType: "Prefix", backend: { service: { name: "web", port: { number: 80 } } } }] } }] },
  } as Ingress;
}

function secret(name: string, data: Record<string, string>, ns = "shop", type = "Opaque"): Secret {
  return { metadata: { name, namespace: ns, resourceVersion: "1" }, type, data } as Secret;
}

const objs = (...xs: (Ingress | Secret)[]) =>
  xs.map((o) => ({ kind: ("spec" in o ? "Ingress" : "Secret") as Kind, object: o as KindObjects[Kind] }));

function stagesOf(r: CompileResult, host: string): readonly StagePolicy[] {
  return allRoutes(r.table).find((route) => route.host === host)?.options.stages ?? [];
}

const basic = (secretName: string, extra: Record<string, string> = {}) => ({ [`${N}auth-type`]: "basic", [`${N}auth-secret`]: secretName, ...extra });

describe("basic-auth Secret", () => {
  test("auth-file: the htpasswd lines become the users; the realm is kept", () => {
    const snap = snapshotOf(objs(ingress("a", basic("users", { [`${N}auth-realm`]: "Team" })), secret("users", { auth: b64("alice:{PLAIN}x\nbob:$apr1$4AnNRE9J$d4hRP9WCAe0ScT44Y2Ms71\n") })));
    const r = compile(snap, DEFAULT_COMPILE_CONFIG);
    expect(stagesOf(r, "a.test")).toEqual([
      { stage: "authentication", kind: "basic-auth", params: { realm: "Team", secret: "shop/users", users: [["alice", "{PLAIN}x"], ["bob", "$apr1$4AnNRE9J$d4hRP9WCAe0ScT44Y2Ms71"]] } },
    ]);
    expect(r.diagnostics.filter((d) => d.reason !== "ServiceNotFound")).toEqual([]);
  });

  test("auth-map: every key a user; bytes are kept as bytes (latin1), not decoded as UTF-8", () => {
    const snap = snapshotOf(objs(ingress("a", basic("users", { [`${N}auth-secret-type`]: "auth-map" })), secret("users", { carol: b64("{PLAIN}\u00e9\n"), alice: b64("{PLAIN}a") })));
    expect(stagesOf(compile(snap, DEFAULT_COMPILE_CONFIG), "a.test")[0]?.params.users).toEqual([["alice", "{PLAIN}a"], ["carol", "{PLAIN}\u00e9"]]);
  });

  test("the users never reach /debug/routes: the serialized table counts them", () => {
    const snap = snapshotOf(objs(ingress("a", basic("users")), secret("users", { auth: b64("alice:{PLAIN}hunter2\n") })));
    const text = JSON.stringify(serializeTable(compile(snap, DEFAULT_COMPILE_CONFIG).table));
    expect(text).toContain('"users":"<redacted: 1 entry>"');
    expect(text).not.toContain("hunter2");
    expect(text).not.toContain("alice");
  });

  test("satisfy any: the source range and basic auth become one satisfy-any policy, in nginx's access-phase order, its users redacted too", () => {
    const snap = snapshotOf(objs(ingress("a", basic("users", { [`${N}satisfy`]: "any", [`${N}allowlist-source-range`]: "10.0.0.0/8" })), secret("users", { auth: b64("alice:{PLAIN}hunter2\n") })));
    const r = compile(snap, DEFAULT_COMPILE_CONFIG);
    expect(stagesOf(r, "a.test")).toEqual([
      { stage: "authentication", kind: "satisfy-any", params: { checks: [
        { kind: "source-range", params: { allow: ["10.0.0.0/8"], deny: null } },
        { kind: "basic-auth", params: { realm: "", secret: "shop/users", users: [["alice", "{PLAIN}hunter2"]] } },
      ] } },
    ]);
    const text = JSON.stringify(serializeTable(r.table));
    expect(text).toContain('"users":"<redacted: 1 entry>"');
    expect(text).not.toContain("hunter2");
    // The global auth-url (ingress-nginx's global-auth-url: the same auth_request in the
    // location, so `satisfy any` spans it too) joins the checks.
    const global = compile(snapshotOf(objs(ingress("g", { [`${N}satisfy`]: "any", [`${N}allowlist-source-range`]: "10.0.0.0/8" }))), { ...DEFAULT_COMPILE_CONFIG, globalAuthUrl: "http://auth.example/check" });
    const g = stagesOf(global, "g.test");
    expect(g.map((p) => p.kind)).toEqual(["satisfy-any"]);
    expect((g[0]!.params.checks as { kind: string }[]).map((c) => c.kind)).toEqual(["source-range", "external-auth"]);
    // One check alone has nothing to choose between: it stays as it is.
    const alone = snapshotOf(objs(ingress("b", { [`${N}satisfy`]: "any", [`${N}allowlist-source-range`]: "10.0.0.0/8" })));
    expect(stagesOf(compile(alone, DEFAULT_COMPILE_CONFIG), "b.test").map((p) => p.kind)).toEqual(["source-range"]);
  });

  const refusals: [string, ReturnType<typeof objs>, string, string][] = [
    ["a missing Secret", objs(ingress("a", basic("nope"))), "SecretNotFound", "Secret shop/nope (auth-secret) not found"],
    ["a Secret in another namespace (ingress-nginx's default since v1.12)", objs(ingress("a", basic("other/users")), secret("users", { auth: b64("a:{PLAIN}b") }, "other")), "InvalidAnnotation", "in another namespace"],
    ["no auth key (auth-file)", objs(ingress("a", basic("users")), secret("users", { other: b64("a:{PLAIN}b") })), "InvalidAuthSecret", 'has no key "auth"'],
    ["a value that is not base64", objs(ingress("a", basic("users")), secret("users", { auth: "!!not base64!!" })), "InvalidAuthSecret", "not valid base64"],
  ];
  for (const [why, objects, reason, message] of refusals) {
    test(`${why}: every request refused (503), diagnostic ${reason}`, () => {
      const r = compile(snapshotOf(objects), DEFAULT_COMPILE_CONFIG);
      expect(stagesOf(r, "a.test")).toEqual([{ stage: "denied", kind: "refuse", params: { status: 503, reason: expect.stringContaining(message) } }]);
      const d = r.diagnostics.find((x) => x.reason === reason);
      expect(d?.message).toContain(message);
      expect(d?.message).toContain("answers 503");
      expect(d).toMatchObject({ kind: "Ingress", namespace: "shop", name: "a", severity: "error" });
    });
  }

  test("users who can never log in are named (warnings), the others still can", () => {
    const r = compile(snapshotOf(objs(ingress("a", basic("users")), secret("users", { auth: b64("plain:hunter2\nok:{PLAIN}x\n") }))), DEFAULT_COMPILE_CONFIG);
    expect(stagesOf(r, "a.test")[0]?.params.users).toEqual([["ok", "{PLAIN}x"]]);
    expect(r.diagnostics.filter((d) => d.reason !== "ServiceNotFound").map((d) => [d.reason, d.severity, d.message])).toEqual([
      ["InvalidAuthSecret", "warning", 'Secret shop/users: user "plain" cannot log in: its password is not hashed (nginx compares plain text only after {PLAIN})'],
    ]);
    const empty = compile(snapshotOf(objs(ingress("a", basic("users")), secret("users", { auth: b64("# nobody\n") }))), DEFAULT_COMPILE_CONFIG);
    expect(stagesOf(empty, "a.test")[0]?.params.users).toEqual([]);
    expect(empty.diagnostics.find((d) => d.reason === "InvalidAuthSecret")?.message).toContain("no user who can log in; every request gets 401");
  });

  test("a Secret change reaches the routes of an unchanged Ingress in a long-lived Compiler; deletion refuses", () => {
    const c = new Compiler(DEFAULT_COMPILE_CONFIG);
    const ing = ingress("a", basic("users"));
    const other = ingress("b", {});
    const first = c.compile(snapshotOf(objs(ing, other, secret("users", { auth: b64("alice:{PLAIN}one") }))));
    expect(stagesOf(first, "a.test")[0]?.params.users).toEqual([["alice", "{PLAIN}one"]]);
    const second = c.compile(snapshotOf(objs(ing, other, secret("users", { auth: b64("alice:{PLAIN}two") }))));
    expect(stagesOf(second, "a.test")[0]?.params.users).toEqual([["alice", "{PLAIN}two"]]);
    // The other host's entry is reused: only the Ingress that reads the Secret is planned again.
    expect(second.table.exact.get("b.test")).toBe(first.table.exact.get("b.test"));
    const gone = c.compile(snapshotOf(objs(ing, other)));
    expect(stagesOf(gone, "a.test").map((p) => p.kind)).toEqual(["refuse"]);
    const back = c.compile(snapshotOf(objs(ing, other, secret("users", { auth: b64("alice:{PLAIN}three") }))));
    expect(stagesOf(back, "a.test")[0]?.params.users).toEqual([["alice", "{PLAIN}three"]]);
  });
});

describe("source ranges and the flags", () => {
  const flags: CompileConfig = { ...DEFAULT_COMPILE_CONFIG, allowlistSourceRange: ["10.0.0.0/8"], denylistSourceRange: ["10.9.0.0/16"] };

  test("without annotations every Ingress gets the flags' lists", () => {
    const r = compile(snapshotOf(objs(ingress("a", {}))), flags);
    expect(stagesOf(r, "a.test")).toEqual([{ stage: "access", kind: "source-range", params: { allow: ["10.0.0.0/8"], deny: ["10.9.0.0/16"] } }]);
  });

  test("an annotation replaces the flag of its own kind only", () => {
    const r = compile(snapshotOf(objs(ingress("a", { [`${N}allowlist-source-range`]: "192.168.0.0/16" }), ingress("b", { [`${N}denylist-source-range`]: "10.1.0.0/16" }))), flags);
    expect(stagesOf(r, "a.test")[0]?.params).toEqual({ allow: ["192.168.0.0/16"], deny: ["10.9.0.0/16"] });
    expect(stagesOf(r, "b.test")[0]?.params).toEqual({ allow: ["10.0.0.0/8"], deny: ["10.1.0.0/16"] });
  });

  test("a bad annotation refuses the route even with good flags", () => {
    const r = compile(snapshotOf(objs(ingress("a", { [`${N}allowlist-source-range`]: "10.0.0.0/8,nope" }))), flags);
    expect(stagesOf(r, "a.test").map((p) => p.kind)).toEqual(["refuse"]);
  });

  test("with neither flags nor annotations, no stage at all (one null check per request)", () => {
    const r = compile(snapshotOf(objs(ingress("a", {}))), DEFAULT_COMPILE_CONFIG);
    expect(allRoutes(r.table)[0]?.options.stages).toBeNull();
  });

  test("source range before basic auth, in stage order", () => {
    const r = compile(snapshotOf(objs(ingress("a", basic("users", { [`${N}whitelist-source-range`]: "127.0.0.1" })), secret("users", { auth: b64("a:{PLAIN}b") }))), DEFAULT_COMPILE_CONFIG);
    expect(stagesOf(r, "a.test").map((p) => p.kind)).toEqual(["source-range", "basic-auth"]);
  });
});

describe("refusals are said once", () => {
  test("a snippet or an access annotation that refuses the Ingress is one problem (refused with 503), not also 'ignored'", () => {
    // The snippet's deny refuses every path with 503 (annotations/parse.ts); an unsupported
    // annotation that refuses nothing is still "ignored".
    const ann = {
      [`${N}server-snippet`]: "deny all;",
      [`${N}proxy-busy-buffers-size`]: "16k",
    };
    const r = compile(snapshotOf(objs(ingress("a", ann))), DEFAULT_COMPILE_CONFIG);
    const about = (a: string) => r.diagnostics.filter((d) => d.message.includes(`${N}${a}`)).map((d) => [d.reason, d.message.includes("refused with 503") ? "refused" : d.message.includes("ignored") ? "ignored" : d.message]);
    expect(about("server-snippet")).toEqual([["InvalidAnnotation", "refused"]]);
    expect(about("proxy-busy-buffers-size")).toEqual([["UnsupportedAnnotation", "ignored"]]);
  });
});

describe("ModSecurity", () => {
  test("a modsecurity-snippet that turns blocking on refuses the Ingress (503); detection only stays ignored", () => {
    // ingress-nginx runs ModSecurity with SecRuleEngine DetectionOnly unless the snippet turns it On.
    const blocking = { [`${N}enable-modsecurity`]: "true", [`${N}modsecurity-snippet`]: "SecRuleEngine On\nSecRequestBodyAccess On" };
    const detecting = { [`${N}enable-modsecurity`]: "true", [`${N}enable-owasp-core-rules`]: "true" };
    const off = { [`${N}enable-modsecurity`]: "false", [`${N}modsecurity-snippet`]: "SecRuleEngine On" };
    const r = compile(snapshotOf(objs(ingress("a", blocking), ingress("b", detecting), ingress("c", off))), DEFAULT_COMPILE_CONFIG);
    expect(stagesOf(r, "a.test").map((s) => [s.kind, s.params.status])).toEqual([["refuse", 503]]);
    expect(r.diagnostics.filter((d) => d.name === "a" && d.message.includes("refused with 503")).map((d) => d.reason)).toEqual(["InvalidAnnotation"]);
    expect(stagesOf(r, "b.test")).toEqual([]);
    expect(stagesOf(r, "c.test")).toEqual([]);
  });
});

// ingress-nginx's no-auth-locations (config.go NewDefault "/.well-known/acme-challenge"):
// nginx.tmpl writes neither auth_basic nor auth_request into a location whose path as written
// starts with an entry (template.go isLocationInLocationList, strings.HasPrefix on loc.Path).
describe("--no-auth-locations", () => {
  const paths = ["/", "/noauth", "/noauth-more", "/.well-known/acme-challenge", "//noauth"];
  const external = {
    metadata: { name: "ext", namespace: "shop", annotations: { [`${N}auth-url`]: "http://auth.example/check" }, creationTimestamp: "2026-01-01T00:00:00Z" },
    spec: { ingressClassName: "portico", rules: [{ host: "ext.test", http: { paths: paths.map((path) => ({ path, pathType: "Prefix", backend: { service: { name: "web", port: { number: 80 } } } })) } }] },
  } as Ingress;
  const exempt = (config: CompileConfig) =>
    allRoutes(compile(snapshotOf(objs(external)), config).table).filter((r) => r.host === "ext.test" && r.authExempt === true).map((r) => r.path).sort();

  test("the default exempts the ACME HTTP-01 path only", () => {
    expect(exempt(DEFAULT_COMPILE_CONFIG)).toEqual(["/.well-known/acme-challenge"]);
  });

  test("a list replaces the default: its entries are prefixes of the path as written", () => {
    expect(exempt({ ...DEFAULT_COMPILE_CONFIG, noAuthLocations: ["/noauth"] })).toEqual(["/noauth", "/noauth-more"]);
    expect(exempt({ ...DEFAULT_COMPILE_CONFIG, noAuthLocations: [] })).toEqual([]);
  });
});
