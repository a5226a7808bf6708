// Which Gateway API objects are ours and how they fit together (apis/v1 gateway_types.go,
// gatewayclass_types.go, httproute_types.go, shared_types.go; GEP-709 for ReferenceGrant):
// GatewayClasses naming --gateway-controller-name, their Gateways and listeners, and for each
// HTTPRoute parentRef the listeners it attaches to, with the conditions and reasons status
// reports. Pure: snapshot in, data out; the same input always gives the same output.
import { X509Certificate } from "node:crypto";
import type { Gateway, GatewayClass, HTTPRoute, Listener, ParentReference, ReferenceGrant } from "../../model/gateway.ts";
import { GATEWAY_GROUP } from "../../model/kinds.ts";
import { isRecord, secretText, type Secret } from "../../model/schemas.ts";
import { gatewayCaConfigMapKeys, MAX_GATEWAY_CA_CONFIGMAPS } from "../../model/secret-refs.ts";
import type { Snapshot } from "../../store/types.ts";
import { effectiveHostnames } from "./hostnames.ts";
import { selectorMatches } from "./labels.ts";

export type ConditionStatus = "True" | "False" | "Unknown";

export interface Condition {
  readonly type: string;
  readonly status: ConditionStatus;
  readonly reason: string;
  readonly message: string;
}

export const cond = (type: string, status: ConditionStatus, reason: string, message: string): Condition => ({ type, status, reason, message });

/** Which of Portico's listeners serves a Gateway listener: HTTP → the HTTP port, HTTPS → the HTTPS port. */
export type PortClass = "http" | "https";

export interface RouteGroupKind {
  readonly group: string;
  readonly kind: string;
}

export interface ListenerState {
  readonly gateway: string;
  readonly name: string;
  readonly port: number;
  readonly protocol: string;
  /** Lowercased, or null for "any host". */
  readonly hostname: string | null;
  /** Null when the listener cannot be served (its conditions say why). */
  readonly portClass: PortClass | null;
  readonly supportedKinds: readonly RouteGroupKind[];
  /** `namespace/name` of each certificate Secret (HTTPS), resolved and permitted. */
  readonly certificates: readonly string[];
  /** Client certificate validation spec.tls.frontend asks of this HTTPS listener, resolved; null: none. */
  readonly clientValidation: ClientValidation | null;
  readonly conditions: readonly Condition[];
  /** Routes accepted on this listener (including those with unresolved backends). */
  attachedRoutes: number;
  readonly spec: Listener;
}

/**
 * A listener's client certificate validation (FrontendTLSValidation, apis/v1 gateway_types.go):
 * the mode and the CA certificates of the ConfigMaps that resolved, one PEM block each. The
 * certificates are part of the state, so a CA ConfigMap's new data compiles the listener's
 * routes again (their client-cert stage carries them).
 */
export interface ClientValidation {
  readonly mode: "AllowValidOnly" | "AllowInsecureFallback";
  readonly ca: readonly string[];
}

export interface GatewayState {
  readonly key: string;
  readonly gateway: Gateway;
  readonly conditions: readonly Condition[];
  readonly listeners: readonly ListenerState[];
}

export interface ClassState {
  readonly name: string;
  readonly generation: number | null;
  readonly conditions: readonly Condition[];
}

/** One listener a route is attached to, and the hostnames it serves there. */
export interface Attachment {
  readonly listener: ListenerState;
  /** Route hostnames intersected with the listener's; `*` = any host. */
  readonly hostnames: readonly string[];
}

export interface RouteParentState {
  readonly parentRef: ParentReference;
  readonly attachments: readonly Attachment[];
  /** Accepted, then ResolvedRefs (filled in by the rule compile). */
  readonly accepted: Condition;
}

/** Shared by every accepted parent (conditions are never changed once made). */
const ATTACHED: Condition = Object.freeze(cond("Accepted", "True", "Accepted", "attached"));

