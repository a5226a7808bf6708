// Gateways with their own address (--gateway-ports; docs/design.md "Gateway API", "Gateways
// with their own address"). Gateway API gives each Gateway its own address: a client reaches
// it at `status.addresses` on the listener's declared port (the conformance client dials
// exactly that: conformance/utils/kubernetes WaitForGatewayAddress). So each Gateway here gets
// one Portico port per declared listener port, a Service of its own maps the declared port to
// it (kube/gateway-services.ts), and a request on that Portico port is asked of that Gateway's
// rules on that declared port only: not another Gateway's, not the Ingresses'.
//
// The allocation is a pure function of the objects, so every replica computes the same one:
// a port the Gateway's Service already names as targetPort is kept (the Service, written by
// the leader, is the record that survives restarts); every other one takes the lowest free
// port of the range, Gateways in creation order (oldest first), then namespace/name, then
// declared port.
import type { AccessFlags } from "../access.ts";
import { createHash } from "node:crypto";
import type { PortRange } from "../../config/types.ts";
import type { Diagnostic } from "../../model/diagnostic.ts";
import type { Gateway } from "../../model/gateway.ts";
import type { Secret, Service } from "../../model/schemas.ts";
import { secretBinding } from "../tls.ts";
import type { Snapshot } from "../../store/types.ts";
import type { GatewayPort } from "../../table/types.ts";
import type { BackendRef, ResolvedBackend } from "../backends.ts";
import type { CertificateBinding, GatewayCompileResult } from "../types.ts";
import { cond, listenerAccepted, unserved, type GatewayState } from "./attach.ts";
import { compileGateways } from "./table.ts";
import { MANAGED_BY_LABEL } from "../../store/relevance.ts";

/** Labels and annotation on the Services Portico makes for Gateways (kube/gateway-services.ts). */
export { MANAGED_BY_LABEL };
export const MANAGED_BY = "portico-gateway";
/** `namespace/name` of the Gateway a Service is for. */
export const GATEWAY_ANNOTATION = "portico.dev/gateway";
/** --gateway-controller-name of the Portico that made it: another Portico's are never deleted. */
export const CONTROLLER_ANNOTATION = "portico.dev/gateway-controller";

/**
 * The Service of a Gateway, in --publish-service's namespace: `portico-gw-` and as much of the
 * Gateway's name as fits, then 8 hex digits of a SHA-256 of `namespace/name`, so that two
 * Gateways never share one and the name is a DNS-1035 label of at most 63 characters (a
 * Service name's rule).
 */
export function gatewayServiceName(gatewayKey: string): string {
  const name = gatewayKey.slice(gatewayKey.indexOf("/") + 1);
  const slug = name.toLowerCase().replace(/[^a-z0-9-]/g, "-").slice(0, 43).replace(/-+$/, "");
  const hash = createHash("sha256").update(gatewayKey).digest("hex").slice(0, 8);
  return slug === "" ? `portico-gw-${hash}` : `portico-gw-${slug}-${hash}`;
}

/** Is this Service one Portico made for that Gateway (never someone else's of the same name)? */
export function isGatewayService(svc: Service, gatewayKey: string): boolean {
  return svc.metadata.labels?.[MANAGED_BY_LABEL] === MANAGED_BY && svc.metadata.annotations?.[GATEWAY_ANNOTATION] === gatewayKey;
}

export interface PortUnit {
  readonly gateway: string;
  readonly declared: number;
  readonly https: boolean;
  /** The Portico port. */
  readonly port: number;
}

const gatewayTime = (g: GatewayState) => g.gateway.metadata.creationTimestamp ?? "";

/**
 * One Portico port per (Gateway, declared port) with a listener that can be served, and a
 * diagnostic for each that finds the range full (that port is then not served); `services`:
 * the keys of the Gateways' own Services it looked up, found or not (a change to one of them
 * alone can move a port, so compile.ts allocates again when one changes).
 */
