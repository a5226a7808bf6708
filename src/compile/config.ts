import type { Config } from "../config/types.ts";

/** The part of Config the compiler reads; a change to one of them is applied by compiling again. */
export const COMPILE_FIELDS = [
  "ingressClass", "controllerName", "watchIngressWithoutClass", "disableCatchAll", "ingressNginxCompat", "defaultBackendService", "customHttpErrors", "defaultSslCertificate", "allowExternalNameServices",
  "allowlistSourceRange", "denylistSourceRange", "sslRedirect", "forceSslRedirect", "hostPolicyScope",
  "usePortInRedirects", "preserveTrailingSlash", "relativeRedirects", "proxyRedirectFrom", "proxyRedirectTo", "proxyCookieDomain", "proxyCookiePath", "proxySslLocationOnly", "noTlsRedirectLocations", "noAuthLocations", "globalAllowedResponseHeaders", "addHeaders", "proxySetHeaders",
  "globalAuthUrl", "globalAuthMethod", "globalAuthSignin", "globalAuthSigninRedirectParam", "globalAuthResponseHeaders", "globalAuthRequestRedirect",
  "globalAuthCacheKey", "globalAuthCacheDuration", "globalAuthAlwaysSetCookie",
  "gatewayControllerName", "gatewayPorts", "publishService", "enableSslPassthrough",
] as const satisfies readonly (keyof Config)[];

export type CompileConfig = Pick<Config, (typeof COMPILE_FIELDS)[number]>;
