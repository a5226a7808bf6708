// From the compiler's certificate bindings to the `tls` array of Bun.serve.
//
// Bun caveat (Bun 1.4.5): Bun.serve picks the entry whose `serverName` equals the SNI
// (case-insensitive, a `*.foo.com` entry matches one label) and falls back to the FIRST entry;
// it never reads names from the certificates. So: entry 0 is the default certificate with no
// serverName, then one entry per served host, exact names and wildcards alike.
import { createHash } from "node:crypto";
import type { CertificateBinding } from "../compile/types.ts";
import type { HostTls } from "../model/host-tls.ts";
import type { Diagnostic } from "../model/diagnostic.ts";
import { pickDefaultCertificate, type DefaultCertificate } from "./default-cert.ts";
import { type PemChecker } from "./pem.ts";
import { namesCover, wildcardOf } from "../model/cert-names.ts";
import { knownCiphers } from "../config/values.ts";

export type { HostTls };

export interface TlsSettings {
  readonly minVersion: "1.2" | "1.3";
  /** Absent: 1.3. */
  readonly maxVersion?: "1.2" | "1.3";
  /** Colon-separated group names; absent or "auto": BoringSSL's defaults (not passed to Bun). */
  readonly ecdhCurve?: string;
  /** OpenSSL names separated by colons: TLS 1.2 suites only (see tlsSettingsOptions). */
  readonly ciphers: string;
}

/** One element of Bun.serve's `tls` array (the subset of Bun.TLSOptions we set). */
export interface TlsEntry {
  readonly serverName?: string;
  readonly cert: string;
  readonly key: string;
  readonly ciphers: string;
  readonly secureOptions: number;
  /** Absent: BoringSSL's default groups. */
  readonly ecdhCurve?: string;
}

export interface TlsEntries {
  readonly entries: readonly TlsEntry[];
  /** Stable digest of everything in `entries`: equal fingerprints need no rotation. */
  readonly fingerprint: string;
  readonly diagnostics: readonly Diagnostic[];
  /** notAfter in seconds per served host; "" is the default certificate. For metrics. */
  readonly expiry: ReadonlyMap<string, number>;
  readonly defaultCertificate: DefaultCertificate;
}

// OpenSSL/BoringSSL SSL_OP_* bits (ssl.h). Bun.TLSOptions has no minVersion, but it passes
// `secureOptions` to SSL_CTX_set_options, which BoringSSL honours for protocol versions
// (measured: with NO_TLSv1_2 set, a TLS 1.2 client gets alert 70 protocol_version).
const SSL_OP_NO_TLSv1 = 0x04000000;
const SSL_OP_NO_TLSv1_2 = 0x08000000;
const SSL_OP_NO_TLSv1_1 = 0x10000000;
// Measured: with it, a client offering TLS 1.3 and 1.2 gets TLS 1.2 (Bun.serve and node:tls).
const SSL_OP_NO_TLSv1_3 = 0x20000000;
// nginx.tmpl writes `ssl_prefer_server_ciphers on` with ssl-ciphers, which is never empty in
// ingress-nginx (config.go's default list): the server's order picks the TLS 1.2 suite. Bun's
// default is the client's order (measured), so Portico sets it.
const SSL_OP_CIPHER_SERVER_PREFERENCE = 0x00400000;

/**
 * Why Bun cannot apply these settings, or null. BoringSSL skips cipher names it does not know
 * (measured: "ECDHE-ECDSA-AES128-GCM-SHA256:BOGUS" is accepted), so one is refused here instead
 * of being silently ignored. The list comes from --tls-ciphers (the ConfigMap's ssl-ciphers is
 * applied as that flag), whose schema evaluates the string to TLS 1.2 suite names only
 * (config/values.ts cipherList, config/cipher-list.ts).
 */
export function validateTlsSettings(s: TlsSettings): string | null {
  if (s.minVersion === "1.3" && s.maxVersion === "1.2") return "the highest TLS version (1.2) is below the lowest (1.3): no handshake could succeed";
  const known = knownCiphers();
  for (const name of s.ciphers.split(":")) {
    if (!known.has(name.toLowerCase())) return `unknown TLS cipher suite ${name}`;
  }
  return null;
}

