export { generateKeyPair, createCertificate, type KeyAlgorithm, type ExtKeyUsage, type KeyPair, type CertificateOptions, type MintedCertificate } from "./x509.ts";
export { checkPem, covers, createPemChecker, type PemCheck, type PemChecker } from "./pem.ts";
export { generateDefaultCertificate, pickDefaultCertificate, DEFAULT_CERT_CN, DEFAULT_CERT_SAN, type DefaultCertificate } from "./default-cert.ts";
export { buildTlsEntries, tlsSettingsOptions, validateTlsSettings, type TlsEntries, type TlsEntry, type TlsSettings } from "./sni.ts";
export { createTlsListener, type RotationInfo, type ServeHandler, type TlsListener, type TlsListenerOptions } from "./listener.ts";
