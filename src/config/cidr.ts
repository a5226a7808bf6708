// CIDR lists, read once with node:net's BlockList: the same structure validates a list and
// matches peers against it, so an entry that is accepted is an entry that is applied. (A
// hand-written matcher next to a node:net validator once accepted `::ffff:10.0.0.0/104` and
// `fe80::1%eth0/64`, then silently ignored both.) BlockList matches an IPv4 rule against an
// IPv4-mapped peer (`::ffff:a.b.c.d`, what a dual-stack socket reports) and an IPv4-mapped
// rule against an IPv4 peer (measured on Bun 1.4.5; test in cidr.test.ts).
//
// No I/O, clock or timer here (BlockList is a data structure), so besides config/ and proxy/
// the pure core may use it for per-Ingress lists; a bad entry there must make the whole list
// refused (fail closed), which parseCidrList gives by refusing the text rather than the entry.
import { BlockList, isIP } from "node:net";

export type CidrParse =
  | { readonly ok: true; readonly list: readonly string[] }
  | { readonly ok: false; readonly error: string };

/** One CIDR or bare address (a single address: /32, /128) → canonical `addr/prefix`, or why not. */
function parseEntry(text: string): { readonly cidr: string; readonly family: 4 | 6 } | string {
  const s = text.trim().toLowerCase();
  if (s === "") return "an empty entry";
  // A zone (RFC 4007 §11) names an interface, not addresses; BlockList would drop it and
  // match the address on every interface, a wider rule than the one written.
  if (s.includes("%")) return `${JSON.stringify(text.trim())} has a zone index, which no rule can match`;
  const slash = s.indexOf("/");
  const addr = slash < 0 ? s : s.slice(0, slash);
  // isIP refuses forms BlockList would read one way and a person another (leading zeros: octal?).
  const family = isIP(addr);
  if (family !== 4 && family !== 6) return `${JSON.stringify(text.trim())} is not an IPv4 or IPv6 address or CIDR`;
  const max = family === 4 ? 32 : 128;
  const prefixText = slash < 0 ? String(max) : s.slice(slash + 1);
  if (!/^\d{1,3}$/.test(prefixText) || Number(prefixText) > max) {
    return `${JSON.stringify(text.trim())} has a prefix length outside 0-${max}`;
  }
  const cidr = `${addr}/${Number(prefixText)}`;
  try {
    new BlockList().addSubnet(addr, Number(prefixText), family === 4 ? "ipv4" : "ipv6");
  } catch {
    return `${JSON.stringify(text.trim())} cannot be held by node:net's BlockList`;
  }
  return { cidr, family };
}

/**
 * Comma-separated CIDRs (or the entries already split) → their canonical forms, or the first
 * bad entry. Whitespace around entries is ignored; an empty text is an empty list; an empty
 * entry between commas is refused, as ingress-nginx refuses it in a source-range annotation.
 */
export function parseCidrList(text: string | readonly string[]): CidrParse {
  const items = typeof text === "string" ? (text.trim() === "" ? [] : text.split(",")) : text;
  const list: string[] = [];
  for (const item of items) {
    const r = parseEntry(item);
    if (typeof r === "string") return { ok: false, error: r };
    list.push(r.cidr);
  }
  return { ok: true, list: Object.freeze(list) };
}

/**
 * A predicate "is this peer address in the list". The list must come from parseCidrList: an
 * entry it would refuse throws here rather than being skipped, so a list is never applied
 * narrower (or wider) than written. A peer that is not an IP literal matches nothing.
 */
export function cidrMatcher(list: readonly string[]): (ip: string) => boolean {
  if (list.length === 0) return () => false;
  const block = new BlockList();
  for (const c of list) {
    const r = parseEntry(c);
    if (typeof r === "string") throw new TypeError(`CIDR list entry refused: ${r}`);
    const slash = r.cidr.indexOf("/");
    block.addSubnet(r.cidr.slice(0, slash), Number(r.cidr.slice(slash + 1)), r.family === 4 ? "ipv4" : "ipv6");
  }
  return (ip) => {
    const family = isIP(ip);
    return family !== 0 && block.check(ip, family === 4 ? "ipv4" : "ipv6");
  };
}

// ::ffff:0:0/96, the IPv4-mapped IPv6 addresses (RFC 4291 §2.5.5.2).
const MAPPED = new BlockList();
MAPPED.addSubnet("::ffff:0:0", 96, "ipv6");

/** Is this canonical CIDR (from parseCidrList) an IPv6 range inside the IPv4-mapped block? */
export function isIpv4MappedRange(cidr: string): boolean {
  const slash = cidr.indexOf("/");
  const addr = cidr.slice(0, slash);
  return isIP(addr) === 6 && Number(cidr.slice(slash + 1)) >= 96 && MAPPED.check(addr, "ipv6");
}

/**
 * "Is this client in the list", as nginx's access module (allow/deny) decides it: an IPv4
 * client, or an IPv4-mapped IPv6 one (a dual-stack socket's view of an IPv4 client), is checked
 * against the IPv4 entries only, any other IPv6 client against the IPv6 entries only. So `::/0`
 * does not cover IPv4 clients, where cidrMatcher (BlockList) would say it does. A client that is
 * not an IP literal matches nothing. The list must come from parseCidrList.
 */
export function accessListMatcher(list: readonly string[]): (ip: string) => boolean {
  const v4 = cidrMatcher(list.filter((c) => isIP(c.slice(0, c.indexOf("/"))) === 4));
  const v6 = cidrMatcher(list.filter((c) => isIP(c.slice(0, c.indexOf("/"))) === 6));
  return (ip) => {
    const family = isIP(ip);
    if (family === 4) return v4(ip);
    if (family !== 6) return false;
    // An IPv4-only BlockList checks a mapped address as its IPv4 address (cidr.test.ts).
    return MAPPED.check(ip, "ipv6") ? v4(ip) : v6(ip);
  };
}

/**
 * Is `s` an IPv4 or IPv6 literal (node:net isIP)? For the pure side, which may not import
 * node:net itself (test/import-direction.test.ts): this module is its one door to it.
 */
export const isIpLiteral = (s: string): boolean => isIP(s) !== 0;
