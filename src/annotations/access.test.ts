// The access and basic-auth families: what each value becomes, and that every value that
// cannot be applied makes the routes refuse (503), never serve open. The proxy side is in
// test/proxy/access.test.ts.
import { describe, expect, test } from "bun:test";
import type { StagePolicy } from "../policy/stages.ts";
import { usersFromFile, usersFromMap, checkHash } from "../policy/htpasswd.ts";
import { parseAnnotations } from "../compile/annotations.ts";
import { NGINX_PREFIX } from "./spec.ts";

const N = NGINX_PREFIX;
const stagesOf = (ann: Record<string, string>): readonly StagePolicy[] => parseAnnotations(ann).options.stages ?? [];
const refused = (ann: Record<string, string>) => stagesOf(ann).some((p) => p.kind === "refuse" && p.params.status === 503);

describe("source ranges", () => {
  test("CIDRs and bare addresses, IPv4 and IPv6, in canonical form", () => {
    const a = parseAnnotations({ [`${N}allowlist-source-range`]: " 10.0.0.0/8, 192.168.1.1 ,2001:DB8::/32,::1" });
    expect(a.problems).toEqual([]);
    expect(a.options.stages).toEqual([{ stage: "access", kind: "source-range", params: { allow: ["10.0.0.0/8", "192.168.1.1/32", "2001:db8::/32", "::1/128"], deny: null } }]);
    expect(stagesOf({ [`${N}denylist-source-range`]: "10.1.0.0/16" })).toEqual([{ stage: "access", kind: "source-range", params: { allow: null, deny: ["10.1.0.0/16"] } }]);
  });

  test("whitelist-source-range is read only when allowlist-source-range is empty or absent; portico.dev/ first", () => {
    expect(stagesOf({ [`${N}whitelist-source-range`]: "10.0.0.0/8" })[0]?.params.allow).toEqual(["10.0.0.0/8"]);
    expect(stagesOf({ [`${N}allowlist-source-range`]: "11.0.0.0/8", [`${N}whitelist-source-range`]: "10.0.0.0/8" })[0]?.params.allow).toEqual(["11.0.0.0/8"]);
    expect(stagesOf({ [`${N}allowlist-source-range`]: "", [`${N}whitelist-source-range`]: "10.0.0.0/8" })[0]?.params.allow).toEqual(["10.0.0.0/8"]);
    expect(stagesOf({ "portico.dev/allowlist-source-range": "12.0.0.0/8", [`${N}allowlist-source-range`]: "11.0.0.0/8" })[0]?.params.allow).toEqual(["12.0.0.0/8"]);
  });

  test.each([
    ["a bad address", "10.0.0.0/8,10.0.0.300"],
    ["a prefix too long", "10.0.0.0/33"],
    ["a host name", "example.com"],
    ["an empty entry", "10.0.0.0/8,,11.0.0.0/8"],
    ["a trailing comma", "10.0.0.0/8,"],
    ["an empty value", ""],
    ["spaces only", "   "],
    ["a zone index", "fe80::1%eth0"],
    ["an IPv4-mapped range (nginx matches it against nothing)", "::ffff:10.0.0.0/104"],
    ["a line break", "10.0.0.0/8\n11.0.0.0/8"],
    ["leading zeros (octal to some readers)", "010.0.0.1"],
  ])("%s refuses every request (503), with a diagnostic naming the annotation", (_why, value) => {
    for (const name of ["allowlist-source-range", "whitelist-source-range", "denylist-source-range"]) {
      const a = parseAnnotations({ [`${N}${name}`]: value });
      expect(a.options.stages).toEqual([{ stage: "denied", kind: "refuse", params: { status: 503, reason: expect.stringContaining("invalid") } }]);
      expect(a.problems).toHaveLength(1);
      expect(a.problems[0]).toContain(`annotation ${N}${name}=`);
      expect(a.problems[0]).toContain("answers 503");
    }
  });

  test("one bad list refuses even when the other is good", () => {
    expect(refused({ [`${N}allowlist-source-range`]: "10.0.0.0/8", [`${N}denylist-source-range`]: "nope" })).toBe(true);
    expect(stagesOf({ [`${N}allowlist-source-range`]: "10.0.0.0/8", [`${N}denylist-source-range`]: "nope" }).some((p) => p.kind === "source-range")).toBe(false);
  });
});

