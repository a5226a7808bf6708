// IngressBackend → Backend. One Backend object per id within a compile, shared by every
// route that names the same namespace/service:port (and scheme), so the proxy can keep
// per-backend state (pools, round robin) keyed by object or id.
import type { IngressBackend } from "../model/schemas.ts";
import type { Snapshot } from "../store/types.ts";
import type { Backend, BackendStatus, Upstream } from "../table/types.ts";
import { authority, upstreamsFromSlices, usableEndpoints } from "./endpoints.ts";

export type BackendResult = { readonly ok: true; readonly backend: Backend; readonly detail: string } | { readonly ok: false; readonly message: string };

export class BackendResolver {
  readonly #cache = new Map<string, { backend: Backend; detail: string }>();
  constructor(private readonly snapshot: Snapshot) {}

  /** Resolve one IngressBackend written in namespace `ns`. */
  resolve(ns: string, spec: IngressBackend, scheme: "http" | "https"): BackendResult {
    if (spec.service && spec.resource) return { ok: false, message: "backend sets both service and resource" };
    if (spec.resource) {
      const r = spec.resource;
      const ref = `${r.apiGroup ? `${r.apiGroup}/` : ""}${r.kind}/${r.name}`;
      return this.#cached(`${ns}/resource:${ref}`, () =>
        this.#make(ns, `resource:${ref}`, "", "Unsupported", [], scheme, "", false, `resource backend ${ref} is not supported`),
      );
    }
    if (!spec.service) return { ok: false, message: "backend has neither service nor resource" };
    const { name } = spec.service;
    const port = spec.service.port;
    const portLabel = port?.number !== undefined ? String(port.number) : port?.name;
    if (!portLabel) return { ok: false, message: `backend service ${name} has no port number or name` };
    return this.service(ns, name, port?.number ?? portLabel, scheme);
  }

  /** Resolve `ns/name:port` (also used for --default-backend-service). */
  service(ns: string, name: string, port: number | string, scheme: "http" | "https"): BackendResult {
    // The scheme is part of the id only when it is not the default, to keep ids readable.
    const id = `${ns}/${name}:${port}${scheme === "https" ? "#https" : ""}`;
    let hit = this.#cache.get(id);
    if (!hit) this.#cache.set(id, (hit = this.#resolveService(id, ns, name, port, scheme)));
    return { ok: true, backend: hit.backend, detail: hit.detail };
  }

  #cached(id: string, make: () => { backend: Backend; detail: string }): BackendResult {
    let hit = this.#cache.get(id);
    if (!hit) this.#cache.set(id, (hit = make()));
    return { ok: true, backend: hit.backend, detail: hit.detail };
  }

  #resolveService(id: string, ns: string, name: string, port: number | string, scheme: "http" | "https") {
    const svc = this.snapshot.services.get(`${ns}/${name}`);
    const serverName = `${name}.${ns}.svc`;
    const make = (status: BackendStatus, ups: Upstream[], sn: string, ext: boolean, detail: string) =>
      this.#make(ns, name, String(port), status, ups, scheme, sn, ext, detail, id);
    if (!svc) return make("ServiceNotFound", [], serverName, false, `Service ${ns}/${name} not found`);
    const sp = (svc.spec.ports ?? []).find((p) => (typeof port === "number" ? p.port === port : p.name === port));
    if (svc.spec.type === "ExternalName") {
      const host = svc.spec.externalName?.toLowerCase();
      if (!host) return make("NoEndpoints", [], serverName, true, `ExternalName Service ${ns}/${name} has no externalName`);
      const number = sp?.port ?? (typeof port === "number" ? port : null);
      if (number === null) return make("ServicePortNotFound", [], host, true, `Service ${ns}/${name} has no port named ${port}`);
      const up: Upstream = { address: host, port: number, authority: authority(host, number), ready: true, serving: true, terminating: false };
      return make("ok", [up], host, true, "");
    }
    if (!sp) {
      const what = typeof port === "number" ? `port ${port}` : `port named ${port}`;
      return make("ServicePortNotFound", [], serverName, false, `Service ${ns}/${name} has no ${what}`);
    }
    const all = upstreamsFromSlices(this.snapshot.endpointSlices.get(`${ns}/${name}`) ?? [], sp.name);
    const usable = usableEndpoints(all);
    if (usable.length === 0) {
      return this.#make(ns, name, String(port), "NoEndpoints", all, scheme, serverName, false, `Service ${ns}/${name} port ${port} has no ready endpoints`, id, usable);
    }
    return this.#make(ns, name, String(port), "ok", all, scheme, serverName, false, "", id, usable);
  }

  #make(
    ns: string,
    service: string,
    port: string,
    status: BackendStatus,
    all: readonly Upstream[],
    scheme: "http" | "https",
    serverName: string,
    externalName: boolean,
    detail: string,
    id = `${ns}/${service}`,
    endpoints: readonly Upstream[] = status === "ok" ? all : [],
  ): { backend: Backend; detail: string } {
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
}
