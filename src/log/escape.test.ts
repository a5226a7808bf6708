// The escape modes of log/escape.ts against a reference: the first implementation, which wrote
// each value a byte (or a character) at a time by its definition (docs/design.md "The access
// log": escape=default is ngx_http_log_escape, json ngx_escape_json, none as is, each with
// Portico's additions for bytes that are not UTF-8 and the unsafe characters). The table-driven
// one must give the same string for every value: random values built from the parts that
// steer the escaping, every one- and two-byte value, every character, and long values.
import { describe, expect, test } from "bun:test";
import { UNSAFE_CHARS } from "./access.ts";
import { escapeDefault, escapeJson, escapeNone } from "./escape.ts";
import { seeded } from "../../test/proxy/seeded.ts";

// ---- The reference: the definition, written the slow, obvious way. ----

const HEX = "0123456789ABCDEF";
const hex = "0123456789abcdef";
const UTF8_ENCODER = new TextEncoder();
// ignoreBOM: a leading byte-order mark is text like any other (nginx copies its bytes).
const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const UNSAFE = new RegExp(UNSAFE_CHARS);

function bytesOf(s: string): Uint8Array {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0xff) return UTF8_ENCODER.encode(s);
  return Buffer.from(s, "latin1");
}

function plainAscii(s: string, quotes: boolean): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c >= 0x7f || (quotes && (c === 0x22 || c === 0x5c))) return false;
  }
  return true;
}

function asText(s: string): string | null {
  try {
    return UTF8.decode(bytesOf(s));
  } catch {
    return null;
  }
}

function jsonByte(c: number): string {
  const named: Record<number, string> = { 0x22: '\\"', 0x5c: "\\\\", 0x0a: "\\n", 0x0d: "\\r", 0x09: "\\t", 0x08: "\\b", 0x0c: "\\f" };
  return named[c] ?? `\\u00${hex[c >> 4]}${hex[c & 15]}`;
}

function refDefault(s: string): string {
  if (plainAscii(s, true)) return s;
  let out = "";
  for (const b of bytesOf(s)) out += b < 0x20 || b >= 0x7f || b === 0x22 || b === 0x5c ? `\\x${HEX[b >> 4]}${HEX[b & 15]}` : String.fromCharCode(b);
  return out;
}

function refJson(s: string): string {
  if (plainAscii(s, true)) return s;
  const t = asText(s);
  let out = "";
  if (t === null) {
    for (const b of bytesOf(s)) out += b < 0x20 || b >= 0x7f || b === 0x22 || b === 0x5c ? jsonByte(b) : String.fromCharCode(b);
    return out;
  }
  for (const ch of t) {
    const c = ch.codePointAt(0) as number;
    if (c < 0x20 || c === 0x22 || c === 0x5c) out += jsonByte(c);
    else if (UNSAFE.test(ch)) out += `\\u${c.toString(16).padStart(4, "0")}`;
    else out += ch;
  }
  return out;
}

function refNone(s: string): string {
  if (plainAscii(s, false)) return s;
  const t = asText(s);
  let out = "";
  if (t === null) {
    for (const b of bytesOf(s)) out += b < 0x20 || b >= 0x7f ? `\\x${HEX[b >> 4]}${HEX[b & 15]}` : String.fromCharCode(b);
    return out;
  }
  for (const ch of t) {
    const c = ch.codePointAt(0) as number;
    if (c < 0x20 || UNSAFE.test(ch)) {
      for (const b of UTF8_ENCODER.encode(ch)) out += `\\x${HEX[b >> 4]}${HEX[b & 15]}`;
    } else out += ch;
  }
  return out;
}

const MODES = [
  ["default", escapeDefault, refDefault],
  ["json", escapeJson, refJson],
  ["none", escapeNone, refNone],
] as const;

/** The first value on which `mode` and its reference differ, or null. */
function firstDifference(values: Iterable<string>): { mode: string; value: string; got: string; want: string } | null {
  for (const value of values) {
    for (const [mode, fast, ref] of MODES) {
      const got = fast(value);
      const want = ref(value);
      if (got !== want) return { mode, value, got, want };
    }
  }
  return null;
}

// ---- Values. ----

/** A header value's form of text: its UTF-8 bytes, one character per byte. */
const asBytes = (s: string): string => Buffer.from(s, "utf8").toString("latin1");

// What steers the escaping: ASCII (plain, quotes, controls), the unsafe characters, a BOM,
// multi-byte text, lone surrogates, and byte sequences that are not UTF-8 (a lone
// continuation, truncated leads, overlong forms, an encoded surrogate, past U+10FFFF, bytes
// never in UTF-8).
const CHARS = ["a", "Z", "~", " ", '"', "\\", "\n", "\r", "\t", "\b", "\f", "\0", "\x01", "\x1f", "\x7f", "\x80", "\x85", "\x9f", "\xa0", "\xc2", "\xe2", "\xef", "\xff",
  "é", "€", "😀", "\u0085", "\u009f", "\u00a0", "\u2027", "\u2028", "\u2029", "\u202a", "\u202e", "\u202f", "\u2065", "\u2066", "\u2069", "\u206a", "\ufeff", "\ufffd", "\ud800", "\udbff", "\udc00", "\udfff"];