const HTTP_ROUTE: RouteGroupKind = Object.freeze({ group: GATEWAY_GROUP, kind: "HTTPRoute" });
// GRPCRoute is served on HTTP and HTTPS listeners too (gRPC over h2c on the plain port, h2 on
// the TLS one: docs/design.md "HTTP/2 and gRPC"), so a listener without allowedRoutes.kinds
// lists both (ListenerStatus.supportedKinds).
const GRPC_ROUTE: RouteGroupKind = Object.freeze({ group: GATEWAY_GROUP, kind: "GRPCRoute" });
const ROUTE_KINDS: readonly RouteGroupKind[] = Object.freeze([HTTP_ROUTE, GRPC_ROUTE]);

const ns = (o: { metadata: { namespace?: string | undefined } }) => o.metadata.namespace ?? "default";

/** GatewayClasses naming our controller, each Accepted (Portico takes no parametersRef). */
export function ourClasses(snapshot: Snapshot, controllerName: string): Map<string, ClassState> {
  const out = new Map<string, ClassState>();
  for (const c of [...snapshot.gatewayClasses.values()].sort(byName)) {
    if (c.spec.controllerName !== controllerName) continue;
    out.set(c.metadata.name, classState(c));
  }
  return out;
}

function classState(c: GatewayClass): ClassState {
  const params = (c.spec as { parametersRef?: unknown }).parametersRef;
  const conditions =
    params !== undefined && params !== null
      ? [cond("Accepted", "False", "InvalidParameters", "Portico takes no parametersRef")]
      : [cond("Accepted", "True", "Accepted", "handled by Portico")];
  return { name: c.metadata.name, generation: c.metadata.generation ?? null, conditions };
}

const byName = (a: { metadata: { name: string } }, b: { metadata: { name: string } }) => (a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0);

/**
 * Does a ReferenceGrant in `toNamespace` let an object of `fromKind` in `fromNamespace` refer
 * to `toKind` named `toName` there (GEP-709: `from` and `to` must both list it; `to.name`
 * empty means every object of that kind)?
 */
export function referenceAllowed(
  grants: ReadonlyMap<string, ReferenceGrant>,
  from: { group: string; kind: string; namespace: string },
  to: { group: string; kind: string; namespace: string; name: string },
): boolean {
  if (from.namespace === to.namespace) return true;
  for (const g of grants.values()) {
    if (ns(g) !== to.namespace) continue;
    const fromOk = g.spec.from.some((f) => f.group === from.group && f.kind === from.kind && f.namespace === from.namespace);
    if (!fromOk) continue;
    if (g.spec.to.some((t) => t.group === to.group && t.kind === to.kind && (t.name === undefined || t.name === null || t.name === "" || t.name === to.name))) return true;
  }
  return false;
}

const decoded = (s: Secret, key: string): string => secretText(s, key) ?? "";

/**
 * A Secret that can serve TLS: tls.crt holds a PEM certificate and tls.key a PEM private key
 * (GatewayInvalidTLSConfiguration: a Secret whose data is not PEM is an InvalidCertificateRef).
 * Only the PEM framing is checked here (the compiler is pure); the TLS layer parses the
 * certificate itself and reports one it cannot use.
 */
function isTlsSecret(s: Secret | undefined): boolean {
  if (s === undefined) return false;
  const crt = decoded(s, "tls.crt");
  const key = decoded(s, "tls.key");
  return /-----BEGIN CERTIFICATE-----[\s\S]+-----END CERTIFICATE-----/.test(crt) && /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]+-----END [A-Z ]*PRIVATE KEY-----/.test(key);
}

