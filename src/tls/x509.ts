// Write X.509 v3 certificates (RFC 5280 §4.1) with node:crypto alone. The product mints one:
// the self-signed ECDSA default certificate at start-up (default-cert.ts). `signCertificate`
// is the general writer; the test PKI (test/tls/pki.ts: CAs, CA-signed server and client
// certificates, RSA keys) builds on it, so the encoding is written once.
import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from "node:crypto";
import * as der from "./der.ts";

export interface MintedCertificate {
  readonly certPem: string;
  /** PKCS#8 PEM. */
  readonly keyPem: string;
}

export const OID = {
  commonName: "2.5.4.3",
  ecdsaSha256: "1.2.840.10045.4.3.2",
  basicConstraints: "2.5.29.19",
  keyUsage: "2.5.29.15",
  extKeyUsage: "2.5.29.37",
  subjectAltName: "2.5.29.17",
  subjectKeyId: "2.5.29.14",
  serverAuth: "1.3.6.1.5.5.7.3.1",
} as const;

/** The signature's AlgorithmIdentifier and the hash node:crypto signs with. */
export interface SignatureAlgorithm {
  readonly algorithm: der.Der;
  readonly hash: string;
}

/** ecdsa-with-SHA256; RFC 5758 §3.2: its parameters are omitted. */
export const ECDSA_SHA256: SignatureAlgorithm = { algorithm: der.sequence(der.oid(OID.ecdsaSha256)), hash: "sha256" };

export interface CertificateFields {
  /** Name of the subject, and of the issuer (the subject's own for a self-signed certificate). */
  readonly subject: der.Der;
  readonly issuer: der.Der;
  readonly publicKey: KeyObject;
  /** The issuer's private key. */
  readonly signingKey: KeyObject;
  readonly signature: SignatureAlgorithm;
  readonly notBefore: Date;
  readonly notAfter: Date;
  readonly extensions: readonly der.Der[];
}

/** Encode and sign a v3 certificate; returns its PEM. */
export function signCertificate(f: CertificateFields): string {
  // A positive 16-byte serial (RFC 5280 §4.1.2.2: at most 20 octets, positive).
  const serial = randomBytes(16);
  serial[0] = ((serial[0] ?? 0) & 0x7f) | 0x01;
  const tbs = der.sequence(
    der.explicit(0, der.smallInteger(2)), // v3
    der.unsignedInteger(serial),
    f.signature.algorithm,
    f.issuer,
    der.sequence(der.time(f.notBefore), der.time(f.notAfter)),
    f.subject,
    new Uint8Array(f.publicKey.export({ type: "spki", format: "der" })),
    der.explicit(3, der.sequence(...f.extensions)),
  );
  const signature = new Uint8Array(sign(f.signature.hash, tbs, f.signingKey)); // ECDSA: DER Ecdsa-Sig-Value (RFC 5480 §2.2)
  return der.toPem("CERTIFICATE", der.sequence(tbs, f.signature.algorithm, der.bitString(signature)));
}

/** A Name holding one commonName. */
export function distinguishedName(cn: string): der.Der {
  return der.sequence(der.set(der.sequence(der.oid(OID.commonName), der.utf8String(cn))));
}

export function extension(id: string, critical: boolean, value: der.Der): der.Der {
  const parts = [der.oid(id)];
  if (critical) parts.push(der.boolean(true)); // DEFAULT FALSE is omitted in DER (X.690 §11.5)
  parts.push(der.octetString(value));
  return der.sequence(...parts);
}

/** GeneralName dNSName [2] IA5String (RFC 5280 §4.2.1.6). */
export function dnsName(name: string): der.Der {
  if (!/^[\x21-\x7e]+$/.test(name)) throw new Error("SAN DNS names must be printable ASCII (IA5String, A-labels)");
  return der.implicitPrimitive(2, new TextEncoder().encode(name));
}

/**
 * RFC 5280 §4.2.1.2 method (1): the SHA-1 of the subjectPublicKey BIT STRING's value. For an EC
 * key that value is the uncompressed point 04 || X || Y (RFC 5480 §2.2), read here from the JWK
 * export so no DER has to be parsed.
 */
function ecKeyIdentifier(publicKey: KeyObject): Uint8Array {
  const jwk = publicKey.export({ format: "jwk" });
  if (jwk.kty !== "EC" || !jwk.x || !jwk.y) throw new Error("ecKeyIdentifier needs an EC public key");
  const point = Buffer.concat([Buffer.from([0x04]), Buffer.from(jwk.x, "base64url"), Buffer.from(jwk.y, "base64url")]);
  return new Uint8Array(createHash("sha1").update(point).digest());
}

export interface SelfSignedOptions {
  readonly subjectCN: string;
  /** DNS names for subjectAltName. */
  readonly sans: readonly string[];
  readonly notBefore: Date;
  readonly notAfter: Date;
}

/** A self-signed ECDSA P-256 server certificate with a fresh key. */
export function createSelfSignedCertificate(opts: SelfSignedOptions): MintedCertificate {
  const pair = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
  const subject = distinguishedName(opts.subjectCN);
  const certPem = signCertificate({
    subject,
    issuer: subject,
    publicKey: pair.publicKey,
    signingKey: pair.privateKey,
    signature: ECDSA_SHA256,
    notBefore: opts.notBefore,
    notAfter: opts.notAfter,
    extensions: [
      // §4.2.1.9: an empty SEQUENCE means cA = FALSE.
      extension(OID.basicConstraints, true, der.sequence()),
      // §4.2.1.3: digitalSignature (bit 0) is all an ECDHE server key signs with.
      extension(OID.keyUsage, true, der.namedBits([0])),
      extension(OID.extKeyUsage, false, der.sequence(der.oid(OID.serverAuth))),
      extension(OID.subjectAltName, false, der.sequence(...opts.sans.map(dnsName))),
      // §4.2.1.1: a self-signed certificate may omit the authority key identifier.
      extension(OID.subjectKeyId, false, der.octetString(ecKeyIdentifier(pair.publicKey))),
    ],
  });
  return { certPem, keyPem: pair.privateKey.export({ type: "pkcs8", format: "pem" }).toString() };
}
