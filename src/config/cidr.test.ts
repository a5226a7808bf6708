import { describe, expect, test } from "bun:test";
import { accessListMatcher, cidrMatcher, isIpv4MappedRange, parseCidrList } from "./cidr.ts";

const list = (text: string) => {
  const r = parseCidrList(text);
  if (!r.ok) throw new Error(r.error);
  return r.list;
};
const error = (text: string) => {
  const r = parseCidrList(text);
  return r.ok ? null : r.error;
};

describe("parseCidrList", () => {
  test("canonical forms: bare addresses get /32 or /128, IPv6 is lowercased, spaces are ignored", () => {
    expect(list(" 10.0.0.0/8, FD00::/8 ,192.168.1.1,::1")).toEqual(["10.0.0.0/8", "fd00::/8", "192.168.1.1/32", "::1/128"]);
    expect(list("")).toEqual([]);
    expect(list("  ")).toEqual([]);
    expect(list("::ffff:10.0.0.0/104")).toEqual(["::ffff:10.0.0.0/104"]);
    expect(Object.isFrozen(list("10.0.0.0/8"))).toBe(true);
  });

  test("refuses what it cannot match as written, naming the entry", () => {
    expect(error("fe80::1%eth0/64")).toContain('"fe80::1%eth0/64" has a zone index');
    expect(error("10.0.0.0/8,fe80::1%eth0")).toContain("zone index");
    expect(error("10.0.0.0/33")).toContain("prefix length outside 0-32");
    expect(error("fd00::/129")).toContain("prefix length outside 0-128");
    expect(error("10.0.0.0/")).toContain("prefix length");
    expect(error("10.0.0.0/-1")).toContain("prefix length");
    expect(error("10.0.0.0/8/8")).toContain("prefix length");
    expect(error("010.0.0.0/8")).toContain("not an IPv4 or IPv6");
    expect(error("example.com")).toContain("not an IPv4 or IPv6");
    expect(error("[::1]/128")).toContain("not an IPv4 or IPv6");
    expect(error("10.0.0.0/8,,fd00::/8")).toBe("an empty entry");
    expect(error("10.0.0.0/8,")).toBe("an empty entry");
  });

  test("a list already split is read the same way", () => {
    expect(parseCidrList(["10.0.0.0/8", " ::1 "])).toEqual({ ok: true, list: ["10.0.0.0/8", "::1/128"] });
    expect(parseCidrList(["10.0.0.0/8", "nope"]).ok).toBe(false);
  });
});

describe("cidrMatcher", () => {
  test("IPv4, IPv6 and single addresses", () => {
    const m = cidrMatcher(list("10.0.0.0/8,fd00::/8,192.168.1.7"));
    expect(m("10.200.3.4")).toBe(true);
    expect(m("11.0.0.1")).toBe(false);
    expect(m("fd12::5")).toBe(true);
    expect(m("fe80::1")).toBe(false);
    expect(m("192.168.1.7")).toBe(true);
    expect(m("192.168.1.8")).toBe(false);
    expect(cidrMatcher([])("10.0.0.1")).toBe(false);
    expect(cidrMatcher(list("0.0.0.0/0"))("8.8.8.8")).toBe(true);
  });

  test("an IPv4 rule matches an IPv4-mapped peer, and an IPv4-mapped rule an IPv4 peer", () => {
    const v4 = cidrMatcher(list("10.0.0.0/8"));
    expect(v4("::ffff:10.9.9.9")).toBe(true);
    expect(v4("::ffff:a09:909")).toBe(true); // the same address in hex
    expect(v4("::ffff:11.9.9.9")).toBe(false);
    const mapped = cidrMatcher(list("::ffff:10.0.0.0/104"));
    expect(mapped("10.1.2.3")).toBe(true);
    expect(mapped("::ffff:10.1.2.3")).toBe(true);
    expect(mapped("11.1.2.3")).toBe(false);
  });

  test("host bits below the prefix are ignored (the network is what counts)", () => {
    expect(cidrMatcher(list("10.0.0.1/8"))("10.9.9.9")).toBe(true);
  });

  test("a peer that is not an IP literal matches nothing", () => {
    const m = cidrMatcher(list("0.0.0.0/0,::/0"));
    expect(m("")).toBe(false);
    expect(m("localhost")).toBe(false);
    expect(m("10.0.0.1:80")).toBe(false);
  });

  test("an entry parseCidrList would refuse throws instead of being skipped", () => {
    expect(() => cidrMatcher(["10.0.0.0/8", "fe80::1%eth0/64"])).toThrow(/zone index/);
    expect(() => cidrMatcher(["bogus"])).toThrow(/not an IPv4/);
  });
});

describe("accessListMatcher (nginx allow/deny semantics)", () => {
  test("IPv4 and IPv4-mapped clients meet only IPv4 entries; other IPv6 clients only IPv6 entries", () => {
    const all6 = accessListMatcher(list("::/0"));
    expect(all6("2001:db8::1")).toBe(true);
    expect(all6("10.0.0.1")).toBe(false); // cidrMatcher says true here
    expect(cidrMatcher(list("::/0"))("10.0.0.1")).toBe(true);
    expect(all6("::ffff:10.0.0.1")).toBe(false);
    const all4 = accessListMatcher(list("0.0.0.0/0"));
    expect(all4("10.0.0.1")).toBe(true);
    expect(all4("::ffff:10.0.0.1")).toBe(true);
    expect(all4("::ffff:a00:1")).toBe(true); // the same address in hex
    expect(all4("::1")).toBe(false);
    expect(all4("::10.0.0.1")).toBe(false); // IPv4-compatible is IPv6 (RFC 4291 §2.5.5.1)
    expect(all4("64:ff9b::a00:1")).toBe(false); // NAT64 too
    const mixed = accessListMatcher(list("10.0.0.0/8,fd00::/8"));
    expect(mixed("10.1.2.3")).toBe(true);
    expect(mixed("fd00::1")).toBe(true);
    expect(mixed("11.1.2.3")).toBe(false);
    expect(mixed("fe80::1")).toBe(false);
    expect(mixed("")).toBe(false);
    expect(mixed("10.1.2.3:80")).toBe(false);
    expect(accessListMatcher([])("10.0.0.1")).toBe(false);
  });

  test("isIpv4MappedRange: ranges inside ::ffff:0:0/96, however written", () => {
    expect(list("::ffff:10.0.0.0/104,0:0:0:0:0:ffff:a00:0/104,::ffff:0:0/96").map(isIpv4MappedRange)).toEqual([true, true, true]);
    expect(list("::ffff:0:0/95,::/0,10.0.0.0/8,fd00::/8,::1").map(isIpv4MappedRange)).toEqual([false, false, false, false, false]);
  });
});
