// External authentication for the routes of one Ingress: ingress-nginx's `auth-url` family
// (internal/ingress/annotations/authreq/main.go, the auth location of
// rootfs/etc/nginx/template/nginx.tmpl and buildAuthSignURL / buildAuthResponseHeaders in
// internal/ingress/controller/template/template.go, at dbb11b92). The proxy side is
// src/kinds/external-auth.ts; the policy runs in the `authentication` stage.
//
// This is access control, so nothing here fails open. Where ingress-nginx drops the whole
// external-auth configuration and serves the Ingress unauthenticated (an invalid
// `auth-cache-duration`, `auth-request-redirect` or `auth-always-set-cookie`: authreq.Parse
// returns a plain error and the annotation group is skipped), Portico refuses the route: every
// request answers 503, as ingress-nginx's "location denied" does.
//
// nginx variables are never evaluated: a value is parsed into literal text and the few
// variables listed below, and anything else is refused here, at compile time.
import * as v from "valibot";
import { fixedHostRefusal } from "../config/address-policy.ts";
import type { AnnotationSpec, Family, Reader } from "./spec.ts";
import { NGINX_PREFIX } from "./spec.ts";
import { Bool } from "./values.ts";
import { parseTemplate, type TemplatePart } from "../policy/template.ts";
import type { DeepReadonly, ParamsOf } from "../policy/contract.ts";
import * as K from "../kinds/index.ts";
import { refuseStage } from "./access-stages.ts";
import { stagePolicy } from "../policy/contract.ts";


/** authreq.DefaultCacheDuration. */
export const DEFAULT_CACHE_DURATION = "200 202 401 5m";


/** One `proxy_cache_valid` line: the statuses it covers (null: `any`) and for how long. */
export interface CacheRule {
  readonly statuses: readonly number[] | null;
  readonly ms: number;
}

/**
 * The family's result: the parameters of the `external-auth` kind, as its contract types them
 * (kinds/external-auth.ts EXTERNAL_AUTH: url, method, signin, redirectParam, responseHeaders,
 * requestRedirect, alwaysSetCookie, cacheKey, cacheRules), plus whether auth-url was set and
 * why the route must refuse every request (503), or null.
 */
export type ExternalAuthPolicy = DeepReadonly<ParamsOf<typeof K.EXTERNAL_AUTH>> & {
  readonly enabled: boolean;
  readonly denied: string | null;
  /**
   * auth-proxy-set-headers as written (trimmed), or null. The ConfigMap lies outside the
   * Ingress: compile/auth-headers.ts reads it into `proxySetHeaders`, null until then.
   */
  readonly headersConfigMap: string | null;
  /**
   * enable-global-auth (authreqglobal/main.go): false opts this Ingress out of the global
   * auth-url (--global-auth-url, compile/global-auth.ts). It matters only without auth-url.
   */
  readonly global: boolean;
};

/** The policy's parameters, for stagePolicy(K.EXTERNAL_AUTH, ...). */
export function externalAuthParams(p: ExternalAuthPolicy): DeepReadonly<ParamsOf<typeof K.EXTERNAL_AUTH>> {
  const { enabled: _enabled, denied: _denied, headersConfigMap: _headersConfigMap, global: _global, ...params } = p;
  return params;
}

const n = (name: string) => `${NGINX_PREFIX}${name}`;

/** Variables allowed in auth-url: what ingress-nginx's oauth2-proxy and vouch-proxy examples use there. */
export const URL_VARIABLES: ReadonlySet<string> = new Set(["host"]);
/**
 * Variables allowed in auth-signin: the oauth2-proxy example
 * (`https://$host/oauth2/start?rd=$escaped_request_uri`) and the vouch-proxy example
 * (`https://$host/oauth2/login?url=$scheme://$http_host$request_uri`) in
 * docs/examples/auth/oauth-external-auth/.
 */
