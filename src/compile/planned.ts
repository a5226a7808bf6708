// tls.ts's collectTls and defaults.ts's defaultRoute, over plans (plan.ts) instead of raw
// Ingresses, for the incremental compiler: the same rules and messages, given only the served
// plans that have spec.tls / spec.defaultBackend, in priority order.
import type { Diagnostic, DiagnosticReason } from "../model/diagnostic.ts";
import type { Secret } from "../model/schemas.ts";
import type { Route } from "../table/types.ts";
import { DEFAULT_ROUTE_OPTIONS } from "./annotations.ts";
import { serviceRef, type ResolvedBackend } from "./backends.ts";
import type { CompileConfig } from "./config.ts";
import { backendReason, type Resolve } from "./host-entry.ts";
import { describeAge } from "./order.ts";
import type { IngressPlan } from "./plan.ts";
import { decode } from "./tls.ts";
import type { CertificateBinding } from "./types.ts";

export interface TlsState {
  readonly bindings: readonly CertificateBinding[];
  /** Every TLS host of every served Ingress (for Route.tls). */
  readonly hosts: ReadonlySet<string>;
  readonly diagnostics: readonly Diagnostic[];
}

type Diag = (kind: string, namespace: string, name: string, reason: DiagnosticReason, message: string, severity: "warning" | "error") => void;
const collector = (out: Diagnostic[]): Diag => (kind, namespace, name, reason, message, severity) =>
  void out.push({ kind, namespace, name, reason, message, severity });

/** Secret data decoded once per Secret object. */
export type SecretData = WeakMap<Secret, { cert: string | null; key: string | null }>;

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

/** `tlsPlans` in priority order: for a host bound twice the oldest Ingress wins. */
export function plannedTls(tlsPlans: readonly IngressPlan[], secrets: ReadonlyMap<string, Secret>, data: SecretData, config: CompileConfig): TlsState {
  const diagnostics: Diagnostic[] = [];
  const diag = collector(diagnostics);
  const byHost = new Map<string, CertificateBinding>();
  const hosts = new Set<string>();
  for (const plan of tlsPlans) {
    const { namespace: ns, name, key } = plan;
    for (const entry of plan.tls) {
      const secretName = entry.secretName;
      let missingReported = false;
      for (const host of entry.hosts) {
        hosts.add(host);
        if (byHost.has(host)) continue;
        let b: CertificateBinding;
        if (secretName === null) {
          b = Object.freeze({ host, secret: null, cert: null, key: null, version: null, ingress: key });
        } else {
          const found = binding(secrets, data, host, ns, secretName, key);
          if (!found && !missingReported) {
            diag("Ingress", ns, name, "SecretNotFound", `TLS Secret ${ns}/${secretName} not found; the default certificate is used`, "warning");
            missingReported = true;
          } else if (found && (found.cert === null || found.key === null)) {
            diag("Ingress", ns, name, "InvalidCertificate", `TLS Secret ${ns}/${secretName} has no tls.crt or tls.key`, "error");
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
    else diag("Secret", def.namespace, def.name, "SecretNotFound", `--default-ssl-certificate Secret ${def.namespace}/${def.name} not found`, "warning");
  }
  bindings.sort((a, b) => (a.host < b.host ? -1 : a.host > b.host ? 1 : 0));
  return { bindings: Object.freeze(bindings), hosts, diagnostics };
}

export interface DefaultEntry {
  readonly plan: IngressPlan | null;
  readonly backend: ResolvedBackend;
  readonly route: Route;
}

/**
 * The winning spec.defaultBackend among `defaultPlans` (priority order), else
 * --default-backend-service, else null. The route object of `prev` is kept while its Ingress
 * and Backend are the same. Diagnostics go to `out`.
 */
export function plannedDefault(defaultPlans: readonly IngressPlan[], config: CompileConfig, resolve: Resolve, prev: DefaultEntry | null, out: Diagnostic[]): DefaultEntry | null {
  const diag = collector(out);
  const entry = (plan: IngressPlan | null, backend: ResolvedBackend): DefaultEntry => {
    if (prev !== null && prev.plan === plan && prev.backend === backend) return prev;
    const route: Route = Object.freeze({
      ingress: plan ? plan.ref : Object.freeze({ namespace: "", name: "" }),
      host: null,
      path: "/",
      pathType: "Prefix" as const,
      declaredPathType: "Prefix" as const,
      source: plan ? ("defaultBackend" as const) : ("globalDefault" as const),
      ruleIndex: -1,
      pathIndex: -1,
      backend: backend.backend,
      options: plan ? plan.annotations.options : DEFAULT_ROUTE_OPTIONS,
      tls: false,
    });
    return { plan, backend, route };
  };
  let winner: DefaultEntry | null = null;
  for (const plan of defaultPlans) {
    const spec = plan.defaultBackend;
    if (spec === null) continue;
    const { namespace: ns, name } = plan;
    if (winner) {
      const message = `spec.defaultBackend of ${describeAge(plan.ingress)} loses to ${describeAge((winner.plan as IngressPlan).ingress)}`;
      diag("Ingress", ns, name, "DefaultBackendConflict", message, "warning");
      continue;
    }
    if (!spec.ok) {
      diag("Ingress", ns, name, "InvalidBackend", `spec.defaultBackend: ${spec.message}; ignored`, "error");
      continue;
    }
    const rb = resolve(spec.ref);
    if (rb.backend.status !== "ok") diag("Ingress", ns, name, backendReason(rb), rb.detail, "warning");
    winner = entry(plan, rb);
  }
  if (winner === null) {
    const g = config.defaultBackendService;
    if (g) {
      const rb = resolve(serviceRef(g.namespace, g.name, g.port, "http"));
      if (rb.backend.status !== "ok") diag("Service", g.namespace, g.name, backendReason(rb), `--default-backend-service: ${rb.detail}`, "warning");
      winner = entry(null, rb);
    }
  }
  return winner;
}
