// Global external authentication: ingress-nginx's ConfigMap keys global-auth-* (configmap.go
// ReadConfig, config.go GlobalExternalAuth) as the flags of the same names. nginx.tmpl gives a
// location the global auth location when shouldApplyGlobalAuth (template.go) says so: the
// location has no auth-url of its own, global-auth-url is set, and its Ingress did not set
// enable-global-auth: "false" (authreqglobal/main.go). The auth location is then the one an
// auth-url annotation writes, with the global values, so Portico runs the same external-auth
// kind with parameters read by the same family parser (annotations/external-auth.ts): one
// policy object for the whole table, made once per compile settings. A no-auth-locations path
// skips it as it skips auth-url (kinds/external-auth.ts reads Route.authExempt), as nginx.tmpl
// leaves auth_request out of such a location.
//
// Access control fails closed: a value the auth-url annotation of that name would refuse makes
// every route the global auth covers answer 503, with the reason on each Ingress concerned.
// ingress-nginx logs "Global auth location denied" and carries on, for global-auth-url without
// any authentication at all (docs/design.md "External authentication", "Global").
import { EXTERNAL_AUTH, externalAuthParams, parseCacheDuration } from "../annotations/external-auth.ts";
import { refuseStage } from "../annotations/access-stages.ts";
import { createReader, NGINX_PREFIX } from "./annotations.ts";
import { stagePolicy } from "../policy/contract.ts";
import type { StagePolicy } from "../policy/stages.ts";
import * as K from "../kinds/index.ts";
import type { CompileConfig } from "./config.ts";

/** What the global settings give a route that takes them: its one stage policy, and what was wrong with them. */
export interface GlobalAuth {
  /** The external-auth policy, or the 503 refusal when a value cannot be applied. */
  readonly stage: StagePolicy;
  /** Problems with the values, said on each Ingress the global auth covers. */
  readonly problems: readonly string[];
}

/** Each key and the auth-url annotation it is read as (config.go GlobalExternalAuth's fields). */
const KEYS = [
  ["globalAuthUrl", "auth-url"],
  ["globalAuthMethod", "auth-method"],
  ["globalAuthSignin", "auth-signin"],
  ["globalAuthSigninRedirectParam", "auth-signin-redirect-param"],
  ["globalAuthResponseHeaders", "auth-response-headers"],
  ["globalAuthRequestRedirect", "auth-request-redirect"],
  ["globalAuthCacheKey", "auth-cache-key"],
  ["globalAuthCacheDuration", "auth-cache-duration"],
] as const satisfies readonly (readonly [keyof CompileConfig, string])[];

/** The family's words for an annotation, as the key (and flag) the value came from. */
const asKey = (s: string): string => s.replaceAll(`annotation ${NGINX_PREFIX}auth-`, "global-auth-").replaceAll(`${NGINX_PREFIX}auth-`, "global-auth-");

const made = new WeakMap<CompileConfig, GlobalAuth | null>();

/** The global auth of these settings, or null when global-auth-url is not set. */
export function globalAuth(config: CompileConfig): GlobalAuth | null {
  const known = made.get(config);
  if (known !== undefined) return known;
  const out = read(config);
  made.set(config, out);
  return out;
}

function read(config: CompileConfig): GlobalAuth | null {
  if (config.globalAuthUrl === null) return null;
  const ann: Record<string, string> = {};
  for (const [field, name] of KEYS) {
    const value = config[field];
    if (typeof value === "string") ann[`${NGINX_PREFIX}${name}`] = value;
  }
  if (config.globalAuthAlwaysSetCookie) ann[`${NGINX_PREFIX}auth-always-set-cookie`] = "true";
  const raw: string[] = [];
  const p = EXTERNAL_AUTH.parse(createReader(ann, raw));
  const problems = raw.map(asKey);
  if (p.denied !== null) return Object.freeze({ stage: refuseStage(`global external authentication: ${asKey(p.denied)}`), problems: Object.freeze(problems) });
  // config.go's default GlobalExternalAuth has no AuthCacheDuration, so nginx.tmpl writes no
  // proxy_cache_valid: nginx keeps an answer only as its own Cache-Control or Expires says,
  // which Portico never follows to lengthen an entry (the auth-url annotation's default,
  // authreq.DefaultCacheDuration, is not the global one).
  const cacheRules = config.globalAuthCacheDuration === null ? [] : (parseCacheDuration(config.globalAuthCacheDuration) ?? []);
  return Object.freeze({ stage: stagePolicy(K.EXTERNAL_AUTH, { ...externalAuthParams(p), cacheRules }), problems: Object.freeze(problems) });
}
