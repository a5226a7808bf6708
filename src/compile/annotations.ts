// The compiler's one door to annotations: each family lives in src/annotations/ and
// parseAnnotations is the only function the compiler calls (docs/design.md, "Annotations and
// policies"): the families read the Ingress, compile/stages.ts assembles what they supply.
import { readAnnotations, routeOptions, type AnnotationReading, type ParsedAnnotations } from "../annotations/parse.ts";
import { annotationStages, assembleStages } from "./stages.ts";
import { createReader } from "../annotations/parse.ts";
import { parseProxyRewrite, proxyRewriteDefaultsOff, type ProxyRewriteDefaults } from "../annotations/proxy-rewrite.ts";
export { type AnnotationPolicies, type ParsedAnnotations } from "../annotations/parse.ts";
export { ANNOTATIONS } from "../annotations/registry.ts";
export { DEFAULT_ROUTE_OPTIONS } from "../table/routes.ts";
export { compatOf, namesOf, NGINX_PREFIX, PORTICO_PREFIX, type AnnotationSpec } from "../annotations/spec.ts";
export { scanSnippet, type CompanionEffect, type CompanionMatch, type SnippetAction } from "../annotations/snippet-scan.ts";
export { GUARDS_ACCESS } from "../annotations/not-implemented.ts";
export { refusedByIngressNginxToo } from "../annotations/access-stages.ts";
export { createReader } from "../annotations/parse.ts";
export { SSL_REDIRECT, FORCE_SSL_REDIRECT, PRESERVE_TRAILING_SLASH } from "../annotations/tls-redirect.ts";
export { USE_PORT_IN_REDIRECTS } from "../annotations/redirects.ts";
export { Bool } from "../annotations/values.ts";

type Annotations = Readonly<Record<string, string>> | null | undefined;

/** `r` with its route options, its families' stage policies assembled (compile/stages.ts). */
function withStages(r: AnnotationReading): ParsedAnnotations {
  const { refusal, ...rest } = r;
  const stages = assembleStages(annotationStages(r.policies, r.denied, refusal));
  return Object.freeze({ ...rest, options: routeOptions(r.policies, r.denied, stages) });
}

// Most Ingresses carry none of ours: readAnnotations shares one reading for them, and they
// share one result here.
const NO_READING = readAnnotations(null);
const NONE = withStages(NO_READING);

/** One Ingress's annotations → its route options (stages assembled), scheme, per-family policies and problems. */
export function parseAnnotations(ann: Annotations, defaults?: ProxyRewriteDefaults): ParsedAnnotations {
  const r = readAnnotations(ann);
  if (defaults !== undefined && !proxyRewriteDefaultsOff(defaults)) return withProxyRewriteDefaults(r, ann, defaults);
  return r === NO_READING ? NONE : withStages(r);
}

/**
 * The reading with the ConfigMap's proxy-redirect/proxy-cookie defaults standing in for the
 * Ingress's own absent or unreadable ones (ingress-nginx's proxy/main.go falls back per key).
 * Read again with them; the annotations' own problems were reported by the first reading, so
 * only new ones (a refusal the defaults make) are added.
 */
function withProxyRewriteDefaults(r: AnnotationReading, ann: Annotations, defaults: ProxyRewriteDefaults): ParsedAnnotations {
  const problems: string[] = [];
  const proxyRewrite = parseProxyRewrite(createReader(ann ?? {}, problems), defaults);
  const seen = new Set(r.problems);
  return withStages({ ...r, policies: Object.freeze({ ...r.policies, proxyRewrite }), problems: [...r.problems, ...problems.filter((p) => !seen.has(p))] });
}
