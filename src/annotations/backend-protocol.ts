// The protocol spoken to the pods of one Ingress's backends. The compiler uses the scheme to
// resolve backends (an HTTPS backend has its own id: docs/design.md).
import type { AnnotationSpec, Family } from "./spec.ts";
import { NGINX_PREFIX } from "./spec.ts";
import { oneOf } from "./values.ts";

export interface BackendProtocolPolicy {
  readonly scheme: "http" | "https";
}

export const BACKEND_PROTOCOL_SPEC: AnnotationSpec = {
  portico: "portico.dev/backend-protocol",
  nginx: [`${NGINX_PREFIX}backend-protocol`],
  family: "backend-protocol",
  default: "HTTP",
  description: "`HTTP` or `HTTPS` (any case) to the pods; HTTPS certificates are not verified",
  compat: {
    kind: "differs",
    difference:
      "`AUTO_HTTP`, `GRPC`, `GRPCS` and `FCGI`, which ingress-nginx implements, give an InvalidAnnotation diagnostic and HTTP here.",
  },
};

const Protocol = oneOf(["HTTP", "HTTPS"], "expected HTTP or HTTPS");

const NONE: BackendProtocolPolicy = Object.freeze({ scheme: "http" });
const HTTPS: BackendProtocolPolicy = Object.freeze({ scheme: "https" });

export const BACKEND_PROTOCOL: Family<BackendProtocolPolicy> = {
  name: "backend-protocol",
  annotations: [BACKEND_PROTOCOL_SPEC],
  none: NONE,
  parse(r) {
    return r.value(BACKEND_PROTOCOL_SPEC, Protocol) === "HTTPS" ? HTTPS : NONE;
  },
};
