// Per-value compatibility (AnnotationSpec.sameWhen): which values of a "differs" annotation
// behave exactly as in ingress-nginx, family by family. A value called "same" must also be one
// Portico reads without a diagnostic: the report would otherwise call a refused value "same".
import { describe, expect, test } from "bun:test";
import { parseAnnotations } from "../compile/annotations.ts";
import { ANNOTATIONS, IMPLEMENTED } from "./registry.ts";
import { compatOf, NGINX_PREFIX, namesOf, type AnnotationValues } from "./spec.ts";

const n = (name: string) => `${NGINX_PREFIX}${name}`;

function kindOf(name: string, value: string, others: AnnotationValues = {}): string {
  const spec = ANNOTATIONS.find((a) => namesOf(a).includes(name));
  if (spec === undefined) throw new Error(`${name} is not in the registry`);
  return compatOf(spec, value, { ...others, [name]: value }).kind;
}

/** [annotation, value, the Ingress's other annotations] */
type Case = readonly [string, string, AnnotationValues?];

const SAME: Record<string, readonly Case[]> = {
  "tls-redirect": [[n("ssl-redirect"), "false"], [n("ssl-redirect"), "0"], [n("force-ssl-redirect"), "False"]],
  body: [[n("proxy-body-size"), "8m"], [n("proxy-body-size"), "0"], [n("proxy-body-size"), "1048576"], [n("proxy-body-size"), "1G"]],
  // proxy-read-timeout in whole seconds: the head deadline and the idle time between reads, as
  // nginx's one read timer (ngx_http_upstream.c).
  timeouts: [
    [n("proxy-connect-timeout"), "10"], ["portico.dev/connect-timeout", "5"], [n("proxy-read-timeout"), "120"], ["portico.dev/response-timeout", "60"],
    // An empty stream-idle-timeout is read as unset: proxy-read-timeout sets the idle time too.
    [n("proxy-read-timeout"), "120", { "portico.dev/stream-idle-timeout": "" }],
  ],
  "backend-protocol": [[n("backend-protocol"), "HTTP"], [n("backend-protocol"), "https"], [n("backend-protocol"), "AUTO_HTTP"]],
  affinity: [
    [n("session-cookie-name"), "route"],
    [n("session-cookie-domain"), "example.com"],
    [n("session-cookie-samesite"), "Lax"],
    [n("affinity-canary-behavior"), "sticky", { [n("canary")]: "true" }],
    [n("affinity-canary-behavior"), "legacy"],
  ],
  "basic-auth": [
    [n("auth-type"), "basic", { [n("auth-secret")]: "users" }],
    [n("auth-secret"), "users", { [n("auth-type")]: "basic" }],
    [n("auth-secret-type"), "auth-file", { [n("auth-type")]: "basic", [n("auth-secret")]: "users" }],
    [n("auth-realm"), "Authentication Required", { [n("auth-type")]: "basic", [n("auth-secret")]: "users" }],
  ],
  buffering: [[n("proxy-buffering"), "off"], [n("proxy-buffering"), "OFF"], [n("proxy-request-buffering"), "off"]],
  canary: [[n("canary"), "false"], [n("canary-by-header"), "X-Canary", { [n("canary")]: "true" }]],
  cors: [
    [n("enable-cors"), "false"],
    [n("cors-allow-origin"), "*", { [n("enable-cors")]: "true" }],
    [n("cors-allow-origin"), "https://a.example, *", { [n("enable-cors")]: "true" }],
    [n("cors-allow-origin"), "https://a.example"],
  ],
  "error-pages": [[n("default-backend"), "errors"]],
  "external-auth": [
    [n("auth-signin"), "https://auth.example/start?rd=$escaped_request_uri", { [n("auth-url")]: "https://auth.example/check" }],
    [n("auth-request-redirect"), "https://app.example/", { [n("auth-url")]: "https://auth.example/check" }],
    [n("auth-cache-duration"), "200 202 10m, 401 5m", { [n("auth-url")]: "https://auth.example/check" }],
  ],
  // Counted per replica in both (nginx's workers share a zone; Portico's workers, one table).
  limits: [
    [n("limit-rps"), "0"], [n("limit-rpm"), "0"], [n("limit-connections"), "0"],
    [n("limit-rps"), "5"], [n("limit-rpm"), "300"], [n("limit-connections"), "10"],
    [n("limit-burst-multiplier"), "3"], [n("limit-allowlist"), "10.0.0.0/8"],
  ],
  "regex-rewrite": [[n("use-regex"), "false"], [n("x-forwarded-prefix"), "/app", { [n("rewrite-target")]: "/$1" }]],
  retries: [[n("proxy-next-upstream"), "off"], [n("proxy-next-upstream-tries"), "1"], [n("proxy-next-upstream-timeout"), "0"], [n("proxy-next-upstream-timeout"), "30"]],
};