export const SIGNIN_VARIABLES: ReadonlySet<string> = new Set(["host", "escaped_request_uri", "scheme", "http_host", "request_uri"]);
/** Variables allowed in auth-cache-key (prefix forms end with `_`: `$http_authorization`, `$cookie_session`, `$arg_token`). */
export const CACHE_KEY_VARIABLES: ReadonlySet<string> = new Set([
  "host", "remote_addr", "remote_user", "request_uri", "uri", "args", "scheme", "request_method",
]);
export const CACHE_KEY_PREFIXES = ["http_", "cookie_", "arg_"] as const;

export const AUTH_URL: AnnotationSpec = {
  portico: null,
  nginx: [n("auth-url")],
  family: "external-auth",
  default: "none",
  description:
    "`http://` or `https://` URL of the auth service, asked before each request is forwarded (no body; the client's headers plus `X-Original-URL`, `X-Original-Method`, `X-Sent-From`, `X-Auth-Request-Redirect`...); 2xx passes, 401 and 403 are relayed, anything else or no answer is 500. `$host` is the one variable allowed",
  compat: {
    kind: "differs",
    difference:
      "Never connects to loopback, link-local, unspecified, cloud metadata (fd00:ec2::254, 100.100.100.200...) or this pod's own addresses (the ExternalName address policy); an auth-url whose host is such an address or `localhost` makes every request of the route 503, with a diagnostic naming the address and why; `$host` in the URL is refused on a wildcard or host-less rule (500), where the client would choose the auth server. A URL without scheme or host, a scheme other than http/https, a variable other than `$host` or a character ingress-nginx's validator refuses makes every request of the route 503. The auth request waits at most the route's `proxy-read-timeout`, capped at 60 s (nginx: 60 s connect plus 60 s read). A client's `X-Forwarded-Host`, `X-Forwarded-Port`, `Forwarded`, `X-Original-URI`, `X-Scheme` and `ssl-client-*` are not passed to the auth service unless Portico sets them; `X-Original-URL` carries the normalised path Portico forwards.",
  },
  // For a URL Portico accepted: its host is no refused address (else the value is reported),
  // and `$host` matters only when the URL uses it.
  differenceFor: (value) =>
    `${value.includes("$host") ? "`$host` in the URL is refused on a wildcard or host-less rule (500), where the client would choose the auth server. " : ""}The auth service's address is checked on each lookup: never loopback, link-local, cloud metadata or this pod's own. The auth request waits at most the route's \`proxy-read-timeout\`, capped at 60 s (nginx: 60 s connect plus 60 s read). A client's \`X-Forwarded-Host\`, \`X-Forwarded-Port\`, \`Forwarded\`, \`X-Original-URI\`, \`X-Scheme\` and \`ssl-client-*\` are not passed to the auth service unless Portico sets them; \`X-Original-URL\` carries the normalised path Portico forwards.`,
};

export const AUTH_METHOD: AnnotationSpec = {
  portico: null,
  nginx: [n("auth-method")],
  family: "external-auth",
  default: "GET",
  description: "method of the auth request (`GET HEAD POST PUT PATCH DELETE CONNECT OPTIONS TRACE`); setting it also sends `X-Original-URI` and `X-Scheme`",
  compat: { kind: "same" },
};

export const AUTH_SIGNIN: AnnotationSpec = {
  portico: null,
  nginx: [n("auth-signin")],
  family: "external-auth",
  default: "none",
  description:
    "a 401 from the auth service becomes a 302 to this URL with `rd=<scheme>://<host><escaped request URI>` added (unless the URL already carries that parameter); variables: `$host`, `$escaped_request_uri`, `$scheme`, `$http_host`, `$request_uri`",
  compat: {
    kind: "differs",
    difference: "Another variable makes the annotation ignored with a diagnostic (the 401 is relayed); ingress-nginx evaluates any nginx variable. A URL with only those variables is served the same.",
  },
  sameWhen: (value) => {
    const r = v.safeParse(SigninUrl, value);
    return r.success && parseTemplate(r.output, (name) => SIGNIN_VARIABLES.has(name)).ok;
  },
};

