// Just enough DER reading (X.690 §8.1) for the test PKI (pki.ts) to lift exact byte ranges out
// of a CA certificate: its subject Name (copied verbatim so chain building matches
// byte-for-byte) and its subjectKeyIdentifier. Everything else is parsed by node:crypto's
// X509Certificate.

export interface Node {
  readonly tag: number;
  /** The whole TLV. */
  readonly raw: Uint8Array;
  /** The value bytes. */
  readonly value: Uint8Array;
}

export function readNode(buf: Uint8Array, at = 0): Node {
  const tag = buf[at];
  let lenByte = buf[at + 1];
  if (tag === undefined || lenByte === undefined) throw new Error("DER: truncated header");
  let pos = at + 2;
  let len = lenByte;
  if (lenByte & 0x80) {
    const n = lenByte & 0x7f;
    if (n === 0 || n > 4) throw new Error("DER: unsupported length");
    len = 0;
    for (let i = 0; i < n; i++) {
      lenByte = buf[pos++];
      if (lenByte === undefined) throw new Error("DER: truncated length");
      len = len * 256 + lenByte;
    }
  }
  if (pos + len > buf.length) throw new Error("DER: truncated value");
  return { tag, raw: buf.subarray(at, pos + len), value: buf.subarray(pos, pos + len) };
}

export function children(node: Node): Node[] {
  const out: Node[] = [];
  for (let at = 0; at < node.value.length; ) {
    const child = readNode(node.value, at);
    out.push(child);
    at += child.raw.length;
  }
  return out;
}

const SKI_OID = Uint8Array.from([0x55, 0x1d, 0x0e]); // 2.5.29.14

/** subject Name and subjectKeyIdentifier (if present) of a DER certificate (RFC 5280 §4.1). */
export function certificateSubject(der: Uint8Array): { subject: Uint8Array; keyId: Uint8Array | null } {
  const [tbs] = children(readNode(der));
  if (!tbs) throw new Error("DER: no tbsCertificate");
  const fields = children(tbs);
  // version is [0] EXPLICIT and optional (v1 certificates omit it).
  const offset = fields[0]?.tag === 0xa0 ? 1 : 0;
  const subject = fields[offset + 4];
  if (!subject) throw new Error("DER: no subject");
  let keyId: Uint8Array | null = null;
  const extsWrapper = fields.find((f) => f.tag === 0xa3);
  const exts = extsWrapper ? children(extsWrapper)[0] : undefined;
  for (const ext of exts ? children(exts) : []) {
    const parts = children(ext);
    const id = parts[0];
    const value = parts[parts.length - 1];
    if (id && value && id.value.length === 3 && id.value.every((b, i) => b === SKI_OID[i])) {
      keyId = readNode(value.value).value; // extnValue OCTET STRING wraps KeyIdentifier OCTET STRING
    }
  }
  return { subject: subject.raw, keyId };
}

/** The subjectPublicKey BIT STRING bytes of an SPKI (RFC 5280 §4.2.1.2 hashes these). */
export function spkiKeyBits(spki: Uint8Array): Uint8Array {
  const bits = children(readNode(spki))[1];
  if (!bits) throw new Error("DER: no subjectPublicKey");
  return bits.value.subarray(1); // skip the unused-bits count
}
