// What a route's error pages need from outside its Ingress: the Services they name, resolved
// as ingress-nginx's controller does (controller.go, the loop over upstreams after
// mergeAlternativeBackends, and shouldCreateUpstreamForLocationDefaultBackend):
//
// - a location's error requests go to `upstream-default-backend` (--default-backend-service,
//   or nginx's built-in server that answers 404 when there is none or it has no endpoints),
//   unless the Ingress sets custom-http-errors and default-backend and that Service's first
//   port has at least one endpoint: then to that Service;
// - a location whose own Service has no endpoints is switched to the default-backend Service
//   when that has endpoints (ordinary proxying, path kept).
//
// planErrorPages runs with the annotations (plan.ts, pure of other objects); resolveErrorPages
// runs per host entry (host-entry.ts), where Services and EndpointSlices are read.
import type { ErrorPagesPolicy } from "../annotations/error-pages.ts";
import type { Diagnostic } from "../model/diagnostic.ts";
import type { Backend, BackendScheme, RouteErrorPages } from "../table/types.ts";
import { FIRST_PORT, serviceRef, type BackendRef, type ResolvedBackend } from "./backends.ts";
import type { CompileConfig } from "./config.ts";

export interface ErrorPagesPlan {
  /** The annotation's list, else the flag's (the annotation replaces it: its location's error_page directives hide the http-level ones). */
  readonly codes: readonly number[];
  readonly intercept: boolean;
  /** default-backend as the error target: only with the annotation's own custom-http-errors; plain HTTP (CUSTOM_ERRORS: `proxy_pass http://upstream_balancer`). */
  readonly errorRef: BackendRef | null;
  /** --default-backend-service, when codes are listed. */
  readonly globalRef: BackendRef | null;
  /** default-backend as the no-endpoints fallback, with the Ingress's backend-protocol (it replaces the location's own backend). */
  readonly fallbackRef: BackendRef | null;
}

const byConfig = new WeakMap<CompileConfig, ErrorPagesPlan | null>();

/** The plan of an Ingress's error pages, or null when it has none (no list anywhere, no default-backend). */
export function planErrorPages(p: ErrorPagesPolicy, ns: string, scheme: BackendScheme, config: CompileConfig): ErrorPagesPlan | null {
  const global = config.customHttpErrors ?? [];
  const none = p.codes === null && p.defaultBackend === null;
  // Ingresses without these annotations share one plan per configuration.
  if (none && byConfig.has(config)) return byConfig.get(config) as ErrorPagesPlan | null;
  const codes = p.codes ?? global;
  const g = config.defaultBackendService;
  let plan: ErrorPagesPlan | null = null;
  if (codes.length > 0 || p.defaultBackend !== null) {
    plan = Object.freeze({
      codes,
      // nginx.tmpl writes `proxy_intercept_errors on` at the http level when the flag's list is
      // set, and in the location only for the annotation's list without the opt-out; a
      // location that opts out writes nothing and so inherits the http level's `on`.
      intercept: p.codes === null || !p.disableIntercept || global.length > 0,
      errorRef: p.codes !== null && p.defaultBackend !== null ? serviceRef(ns, p.defaultBackend, FIRST_PORT, "http") : null,
      globalRef: codes.length > 0 && g ? serviceRef(g.namespace, g.name, g.port, "http") : null,
      fallbackRef: p.defaultBackend !== null ? serviceRef(ns, p.defaultBackend, FIRST_PORT, scheme) : null,
    });
  }
  if (none) byConfig.set(config, plan);
  return plan;
}

export interface ResolvedErrorPages {
  /** Absent when no status is listed. */
  readonly errorPages: RouteErrorPages | undefined;
  /** The fallback Backend when it has endpoints, else null. */
  readonly fallback: Backend | null;
  /** The refs resolved, in order, with what they resolved to (the host entry's invalidation inputs). */
  readonly refs: readonly BackendRef[];
  readonly resolved: readonly ResolvedBackend[];
  readonly diagnostics: readonly Diagnostic[];
}

/** Resolve a plan's Services once per host entry; `resolve` is the compiler's cached resolver. */
export function resolveErrorPages(
  plan: ErrorPagesPlan,
  ingress: { readonly namespace: string; readonly name: string },
  resolve: (ref: BackendRef) => ResolvedBackend,
): ResolvedErrorPages {
  const refs: BackendRef[] = [];
  const resolved: ResolvedBackend[] = [];
  const diagnostics: Diagnostic[] = [];
  const get = (ref: BackendRef | null): ResolvedBackend | null => {
    if (ref === null) return null;
    const rb = resolve(ref);
    refs.push(ref);
    resolved.push(rb);
    return rb;
  };
  const usable = (rb: ResolvedBackend | null): Backend | null => (rb !== null && rb.backend.status === "ok" ? rb.backend : null);
  const own = get(plan.errorRef);
  const global = get(plan.globalRef);
  const fallback = get(plan.fallbackRef);
  // A default-backend that is not there is worth saying; one without endpoints is the normal
  // case it exists for (ingress-nginx then uses the default backend of the controller).
  const named = fallback ?? own;
  if (named !== null && (named.backend.status === "ServiceNotFound" || named.backend.status === "ServicePortNotFound")) {
    diagnostics.push({
      kind: "Ingress", namespace: ingress.namespace, name: ingress.name, reason: named.backend.status,
      message: `annotation default-backend: ${named.detail}; not used`, severity: "warning",
    });
  }
  const errorPages: RouteErrorPages | undefined =
    plan.codes.length === 0 ? undefined : Object.freeze({ codes: plan.codes, intercept: plan.intercept, backend: usable(own) ?? usable(global) });
  return { errorPages, fallback: usable(fallback), refs, resolved, diagnostics };
}
