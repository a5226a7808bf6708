// spec.tls → CertificateBinding list. The TLS layer parses and checks the PEM; here we only
// pick which Secret serves which SNI name and decode the Secret data.
import { X509Certificate } from "node:crypto";
import { dnsNames, namesCover } from "../model/cert-names.ts";
import type { Diagnostic } from "../model/diagnostic.ts";
import { secretText, type Secret } from "../model/schemas.ts";
import type { CompileConfig } from "./config.ts";
import { ignoredDiagnostic } from "./host-scope.ts";
import type { IngressPlan } from "./plan.ts";
import type { CertificateBinding } from "./types.ts";

export interface TlsState {
  readonly bindings: readonly CertificateBinding[];
  /** Every TLS host of every served Ingress (even ones whose binding lost): for Route.tls. */
  readonly hosts: ReadonlySet<string>;
  /**
   * With --host-policy-scope=namespace, the namespaces whose Ingresses list each TLS host of
   * `hosts` (tlsCoverage reads it: a host is covered only by its own namespace's spec.tls);
   * null otherwise.
   */
  readonly namespaces: ReadonlyMap<string, ReadonlySet<string>> | null;
  readonly diagnostics: readonly Diagnostic[];
}

/** The Ingress owning a host key's host-wide policies (host-scope.ts hostOwner), or null: no owner, or not scoped. */
export type HostOwnerOf = (hostKey: string) => IngressPlan | null;

/**
 * Secret data decoded once per Secret object; `names`, the DNS SANs of tls.crt's leaf (null:
 * no certificate that parses), is read when the second pass first asks for it.
 */
export type SecretData = WeakMap<Secret, { cert: string | null; key: string | null; names?: readonly string[] | null }>;

function secretData(secret: Secret, data: SecretData): { cert: string | null; key: string | null; names?: readonly string[] | null } {
  let d = data.get(secret);
  if (d === undefined) data.set(secret, (d = { cert: secretText(secret, "tls.crt"), key: secretText(secret, "tls.key") }));
  return d;
}

/**
 * Does the certificate of Secret `ns/name` name `host`? As x509's VerifyHostname, which
 * extractTLSSecretName's second pass calls: the leaf's DNS SANs only (Go no longer reads the CN),
 * `*.` for one whole first label. A Secret missing, without tls.crt or whose leaf does not parse
 * names nothing (upstream: GetLocalSSLCert fails or `cert.Certificate == nil`, `continue`).
 */
function secretNames(secrets: ReadonlyMap<string, Secret>, data: SecretData, ns: string, name: string, host: string): boolean {
  const secret = secrets.get(`${ns}/${name}`);
  if (!secret) return false;
  const d = secretData(secret, data);
  if (d.names === undefined) {
    const block = d.cert === null || d.key === null ? null : /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/.exec(d.cert);
    try {
      d.names = block === null ? null : dnsNames(new X509Certificate(block[0]));
    } catch {
      d.names = null;
    }
  }
  return d.names !== null && namesCover(d.names, host);
}

function binding(secrets: ReadonlyMap<string, Secret>, data: SecretData, host: string, ns: string, name: string, ingress: string): CertificateBinding | null {
  const secret = secrets.get(`${ns}/${name}`);
  return secret ? secretBinding(secret, `${ns}/${name}`, host, ingress, data) : null;
}

/** Decoded Secret data for callers without a Compiler's own (the Gateway API certificates). */
const DECODED: SecretData = new WeakMap();

/**
 * Secret `secretKey`'s certificate bound to `host` (SNI; "" is a port's default), its data
 * decoded once per Secret object; `ingress` names what bound it, for explain and logs.
 */
export function secretBinding(secret: Secret, secretKey: string, host: string, ingress: string, data: SecretData = DECODED): CertificateBinding {
  const d = secretData(secret, data);
  return Object.freeze({
    host,
    secret: secretKey,
    cert: d.cert,
    key: d.key,
    version: `${secret.metadata.uid ?? ""}/${secret.metadata.resourceVersion ?? ""}`,
    ingress,
  });
}

