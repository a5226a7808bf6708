// The password hashes nginx's auth_basic accepts (policy/htpasswd.ts lists them and why),
// computed here and compared in constant time. Each function computes what nginx's
// ngx_crypt() (for `$apr1$`, `{PLAIN}`, `{SSHA}`, `{SHA}`) or musl's crypt() (for `$1$`, `$5$`,
// `$6$`, DES) returns for (password, stored hash), so a password matches exactly when nginx
// would say it does: the whole recomputed string must equal the stored one. bcrypt is
// Bun.password.verify; the other formats with rounds run on proxy/crypt/hash-pool.ts's threads.
// Written from the published algorithms: Poul-Henning Kamp's MD5-crypt, Ulrich Drepper's
// "Unix crypt using SHA-256 and SHA-512", FIPS 46-3 DES with the crypt(3) salt and key
// conventions.
import { createHash, timingSafeEqual } from "node:crypto";
import type { HashFormat } from "../../policy/htpasswd.ts";
import { hashOffLoop, type OffloadedFormat } from "./hash-pool.ts";

const ITOA64 = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** `n` characters of crypt's base64 for the low bits of `v`, least significant first. */
function to64(v: number, n: number): string {
  let out = "";
  for (let i = 0; i < n; i++) {
    out += ITOA64[v & 0x3f];
    v >>>= 6;
  }
  return out;
}

const latin1 = (s: string): Buffer => Buffer.from(s, "latin1");

function digest(algorithm: "md5" | "sha1" | "sha256" | "sha512", ...parts: Uint8Array[]): Buffer {
  const h = createHash(algorithm);
  for (const p of parts) h.update(p);
  return h.digest();
}

/** MD5-crypt with magic `$1$` (musl) or `$apr1$` (Apache's, as nginx computes it). */
export function md5Crypt(password: Uint8Array, stored: string, magic: "$1$" | "$apr1$"): string {
  // The salt: up to 8 characters after the magic, ending at a `$`.
  const rest = stored.slice(magic.length);
  let saltLen = 0;
  while (saltLen < 8 && saltLen < rest.length && rest[saltLen] !== "$") saltLen++;
  const salt = latin1(rest.slice(0, saltLen));
  const key = password;
  const alt = digest("md5", key, salt, key);
  const ctx = createHash("md5");
  ctx.update(key);
  ctx.update(latin1(magic));
  ctx.update(salt);
  for (let n = key.length; n > 0; n -= 16) ctx.update(alt.subarray(0, Math.min(n, 16)));
  // One byte per bit of the key's length: a zero byte for a 1 bit, the key's first byte for a 0.
  const zero = Buffer.alloc(1);
  for (let n = key.length; n > 0; n >>>= 1) ctx.update(n & 1 ? zero : key.subarray(0, 1));
  let fin = ctx.digest();
  for (let i = 0; i < 1000; i++) {
    const c = createHash("md5");
    c.update(i & 1 ? key : fin);
    if (i % 3) c.update(salt);
    if (i % 7) c.update(key);
    c.update(i & 1 ? fin : key);
    fin = c.digest();
  }
  const f = fin;
  const out =
    to64((f[0]! << 16) | (f[6]! << 8) | f[12]!, 4) +
    to64((f[1]! << 16) | (f[7]! << 8) | f[13]!, 4) +
    to64((f[2]! << 16) | (f[8]! << 8) | f[14]!, 4) +
    to64((f[3]! << 16) | (f[9]! << 8) | f[15]!, 4) +
    to64((f[4]! << 16) | (f[10]! << 8) | f[5]!, 4) +
    to64(f[11]!, 2);
  return `${magic}${salt.toString("latin1")}$${out}`;
}

// The byte order of the SHA-crypt output, three bytes per four characters (Drepper's spec).
const SHA256_ORDER = [[0, 10, 20], [21, 1, 11], [12, 22, 2], [3, 13, 23], [24, 4, 14], [15, 25, 5], [6, 16, 26], [27, 7, 17], [18, 28, 8], [9, 19, 29]] as const;
const SHA512_ORDER = [
  [0, 21, 42], [22, 43, 1], [44, 2, 23], [3, 24, 45], [25, 46, 4], [47, 5, 26], [6, 27, 48], [28, 49, 7], [50, 8, 29], [9, 30, 51], [31, 52, 10],
  [53, 11, 32], [12, 33, 54], [34, 55, 13], [56, 14, 35], [15, 36, 57], [37, 58, 16], [59, 17, 38], [18, 39, 60], [40, 61, 19], [62, 20, 41],
] as const;

