// PCRE (what nginx runs for ingress-nginx, PCRE 8.45 without UTF) → what runs here. Each row
// is the path as written, a request path, and nginx's answer for `location ~* "^<path>"`
// (PCRE semantics from pcrepattern(3) for 8.45: named groups, \h \v \N \s, \Q…\E, (?#…),
// octal/\c/\e escapes, [\b], a `{` that is not a quantifier being literal).
import { describe, expect, test } from "bun:test";
import { compilePathRegex, translatePcre } from "./index.ts";

function groups(p: string, uri: string): readonly string[] | null {
  const r = compilePathRegex(p);
  if (!r.ok) throw new Error(`${p}: ${r.reason}`);
  return r.re.match(uri)?.groups ?? null;
}

describe("what users write runs with nginx's meaning", () => {
  const rows: [pattern: string, uri: string, groups: string[] | null][] = [
    // anchored at the start only, case-insensitive
    ["/api/v[0-9]+/(users|orders)(/|$)(.*)", "/API/V2/Users/42", ["/API/V2/Users/42", "Users", "/", "42"]],
    ["/api/v[0-9]+/(users|orders)(/|$)(.*)", "/api/v2/orders", ["/api/v2/orders", "orders", "", ""]],
    ["/api/v[0-9]+/(users|orders)(/|$)(.*)", "/x/api/v2/orders", null],
    ["/api/v[0-9]+/(users|orders)(/|$)(.*)", "/api/v2/ordersX", null],
    // inline flags: (?i) is the default already; (?-i) turns it off for the rest
    ["(?i)/abc", "/ABC", ["/ABC"]],
    ["/(?-i)Abc", "/Abc", ["/Abc"]],
    ["/(?-i)Abc", "/abc", null],
    ["/(?-i:A)bc", "/ABC", ["/ABC"]],
    ["/(?s)a.b", "/a\nb", ["/a\nb"]],
    ["/a.b", "/a\nb", null],
    // named groups in the three PCRE spellings are numbered too
    ["/(?<ver>v\\d+)/(?P<id>\\d+)/(?'rest'.*)", "/v1/42/x", ["/v1/42/x", "v1", "42", "x"]],
    // an unmatched group is "" (nginx's $n)
    ["/a(b)?(c)", "/ac", ["/ac", "", "c"]],
    // classes and shorthands (ASCII, as PCRE without UCP)
    ["/\\d{2,3}\\w\\s", "/123_ ", ["/123_ "]],
    ["/\\s", "/\u000b", ["/\u000b"]], // \s includes VT since PCRE 8.34
    ["/\\S", "/\u000b", null],
    ["/[\\s]", "/\u000b", ["/\u000b"]],
    ["/\\h\\v", "/\u00a0\u0085", ["/\u00a0\u0085"]],
    ["/\\H\\V", "/ab", ["/ab"]],
    ["/\\N", "/\n", null],
    ["/[[:alpha:]]+[[:^digit:]]", "/ab-", ["/ab-"]],
    ["/[]x]", "/]", ["/]"]],
    ["/[^]x]", "/]", null],
    ["/[\\b]", "/\b", ["/\b"]],
    ["/[\\101]", "/A", ["/A"]],
    // escapes
    ["/\\Qa.b*\\E", "/a.b*", ["/a.b*"]],
    ["/\\Qa.b*\\E", "/axbb", null],
    ["/a\\E.", "/ab", ["/ab"]],
    ["/\\x41\\x4\\x{42}\\cA\\e\\o{103}\\012", "/A\u0004B\u0001\u001bC\n", ["/A\u0004B\u0001\u001bC\n"]],
    ["/\\p{Greek}\\pL", "/αb", ["/αb"]],
    // a brace that is not a quantifier is literal in PCRE 8.x, `{,n}` included
    ["/x{,3}", "/x{,3}", ["/x{,3}"]],
    ["/x{,3}", "/xx", null],
    ["/x{2}", "/xx", ["/xx"]],
    ["/x{a}", "/x{a}", ["/x{a}"]],
    // comments vanish
    ["/a(?#note)b", "/ab", ["/ab"]],
    // lazy and greedy
    ["/(a+?)(a*)", "/aaa", ["/aaa", "a", "aa"]],
    ["/(?U)(a+)", "/aaa", ["/a", "a"]],
    // `.` is any character but newline, `$` is the end
    ["/a.c$", "/a/c", ["/a/c"]],
    ["/a.c$", "/a/c/", null],
    ["/x\\Z", "/x", ["/x"]],
    ["/x\\z", "/x", ["/x"]],
    ["/x\\b", "/x-", ["/x"]],
  ];
  for (const [pattern, uri, want] of rows) {
    test(`${JSON.stringify(pattern)} on ${JSON.stringify(uri)}`, () => {
      expect(groups(pattern, uri)).toEqual(want);
    });
  }

  test("a top-level | binds ^ to the first alternative only, and captures come from the unanchored rewrite regex", () => {
    // location ~* "^/foo|/bar" matches /x/bar; rewrite "(?i)/foo|/bar" then finds /foo first.
    expect(groups("/foo|/bar", "/x/bar")).toEqual(["/bar"]);
    expect(groups("/foo|/bar", "/x/foo/bar")).toEqual(["/foo"]);
    expect(groups("/(foo)|/(bar)", "/x/bar")).toEqual(["/bar", "", "bar"]);
    expect(groups("/(?:foo|bar)", "/x/bar")).toBeNull();
  });

  test("the translated source is what the table in docs/design.md (Regular expressions) shows", () => {
    const src = (p: string) => {
      const t = translatePcre(p);
      if (!t.ok) throw new Error(t.reason);
      return t.source;
    };
    expect(src("(?<n>a)(?'m'b)(?P<o>c)")).toBe("(?P<n>a)(?P<m>b)(?P<o>c)");
    expect(src("\\s\\S")).toBe("[\\t\\n\\x0B\\f\\r ][^\\t\\n\\x0B\\f\\r ]");
    expect(src("\\h\\H\\v\\V\\N")).toBe("[\\t \\xA0][^\\t \\xA0][\\n\\x0B\\f\\r\\x85][^\\n\\x0B\\f\\r\\x85][^\\n]");
    expect(src("\\Z\\e\\cA\\0\\o{7}")).toBe("\\z\\x1B\\x{1}\\x{0}\\x{7}");
    expect(src("[\\b\\s\\h\\v\\12]")).toBe("[\\x08\\t\\n\\x0B\\f\\r \\t \\xA0\\n\\x0B\\f\\r\\x85\\x{A}]");
    expect(src("\\Qa.(\\E[\\Q]^-\\E]")).toBe("a\\.\\([\\]\\^\\-]");
    expect(src("a(?#c)b{,2}[]x]")).toBe("ab\\{,2}[\\]x]");
  });
});