/**
 * `tlsPlans`: the served plans with spec.tls, in priority order (oldest first, canaries left
 * out). A rule host of one of them is decided as ingress-nginx's createServers does
 * (internal/ingress/controller/controller.go): the first of them with a rule for the host is
 * the only Ingress whose spec.tls is read for it ("only add a certificate if the server does
 * not have one previously configured"), through extractTLSSecretName: an entry listing the
 * host, else an entry whose certificate names it (`secondPass`), else the default
 * certificate. A host no such Ingress has rules for (a spec.tls-only Ingress, a `*.` entry)
 * keeps the oldest entry listing it. With `ownerOf` (--host-policy-scope=namespace), a TLS
 * host that is the host of rules owned by another namespace is ignored for that Ingress (no
 * certificate, no HTTPS redirect): which certificate a host serves and whether its plain-HTTP
 * requests are redirected are host-wide, as ingress-nginx keeps one certificate per server.
 */
export function tlsBindings(tlsPlans: readonly IngressPlan[], secrets: ReadonlyMap<string, Secret>, data: SecretData, config: CompileConfig, ownerOf: HostOwnerOf | null = null): TlsState {
  const diagnostics: Diagnostic[] = [];
  const byHost = new Map<string, CertificateBinding>();
  const hosts = new Set<string>();
  const namespaces = ownerOf === null ? null : new Map<string, Set<string>>();
  const deciders = decidingPlans(tlsPlans, ownerOf);
  for (const plan of tlsPlans) {
    const { namespace: ns, name, key } = plan;
    for (const entry of plan.tls) {
      const secretName = entry.secretName;
      let missingReported = false;
      if (entry.hosts.length === 0 && secretName !== null && !secrets.has(`${ns}/${secretName}`)) {
        // An entry without hosts serves only the rule hosts its certificate names (secondPass);
        // without the Secret it names none (ingress-nginx logs "Error getting SSL certificate").
        const message = `TLS Secret ${ns}/${secretName} not found; the rule hosts no spec.tls entry lists get the default certificate`;
        diagnostics.push({ kind: "Ingress", namespace: ns, name, reason: "SecretNotFound", message, severity: "warning" });
      }
      for (const host of entry.hosts) {
        if (ownerOf !== null && namespaces !== null) {
          const owner = ownerOf(host);
          if (owner !== null && owner.namespace !== ns) {
            diagnostics.push(ignoredDiagnostic(plan, ["spec.tls"], host, owner));
            continue;
          }
          let set = namespaces.get(host);
          if (set === undefined) namespaces.set(host, (set = new Set()));
          set.add(ns);
        }
        hosts.add(host);
        if (byHost.has(host)) continue;
        // Another Ingress decides this rule host: this listing is not read for it.
        const decider = deciders.get(host);
        if (decider !== undefined && decider !== plan) continue;
        let b: CertificateBinding;
        if (secretName === null) {
          b = Object.freeze({ host, secret: null, cert: null, key: null, version: null, ingress: key });
        } else {
          const found = binding(secrets, data, host, ns, secretName, key);
          if (!found && !missingReported) {
            const message = `TLS Secret ${ns}/${secretName} not found; the default certificate is used`;
            diagnostics.push({ kind: "Ingress", namespace: ns, name, reason: "SecretNotFound", message, severity: "warning" });
            missingReported = true;
          } else if (found && (found.cert === null || found.key === null)) {
            const message = `TLS Secret ${ns}/${secretName} has no tls.crt or tls.key`;
            diagnostics.push({ kind: "Ingress", namespace: ns, name, reason: "InvalidCertificate", message, severity: "error" });
          }
          b = found ?? Object.freeze({ host, secret: `${ns}/${secretName}`, cert: null, key: null, version: null, ingress: key });
        }
        byHost.set(host, b);
      }
    }
  }
  secondPass(deciders, secrets, data, { byHost, hosts, namespaces });
  const bindings = [...byHost.values()];
  const def = config.defaultSslCertificate;
  if (def) {
    const b = binding(secrets, data, "", def.namespace, def.name, "");
    if (b) bindings.push(b);
    else {
      const message = `--default-ssl-certificate Secret ${def.namespace}/${def.name} not found`;
      diagnostics.push({ kind: "Secret", namespace: def.namespace, name: def.name, reason: "SecretNotFound", message, severity: "warning" });
    }
  }
  bindings.sort((a, b) => (a.host < b.host ? -1 : a.host > b.host ? 1 : 0));
  return { bindings: Object.freeze(bindings), hosts, namespaces, diagnostics };
}