/** Gateways of our classes, with their listeners validated (ListenerConditionType reasons). */
export function ourGateways(snapshot: Snapshot, classes: ReadonlyMap<string, ClassState>): Map<string, GatewayState> {
  const out = new Map<string, GatewayState>();
  const keys = [...snapshot.gateways.keys()].sort();
  for (const key of keys) {
    const gw = snapshot.gateways.get(key)!;
    const cls = classes.get(gw.spec.gatewayClassName);
    if (cls === undefined) continue;
    // The CA ConfigMaps this Gateway may name depend on its spec only: read once for its listeners.
    const caReadable: ReadonlySet<string> = new Set(gatewayCaConfigMapKeys(gw.spec, ns(gw)));
    const listeners = gw.spec.listeners.map((l) => listenerState(snapshot, gw, key, l, caReadable));
    markConflicts(listeners);
    const classOk = cls.conditions[0]?.status === "True";
    const accepted = listeners.filter(listenerAccepted);
    const anyProgrammed = listeners.some((l) => l.portClass !== null);
    const params = (gw.spec as { infrastructure?: { parametersRef?: unknown } | null }).infrastructure?.parametersRef;
    const conditions: Condition[] = [];
    // GatewayConditionAccepted: False with ListenersNotValid when no listener is accepted; True
    // with ListenersNotValid when only some are (GatewayListenerUnsupportedProtocol).
    if (!classOk) conditions.push(cond("Accepted", "False", "InvalidParameters", `GatewayClass ${cls.name} is not accepted`));
    else if (params !== undefined && params !== null) conditions.push(cond("Accepted", "False", "InvalidParameters", "Portico takes no infrastructure.parametersRef"));
    else if ((gw.spec.addresses?.length ?? 0) > 0) conditions.push(cond("Accepted", "False", "UnsupportedAddress", "Portico serves on its own Service's address; spec.addresses cannot be honoured"));
    else if (accepted.length === 0) conditions.push(cond("Accepted", "False", "ListenersNotValid", "no listener is valid"));
    else if (accepted.length < listeners.length) conditions.push(cond("Accepted", "True", "ListenersNotValid", "some listeners are not valid"));
    else conditions.push(cond("Accepted", "True", "Accepted", "handled by Portico"));
    // GatewayConditionInsecureFrontendValidationMode (apis/v1 gateway_types.go): True with
    // ConfigurationChanged while spec.tls.frontend, by default or per port, allows
    // AllowInsecureFallback; "removed as soon as FrontendValidationModeType is changed back".
    if (asksInsecureFallback(gw)) {
      conditions.push(cond("InsecureFrontendValidationMode", "True", "ConfigurationChanged", "spec.tls.frontend allows clients without a valid certificate (AllowInsecureFallback)"));
    }
    const gwAccepted = conditions[0]!.status === "True";
    // An address asked for without a value (the standard CRD allows it): "If an implementation
    // does not support an empty value, they MUST set the Programmed condition in status to False
    // with a reason of AddressNotAssigned" (apis/v1 gateway_types.go GatewaySpecAddress.Value).
    const emptyAddress = (gw.spec.addresses ?? []).some((a) => a.value === undefined || a.value === null || a.value === "");
    conditions.push(
      gwAccepted && anyProgrammed
        ? cond("Programmed", "True", "Programmed", "served on Portico's HTTP/HTTPS listeners")
        : emptyAddress
          ? cond("Programmed", "False", "AddressNotAssigned", "an address without a value cannot be assigned: Portico serves on its own Service's address")
          : cond("Programmed", "False", "Invalid", "no listener can be served"),
    );
    // A Gateway that is not accepted serves nothing, so none of its listeners is programmed
    // (ListenerConditionProgrammed: "whether a listener has generated some configuration that
    // will soon be ready in the underlying data plane") or accepted (ListenerConditionAccepted:
    // "a Listener will be marked as Accepted when the supplied configuration will generate at
    // least some data plane configuration"). Not accepted, they take no route (attachRoute), so
    // a route says NotAllowedByListeners and counts in no attachedRoutes, as nothing serves it.
    // The Gateway's reason is carried: no ListenerConditionReason names a refused Gateway, and
    // "Controllers may raise this condition with other reasons". A listener already refused on
    // its own keeps its own reason, the more specific one.
    if (!gwAccepted) {
      const gwAcc = conditions[0]!;
      const why = `the Gateway is not accepted: ${gwAcc.reason}: ${gwAcc.message}`;
      for (let i = 0; i < listeners.length; i++) {
        listeners[i] = unserved(listeners[i]!, [cond("Accepted", "False", gwAcc.reason, why), cond("Programmed", "False", "Invalid", why)], true);
      }
    }
    out.set(key, { key, gateway: gw, conditions, listeners });
  }
  return out;
}

