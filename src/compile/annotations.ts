// The compiler's one door to annotations: each family lives in src/annotations/ and
// parseAnnotations is the only function the compiler calls (docs/design.md, "Annotations and
// policies"): the families read the Ingress, compile/stages.ts assembles what they supply.
import { readAnnotations, routeOptions, type AnnotationReading, type ParsedAnnotations } from "../annotations/parse.ts";
import { annotationStages, assembleStages } from "./stages.ts";
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
export function parseAnnotations(ann: Annotations): ParsedAnnotations {
  const r = readAnnotations(ann);
  return r === NO_READING ? NONE : withStages(r);
}
