// spec.tls → CertificateBinding list (DESIGN §4 TLS). The TLS layer parses and checks the
// PEM; here we only pick which Secret serves which SNI name and decode the Secret data.
import type { Ingress, Secret } from "../model/schemas.ts";
import type { Snapshot } from "../store/types.ts";
import type { CertificateBinding } from "./types.ts";
import type { CompileConfig } from "./config.ts";
import type { DiagnosticList } from "./diagnostics.ts";
import { normaliseHost } from "./hosts.ts";
import { ingressKey, namespaceOf } from "./order.ts";

export function decode(secret: Secret, key: string): string | null {
  const plain = secret.stringData?.[key];
  if (plain !== undefined) return plain;
  const b64 = secret.data?.[key];
  return b64 === undefined ? null : Buffer.from(b64, "base64").toString("utf8");
}

function bindingFromSecret(host: string, ns: string, name: string, ingress: string, snapshot: Snapshot): CertificateBinding | null {
  const secret = snapshot.secrets.get(`${ns}/${name}`);
  if (!secret) return null;
  return Object.freeze({
    host,
    secret: `${ns}/${name}`,
    cert: decode(secret, "tls.crt"),
    key: decode(secret, "tls.key"),
    version: `${secret.metadata.uid ?? ""}/${secret.metadata.resourceVersion ?? ""}`,
    ingress,
  });
}

export interface TlsResult {
  readonly bindings: readonly CertificateBinding[];
  /** Every TLS host of every served Ingress (even ones whose binding lost): for Route.tls. */
  readonly hosts: ReadonlySet<string>;
}

/** `served` must be in priority order: for a host bound twice the oldest Ingress wins. */
export function collectTls(served: readonly Ingress[], snapshot: Snapshot, config: CompileConfig, diags: DiagnosticList): TlsResult {
  const byHost = new Map<string, CertificateBinding>();
  const hosts = new Set<string>();
  for (const ing of served) {
    const ns = namespaceOf(ing);
    const key = ingressKey(ing);
    for (const entry of ing.spec.tls ?? []) {
      const secretName = entry.secretName || null;
      let missingReported = false;
      for (const raw of entry.hosts ?? []) {
        const h = normaliseHost(raw);
        if (!h.ok || h.host === null) {
          if (!h.ok) diags.add("Ingress", ns, ing.metadata.name, "InvalidHost", `spec.tls: ${h.message}`);
          continue;
        }
        hosts.add(h.host);
        if (byHost.has(h.host)) continue;
        let binding: CertificateBinding;
        if (secretName === null) {
          binding = Object.freeze({ host: h.host, secret: null, cert: null, key: null, version: null, ingress: key });
        } else {
          const found = bindingFromSecret(h.host, ns, secretName, key, snapshot);
          if (!found && !missingReported) {
            diags.add("Ingress", ns, ing.metadata.name, "SecretNotFound", `TLS Secret ${ns}/${secretName} not found; the default certificate is used`, "warning");
            missingReported = true;
          } else if (found && (found.cert === null || found.key === null)) {
            diags.add("Ingress", ns, ing.metadata.name, "InvalidCertificate", `TLS Secret ${ns}/${secretName} has no tls.crt or tls.key`);
          }
          binding = found ?? Object.freeze({ host: h.host, secret: `${ns}/${secretName}`, cert: null, key: null, version: null, ingress: key });
        }
        byHost.set(h.host, binding);
      }
    }
  }
  const bindings = [...byHost.values()];
  const def = config.defaultSslCertificate;
  if (def) {
    const b = bindingFromSecret("", def.namespace, def.name, "", snapshot);
    if (b) bindings.push(b);
    else diags.add("Secret", def.namespace, def.name, "SecretNotFound", `--default-ssl-certificate Secret ${def.namespace}/${def.name} not found`, "warning");
  }
  bindings.sort((a, b) => (a.host < b.host ? -1 : a.host > b.host ? 1 : 0));
  return { bindings: Object.freeze(bindings), hosts };
}

/** Route.tls: is the rule host listed in some served spec.tls, exactly or by `*.suffix`? */
export function tlsCoverage(tlsHosts: ReadonlySet<string>): (host: string | null) => boolean {
  return (host) => {
    if (host === null || tlsHosts.size === 0) return false;
    if (tlsHosts.has(host)) return true;
    // `*.foo.com` covers exactly one extra label; a wildcard rule host needs the same wildcard.
    if (host.startsWith("*.")) return false;
    const dot = host.indexOf(".");
    return dot > 0 && tlsHosts.has(`*.${host.slice(dot + 1)}`);
  };
}