function listenerState(snapshot: Snapshot, gw: Gateway, key: string, l: Listener, caReadable: ReadonlySet<string>): ListenerState {
  const conditions: Condition[] = [];
  let portClass: PortClass | null = null;
  const certificates: string[] = [];
  let refsOk = true;
  let refsReason = "ResolvedRefs";
  let refsMessage = "all references resolved";
  let acceptedReason = "Accepted";
  let acceptedMessage = "served";
  let clientValidation: ClientValidation | null = null;
  if (l.protocol === "HTTP") portClass = "http";
  else if (l.protocol === "HTTPS") {
    const mode = l.tls?.mode ?? "Terminate";
    if (mode !== "Terminate") {
      acceptedReason = "UnsupportedProtocol";
      acceptedMessage = `tls.mode ${mode} is not served on an HTTPS listener`;
    } else {
      portClass = "https";
      const refs = l.tls?.certificateRefs ?? [];
      if (refs.length === 0) {
        refsOk = false;
        refsReason = "InvalidCertificateRef";
        refsMessage = "an HTTPS listener needs a certificateRef";
      }
      for (const ref of refs) {
        const group = ref.group ?? "";
        const kind = ref.kind ?? "Secret";
        const refNs = ref.namespace ?? ns(gw);
        if (group !== "" || kind !== "Secret") {
          refsOk = false;
          refsReason = "InvalidCertificateRef";
          refsMessage = `certificateRef ${group}/${kind} ${ref.name}: only core Secrets are supported`;
          continue;
        }
        if (!referenceAllowed(snapshot.referenceGrants, { group: GATEWAY_GROUP, kind: "Gateway", namespace: ns(gw) }, { group: "", kind: "Secret", namespace: refNs, name: ref.name })) {
          refsOk = false;
          refsReason = "RefNotPermitted";
          refsMessage = `Secret ${refNs}/${ref.name} is in another namespace and no ReferenceGrant permits it`;
          continue;
        }
        const secretKey = `${refNs}/${ref.name}`;
        if (!isTlsSecret(snapshot.secrets.get(secretKey))) {
          refsOk = false;
          refsReason = "InvalidCertificateRef";
          refsMessage = `Secret ${secretKey} is missing or has no tls.crt and tls.key`;
          continue;
        }
        certificates.push(secretKey);
      }
      // Client certificate validation (Gateway spec.tls.frontend: its perPort entry for this
      // port, else `default`). Its CA references are resolved as FrontendTLSValidation says
      // (apis/v1 gateway_types.go); the listener is served with them (its routes check the
      // certificate: table.ts clientCertPolicy), and not at all when they or the mode cannot be
      // honoured: serving it without the check would let in every client the owner meant to
      // keep out (fails closed).
      const ask = frontendValidation(gw, l.port);
      if (ask.kind === "malformed") {
        // ListenerReasonUnsupportedValue: "the Listener uses a value for a field that is not
        // supported by the implementation". --manifests objects skip the CRD's validation.
        acceptedReason = "UnsupportedValue";
        acceptedMessage = `spec.tls.frontend for port ${l.port} is malformed: ${ask.why}; the listener is not served`;
      } else if (ask.kind === "validate") {
        const ca = resolveCaRefs(snapshot, gw, ask.refs, caReadable);
        if (ca.problem !== null && refsOk) {
          refsOk = false;
          refsReason = ca.problem.reason;
          refsMessage = ca.problem.message;
        }
        if (ca.pems.length === 0) {
          // FrontendTLSValidation.caCertificateRefs: "If ALL CACertificateRefs are invalid, the
          // implementation MUST also ensure the `Accepted` condition on the listener is set to
          // `status: False`, with the Reason `NoValidCACertificate`."
          acceptedReason = "NoValidCACertificate";
          acceptedMessage = `no caCertificateRef of spec.tls.frontend for port ${l.port} resolves to a CA certificate`;
        } else if (ask.mode !== "AllowValidOnly" && ask.mode !== "AllowInsecureFallback") {
          acceptedReason = "UnsupportedValue";
          acceptedMessage = `spec.tls.frontend validation mode ${JSON.stringify(ask.mode)} for port ${l.port} is neither AllowValidOnly nor AllowInsecureFallback; the listener is not served`;
        } else clientValidation = Object.freeze({ mode: ask.mode, ca: ca.pems });
      }
    }
  } else {
    acceptedReason = "UnsupportedProtocol";
    acceptedMessage = `protocol ${l.protocol} is not served (HTTP and HTTPS are)`;
  }
  // allowedRoutes.kinds: HTTPRoute and GRPCRoute are the route kinds served; others are invalid.
  const asked = l.allowedRoutes?.kinds;
  let supportedKinds: RouteGroupKind[] = [];
  if (asked === undefined || asked === null) supportedKinds = acceptedReason === "Accepted" ? [...ROUTE_KINDS] : [];
  else {
    for (const k of asked) {
      const group = k.group ?? GATEWAY_GROUP;
      const served = group === GATEWAY_GROUP ? ROUTE_KINDS.find((r) => r.kind === k.kind) : undefined;
      if (served !== undefined) {
        if (!supportedKinds.some((s) => s.kind === served.kind)) supportedKinds.push(served);
      } else {
        refsOk = false;
        refsReason = "InvalidRouteKinds";
        refsMessage = `route kind ${group}/${k.kind} is not supported`;
      }
    }
  }
  const accepted = acceptedReason === "Accepted";
  conditions.push(cond("Accepted", accepted ? "True" : "False", acceptedReason, acceptedMessage));
  conditions.push(cond("ResolvedRefs", refsOk ? "True" : "False", refsReason, refsMessage));
  const programmed = accepted && refsOk;
  conditions.push(programmed ? cond("Programmed", "True", "Programmed", "served") : cond("Programmed", "False", "Invalid", accepted ? refsMessage : acceptedMessage));
  conditions.push(cond("Conflicted", "False", "NoConflicts", "no conflict"));
  return {
    gateway: key,
    name: l.name,
    port: l.port,
    protocol: l.protocol,
    hostname: l.hostname ? l.hostname.toLowerCase() : null,
    portClass: programmed ? portClass : null,
    supportedKinds,
    certificates,
    clientValidation: programmed ? clientValidation : null,
    conditions,
    attachedRoutes: 0,
    spec: l,
  };
}

