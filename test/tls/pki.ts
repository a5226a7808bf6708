// A test PKI: self-signed or CA-signed server and client certificates, CAs, RSA or ECDSA keys.
// It writes through src/tls/x509.ts (the writer the product's default certificate uses) and
// adds what only tests need: an issuer other than the subject, CA and client-auth usages, RSA
// keys, IP address SANs. Client-certificate authentication (ingress-nginx `auth-tls-*`) would
// bring the chain check into the product; until a product path uses it, it lives here.
import { createHash, createPrivateKey, generateKeyPairSync, X509Certificate, type KeyObject } from "node:crypto";
import { isIP } from "node:net";
import * as der from "../../src/tls/der.ts";
import {
  dnsName,
  distinguishedName,
  ECDSA_SHA256,
  extension,
  OID,
  signCertificate,
  type MintedCertificate,
  type SignatureAlgorithm,
} from "../../src/tls/x509.ts";
import { certificateSubject, spkiKeyBits } from "./der-read.ts";

export type { MintedCertificate } from "../../src/tls/x509.ts";
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
  /** Reuse a key pair (suites and benchmarks mint many certificates). */
  readonly keyPair?: KeyPair;
}

const TEST_OID = {
  sha256WithRSA: "1.2.840.113549.1.1.11",
  authorityKeyId: "2.5.29.35",
  clientAuth: "1.3.6.1.5.5.7.3.2",
} as const;
const EKU_OID: Record<ExtKeyUsage, string> = { serverAuth: OID.serverAuth, clientAuth: TEST_OID.clientAuth };

/** RFC 4055 §5: the parameters of sha256WithRSAEncryption are NULL. */
const RSA_SHA256: SignatureAlgorithm = {
  algorithm: der.sequence(der.oid(TEST_OID.sha256WithRSA), der.tlv(0x05, new Uint8Array(0))),
  hash: "sha256",
};

const DAY_MS = 86_400_000;

export function createCertificate(opts: CertificateOptions): MintedCertificate {
  const pair = opts.keyPair ?? generateKeyPair(opts.keyAlgorithm ?? "ecdsa");
  // RFC 5280 §4.2.1.2 method (1): SHA-1 of the subjectPublicKey bits.
  const spki = new Uint8Array(pair.publicKey.export({ type: "spki", format: "der" }));
  const keyId = new Uint8Array(createHash("sha1").update(spkiKeyBits(spki)).digest());
  const subject = distinguishedName(opts.subjectCN);

  let issuer = subject;
  let issuerKeyId: Uint8Array | null = keyId;
  let signingKey = pair.privateKey;
  if (opts.issuer) {
    const parsed = certificateSubject(new Uint8Array(new X509Certificate(opts.issuer.cert).raw));
    issuer = parsed.subject;
    issuerKeyId = parsed.keyId;
    signingKey = createPrivateKey(opts.issuer.key);
  }
  const notBefore = opts.notBefore ?? new Date(Date.now() - 60_000);
  const certPem = signCertificate({
    subject,
    issuer,
    publicKey: pair.publicKey,
    signingKey,
    signature: signingKey.asymmetricKeyType === "rsa" ? RSA_SHA256 : ECDSA_SHA256,
    notBefore,
    notAfter: opts.notAfter ?? new Date(notBefore.getTime() + 365 * DAY_MS),
    extensions: extensions(opts, pair.publicKey, keyId, issuerKeyId),
  });
  return { certPem, keyPem: pair.privateKey.export({ type: "pkcs8", format: "pem" }).toString() };
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
  if (eku.length > 0) out.push(extension(OID.extKeyUsage, false, der.sequence(...eku.map((u) => der.oid(EKU_OID[u])))));
  const sans = opts.sans ?? [];
  if (sans.length > 0) out.push(extension(OID.subjectAltName, false, der.sequence(...sans.map(generalName))));
  out.push(extension(OID.subjectKeyId, false, der.octetString(keyId)));
  // §4.2.1.1: keyIdentifier [0] IMPLICIT; absent when the issuer has no subjectKeyIdentifier.
  if (issuerKeyId) out.push(extension(TEST_OID.authorityKeyId, false, der.sequence(der.implicitPrimitive(0, issuerKeyId))));
  return out;
}

/** GeneralName: iPAddress [7] OCTET STRING for an IP literal, else dNSName (RFC 5280 §4.2.1.6). */
function generalName(san: string): der.Der {
  const family = isIP(san);
  if (family === 4) return der.implicitPrimitive(7, Uint8Array.from(san.split(".").map(Number)));
  if (family === 6) return der.implicitPrimitive(7, ipv6Bytes(san));
  return dnsName(san);
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
