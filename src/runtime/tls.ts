// HTTPS side of the composition: compile result → PEM checks → SNI entries → listener.
import type { CompileResult } from "../compile/types.ts";
import type { Config } from "../config/types.ts";
import type { Logger } from "../log/logger.ts";
import type { Diagnostic } from "../model/diagnostic.ts";
import { createPemChecker } from "../tls/pem.ts";
import { generateDefaultCertificate } from "../tls/default-cert.ts";
import { buildTlsEntries, validateTlsSettings } from "../tls/sni.ts";
import { createTlsListener, type ServeHandler, type TlsListener, type RotationInfo } from "../tls/listener.ts";

export interface HttpsSide {
  readonly listener: TlsListener;
  /** Apply a compile result; returns the TLS diagnostics (broken or missing certificates). */
  apply(result: CompileResult): readonly Diagnostic[];
  /** notAfter (s) per served host, "" = default certificate. */
  readonly expiry: ReadonlyMap<string, number>;
}

export function createHttpsSide(o: {
  config: Config;
  log: Logger;
  handler: () => ServeHandler;
  onRotation?: (info: RotationInfo) => void;
}): HttpsSide {
  const { config, log } = o;
  const checker = createPemChecker();
  const settings = { minVersion: config.tlsMinVersion, ciphers: config.tlsCiphers } as const;
  // Bun silently skips cipher names it does not know: refuse them at start-up instead.
  const bad = validateTlsSettings(settings);
  if (bad) throw new Error(`--tls-ciphers/--tls-min-version: ${bad}`);
  const generated = generateDefaultCertificate(log);
  let expiry: ReadonlyMap<string, number> = new Map();
  const listener = createTlsListener({
    hostname: config.bind,
    port: config.httpsPort,
    handler: o.handler,
    log: log.child({ listener: "https" }),
    hooks: {
      onRotation: (info) => {
        log.info("tls certificates rotated", { rotations: info.rotations, entries: info.entries, serveMs: Math.round(info.serveMs) });
        o.onRotation?.(info);
      },
      onRotationError: (err) => log.error("tls rotation failed; the previous certificates keep serving", { err: String(err) }),
    },
  });
  return {
    listener,
    get expiry() {
      return expiry;
    },
    apply(result: CompileResult): readonly Diagnostic[] {
      const built = buildTlsEntries(result.certificates, generated, settings, { checker });
      expiry = built.expiry;
      listener.update(built.entries, built.fingerprint);
      return built.diagnostics;
    },
  };
}