/** musl's limits: a longer key, or more rounds, makes crypt() fail (no match). */
const SHA_KEY_MAX = 256;
const SHA_ROUNDS_MIN = 1000;
const SHA_ROUNDS_MAX = 9_999_999;

/** `n` bytes of `src` repeated. */
function repeatTo(src: Buffer, n: number): Buffer {
  const out = Buffer.alloc(n);
  for (let i = 0; i < n; i += src.length) src.copy(out, i, 0, Math.min(src.length, n - i));
  return out;
}

/**
 * SHA-crypt (`$5$`, `$6$`) as musl computes it, or null where musl's crypt() fails (a key over
 * 256 bytes, a malformed or too large `rounds=`, a `:` or LF in the salt): no password matches.
 */
export function shaCrypt(password: Uint8Array, stored: string, bits: 256 | 512): string | null {
  const alg = bits === 256 ? "sha256" : "sha512";
  const size = bits / 8;
  const key = Buffer.from(password);
  if (key.length > SHA_KEY_MAX) return null;
  let rest = stored.slice(3);
  let rounds = 5000;
  let roundsText = "";
  if (rest.startsWith("rounds=")) {
    const m = /^rounds=(\d+)\$/.exec(rest);
    if (m === null) return null;
    const asked = Number(m[1]);
    if (asked > SHA_ROUNDS_MAX) return null;
    rounds = Math.max(asked, SHA_ROUNDS_MIN);
    // Spelled as computed, so a zero-padded or too small count no longer equals the stored hash.
    roundsText = `rounds=${rounds}$`;
    rest = rest.slice(m[0].length);
  }
  let saltLen = 0;
  while (saltLen < 16 && saltLen < rest.length && rest[saltLen] !== "$") {
    if (rest[saltLen] === ":" || rest[saltLen] === "\n") return null;
    saltLen++;
  }
  const salt = latin1(rest.slice(0, saltLen));

  const b = digest(alg, key, salt, key);
  const a = createHash(alg);
  a.update(key);
  a.update(salt);
  let n = key.length;
  for (; n > size; n -= size) a.update(b);
  a.update(b.subarray(0, n));
  for (n = key.length; n > 0; n >>>= 1) a.update(n & 1 ? b : key);
  let c = a.digest();
  const dp = createHash(alg);
  for (let i = 0; i < key.length; i++) dp.update(key);
  const p = repeatTo(dp.digest(), key.length);
  const ds = createHash(alg);
  for (let i = 0; i < 16 + c[0]!; i++) ds.update(salt);
  const s = repeatTo(ds.digest(), salt.length);
  for (let i = 0; i < rounds; i++) {
    const h = createHash(alg);
    h.update(i & 1 ? p : c);
    if (i % 3) h.update(s);
    if (i % 7) h.update(p);
    h.update(i & 1 ? c : p);
    c = h.digest();
  }
  let out = "";
  for (const [x, y, z] of bits === 256 ? SHA256_ORDER : SHA512_ORDER) out += to64((c[x]! << 16) | (c[y]! << 8) | c[z]!, 4);
  out += bits === 256 ? to64((c[31]! << 8) | c[30]!, 3) : to64(c[63]!, 2);
  return `$${bits === 256 ? 5 : 6}$${roundsText}${salt.toString("latin1")}$${out}`;
}

/** `{SHA}` base64(SHA-1(password)), as nginx computes it. */
export function sha1Hash(password: Uint8Array): string {
  return `{SHA}${digest("sha1", password).toString("base64")}`;
}

/**
 * `{SSHA}` base64(SHA-1(password + salt) + salt), the salt being what follows the first 20
 * decoded bytes; as nginx does, an undecodable or short value leaves no salt (so no match).
 */
export function sshaHash(password: Uint8Array, stored: string): string {
  const encoded = stored.slice(6);
  const valid = /^[A-Za-z0-9+/]*={0,2}$/.test(encoded) && encoded.length % 4 !== 1;
  const decoded = valid ? Buffer.from(encoded, "base64") : Buffer.alloc(0);
  const salt = decoded.length >= 20 ? decoded.subarray(20) : Buffer.alloc(0);
  return `{SSHA}${Buffer.concat([digest("sha1", password, salt), salt]).toString("base64")}`;
}

