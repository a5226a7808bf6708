// CIDR matching for --trusted-proxies (IPv4, IPv6, IPv4-mapped IPv6 peers).

export interface Cidr {
  readonly bytes: Uint8Array;
  readonly prefix: number;
}

function parseV4(s: string): Uint8Array | null {
  const parts = s.split(".");
  if (parts.length !== 4) return null;
  const out = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    const p = parts[i] as string;
    if (!/^[0-9]{1,3}$/.test(p) || Number(p) > 255) return null;
    out[i] = Number(p);
  }
  return out;
}

function parseV6(s: string): Uint8Array | null {
  let tail: Uint8Array | null = null;
  const lastColon = s.lastIndexOf(":");
  if (s.includes(".", lastColon)) {
    tail = parseV4(s.slice(lastColon + 1));
    if (tail === null) return null;
    s = s.slice(0, lastColon + 1) + "0:0";
  }
  const halves = s.split("::");
  if (halves.length > 2) return null;
  const head = halves[0] === "" ? [] : (halves[0] as string).split(":");
  const rest = halves.length === 2 ? (halves[1] === "" ? [] : (halves[1] as string).split(":")) : [];
  const missing = 8 - head.length - rest.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return null;
  const groups = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill("0"), ...rest];
  const out = new Uint8Array(16);
  for (let i = 0; i < 8; i++) {
    const g = groups[i] as string;
    if (!/^[0-9a-f]{1,4}$/i.test(g)) return null;
    const v = parseInt(g, 16);
    out[i * 2] = v >> 8;
    out[i * 2 + 1] = v & 0xff;
  }
  if (tail !== null) out.set(tail, 12);
  return out;
}

/** Parse an address to 4 or 16 bytes; IPv4-mapped IPv6 (::ffff:a.b.c.d) becomes 4 bytes. */
export function parseIp(s: string): Uint8Array | null {
  if (s.includes(":")) {
    const v6 = parseV6(s.startsWith("[") && s.endsWith("]") ? s.slice(1, -1) : s);
    if (v6 === null) return null;
    const mapped = v6.slice(0, 10).every((b) => b === 0) && v6[10] === 0xff && v6[11] === 0xff;
    return mapped ? v6.slice(12) : v6;
  }
  return parseV4(s);
}

export function parseCidr(s: string): Cidr | null {
  const slash = s.indexOf("/");
  const bytes = parseIp(slash < 0 ? s : s.slice(0, slash));
  if (bytes === null) return null;
  const max = bytes.length * 8;
  const prefix = slash < 0 ? max : Number(s.slice(slash + 1));
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > max) return null;
  return { bytes, prefix };
}

export function inCidr(ip: Uint8Array, c: Cidr): boolean {
  if (ip.length !== c.bytes.length) return false;
  let bits = c.prefix;
  for (let i = 0; bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if (((ip[i] as number) & mask) !== ((c.bytes[i] as number) & mask)) return false;
  }
  return true;
}

/** Build a matcher from CIDR strings; invalid entries are ignored (config/ validates them). */
export function trustMatcher(cidrs: readonly string[]): (ip: string) => boolean {
  const list = cidrs.map(parseCidr).filter((c): c is Cidr => c !== null);
  if (list.length === 0) return () => false;
  return (ip) => {
    const b = parseIp(ip);
    return b !== null && list.some((c) => inCidr(b, c));
  };
}