/** What a Gateway's spec.tls.frontend asks of its HTTPS listeners on one port. */
type FrontendAsk =
  | { readonly kind: "none" }
  | { readonly kind: "malformed"; readonly why: string }
  | { readonly kind: "validate"; readonly refs: readonly unknown[]; readonly mode: unknown };

const NO_ASK: FrontendAsk = Object.freeze({ kind: "none" });

/**
 * The client certificate validation spec.tls.frontend asks of the Gateway's HTTPS listeners on
 * `port` (apis/v1 gateway_types.go FrontendTLSConfig: a perPort entry for the port overrides
 * `default`; TLSConfig.validation absent asks none; FrontendTLSValidation.mode defaults to
 * AllowValidOnly). Read as untyped data (--manifests objects skip the CRD's validation):
 * anything not clearly shaped is `malformed`, which the caller refuses (fails closed).
 */
function frontendValidation(gw: Gateway, port: number): FrontendAsk {
  const tls = (gw.spec as { tls?: unknown }).tls;
  if (tls === undefined || tls === null) return NO_ASK;
  if (!isRecord(tls)) return { kind: "malformed", why: "spec.tls is not an object" };
  const frontend = tls.frontend;
  if (frontend === undefined || frontend === null) return NO_ASK;
  if (!isRecord(frontend)) return { kind: "malformed", why: "spec.tls.frontend is not an object" };
  const read = (config: unknown, where: string): FrontendAsk => {
    if (config === undefined || config === null) return NO_ASK;
    if (!isRecord(config)) return { kind: "malformed", why: `${where} is not an object` };
    const v = config.validation;
    if (v === undefined || v === null) return NO_ASK;
    if (!isRecord(v)) return { kind: "malformed", why: `${where}.validation is not an object` };
    const refs = v.caCertificateRefs;
    if (!Array.isArray(refs) || refs.length === 0) return { kind: "malformed", why: `${where}.validation.caCertificateRefs is not a non-empty list` };
    return { kind: "validate", refs, mode: v.mode === undefined || v.mode === null || v.mode === "" ? "AllowValidOnly" : v.mode };
  };
  const perPort = frontend.perPort;
  if (perPort !== undefined && perPort !== null) {
    if (!Array.isArray(perPort)) return { kind: "malformed", why: "spec.tls.frontend.perPort is not a list" };
    for (const entry of perPort as unknown[]) {
      if (!isRecord(entry)) return { kind: "malformed", why: "a spec.tls.frontend.perPort entry is not an object" };
      if (entry.port === port) return read(entry.tls, `spec.tls.frontend.perPort[port ${port}].tls`);
    }
  }
  return read(frontend.default, "spec.tls.frontend.default");
}

