import type { Diagnostic } from "../model/diagnostic.ts";
import type { RouteTable } from "../table/types.ts";
import type { GatewayRoutes } from "../table/types.ts";
import type { ClassState, Condition, GatewayState, RouteParentState } from "./gateway/attach.ts";

import type { HostTls } from "../model/host-tls.ts";
export type { HostTls };

/** A TLS host and the Secret whose certificate serves it (null: the default certificate). */
export interface CertificateBinding {
  /** Lowercased `foo.com` or `*.foo.com`. */
  readonly host: string;
  /** `namespace/name` of a kubernetes.io/tls Secret, or null for the default certificate. */
  readonly secret: string | null;
  /** PEM text from the Secret, when it was present in the snapshot. */
  readonly cert: string | null;
  readonly key: string | null;
  /** uid + resourceVersion of the Secret: the cache key for parsed certificates. */
  readonly version: string | null;
  /** The Ingress that declared it (`namespace/name`), for diagnostics and Events. */
  readonly ingress: string;
  /**
   * "certificate": no spec.tls entry of that Ingress lists the host; the Secret is the first of
   * its entries whose certificate names it (ingress-nginx's extractTLSSecretName, second pass).
   * "none": that Ingress has spec.tls but no entry lists or names the host; the default
   * certificate serves it (secret null), and the host is still a TLS host (createServers).
   * Absent: a spec.tls entry lists the host.
   */
  readonly matchedBy?: "certificate" | "none";
}

export interface IngressRef {
  readonly namespace: string;
  readonly name: string;
}

export interface CompileResult {
  readonly table: RouteTable;
  readonly certificates: readonly CertificateBinding[];
  /**
   * Hosts (lowercased names, wildcards included) with cipher options of their own: the
   * ssl-ciphers annotation of the host's first Ingress that sets it (docs/design.md, "Per-host cipher suites"). Absent or empty: none.
   */
  readonly hostTls?: ReadonlyMap<string, HostTls>;
  /** Ingresses this controller serves (their status gets our address). */
  readonly statuses: readonly IngressRef[];
  readonly diagnostics: readonly Diagnostic[];
  /** Gateway API objects of ours and their status; absent when there are none (docs/design.md "Gateway API"). */
  readonly gateway?: GatewayCompileResult;
  /**
   * With --gateway-ports: the certificate bindings of each Gateway's HTTPS port, by Portico
   * port (compile/gateway/ports.ts); `certificates` above are the shared HTTPS port's.
   */
  readonly gatewayPortCertificates?: ReadonlyMap<number, readonly CertificateBinding[]>;
}

/** A set as far as a lookup needs it (the Gateway compile's dependency index). */
export interface KeySet {
  has(key: string): boolean;
}

/** What compile/gateway/table.ts makes of the Gateway API objects (docs/design.md "Gateway API"). */
export interface RouteStatus {
  readonly key: string;
  /** The route's kind when it is not an HTTPRoute (compile/gateway/grpcroute.ts). */
  readonly kind?: "GRPCRoute";
  readonly generation: number | null;
  readonly parents: readonly { readonly state: RouteParentState; readonly conditions: readonly Condition[] }[];
}

export interface GatewayCompileResult {
  readonly classes: ReadonlyMap<string, ClassState>;
  readonly gateways: ReadonlyMap<string, GatewayState>;
  readonly routes: readonly RouteStatus[];
  /** Null when no rule is attached anywhere: the request path then pays one property check. */
  readonly table: GatewayRoutes | null;
  /** Certificates of the HTTPS listeners with a hostname (SNI), first certificateRef of each. */
  readonly certificates: readonly CertificateBinding[];
  /**
   * The Service keys (`namespace/name`, also the EndpointSlice group keys) the HTTPRoutes name,
   * the Secret keys our listeners name and the Secret and ConfigMap keys the
   * IngressNginxPolicies of the routes' ExtensionRefs name, found or not: a change elsewhere in
   * those maps leaves this result as it is (compile.ts). They describe the latest compile
   * only: the next incremental compile updates the indexes in place.
   */
  readonly deps: { readonly services: KeySet; readonly secrets: KeySet; readonly configMaps: KeySet };
  /** The problems status reports, as diagnostics (logged and counted like an Ingress's). */
  readonly diagnostics: readonly Diagnostic[];
}
