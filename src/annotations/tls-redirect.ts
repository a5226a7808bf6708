// HTTP → HTTPS redirect and HSTS for the routes of one Ingress. The proxy reads the result
// from RouteOptions (kinds/redirect.ts); the redirect runs between the policy stages, where
// ingress-nginx's Lua redirects (docs/design.md, "Annotations and policies", says why it is
// not a stage policy itself).
import type { AnnotationSpec, Family } from "./spec.ts";
import { NGINX_PREFIX } from "./spec.ts";
import { Bool, isFalse } from "./values.ts";

export interface TlsRedirectPolicy {
  /** Redirect plain HTTP to HTTPS when the route's host is covered by spec.tls. */
  readonly sslRedirect: boolean;
  /** Redirect plain HTTP to HTTPS even without spec.tls. */
  readonly forceSslRedirect: boolean;
  readonly hsts: boolean;
  /** Keep the one trailing `/` ingress-nginx cuts from the redirect's path and query. */
  readonly preserveTrailingSlash: boolean;
}

const SAME_BOOL = "`true`/`false` as Go's ParseBool reads them (`1`, `t`, `TRUE`, …)";

export const SSL_REDIRECT: AnnotationSpec = {
  portico: "portico.dev/ssl-redirect",
  nginx: [`${NGINX_PREFIX}ssl-redirect`],
  family: "tls-redirect",
  default: "true",
  description: `${SAME_BOOL}: \`--http-redirect-code\` (308) from HTTP to \`https://<host><path and query>\` for hosts in \`spec.tls\`, one trailing \`/\` cut, no port`,
  compat: {
    kind: "differs",
    difference:
      "A host counts as TLS when a served Ingress lists it, or a `*.` wildcard one label above it, in `spec.tls`, or an Ingress with rules for it has a `spec.tls` (ingress-nginx: when it configured a certificate for the host, which createServers does for every rule host of an Ingress with `spec.tls`: the entry listing or whose certificate names the host, else the default one). The path is the normalised one Portico routes (ingress-nginx: the request URI as received). Behind a trusted proxy the host is the Host header's (ingress-nginx with `use-forwarded-headers`: the first X-Forwarded-Host). `false` (as ParseBool spells it) is served the same: no redirect in either.",
  },
  sameWhen: isFalse,
  differenceFor: () =>
    "A host counts as TLS when a served Ingress lists it, or a `*.` wildcard one label above it, in `spec.tls`, or an Ingress with rules for it has a `spec.tls` (ingress-nginx: when it configured a certificate for the host, which createServers does for every rule host of an Ingress with `spec.tls`: the entry listing or whose certificate names the host, else the default one). The path is the normalised one Portico routes (ingress-nginx: the request URI as received). Behind a trusted proxy the host is the Host header's (ingress-nginx with `use-forwarded-headers`: the first X-Forwarded-Host).",
};

export const FORCE_SSL_REDIRECT: AnnotationSpec = {
  portico: "portico.dev/force-ssl-redirect",
  nginx: [`${NGINX_PREFIX}force-ssl-redirect`],
  family: "tls-redirect",
  default: "false",
  description: `${SAME_BOOL}: redirect even hosts without \`spec.tls\``,
  compat: { kind: "differs", difference: "The path and host differences of `ssl-redirect`. `false` is served the same: it redirects nothing in either." },
  sameWhen: isFalse,
};

export const PRESERVE_TRAILING_SLASH: AnnotationSpec = {
  portico: "portico.dev/preserve-trailing-slash",
  nginx: [`${NGINX_PREFIX}preserve-trailing-slash`],
  family: "tls-redirect",
  default: "false",
  description: `${SAME_BOOL}: keep the one trailing \`/\` the HTTPS redirect otherwise cuts from the path and query (without it, \`/docs/\` goes to \`https://h/docs\` and \`/\` to \`https://h\`)`,
  compat: { kind: "same" },
};

export const HSTS: AnnotationSpec = {
  portico: "portico.dev/hsts",
  nginx: [],
  family: "tls-redirect",
  default: "true",
  description: "`true`/`false`: Strict-Transport-Security on HTTPS responses (when `--hsts` is on)",
  compat: { kind: "portico-only" },
};

const NONE: TlsRedirectPolicy = Object.freeze({ sslRedirect: true, forceSslRedirect: false, hsts: true, preserveTrailingSlash: false });

export const TLS_REDIRECT: Family<TlsRedirectPolicy> = {
  name: "tls-redirect",
  annotations: [SSL_REDIRECT, FORCE_SSL_REDIRECT, PRESERVE_TRAILING_SLASH, HSTS],
  none: NONE,
  parse(r) {
    const sslRedirect = r.value(SSL_REDIRECT, Bool);
    const forceSslRedirect = r.value(FORCE_SSL_REDIRECT, Bool);
    const preserveTrailingSlash = r.value(PRESERVE_TRAILING_SLASH, Bool);
    const hsts = r.value(HSTS, Bool);
    if (sslRedirect === undefined && forceSslRedirect === undefined && preserveTrailingSlash === undefined && hsts === undefined) return NONE;
    return Object.freeze({
      sslRedirect: sslRedirect ?? NONE.sslRedirect,
      forceSslRedirect: forceSslRedirect ?? NONE.forceSslRedirect,
      hsts: hsts ?? NONE.hsts,
      preserveTrailingSlash: preserveTrailingSlash ?? NONE.preserveTrailingSlash,
    });
  },
};
