// proxy-redirect-from/-to, proxy-cookie-domain, proxy-cookie-path: the pod's Location, Refresh
// and Set-Cookie fields rewritten as nginx's proxy_redirect, proxy_cookie_domain and
// proxy_cookie_path do (the kind: kinds/proxy-rewrite.ts). Read as ingress-nginx's proxy parser
// reads them (internal/ingress/annotations/proxy/main.go): its validators first (an invalid
// value keeps the default, `off`, since that parser falls back on any error), then what
// nginx.tmpl writes from the values and what nginx then loads. A value nginx would refuse to
// load (a wrong number of words, a regex PCRE rejects) is an Ingress ingress-nginx cannot serve:
// its paths answer 503 here (docs/design.md "Annotations and policies", *Response rewrites*).
import * as v from "valibot";
import { compileHeaderPattern } from "../regex/header-pattern.ts";
import type { StagePolicy } from "../policy/stages.ts";
import { stagePolicy } from "../policy/contract.ts";
import * as K from "../kinds/index.ts";
import type { RewriteRule } from "../kinds/proxy-rewrite.ts";
import { refuseStage } from "./access-stages.ts";
import type { AnnotationSpec, Family, Reader } from "./spec.ts";
import { NGINX_PREFIX, PORTICO_PREFIX } from "./spec.ts";

export interface ProxyRewritePolicy {
  readonly redirect: RewriteRule | null;
  readonly cookieDomain: RewriteRule | null;
  readonly cookiePath: RewriteRule | null;
  /** Why nginx would not load the location (then every path answers 503), or null. */
  readonly refused: string | null;
}

const n = (name: string): string => `${NGINX_PREFIX}${name}`;

// parser/validators.go: URLIsValidRegex (alphaNumericChars and urlEnabledChars), checked with
// the spaces removed (ValidateRegex(..., true)); so no `$` variables, quotes or `*`.
const URL_CHARS = /^[A-Za-z0-9\-._~/:,?&=]*$/;
const UrlValue = v.pipe(
  v.string(),
  v.check((s) => URL_CHARS.test(s.replaceAll(" ", "")), "only A-Z a-z 0-9 - . _ ~ / : , ? & = and spaces are allowed"),
  v.trim(),
  v.minLength(1, "an empty value is invalid"),
);
// proxy/main.go cookieDomainRegex, checked on the value as written.
const COOKIE_DOMAIN = /^(off|[-._~a-zA-Z0-9/:]+\s+[-._~a-zA-Z0-9/:]+)$/;
const CookieDomainValue = v.pipe(v.string(), v.regex(COOKIE_DOMAIN, "`off` or two words of A-Z a-z 0-9 - . _ ~ / :"), v.trim());

const DEFAULT_NOTE = "nginx's `proxy_redirect default` for ingress-nginx's `proxy_pass http://upstream_balancer`: a Location starting `http://upstream_balancer/` (`https://` for an HTTPS backend) starts `/` instead";
const RELATIVE_NOTE = "The Ingress's own relative-redirects does not keep a rewritten Location relative (--relative-redirects does).";
// Go's strconv.ParseBool spellings of true, as ingress-nginx reads relative-redirects.
const TRUE: ReadonlySet<string> = new Set(["1", "t", "T", "TRUE", "true", "True"]);
const REFUSED_NOTE = "A value nginx would not load (other than one or two words, a regular expression PCRE refuses) makes every path of the Ingress answer 503; an invalid one keeps `off`, as in ingress-nginx.";

/** An annotation whose value is served as ingress-nginx serves it, except one Portico refuses. */
const refusedOnlySpec = (name: string, description: string): AnnotationSpec => ({
  portico: `${PORTICO_PREFIX}${name}`,
  nginx: [n(name)],
  family: "headers",
  default: "off",
  description,
  compat: { kind: "differs", difference: REFUSED_NOTE },
  // The difference is only for values Portico refuses: an accepted one is served the same.
  differenceFor: () => "",
});

export const PROXY_REDIRECT_FROM: AnnotationSpec = {
  portico: `${PORTICO_PREFIX}proxy-redirect-from`,
  nginx: [n("proxy-redirect-from")],
  family: "headers",
  default: "off",
  description: `the start of the pod's Location (and of Refresh's \`url=\`) to replace with proxy-redirect-to, case-sensitive; \`~regex\`: a Location the regex matches is replaced whole; \`off\`: none; \`default\`, or any value while proxy-redirect-to is \`off\`: ${DEFAULT_NOTE}; a rewritten Location starting with \`/\` is made absolute (the request's scheme and host) unless --relative-redirects`,
  compat: { kind: "differs", difference: `${RELATIVE_NOTE} ${REFUSED_NOTE}` },
  // For an accepted value, only the Ingress's own relative-redirects: true still differs.
  differenceFor: (_value, all) => (TRUE.has(all[n("relative-redirects")] ?? all[`${PORTICO_PREFIX}relative-redirects`] ?? "") ? RELATIVE_NOTE : ""),
};

