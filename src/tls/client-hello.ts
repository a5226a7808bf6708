// The server name a TLS client asks for, read from its first bytes before any TLS library sees
// them: --enable-ssl-passthrough chooses by it between passing the connection through
// untouched and terminating it (serving/passthrough.ts, docs/design.md "SSL passthrough").
//
// The bytes come from anyone on the internet, so every length is checked against the bytes
// present before it is used, nothing is allocated from a length field, and the whole message is
// bounded by MAX_HELLO_BYTES. The parser is pure: the caller owns the timeout.
//
// Layout (RFC 8446 §5.1 records, §4 handshake, §4.1.2 ClientHello; RFC 5246 §7.4.1.2 for 1.2,
// whose ClientHello may end without extensions; RFC 6066 §3 server_name):
//   record:      type(1)=22 handshake, legacy_version(2), length(2), fragment
//   handshake:   msg_type(1)=1 client_hello, length(3), body (may span several records)
//   ClientHello: legacy_version(2), random(32), session_id<0..32>, cipher_suites<2..2^16-2>,
//                compression_methods<1..2^8-1>, extensions<8..2^16-1> (absent in old clients)
//   extension:   type(2), length(2), data; server_name is type 0
//   server_name: ServerNameList<1..2^16-1> of name_type(1) + HostName<1..2^16-1>; host_name is 0

/** Largest ClientHello handshake message read (ingress-nginx's Go proxy reads 16384 bytes). */
export const MAX_HELLO_BYTES = 16_384;
/** Largest TLSPlaintext fragment (RFC 8446 §5.1). */
const MAX_FRAGMENT = 16_384;
/**
 * Most bytes held while waiting for a whole ClientHello, record headers included: room for one
 * of MAX_HELLO_BYTES in a few records. A client that needs more (thousands of tiny records) is
 * refused: the caller closes the connection once `need` passes this.
 */
export const MAX_BUFFERED_BYTES = 24 * 1024;

export type HelloResult =
  /** Not complete yet: nothing is decided before `need` bytes in total have arrived. */
  | { readonly kind: "more"; readonly need: number }
  /** A whole ClientHello: its host_name (lowercased, no trailing dot), or null when it names none. */
  | { readonly kind: "hello"; readonly serverName: string | null }
  /** The first byte is not a TLS handshake record: not TLS at all (plain HTTP, for one). */
  | { readonly kind: "not-tls" }
  /** TLS framing that no conforming client sends, or a ClientHello over the bound. */
  | { readonly kind: "invalid"; readonly reason: string };

const HANDSHAKE = 22;
const CLIENT_HELLO = 1;
const EXT_SERVER_NAME = 0;
const HOST_NAME = 0;

function invalid(reason: string): HelloResult {
  return { kind: "invalid", reason };
}

/**
 * Reads `buf` (every byte received so far) as the records that carry a ClientHello. Call it
 * again with more bytes when it answers "more"; it starts over each time, so call it only once
 * `need` bytes are there: each call walks every record so far, and `need` keeps the number of
 * calls small.
 */
export function parseClientHello(buf: Uint8Array): HelloResult {
  if (buf.length === 0) return { kind: "more", need: 1 };
  if (buf[0] !== HANDSHAKE) return { kind: "not-tls" };
  // The handshake message, gathered from the fragments of consecutive records (RFC 8446 §5.1:
  // a handshake message may be split across records; the records may not interleave others).
  const msg = new Uint8Array(Math.min(buf.length, MAX_HELLO_BYTES + 4));
  let msgLen = 0;
  let at = 0;
  // The message bytes still missing: the handshake header's 4 until it is in, then its body's.
  // `need` is the fewest bytes in which the whole ClientHello could have come (every missing
  // byte, and a record header for each record not yet begun), never just the next record: a
  // caller calls again only once that many are in, and each call walks every record so far, so
  // a client sending one-byte records a byte at a time would otherwise have it called once or
  // twice per byte, quadratic in the bytes held (24 KiB of them cost about a second of CPU).
  const missing = () => (msgLen < 4 ? 4 - msgLen : 4 + readBodyLen(msg) - msgLen);
  for (;;) {
    if (buf.length < at + 5) return { kind: "more", need: at + 5 + missing() };
    if (buf[at] !== HANDSHAKE) return invalid("a record that is not a handshake record arrived before the ClientHello was complete");
    // legacy_version: 0x03 0x00..0x04 (SSL 3.0 to the TLS 1.3 value); anything else is not TLS.
    if (buf[at + 1] !== 3 || (buf[at + 2] as number) > 4) return invalid("unknown record version");
    const len = ((buf[at + 3] as number) << 8) | (buf[at + 4] as number);
    // RFC 8446 §5.1: handshake records are never empty, and never longer than 2^14.
    if (len === 0 || len > MAX_FRAGMENT) return invalid("record length out of range");
    if (buf.length < at + 5 + len) {
      // This record's bytes, and when they cannot finish the message, another record's at least.
      const rest = missing() - len;
      return { kind: "more", need: at + 5 + len + (rest > 0 ? 5 + rest : 0) };
    }
    const take = Math.min(len, msg.length - msgLen);
    msg.set(buf.subarray(at + 5, at + 5 + take), msgLen);
    msgLen += take;
    at += 5 + len;
    if (msgLen >= 4) {
      if (msg[0] !== CLIENT_HELLO) return invalid("the first handshake message is not a ClientHello");
      const bodyLen = readBodyLen(msg);
      if (bodyLen > MAX_HELLO_BYTES) return invalid(`ClientHello longer than ${MAX_HELLO_BYTES} bytes`);
      if (msgLen >= 4 + bodyLen) return readHello(msg.subarray(4, 4 + bodyLen));
    }
    if (take < len) return invalid(`ClientHello longer than ${MAX_HELLO_BYTES} bytes`);
  }
}