/**
 * What Bun can apply: the minimum version (through secureOptions) and the TLS 1.2 cipher list.
 * TLS 1.3 suites are fixed by BoringSSL (all three AEADs); `ciphers` does not affect them.
 * Throws on settings Bun would ignore (validateTlsSettings): fail loudly, never pretend.
 */
export function tlsSettingsOptions(s: TlsSettings): { ciphers: string; secureOptions: number; ecdhCurve?: string } {
  const problem = validateTlsSettings(s);
  if (problem) throw new Error(problem);
  let secureOptions = SSL_OP_NO_TLSv1 | SSL_OP_NO_TLSv1_1 | SSL_OP_CIPHER_SERVER_PREFERENCE; // Bun already refuses 1.0/1.1; say it anyway
  if (s.minVersion === "1.3") secureOptions |= SSL_OP_NO_TLSv1_2;
  if (s.maxVersion === "1.2") secureOptions |= SSL_OP_NO_TLSv1_3;
  const curve = s.ecdhCurve === undefined || s.ecdhCurve === "auto" ? {} : { ecdhCurve: s.ecdhCurve };
  return { ciphers: s.ciphers, secureOptions, ...curve };
}

/**
 * The listener's options with a host's own cipher list. Only the list: the other options
 * (protocol versions, server preference) are read from the listener's first context before
 * the SNI picks the host's (annotations/ssl-ciphers.ts).
 */
function hostOptions(base: { ciphers: string; secureOptions: number; ecdhCurve?: string }, own: OwnList | undefined) {
  return own === undefined ? base : { ...base, ciphers: own.ciphers };
}

/** A host's own list (not a pinned one). */
type OwnList = Extract<HostTls, { readonly ciphers: string }>;

interface Served {
  readonly host: string;
  readonly cert: string;
  readonly key: string;
  readonly version: string;
}

const NO_HOST_TLS: ReadonlyMap<string, HostTls> = new Map();