export const AUTH_SIGNIN_REDIRECT_PARAM: AnnotationSpec = {
  portico: null,
  nginx: [n("auth-signin-redirect-param")],
  family: "external-auth",
  default: "rd",
  description: "name of the query parameter of `auth-signin` that carries the original URL",
  compat: { kind: "same" },
};

export const AUTH_RESPONSE_HEADERS: AnnotationSpec = {
  portico: null,
  nginx: [n("auth-response-headers")],
  family: "external-auth",
  default: "none",
  description:
    "comma list of header names copied from the auth service's 2xx answer onto the upstream request, replacing the client's (removed when the auth answer lacks one)",
  compat: { kind: "same" },
};

export const AUTH_REQUEST_REDIRECT: AnnotationSpec = {
  portico: null,
  nginx: [n("auth-request-redirect")],
  family: "external-auth",
  default: "the request URI",
  description: "value of `X-Auth-Request-Redirect` sent to the auth service",
  compat: {
    kind: "differs",
    difference: "An invalid value makes every request of the route 503; ingress-nginx drops the whole external-auth configuration and serves the route without authentication. A valid value is served the same.",
  },
  sameWhen: (value) => v.is(RequestRedirect, value),
};

export const AUTH_ALWAYS_SET_COOKIE: AnnotationSpec = {
  portico: null,
  nginx: [n("auth-always-set-cookie")],
  family: "external-auth",
  default: "false",
  description:
    "`true`: the auth service's `Set-Cookie` is added to every answer; `false`: only to answers with status 200, 201, 204, 206, 301, 302, 303, 304, 307 or 308",
  compat: {
    kind: "differs",
    difference:
      "An invalid value makes every request of the route 503 (ingress-nginx serves the route without authentication). Each `Set-Cookie` of the auth answer is added as its own field (nginx joins them into one).",
  },
};

export const AUTH_CACHE_KEY: AnnotationSpec = {
  portico: null,
  nginx: [n("auth-cache-key")],
  family: "external-auth",
  default: "none (no caching)",
  description:
    "cache auth answers under this key, per host and path: text and `$http_<name>`, `$cookie_<name>`, `$arg_<name>`, `$host`, `$remote_addr`, `$remote_user`, `$request_uri`, `$uri`, `$args`, `$scheme`, `$request_method`",
  compat: {
    kind: "differs",
    difference:
      "Other variables turn caching off with a diagnostic (ingress-nginx evaluates any nginx variable). Variable values are joined unambiguously (nginx concatenates them, so `ab`+`c` and `a`+`bc` share an entry). At most 10,000 answers (32 MiB) are kept, least recently used first out; an answer with `Set-Cookie` or `Cache-Control: no-store`/`no-cache`/`private` is not cached, and `max-age`/`Expires` never lengthen an entry.",
  },
};

export const AUTH_CACHE_DURATION: AnnotationSpec = {
  portico: null,
  nginx: [n("auth-cache-duration")],
  family: "external-auth",
  default: DEFAULT_CACHE_DURATION,
  description:
    "comma list of `[status ...] duration` (as nginx's `proxy_cache_valid`: statuses or `any`, then one of `ms s m h d w M y`); with no status: 200, 301, 302",
  compat: {
    kind: "differs",
    difference:
      "An invalid value makes every request of the route 503; ingress-nginx drops the whole external-auth configuration and serves the route without authentication (or, for a value its validator takes, hands nginx a line it may refuse). A valid value is served the same.",
  },
  sameWhen: (value) => v.is(CacheDuration, value),
};

