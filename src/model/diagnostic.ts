// A diagnostic is how the control plane reports a problem with one object: it is logged
// with these fixed keys, counted by reason in metrics, and (with a cluster) becomes an
// Event on the object. The object is skipped; everything else keeps compiling.
export interface Diagnostic {
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  /** A stable CamelCase code, used as the metrics label (bounded set). */
  readonly reason: DiagnosticReason;
  /** One human sentence; may quote object fields, never request input. */
  readonly message: string;
  readonly severity?: "warning" | "error";
}

/**
 * The identity of a diagnostic: two with the same kind, object, reason and message are one
 * problem (the compile deduplicates on it, the controller logs a problem once while it
 * persists, Events deduplicate on it). Also the sort order of a compile's diagnostics.
 */
export function diagnosticKey(d: Diagnostic): string {
  return `${d.kind}\u0000${d.namespace}\u0000${d.name}\u0000${d.reason}\u0000${d.message}`;
}

export type DiagnosticReason =
  | "InvalidObject"
  | "InvalidPath"
  | "StrictPathType"
  | "RegexModeHost"
  | "HostClientCertificates"
  /** --host-policy-scope=namespace: an Ingress outside the host's namespace set a host-wide annotation, not applied there. */
  | "HostPolicyIgnored"
  /** A Gateway API route names a host an Ingress in another namespace names: not asked there (docs/design.md "Gateway API"). */
  | "RouteHostHeldByIngress"
  | "InvalidHost"
  | "InvalidBackend"
  | "InvalidAnnotation"
  | "UnsupportedAnnotation"
  | "DuplicatePath"
  | "PathConflict"
  | "ServiceNotFound"
  | "ServicePortNotFound"
  | "NoEndpoints"
  | "ExternalNameNotAllowed"
  | "UnsupportedBackend"
  | "SecretNotFound"
  | "InvalidCertificate"
  | "CertificateExpired"
  | "IngressClassNotFound"
  | "DefaultBackendConflict"
  | "CanaryWithoutMain"
  | "CanaryConflict"
  | "InvalidAuthSecret"
  // ingress-nginx's ConfigMap (--nginx-configmap): a key Portico cannot honour, a value it cannot read.
  | "UnsupportedConfigKey"
  | "InvalidConfigKey"
  /** A server-alias not applied: another Ingress's host, another host's alias, or not the host's first. */
  | "AliasConflict"
  /** Cookie affinity with use-regex and no session-cookie-path (ingress-nginx logs the same warning). */
  | "SessionCookiePath"
  /** A path of an ssl-passthrough host other than `/`: TLS for the host goes to the `/` backend, so it is served over plain HTTP only. */
  | "SslPassthroughPath"
  // Gateway API (also in their status): a route parent not accepted, a route reference not
  // resolved, a listener that cannot be served.
  | "RouteNotAccepted"
  | "RouteRefsNotResolved"
  /** A route rule the spec makes invalid, left out (the route's PartiallyInvalid condition). */
  | "RouteRuleDropped"
  | "ListenerNotProgrammed";