export const PROXY_REDIRECT_TO: AnnotationSpec = refusedOnlySpec("proxy-redirect-to", "what replaces proxy-redirect-from's match (no variables); `off`: nginx's `proxy_redirect default` applies instead (see proxy-redirect-from)");

export const PROXY_COOKIE_DOMAIN: AnnotationSpec = refusedOnlySpec("proxy-cookie-domain", "`FROM TO`: a Set-Cookie `Domain` of the pod equal to FROM in any case (a leading `.` aside, and kept) becomes TO; `~regex TO`: a Domain the regex matches in any case is replaced whole; `off`: none");

export const PROXY_COOKIE_PATH: AnnotationSpec = refusedOnlySpec("proxy-cookie-path", "`FROM TO`: a Set-Cookie `Path` of the pod starting with FROM (case-sensitive) has that part replaced by TO; `~regex TO`: a Path the regex matches is replaced whole; `off`: none");

const NONE: ProxyRewritePolicy = Object.freeze({ redirect: null, cookieDomain: null, cookiePath: null, refused: null });

/** The nginx words of a value (nginx splits directive arguments on whitespace). */
const words = (s: string): string[] => s.split(/\s+/).filter((w) => w !== "");

/** A `~` / `~*` pattern as nginx compiles it, on the linear-time engine, or why it cannot be run (PCRE or RE2 refuses it). */
function regexRule(word: string, caseless: boolean, to: string): { rule: RewriteRule } | { why: string } {
  const star = !caseless && word.startsWith("~*");
  const pattern = word.slice(star ? 2 : 1);
  const op = caseless || star ? "~*" : "~";
  const c = compileHeaderPattern(op === "~*" ? `(?i)${pattern}` : pattern);
  if (!c.ok) return { why: `the regular expression ${JSON.stringify(pattern)} ${c.reason}` };
  return { rule: Object.freeze([op, pattern, to] as const) };
}

/**
 * The ConfigMap's proxy-redirect-from/-to, proxy-cookie-domain/-path (config.go Backend, all
 * `off` by default): what an Ingress without a readable annotation of its own gets, as
 * proxy/main.go falls back to them on any error of GetStringAnnotation (absent or invalid).
 */
export interface ProxyRewriteDefaults {
  readonly proxyRedirectFrom: string;
  readonly proxyRedirectTo: string;
  readonly proxyCookieDomain: string;
  readonly proxyCookiePath: string;
}

const OFF: ProxyRewriteDefaults = Object.freeze({ proxyRedirectFrom: "off", proxyRedirectTo: "off", proxyCookieDomain: "off", proxyCookiePath: "off" });

/** All four defaults `off`: nothing to apply (the common case costs nothing). */
export const proxyRewriteDefaultsOff = (d: ProxyRewriteDefaults): boolean =>
  d.proxyRedirectFrom === "off" && d.proxyRedirectTo === "off" && d.proxyCookieDomain === "off" && d.proxyCookiePath === "off";

export const PROXY_REWRITE: Family<ProxyRewritePolicy> = {
  name: "headers",
  annotations: [PROXY_REDIRECT_FROM, PROXY_REDIRECT_TO, PROXY_COOKIE_DOMAIN, PROXY_COOKIE_PATH],
  none: NONE,
  stages: (p) => proxyRewriteStages(p),
  parse: (r) => parseProxyRewrite(r, OFF),
};