describe("refused, with a reason", () => {
  const rows: [pattern: string, reason: string][] = [
    ["/(a)\\1", "uses a backreference, which no linear-time engine can run (\\1)"],
    ["/(?<n>a)\\k<n>", "uses a backreference, which no linear-time engine can run (\\k)"],
    ["/(?<n>a)\\g{n}", "uses a backreference, which no linear-time engine can run (\\g)"],
    ["/(?P<n>a)(?P=n)", "uses a backreference, which no linear-time engine can run ((?P=name))"],
    ["/a(?=b)", "uses a lookahead ((?= or (?!), which is not supported"],
    ["/a(?!b)", "uses a lookahead ((?= or (?!), which is not supported"],
    ["/(?<=a)b", "uses a lookbehind ((?<= or (?<!), which is not supported"],
    ["/(?<!a)b", "uses a lookbehind ((?<= or (?<!), which is not supported"],
    ["/(?>a+)b", "uses an atomic group ((?>…)), which is not supported"],
    ["/a++", "uses a possessive quantifier (++), which is not supported"],
    ["/a*+", "uses a possessive quantifier (*+), which is not supported"],
    ["/a?+", "uses a possessive quantifier (?+), which is not supported"],
    ["/a{1,3}+", "uses a possessive quantifier ({1,3}+), which is not supported"],
    ["/(a|(?R))", "uses recursion or a subroutine call, which is not supported"],
    ["/(a)(?1)", "uses recursion or a subroutine call, which is not supported"],
    ["/(?&n)", "uses recursion or a subroutine call, which is not supported"],
    ["/(?(1)a|b)", "uses a conditional group ((?(…)…)), which is not supported"],
    ["/(?|(a)|(b))", "uses a branch-reset group ((?|…)), which is not supported"],
    ["/(*ANY)a", "uses a PCRE control verb ((*…)), which is not supported"],
    ["/(?x) a b", "the extended-syntax flag (?x) (whitespace and # comments in the pattern) is not supported"],
    ["/(?J)(?<n>a)(?<n>b)", "the flag (?J) (duplicate group names) is not supported"],
    ["/(?q)a", 'uses the unknown inline flag "q"'],
    ["/a\\Kb", "\\K (reset match start) is not supported"],
    ["/\\Ga", "\\G (match at previous end) is not supported"],
    ["/a\\R", "\\R (any newline sequence) is not supported"],
    ["/\\X", "\\X (extended grapheme cluster) is not supported"],
    ["/\\C", "\\C (single code unit) is not supported"],
    ["/[\\H]", "\\H inside a character class is not supported"],
    ["/[[:<:]]a", "uses [[:<:]] or [[:>:]] (word start/end), which is not supported"],
    ["/(?<1a>x)", 'has an invalid group name "1a"'],
    ["/[a", "has a character class with no closing ]"],
    ["/a\\", "ends with a lone backslash"],
    ["/a(?#x", "has a (?# comment with no closing )"],
    ["/a{1001}", "has a repeat count over 1000 or out of order (invalid repeat count: `{1001}`)"],
    ["/a{3,2}", "has a repeat count over 1000 or out of order (invalid repeat count: `{3,2}`)"],
    ["/(a", "is not a regular expression Portico can run (missing closing ): `/(a`)"],
    ["/a)", "is not a regular expression Portico can run (unexpected ): `/a)`)"],
    ["/a**", "is not a regular expression Portico can run (invalid nested repetition operator: `**`)"],
    ["/\\i", "is not a regular expression Portico can run (invalid escape sequence: `\\i`)"],
    ["/(?<n>a)(?<n>b)", "is not a regular expression Portico can run (duplicate capture group name: `n`)"],
  ];
  for (const [pattern, reason] of rows) {
    test(JSON.stringify(pattern), () => {
      expect(compilePathRegex(pattern)).toEqual({ ok: false, reason });
    });
  }
});
