// IngressBackend → Backend. One Backend object per id within a compile, shared by every
// route that names the same namespace/service:port (and scheme), so the proxy can keep
// per-backend state (pools, round robin) keyed by object or id. The compiler keeps the same
// object across compiles while its Service and EndpointSlices are the same objects
// (backend-cache.ts).
import type { DiagnosticReason } from "../model/diagnostic.ts";
import type { IngressBackend } from "../model/schemas.ts";
import type { Snapshot } from "../store/types.ts";
import type { Backend, BackendScheme, BackendStatus, Upstream } from "../table/types.ts";
import type { CompileConfig } from "./config.ts";
import { authority, upstreamsFromSlices, usableEndpoints } from "./endpoints.ts";

/** What an IngressBackend names, before looking at any Service: depends on the spec alone. */
export type BackendRef =
  | {
      readonly kind: "service";
      readonly id: string;
      readonly namespace: string;
      readonly name: string;
      /** `namespace/name`: the Service's and its EndpointSlice group's snapshot key. */
      readonly key: string;
      readonly port: number | string;
      readonly scheme: BackendScheme;
      /**
       * service-upstream: the Service's ClusterIP and port as the one upstream instead of its
       * endpoints (ingress-nginx's getServiceClusterEndpoint).
       */
      readonly clusterIp: boolean;
    }
  | { readonly kind: "resource"; readonly id: string; readonly namespace: string; readonly ref: string };

/** The flags backend resolution reads; fixed for the life of a compiler. */
export type BackendPolicy = Pick<CompileConfig, "allowExternalNameServices">;

export type BackendRefResult = { readonly ok: true; readonly ref: BackendRef } | { readonly ok: false; readonly message: string };

export interface ResolvedBackend {
  readonly backend: Backend;
  /** Why it cannot take traffic ("" when status is ok). */
  readonly detail: string;
}

/** The diagnostic reason of a Backend that cannot take traffic (its status is not "ok"). */
export const backendReason = (r: ResolvedBackend): DiagnosticReason =>
  r.backend.status === "Unsupported" ? "UnsupportedBackend" : (r.backend.status as Exclude<BackendStatus, "ok" | "Unsupported">);

/**
 * The port of a ref that means "the Service's first port", as ingress-nginx uses for the
 * default-backend annotation (controller.go: `location.DefaultBackend.Spec.Ports[0]`). Service
 * and Ingress port numbers are 1-65535 and port names hold a letter, so 0 names no real port
 * and an id ending in `:0` is never an Ingress backend's.
 */
export const FIRST_PORT = 0;

/** `ns/name:port` (also used for --default-backend-service). */
export function serviceRef(ns: string, name: string, port: number | string, scheme: BackendScheme, clusterIp = false): BackendRef {
  // The scheme and the ClusterIP mode are part of the id only when they are not the default,
  // to keep ids readable.
  const id = `${ns}/${name}:${port}${scheme === "http" ? "" : `#${scheme}`}${clusterIp ? "#cluster-ip" : ""}`;
  return { kind: "service", id, namespace: ns, name, key: `${ns}/${name}`, port, scheme, clusterIp };
}

/** Check one IngressBackend written in namespace `ns` (nothing here depends on other objects). */
export function backendRef(ns: string, spec: IngressBackend, scheme: BackendScheme, clusterIp = false): BackendRefResult {
  if (spec.service && spec.resource) return { ok: false, message: "backend sets both service and resource" };
  if (spec.resource) {
    const r = spec.resource;
    const ref = `${r.apiGroup ? `${r.apiGroup}/` : ""}${r.kind}/${r.name}`;
    return { ok: true, ref: { kind: "resource", id: `${ns}/resource:${ref}`, namespace: ns, ref } };
  }
  if (!spec.service) return { ok: false, message: "backend has neither service nor resource" };
  const { name } = spec.service;
  const port = spec.service.port;
  const portLabel = port?.number !== undefined ? String(port.number) : port?.name;
  if (!portLabel) return { ok: false, message: `backend service ${name} has no port number or name` };
  // The API server requires a port name to hold a letter (IANA_SVC_NAME); an all-digit name
  // (possible in --manifests) would also share its id, and so its resolution, with the number.
  if (port?.number === undefined && !/[a-z]/i.test(portLabel)) {
    return { ok: false, message: `backend service ${name} port name "${portLabel}" must contain a letter (use port.number for a number)` };
  }
  return { ok: true, ref: serviceRef(ns, name, port?.number ?? portLabel, scheme, clusterIp) };
}