export function buildTlsEntries(
  bindings: readonly CertificateBinding[],
  generated: DefaultCertificate,
  settings: TlsSettings,
  ctx: { readonly checker: PemChecker; readonly now?: number },
  hostTls: ReadonlyMap<string, HostTls> = NO_HOST_TLS,
): TlsEntries {
  const opts = tlsSettingsOptions(settings); // throws on settings Bun would ignore
  const now = ctx.now ?? Date.now();
  const picked = pickDefaultCertificate(bindings, generated, ctx.checker, now);
  const def = picked.certificate;
  const diagnostics: Diagnostic[] = [...picked.diagnostics];
  const seenDiag = new Set<string>();
  const report = (b: CertificateBinding, reason: Diagnostic["reason"], severity: "warning" | "error", message: string): void => {
    // One diagnostic per Ingress, Secret and reason, however many hosts share them.
    const id = `${b.ingress}|${b.secret ?? ""}|${reason}`;
    if (seenDiag.has(id)) return;
    seenDiag.add(id);
    const [namespace = "", name = ""] = b.ingress.split("/");
    // On the Ingress, so the Event lands where its author looks.
    diagnostics.push({ kind: "Ingress", namespace, name, reason, severity, message });
  };

  const served = new Map<string, Served>();
  const onDefault = new Set<string>();
  const expiry = new Map<string, number>([["", Math.floor(def.notAfter / 1000)]]);
  for (const b of bindings) {
    const host = b.host.toLowerCase();
    if (host === "" || served.has(host)) continue;
    if (b.secret === null) {
      onDefault.add(host); // spec.tls entry without secretName: the default certificate, as in ingress-nginx
      continue;
    }
    if (b.cert === null || b.key === null) {
      // Secret missing or without tls.crt/tls.key: compile/tls.ts already reported it.
      onDefault.add(host);
      continue;
    }
    const result = ctx.checker.check(b, now);
    if (!result.ok) {
      report(b, "InvalidCertificate", "error", `TLS Secret ${b.secret} is unusable (${result.reason}); serving the default certificate for its hosts`);
      onDefault.add(host);
      continue;
    }
    if (result.expired) {
      // Served anyway, as other controllers do: clients decide; we log and export the expiry.
      report(b, "CertificateExpired", "warning", `TLS Secret ${b.secret} expired at ${new Date(result.notAfter).toISOString()}; still serving it`);
    }
    if (!namesCover(result.sans, host)) {
      // ingress-nginx's createServers (internal/ingress/controller/controller.go): a Secret
      // whose certificate does not name the host (x509 VerifyHostname, then certificate.go
      // verifyHostname) is logged and the host gets the default certificate. Portico does the
      // same in every mode: no verifying client accepts the mismatching certificate anyway,
      // while a default certificate that covers the host (a cluster wildcard) lets it work.
      const id = `${b.ingress}|${b.secret}|host:${host}`;
      if (!seenDiag.has(id)) {
        seenDiag.add(id);
        const [namespace = "", name = ""] = b.ingress.split("/");
        diagnostics.push({ kind: "Ingress", namespace, name, reason: "InvalidCertificate", severity: "warning", message: `TLS Secret ${b.secret} has no name matching host ${host}; serving the default certificate for it` });
      }
      onDefault.add(host);
      continue;
    }
    onDefault.delete(host);
    // By content, not by the Secret's version: an unchanged certificate set never restarts the listener.
    served.set(host, { host, cert: b.cert ?? "", key: b.key ?? "", version: result.contentDigest });
    expiry.set(host, Math.floor(result.notAfter / 1000));
  }

  // A host on the default certificate needs its own entry only when a served wildcard
  // would otherwise catch its SNI (Bun matches `*.foo.com` before falling back to entry 0),
  // or when it has cipher options of its own (the default entry has the listener's).
  for (const host of onDefault) {
    if (served.has(host)) continue;
    const w = wildcardOf(host);
    if (w !== null && served.has(w)) {
      served.set(host, { host, cert: def.cert, key: def.key, version: def.version });
    }
  }
  // A host's own list: the annotation's string evaluated to names of suites Portico serves, all
  // of which BoringSSL has (config/cipher-list.ts; config/cipher-list.test.ts checks them against
  // getCiphers()), so BoringSSL applies it whole.
  const ownLists = new Map<string, OwnList>();
  for (const [name, own] of hostTls) {
    const host = name.toLowerCase();
    if (host === "" || own.ciphers === null) continue;
    ownLists.set(host, own);
    if (!served.has(host)) served.set(host, { host, cert: def.cert, key: def.key, version: def.version });
  }
  // A host pinned to the listener's list (compile/host-tls.ts: a rule host under a `*.` host with
  // a list of its own) gets an entry of its own, with the certificate the wildcard's entry would
  // have served it, so the wildcard's list does not.
  for (const [name, own] of hostTls) {
    const host = name.toLowerCase();
    if (own.ciphers !== null || served.has(host)) continue;
    const w = wildcardOf(host);
    if (w === null || !ownLists.has(w)) continue;
    // Every host of ownLists has an entry in `served` (the loop above adds it).
    served.set(host, { ...served.get(w)!, host });
  }

  const hosts = [...served.keys()].sort();
  const hash = createHash("sha256").update(`${settings.minVersion}\n${settings.maxVersion ?? "1.3"}\n${settings.ecdhCurve ?? "auto"}\n${settings.ciphers}\n${def.version}\n`);
  const entries: TlsEntry[] = [{ cert: def.cert, key: def.key, ...opts }];
  for (const host of hosts) {
    const s = served.get(host)!;
    const own = ownLists.get(host);
    hash.update(`${host}\u0000${s.version}\u0000${own?.ciphers ?? ""}\n`);
    entries.push({ serverName: host, cert: s.cert, key: s.key, ...hostOptions(opts, own) });
  }
  return { entries, fingerprint: hash.digest("base64url"), diagnostics, expiry, defaultCertificate: def };
}
