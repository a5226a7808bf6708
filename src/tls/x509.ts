// Mint X.509 v3 certificates (RFC 5280) with node:crypto alone: the in-memory default
// certificate at start-up, and test PKIs (CA, server and client certificates).
import {
  createHash,
  createPrivateKey,
  generateKeyPairSync,
  randomBytes,
  sign,
  X509Certificate,
  type KeyObject,
} from "node:crypto";
import { isIP } from "node:net";
import * as der from "./der.ts";
import { certificateSubject, spkiKeyBits } from "./der-read.ts";

export type KeyAlgorithm = "rsa" | "ecdsa";
export type ExtKeyUsage = "serverAuth" | "clientAuth";

export interface KeyPair {
  readonly privateKey: KeyObject;
  readonly publicKey: KeyObject;
}

/** RSA 2048 or ECDSA P-256 (the two key types Ingress Secrets carry in practice). */
export function generateKeyPair(alg: KeyAlgorithm = "ecdsa"): KeyPair {
  return alg === "rsa"
    ? generateKeyPairSync("rsa", { modulusLength: 2048 })
    : generateKeyPairSync("ec", { namedCurve: "prime256v1" });
}

export interface CertificateOptions {
  readonly subjectCN: string;
  /** DNS names (wildcards allowed) and IPv4/IPv6 literals for subjectAltName. */
  readonly sans?: readonly string[];
  readonly notBefore?: Date;
  readonly notAfter?: Date;
  /** Sign with this CA; absent = self-signed. */
  readonly issuer?: { readonly cert: string; readonly key: string };
  readonly isCA?: boolean;
  /** Default: ["serverAuth"] for a leaf, none for a CA. */
  readonly extKeyUsage?: readonly ExtKeyUsage[];
  /** Key type for a fresh key pair (default ecdsa); ignored when keyPair is given. */
  readonly keyAlgorithm?: KeyAlgorithm;
  /** Reuse a key pair (benchmarks mint thousands of certificates). */
  readonly keyPair?: KeyPair;
}

export interface MintedCertificate {
  readonly certPem: string;
  /** PKCS#8 PEM. */
  readonly keyPem: string;
}

const OID = {
  commonName: "2.5.4.3",
  sha256WithRSA: "1.2.840.113549.1.1.11",
  ecdsaSha256: "1.2.840.10045.4.3.2",
  ecdsaSha384: "1.2.840.10045.4.3.3",
  basicConstraints: "2.5.29.19",
  keyUsage: "2.5.29.15",
  extKeyUsage: "2.5.29.37",
  subjectAltName: "2.5.29.17",
  subjectKeyId: "2.5.29.14",
  authorityKeyId: "2.5.29.35",
  serverAuth: "1.3.6.1.5.5.7.3.1",
  clientAuth: "1.3.6.1.5.5.7.3.2",
} as const;

const DAY_MS = 86_400_000;

export function createCertificate(opts: CertificateOptions): MintedCertificate {
  const pair = opts.keyPair ?? generateKeyPair(opts.keyAlgorithm ?? "ecdsa");
  const spki = new Uint8Array(pair.publicKey.export({ type: "spki", format: "der" }));
  const keyId = new Uint8Array(createHash("sha1").update(spkiKeyBits(spki)).digest());
  const subject = name(opts.subjectCN);

  let issuerName = subject;
  let issuerKeyId: Uint8Array | null = keyId;
  let signingKey = pair.privateKey;
  if (opts.issuer) {
    const parsed = certificateSubject(new Uint8Array(new X509Certificate(opts.issuer.cert).raw));
    issuerName = parsed.subject;
    issuerKeyId = parsed.keyId;
    signingKey = createPrivateKey(opts.issuer.key);
  }
  const { algorithm, hash } = signatureAlgorithm(signingKey);

  // A positive 16-byte serial (RFC 5280 §4.1.2.2: at most 20 octets, positive).
  const serial = randomBytes(16);
  serial[0] = (serial[0] ?? 0) & 0x7f | 0x01;
  const notBefore = opts.notBefore ?? new Date(Date.now() - 60_000);
  const notAfter = opts.notAfter ?? new Date(notBefore.getTime() + 365 * DAY_MS);

  const tbs = der.sequence(
    der.explicit(0, der.smallInteger(2)), // v3
    der.unsignedInteger(serial),
    algorithm,
    issuerName,
    der.sequence(der.time(notBefore), der.time(notAfter)),
    subject,
    spki,
    der.explicit(3, der.sequence(...extensions(opts, pair.publicKey, keyId, issuerKeyId))),
  );
  const signature = new Uint8Array(sign(hash, tbs, signingKey)); // ECDSA: DER Ecdsa-Sig-Value (RFC 5480 §2.2)
  const cert = der.sequence(tbs, algorithm, der.bitString(signature));
  return {
    certPem: der.toPem("CERTIFICATE", cert),
    keyPem: pair.privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
  };
}

