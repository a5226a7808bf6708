// HTTP → HTTPS redirect and HSTS for the routes of one Ingress. The proxy reads the result
// from RouteOptions (proxy/redirect.ts); the redirect is decided before the policy stages run
// (docs/design.md, "Annotations and policies", says why).
import type { AnnotationSpec, Family } from "./spec.ts";
import { NGINX_PREFIX } from "./spec.ts";
import { Bool, isFalse } from "./values.ts";

export interface TlsRedirectPolicy {
  /** Redirect plain HTTP to HTTPS when the route's host is covered by spec.tls. */
  readonly sslRedirect: boolean;
  /** Redirect plain HTTP to HTTPS even without spec.tls. */
  readonly forceSslRedirect: boolean;
  readonly hsts: boolean;
}

const SAME_BOOL = "`true`/`false` as Go's ParseBool reads them (`1`, `t`, `TRUE`, …)";

export const SSL_REDIRECT: AnnotationSpec = {
  portico: "portico.dev/ssl-redirect",
  nginx: [`${NGINX_PREFIX}ssl-redirect`],
  family: "tls-redirect",
  default: "true",
  description: `${SAME_BOOL}: 308 from HTTP to HTTPS for hosts in \`spec.tls\``,
  compat: {
    kind: "differs",
    difference:
      "Always 308 (ingress-nginx: `http-redirect-code`, default 308); the path is kept as is (ingress-nginx cuts one trailing `/` unless `preserve-trailing-slash`); the Location carries `:<--https-port>` unless it is 443 (ingress-nginx leaves the port out); a host counts as TLS when a served Ingress lists it, or a `*.` wildcard one label above it, in `spec.tls` (ingress-nginx: when any certificate it holds matches the host). `false` (as ParseBool spells it) is served the same: no redirect in either.",
  },
  sameWhen: isFalse,
};

export const FORCE_SSL_REDIRECT: AnnotationSpec = {
  portico: "portico.dev/force-ssl-redirect",
  nginx: [`${NGINX_PREFIX}force-ssl-redirect`],
  family: "tls-redirect",
  default: "false",
  description: `${SAME_BOOL}: redirect even hosts without \`spec.tls\``,
  compat: { kind: "differs", difference: "Same code, path and port differences as `ssl-redirect`. `false` is served the same: it redirects nothing in either." },
  sameWhen: isFalse,
};

export const HSTS: AnnotationSpec = {
  portico: "portico.dev/hsts",
  nginx: [],
  family: "tls-redirect",
  default: "true",
  description: "`true`/`false`: Strict-Transport-Security on HTTPS responses (when `--hsts` is on)",
  compat: { kind: "portico-only" },
};

const NONE: TlsRedirectPolicy = Object.freeze({ sslRedirect: true, forceSslRedirect: false, hsts: true });

export const TLS_REDIRECT: Family<TlsRedirectPolicy> = {
  name: "tls-redirect",
  annotations: [SSL_REDIRECT, FORCE_SSL_REDIRECT, HSTS],
  none: NONE,
  parse(r) {
    const sslRedirect = r.value(SSL_REDIRECT, Bool);
    const forceSslRedirect = r.value(FORCE_SSL_REDIRECT, Bool);
    const hsts = r.value(HSTS, Bool);
    if (sslRedirect === undefined && forceSslRedirect === undefined && hsts === undefined) return NONE;
    return Object.freeze({
      sslRedirect: sslRedirect ?? NONE.sslRedirect,
      forceSslRedirect: forceSslRedirect ?? NONE.forceSslRedirect,
      hsts: hsts ?? NONE.hsts,
    });
  },
};
