// Reading the WebSocket frames a raw pod or client logged, for tests of the tunnel.

export interface Frame {
  readonly op: number;
  /** The unmasked payload. */
  readonly bytes: Buffer;
  /** The same payload, one character per byte. */
  readonly payload: string;
}

/**
 * The whole frames at the start of `bytes`, masked (a client's) or not (a server's), unmasked
 * (RFC 6455 §5.2 base framing, §5.3 masking); reading stops at the first incomplete frame.
 */
export function framesOf(bytes: Buffer): Frame[] {
  const out: Frame[] = [];
  let i = 0;
  while (i + 2 <= bytes.length) {
    const op = bytes[i]! & 0x0f;
    let len = bytes[i + 1]! & 0x7f;
    const masked = (bytes[i + 1]! & 0x80) !== 0;
    let at = i + 2;
    if (len === 126) { len = bytes.readUInt16BE(at); at += 2; }
    else if (len === 127) { len = Number(bytes.readBigUInt64BE(at)); at += 8; }
    const mask = masked ? bytes.subarray(at, at + 4) : null;
    if (mask) at += 4;
    if (at + len > bytes.length) break;
    const payload = Buffer.from(bytes.subarray(at, at + len));
    if (mask) for (let k = 0; k < payload.length; k++) payload[k]! ^= mask[k % 4]!;
    out.push({ op, bytes: payload, payload: payload.toString("latin1") });
    i = at + len;
  }
  return out;
}

/** The status code of the first Close frame in `bytes` (RFC 6455 §5.5.1); null without one, or with an empty one. */
export function closeCode(bytes: Buffer): number | null {
  const close = framesOf(bytes).find((f) => f.op === 0x8);
  return close !== undefined && close.bytes.length >= 2 ? close.bytes.readUInt16BE(0) : null;
}