/** The handshake message's body length (RFC 8446 §4: uint24 after msg_type); msg holds 4 bytes or more. */
function readBodyLen(msg: Uint8Array): number {
  return ((msg[1] as number) << 16) | ((msg[2] as number) << 8) | (msg[3] as number);
}

/** A bounded reader: every read checks the bytes left first, and a failed read sticks. */
class Cursor {
  at = 0;
  ok = true;
  constructor(private readonly b: Uint8Array) {}
  get left(): number {
    return this.b.length - this.at;
  }
  u8(): number {
    if (this.left < 1) return this.fail();
    return this.b[this.at++] as number;
  }
  u16(): number {
    if (this.left < 2) return this.fail();
    const v = ((this.b[this.at] as number) << 8) | (this.b[this.at + 1] as number);
    this.at += 2;
    return v;
  }
  /** The next n bytes as their own cursor (empty and failed when fewer are left). */
  sub(n: number): Cursor {
    if (this.left < n) {
      this.fail();
      return new Cursor(new Uint8Array(0));
    }
    const c = new Cursor(this.b.subarray(this.at, this.at + n));
    this.at += n;
    return c;
  }
  skip(n: number): void {
    if (this.left < n) this.fail();
    else this.at += n;
  }
  bytes(): Uint8Array {
    return this.b.subarray(this.at);
  }
  private fail(): number {
    this.ok = false;
    this.at = this.b.length;
    return 0;
  }
}

function readHello(body: Uint8Array): HelloResult {
  const c = new Cursor(body);
  c.skip(2 + 32); // legacy_version, random
  const sessionIdLen = c.u8();
  if (sessionIdLen > 32) return invalid("session_id longer than 32 bytes");
  c.skip(sessionIdLen);
  const suitesLen = c.u16();
  if (suitesLen < 2 || suitesLen % 2 !== 0) return invalid("malformed cipher_suites");
  c.skip(suitesLen);
  const compressionLen = c.u8();
  if (compressionLen < 1) return invalid("malformed compression_methods");
  c.skip(compressionLen);
  if (!c.ok) return invalid("truncated ClientHello");
  // RFC 5246 §7.4.1.2: a ClientHello may end here, without extensions (and so without SNI).
  if (c.left === 0) return { kind: "hello", serverName: null };
  const exts = c.sub(c.u16());
  if (!c.ok || c.left !== 0) return invalid("extensions length does not match the ClientHello");
  let serverName: string | null = null;
  let seen = false;
  while (exts.left > 0) {
    const type = exts.u16();
    const data = exts.sub(exts.u16());
    if (!exts.ok) return invalid("truncated extension");
    if (type !== EXT_SERVER_NAME) continue;
    // RFC 8446 §4.2: no extension type appears twice in one message.
    if (seen) return invalid("server_name sent twice");
    seen = true;
    const r = readServerName(data);
    if (r === undefined) return invalid("malformed server_name extension");
    serverName = r;
  }
  return { kind: "hello", serverName };
}

/** RFC 6066 §3: the host_name entry, or null when none is usable; undefined when malformed. */
function readServerName(data: Cursor): string | null | undefined {
  const list = data.sub(data.u16());
  if (!data.ok || data.left !== 0 || list.left === 0) return undefined;
  let name: string | null = null;
  while (list.left > 0) {
    const type = list.u8();
    const value = list.sub(list.u16());
    if (!list.ok) return undefined;
    // "The ServerNameList MUST NOT contain more than one name of the same name_type."
    if (type !== HOST_NAME || name !== null) continue;
    name = hostName(value.bytes());
  }
  return name;
}

/**
 * "HostName" is a DNS name in ASCII, without a trailing dot (RFC 6066 §3). Anything else (a
 * byte outside letters, digits, `-`, `.`, `_`, an empty label, more than 253 bytes) names no
 * host Portico could have a route for: null, and the connection is terminated as one without SNI.
 */
function hostName(b: Uint8Array): string | null {
  if (b.length === 0 || b.length > 253) return null;
  let s = "";
  let labelLen = 0;
  for (let i = 0; i < b.length; i++) {
    let ch = b[i] as number;
    if (ch === 0x2e) {
      if (labelLen === 0) return null;
      labelLen = 0;
    } else {
      const ok = (ch >= 0x61 && ch <= 0x7a) || (ch >= 0x41 && ch <= 0x5a) || (ch >= 0x30 && ch <= 0x39) || ch === 0x2d || ch === 0x5f;
      if (!ok || ++labelLen > 63) return null;
      if (ch >= 0x41 && ch <= 0x5a) ch += 0x20;
    }
    s += String.fromCharCode(ch);
  }
  return labelLen === 0 ? null : s;
}
