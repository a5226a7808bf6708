// The three escape modes of an --access-log-template variable's value (docs/design.md "The
// access log"), as nginx's ngx_http_log_module escapes a value, in time linear in its bytes:
// a value with nothing to escape (most are) costs one precompiled character-class test and is
// returned as it is; any other is written once, byte by byte, through a 256-entry table into a
// reused buffer, and read back into a string once. A value is at most what the request head
// allowed (large-client-header-buffers, "Request framing and bodies"), so the buffers are
// bounded; one past RETAIN is used once and dropped rather than kept.
import { isUtf8 } from "node:buffer";

/**
 * A character a mode may change: anything but printable ASCII, and `"` or `\` for default and
 * json. A value without one is written as it is.
 */
const CHANGED_QUOTED = /[^\x20\x21\x23-\x5b\x5d-\x7e]/;
const CHANGED = /[^\x20-\x7e]/;
/** A character a header value (Latin-1: one byte per character) cannot hold. */
const WIDE = /[^\x00-\xff]/;

/** Longest escape of one byte: json's `\u00XX`. The output is at most this many times the input. */
const MAX_EXPANSION = 6;
/** Largest scratch buffer kept between values (a bigger one is used once). */
const RETAIN = 1 << 20;

const HEX_UPPER = "0123456789ABCDEF";
const HEX_LOWER = "0123456789abcdef";

/** A byte's escape per mode: `len[b]` bytes at `bytes[b * 6]`, or 0 to write the byte as it is. */
interface Table {
  readonly len: Uint8Array;
  readonly bytes: Uint8Array;
}

function table(escapeOf: (b: number) => string | null): Table {
  const len = new Uint8Array(256);
  const bytes = new Uint8Array(256 * MAX_EXPANSION);
  for (let b = 0; b < 256; b++) {
    const e = escapeOf(b);
    if (e === null) continue;
    len[b] = e.length;
    for (let k = 0; k < e.length; k++) bytes[b * MAX_EXPANSION + k] = e.charCodeAt(k);
  }
  return { len, bytes };
}

const xHH = (b: number): string => `\\x${HEX_UPPER[b >> 4]}${HEX_UPPER[b & 15]}`;
const u00hh = (b: number): string => `\\u00${HEX_LOWER[b >> 4]}${HEX_LOWER[b & 15]}`;

/** ngx_escape_json for one byte below 0x20, `"` or `\`; null for any other. */
function jsonEscapeOf(b: number): string | null {
  switch (b) {
    case 0x22:
      return '\\"';
    case 0x5c:
      return "\\\\";
    case 0x0a:
      return "\\n";
    case 0x0d:
      return "\\r";
    case 0x09:
      return "\\t";
    case 0x08:
      return "\\b";
    case 0x0c:
      return "\\f";
  }
  return b < 0x20 ? u00hh(b) : null;
}

// ngx_http_log_escape (escape=default): `"`, `\`, bytes below 0x20 and from 0x7f as \xHH.
const DEFAULT = table((b) => (b < 0x20 || b >= 0x7f || b === 0x22 || b === 0x5c ? xHH(b) : null));
// escape=json, a value that is not UTF-8: ngx_escape_json, and every byte from 0x7f as \u00xx.
const JSON_BYTES = table((b) => (b >= 0x7f ? u00hh(b) : jsonEscapeOf(b)));
// escape=json, UTF-8 text: ngx_escape_json; DEL as \u007f (the other unsafe characters are
// multi-byte: writeText).
const JSON_TEXT = table((b) => (b === 0x7f ? u00hh(b) : b < 0x80 ? jsonEscapeOf(b) : null));
// escape=none: as is, but control bytes, DEL and (not UTF-8) every byte from 0x80 as \xHH.
const NONE_BYTES = table((b) => (b < 0x20 || b >= 0x7f ? xHH(b) : null));
const NONE_TEXT = table((b) => (b < 0x20 || b === 0x7f ? xHH(b) : null));

/** A reused buffer, first made `least` bytes long, on the first value that needs it. */
interface Scratch {
  buf: Buffer;
  readonly least: number;
}

