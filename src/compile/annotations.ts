// The compiler's one door to annotations: each family lives in src/annotations/ and
// parseAnnotations is the only function the compiler calls (docs/design.md, "Annotations and
// policies").
export { parseAnnotations, type AnnotationPolicies, type ParsedAnnotations } from "../annotations/parse.ts";
export { ANNOTATIONS } from "../annotations/registry.ts";
export { DEFAULT_ROUTE_OPTIONS } from "../table/routes.ts";
export { compatOf, namesOf, NGINX_PREFIX, PORTICO_PREFIX, type AnnotationSpec } from "../annotations/spec.ts";
export { scanSnippet, type CompanionEffect, type CompanionMatch, type SnippetAction } from "../annotations/snippet-scan.ts";
export { GUARDS_ACCESS } from "../annotations/not-implemented.ts";
export { refusedByIngressNginxToo } from "../annotations/access-stages.ts";
export { createReader } from "../annotations/parse.ts";
export { SSL_REDIRECT, FORCE_SSL_REDIRECT } from "../annotations/tls-redirect.ts";
export { Bool } from "../annotations/values.ts";
