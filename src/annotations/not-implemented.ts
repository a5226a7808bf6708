// ingress-nginx annotations Portico does not implement (yet), by the family that will hold
// each. Every one of them is an UnsupportedAnnotation diagnostic when an Ingress sets it.
// Implementing one means moving its entry into its family's module (docs/design.md,
// "Annotations and policies"). Names as in ingress-nginx's annotation parsers at v1.15.1.
import type { AnnotationSpec, FamilyName } from "./spec.ts";
import { NGINX_PREFIX } from "./spec.ts";

const BY_DESIGN = "By design: it is nginx configuration text (the root of CVE-2021-25742 and CVE-2025-1974).";

function nyi(family: FamilyName, names: string | readonly string[], description: string, note?: string): AnnotationSpec {
  const list = typeof names === "string" ? [names] : names;
  return {
    portico: null,
    nginx: list.map((n) => `${NGINX_PREFIX}${n}`),
    family,
    default: null,
    description,
    compat: note === undefined ? { kind: "not-implemented" } : { kind: "not-implemented", note },
  };
}

export const NOT_IMPLEMENTED: readonly AnnotationSpec[] = [
  // Retries and the send timeout.
  nyi(
    "timeouts",
    "proxy-send-timeout",
    "idle time allowed while sending the request upstream",
    "Portico's response deadline (`proxy-read-timeout`) restarts on every body chunk the pod takes, so a pod that stops reading the body gets 504 after that deadline; there is no separate send deadline.",
  ),
  // Response buffers (proxy-request-buffering, client-body-buffer-size, proxy-buffering,
  // proxy-buffer-size and proxy-buffers-number: buffering.ts).
  nyi("buffering", "proxy-busy-buffers-size", "response buffers busy sending to the client"),
  nyi("buffering", "proxy-max-temp-file-size", "response spilled to disk"),
  // External authentication.
  nyi("external-auth", "auth-keepalive", "keep-alive connections to the auth service"),
  nyi("external-auth", "auth-keepalive-requests", "requests per auth keep-alive connection"),
  nyi("external-auth", "auth-keepalive-timeout", "idle time of an auth keep-alive connection"),
  nyi("external-auth", "auth-keepalive-share-vars", "share variables between the auth and main requests"),
  // Headers and response rewriting.
  nyi("headers", "proxy-http-version", "HTTP version to the pods"),
  // nginx configuration text: never.
  nyi("snippets", "configuration-snippet", "nginx configuration for the location", BY_DESIGN),
  nyi("snippets", "server-snippet", "nginx configuration for the server", BY_DESIGN),
  nyi("snippets", "stream-snippet", "nginx stream configuration", BY_DESIGN),
  nyi("snippets", "auth-snippet", "nginx configuration for the auth location", BY_DESIGN),
  nyi("snippets", "modsecurity-snippet", "ModSecurity rules", BY_DESIGN),
  // nginx features with no Portico counterpart planned.
  nyi("other", "enable-rewrite-log", "log nginx's rewrite decisions"),
  nyi("other", "enable-modsecurity", "ModSecurity web application firewall"),
  nyi("other", "enable-owasp-core-rules", "OWASP core rules for ModSecurity"),
  nyi("other", "modsecurity-transaction-id", "ModSecurity transaction id"),
  nyi("other", "enable-opentelemetry", "OpenTelemetry tracing"),
  nyi("other", "opentelemetry-operation-name", "OpenTelemetry span name"),
  nyi("other", "opentelemetry-trust-incoming-span", "continue incoming traces"),
  nyi("other", "fastcgi-index", "FastCGI index"),
  nyi("other", "fastcgi-params-configmap", "FastCGI parameters"),
];

/**
 * Not-implemented annotations that guard access: an Ingress that sets one expects requests to
 * be checked, so serving it without the check would open it. Its routes refuse every request
 * (503, ingress-nginx's "location denied") until the annotation is implemented or removed.
 * The others only tune it. (`auth-url` is implemented: annotations/external-auth.ts;
 * `auth-tls-secret` and its tuning keys: annotations/client-certs.ts.)
 */
export const GUARDS_ACCESS: ReadonlySet<string> = new Set<string>();