export function allocateGatewayPorts(
  gateways: ReadonlyMap<string, GatewayState>,
  services: ReadonlyMap<string, Service>,
  serviceNamespace: string | null,
  range: PortRange,
): { units: PortUnit[]; diagnostics: Diagnostic[]; unplaced: { gateway: string; declared: number }[]; services: ReadonlySet<string> } {
  const order = [...gateways.values()].sort((a, b) => {
    const ta = gatewayTime(a);
    const tb = gatewayTime(b);
    return ta < tb ? -1 : ta > tb ? 1 : a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
  });
  const wanted: { gateway: string; declared: number; https: boolean }[] = [];
  for (const g of order) {
    const seen = new Set<number>();
    for (const l of [...g.listeners].sort((a, b) => a.port - b.port)) {
      if (l.portClass === null || seen.has(l.port)) continue;
      seen.add(l.port);
      wanted.push({ gateway: g.key, declared: l.port, https: l.portClass === "https" });
    }
  }
  const taken = new Set<number>();
  const port = new Map<number, number>();
  const read = new Set<string>();
  // The ports the Gateways' Services already name, as long as they are in the range.
  wanted.forEach((w, i) => {
    if (serviceNamespace === null) return;
    const key = `${serviceNamespace}/${gatewayServiceName(w.gateway)}`;
    read.add(key);
    const svc = services.get(key);
    if (svc === undefined || !isGatewayService(svc, w.gateway)) return;
    const p = svc.spec?.ports?.find((x) => x.port === w.declared)?.targetPort;
    if (typeof p !== "number" || p < range.from || p > range.to || taken.has(p)) return;
    taken.add(p);
    port.set(i, p);
  });
  const units: PortUnit[] = [];
  const diagnostics: Diagnostic[] = [];
  const unplaced: { gateway: string; declared: number }[] = [];
  let next = range.from;
  wanted.forEach((w, i) => {
    let p = port.get(i);
    if (p === undefined) {
      while (next <= range.to && taken.has(next)) next++;
      if (next > range.to) {
        const [namespace, name] = [w.gateway.slice(0, w.gateway.indexOf("/")), w.gateway.slice(w.gateway.indexOf("/") + 1)];
        diagnostics.push({ kind: "Gateway", namespace, name, reason: "ListenerNotProgrammed", message: `port ${w.declared}: no free port left in --gateway-ports ${range.from}-${range.to}`, severity: "error" });
        unplaced.push({ gateway: w.gateway, declared: w.declared });
        return;
      }
      p = next;
      taken.add(p);
    }
    units.push({ ...w, port: p });
  });
  return { units, diagnostics, unplaced, services: read };
}

/**
 * The Gateways' status when some of their ports found the range full: those listeners are
 * Accepted=False PortUnavailable (ListenerReasonPortUnavailable: "the Listener requests a port
 * that cannot be used on the Gateway") and Programmed=False, and the Gateway's own conditions
 * follow as attach.ts sets them (ListenersNotValid; Programmed=False when no listener is left).
 * Copies: the compile's own states stay as built.
 */
export function withUnplaced(gateways: ReadonlyMap<string, GatewayState>, unplaced: readonly { gateway: string; declared: number }[], range: PortRange): ReadonlyMap<string, GatewayState> {
  if (unplaced.length === 0) return gateways;
  const out = new Map(gateways);
  const message = `no free port left in --gateway-ports ${range.from}-${range.to}`;
  for (const u of unplaced) {
    const g = out.get(u.gateway);
    if (g === undefined) continue;
    const listeners = g.listeners.map((l) =>
      l.port !== u.declared || l.portClass === null ? l : unserved(l, [cond("Accepted", "False", "PortUnavailable", message), cond("Programmed", "False", "Invalid", message)]),
    );
    const accepted = listeners.filter(listenerAccepted).length;
    const served = listeners.some((l) => l.portClass !== null);
    const conditions = g.conditions.map((c) => {
      if (c.type === "Accepted" && c.status === "True") return accepted === 0 ? { type: c.type, status: "False" as const, reason: "ListenersNotValid", message: "no listener is valid" } : { type: c.type, status: c.status, reason: "ListenersNotValid", message: "some listeners are not valid" };
      if (c.type === "Programmed" && !served) return { type: c.type, status: "False" as const, reason: "Invalid", message: "no listener can be served" };
      return c;
    });
    out.set(u.gateway, { ...g, conditions, listeners });
  }
  return out;
}

interface UnitState {
  readonly gateway: Gateway;
  readonly gateways: ReadonlyMap<string, Gateway>;
  result: GatewayCompileResult;
}