// Made on the first value that needs them: a process with no template never does.
const input: Scratch = { buf: Buffer.alloc(0), least: 4096 };
const output: Scratch = { buf: Buffer.alloc(0), least: 4096 * MAX_EXPANSION };

/** A buffer of at least `n` bytes: `s`'s if it is long enough, else a new one, kept as `s`'s up to RETAIN. */
function scratch(s: Scratch, n: number): Buffer {
  if (n <= s.buf.length) return s.buf;
  if (n > RETAIN) return Buffer.allocUnsafe(n);
  s.buf = Buffer.allocUnsafe(Math.min(RETAIN, Math.max(n, s.buf.length * 2, s.least)));
  return s.buf;
}

const ENCODER = new TextEncoder();

/**
 * The bytes a value stands for, in a scratch buffer: a header value is Latin-1 (one byte per
 * character); other text UTF-8 (a lone surrogate as U+FFFD's bytes, as TextEncoder writes it).
 */
function bytesOf(s: string): { buf: Buffer; n: number } {
  // As many UTF-8 bytes as characters: ASCII (a native count, ~1 µs for 60 KiB measured), so
  // the scan for a character above 0xFF is spared. The Latin-1 copy is native too, where
  // encodeInto took ~250 µs for 60 KiB of Latin-1 text that is not ASCII.
  if (Buffer.byteLength(s, "utf8") === s.length || !WIDE.test(s)) {
    const buf = scratch(input, s.length);
    return { buf, n: buf.write(s, 0, s.length, "latin1") };
  }
  // At most 3 bytes per UTF-16 unit (a surrogate pair: 4 bytes for 2 units).
  const buf = scratch(input, s.length * 3);
  return { buf, n: ENCODER.encodeInto(s, buf).written };
}

/** Each byte of `src[from..n)` through `t`, from `out[0]`; the bytes written. */
function writeBytes(src: Buffer, from: number, n: number, t: Table, out: Buffer): number {
  const len = t.len;
  const bytes = t.bytes;
  let o = 0;
  for (let i = from; i < n; i++) {
    const b = src[i]!;
    const l = len[b]!;
    if (l === 0) out[o++] = b;
    else {
      // All six of the entry, then only its length counted: no inner loop (the bytes past
      // it are written over next; the buffer holds MAX_EXPANSION per input byte).
      const at = b * MAX_EXPANSION;
      out[o] = bytes[at]!;
      out[o + 1] = bytes[at + 1]!;
      out[o + 2] = bytes[at + 2]!;
      out[o + 3] = bytes[at + 3]!;
      out[o + 4] = bytes[at + 4]!;
      out[o + 5] = bytes[at + 5]!;
      o += l;
    }
  }
  return o;
}

/**
 * Valid UTF-8 through `t` for its single bytes, and the multi-byte characters of the unsafe set
 * (log/access.ts UNSAFE_CHARS: the C1 controls U+0080-U+009F, the line and paragraph
 * separators U+2028/U+2029, the bidi controls U+202A-U+202E and U+2066-U+2069), which no
 * table entry can see, with `json` as \uXXXX, else as each of their bytes' \xHH. A byte-order
 * mark (EF BB BF) is a character like any other, at the start of a value too: nginx copies those
 * bytes as they come (ngx_escape_json escapes only `"`, `\` and bytes below 0x20; escape=none
 * nothing).
 */