describe("basic authentication annotations", () => {
  test("auth-type basic with a Secret: a basic-auth policy whose users the compiler fills in", () => {
    const a = parseAnnotations({ [`${N}auth-type`]: "basic", [`${N}auth-secret`]: "users", [`${N}auth-realm`]: "Staff only" });
    expect(a.problems).toEqual([]);
    expect(a.policies.basicAuth).toEqual({ state: "basic", namespace: null, name: "users", secretType: "auth-file", realm: "Staff only" });
    // Unresolved: users null, which the proxy refuses to run (fails closed).
    expect(a.options.stages).toEqual([{ stage: "authentication", kind: "basic-auth", params: { realm: "Staff only", secret: "users", users: null } }]);
    const b = parseAnnotations({ [`${N}auth-type`]: " basic ", [`${N}auth-secret`]: "team/users", [`${N}auth-secret-type`]: "auth-map" });
    expect(b.policies.basicAuth).toEqual({ state: "basic", namespace: "team", name: "users", secretType: "auth-map", realm: "" });
  });

  test("an empty auth-secret-type is the default, as ingress-nginx reads it; the realm `off` is a realm", () => {
    const a = parseAnnotations({ [`${N}auth-type`]: "basic", [`${N}auth-secret`]: "s", [`${N}auth-secret-type`]: "", [`${N}auth-realm`]: "off" });
    expect(a.policies.basicAuth).toMatchObject({ state: "basic", secretType: "auth-file", realm: "off" });
  });

  test.each([
    ["digest (not implemented)", { "auth-type": "digest", "auth-secret": "s" }, "digest authentication is not implemented"],
    ["another auth-type", { "auth-type": "Basic", "auth-secret": "s" }, "expected basic"],
    ["auth-type basic2 (digest in ingress-nginx)", { "auth-type": "basic2", "auth-secret": "s" }, "expected basic"],
    ["an empty auth-type", { "auth-type": "", "auth-secret": "s" }, "expected basic"],
    ["auth-secret without auth-type", { "auth-secret": "s" }, "auth-type is not set"],
    ["auth-realm alone", { "auth-realm": "x" }, "auth-type is not set"],
    ["auth-type without auth-secret", { "auth-type": "basic" }, "without auth-secret"],
    ["an empty auth-secret", { "auth-type": "basic", "auth-secret": "" }, "expected a Secret name"],
    ["a Secret key with two slashes", { "auth-type": "basic", "auth-secret": "a/b/c" }, "expected a Secret name"],
    ["a Secret name in upper case", { "auth-type": "basic", "auth-secret": "Users" }, "expected a Secret name"],
    ["a path-like Secret name", { "auth-type": "basic", "auth-secret": "../x" }, "expected a Secret name"],
    ["a bad auth-secret-type", { "auth-type": "basic", "auth-secret": "s", "auth-secret-type": "auth-filex" }, "expected auth-file or auth-map"],
    ["a realm with a quote", { "auth-type": "basic", "auth-secret": "s", "auth-realm": 'a"b' }, "letters, digits"],
    ["a realm with a backslash", { "auth-type": "basic", "auth-secret": "s", "auth-realm": "a\\" }, "letters, digits"],
    ["a realm with a line break", { "auth-type": "basic", "auth-secret": "s", "auth-realm": "a\r\nSet-Cookie: x=1" }, "line break"],
  ])("%s refuses every request (503), never serves open", (_why, values, message) => {
    const ann = Object.fromEntries(Object.entries(values).map(([k, v]) => [`${N}${k}`, v]));
    const a = parseAnnotations(ann);
    expect(a.options.stages?.map((p) => p.kind)).toEqual(["refuse"]);
    expect(a.problems.join(" ")).toContain(message);
    expect(a.problems.join(" ")).toContain("answers 503");
  });
});

