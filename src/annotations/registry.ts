// The one list of annotations: the implemented families and the ingress-nginx annotations not
// implemented yet. parse.ts reads Ingresses with it; docs.ts generates the README table and
// the annotation part of `portico --help` from it.
import { ACCESS } from "./access.ts";
import { AFFINITY_FAMILY } from "./affinity.ts";
import { BACKEND_PROTOCOL } from "./backend-protocol.ts";
import { BALANCING } from "./balancing.ts";
import { BASIC_AUTH } from "./basic-auth.ts";
import { BODY } from "./body.ts";
import { BUFFERING } from "./buffering.ts";
import { CANARY_FAMILY } from "./canary.ts";
import { CLIENT_CERTS } from "./client-certs.ts";
import { CORS } from "./cors.ts";
import { EXTERNAL_AUTH } from "./external-auth.ts";
import { LIMITS } from "./limits.ts";
import { LIMIT_RATE_FAMILY } from "./limit-rate.ts";
import { LOG } from "./log.ts";
import { MIRROR } from "./mirror.ts";
import { HEADERS } from "./headers.ts";
import { PROXY_REWRITE } from "./proxy-rewrite.ts";
import { ERROR_PAGES } from "./error-pages.ts";
import { HOSTS } from "./hosts.ts";
import { NOT_IMPLEMENTED } from "./not-implemented.ts";
import { REDIRECTS } from "./redirects.ts";
import { RETRIES } from "./retries.ts";
import { REGEX_REWRITE } from "./regex-rewrite.ts";
import { namesOf, type AnnotationSpec } from "./spec.ts";
import { SSL_CIPHERS_FAMILY } from "./ssl-ciphers.ts";
import { SSL_PASSTHROUGH_FAMILY } from "./ssl-passthrough.ts";
import { TIMEOUTS } from "./timeouts.ts";
import { TLS_REDIRECT } from "./tls-redirect.ts";
import { UPSTREAM_TLS } from "./upstream-tls.ts";

/**
 * The implemented families, by the key their policy has in ParsedAnnotations.policies.
 * Adding a family: one line here (docs/design.md, "Annotations and policies").
 */
export const FAMILIES = {
  tlsRedirect: TLS_REDIRECT,
  redirects: REDIRECTS,
  body: BODY,
  timeouts: TIMEOUTS,
  backendProtocol: BACKEND_PROTOCOL,
  cors: CORS,
  canary: CANARY_FAMILY,
  access: ACCESS,
  basicAuth: BASIC_AUTH,
  clientCerts: CLIENT_CERTS,
  retries: RETRIES,
  externalAuth: EXTERNAL_AUTH,
  regexRewrite: REGEX_REWRITE,
  limits: LIMITS,
  affinity: AFFINITY_FAMILY,
  balancing: BALANCING,
  headers: HEADERS,
  buffering: BUFFERING,
  errorPages: ERROR_PAGES,
  hosts: HOSTS,
  sslPassthrough: SSL_PASSTHROUGH_FAMILY,
  sslCiphers: SSL_CIPHERS_FAMILY,
  mirror: MIRROR,
  proxyRewrite: PROXY_REWRITE,
  upstreamTls: UPSTREAM_TLS,
  log: LOG,
  limitRate: LIMIT_RATE_FAMILY,
} as const;

/** Annotations Portico implements, family by family. */
export const IMPLEMENTED: readonly AnnotationSpec[] = Object.values(FAMILIES).flatMap((f) => f.annotations);

/** Every annotation: implemented first, then the ingress-nginx ones not implemented. */
export const ANNOTATIONS: readonly AnnotationSpec[] = [...IMPLEMENTED, ...NOT_IMPLEMENTED];

/** Every name (portico.dev and ingress-nginx, aliases included) Portico reads. */
export const IMPLEMENTED_NAMES: ReadonlySet<string> = new Set(IMPLEMENTED.flatMap(namesOf));
