// The check the HTTPS listener makes of a kubernetes.io/tls Secret before serving it (tls/sni.ts
// buildTlsEntries, through tls/pem.ts's cache): every certificate in tls.crt parses, tls.key
// parses as an unencrypted RSA or ECDSA key and matches the leaf (the first certificate), and
// the leaf's names and notAfter are read. Pure, so that explain (compile/explain-tls.ts) asks
// the very same check and says what the listener serves, not what a looser reading would.
import { createHash, createPrivateKey, X509Certificate } from "node:crypto";
import { certificateNames } from "./cert-names.ts";

export type PemCheck =
  | {
      readonly ok: true;
      /** DNS names from the leaf's subjectAltName, lowercased (CN when there are none). */
      readonly sans: readonly string[];
      /** Leaf notAfter, milliseconds since the epoch. */
      readonly notAfter: number;
      readonly expired: boolean;
      /** Certificates in tls.crt (leaf + intermediates). */
      readonly chainLength: number;
      /** SHA-256 of tls.crt and tls.key as served: what a certificate set's fingerprint compares. */
      readonly contentDigest: string;
    }
  | { readonly ok: false; readonly reason: string };

/** A check without the clock: whether the pair is served, and what `expired` is computed from. */
export type PemParse = Exclude<PemCheck, { ok: true }> | { readonly ok: true; readonly sans: readonly string[]; readonly notAfter: number; readonly chainLength: number; readonly contentDigest: string };

const CERT_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

/** Parse and match without a cache. `now` is milliseconds since the epoch. */
export function checkPem(cert: string | null, key: string | null, now: number): PemCheck {
  return withExpiry(parsePem(cert, key), now);
}

export function withExpiry(p: PemParse, now: number): PemCheck {
  return p.ok ? { ...p, expired: p.notAfter <= now } : p;
}

/**
 * The check itself; an expired certificate is still served (tls/sni.ts), so whether a pair is
 * served needs no clock. `digest`: pemDigest(cert, key) when the caller has it already.
 */
export function parsePem(cert: string | null, key: string | null, digest: string | null = null): PemParse {
  if (cert === null || cert.trim() === "") return { ok: false, reason: "tls.crt is missing or empty" };
  if (key === null || key.trim() === "") return { ok: false, reason: "tls.key is missing or empty" };
  const blocks = cert.match(CERT_BLOCK) ?? [];
  if (blocks.length === 0) return { ok: false, reason: "tls.crt holds no PEM CERTIFICATE block" };
  const chain: X509Certificate[] = [];
  for (const [i, block] of blocks.entries()) {
    try {
      chain.push(new X509Certificate(block));
    } catch {
      return { ok: false, reason: `certificate ${i + 1} in tls.crt does not parse` };
    }
  }
  let privateKey;
  try {
    privateKey = createPrivateKey(key);
  } catch {
    // Encrypted keys land here too: Secrets carry no passphrase.
    return { ok: false, reason: "tls.key does not parse as an unencrypted PEM private key" };
  }
  const leaf = chain[0]!;
  const type = privateKey.asymmetricKeyType;
  if (type !== "rsa" && type !== "ec") return { ok: false, reason: `tls.key type ${type ?? "unknown"} is not RSA or ECDSA` };
  if (!leaf.checkPrivateKey(privateKey)) return { ok: false, reason: "tls.key does not match the first certificate in tls.crt" };
  const notAfter = Date.parse(leaf.validTo);
  if (!Number.isFinite(notAfter)) return { ok: false, reason: "certificate notAfter does not parse" };
  return { ok: true, sans: certificateNames(leaf), notAfter, chainLength: chain.length, contentDigest: digest ?? pemDigest(cert, key) };
}

/**
 * The PEM text's own digest. A Secret's version (uid/resourceVersion) changes on every write,
 * also one that leaves tls.crt and tls.key as they were (a label, an annotation, a re-create
 * with the same data); a rotation restarts the HTTPS listener (tls/listener.ts), so the
 * certificate set is compared by this, computed once per version (tls/pem.ts's cache).
 */
export function pemDigest(cert: string | null, key: string | null): string {
  return createHash("sha256").update(cert ?? "\u0000").update("\u0001").update(key ?? "\u0000").digest("base64");
}