const BYTE_RUNS = ["\xc2", "\xc2\x80", "\xc2\x9f", "\xc2\xa0", "\xe2\x80\xa8", "\xe2\x80\xae", "\xe2\x80\xaf", "\xe2\x81\xa6", "\xe2\x81\xa9", "\xe2\x81\xaa", "\xe2\x80", "\xef\xbb\xbf",
  "\x80", "\xbf", "\xc0\x80", "\xc1\xbf", "\xe0\x80\x80", "\xe0\x9f\xbf", "\xed\xa0\x80", "\xed\xbf\xbf", "\xf0\x8f\xbf\xbf", "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xf8", "\xfe", "\xff",
  "\xf0\x9f\x98", "\xf0\x9f\x98\x80", "\xe2\x82\xac", "\xc3\xa9", ...["é", "€", "😀", "\u0085", "\u2028", "\u2066"].map(asBytes)];

function* randomValues(count: number, seed: number, wide: boolean): Generator<string> {
  // Seeded, so a failure is the same value on every run.
  const r = seeded(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  for (let i = 0; i < count; i++) {
    let s = "";
    const parts = Math.floor(r() * 12);
    for (let p = 0; p < parts; p++) {
      const k = r();
      if (k < 0.3) s += String.fromCharCode(Math.floor(r() * 256));
      else if (k < 0.55) s += pick(BYTE_RUNS);
      else if (k < 0.7) s += "plain text ";
      else if (wide) s += k < 0.85 ? pick(CHARS) : String.fromCharCode(Math.floor(r() * 0x10000));
      else s += pick(CHARS.filter((c) => c.charCodeAt(0) <= 0xff));
    }
    yield s;
  }
}

describe("the table-driven escaping gives the reference's string", () => {
  test("random header values (one byte per character)", () => {
    expect(firstDifference(randomValues(20_000, 1, false))).toBeNull();
  });

  test("random values with characters above 0xFF, lone surrogates among them", () => {
    expect(firstDifference(randomValues(20_000, 2, true))).toBeNull();
  });

  test("every one- and two-byte value", () => {
    function* pairs(): Generator<string> {
      for (let a = 0; a < 256; a++) {
        yield String.fromCharCode(a);
        for (let b = 0; b < 256; b++) yield String.fromCharCode(a, b);
      }
    }
    expect(firstDifference(pairs())).toBeNull();
  });

  test("every character of the BMP, alone, as its UTF-8 bytes and between text; the unsafe set is the reference's", () => {
    function* chars(): Generator<string> {
      for (let c = 0; c < 0x10000; c++) {
        const ch = String.fromCharCode(c);
        yield ch;
        yield `a"${ch}b`;
        if (c < 0xd800 || c > 0xdfff) yield asBytes(`x${ch}`);
      }
    }
    expect(firstDifference(chars())).toBeNull();
  });

  // ngx_escape_json (src/core/ngx_string.c) escapes only `"`, `\` and bytes below 0x20, and
  // escape=none writes every byte as is: the bytes EF BB BF are kept wherever they are.
  test("a byte-order mark is kept, at the start of a value too, as nginx writes its bytes", () => {
    for (const v of ["\ufeffa", "\ufeff\ufeffa", "a\ufeff", "\xef\xbb\xbf\x01", "\xef\xbb\xbf\xef\xbb\xbf", "\xef\xbb", "\xef\xbb\xbf\xff"]) {
      expect(firstDifference([v])).toBeNull();
    }
    // A header value's bytes (one character per byte) and the same text as UTF-16.
    expect(escapeJson("\xef\xbb\xbf\x01")).toBe("\ufeff\\u0001");
    expect(escapeJson("\xef\xbb\xbf\"")).toBe('\ufeff\\"');
    expect(escapeNone("\xef\xbb\xbf\x01")).toBe("\ufeff\\x01");
    expect(escapeNone("\ufeffa")).toBe("\ufeffa");
    expect(escapeJson("\ufeff\ufeffa")).toBe("\ufeff\ufeffa");
    // escape=default writes every byte from 0x7f as \xHH, the mark's included (unchanged).
    expect(escapeDefault("\xef\xbb\xbfa")).toBe("\\xEF\\xBB\\xBFa");
  });

  test("long values, past the kept buffer too, and a short one after each", () => {
    const values: string[] = [];
    for (const n of [8 * 1024, 60 * 1024, 300 * 1024]) {
      values.push("\x01".repeat(n), "abc\xffdef\x01".repeat(n / 8), asBytes("é€😀\u2028 ").repeat(n / 16), "é€😀\u2028\x01 ".repeat(n / 8), "plain".repeat(n / 5) + "\n", "\u00e9\x01");
    }
    expect(firstDifference(values)).toBeNull();
  });

  test("a string already returned is not changed by the next value", () => {
    const first = escapeNone("\x01a\x02");
    escapeNone("\x03".repeat(4096));
    escapeJson("\xff".repeat(4096));
    expect(first).toBe("\\x01a\\x02");
  });

  test("a value with nothing to escape is returned as it is", () => {
    const v = 'Mozilla/5.0 (X11; Linux x86_64) "q" \\'.repeat(100);
    expect(escapeNone(v)).toBe(v);
    const plain = "Mozilla/5.0 (X11; Linux x86_64)".repeat(100);
    expect(escapeDefault(plain)).toBe(plain);
    expect(escapeJson(plain)).toBe(plain);
  });
});
