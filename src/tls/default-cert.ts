// The default certificate (--default-ssl-certificate): served for unmatched SNI,
// no SNI, and hosts whose own certificate is missing or broken. It comes from the Secret the
// flag names (the compiler hands it over as the binding with host ""), else from a
// self-signed ECDSA certificate minted in memory once at start-up.
import type { CertificateBinding } from "../compile/types.ts";
import type { Logger } from "../log/logger.ts";
import type { Diagnostic } from "../model/diagnostic.ts";
import type { PemChecker } from "./pem.ts";
import { createSelfSignedCertificate } from "./x509.ts";

export interface DefaultCertificate {
  readonly cert: string;
  readonly key: string;
  /** `namespace/name` of the Secret, or null for the generated certificate. */
  readonly secret: string | null;
  /** What fingerprints compare: a digest of the Secret's PEM (tls/pem.ts, pemDigest), or "generated:<notAfter>". */
  readonly version: string;
  /** notAfter in milliseconds since the epoch. */
  readonly notAfter: number;
}

export const DEFAULT_CERT_CN = "Portico Default Certificate";
/** RFC 6761 §6.4: .invalid never resolves, so this name can never be a real host's. */
export const DEFAULT_CERT_SAN = "portico.invalid";

/** Mint the in-memory fallback once at start-up (~1 ms for P-256) and say so once. */
export function generateDefaultCertificate(log?: Logger, now = Date.now()): DefaultCertificate {
  const notBefore = new Date(now - 3_600_000);
  // Ten years: the process restarts long before; clients reject it anyway (self-signed).
  const notAfter = new Date(now + 10 * 365 * 86_400_000);
  const minted = createSelfSignedCertificate({ subjectCN: DEFAULT_CERT_CN, sans: [DEFAULT_CERT_SAN], notBefore, notAfter });
  log?.info("generated a self-signed default certificate in memory", { cn: DEFAULT_CERT_CN, notAfter: notAfter.toISOString() });
  return { cert: minted.certPem, key: minted.keyPem, secret: null, version: `generated:${notAfter.getTime()}`, notAfter: notAfter.getTime() };
}

/**
 * The certificate to serve by default: the valid host "" binding (the
 * --default-ssl-certificate Secret) if there is one, else `generated`. A broken Secret is a
 * diagnostic on that Secret and the generated certificate is used instead.
 */
export function pickDefaultCertificate(
  bindings: readonly CertificateBinding[],
  generated: DefaultCertificate,
  checker: PemChecker,
  now: number,
): { readonly certificate: DefaultCertificate; readonly diagnostics: readonly Diagnostic[] } {
  const binding = bindings.find((b) => b.host === "" && b.secret !== null);
  if (!binding || binding.secret === null) return { certificate: generated, diagnostics: [] };
  const [namespace = "", name = ""] = binding.secret.split("/");
  const where = { kind: "Secret", namespace, name } as const;
  const result = checker.check(binding, now);
  if (!result.ok) {
    return {
      certificate: generated,
      diagnostics: [{ ...where, reason: "InvalidCertificate", severity: "error", message: `the --default-ssl-certificate Secret is unusable (${result.reason}); serving the generated self-signed certificate` }],
    };
  }
  const certificate: DefaultCertificate = {
    cert: binding.cert ?? "",
    key: binding.key ?? "",
    secret: binding.secret,
    version: result.contentDigest, // by content, as every served certificate (tls/pem.ts, pemDigest)
    notAfter: result.notAfter,
  };
  const diagnostics: Diagnostic[] = result.expired
    ? [{ ...where, reason: "CertificateExpired", severity: "warning", message: `the --default-ssl-certificate expired at ${new Date(result.notAfter).toISOString()}; still serving it` }]
    : [];
  return { certificate, diagnostics };
}