const DIFFERS: Record<string, readonly Case[]> = {
  // A redirect: the code, path and port rules apply to every one.
  "tls-redirect": [[n("ssl-redirect"), "true"], [n("force-ssl-redirect"), "true"]],
  body: [[n("proxy-body-size"), " 8m"], [n("proxy-body-size"), "15r"]],
  timeouts: [
    [n("proxy-connect-timeout"), "500ms"],
    [n("proxy-connect-timeout"), "5s"],
    [n("proxy-connect-timeout"), "0"],
    [n("proxy-connect-timeout"), "+10"],
    [n("proxy-read-timeout"), "1500ms"],
    // Portico's own idle annotation then sets bodies and WebSockets instead.
    [n("proxy-read-timeout"), "120", { "portico.dev/stream-idle-timeout": "5m" }],
  ],
  "backend-protocol": [[n("backend-protocol"), "GRPC"], [n("backend-protocol"), "FCGI"]],
  affinity: [
    // Set per Ingress rather than per Service port: whatever the value.
    [n("affinity"), "cookie"],
    [n("session-cookie-name"), "a/b"],
    [n("session-cookie-domain"), "a~b.example"],
    [n("session-cookie-samesite"), "lax"],
    [n("affinity-canary-behavior"), "legacy", { [n("canary")]: "true" }],
    [n("affinity-canary-behavior"), "other"],
  ],
  "basic-auth": [
    [n("auth-type"), "digest"],
    [n("auth-secret"), "other/users"],
    [n("auth-secret-type"), "auth-map"],
    [n("auth-realm"), "off"],
    [n("auth-realm"), ""],
    [n("auth-realm"), "bad\"realm"],
  ],
  buffering: [[n("proxy-buffering"), "on"], [n("proxy-request-buffering"), "on"], [n("client-body-buffer-size"), "8k"]],
  canary: [[n("canary"), "true"], [n("canary-by-header"), "X Canary"], [n("canary-by-header-pattern"), "^beta$"]],
  cors: [[n("enable-cors"), "true"], [n("cors-allow-origin"), "https://a.example", { [n("enable-cors")]: "true" }]],
  "error-pages": [[n("default-backend"), "Errors"], [n("custom-http-errors"), "404,503"]],
  "external-auth": [
    [n("auth-url"), "https://auth.example/check"],
    [n("auth-signin"), "https://auth.example/start?rd=$request_id"],
    [n("auth-cache-duration"), "10 parsecs"],
    [n("auth-always-set-cookie"), "false"],
  ],
  // Refused (ingress-nginx refuses the Ingress; Portico answers 503 on its routes).
  limits: [[n("limit-rps"), "5r/s"], [n("limit-rpm"), "x"], [n("limit-connections"), "1.5"], [n("limit-burst-multiplier"), "-1"], [n("limit-allowlist"), "10.0.0.0/33"]],
  "regex-rewrite": [[n("use-regex"), "true"], [n("rewrite-target"), "/$2"], [n("x-forwarded-prefix"), "/a;b"]],
  retries: [[n("proxy-next-upstream"), "error timeout"], [n("proxy-next-upstream-tries"), "3"], [n("proxy-next-upstream-timeout"), "500ms"]],
};

describe("per-value compatibility", () => {
  for (const [family, cases] of Object.entries(SAME)) {
    test(`${family}: values served exactly as ingress-nginx serves them are "same", and read without a diagnostic`, () => {
      for (const [name, value, others] of cases) {
        expect([name, value, kindOf(name, value, others)]).toEqual([name, value, "same"]);
        const problems = parseAnnotations({ ...others, [name]: value }).problems.filter((p) => p.startsWith(`annotation ${name}=`));
        expect([name, value, problems]).toEqual([name, value, []]);
      }
    });
  }
  for (const [family, cases] of Object.entries(DIFFERS)) {
    test(`${family}: values with a stated difference stay "differs"`, () => {
      for (const [name, value, others] of cases) expect([name, value, kindOf(name, value, others)]).toEqual([name, value, "differs"]);
    });
  }

  test("a line break is never the same (ingress-nginx refuses it in every value)", () => {
    expect(kindOf(n("ssl-redirect"), "false\n")).toBe("differs");
    expect(kindOf(n("proxy-buffering"), "off\r")).toBe("differs");
  });

  test("only a differing annotation narrows by value, and its text says which values are the same", () => {
    for (const a of IMPLEMENTED) {
      if (a.sameWhen === undefined) continue;
      expect([namesOf(a)[0], a.compat.kind]).toEqual([namesOf(a)[0], "differs"]);
      if (a.compat.kind === "differs") expect([namesOf(a)[0], /served the same/.test(a.compat.difference)]).toEqual([namesOf(a)[0], true]);
    }
  });
});