export const AUTH_PROXY_SET_HEADERS: AnnotationSpec = {
  portico: null,
  nginx: [n("auth-proxy-set-headers")],
  family: "external-auth",
  default: "none",
  description:
    "`<namespace>/<name>` of a ConfigMap in the Ingress's namespace whose entries are set on the auth request (name: letters, digits, `-`, `_`; a value may use `$host`, `$http_host`, `$scheme`, `$remote_addr`, `$remote_user`, `$request_uri`, `$escaped_request_uri`, `$request_method`, `$http_<name>`, `$cookie_<name>`; an empty value removes the field); a missing ConfigMap, one in another namespace, a bare name or an invalid key make every request 503, as in ingress-nginx",
  compat: {
    kind: "differs",
    difference:
      "A value with characters ingress-nginx's validator refuses makes every request 503 (ingress-nginx then asks the auth service without the headers). In the ConfigMap, another variable (`$uri`, `$args` and `$arg_<name>` name the auth location in nginx), a control or non-ASCII character in a value makes every request 503; an entry naming a field the auth request sets itself (`Host`, `X-Original-URL`, `X-Forwarded-For`...) is left out with a warning (nginx sends both fields). An edit or deletion of the ConfigMap applies at once (ingress-nginx applies it when the Ingress is next synced). A `<namespace>/<name>` value is served the same.",
  },
  // ingress-nginx finds the ConfigMap only as `<namespace>/<name>` (authreq looks the value up
  // as a store key); what the ConfigMap holds is reported per Ingress (compile/auth-headers.ts).
  sameWhen: (value) => /^[-._~a-zA-Z0-9:]+\/[-._~a-zA-Z0-9:]+$/.test(value.trim()),
};

export const ENABLE_GLOBAL_AUTH: AnnotationSpec = {
  portico: null,
  nginx: [n("enable-global-auth")],
  family: "external-auth",
  default: "true",
  description:
    "`false`: the global auth service (ingress-nginx's ConfigMap key `global-auth-url`, `--global-auth-url`) is not asked for this Ingress's paths; an Ingress with its own `auth-url` uses that one either way",
  compat: { kind: "same" },
};

// ingress-nginx's character rules (parser/validators.go), applied after removing spaces as its
// ValidateRegex(…, true) does. alphaNumericChars is `-._~a-zA-Z0-9/:`.
/** URLWithNginxVariableRegex: alphaNumericChars, `,`, space, `?&=`, `$`. */
const URL_WITH_VARIABLES_RE = /^[-._~a-zA-Z0-9/:, ?&=$]*$/;
/** URLIsValidRegex: alphaNumericChars, `,:?&=`. */
const URL_RE = /^[-._~a-zA-Z0-9/:,?&=]*$/;
/** NGINXVariable. */
const NGINX_VARIABLE_RE = /^[A-Za-z0-9_${}-]*$/;
/** authreq's methodsRegex. */
const METHOD_RE = /^(GET|HEAD|POST|PUT|PATCH|DELETE|CONNECT|OPTIONS|TRACE)$/;
/**
 * ingress-nginx's header name, `^[a-zA-Z\d\-_]+$` wherever it checks one: authreq's
 * headerRegexp (auth-response-headers, the keys of the auth-proxy-set-headers ConfigMap) and
 * customheaders' headerRegexp (the keys of the custom-headers ConfigMap; ValidHeader, which
 * the ConfigMap's global-allowed-response-headers also goes through).
 */
export const NGINX_HEADER_NAME = /^[a-zA-Z\d_-]+$/;
/** parser.HeadersVariable. */
const HEADERS_VARIABLE_RE = /^[A-Za-z0-9_, -]*$/;
/** parser.ExtendedCharsRegex (authreq validates auth-cache-duration with it, spaces kept). */
const EXTENDED_CHARS_RE = /^[-._~a-zA-Z0-9/:, ]*$/;
/** parser.BasicCharsRegex. */
const BASIC_CHARS_RE = /^[-._~a-zA-Z0-9/:]*$/;

/** ingress-nginx trims each line of a string annotation (parser.normalizeString); an empty value is invalid. */
const Trimmed = v.pipe(v.string(), v.trim(), v.minLength(1, "empty value"));
const noSpaces = (re: RegExp) => (s: string) => re.test(s.replaceAll(" ", ""));

const SigninUrl = v.pipe(Trimmed, v.check(noSpaces(URL_WITH_VARIABLES_RE), "a character ingress-nginx's URL validator refuses"), v.check((s) => !s.includes(" "), "a URL has no spaces"));
const RequestRedirect = v.pipe(Trimmed, v.check(noSpaces(URL_RE), "a character ingress-nginx's URL validator refuses"), v.check((s) => !s.includes(" "), "no spaces"));
const CacheDuration = v.pipe(
  Trimmed,
  v.regex(EXTENDED_CHARS_RE, "a character ingress-nginx's validator refuses"),
  v.transform((s) => parseCacheDuration(s)),
  v.check((x) => x !== null, "expected entries such as `200 202 10m, 401 5m` (statuses or `any`, then one duration in ms, s, m, h, d, w, M or y)"),
);


