// The PROXY protocol header reader (src/serving/proxy-protocol.ts) against HAProxy's
// proxy-protocol.txt: version 1 lines (§2.1) and version 2 binary headers (§2.2), complete,
// partial, and broken. The front that uses it is tested through the real process in
// test/e2e/proxy-protocol-nginx.test.ts.
import { describe, expect, test } from "bun:test";
import { parseProxyHeader, V1_MAX, V2_MAX } from "../../src/serving/proxy-protocol.ts";

const enc = (s: string) => new TextEncoder().encode(s);
const SIG = [0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a];
const v2 = (verCmd: number, fam: number, body: number[]) => new Uint8Array([...SIG, verCmd, fam, body.length >> 8, body.length & 0xff, ...body]);

describe("version 1", () => {
  test.each([
    ["PROXY TCP4 192.168.0.1 192.168.0.11 56324 1234\r\n", { source: "192.168.0.1", sourcePort: 56324, destPort: 1234 }],
    ["PROXY TCP6 2001:db8::1 2001:db8::2 1 443\r\n", { source: "2001:db8::1", sourcePort: 1, destPort: 443 }],
    // §2.1: UNKNOWN, with or without addresses after it: the connection's own addresses count.
    ["PROXY UNKNOWN\r\n", null],
    ["PROXY UNKNOWN ffff:f...f:ffff ffff:f...f:ffff 65535 65535\r\n", null],
  ])("%p", (line, addresses) => {
    const b = enc(`${line}GET /`);
    expect(parseProxyHeader(b)).toEqual({ kind: "header", length: line.length, addresses });
  });

  test("a partial line asks for more; a line without CRLF in 107 bytes is broken", () => {
    expect(parseProxyHeader(enc("PRO"))).toEqual({ kind: "more", need: 4 });
    expect(parseProxyHeader(enc("PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r"))).toEqual({ kind: "more", need: 32 });
    expect(parseProxyHeader(enc(`PROXY TCP4 ${"1".repeat(V1_MAX)}`))).toEqual({ kind: "bad" });
  });

  test.each([
    "GET / HTTP/1.1\r\n",
    "PROXY\r\n",
    "PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n", // LF without CR
    "PROXY TCP4 1.2.3.256 5.6.7.8 1 2\r\n",
    "PROXY TCP4 1.2.3.4 5.6.7.8 1 65536\r\n",
    "PROXY TCP4 1.2.3.4 5.6.7.8 01 2\r\n",
    "PROXY TCP4 2001:db8::1 5.6.7.8 1 2\r\n", // an IPv6 address under TCP4
    "PROXY TCP6 1.2.3.4 2001:db8::2 1 2\r\n",
    "PROXY TCP4 1.2.3.4 5.6.7.8 1 2 3\r\n",
    "PROXY UDP4 1.2.3.4 5.6.7.8 1 2\r\n",
    "PROXY TCP4 1.2.3.4  5.6.7.8 1 2\r\n",
  ])("broken: %p", (line) => {
    expect(parseProxyHeader(enc(line))).toEqual({ kind: "bad" });
  });
});

describe("version 2", () => {
  test("PROXY over TCP/IPv4 and TCP/IPv6 (RFC 5952 text), TLVs after the addresses skipped", () => {
    const v4 = v2(0x21, 0x11, [192, 168, 0, 1, 10, 0, 0, 1, 0xdc, 0x04, 0x04, 0xd2, /* a TLV */ 0x04, 0, 1, 0]);
    expect(parseProxyHeader(new Uint8Array([...v4, 0x47]))).toEqual({ kind: "header", length: v4.length, addresses: { source: "192.168.0.1", sourcePort: 56324, destPort: 1234 } });
    const src = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
    const v6 = v2(0x21, 0x21, [...src, ...src, 0, 80, 1, 0xbb]);
    expect(parseProxyHeader(v6)).toEqual({ kind: "header", length: v6.length, addresses: { source: "2001:db8::1", sourcePort: 80, destPort: 443 } });
  });

  test("LOCAL and UNSPEC keep the connection's own addresses", () => {
    expect(parseProxyHeader(v2(0x20, 0x00, []))).toEqual({ kind: "header", length: 16, addresses: null });
    expect(parseProxyHeader(v2(0x21, 0x00, [1, 2, 3]))).toEqual({ kind: "header", length: 19, addresses: null });
  });

  test("partial headers ask for the signature, then for the whole length", () => {
    expect(parseProxyHeader(new Uint8Array(SIG.slice(0, 5)))).toEqual({ kind: "more", need: 16 });
    const whole = v2(0x21, 0x11, new Array<number>(12).fill(1));
    expect(parseProxyHeader(whole.subarray(0, 20))).toEqual({ kind: "more", need: 28 });
  });

  test.each([
    ["another version", v2(0x31, 0x11, new Array<number>(12).fill(1))],
    ["an unknown command", v2(0x22, 0x11, new Array<number>(12).fill(1))],
    ["a datagram protocol", v2(0x21, 0x12, new Array<number>(12).fill(1))],
    ["IPv4 addresses cut short", v2(0x21, 0x11, new Array<number>(8).fill(1))],
    ["IPv6 addresses cut short", v2(0x21, 0x21, new Array<number>(12).fill(1))],
    ["a signature byte wrong", new Uint8Array([...SIG.slice(0, 6), 0, ...SIG.slice(7), 0x21, 0x11, 0, 0])],
  ])("broken: %s", (_what, b) => {
    expect(parseProxyHeader(b)).toEqual({ kind: "bad" });
  });

  test("a length past 4 KiB is refused before it is read", () => {
    const len = V2_MAX; // 16 + 4096 > the bound
    expect(parseProxyHeader(new Uint8Array([...SIG, 0x21, 0x11, len >> 8, len & 0xff]))).toEqual({ kind: "bad" });
  });
});
