// HTTPS side of the composition: compile result → PEM checks → SNI entries → listener.
// With --workers N ≥ 2 the primary only builds the entries (createTlsBuilder) and sends them
// to the workers, which each run their own listener; one process prints the TLS diagnostics.
import type { CompileResult } from "../compile/types.ts";
import type { Config } from "../config/types.ts";
import type { Logger } from "../log/logger.ts";
import type { Diagnostic } from "../model/diagnostic.ts";
import { createPemChecker } from "../tls/pem.ts";
import { generateDefaultCertificate } from "../tls/default-cert.ts";
import { buildTlsEntries, validateTlsSettings, type TlsEntries } from "../tls/sni.ts";
import { createTlsListener, type ServeHandler, type TlsListener, type RotationInfo } from "../tls/listener.ts";

export interface HttpsSide {
  readonly listener: TlsListener;
  /**
   * Apply a compile result; returns the TLS diagnostics (broken or missing certificates).
   * `provisional`: the stand-in served before the first table (TlsListener.update).
   */
  apply(result: CompileResult, provisional?: boolean): readonly Diagnostic[];
  /** notAfter (s) per served host, "" = default certificate. */
  readonly expiry: ReadonlyMap<string, number>;
}

export interface TlsBuilder {
  /** Entries for the bindings (the default certificate alone for none). */
  build(certificates: CompileResult["certificates"]): TlsEntries;
}

/** PEM checks, the default certificate (minted once here) and Bun's TLS settings. Throws on bad settings. */
export function createTlsBuilder(config: Config, log: Logger): TlsBuilder {
  const checker = createPemChecker();
  const settings = { minVersion: config.tlsMinVersion, ciphers: config.tlsCiphers } as const;
  // Bun silently skips cipher names it does not know: refuse them at start-up instead.
  const bad = validateTlsSettings(settings);
  if (bad) throw new Error(`--tls-ciphers/--tls-min-version: ${bad}`);
  const generated = generateDefaultCertificate(log);
  return { build: (certificates) => buildTlsEntries(certificates, generated, settings, { checker }) };
}

/** The listener logs each rotation and each failed one itself; the hooks only count them. */
export function rotationHooks(onRotation?: (info: RotationInfo) => void) {
  return { onRotation: (info: RotationInfo) => onRotation?.(info) };
}

export function createHttpsSide(o: {
  config: Config;
  log: Logger;
  handler: () => ServeHandler;
  onRotation?: (info: RotationInfo) => void;
}): HttpsSide {
  const { config, log } = o;
  const builder = createTlsBuilder(config, log);
  let expiry: ReadonlyMap<string, number> = new Map();
  const listener = createTlsListener({
    hostname: config.bind,
    port: config.httpsPort,
    handler: o.handler,
    log: log.child({ listener: "https" }),
    hooks: rotationHooks(o.onRotation),
  });
  return {
    listener,
    get expiry() {
      return expiry;
    },
    apply(result: CompileResult, provisional = false): readonly Diagnostic[] {
      const built = builder.build(result.certificates);
      expiry = built.expiry;
      listener.update(built.entries, built.fingerprint, provisional);
      return built.diagnostics;
    },
  };
}
