// A raw HTTP/2 client that writes frames by hand (RFC 9113 §4, HPACK literals from RFC 7541
// §6.2.2), for what no well-behaved client sends: reset floods, header floods, CONTINUATION
// floods. It reads back every frame the server sends.
import net from "node:net";
import tls from "node:tls";

export const FRAME = { DATA: 0, HEADERS: 1, RST_STREAM: 3, SETTINGS: 4, PING: 6, GOAWAY: 7, WINDOW_UPDATE: 8, CONTINUATION: 9 } as const;
const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

export function frame(type: number, flags: number, stream: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const h = Buffer.alloc(9);
  h.writeUIntBE(payload.length, 0, 3);
  h[3] = type;
  h[4] = flags;
  h.writeUInt32BE(stream & 0x7fffffff, 5);
  return Buffer.concat([h, payload]);
}

// RFC 7541 §5.1 integer with an N-bit prefix.
function int(v: number, prefix: number, first: number): number[] {
  const max = (1 << prefix) - 1;
  if (v < max) return [first | v];
  const out = [first | max];
  v -= max;
  while (v >= 128) {
    out.push((v % 128) + 128);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return out;
}

/** Literal header fields without indexing, new names, no Huffman (RFC 7541 §6.2.2). */
export function hpack(fields: ReadonlyArray<readonly [string, string]>): Buffer {
  const out: number[] = [];
  for (const [k, v] of fields) {
    const kb = Buffer.from(k);
    const vb = Buffer.from(v);
    out.push(0x00, ...int(kb.length, 7, 0), ...kb, ...int(vb.length, 7, 0), ...vb);
  }
  return Buffer.from(out);
}

export function headersFrame(id: number, fields: ReadonlyArray<readonly [string, string]>, o: { endStream?: boolean; endHeaders?: boolean } = {}): Buffer {
  return frame(FRAME.HEADERS, (o.endStream ?? true ? 1 : 0) | (o.endHeaders ?? true ? 4 : 0), id, hpack(fields));
}

/** A header block split into HEADERS + CONTINUATION frames of at most 16,384 bytes (RFC 9113 §4.2, §6.10). */
export function headerBlock(id: number, fields: ReadonlyArray<readonly [string, string]>): Buffer {
  const block = hpack(fields);
  const out: Buffer[] = [];
  for (let at = 0; at < block.length; at += 16_384) {
    const part = block.subarray(at, at + 16_384);
    const last = at + 16_384 >= block.length;
    out.push(at === 0 ? frame(FRAME.HEADERS, 1 | (last ? 4 : 0), id, part) : frame(FRAME.CONTINUATION, last ? 4 : 0, id, part));
  }
  return Buffer.concat(out);
}

export function rstFrame(id: number, code = 8): Buffer {
  const p = Buffer.alloc(4);
  p.writeUInt32BE(code);
  return frame(FRAME.RST_STREAM, 0, id, p);
}

export interface Frame {
  readonly type: number;
  readonly flags: number;
  readonly id: number;
  readonly payload: Buffer;
}

export interface RawH2 {
  write(b: Buffer): void;
  readonly frames: Frame[];
  readonly closed: boolean;
  /** GOAWAY error code received, or null. */
  goaway(): number | null;
  /** RST_STREAM error codes received, by stream. */
  resets(): Map<number, number>;
  close(): void;
}

/** Connect with ALPN h2, send the preface and an empty SETTINGS. */
export function rawH2(port: number, servername = "localhost"): Promise<RawH2> {
  return rawSession(port, servername, false);
}

/** h2c with prior knowledge (RFC 9113 §3.3): the preface and an empty SETTINGS on plain TCP. */
export function rawH2c(port: number): Promise<RawH2> {
  return rawSession(port, "", true);
}

function rawSession(port: number, servername: string, cleartext: boolean): Promise<RawH2> {
  return new Promise((resolve, reject) => {
    const frames: Frame[] = [];
    let buf = Buffer.alloc(0);
    let closed = false;
    const ready = () => {
      if (!cleartext && (s as tls.TLSSocket).alpnProtocol !== "h2") return reject(new Error(`ALPN gave ${(s as tls.TLSSocket).alpnProtocol}`));
      s.write(Buffer.concat([PREFACE, frame(FRAME.SETTINGS, 0, 0)]));
      resolve({
        write: (b) => {
          if (!closed) s.write(b);
        },
        frames,
        get closed() {
          return closed;
        },
        goaway: () => {
          const g = frames.find((f) => f.type === FRAME.GOAWAY);
          return g === undefined ? null : g.payload.readUInt32BE(4);
        },
        resets: () => new Map(frames.filter((f) => f.type === FRAME.RST_STREAM).map((f) => [f.id, f.payload.readUInt32BE(0)])),
        close: () => s.destroy(),
      });
    };
    const s: net.Socket = cleartext
      ? net.connect(port, "127.0.0.1", ready)
      : tls.connect({ host: "127.0.0.1", port, ALPNProtocols: ["h2"], rejectUnauthorized: false, servername }, ready);
    s.on("data", (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      while (buf.length >= 9) {
        const len = buf.readUIntBE(0, 3);
        if (buf.length < 9 + len) break;
        frames.push({ type: buf[3]!, flags: buf[4]!, id: buf.readUInt32BE(5) & 0x7fffffff, payload: buf.subarray(9, 9 + len) });
        buf = buf.subarray(9 + len);
      }
    });
    s.on("close", () => (closed = true));
    s.on("error", (e) => {
      closed = true;
      reject(e);
    });
  });
}

