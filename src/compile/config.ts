import type { Config } from "../config/types.ts";

/** The part of Config the compiler reads; a change to one of them is applied by compiling again. */
export const COMPILE_FIELDS = [
  "ingressClass", "controllerName", "watchIngressWithoutClass", "disableCatchAll", "ingressNginxCompat", "defaultBackendService", "customHttpErrors", "defaultSslCertificate", "allowExternalNameServices",
  "allowlistSourceRange", "denylistSourceRange", "sslRedirect", "forceSslRedirect", "hostPolicyScope",
  "usePortInRedirects", "preserveTrailingSlash", "relativeRedirects", "proxyRedirectFrom", "proxyRedirectTo", "proxyCookieDomain", "proxyCookiePath", "proxySslLocationOnly", "noTlsRedirectLocations", "noAuthLocations", "globalAllowedResponseHeaders", "addHeaders", "proxySetHeaders",
  "globalAuthUrl", "globalAuthMethod", "globalAuthSignin", "globalAuthSigninRedirectParam", "globalAuthResponseHeaders", "globalAuthRequestRedirect",
  "globalAuthCacheKey", "globalAuthCacheDuration", "globalAuthAlwaysSetCookie",
  "gatewayControllerName", "gatewayPorts", "publishService", "enableSslPassthrough",
  // Not read by the compiler: a change compiles again so the TLS entries are built again with
  // them (serving/tls.ts createTlsBuilder reads them live).
  "tlsMinVersion", "tlsMaxVersion", "tlsCiphers", "tlsEcdhCurve",
] as const satisfies readonly (keyof Config)[];

export type CompileConfig = Pick<Config, (typeof COMPILE_FIELDS)[number]>;
