// The compile settings of a Portico started with no flags, for tests and bench/. Read from the
// flag parser itself, so they follow the real defaults (config/flags.ts) instead of restating them.
import type { CompileConfig } from "../../src/compile/config.ts";
import { parseArgs } from "../../src/config/parse.ts";

const parsed = parseArgs([], {});
if (parsed.type !== "run") throw new Error(`no flags should parse as a run, got ${parsed.type}`);
const c = parsed.config;

export const DEFAULT_COMPILE_CONFIG: CompileConfig = Object.freeze({
  ingressClass: c.ingressClass,
  controllerName: c.controllerName,
  watchIngressWithoutClass: c.watchIngressWithoutClass,
  disableCatchAll: c.disableCatchAll,
  ingressNginxCompat: c.ingressNginxCompat,
  defaultBackendService: c.defaultBackendService,
  customHttpErrors: c.customHttpErrors,
  defaultSslCertificate: c.defaultSslCertificate,
  allowExternalNameServices: c.allowExternalNameServices,
  allowlistSourceRange: c.allowlistSourceRange,
  denylistSourceRange: c.denylistSourceRange,
  sslRedirect: c.sslRedirect,
  forceSslRedirect: c.forceSslRedirect,
  hostPolicyScope: c.hostPolicyScope,
  usePortInRedirects: c.usePortInRedirects,
  preserveTrailingSlash: c.preserveTrailingSlash,
  relativeRedirects: c.relativeRedirects,
  tlsMinVersion: c.tlsMinVersion,
  tlsMaxVersion: c.tlsMaxVersion,
  tlsCiphers: c.tlsCiphers,
  tlsEcdhCurve: c.tlsEcdhCurve,
  proxyRedirectFrom: c.proxyRedirectFrom,
  proxyRedirectTo: c.proxyRedirectTo,
  proxyCookieDomain: c.proxyCookieDomain,
  proxyCookiePath: c.proxyCookiePath,
  proxySslLocationOnly: c.proxySslLocationOnly,
  noTlsRedirectLocations: c.noTlsRedirectLocations,
  noAuthLocations: c.noAuthLocations,
  globalAllowedResponseHeaders: c.globalAllowedResponseHeaders,
  addHeaders: c.addHeaders,
  proxySetHeaders: c.proxySetHeaders,
  globalAuthUrl: c.globalAuthUrl, globalAuthMethod: c.globalAuthMethod, globalAuthSignin: c.globalAuthSignin, globalAuthSigninRedirectParam: c.globalAuthSigninRedirectParam,
  globalAuthResponseHeaders: c.globalAuthResponseHeaders, globalAuthRequestRedirect: c.globalAuthRequestRedirect, globalAuthCacheKey: c.globalAuthCacheKey,
  globalAuthCacheDuration: c.globalAuthCacheDuration, globalAuthAlwaysSetCookie: c.globalAuthAlwaysSetCookie,
  gatewayControllerName: c.gatewayControllerName,
  gatewayPorts: c.gatewayPorts,
  publishService: c.publishService,
  enableSslPassthrough: c.enableSslPassthrough,
});
