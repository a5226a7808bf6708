export { createPemChecker } from "./pem.ts";
export { generateDefaultCertificate } from "./default-cert.ts";
export { buildTlsEntries } from "./sni.ts";
export { createTlsListener, type ServeHandler } from "./listener.ts";
