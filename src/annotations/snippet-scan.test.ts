import { describe, expect, test } from "bun:test";
import { SNIPPET_LIMIT, restrictingDirectivesIn, scanSnippet } from "./snippet-scan.ts";

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
    ["rewrite ^/old(.*)$ /new$1 last;", "picks a location again"],
    ["rewrite ^/old(.*)$ /new$1;", "picks a location again"],
    ["rewrite ^/old/(\\d+)$ /new/$1 break;", "beyond literal paths"],
    ["rewrite /old /new break;", "not anchored"],
    ["rewrite ^/old(.*)$ /new$1$2 break;", "a capture its regex does not have"],
    ["rewrite ^/old(.*)$ /$host$1 break;", "nginx variables"],
    ["rewrite ^/old/(.*)$ https://x.test/$1 permanent;", "not one literal path"],
    ["if ($http_user_agent ~* bot) { return 444; }", "444, nginx's silent close"],
    ["if ($http_user_agent ~* bot) { rewrite ^ /x break; }", "not one `return <400-599>;`"],
    ["if ($http_user_agent ~* (a)\\1) { return 403; }", "backreference"],
    ["if ($request_method = POST) { return 405; }", "a `if` block"],
    ["location /x { deny all; }", "a `location` block"],
    ["proxy_set_header Host internal.test;", "Host may not be set"],
    ["proxy_set_header X-Forwarded-Proto https;", "set by Portico"],
    ["add_header Content-Length 0;", "framing"],
  ])("%p is not understood (%s)", (text, why) => {
    const [d] = scanSnippet(text).directives;
    expect(d!.actions).toEqual([]);
    expect(d!.note).toContain(why);
  });

  test("server-snippet locations and rewrites become companion Ingress paths", () => {
    const server = (t: string) => scanSnippet(t, "server").directives.map((d) => d.actions);
    const deny = { kind: "deny" } as const;
    expect(server("location ~* ^/internal/ { deny all; }")).toEqual([
      [{ kind: "companion", match: { path: "/internal/", pathType: "ImplementationSpecific", regex: true, literal: "/internal/", scope: "server" }, effect: deny }],
    ]);
    expect(server("location ~ ^/(admin|actuator)/.* { return 403; }")).toEqual([
      [{ kind: "companion", match: { path: "/(admin|actuator)/.*", pathType: "ImplementationSpecific", regex: true, literal: "/", scope: "server" }, effect: deny }],
    ]);
    // A string prefix ending in `/` is Kubernetes' Prefix; any other is the regex `^<path>`.
    expect(server("location /private/ { deny all; }")[0]![0]).toMatchObject({ match: { path: "/private/", pathType: "Prefix", regex: false } });
    expect(server("location ^~ /backup.zip { deny all; }")[0]![0]).toMatchObject({ match: { path: "/backup\\.zip", regex: true } });
    expect(server("location = /old { return 301 https://new.test/x; }")[0]![0]).toMatchObject({
      match: { path: "/old", pathType: "Exact" },
      effect: { kind: "redirect", code: 301, url: "https://new.test/x" },
    });
    expect(server("rewrite ^/feed$ /rss.xml permanent;")[0]![0]).toMatchObject({ match: { path: "/feed", pathType: "Exact", scope: "server" }, effect: { kind: "redirect", code: 301, url: "/rss.xml" } });
    expect(actions("rewrite ^/old/(.*)$ /new/$1 break;")[0]![0]).toMatchObject({ match: { path: "/old/(.*)$", regex: true, literal: "/old/", scope: "ingress" }, effect: { kind: "rewrite", target: "/new/$1" } });
    for (const [text, why] of [
      ["location ~ ^/x { return 404; }", "a `location` block other than"],
      ["location ~ ^/x { deny all; proxy_pass http://a; }", "a `location` block other than"],
      ["location ~ /x { deny all; }", "not anchored"],
      ["location ~ ^/x(?=y) { deny all; }", "beyond literal paths"],
      ["location @named { deny all; }", "characters a path may not carry"],
      ["location = /a$b { deny all; }", "characters a path may not carry"],
      ["rewrite ^/old(.*)$ /new$1 break;", "picks a location again"],
    ] as const) {
      const [d] = scanSnippet(text, "server").directives;
      expect(d!.actions, text).toEqual([]);
      expect(d!.note, text).toContain(why);
    }
  });

  test("a header `if` that returns a status is a deny-request-headers rule", () => {
    expect(actions('if ($http_user_agent ~* "(bot|crawler)") { return 403; }')).toEqual([
      [{ kind: "header-deny", name: "User-Agent", op: "~*", pattern: "(bot|crawler)", status: 403, scope: "ingress" }],
    ]);
    expect(actions("if ($http_user_agent ~* (bot|spider)) { return 403; }")[0]).toMatchObject([{ pattern: "(bot|spider)" }]);
    // `=` and `!=` compare the whole value: an anchored, quoted regex.
    expect(actions('if ($http_x_api_key != "s3cr.t") { return 401; }')).toEqual([
      [{ kind: "header-deny", name: "X-Api-Key", op: "!~", pattern: "^s3cr\\.t$", status: 401, scope: "ingress" }],
    ]);
    const [server] = scanSnippet("if ($http_referer ~ evil) { return 403; }", "server").directives;
    expect(server!.actions).toEqual([{ kind: "header-deny", name: "Referer", op: "~", pattern: "evil", status: 403, scope: "server" }]);
    expect(server!.note).toContain("every request of the host");
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

describe("restrictingDirectivesIn: harmless only when every directive is known to be", () => {
  // Each of these kept some requests from the backend where ingress-nginx ran snippets.
  test.each([
    ['if ($http_x_api_key != "s3cr3t") { return 444; }', ["if"]],
    ['location ~* "^/actuator" { return 404; }', ["location"]],
    ["location /x { internal; }", ["location"]],
    ["internal;", ["internal"]],
    ["access_by_lua_file /etc/nginx/lua/check.lua;", ["access_by_lua_file"]],
    ["content_by_lua_block { ngx.say(1); }", ["content_by_lua_block"]],
    ["ssl_verify_client on;", ["ssl_verify_client"]],
    ['if ($cookie_session = "") { return 302 https://login.example.com/; }', ["if"]],
    ["return 410;", ["return"]],
    ["return 301 https://example.com/;", ["return"]],
    ["rewrite ^ /maintenance.html break;", ["rewrite"]],
    ["deny all;", ["deny"]],
    ["allow 10.0.0.0/8; deny all;", ["allow", "deny"]],
    ['"deny" all;', ["deny"]], // nginx reads a quoted directive name as the name
    ["auth_basic x; auth_basic_user_file /f;", ["auth_basic", "auth_basic_user_file"]],
    ["auth_request /auth;", ["auth_request"]],
    ["satisfy any;", ["satisfy"]],
    ["limit_except GET { deny all; }", ["limit_except"]],
    ["set $x 1;", ["set"]],
    ["include /etc/nginx/deny.conf;", ["include"]],
    ["valid_referers none blocked example.com;", ["valid_referers"]],
    ["some_module_directive on;", ["some_module_directive"]],
    ['proxy_set_header X-Remote-User "";', ["proxy_set_header"]],
    ["more_clear_input_headers X-Remote-User;", ["more_clear_input_headers"]],
    ["more_set_input_headers 'X-Remote-User:';", ["more_set_input_headers"]],
    ["add_header X-A 1; return 403;", ["return"]],
    // A value from nginx variables replaces the client's copy with what nginx established (a
    // login, a verified certificate, the peer address) and removes it when they are empty.
    ["proxy_set_header X-Remote-User $remote_user;", ["proxy_set_header"]],
    ["proxy_set_header X-Client-Verified $ssl_client_verify;", ["proxy_set_header"]],
    ['proxy_set_header X-Client-DN "${ssl_client_s_dn}";', ["proxy_set_header"]],
    ["proxy_set_header X-Client-IP $remote_addr;", ["proxy_set_header"]],
    ["proxy_set_header X-User $http_x_auth_user;", ["proxy_set_header"]],
    ["proxy_set_header X-Remote-User;", ["proxy_set_header"]],
    ['more_set_input_headers "X-Remote-User: $remote_user";', ["more_set_input_headers"]],
    ['more_set_input_headers -r "X-Env: prod" "X-Remote-User: $remote_user";', ["more_set_input_headers"]],
  ])("%p restricts (%p)", (text, names) => {
    expect(restrictingDirectivesIn(text)).toEqual(names);
  });

  test("headers, buffering, timeouts and compression are harmless", () => {
    const text = `
      more_set_headers "X-Frame-Options: DENY";   # deny all; in a comment
      more_clear_headers Server X-Powered-By;
      add_header Referrer-Policy "no-referrer" always;
      proxy_set_header X-Tenant acme;
      proxy_set_header X-Real-IP $remote_addr;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header Connection "";
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header X-Original-Host $host;
      proxy_set_header X-Original-URL "$scheme://\${best_http_host}$request_uri";
      more_set_input_headers "X-Env: prod";
      proxy_hide_header X-Debug;
      proxy_buffering off; proxy_buffer_size 16k; client_max_body_size 10m;
      proxy_read_timeout 120s; proxy_send_timeout 60;
      gzip on; gzip_types text/plain application/json;
      expires 1h;
    `;
    expect(restrictingDirectivesIn(text)).toEqual([]);
    expect(restrictingDirectivesIn("")).toEqual([]);
    expect(restrictingDirectivesIn("# only a comment")).toEqual([]);
  });

  test("words that merely say deny or return are not directives", () => {
    expect(restrictingDirectivesIn('more_set_headers "X-Frame-Options: DENY"; add_header X-Deny "return 403;"; proxy_set_header X-A deny#all;')).toEqual([]);
    // `}` and quotes inside an unquoted word are its own characters, as nginx reads them.
    expect(restrictingDirectivesIn('add_header X-A a}b"c;')).toEqual([]);
    expect(restrictingDirectivesIn("add_header X-A ${host}x;")).toEqual([]);
  });

  test("text that cannot be read is null: nothing in it can be ruled out", () => {
    // A Lua block is Lua, not nginx syntax: unreadable here, so refused all the same.
    for (const text of ["access_by_lua_block { ngx.exit(403) }", "deny all", "location / { deny all;", "add_header X-A 'a;", 'add_header X-A "a"b;', "}", ";", "return 403}", "x".repeat(SNIPPET_LIMIT + 1), "{".repeat(40)]) {
      expect(restrictingDirectivesIn(text)).toBeNull();
    }
  });

  test("hostile text never throws and is read in one pass", () => {
    // Each with its one answer: unreadable (null), nothing restricting ([]), or the names.
    const hostile: [text: string, directives: string[] | null][] = [
      ["\\".repeat(SNIPPET_LIMIT), null], // a word that never ends with `;`
      ['"'.repeat(SNIPPET_LIMIT), null], // quoted strings run together
      ["'\\".repeat(SNIPPET_LIMIT / 2), null], // a quote never closed
      ["${".repeat(SNIPPET_LIMIT / 2), null],
      ["a {".repeat(SNIPPET_LIMIT / 3), null], // blocks never closed
      ["}".repeat(SNIPPET_LIMIT), null],
      ["#".repeat(SNIPPET_LIMIT), []], // one comment
      ["add_header X ".concat("\\".repeat(SNIPPET_LIMIT / 4), ";"), []],
      ["\u0000\uffff\ud800;", ["\u0000\uffff\ud800"]], // a directive by that name, unknown
    ];
    for (const [text, directives] of hostile) {
      expect([text.slice(0, 12), restrictingDirectivesIn(text)]).toEqual([text.slice(0, 12), directives]);
      expect(() => scanSnippet(text)).not.toThrow();
    }
    // A trailing backslash inside a word or a quoted string.
    expect(restrictingDirectivesIn("add_header X a\\")).toBeNull();
    expect(restrictingDirectivesIn("add_header X 'a\\")).toBeNull();
  });
});