/**
 * Per rule host, the Ingress createServers reads spec.tls from: the first in `tlsPlans` (its
 * `data` order: oldest first, canaries skipped, and only Ingresses with a non-empty spec.tls
 * get that far) with a rule for the host. "*", the key of rules without a host, is nginx's
 * catch-all server "_", which has the default certificate already. With `ownerOf`
 * (--host-policy-scope=namespace), only Ingresses of the owner's namespace count, so another
 * namespace's spec.tls is not read for the host (docs/design.md, "Host-wide policies").
 */
function decidingPlans(tlsPlans: readonly IngressPlan[], ownerOf: HostOwnerOf | null): Map<string, IngressPlan> {
  const deciders = new Map<string, IngressPlan>();
  for (const plan of tlsPlans) {
    for (const host of plan.hosts.keys()) {
      if (host === "*" || deciders.has(host)) continue;
      if (ownerOf !== null) {
        const owner = ownerOf(host);
        if (owner !== null && owner.namespace !== plan.namespace) continue;
      }
      deciders.set(host, plan);
    }
  }
  return deciders;
}

/**
 * ingress-nginx's extractTLSSecretName, second pass, for a rule host its deciding Ingress's
 * spec.tls does not list: the first entry, with a secretName, whose Secret's certificate names
 * the host (x509 VerifyHostname) — so `tls: [{secretName: x}]` without hosts serves x for the
 * rule hosts x's certificate names. With none, createServers gives the server the default
 * certificate ("Using default certificate"). Either way a certificate is configured for the
 * host, so it is a TLS host and ssl-redirect applies (lua_ingress.lua redirect_to_https).
 */
function secondPass(
  deciders: ReadonlyMap<string, IngressPlan>,
  secrets: ReadonlyMap<string, Secret>,
  data: SecretData,
  out: { byHost: Map<string, CertificateBinding>; hosts: Set<string>; namespaces: Map<string, Set<string>> | null },
): void {
  for (const [host, plan] of deciders) {
    if (out.byHost.has(host)) continue; // the first pass: an entry of `plan` lists it
    let b: CertificateBinding | null = null;
    for (const entry of plan.tls) {
      if (entry.secretName === null || !secretNames(secrets, data, plan.namespace, entry.secretName, host)) continue;
      const named = binding(secrets, data, host, plan.namespace, entry.secretName, plan.key);
      if (named !== null) b = Object.freeze({ ...named, matchedBy: "certificate" as const });
      break;
    }
    b ??= Object.freeze({ host, secret: null, cert: null, key: null, version: null, ingress: plan.key, matchedBy: "none" as const });
    out.byHost.set(host, b);
    out.hosts.add(host);
    if (out.namespaces !== null) {
      let set = out.namespaces.get(host);
      if (set === undefined) out.namespaces.set(host, (set = new Set()));
      set.add(plan.namespace);
    }
  }
}

/**
 * Route.tls: is the rule host listed in some served spec.tls, exactly or by `*.suffix`? With
 * --host-policy-scope=namespace (`tls.namespaces` and `ownerOf`), only by the spec.tls of an
 * Ingress in the namespace that owns the host, so another namespace's wildcard does not
 * switch on its HTTPS redirect either.
 */
export function tlsCoverage(tls: TlsState, ownerOf: HostOwnerOf | null = null): (host: string | null) => boolean {
  const tlsHosts = tls.hosts;
  const byNs = tls.namespaces;
  return (host) => {
    if (host === null || tlsHosts.size === 0) return false;
    const ns = byNs === null || ownerOf === null ? null : (ownerOf(host)?.namespace ?? null);
    const listed = (h: string) => (ns === null ? tlsHosts.has(h) : (byNs?.get(h)?.has(ns) ?? false));
    if (listed(host)) return true;
    // `*.foo.com` covers exactly one extra label; a wildcard rule host needs the same wildcard.
    if (host.startsWith("*.")) return false;
    const dot = host.indexOf(".");
    return dot > 0 && listed(`*.${host.slice(dot + 1)}`);
  };
}