/** The template with `$host` replaced by a sample host name, as a URL; null when it is not an http(s) URL with a host. */
function urlProblem(parts: readonly TemplatePart[]): string | null {
  const text = parts.map((p) => (typeof p === "string" ? p : "example.com")).join("");
  // parser.StringToURL: a scheme and a host are required, and ".." in the host is refused.
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?]*)/.exec(text);
  if (m === null) return "no scheme and host";
  const scheme = (m[1] as string).toLowerCase();
  if (scheme !== "http" && scheme !== "https") return `scheme ${m[1]} is not http or https`;
  const authority = m[2] as string;
  if (authority === "") return "no host";
  if (authority.includes("..")) return "invalid host";
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    return "not a URL";
  }
  if (u.hostname === "") return "no host";
  return null;
}

/**
 * The auth service's host when the URL names it without variables (a variable there is only
 * known per request), as the data plane will read it (WHATWG URL: IPv4 spellings such as
 * 127.1 normalised), or null.
 */
function literalHost(parts: readonly TemplatePart[]): string | null {
  const host = (fill: string): string | null => {
    try {
      return new URL(parts.map((p) => (typeof p === "string" ? p : fill)).join("")).hostname;
    } catch {
      return null;
    }
  };
  const a = host("a.example");
  return a !== null && a === host("b.example") ? a : null;
}

/** One entry of auth-cache-duration, as nginx's proxy_cache_valid takes it; null when invalid. */
function cacheRule(entry: string): CacheRule | null {
  const words = entry.split(" ").filter((w) => w !== "");
  const last = words.pop();
  if (last === undefined) return null;
  // nginx's time units (ngx_parse_time): ms s m h d w M(30 days) y(365 days); one value.
  const t = /^(\d{1,9})(ms|s|m|h|d|w|M|y)$/.exec(last);
  if (t === null) return null;
  const unit: Record<string, number> = { ms: 1, s: 1e3, m: 6e4, h: 36e5, d: 864e5, w: 6048e5, M: 2592e6, y: 31536e6 };
  const ms = Number(t[1]) * (unit[t[2] as string] as number);
  let statuses: number[] | null = [];
  for (const w of words) {
    if (w === "any") statuses = null;
    else if (/^\d{3}$/.test(w) && Number(w) >= 100 && Number(w) <= 599) statuses?.push(Number(w));
    else return null;
  }
  // proxy_cache_valid without a status covers 200, 301 and 302 (nginx's proxy module docs).
  if (statuses !== null && statuses.length === 0) statuses = [200, 301, 302];
  return { statuses, ms };
}

export function parseCacheDuration(value: string): CacheRule[] | null {
  const out: CacheRule[] = [];
  for (const raw of value.split(",")) {
    const entry = raw.trim();
    if (entry === "") continue;
    const r = cacheRule(entry);
    if (r === null) return null;
    out.push(r);
  }
  return out.length === 0 ? null : out;
}

const DEFAULT_RULES = parseCacheDuration(DEFAULT_CACHE_DURATION) as CacheRule[];

const NONE: ExternalAuthPolicy = Object.freeze({
  enabled: false,
  denied: null,
  url: [],
  method: null,
  signin: null,
  redirectParam: "rd",
  responseHeaders: [],
  requestRedirect: null,
  alwaysSetCookie: false,
  cacheKey: null,
  cacheRules: DEFAULT_RULES,
  proxySetHeaders: [],
  headersConfigMap: null,
  global: true,
});
/** No auth-url, and enable-global-auth: "false". */
const NONE_NOT_GLOBAL: ExternalAuthPolicy = Object.freeze({ ...NONE, global: false });

