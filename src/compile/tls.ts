// spec.tls → CertificateBinding list. The TLS layer parses and checks the PEM; here we only
// pick which Secret serves which SNI name and decode the Secret data.
import type { Diagnostic } from "../model/diagnostic.ts";
import type { Secret } from "../model/schemas.ts";
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

/** Secret data decoded once per Secret object. */
export type SecretData = WeakMap<Secret, { cert: string | null; key: string | null }>;

function decode(secret: Secret, key: string): string | null {
  const plain = secret.stringData?.[key];
  if (plain !== undefined) return plain;
  const b64 = secret.data?.[key];
  return b64 === undefined ? null : Buffer.from(b64, "base64").toString("utf8");
}

function binding(secrets: ReadonlyMap<string, Secret>, data: SecretData, host: string, ns: string, name: string, ingress: string): CertificateBinding | null {
  const secret = secrets.get(`${ns}/${name}`);
  if (!secret) return null;
  let d = data.get(secret);
  if (d === undefined) data.set(secret, (d = { cert: decode(secret, "tls.crt"), key: decode(secret, "tls.key") }));
  return Object.freeze({
    host,
    secret: `${ns}/${name}`,
    cert: d.cert,
    key: d.key,
    version: `${secret.metadata.uid ?? ""}/${secret.metadata.resourceVersion ?? ""}`,
    ingress,
  });
}

/**
 * `tlsPlans`: the served plans with spec.tls, in priority order; for a host bound twice the
 * oldest Ingress wins. With `ownerOf` (--host-policy-scope=namespace), a TLS host that is the
 * host of rules owned by another namespace is ignored for that Ingress (no certificate, no
 * HTTPS redirect): which certificate a host serves and whether its plain-HTTP requests are
 * redirected are host-wide, as ingress-nginx keeps one certificate per server.
 */
export function tlsBindings(tlsPlans: readonly IngressPlan[], secrets: ReadonlyMap<string, Secret>, data: SecretData, config: CompileConfig, ownerOf: HostOwnerOf | null = null): TlsState {
  const diagnostics: Diagnostic[] = [];
  const byHost = new Map<string, CertificateBinding>();
  const hosts = new Set<string>();
  const namespaces = ownerOf === null ? null : new Map<string, Set<string>>();
  for (const plan of tlsPlans) {
    const { namespace: ns, name, key } = plan;
    for (const entry of plan.tls) {
      const secretName = entry.secretName;
      let missingReported = false;
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
