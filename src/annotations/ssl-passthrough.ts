// ssl-passthrough: the host's TLS connections go to its pods undecrypted, chosen by SNI before
// any TLS termination (serving/passthrough.ts). Only with --enable-ssl-passthrough, as in
// ingress-nginx, whose TCP proxy exists only with that flag (nginx.go setupSSLProxy); without
// it the annotation is ignored with a diagnostic (compile/plan.ts). The annotation is read per
// Ingress (sslpassthrough/main.go, AnnotationScopeIngress) and marks the whole host
// (controller.go createServers: one Ingress of the host setting it is enough).
import type { AnnotationSpec, Family } from "./spec.ts";
import { NGINX_PREFIX } from "./spec.ts";
import { Bool, isFalse } from "./values.ts";

export interface SslPassthroughPolicy {
  readonly on: boolean;
}

export const SSL_PASSTHROUGH: AnnotationSpec = {
  portico: "portico.dev/ssl-passthrough",
  nginx: [`${NGINX_PREFIX}ssl-passthrough`],
  family: "ssl-passthrough",
  default: "false",
  description:
    "`true`/`false` as Go's ParseBool reads them: with `--enable-ssl-passthrough`, TLS connections whose SNI names one of this Ingress's hosts go undecrypted to the backend of the host's `/` path; other paths of the host are not served over HTTPS; requests Portico terminates go to the pods over HTTPS",
  compat: {
    kind: "differs",
    difference:
      "The connection goes to one of the backend's endpoints, chosen as for a request (ingress-nginx: the Service's cluster IP and port). Requests Portico terminates for the Ingress's backends (plain HTTP, and HTTPS without the flag) go to the pods over HTTPS (gRPC over TLS), as in ingress-nginx, which marks the one upstream of the host's `/` path for every Ingress using it, where Portico marks the annotated Ingress's backends. Without `--enable-ssl-passthrough` it is ignored in both, with a diagnostic here. `false` is served the same.",
  },
  sameWhen: isFalse,
};

const NONE: SslPassthroughPolicy = Object.freeze({ on: false });
const ON: SslPassthroughPolicy = Object.freeze({ on: true });

export const SSL_PASSTHROUGH_FAMILY: Family<SslPassthroughPolicy> = {
  name: "ssl-passthrough",
  annotations: [SSL_PASSTHROUGH],
  none: NONE,
  parse(r) {
    return r.value(SSL_PASSTHROUGH, Bool) === true ? ON : NONE;
  },
};
