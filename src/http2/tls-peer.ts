// The client's TLS facts the proxy handler's client-certificate check needs (kinds/client-cert.ts),
// read from a node:tls socket: the SNI it sent and the certificates it presented.
import { X509Certificate } from "node:crypto";
import type { TLSSocket } from "node:tls";
import type { ConnectionTls } from "../kinds/types.ts";

interface PeerCert {
  readonly raw?: Buffer;
  readonly issuerCertificate?: PeerCert;
}

/**
 * SNI and the client's certificates, leaf first, in the order getPeerCertificate(true) links
 * them (Bun 1.4.5: the certificates the client sent, each followed by its issuer among them).
 * Null when `socket` is not a TLS socket. A certificate that does not parse ends the list:
 * what follows cannot be read, and an incomplete chain only fails verification.
 */
export function connectionTls(socket: unknown): ConnectionTls | null {
  const s = socket as Partial<TLSSocket> | null | undefined;
  if (s === null || s === undefined || typeof s.getPeerCertificate !== "function") return null;
  const sni = (s as { servername?: unknown }).servername;
  const servername = typeof sni === "string" && sni !== "" ? sni : null;
  const chain: X509Certificate[] = [];
  let c: PeerCert | undefined;
  try {
    c = s.getPeerCertificate(true) as PeerCert;
  } catch {
    c = undefined;
  }
  const seen = new Set<PeerCert>();
  while (c !== undefined && c.raw instanceof Uint8Array && !seen.has(c) && chain.length < 16) {
    seen.add(c);
    try {
      chain.push(new X509Certificate(c.raw));
    } catch {
      break;
    }
    c = c.issuerCertificate;
  }
  return { servername, chain };
}
