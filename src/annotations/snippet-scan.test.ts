import { describe, expect, test } from "bun:test";
import { SNIPPET_LIMIT, accessDirectivesIn, scanSnippet } from "./snippet-scan.ts";

const actions = (text: string) => scanSnippet(text).directives.map((d) => d.actions);

describe("snippet scanner", () => {
  test("the common header directives become header actions", () => {
    const s = scanSnippet(`
      more_set_headers "X-Frame-Options: DENY";   # a comment; with a semicolon
      more_set_headers 'X-A: 1' "X-B: two words";
      proxy_set_header X-Tenant acme;
      more_set_input_headers "X-Env: prod";
      add_header Referrer-Policy "no-referrer" always;
    `);
    expect(s.error).toBeNull();
    expect(s.directives.map((d) => d.actions)).toEqual([
      [{ kind: "response-header", name: "X-Frame-Options", value: "DENY" }],
      [{ kind: "response-header", name: "X-A", value: "1" }, { kind: "response-header", name: "X-B", value: "two words" }],
      [{ kind: "request-header", name: "X-Tenant", value: "acme" }],
      [{ kind: "request-header", name: "X-Env", value: "prod" }],
      [{ kind: "response-header", name: "Referrer-Policy", value: "no-referrer" }],
    ]);
    expect(s.directives[0]!.text).toBe('more_set_headers "X-Frame-Options: DENY";');
    expect(s.directives[4]!.note).toContain("replaces the pod's");
  });

  test("add_header without `always` is recognised with the difference stated", () => {
    const [d] = scanSnippet("add_header X-A 1;").directives;
    expect(d!.actions).toEqual([{ kind: "response-header", name: "X-A", value: "1" }]);
    expect(d!.note).toContain("2xx and 3xx answers only");
  });

  test("return: literal redirects, and the HTTPS redirect idiom (also inside if ($scheme = http))", () => {
    expect(actions("return 301 https://new.example.com/;")).toEqual([[{ kind: "redirect", code: 301, url: "https://new.example.com/" }]]);
    expect(actions("return https://x.test/a;")).toEqual([[{ kind: "redirect", code: 302, url: "https://x.test/a" }]]);
    expect(actions("return 308 https://$host$request_uri;")).toEqual([[{ kind: "https-redirect", code: 308 }]]);
    expect(actions("if ($scheme = http) { return 301 https://$host$request_uri; }")).toEqual([[{ kind: "https-redirect", code: 301 }]]);
  });

  test.each([
    ["proxy_set_header X-Real-Host $host;", "nginx variables"],
    ["more_set_headers -s 404 'X-A: 1';", "-s/-t/-r options"],
    ['more_set_headers "Server:";', "clears the field"],
    ["return 403;", "only `return <301"],
    ["return 301 https://$host/new$request_uri;", "nginx variables"],
    ["rewrite ^/old(.*)$ /new$1 break;", "no Portico equivalent for `rewrite`"],
    ["if ($http_user_agent ~* bot) { return 403; }", "a `if` block"],
    ["location /x { deny all; }", "a `location` block"],
    ["proxy_set_header Host internal.test;", "Host may not be set"],
    ["proxy_set_header X-Forwarded-Proto https;", "set by Portico"],
    ["add_header Content-Length 0;", "framing"],
  ])("%p is not understood (%s)", (text, why) => {
    const [d] = scanSnippet(text).directives;
    expect(d!.actions).toEqual([]);
    expect(d!.note).toContain(why);
  });

  test("malformed text is an error, never a guess", () => {
    for (const [text, why] of [
      ['more_set_headers "X-A: 1;', "not closed"],
      ["add_header X-A 1", "no terminating"],
      ["if ($x) { return 403;", "not closed"],
      ["}", "closes no block"],
      [";", "empty directive"],
    ] as const) {
      const s = scanSnippet(text);
      expect(s.directives).toEqual([]);
      expect(s.error).toContain(why);
    }
    expect(scanSnippet("x".repeat(SNIPPET_LIMIT + 1)).error).toContain("not read");
    expect(scanSnippet(`${"{".repeat(40)}`).error).not.toBeNull();
  });

  test("a long directive is shortened for display; escapes inside quotes are resolved", () => {
    const [d] = scanSnippet(`more_set_headers "X-Q: a \\"quoted\\" word";`).directives;
    expect(d!.actions).toEqual([{ kind: "response-header", name: "X-Q", value: 'a "quoted" word' }]);
    const [long] = scanSnippet(`set $x ${"a".repeat(500)};`).directives;
    expect(long!.text.length).toBeLessThanOrEqual(120);
  });
});

describe("accessDirectivesIn", () => {
  test("finds nginx's access directives at any depth, and return 401/403", () => {
    expect(accessDirectivesIn("allow 10.0.0.0/8; deny all;")).toEqual(["allow", "deny"]);
    expect(accessDirectivesIn("location /admin { auth_basic \"x\"; auth_basic_user_file /f; }")).toEqual(["auth_basic", "auth_basic_user_file"]);
    expect(accessDirectivesIn('if ($http_x_key != "k") { return 403; }')).toEqual(["return 403"]);
    expect(accessDirectivesIn("auth_request /check;")).toEqual(["auth_request"]);
  });
  test("header values that merely say deny are not directives", () => {
    expect(accessDirectivesIn('more_set_headers "X-Frame-Options: DENY"; add_header X-Frame-Options DENY; proxy_set_header X-Deny "deny";')).toEqual([]);
    expect(accessDirectivesIn("return 301 https://example.com/;")).toEqual([]);
  });
  test("text it cannot read: null (an access rule cannot be ruled out)", () => {
    expect(accessDirectivesIn("deny all")).toBeNull();
    expect(accessDirectivesIn("location / { deny all;")).toBeNull();
  });
});