function make(
  ns: string,
  service: string,
  port: string,
  status: BackendStatus,
  all: readonly Upstream[],
  scheme: BackendScheme,
  serverName: string,
  externalName: boolean,
  detail: string,
  id: string,
  endpoints: readonly Upstream[] = status === "ok" ? all : [],
): ResolvedBackend {
  const backend: Backend = Object.freeze({
    id,
    namespace: ns,
    service,
    port,
    status,
    endpoints,
    allEndpoints: all,
    scheme,
    serverName,
    externalName,
  });
  return { backend, detail };
}

/**
 * The Backend a ref resolves to. Reads `snapshot.services.get(ref.key)`,
 * `snapshot.endpointSlices.get(ref.key)` and the policy, and nothing else (the compiler's
 * backend cache relies on it; the policy never changes under one compiler).
 */
export function resolveRef(snapshot: Snapshot, r: BackendRef, policy: BackendPolicy): ResolvedBackend {
  if (r.kind === "resource") {
    // Never connected to: the scheme is meaningless, so it is not part of the id either.
    return make(r.namespace, `resource:${r.ref}`, "", "Unsupported", [], "http", "", false, `resource backend ${r.ref} is not supported`, r.id);
  }
  const { id, namespace: ns, name, port, scheme } = r;
  const svc = snapshot.services.get(r.key);
  const serverName = `${name}.${ns}.svc`;
  const mk = (status: BackendStatus, ups: Upstream[], sn: string, ext: boolean, detail: string) =>
    make(ns, name, String(port), status, ups, scheme, sn, ext, detail, id);
  if (!svc) return mk("ServiceNotFound", [], serverName, false, `Service ${ns}/${name} not found`);
  const ports = svc.spec.ports ?? [];
  const sp = port === FIRST_PORT ? ports[0] : ports.find((p) => (typeof port === "number" ? p.port === port : p.name === port));
  if (svc.spec.type === "ExternalName") {
    const host = svc.spec.externalName?.toLowerCase();
    // Opt-in, as in Contour: the name is whatever the Service's author writes, so it can point
    // at addresses no Ingress author should reach (this pod's loopback and admin port, the
    // node's metadata service). The route stays and answers 503, like a Service with no endpoints.
    if (!policy.allowExternalNameServices) {
      const detail = `ExternalName Service ${ns}/${name} is not proxied: --allow-external-name-services is off`;
      return mk("ExternalNameNotAllowed", [], host ?? serverName, true, detail);
    }
    if (!host) return mk("NoEndpoints", [], serverName, true, `ExternalName Service ${ns}/${name} has no externalName`);
    const number = sp?.port ?? (typeof port === "number" && port !== FIRST_PORT ? port : null);
    if (number === null) return mk("ServicePortNotFound", [], host, true, `Service ${ns}/${name} has no port named ${port}`);
    const up: Upstream = { address: host, port: number, authority: authority(host, number), ready: true, serving: true, terminating: false };
    return mk("ok", [up], host, true, "");
  }
  if (r.clusterIp) {
    // ingress-nginx's getServiceClusterEndpoint: the ClusterIP, with the port number as the
    // Ingress writes it (not checked against the Service) or the number of the named port.
    // Without a ClusterIP (headless, "None") or such a named port it falls back to the
    // endpoints, as below.
    const ip = svc.spec.clusterIP;
    const number = typeof port === "number" ? port : sp?.port;
    if (ip && ip !== "None" && number !== undefined) {
      const up: Upstream = { address: ip, port: number, authority: authority(ip, number), ready: true, serving: true, terminating: false };
      return mk("ok", [up], serverName, false, "");
    }
  }
  if (!sp) {
    const what = port === FIRST_PORT ? "port" : typeof port === "number" ? `port ${port}` : `port named ${port}`;
    return mk("ServicePortNotFound", [], serverName, false, `Service ${ns}/${name} has no ${what}`);
  }
  const all = upstreamsFromSlices(snapshot.endpointSlices.get(r.key) ?? [], sp.name);
  const usable = usableEndpoints(all);
  const shown = port === FIRST_PORT ? String(sp.port) : String(port);
  if (usable.length === 0) {
    return make(ns, name, shown, "NoEndpoints", all, scheme, serverName, false, `Service ${ns}/${name} port ${shown} has no ready endpoints`, id, usable);
  }
  return make(ns, name, shown, "ok", all, scheme, serverName, false, "", id, usable);
}
