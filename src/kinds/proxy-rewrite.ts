// proxy-redirect-from/-to, proxy-cookie-domain and proxy-cookie-path: nginx's proxy_redirect,
// proxy_cookie_domain and proxy_cookie_path (nginx.tmpl writes them in every location) edit the
// pod's Location, Refresh and Set-Cookie fields as nginx's proxy module reads them from the pod,
// so before any field a policy sets (more_set_headers, add_header). The rules follow nginx's
// src/http/modules/ngx_http_proxy_module.c (ngx_http_proxy_rewrite_redirect,
// ngx_http_proxy_rewrite_cookie and their handlers) and src/http/ngx_http_upstream.c
// (ngx_http_upstream_rewrite_location, _refresh, _set_cookie). A `~` pattern runs on the
// linear-time engine (regex/header-pattern.ts), never as a JS RegExp. docs/design.md
// "Annotations and policies", *Response rewrites*.
import * as v from "valibot";
import { compileHeaderPattern, type HeaderPattern } from "../regex/header-pattern.ts";
import { defineKind } from "./define.ts";
import type { PolicyFlow } from "./types.ts";

/**
 * One rule, as [op, pattern, replacement]:
 * - `prefix`: the value starts with `pattern` (case-sensitive, ngx_rstrncmp): that part is replaced;
 * - `~` / `~*`: the regex matches anywhere in the value (case-sensitive / not): the whole value is replaced;
 * - `domain` (proxy_cookie_domain only): the value, a leading "." aside, equals `pattern` in any case;
 * - `default` (proxy_redirect only): nginx's `proxy_redirect default` for ingress-nginx's
 *   `proxy_pass <scheme>://upstream_balancer` (template.go buildProxyPass), a proxy_pass
 *   without a URI: `<scheme>://upstream_balancer/` becomes `/` (ngx_http_proxy_redirect).
 */
export type RewriteOp = "prefix" | "~" | "~*" | "domain" | "default";
export type RewriteRule = readonly [op: RewriteOp, pattern: string, replacement: string];

const OPS: readonly RewriteOp[] = ["prefix", "~", "~*", "domain", "default"];
// ingress-nginx's validators (parser/validators.go URLIsValidRegex, proxy's cookieDomainRegex)
// allow these characters only: no `$` (nginx variables), quotes, spaces or controls. Checked
// again here: the table reaches a worker as JSON.
const TEXT = /^[A-Za-z0-9\-._~/:,?&=]*$/;
const Rule = v.tuple([v.picklist(OPS), v.string(), v.string()]);

interface Compiled {
  readonly op: RewriteOp;
  readonly pattern: string;
  readonly replacement: string;
  readonly re: HeaderPattern | null;
}

function compileRule(r: readonly [RewriteOp, string, string], what: string): Compiled {
  const [op, pattern, replacement] = r;
  if (!TEXT.test(pattern) || !TEXT.test(replacement)) throw new Error(`${what}: a character nginx's annotation validators refuse`);
  if (op !== "~" && op !== "~*") return { op, pattern, replacement, re: null };
  const c = compileHeaderPattern(op === "~*" ? `(?i)${pattern}` : pattern);
  if (!c.ok) throw new Error(`${what}: the pattern ${c.reason}`);
  return { op, pattern, replacement, re: c.re };
}

/**
 * One handler of ngx_http_proxy_module.c on `value` from `start`: the new value, or null when
 * the rule does not apply (NGX_DECLINED). `scheme` is the backend's, for `default`.
 */
function applyRule(rule: Compiled, value: string, start: number, scheme: string): string | null {
  switch (rule.op) {
    case "prefix":
    case "default": {
      const pattern = rule.op === "default" ? `${scheme}://upstream_balancer/` : rule.pattern;
      const replacement = rule.op === "default" ? "/" : rule.replacement;
      // ngx_http_proxy_rewrite_complex_handler: a case-sensitive prefix of the rest.
      if (!value.startsWith(pattern, start)) return null;
      return value.slice(0, start) + replacement + value.slice(start + pattern.length);
    }
    case "~":
    case "~*":
      // ngx_http_proxy_rewrite_regex_handler: an unanchored match; the rest is replaced whole.
      if (!rule.re!.test(value.slice(start))) return null;
      return value.slice(0, start) + rule.replacement;
    case "domain": {
      // ngx_http_proxy_rewrite_domain_handler: a leading "." stays, the rest must equal the
      // pattern in any case (ngx_rstrncasecmp).
      const s = value.charCodeAt(start) === 0x2e ? start + 1 : start;
      if (value.length - s !== rule.pattern.length || value.slice(s).toLowerCase() !== rule.pattern.toLowerCase()) return null;
      return value.slice(0, s) + rule.replacement;
    }
  }
}

