// A minimal DER encoder (ITU-T X.690 §8 and §10), just enough to write X.509 v3
// certificates (RFC 5280 §4.1). Encoding only: parsing is node:crypto's X509Certificate.

export type Der = Uint8Array;

const enc = new TextEncoder();

/** Definite-length form (X.690 §8.1.3): short form below 128, else 0x80|n then n bytes. */
function lengthBytes(n: number): number[] {
  if (n < 0x80) return [n];
  const out: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) out.unshift(v & 0xff);
  return [0x80 | out.length, ...out];
}

export function tlv(tag: number, content: Uint8Array): Der {
  const len = lengthBytes(content.length);
  const out = new Uint8Array(1 + len.length + content.length);
  out[0] = tag;
  out.set(len, 1);
  out.set(content, 1 + len.length);
  return out;
}

export function concat(parts: readonly Uint8Array[]): Uint8Array {
  let size = 0;
  for (const p of parts) size += p.length;
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

export const sequence = (...items: Der[]): Der => tlv(0x30, concat(items));
export const set = (...items: Der[]): Der => tlv(0x31, concat(items));
export const boolean = (v: boolean): Der => tlv(0x01, new Uint8Array([v ? 0xff : 0x00]));
export const octetString = (b: Uint8Array): Der => tlv(0x04, b);
export const utf8String = (s: string): Der => tlv(0x0c, enc.encode(s));
/** Context-specific constructed tag [n] EXPLICIT (X.690 §8.14). */
export const explicit = (n: number, inner: Der): Der => tlv(0xa0 | n, inner);
/** Context-specific primitive tag [n] IMPLICIT over raw content bytes. */
export const implicitPrimitive = (n: number, content: Uint8Array): Der => tlv(0x80 | n, content);

/** INTEGER from unsigned big-endian bytes: minimal, with a 0x00 pad when the top bit is set (§8.3). */
export function unsignedInteger(bytes: Uint8Array): Der {
  let start = 0;
  while (start < bytes.length - 1 && bytes[start] === 0) start++;
  const trimmed = bytes.subarray(start);
  const pad = (trimmed[0] ?? 0) & 0x80 ? [0] : [];
  return tlv(0x02, concat([new Uint8Array(pad), trimmed.length ? trimmed : new Uint8Array([0])]));
}

export const smallInteger = (n: number): Der => unsignedInteger(new Uint8Array([n & 0xff]));

/** OBJECT IDENTIFIER (§8.19): first two arcs as 40*a+b, then base-128 with continuation bits. */
export function oid(dotted: string): Der {
  const arcs = dotted.split(".").map((a) => Number(a));
  const [a = 0, b = 0, ...rest] = arcs;
  const out: number[] = [];
  for (const arc of [40 * a + b, ...rest]) {
    const chunk: number[] = [arc & 0x7f];
    for (let v = Math.floor(arc / 128); v > 0; v = Math.floor(v / 128)) chunk.unshift(0x80 | (v & 0x7f));
    out.push(...chunk);
  }
  return tlv(0x06, new Uint8Array(out));
}

/** BIT STRING (§8.6) over whole bytes (signatures, keys). */
export const bitString = (bytes: Uint8Array): Der => tlv(0x03, concat([new Uint8Array([0]), bytes]));

/**
 * BIT STRING of named bits (RFC 5280 KeyUsage): bit 0 is the top bit of the first byte;
 * DER drops trailing zero bits (X.690 §11.2.2), so the unused-bits count is computed.
 */
export function namedBits(bits: readonly number[]): Der {
  if (bits.length === 0) return tlv(0x03, new Uint8Array([0]));
  const highest = Math.max(...bits);
  const bytes = new Uint8Array(Math.floor(highest / 8) + 1);
  for (const bit of bits) bytes[bit >> 3]! |= 0x80 >> (bit & 7);
  const unused = 7 - (highest & 7);
  return tlv(0x03, concat([new Uint8Array([unused]), bytes]));
}

const two = (n: number): string => String(n).padStart(2, "0");

/** RFC 5280 §4.1.2.5: UTCTime through 2049, GeneralizedTime from 2050, always UTC with seconds. */
export function time(d: Date): Der {
  const y = d.getUTCFullYear();
  const rest = `${two(d.getUTCMonth() + 1)}${two(d.getUTCDate())}${two(d.getUTCHours())}${two(d.getUTCMinutes())}${two(d.getUTCSeconds())}Z`;
  if (y >= 1950 && y < 2050) return tlv(0x17, enc.encode(`${two(y % 100)}${rest}`));
  return tlv(0x18, enc.encode(`${String(y).padStart(4, "0")}${rest}`));
}

export function toPem(label: string, der: Uint8Array): string {
  const b64 = Buffer.from(der).toString("base64");
  const lines = b64.match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join("\n")}\n-----END ${label}-----\n`;
}