/**
 * What an HTTPS port of a Gateway serves: the SNI bindings of that Gateway's listeners there
 * (listener hostnames, and route hostnames through a hostless listener), and as the port's
 * default certificate (host "", as --default-ssl-certificate is bound) the first certificate of
 * its hostless listener: on a port of its own, a hostless HTTPS listener answers every name no
 * other listener there binds, so a client asking for any name gets that listener's
 * certificate, not Portico's generated one. Without a hostless listener: `fallback` (the
 * shared default binding, if any).
 */
function portCertificates(unit: GatewayCompileResult, gateway: string, snapshot: Snapshot, fallback: CertificateBinding | undefined): CertificateBinding[] {
  const out = [...unit.certificates];
  const hostless = unit.gateways.get(gateway)?.listeners.find((l) => l.portClass === "https" && l.hostname === null && l.certificates[0] !== undefined);
  const key = hostless?.certificates[0];
  const secret = key === undefined ? undefined : snapshot.secrets.get(key);
  if (hostless !== undefined && key !== undefined && secret !== undefined) {
    out.push(secretBinding(secret, key, "", `${gateway} (Gateway listener ${hostless.name})`));
  } else if (fallback !== undefined) out.push(fallback);
  return out;
}

/**
 * How many times GatewayPortsCompiler has compiled the units in this process: a debug counter
 * the tests read to hold that a change the Gateway part does not read redoes no port
 * (docs/design.md "Gateways with their own address", "What a change compiles again").
 */
export const gatewayPortCompiles = { count: 0 };

/**
 * Compiles each unit's rules: the HTTPRoutes as attached to that Gateway's listeners on that
 * declared port alone (the same compiler as the shared table, over a snapshot whose Gateways
 * are that one, its other listeners left out: a parentRef naming another section or port then
 * simply does not attach there). The status comes from the full compile, never from these.
 * Each unit keeps its last result, so an unchanged one compiles incrementally.
 */
export class GatewayPortsCompiler {
  #units = new Map<string, UnitState>();
  #last: ReadonlyMap<number, GatewayPort> | null = null;
  /** The certificate bindings of each HTTPS port, as last compiled. */
  certificates: ReadonlyMap<number, readonly CertificateBinding[]> = new Map();

  compile(
    snapshot: Snapshot,
    controllerName: string,
    resolve: (ref: BackendRef) => ResolvedBackend,
    units: readonly PortUnit[],
    changes: { readonly services: ReadonlySet<string>; readonly secrets: ReadonlySet<string>; readonly configMaps: ReadonlySet<string> } | null,
    defaultCertificate?: CertificateBinding,
    /** The source-range flags an IngressNginxPolicy's rules read (extension.ts). */
    flags?: AccessFlags,
  ): ReadonlyMap<number, GatewayPort> {
    gatewayPortCompiles.count++;
    const next = new Map<string, UnitState>();
    const ports = new Map<number, GatewayPort>();
    const certificates = new Map<number, readonly CertificateBinding[]>();
    for (const u of units) {
      const obj = snapshot.gateways.get(u.gateway);
      if (obj === undefined) continue;
      const id = `${u.gateway}\n${u.declared}`;
      const old = this.#units.get(id);
      // The one-Gateway map is kept while the Gateway is the same object, so the compiler sees
      // the same map and keeps its work (compileGateways compares the maps by identity).
      const gateways =
        old !== undefined && old.gateway === obj
          ? old.gateways
          : new Map([[u.gateway, { ...obj, spec: { ...obj.spec, listeners: obj.spec.listeners.filter((l) => l.port === u.declared) } }]]);
      const result = compileGateways({ ...snapshot, gateways }, controllerName, resolve, old !== undefined && changes !== null ? { prev: old.result, ...changes } : null, flags);
      next.set(id, { gateway: obj, gateways, result });
      if (u.https) certificates.set(u.port, portCertificates(result, u.gateway, snapshot, defaultCertificate));
      const prev = this.#last?.get(u.port);
      ports.set(
        u.port,
        prev !== undefined && prev.gateway === u.gateway && prev.declared === u.declared && prev.https === u.https && prev.routes === result.table
          ? prev
          : Object.freeze({ gateway: u.gateway, declared: u.declared, https: u.https, routes: result.table }),
      );
    }
    this.#units = next;
    this.certificates = certificates;
    // The same map when nothing changed, so the data plane and the workers see no change.
    const last = this.#last;
    if (last !== null && last.size === ports.size && [...ports].every(([p, g]) => last.get(p) === g)) return last;
    this.#last = ports;
    return ports;
  }
}