/** The family's policy, with `defaults` standing in for each annotation that is absent or unreadable. */
export function parseProxyRewrite(r: Reader, defaults: ProxyRewriteDefaults): ProxyRewritePolicy {
  // Each value, and the name it was read under (for a refusal's message, which the
  // migration report reads as `annotation NAME="VALUE": ...`).
  const read = <T extends string>(spec: AnnotationSpec, schema: v.GenericSchema<string, T>, key: keyof ProxyRewriteDefaults, flagName: string): { value: string; label: string } => {
    const x = r.read(spec, schema, "ingress-nginx keeps its ConfigMap's value (`off` by default) for an invalid value, and so does Portico");
    return x.state === "ok" ? { value: x.value, label: `annotation ${x.name}=${JSON.stringify(x.raw)}` } : { value: defaults[key], label: `--${flagName}=${JSON.stringify(defaults[key])}` };
  };
  const fromR = read(PROXY_REDIRECT_FROM, UrlValue, "proxyRedirectFrom", "proxy-redirect-from");
  const toR = read(PROXY_REDIRECT_TO, UrlValue, "proxyRedirectTo", "proxy-redirect-to");
  const domainR = read(PROXY_COOKIE_DOMAIN, CookieDomainValue, "proxyCookieDomain", "proxy-cookie-domain");
  const pathR = read(PROXY_COOKIE_PATH, UrlValue, "proxyCookiePath", "proxy-cookie-path");
  const [from, to, domain, path] = [fromR.value, toR.value, domainR.value, pathR.value];
  const refusals: string[] = [];
  const refuse = (label: string, why: string) => {
    refusals.push(`${label}: ${why}`);
    return null;
  };

  // nginx.tmpl: `proxy_redirect off|default;` for those two values, else `proxy_redirect
  // FROM TO;` unless TO is `off`, when no directive is written and nginx's own default,
  // `proxy_redirect default`, applies (ngx_http_proxy_merge_loc_conf).
  let redirect: RewriteRule | null = null;
  if (from === "off") redirect = null;
  else if (from === "default" || to === "off") redirect = Object.freeze(["default", "", ""] as const);
  else {
    const f = words(from);
    const t = words(to);
    if (f.length !== 1 || t.length !== 1) redirect = refuse(f.length !== 1 ? fromR.label : toR.label, "nginx's proxy_redirect takes one word each from proxy-redirect-from and proxy-redirect-to");
    else if (f[0]!.startsWith("~")) {
      const x = regexRule(f[0]!, false, t[0]!);
      redirect = "rule" in x ? x.rule : refuse(fromR.label, x.why);
    } else redirect = Object.freeze(["prefix", f[0]!, t[0]!] as const);
  }

  // ngx_http_proxy_cookie_domain and ngx_http_proxy_cookie_path: `off`, or two words, the
  // first a plain word or a `~` regex.
  const cookieRule = (value: string, label: string, directive: string, caseless: boolean, plain: (from: string, to: string) => RewriteRule): RewriteRule | null => {
    if (value === "off") return null;
    const w = words(value);
    if (w.length !== 2) return refuse(label, `nginx's ${directive} takes \`off\` or two words`);
    if (!w[0]!.startsWith("~")) return plain(w[0]!, w[1]!);
    const x = regexRule(w[0]!, caseless, w[1]!);
    return "rule" in x ? x.rule : refuse(label, x.why);
  };
  // proxy_cookie_domain's `~` is always caseless; a leading "." of either plain word is dropped.
  const undot = (s: string) => (s.startsWith(".") ? s.slice(1) : s);
  const cookieDomain = cookieRule(domain, domainR.label, "proxy_cookie_domain", true, (f, t) => Object.freeze(["domain", undot(f), undot(t)] as const));
  // proxy_cookie_path's `~` is case-sensitive, `~*` caseless.
  const cookiePath = cookieRule(path, pathR.label, "proxy_cookie_path", false, (f, t) => Object.freeze(["prefix", f, t] as const));

  if (refusals.length > 0) {
    for (const why of refusals) r.problem(`${why}: nginx would not load this location (ingress-nginx rejects the Ingress or fails its reload); every path of the Ingress answers 503`);
    return Object.freeze({ redirect: null, cookieDomain: null, cookiePath: null, refused: refusals.join("; ") });
  }
  if (redirect === null && cookieDomain === null && cookiePath === null) return NONE;
  return Object.freeze({ redirect, cookieDomain, cookiePath, refused: null });
}

/** The refusal, or the one forwarding policy that rewrites the pod's fields; none when all are off. */
export function proxyRewriteStages(p: ProxyRewritePolicy): StagePolicy[] {
  if (p.refused !== null) return [refuseStage(p.refused)];
  if (p.redirect === null && p.cookieDomain === null && p.cookiePath === null) return [];
  const list = (r: RewriteRule | null): [RewriteRule[0], string, string] | null => (r === null ? null : [r[0], r[1], r[2]]);
  return [stagePolicy(K.PROXY_REWRITE, { redirect: list(p.redirect), cookieDomain: list(p.cookieDomain), cookiePath: list(p.cookiePath), relative: false })];
}