/** Whether some entry of spec.tls.frontend (default or perPort) asks AllowInsecureFallback. */
function asksInsecureFallback(gw: Gateway): boolean {
  const frontend = (gw.spec as { tls?: { frontend?: unknown } | null }).tls?.frontend;
  if (!isRecord(frontend)) return false;
  const fallback = (config: unknown): boolean => isRecord(config) && isRecord(config.validation) && config.validation.mode === "AllowInsecureFallback";
  if (fallback(frontend.default)) return true;
  return Array.isArray(frontend.perPort) && frontend.perPort.some((e: unknown) => isRecord(e) && fallback(e.tls));
}

const CA_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/**
 * A PEM CA bundle's certificates, one block each (kinds/client-cert.ts parses each as one
 * certificate), or null when it holds none or one that does not parse: the whole reference is
 * then invalid rather than half used.
 */
function caBlocks(pem: string): string[] | null {
  const blocks = pem.match(CA_BLOCK);
  if (blocks === null || blocks.length === 0 || blocks.length > 64) return null;
  for (const b of blocks) {
    try {
      new X509Certificate(b);
    } catch {
      return null;
    }
  }
  return blocks.map((b) => `${b}\n`);
}

/**
 * Resolve FrontendTLSValidation.caCertificateRefs (apis/v1 gateway_types.go): a core ConfigMap
 * with a PEM certificate under `ca.crt` is the supported kind (Support: Core); any other
 * group/kind is InvalidCACertificateKind; a ConfigMap that is missing or has no such key is
 * InvalidCACertificateRef; one in another namespace without a ReferenceGrant from Gateways is
 * RefNotPermitted. A ConfigMap past the MAX_GATEWAY_CA_CONFIGMAPS this Gateway's refs may name
 * (model/secret-refs.ts gatewayCaConfigMapKeys) is InvalidCACertificateRef even when the snapshot
 * holds it (--manifests keeps every ConfigMap; in a cluster an Ingress may name it): its edits
 * neither wake the compiler nor count as the listener's inputs, so a CA removed from it would
 * stay trusted. `readable`: those keys (gatewayCaConfigMapKeys). Returns the distinct PEM
 * certificates of the refs that resolve (none when no ref does) and the last problem found.
 */