// ---- DES crypt(3) ----------------------------------------------------------------------
// FIPS 46-3 tables, 1-based bit numbers as the standard prints them.
const IP = [58, 50, 42, 34, 26, 18, 10, 2, 60, 52, 44, 36, 28, 20, 12, 4, 62, 54, 46, 38, 30, 22, 14, 6, 64, 56, 48, 40, 32, 24, 16, 8, 57, 49, 41, 33, 25, 17, 9, 1, 59, 51, 43, 35, 27, 19, 11, 3, 61, 53, 45, 37, 29, 21, 13, 5, 63, 55, 47, 39, 31, 23, 15, 7];
const FP = [40, 8, 48, 16, 56, 24, 64, 32, 39, 7, 47, 15, 55, 23, 63, 31, 38, 6, 46, 14, 54, 22, 62, 30, 37, 5, 45, 13, 53, 21, 61, 29, 36, 4, 44, 12, 52, 20, 60, 28, 35, 3, 43, 11, 51, 19, 59, 27, 34, 2, 42, 10, 50, 18, 58, 26, 33, 1, 41, 9, 49, 17, 57, 25];
const E = [32, 1, 2, 3, 4, 5, 4, 5, 6, 7, 8, 9, 8, 9, 10, 11, 12, 13, 12, 13, 14, 15, 16, 17, 16, 17, 18, 19, 20, 21, 20, 21, 22, 23, 24, 25, 24, 25, 26, 27, 28, 29, 28, 29, 30, 31, 32, 1];
const P = [16, 7, 20, 21, 29, 12, 28, 17, 1, 15, 23, 26, 5, 18, 31, 10, 2, 8, 24, 14, 32, 27, 3, 9, 19, 13, 30, 6, 22, 11, 4, 25];
const PC1 = [57, 49, 41, 33, 25, 17, 9, 1, 58, 50, 42, 34, 26, 18, 10, 2, 59, 51, 43, 35, 27, 19, 11, 3, 60, 52, 44, 36, 63, 55, 47, 39, 31, 23, 15, 7, 62, 54, 46, 38, 30, 22, 14, 6, 61, 53, 45, 37, 29, 21, 13, 5, 28, 20, 12, 4];
const PC2 = [14, 17, 11, 24, 1, 5, 3, 28, 15, 6, 21, 10, 23, 19, 12, 4, 26, 8, 16, 7, 27, 20, 13, 2, 41, 52, 31, 37, 47, 55, 30, 40, 51, 45, 33, 48, 44, 49, 39, 56, 34, 53, 46, 42, 50, 36, 29, 32];
const SHIFTS = [1, 1, 2, 2, 2, 2, 2, 2, 1, 2, 2, 2, 2, 2, 2, 1];
const S = [
  [14, 4, 13, 1, 2, 15, 11, 8, 3, 10, 6, 12, 5, 9, 0, 7, 0, 15, 7, 4, 14, 2, 13, 1, 10, 6, 12, 11, 9, 5, 3, 8, 4, 1, 14, 8, 13, 6, 2, 11, 15, 12, 9, 7, 3, 10, 5, 0, 15, 12, 8, 2, 4, 9, 1, 7, 5, 11, 3, 14, 10, 0, 6, 13],
  [15, 1, 8, 14, 6, 11, 3, 4, 9, 7, 2, 13, 12, 0, 5, 10, 3, 13, 4, 7, 15, 2, 8, 14, 12, 0, 1, 10, 6, 9, 11, 5, 0, 14, 7, 11, 10, 4, 13, 1, 5, 8, 12, 6, 9, 3, 2, 15, 13, 8, 10, 1, 3, 15, 4, 2, 11, 6, 7, 12, 0, 5, 14, 9],
  [10, 0, 9, 14, 6, 3, 15, 5, 1, 13, 12, 7, 11, 4, 2, 8, 13, 7, 0, 9, 3, 4, 6, 10, 2, 8, 5, 14, 12, 11, 15, 1, 13, 6, 4, 9, 8, 15, 3, 0, 11, 1, 2, 12, 5, 10, 14, 7, 1, 10, 13, 0, 6, 9, 8, 7, 4, 15, 14, 3, 11, 5, 2, 12],
  [7, 13, 14, 3, 0, 6, 9, 10, 1, 2, 8, 5, 11, 12, 4, 15, 13, 8, 11, 5, 6, 15, 0, 3, 4, 7, 2, 12, 1, 10, 14, 9, 10, 6, 9, 0, 12, 11, 7, 13, 15, 1, 3, 14, 5, 2, 8, 4, 3, 15, 0, 6, 10, 1, 13, 8, 9, 4, 5, 11, 12, 7, 2, 14],
  [2, 12, 4, 1, 7, 10, 11, 6, 8, 5, 3, 15, 13, 0, 14, 9, 14, 11, 2, 12, 4, 7, 13, 1, 5, 0, 15, 10, 3, 9, 8, 6, 4, 2, 1, 11, 10, 13, 7, 8, 15, 9, 12, 5, 6, 3, 0, 14, 11, 8, 12, 7, 1, 14, 2, 13, 6, 15, 0, 9, 10, 4, 5, 3],
  [12, 1, 10, 15, 9, 2, 6, 8, 0, 13, 3, 4, 14, 7, 5, 11, 10, 15, 4, 2, 7, 12, 9, 5, 6, 1, 13, 14, 0, 11, 3, 8, 9, 14, 15, 5, 2, 8, 12, 3, 7, 0, 4, 10, 1, 13, 11, 6, 4, 3, 2, 12, 9, 5, 15, 10, 11, 14, 1, 7, 6, 0, 8, 13],
  [4, 11, 2, 14, 15, 0, 8, 13, 3, 12, 9, 7, 5, 10, 6, 1, 13, 0, 11, 7, 4, 9, 1, 10, 14, 3, 5, 12, 2, 15, 8, 6, 1, 4, 11, 13, 12, 3, 7, 14, 10, 15, 6, 8, 0, 5, 9, 2, 6, 11, 13, 8, 1, 4, 10, 7, 9, 5, 0, 15, 14, 2, 3, 12],
  [13, 2, 8, 4, 6, 15, 11, 1, 10, 9, 3, 14, 5, 0, 12, 7, 1, 15, 13, 8, 10, 3, 7, 4, 12, 5, 6, 11, 0, 14, 9, 2, 7, 11, 4, 1, 9, 12, 14, 2, 0, 6, 10, 13, 15, 3, 5, 8, 2, 1, 14, 7, 4, 10, 8, 13, 15, 12, 9, 0, 3, 5, 6, 11],
];

