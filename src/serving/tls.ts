// What the HTTPS listeners serve: a compile result's certificate bindings → PEM checks → SNI
// entries (with the default certificate, minted once here). Built once per process that
// compiles: the single process, or the primary, which sends the entries to its workers so
// every worker serves the same certificates and the TLS diagnostics are computed once.
import type { CompileResult } from "../compile/types.ts";
import type { Config } from "../config/types.ts";
import type { Logger } from "../log/logger.ts";
import { generateDefaultCertificate } from "../tls/default-cert.ts";
import { createPemChecker } from "../tls/pem.ts";
import { buildTlsEntries, validateTlsSettings, type HostTls, type TlsEntries, type TlsEntry, type TlsSettings } from "../tls/sni.ts";

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
  /** Entries for the bindings (the default certificate alone for none), with hosts' own cipher options. */
  build(certificates: CompileResult["certificates"], hostTls?: ReadonlyMap<string, HostTls>): TlsEntries;
}

const settingsOf = (config: Config): TlsSettings => ({ minVersion: config.tlsMinVersion, maxVersion: config.tlsMaxVersion, ecdhCurve: config.tlsEcdhCurve, ciphers: config.tlsCiphers });
const sameSettings = (a: TlsSettings, b: TlsSettings): boolean => a.minVersion === b.minVersion && a.maxVersion === b.maxVersion && a.ecdhCurve === b.ecdhCurve && a.ciphers === b.ciphers;

/**
 * Throws on TLS settings Bun would not apply as written. `config` may be a LiveConfig's: the
 * TLS fields are read again on every build, so a ConfigMap edit of ssl-protocols, ssl-ciphers
 * or ssl-ecdh-curve (a compile field too, so a compile and a build follow) changes the entries'
 * fingerprint and the listeners take them as they take new certificates, as nginx's reload
 * does. Settings that cannot apply together keep the last good ones.
 */
export function createTlsBuilder(config: Config, log: Logger): TlsBuilder {
  const checker = createPemChecker();
  let good = settingsOf(config);
  // Bun silently skips cipher names it does not know: refuse them at start-up instead.
  const bad = validateTlsSettings(good);
  if (bad) throw new Error(`--tls-ciphers/--tls-min-version/--tls-max-version/--tls-ecdh-curve: ${bad}`);
  const generated = generateDefaultCertificate(log);
  return {
    build: (certificates, hostTls) => {
      const next = settingsOf(config);
      if (!sameSettings(next, good)) {
        const problem = validateTlsSettings(next);
        if (problem) log.warn("TLS settings not applied; the last good ones stay", { problem });
        else {
          good = next;
          log.info("TLS settings applied", { ...good });
        }
      }
      return buildTlsEntries(certificates, generated, good, { checker }, hostTls);
    },
  };
}