function resolveCaRefs(
  snapshot: Snapshot,
  gw: Gateway,
  refs: readonly unknown[],
  readable: ReadonlySet<string>,
): { pems: string[]; problem: { reason: string; message: string } | null } {
  const pems: string[] = [];
  let problem: { reason: string; message: string } | null = null;
  for (const ref of refs) {
    if (!isRecord(ref) || typeof ref.name !== "string" || ref.name === "") {
      problem = { reason: "InvalidCACertificateRef", message: "a caCertificateRef has no name" };
      continue;
    }
    const group = typeof ref.group === "string" ? ref.group : "";
    const kind = typeof ref.kind === "string" ? ref.kind : "";
    const refNs = typeof ref.namespace === "string" && ref.namespace !== "" ? ref.namespace : ns(gw);
    if (group !== "" || kind !== "ConfigMap") {
      problem = { reason: "InvalidCACertificateKind", message: `caCertificateRef ${group === "" ? "core" : group}/${kind} ${ref.name}: only core ConfigMaps (key ca.crt) are supported` };
      continue;
    }
    if (!referenceAllowed(snapshot.referenceGrants, { group: GATEWAY_GROUP, kind: "Gateway", namespace: ns(gw) }, { group: "", kind: "ConfigMap", namespace: refNs, name: ref.name })) {
      problem = { reason: "RefNotPermitted", message: `ConfigMap ${refNs}/${ref.name} is in another namespace and no ReferenceGrant permits it` };
      continue;
    }
    const key = `${refNs}/${ref.name}`;
    if (!readable.has(key)) {
      problem = { reason: "InvalidCACertificateRef", message: `ConfigMap ${key} is past the ${MAX_GATEWAY_CA_CONFIGMAPS} CA ConfigMaps a Gateway may name; it is not read` };
      continue;
    }
    const pem = snapshot.configMaps?.get(key)?.data?.["ca.crt"];
    const blocks = typeof pem === "string" ? caBlocks(pem) : null;
    if (blocks === null) {
      problem = { reason: "InvalidCACertificateRef", message: `ConfigMap ${key} is missing or has no PEM certificate under ca.crt that parses` };
      continue;
    }
    for (const b of blocks) if (!pems.includes(b)) pems.push(b);
  }
  return { pems, problem };
}

/**
 * Listeners of one Gateway that share a port: different protocols conflict (ProtocolConflict),
 * and so do equal hostnames with the same protocol (HostnameConflict). Every one of them is
 * left out, none picked as the winner (apis/v1 gateway_types.go "Handling indistinct
 * Listeners": "ALL indistinct Listeners must not be accepted for processing"): Conflicted=True,
 * and Accepted=False and Programmed=False with the conflict's reason, as the upstream conformance
 * tests expect of a conflicted listener (listenerset-protocol-conflict.go). Not being accepted,
 * they also count against the Gateway, which then says ListenersNotValid (that section: "MUST
 * set a ListenersNotValid condition on the Gateway Status when the Gateway contains Conflicted
 * Listeners").
 */
function markConflicts(listeners: ListenerState[]): void {
  for (let i = 0; i < listeners.length; i++) {
    const a = listeners[i]!;
    let reason: string | null = null;
    for (let j = 0; j < listeners.length; j++) {
      if (i === j) continue;
      const b = listeners[j]!;
      if (a.port !== b.port) continue;
      if (a.protocol !== b.protocol) reason = "ProtocolConflict";
      else if (a.hostname === b.hostname && reason === null) reason = "HostnameConflict";
    }
    if (reason === null) continue;
    const message = reason === "ProtocolConflict" ? `another listener on port ${a.port} has another protocol` : `another listener on port ${a.port} has the same hostname`;
    listeners[i] = unserved(a, [cond("Conflicted", "True", reason, message), cond("Accepted", "False", reason, message), cond("Programmed", "False", reason, message)]);
  }
}

/** Is the listener accepted (ListenerConditionAccepted True)? Only an accepted one takes routes. */
export const listenerAccepted = (l: ListenerState): boolean => l.conditions.some((c) => c.type === "Accepted" && c.status === "True");

/**
 * The listener taken out of service: no portClass, so neither the tables (table.ts) nor the
 * Gateway's own ports (ports.ts) serve it, and each condition of `replace` standing in for the
 * listener's condition of its type. With `keepFalse`, a condition already False keeps its own,
 * more specific reason. A copy: the state it is made from stays as built.
 */
export function unserved(l: ListenerState, replace: readonly Condition[], keepFalse = false): ListenerState {
  return {
    ...l,
    portClass: null,
    conditions: l.conditions.map((c) => (keepFalse && c.status === "False" ? c : (replace.find((r) => r.type === c.type) ?? c))),
  };
}