/** Bits (0/1), most significant first, of `bytes`. */
function bitsOf(bytes: Uint8Array): number[] {
  const out: number[] = [];
  for (const b of bytes) for (let i = 7; i >= 0; i--) out.push((b >> i) & 1);
  return out;
}

const permute = (bits: readonly number[], table: readonly number[]): number[] => table.map((t) => bits[t - 1] as number);

/**
 * DES of a 64-bit block (bits) under a key schedule, with `e` as the expansion table (crypt(3)
 * swaps entries of E by the salt). Exported for the test that holds it to node:crypto's DES.
 */
export function desBlock(block: readonly number[], schedule: readonly (readonly number[])[], e: readonly number[] = E): number[] {
  const x = permute(block, IP);
  let l = x.slice(0, 32);
  let r = x.slice(32);
  for (let round = 0; round < 16; round++) {
    const k = schedule[round] as readonly number[];
    const f: number[] = [];
    for (let box = 0; box < 8; box++) {
      const b = (j: number) => (r[(e[box * 6 + j] as number) - 1] as number) ^ (k[box * 6 + j] as number);
      const row = (b(0) << 1) | b(5);
      const col = (b(1) << 3) | (b(2) << 2) | (b(3) << 1) | b(4);
      const v = (S[box] as number[])[row * 16 + col] as number;
      f.push((v >> 3) & 1, (v >> 2) & 1, (v >> 1) & 1, v & 1);
    }
    const pf = permute(f, P);
    const next = l.map((bit, i) => bit ^ (pf[i] as number));
    l = r;
    r = next;
  }
  return permute([...r, ...l], FP);
}

/** The sixteen round keys of a 64-bit key (bits). */
export function desSchedule(key: readonly number[]): number[][] {
  const cd = permute(key, PC1);
  let c = cd.slice(0, 28);
  let d = cd.slice(28);
  const out: number[][] = [];
  for (const s of SHIFTS) {
    c = [...c.slice(s), ...c.slice(0, s)];
    d = [...d.slice(s), ...d.slice(0, s)];
    out.push(permute([...c, ...d], PC2));
  }
  return out;
}

/** crypt(3)'s value of a salt character (`./0-9A-Za-z` → 0-63). */
const saltValue = (ch: string): number => ITOA64.indexOf(ch);

/**
 * Traditional DES crypt(3): the first 8 password bytes, 7 bits each, are the key; the two salt
 * characters' 12 bits each swap a pair of E entries (bit j: entries j and j+24); a zero block is
 * encrypted 25 times; the 64 bits are written as 11 characters, most significant first.
 */