function name(cn: string): der.Der {
  if (cn === "") return der.sequence(); // an empty Name is legal when SANs carry the identity (§4.1.2.6)
  return der.sequence(der.set(der.sequence(der.oid(OID.commonName), der.utf8String(cn))));
}

function signatureAlgorithm(key: KeyObject): { algorithm: der.Der; hash: string } {
  if (key.asymmetricKeyType === "rsa") {
    // RFC 4055 §5: the parameters of sha256WithRSAEncryption are NULL.
    return { algorithm: der.sequence(der.oid(OID.sha256WithRSA), der.nullValue()), hash: "sha256" };
  }
  if (key.asymmetricKeyType === "ec") {
    const curve = key.asymmetricKeyDetails?.namedCurve;
    // RFC 5758 §3.2: ecdsa-with-SHA* omit the parameters.
    if (curve === "secp384r1") return { algorithm: der.sequence(der.oid(OID.ecdsaSha384)), hash: "sha384" };
    return { algorithm: der.sequence(der.oid(OID.ecdsaSha256)), hash: "sha256" };
  }
  throw new Error(`unsupported signing key type ${key.asymmetricKeyType ?? "unknown"}`);
}

function extension(id: string, critical: boolean, value: der.Der): der.Der {
  const parts = [der.oid(id)];
  if (critical) parts.push(der.boolean(true)); // DEFAULT FALSE is omitted in DER (X.690 §11.5)
  parts.push(der.octetString(value));
  return der.sequence(...parts);
}

function extensions(opts: CertificateOptions, publicKey: KeyObject, keyId: Uint8Array, issuerKeyId: Uint8Array | null): der.Der[] {
  const out: der.Der[] = [];
  const isCA = opts.isCA === true;
  // §4.2.1.9: critical in CA certificates; an empty SEQUENCE means cA = FALSE.
  out.push(extension(OID.basicConstraints, true, isCA ? der.sequence(der.boolean(true)) : der.sequence()));
  // §4.2.1.3 bits: digitalSignature(0), keyEncipherment(2), keyCertSign(5), cRLSign(6).
  const bits = isCA ? [0, 5, 6] : publicKey.asymmetricKeyType === "rsa" ? [0, 2] : [0];
  out.push(extension(OID.keyUsage, true, der.namedBits(bits)));
  const eku = opts.extKeyUsage ?? (isCA ? [] : ["serverAuth"]);
  if (eku.length > 0) out.push(extension(OID.extKeyUsage, false, der.sequence(...eku.map((u) => der.oid(OID[u])))));
  const sans = opts.sans ?? [];
  // §4.2.1.6: critical when the subject Name is empty.
  if (sans.length > 0) out.push(extension(OID.subjectAltName, opts.subjectCN === "", der.sequence(...sans.map(generalName))));
  out.push(extension(OID.subjectKeyId, false, der.octetString(keyId)));
  // §4.2.1.1: keyIdentifier [0] IMPLICIT; absent when the issuer has no subjectKeyIdentifier.
  if (issuerKeyId) out.push(extension(OID.authorityKeyId, false, der.sequence(der.implicitPrimitive(0, issuerKeyId))));
  return out;
}

/** GeneralName: dNSName [2] IA5String or iPAddress [7] OCTET STRING (RFC 5280 §4.2.1.6). */
function generalName(san: string): der.Der {
  const family = isIP(san);
  if (family === 4) return der.implicitPrimitive(7, Uint8Array.from(san.split(".").map(Number)));
  if (family === 6) return der.implicitPrimitive(7, ipv6Bytes(san));
  if (!/^[\x21-\x7e]+$/.test(san)) throw new Error("SAN DNS names must be printable ASCII (IA5String, A-labels)");
  return der.implicitPrimitive(2, new TextEncoder().encode(san));
}

function ipv6Bytes(ip: string): Uint8Array {
  // An embedded IPv4 tail (::ffff:1.2.3.4) is rewritten as its two 16-bit groups.
  const text = ip.replace(/(\d+)\.(\d+)\.(\d+)\.(\d+)$/, (_m, a, b, c, d) =>
    `${((Number(a) << 8) | Number(b)).toString(16)}:${((Number(c) << 8) | Number(d)).toString(16)}`,
  );
  const groups = (part: string | undefined): number[] => (part ? part.split(":").map((g) => parseInt(g, 16)) : []);
  const [head, tail] = text.split("::");
  const left = groups(head);
  const right = groups(tail);
  const fill = tail === undefined ? [] : new Array<number>(8 - left.length - right.length).fill(0);
  const out = new Uint8Array(16);
  [...left, ...fill, ...right].slice(0, 8).forEach((g, i) => {
    out[2 * i] = g >> 8;
    out[2 * i + 1] = g & 0xff;
  });
  return out;
}