/** Does a listener admit routes from `routeNamespace` (AllowedRoutes.namespaces; default Same)? */
function namespaceAllowed(snapshot: Snapshot, gw: Gateway, l: Listener, routeNamespace: string): boolean {
  const from = l.allowedRoutes?.namespaces?.from ?? "Same";
  if (from === "All") return true;
  if (from === "Same") return routeNamespace === ns(gw);
  if (from === "Selector") {
    const sel = l.allowedRoutes?.namespaces?.selector;
    if (!sel) return false; // fail closed: Selector without a selector admits nothing
    const nsObj = snapshot.namespaces.get(routeNamespace);
    const labels = { ...(nsObj?.metadata.labels ?? {}), "kubernetes.io/metadata.name": routeNamespace };
    return nsObj !== undefined && selectorMatches(sel, labels);
  }
  return false;
}

/**
 * The parentRefs of one HTTPRoute that name our Gateways, each with its attachments and its
 * Accepted condition (RouteConditionReason: NoMatchingParent, NotAllowedByListeners,
 * NoMatchingListenerHostname). table.ts counts attachedRoutes from the attachments.
 * parentRefs naming other kinds or Gateways that are not ours get no entry (another
 * controller's to report).
 */
export function attachRoute(snapshot: Snapshot, gateways: ReadonlyMap<string, GatewayState>, route: HTTPRoute, kind: "HTTPRoute" | "GRPCRoute" = "HTTPRoute"): RouteParentState[] {
  const out: RouteParentState[] = [];
  const routeNs = ns(route);
  const hostnames = route.spec.hostnames ?? [];
  for (const ref of route.spec.parentRefs ?? []) {
    if ((ref.group ?? GATEWAY_GROUP) !== GATEWAY_GROUP || (ref.kind ?? "Gateway") !== "Gateway") continue;
    const gw = gateways.get(`${ref.namespace ?? routeNs}/${ref.name}`);
    if (gw === undefined) continue;
    if (out.some((p) => sameParent(p.parentRef, ref, routeNs))) continue;
    // The listeners the parentRef names, and those of them that admit the route, in one pass.
    let named = 0;
    let refused = 0;
    const allowed: ListenerState[] = [];
    for (const l of gw.listeners) {
      if ((ref.sectionName != null && l.name !== ref.sectionName) || (ref.port != null && l.port !== ref.port)) continue;
      named++;
      if (!l.supportedKinds.some((k) => k.kind === kind) || !namespaceAllowed(snapshot, gw.gateway, l.spec, routeNs)) continue;
      // A listener that is not accepted (a conflicted one: markConflicts; one of a Gateway that
      // is not accepted: ourGateways) takes no route.
      if (listenerAccepted(l)) allowed.push(l);
      else refused++;
    }
    if (named === 0) {
      out.push({ parentRef: ref, attachments: [], accepted: cond("Accepted", "False", "NoMatchingParent", "no listener matches the parentRef's sectionName and port") });
      continue;
    }
    if (allowed.length === 0) {
      const message = refused > 0 ? "the listeners that would admit this route are not accepted (their own conditions say why)" : "the listeners' allowedRoutes do not admit this route";
      out.push({ parentRef: ref, attachments: [], accepted: cond("Accepted", "False", "NotAllowedByListeners", message) });
      continue;
    }
    const attachments: Attachment[] = [];
    for (const l of allowed) {
      const hs = effectiveHostnames(l.hostname, hostnames);
      if (hs.length > 0) attachments.push({ listener: l, hostnames: hs });
    }
    if (attachments.length === 0) {
      out.push({ parentRef: ref, attachments: [], accepted: cond("Accepted", "False", "NoMatchingListenerHostname", "no route hostname intersects a listener hostname") });
      continue;
    }
    out.push({ parentRef: ref, attachments, accepted: ATTACHED });
  }
  return out;
}

function sameParent(a: ParentReference, b: ParentReference, routeNs: string): boolean {
  return a.name === b.name && (a.namespace ?? routeNs) === (b.namespace ?? routeNs) && (a.sectionName ?? null) === (b.sectionName ?? null) && (a.port ?? null) === (b.port ?? null);
}