export function desCrypt(password: Uint8Array, stored: string): string {
  const keyBytes = new Uint8Array(8);
  for (let i = 0; i < 8 && i < password.length && password[i] !== 0; i++) keyBytes[i] = (password[i]! << 1) & 0xff;
  const schedule = desSchedule(bitsOf(keyBytes));
  const e = [...E];
  const salt = saltValue(stored[0] ?? ".") | (saltValue(stored[1] ?? ".") << 6);
  for (let j = 0; j < 12; j++) {
    if ((salt >> j) & 1) {
      const t = e[j] as number;
      e[j] = e[j + 24] as number;
      e[j + 24] = t;
    }
  }
  let block = new Array<number>(64).fill(0);
  for (let i = 0; i < 25; i++) block = desBlock(block, schedule, e);
  const bits = [...block, 0, 0];
  let out = stored.slice(0, 2);
  for (let i = 0; i < 11; i++) {
    let v = 0;
    for (let j = 0; j < 6; j++) v = (v << 1) | (bits[i * 6 + j] as number);
    out += ITOA64[v];
  }
  return out;
}

// ---- comparing -------------------------------------------------------------------------

/**
 * a === b in time that depends on neither's content: both are hashed first, so the compared
 * buffers always have the same length (timingSafeEqual needs that).
 */
export function constantTimeEqual(a: string, b: string): boolean {
  return timingSafeEqual(digest("sha256", latin1(a)), digest("sha256", latin1(b)));
}

/** The formats computed on a hashing thread (proxy/crypt/hash-pool.ts): rounds that would hold the event loop. */
export const OFFLOADED_FORMATS: ReadonlySet<string> = new Set<OffloadedFormat>(["apr1", "md5-crypt", "sha256-crypt", "sha512-crypt", "des"]);

/**
 * Whether the check costs rounds (milliseconds to a quarter of a second: docs/design.md,
 * "Access control: source ranges and basic authentication"), not one digest: bcrypt and the
 * offloaded formats. kinds/basic-auth.ts bounds how many of these run at once per route.
 */
export const isCostly = (format: HashFormat): boolean => format === "bcrypt" || OFFLOADED_FORMATS.has(format);

/**
 * Does `password` match `stored`, computed here and now (every format but bcrypt)? The
 * recomputed hash is compared with the stored one in constant time. The hashing threads run
 * this; the proxy calls verifyPassword.
 */
export function computedMatches(password: Uint8Array, stored: string, format: Exclude<HashFormat, "bcrypt">): boolean {
  switch (format) {
    case "apr1":
      return constantTimeEqual(md5Crypt(password, stored, "$apr1$"), stored);
    case "md5-crypt":
      return constantTimeEqual(md5Crypt(password, stored, "$1$"), stored);
    case "sha256-crypt":
    case "sha512-crypt": {
      const computed = shaCrypt(password, stored, format === "sha256-crypt" ? 256 : 512);
      return computed !== null && constantTimeEqual(computed, stored);
    }
    case "sha1":
      return constantTimeEqual(sha1Hash(password), stored);
    case "ssha":
      return constantTimeEqual(sshaHash(password, stored), stored);
    case "plain":
      return constantTimeEqual(`{PLAIN}${Buffer.from(password).toString("latin1")}`, stored);
    case "des":
      return constantTimeEqual(desCrypt(password, stored), stored);
  }
}

/**
 * Does `password` match `stored` (a hash of `format`, checked by policy/htpasswd.ts)?
 * Never on the event loop for a format with rounds: bcrypt on Bun's hashing threads, the
 * crypt() formats on Portico's (proxy/crypt/hash-pool.ts); the one-digest formats here. Rejects when
 * no hashing thread can run the check (the caller refuses the request).
 */
export async function verifyPassword(password: Uint8Array, stored: string, format: HashFormat): Promise<boolean> {
  if (format === "bcrypt") {
    // bcrypt reads at most 72 bytes (htpasswd and crypt() cut there); Bun pre-hashes a
    // longer password instead (measured on 1.4.5), so cut it first. Bun answers false for an
    // empty password without computing; crypt() accepts it. bcrypt cycles the key bytes over
    // 72, so "" (C's key: one NUL) and one NUL byte expand to the same all-zero key: pass that
    // (the parser refuses a NUL inside a password, so no other input reaches here as one).
    // Bun compares in constant time.
    try {
      return await Bun.password.verify(password.length === 0 ? new Uint8Array(1) : password.subarray(0, 72), stored, "bcrypt");
    } catch {
      return false;
    }
  }
  if (OFFLOADED_FORMATS.has(format)) return await hashOffLoop(format as OffloadedFormat, password, stored);
  return computedMatches(password, stored, format);
}
