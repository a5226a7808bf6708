// Error pages and the default backend: ingress-nginx's custom-http-errors
// (internal/ingress/annotations/customhttperrors/main.go), default-backend
// (annotations/defaultbackend/main.go) and disable-proxy-intercept-errors
// (annotations/disableproxyintercepterrors/main.go). The template turns them into
// `proxy_intercept_errors`, one `error_page N = @custom_<upstream>_N` per code and the
// `@custom_…` locations (rootfs/etc/nginx/template/nginx.tmpl, CUSTOM_ERRORS); the controller
// picks the error backend and switches a location without endpoints to the default backend
// (internal/ingress/controller/controller.go, the loop after mergeAlternativeBackends). Here
// the compiler resolves the Services (compile/error-pages.ts) and the proxy asks the error
// backend (proxy/pipeline/error-pages.ts); docs/design.md, "Error pages".
import * as v from "valibot";
import type { AnnotationSpec, Family } from "./spec.ts";
import { NGINX_PREFIX } from "./spec.ts";
import { Bool } from "./values.ts";

export interface ErrorPagesPolicy {
  /** custom-http-errors, ascending without repeats; null = not set (the flag's list applies). */
  readonly codes: readonly number[] | null;
  /** default-backend: a Service name in the Ingress's namespace; null = not set. */
  readonly defaultBackend: string | null;
  /** disable-proxy-intercept-errors. */
  readonly disableIntercept: boolean;
}

const DROPS = "An invalid value is ignored with a diagnostic (ingress-nginx refuses the whole Ingress).";

export const CUSTOM_HTTP_ERRORS: AnnotationSpec = {
  portico: null,
  nginx: [`${NGINX_PREFIX}custom-http-errors`],
  family: "error-pages",
  default: "--custom-http-errors",
  description:
    "comma-separated 4xx and 5xx statuses: a pod's answer with one of them (and Portico's own 502, 503, 504) is replaced by the answer of `default-backend`, else of `--default-backend-service`, else 404; replaces the flag's list for this Ingress",
  compat: {
    kind: "differs",
    difference: `${DROPS} A request body is not sent again to the error backend (ingress-nginx resends its buffered body). Portico's own 401, 403 and 413 are not replaced.`,
  },
};

export const DEFAULT_BACKEND: AnnotationSpec = {
  portico: null,
  nginx: [`${NGINX_PREFIX}default-backend`],
  family: "error-pages",
  default: "none",
  description:
    "a Service of the Ingress's namespace (its first port): answers the `custom-http-errors` statuses, and every request while the path's own Service has no endpoint; used only while it has endpoints itself",
  compat: { kind: "differs", difference: `${DROPS} A valid Service name is served the same.` },
  sameWhen: (value) => v.is(ServiceName, value),
};

export const DISABLE_PROXY_INTERCEPT_ERRORS: AnnotationSpec = {
  portico: null,
  nginx: [`${NGINX_PREFIX}disable-proxy-intercept-errors`],
  family: "error-pages",
  default: "false",
  description:
    "`true`: a pod's answers are relayed even with a listed status (Portico's own listed errors are still replaced); no effect while `--custom-http-errors` is set, as in ingress-nginx",
  compat: { kind: "same" },
};

// customhttperrors/main.go: spaces removed, then `^(?:[4,5]\d{2},?)*$`, then split on commas,
// trimmed, empty parts skipped, Atoi. The regex's `[4,5]` also takes a comma for the first
// digit (",00" passes and becomes 0, which nginx then refuses as an error_page code): each
// part here must be three digits from 400 to 599.
const Codes = v.pipe(
  v.string(),
  v.transform((s) => s.replaceAll(" ", "")),
  v.check((s) => s !== "" && /^(?:[45]\d{2},?)*$/.test(s), "expected 4xx and 5xx status codes separated by commas, like 404,503"),
  v.transform((s) => s.split(",").filter((p) => p !== "").map(Number)),
  v.check((ns) => ns.length > 0, "expected at least one status code"),
  v.transform((ns) => Object.freeze([...new Set(ns)].sort((a, b) => a - b))),
);

// defaultbackend/main.go validates with parser.ValidateServiceName: an RFC 1035 label.
const ServiceName = v.pipe(
  v.string(),
  v.trim(),
  v.check((s) => s.length <= 63 && /^[a-z]([-a-z0-9]*[a-z0-9])?$/.test(s), "expected a Service name (an RFC 1035 label)"),
);

const NONE: ErrorPagesPolicy = Object.freeze({ codes: null, defaultBackend: null, disableIntercept: false });

export const ERROR_PAGES: Family<ErrorPagesPolicy> = {
  name: "error-pages",
  annotations: [CUSTOM_HTTP_ERRORS, DEFAULT_BACKEND, DISABLE_PROXY_INTERCEPT_ERRORS],
  none: NONE,
  parse(r) {
    const codes = r.read(CUSTOM_HTTP_ERRORS, Codes, "no custom error pages for this Ingress");
    const backend = r.read(DEFAULT_BACKEND, ServiceName, "no default backend for this Ingress");
    // disableproxyintercepterrors/main.go returns false, not an error, for a bad value.
    const disable = r.value(DISABLE_PROXY_INTERCEPT_ERRORS, Bool);
    if (codes.state !== "ok" && backend.state !== "ok" && disable === undefined) return NONE;
    return Object.freeze({
      codes: codes.state === "ok" ? codes.value : null,
      defaultBackend: backend.state === "ok" ? backend.value : null,
      disableIntercept: disable ?? false,
    });
  },
};
