// The protocol spoken to the pods of one Ingress's backends. The compiler uses the scheme to
// resolve backends (an HTTPS or gRPC backend has its own id: docs/design.md). GRPC is HTTP/2
// with prior knowledge (h2c), GRPCS HTTP/2 over TLS, as ingress-nginx's grpc_pass grpc:// and
// grpcs:// (proxy/upstream/grpc.ts). AUTO_HTTP is decided per request, in the "forwarding" stage
// (src/kinds/forwarding.ts).
import type { AnnotationSpec, Family } from "./spec.ts";
import { NGINX_PREFIX } from "./spec.ts";
import type { BackendScheme } from "../table/types.ts";
import { oneOf } from "./values.ts";
import { stagePolicy } from "../policy/contract.ts";
import * as K from "../kinds/index.ts";

export interface BackendProtocolPolicy {
  /** The scheme backends are resolved with (AUTO_HTTP: http, switched per request). */
  readonly scheme: BackendScheme;
  /** AUTO_HTTP: HTTPS to the pods for requests that came in over TLS, HTTP for the others. */
  readonly auto: boolean;
}

export const BACKEND_PROTOCOL_SPEC: AnnotationSpec = {
  portico: "portico.dev/backend-protocol",
  nginx: [`${NGINX_PREFIX}backend-protocol`],
  family: "backend-protocol",
  default: "HTTP",
  description:
    "`HTTP`, `HTTPS`, `AUTO_HTTP`, `GRPC` (h2c) or `GRPCS` (any case) to the pods; `AUTO_HTTP` speaks the scheme of the client's connection; TLS certificates of pods are not verified without `proxy-ssl-verify`",
  compat: {
    kind: "differs",
    difference:
      "`FCGI`, which ingress-nginx implements, gives an InvalidAnnotation diagnostic and HTTP here. Portico's own gRPC failures are gRPC statuses (UNAVAILABLE, DEADLINE_EXCEEDED), not HTTP 502/503/504. `HTTP`, `HTTPS` and `AUTO_HTTP` (any case: ingress-nginx upper-cases the value to choose `proxy_pass`) are served the same.",
  },
  sameWhen: (value) => ["HTTP", "HTTPS", "AUTO_HTTP"].includes(value.trim().toUpperCase()),
};

const Protocol = oneOf(["HTTP", "HTTPS", "AUTO_HTTP", "GRPC", "GRPCS"], "expected HTTP, HTTPS, AUTO_HTTP, GRPC or GRPCS");

const NONE: BackendProtocolPolicy = Object.freeze({ scheme: "http", auto: false });
const BY_VALUE: Readonly<Record<string, BackendProtocolPolicy>> = {
  HTTPS: Object.freeze({ scheme: "https", auto: false }),
  AUTO_HTTP: Object.freeze({ scheme: "http", auto: true }),
  GRPC: Object.freeze({ scheme: "grpc", auto: false }),
  GRPCS: Object.freeze({ scheme: "grpcs", auto: false }),
};

export const BACKEND_PROTOCOL: Family<BackendProtocolPolicy> = {
  name: "backend-protocol",
  annotations: [BACKEND_PROTOCOL_SPEC],
  none: NONE,
  // In "forwarding", after the backend stage: the scheme applies to whichever backend the canary
  // policy chose (ingress-nginx's `proxy_pass $scheme://upstream_balancer` is the location's,
  // for main's upstream and the canary's alike).
  stages: (p) => (p.auto ? [stagePolicy(K.AUTO_HTTP, {})] : []),
  parse(r) {
    return BY_VALUE[r.value(BACKEND_PROTOCOL_SPEC, Protocol) ?? ""] ?? NONE;
  },
};
