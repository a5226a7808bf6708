import type { Diagnostic } from "../model/diagnostic.ts";
import type { RouteTable } from "../table/types.ts";
import type { GatewayCompileResult } from "./gateway/table.ts";

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
}

export interface IngressRef {
  readonly namespace: string;
  readonly name: string;
}

export interface CompileResult {
  readonly table: RouteTable;
  readonly certificates: readonly CertificateBinding[];
  /** Ingresses this controller serves (their status gets our address). */
  readonly statuses: readonly IngressRef[];
  readonly diagnostics: readonly Diagnostic[];
  /** Gateway API objects of ours and their status; absent when there are none (docs/design.md "Gateway API"). */
  readonly gateway?: GatewayCompileResult;
}