function writeText(src: Buffer, n: number, t: Table, json: boolean, out: Buffer): number {
  const len = t.len;
  const bytes = t.bytes;
  let o = 0;
  for (let i = 0; i < n; i++) {
    const b = src[i]!;
    let seq = 0;
    // Valid UTF-8: 0xC2 and 0xE2 are lead bytes here, followed by their continuation bytes
    // (0x80-0xBF, which never equal a lead byte, so they are otherwise copied as they come).
    if (b === 0xc2) {
      if (src[i + 1]! <= 0x9f) seq = 2;
    } else if (b === 0xe2) {
      const c1 = src[i + 1]!;
      const c2 = src[i + 2]!;
      if ((c1 === 0x80 && c2 >= 0xa8 && c2 <= 0xae) || (c1 === 0x81 && c2 >= 0xa6 && c2 <= 0xa9)) seq = 3;
    }
    if (seq !== 0) {
      if (json) {
        const cp = seq === 2 ? src[i + 1]! : 0x2000 | ((src[i + 1]! & 0x3f) << 6) | (src[i + 2]! & 0x3f);
        out[o++] = 0x5c; // \u and four lowercase hex digits
        out[o++] = 0x75;
        for (let shift = 12; shift >= 0; shift -= 4) out[o++] = HEX_LOWER.charCodeAt((cp >> shift) & 15);
      } else {
        for (let k = 0; k < seq; k++) {
          const c = src[i + k]!;
          out[o++] = 0x5c; // \x and two uppercase hex digits
          out[o++] = 0x78;
          out[o++] = HEX_UPPER.charCodeAt(c >> 4);
          out[o++] = HEX_UPPER.charCodeAt(c & 15);
        }
      }
      i += seq - 1;
      continue;
    }
    const l = len[b]!;
    if (l === 0) out[o++] = b;
    else {
      // As writeBytes, written out again on purpose: the same six writes through one shared
      // function measured slower on Bun 1.4.5 (bench/log-escape.ts, escape=default of 60 KiB
      // of UTF-16 text: ~1.8x the time, twice, against this copy), so the hot loop keeps its own.
      const at = b * MAX_EXPANSION;
      out[o] = bytes[at]!;
      out[o + 1] = bytes[at + 1]!;
      out[o + 2] = bytes[at + 2]!;
      out[o + 3] = bytes[at + 3]!;
      out[o + 4] = bytes[at + 4]!;
      out[o + 5] = bytes[at + 5]!;
      o += l;
    }
  }
  return o;
}

/** ngx_http_log_escape (escape=default): `"`, `\`, bytes below 0x20 and from 0x7f as \xHH. */
export function escapeDefault(s: string): string {
  if (!CHANGED_QUOTED.test(s)) return s;
  const { buf, n } = bytesOf(s);
  const out = scratch(output, n * MAX_EXPANSION);
  // Every byte from 0x7f is escaped: the line is ASCII.
  return out.toString("latin1", 0, writeBytes(buf, 0, n, DEFAULT, out));
}

/**
 * ngx_escape_json (escape=json): `"` and `\` with a backslash, \n \r \t \b \f, other bytes below
 * 0x20 as \u00xx; the rest as is. Not UTF-8: every byte from 0x7f as \u00xx; UTF-8 with a
 * character of the unsafe set: \uXXXX, which a JSON reader reads as the same string nginx's
 * line would give where it is valid.
 */
export function escapeJson(s: string): string {
  return escapeWith(s, CHANGED_QUOTED, JSON_BYTES, JSON_TEXT, true);
}

/**
 * escape=none: nginx writes the bytes as they are, line breaks included. Portico still writes
 * control characters, DEL, bytes that are not UTF-8 and the unsafe set as \xHH, so a client
 * cannot end a line or forge the next one (docs/design.md "The access log"). `"` and `\` as is.
 */
export function escapeNone(s: string): string {
  return escapeWith(s, CHANGED, NONE_BYTES, NONE_TEXT, false);
}

/**
 * `s` itself when `changed` finds nothing to escape; else its bytes through `notUtf8` when they
 * are not UTF-8 (the line is then ASCII), or as UTF-8 text through `utf8` (writeText, `json`).
 */
function escapeWith(s: string, changed: RegExp, notUtf8: Table, utf8: Table, json: boolean): string {
  if (!changed.test(s)) return s;
  const { buf, n } = bytesOf(s);
  const out = scratch(output, n * MAX_EXPANSION);
  if (!isUtf8(buf.subarray(0, n))) return out.toString("latin1", 0, writeBytes(buf, 0, n, notUtf8, out));
  return out.toString("utf8", 0, writeText(buf, n, utf8, json, out));
}