const DENY = "every request of the route answers 503";

/** Read `spec`; an invalid value is reported and denies the route. */
function readOrDeny<T>(r: Reader, spec: AnnotationSpec, schema: v.GenericSchema<string, T>, deny: string[]): T | undefined {
  const res = r.read(spec, schema, DENY);
  if (res.state === "invalid") deny.push(spec.nginx[0] as string);
  return res.state === "ok" ? res.value : undefined;
}

function parse(r: Reader): ExternalAuthPolicy {
  const deny: string[] = [];
  // authreqglobal/main.go: a value GetBoolAnnotation cannot read counts as true (the global
  // auth applies), which is also the closed side.
  const globalRead = r.read(ENABLE_GLOBAL_AUTH, Bool, "the global auth applies");
  const global = globalRead.state === "ok" ? globalRead.value : true;
  const urlText = readOrDeny(
    r,
    AUTH_URL,
    v.pipe(
      Trimmed,
      v.check(noSpaces(URL_WITH_VARIABLES_RE), "a character ingress-nginx's URL validator refuses"),
      v.check((s) => !s.includes(" "), "a URL has no spaces"),
    ),
    deny,
  );
  if (urlText === undefined && deny.length === 0) return global ? NONE : NONE_NOT_GLOBAL;
  let url: TemplatePart[] = [];
  if (urlText !== undefined) {
    const t = parseTemplate(urlText, (name) => URL_VARIABLES.has(name));
    const why = t.ok ? urlProblem(t.parts) : t.why;
    const host = t.ok && why === null ? literalHost(t.parts) : null;
    // The address policy (config/address-policy.ts) would refuse it on every request after
    // the lookup; known now, it is said now, naming the address and why.
    const refused = host === null ? null : fixedHostRefusal(host);
    if (!t.ok || why !== null) {
      r.problem(`annotation ${AUTH_URL.nginx[0]}=${JSON.stringify(urlText)}: ${why}; ${DENY}`);
      deny.push(AUTH_URL.nginx[0] as string);
    } else if (refused !== null) {
      r.problem(`annotation ${AUTH_URL.nginx[0]}=${JSON.stringify(urlText)}: the auth service's address ${host} is refused (${refused}): Portico never connects to it; ${DENY}`);
      deny.push(AUTH_URL.nginx[0] as string);
    } else url = t.parts;
  }

  const method = readOrDeny(r, AUTH_METHOD, v.pipe(Trimmed, v.check(noSpaces(METHOD_RE), "expected GET, HEAD, POST, PUT, PATCH, DELETE, CONNECT, OPTIONS or TRACE"), v.transform((s) => s.replaceAll(" ", ""))), deny) ?? null;

  // An invalid auth-signin is ignored as ingress-nginx ignores it (with a warning): a 401 is
  // then relayed, which is closed, not open.
  let signin: TemplatePart[] | null = null;
  const signinRead = r.read(AUTH_SIGNIN, SigninUrl, "ignored: a 401 is relayed");
  if (signinRead.state === "ok") {
    const t = parseTemplate(signinRead.value, (name) => SIGNIN_VARIABLES.has(name));
    if (t.ok) signin = t.parts;
    else r.problem(`annotation ${AUTH_SIGNIN.nginx[0]}=${JSON.stringify(signinRead.value)}: ${t.why}; ignored: a 401 is relayed`);
  }
  const redirectParam = r.value(AUTH_SIGNIN_REDIRECT_PARAM, v.pipe(Trimmed, v.check(noSpaces(URL_RE), "a character ingress-nginx's validator refuses"), v.check((s) => !s.includes(" "), "no spaces"))) ?? "rd";

  const headersText = readOrDeny(r, AUTH_RESPONSE_HEADERS, v.pipe(Trimmed, v.check(noSpaces(HEADERS_VARIABLE_RE), "expected header names separated by commas")), deny);
  const responseHeaders: string[] = [];
  if (headersText !== undefined) {
    for (const h of headersText.split(",").map((s) => s.trim()).filter((s) => s !== "")) {
      if (NGINX_HEADER_NAME.test(h)) {
        if (!responseHeaders.includes(h.toLowerCase())) responseHeaders.push(h.toLowerCase());
      } else {
        r.problem(`annotation ${AUTH_RESPONSE_HEADERS.nginx[0]}: ${JSON.stringify(h)} is not a header name; ${DENY}`);
        deny.push(AUTH_RESPONSE_HEADERS.nginx[0] as string);
      }
    }
  }

  const requestRedirect = readOrDeny(r, AUTH_REQUEST_REDIRECT, RequestRedirect, deny) ?? null;
  const alwaysSetCookie = readOrDeny(r, AUTH_ALWAYS_SET_COOKIE, Bool, deny) ?? false;

  const rules = readOrDeny(r, AUTH_CACHE_DURATION, CacheDuration, deny);

  // An invalid or unsupported key turns caching off (ingress-nginx ignores an invalid key
  // with a warning): every request then asks the auth service, which is closed.
  let cacheKey: TemplatePart[] | null = null;
  const keyRead = r.read(AUTH_CACHE_KEY, v.pipe(Trimmed, v.check(noSpaces(NGINX_VARIABLE_RE), "letters, digits, -, _ and variables only")), "caching is off");
  if (keyRead.state === "ok") {
    const t = parseTemplate(keyRead.value.replaceAll(" ", ""), (name) => CACHE_KEY_VARIABLES.has(name) || CACHE_KEY_PREFIXES.some((p) => name.startsWith(p) && name.length > p.length));
    if (t.ok) cacheKey = t.parts;
    else r.problem(`annotation ${AUTH_CACHE_KEY.nginx[0]}=${JSON.stringify(keyRead.value)}: ${t.why}; caching is off`);
  }

  // The ConfigMap named is read by the compiler (compile/auth-headers.ts), which needs the
  // Ingress's namespace and the ConfigMaps; until then the headers are unknown (null), which
  // the proxy refuses to build. A value ingress-nginx's validator refuses (BasicCharsRegex)
  // makes authreq.Parse go on without the headers; Portico refuses the route instead: the
  // auth service never sees a request without the headers it may rely on.
  const psh = r.read(AUTH_PROXY_SET_HEADERS, v.pipe(Trimmed, v.check(noSpaces(BASIC_CHARS_RE), "expected <namespace>/<ConfigMap name>")), DENY);
  if (psh.state === "invalid") deny.push(AUTH_PROXY_SET_HEADERS.nginx[0] as string);
  const headersConfigMap = psh.state === "ok" ? psh.value : null;

  return Object.freeze({
    enabled: true,
    denied: deny.length === 0 ? null : `invalid ${[...new Set(deny)].join(", ")}`,
    url,
    method,
    signin,
    redirectParam,
    responseHeaders,
    requestRedirect,
    alwaysSetCookie,
    cacheKey,
    cacheRules: rules ?? DEFAULT_RULES,
    proxySetHeaders: headersConfigMap === null ? [] : null,
    headersConfigMap,
    global,
  });
}

export const EXTERNAL_AUTH: Family<ExternalAuthPolicy> = {
  name: "external-auth",
  annotations: [
    AUTH_URL, AUTH_METHOD, AUTH_SIGNIN, AUTH_SIGNIN_REDIRECT_PARAM, AUTH_RESPONSE_HEADERS, AUTH_REQUEST_REDIRECT,
    AUTH_ALWAYS_SET_COOKIE, AUTH_CACHE_KEY, AUTH_CACHE_DURATION, AUTH_PROXY_SET_HEADERS, ENABLE_GLOBAL_AUTH,
  ],
  none: NONE,
  parse,
  // A configuration that cannot be applied as written refuses the route in the `denied` stage,
  // before anything else, as ingress-nginx's "location denied" does; so do the values where
  // ingress-nginx itself would serve the route without authentication.
  stages: (a) =>
    !a.enabled ? [] : a.denied !== null ? [refuseStage(`external authentication: ${a.denied}`)] : [stagePolicy(K.EXTERNAL_AUTH, externalAuthParams(a))],
};
