// Logging per Ingress: ingress-nginx's enable-access-log (internal/ingress/annotations/log,
// group "log"; nginx.tmpl writes `access_log off;` into each location whose Logs.Access is
// false). The route carries it as RouteOptions.accessLog, which the proxy copies into the
// request's access record (proxy/pipeline/route.ts) and the access log reads
// (log/access.ts record): the line is not written, the metrics still count the request, as
// ingress-nginx's log_by_lua still runs under `access_log off`.
import type { AnnotationSpec, Family } from "./spec.ts";
import { NGINX_PREFIX, PORTICO_PREFIX } from "./spec.ts";
import { Bool } from "./values.ts";

export interface LogPolicy {
  /** false: no access-log line for requests this Ingress routes. */
  readonly accessLog: boolean;
}

export const ENABLE_ACCESS_LOG: AnnotationSpec = {
  portico: `${PORTICO_PREFIX}enable-access-log`,
  nginx: [`${NGINX_PREFIX}enable-access-log`],
  family: "log",
  default: "true",
  description:
    "`false`: requests this Ingress routes write no access-log line (they are still counted in the metrics); `true`: they do, unless `--access-log off`",
  compat: { kind: "same" },
};

const LOGGED: LogPolicy = Object.freeze({ accessLog: true });
const SILENT: LogPolicy = Object.freeze({ accessLog: false });

export const LOG: Family<LogPolicy> = {
  name: "log",
  annotations: [ENABLE_ACCESS_LOG],
  none: LOGGED,
  parse(r) {
    // An invalid value logs, as log/main.go's Parse sets Access to true on any error.
    return r.value(ENABLE_ACCESS_LOG, Bool) === false ? SILENT : LOGGED;
  },
};
