// What the HTTPS listeners serve: a compile result's certificate bindings → PEM checks → SNI
// entries (with the default certificate, minted once here). Built once per process that
// compiles: the single process, or the primary, which sends the entries to its workers so
// every worker serves the same certificates and the TLS diagnostics are computed once.
import type { CompileResult } from "../compile/types.ts";
import type { Config } from "../config/types.ts";
import type { Logger } from "../log/logger.ts";
import { generateDefaultCertificate } from "../tls/default-cert.ts";
import { createPemChecker } from "../tls/pem.ts";
import { buildTlsEntries, validateTlsSettings, type TlsEntries, type TlsEntry } from "../tls/sni.ts";

/** One certificate set: SNI entries and their digest. */
export interface TlsSet {
  readonly entries: readonly TlsEntry[];
  readonly fingerprint: string;
}

/**
 * The certificate sets of the Gateways' own HTTPS ports (--gateway-ports), by port, and one
 * digest over all of them. Their diagnostics are left out: each binding is a Gateway
 * listener's certificateRef, whose problems the listener's status and the shared set report.
 */
export function buildPortTls(builder: TlsBuilder, result: Pick<CompileResult, "gatewayPortCertificates">): { readonly ports: ReadonlyMap<number, TlsSet>; readonly fingerprint: string } {
  const ports = new Map<number, TlsSet>();
  let fingerprint = "";
  for (const [port, bindings] of result.gatewayPortCertificates ?? []) {
    const built = builder.build(bindings);
    ports.set(port, { entries: built.entries, fingerprint: built.fingerprint });
    fingerprint += `${port}=${built.fingerprint};`;
  }
  return { ports, fingerprint };
}

export interface TlsBuilder {
  /** Entries for the bindings (the default certificate alone for none). */
  build(certificates: CompileResult["certificates"]): TlsEntries;
}

/** Throws on TLS settings Bun would not apply as written. */
export function createTlsBuilder(config: Config, log: Logger): TlsBuilder {
  const checker = createPemChecker();
  const settings = { minVersion: config.tlsMinVersion, maxVersion: config.tlsMaxVersion, ecdhCurve: config.tlsEcdhCurve, ciphers: config.tlsCiphers } as const;
  // Bun silently skips cipher names it does not know: refuse them at start-up instead.
  const bad = validateTlsSettings(settings);
  if (bad) throw new Error(`--tls-ciphers/--tls-min-version/--tls-max-version/--tls-ecdh-curve: ${bad}`);
  const generated = generateDefaultCertificate(log);
  return { build: (certificates) => buildTlsEntries(certificates, generated, settings, { checker }) };
}