/**
 * A Set-Cookie value with its Domain and Path attributes rewritten, or null when no rule
 * applied (the field is then sent as the pod wrote it). ngx_http_proxy_parse_cookie splits on
 * ";" and trims spaces around names and values; a rewritten cookie is written back from those
 * parts joined by "; " (ngx_http_proxy_rewrite_cookie), so its other spacing is nginx's too.
 */
function rewriteCookie(cookie: string, domains: Compiled | null, paths: Compiled | null, scheme: string): string | null {
  const parts = cookie.split(";").map((seg) => {
    const eq = seg.indexOf("=");
    if (eq < 0) return { key: seg.replace(/^ +| +$/g, ""), value: null as string | null };
    return { key: seg.slice(0, eq).replace(/^ +| +$/g, ""), value: seg.slice(eq + 1).replace(/^ +| +$/g, "") };
  });
  // A first part without "=" is no cookie nginx rewrites.
  if (parts[0]!.value === null) return null;
  let changed = false;
  for (let i = 1; i < parts.length; i++) {
    const p = parts[i]!;
    if (p.value === null) continue;
    const key = p.key.toLowerCase();
    const rule = key === "domain" ? domains : key === "path" ? paths : null;
    if (rule === null) continue;
    const out = applyRule(rule, p.value, 0, scheme);
    if (out !== null) {
      p.value = out;
      changed = true;
    }
  }
  if (!changed) return null;
  return parts.map((p) => (p.value === null ? p.key : `${p.key}=${p.value}`)).join("; ");
}

/** Whether Location `loc` is a relative one nginx's header filter makes absolute (it starts with "/"). */
function absolute(flow: PolicyFlow, loc: string, relative: boolean): string {
  if (relative || loc.charCodeAt(0) !== 0x2f || flow.hostname === "") return loc;
  // ngx_http_header_filter_module.c: the connection's scheme, the request's host
  // (server_name_in_redirect off), the port only with port_in_redirect (ingress-nginx writes
  // it from use-port-in-redirects) and when not the scheme's default.
  let port = "";
  if (flow.route.options.usePortInRedirects && flow.localPort !== (flow.connectionScheme === "https" ? 443 : 80)) port = `:${flow.localPort}`;
  return `${flow.connectionScheme}://${flow.hostname}${port}${loc}`;
}

/** Applied by the relay to the pod's fields (proxy/pipeline/relay.ts), before any policy's. */
export type ResponseRewrite = (h: Headers, flow: PolicyFlow) => void;

/**
 * The rewrites of one route. `redirect`: proxy_redirect's rule (null: `proxy_redirect off`);
 * `relative`: nginx's `absolute_redirect off` (--relative-redirects).
 */
export const PROXY_REWRITE = defineKind(
  "proxy-rewrite",
  "forwarding",
  v.object({ redirect: v.nullable(Rule), cookieDomain: v.nullable(Rule), cookiePath: v.nullable(Rule), relative: v.optional(v.boolean(), false) }),
  (params) => {
    const redirect = params.redirect === null ? null : compileRule(params.redirect, "proxy-redirect");
    const domains = params.cookieDomain === null ? null : compileRule(params.cookieDomain, "proxy-cookie-domain");
    const paths = params.cookiePath === null ? null : compileRule(params.cookiePath, "proxy-cookie-path");
    if (redirect?.op === "domain" || domains?.op === "default" || paths?.op === "domain" || paths?.op === "default") throw new Error("proxy-rewrite: a rule of another directive");
    const relative = params.relative === true;
    const rewrite: ResponseRewrite = (h, flow) => {
      const scheme = flow.backend.scheme;
      if (redirect !== null) {
        // ngx_http_upstream_rewrite_location: a rewritten Location is nginx's own, which the
        // header filter makes absolute when it starts with "/"; one left alone is sent as is.
        const loc = h.get("location");
        if (loc !== null && loc !== "") {
          const out = applyRule(redirect, loc, 0, scheme);
          if (out !== null) h.set("location", absolute(flow, out, relative));
        }
        // ngx_http_upstream_rewrite_refresh: from after the first "url=", in any case.
        const refresh = h.get("refresh");
        if (refresh !== null) {
          const at = refresh.toLowerCase().indexOf("url=");
          if (at >= 0) {
            const out = applyRule(redirect, refresh, at + 4, scheme);
            if (out !== null) h.set("refresh", out);
          }
        }
      }
      if (domains !== null || paths !== null) {
        const cookies = h.getSetCookie();
        if (cookies.length === 0) return;
        let changed = false;
        const out = cookies.map((c) => {
          const r = rewriteCookie(c, domains, paths, scheme);
          if (r === null) return c;
          changed = true;
          return r;
        });
        if (!changed) return;
        h.delete("set-cookie");
        for (const c of out) h.append("set-cookie", c);
      }
    };
    return (flow) => {
      flow.responseRewrite = rewrite;
      return null;
    };
  },
);