describe("user files", () => {
  test("read as nginx's auth_basic reads them", () => {
    const file = [
      "# a comment",
      "",
      "alice:{PLAIN}one",
      "\r  skipped (starts with CR)",
      "bob:{SHA}L55TUjtiq8FBorTWAZ0jy6g129A=:a comment after the hash",
      "carol:{PLAIN}three\r",
      "alice:{PLAIN}second alice",
      "no colon here",
      ":{PLAIN}empty user",
      " dave:{PLAIN}four",
    ].join("\n");
    const r = usersFromFile(file);
    expect(r.users).toEqual([
      { user: "alice", hash: "{PLAIN}one" },
      { user: "bob", hash: "{SHA}L55TUjtiq8FBorTWAZ0jy6g129A=" },
      { user: "carol", hash: "{PLAIN}three" },
      { user: " dave", hash: "{PLAIN}four" },
    ]);
    expect(r.problems).toEqual([
      'line 8 of the user file has no user name followed by ":"; it is ignored',
      'line 9 of the user file has no user name followed by ":"; it is ignored',
      'user "alice" is listed again; the first entry is used',
    ]);
  });

  test("users nginx would never let in are left out, named, and their hashes never quoted", () => {
    const hashes: Record<string, string> = {
      plain: "hunter2-plaintext",
      x: "$2x$05$SdCcB4.W04SgvFo3Lpx9k.4wZA22Br4rguNXdjKRzGANllzeN6gjW",
      costly: "$2y$15$SdCcB4.W04SgvFo3Lpx9k.4wZA22Br4rguNXdjKRzGANllzeN6gjW",
      rounds: "$6$rounds=900000$salt$abc",
      broken: "$2y$05$short",
      unknown: "$9$whatever",
      ok: "$apr1$4AnNRE9J$d4hRP9WCAe0ScT44Y2Ms71",
    };
    const r = usersFromFile(Object.entries(hashes).map(([u, h]) => `${u}:${h}`).join("\n"));
    expect(r.users.map((u) => u.user)).toEqual(["ok"]);
    expect(r.problems).toHaveLength(6);
    for (const [user, hash] of Object.entries(hashes)) {
      if (user !== "ok") expect(r.problems.some((p) => p.startsWith(`user "${user}" cannot log in`))).toBe(true);
      for (const p of r.problems) expect(p).not.toContain(hash.slice(4));
    }
    expect(r.problems.find((p) => p.includes('"plain"'))).toContain("{PLAIN}");
    // The caps (policy/htpasswd.ts): bcrypt cost 12 and 50,000 SHA-crypt rounds are the
    // most accepted; one more is a user who cannot log in.
    expect(checkHash("$2y$12$SdCcB4.W04SgvFo3Lpx9k.4wZA22Br4rguNXdjKRzGANllzeN6gjW").format).toBe("bcrypt");
    expect(checkHash("$2y$13$SdCcB4.W04SgvFo3Lpx9k.4wZA22Br4rguNXdjKRzGANllzeN6gjW")).toEqual({ format: null, problem: "its bcrypt cost 13 is above 12, the most Portico computes per request" });
    expect(checkHash("$5$rounds=50000$salt$x").format).toBe("sha256-crypt");
    expect(checkHash("$6$rounds=50001$salt$x")).toEqual({ format: null, problem: "its 50001 SHA-crypt rounds are above 50000, the most Portico computes per request" });
  });

  test("auth-map: each key a user; a value is read up to its line end, and further lines make no users", () => {
    const r = usersFromMap([
      ["alice", "{PLAIN}one\n"],
      ["bob", "{PLAIN}two\nmallory:{PLAIN}injected"],
      ["carol", "{PLAIN}three:comment"],
    ]);
    expect(r.users).toEqual([
      { user: "alice", hash: "{PLAIN}one" },
      { user: "bob", hash: "{PLAIN}two" },
      { user: "carol", hash: "{PLAIN}three" },
    ]);
    expect(r.problems).toEqual(['the value of user "bob" has more than one line; only the first is read']);
  });
});
