// The PROXY protocol header a load balancer writes before a connection's own bytes
// (HAProxy's proxy-protocol.txt, versions 1 and 2), read by the TCP front under
// --use-proxy-protocol (ingress-nginx's use-proxy-protocol: `listen ... proxy_protocol`,
// docs/design.md "PROXY protocol"). Pure: the front hands it the bytes so far and it says
// whether the header is complete, broken, or needs more.
import { isIPv4, isIPv6 } from "node:net";

/** The address a header names, or null when it names none (LOCAL, UNKNOWN, UNSPEC, AF_UNIX). */
export interface ProxiedAddresses {
  readonly source: string;
  readonly sourcePort: number;
  readonly destPort: number;
}

export type ProxyHeader =
  | { readonly kind: "more"; readonly need: number }
  | { readonly kind: "bad" }
  | { readonly kind: "header"; readonly length: number; readonly addresses: ProxiedAddresses | null };

/** §2.1: a version 1 line is at most 107 bytes, its CRLF included. */
export const V1_MAX = 107;
/**
 * §2.2 lets a version 2 header carry up to 65,535 bytes of addresses and TLVs; Portico reads
 * at most 4 KiB, as ingress-nginx's own PROXY reader on the ssl-passthrough port
 * (nginx.go setupSSLProxy: proxyproto.Listener ReadBufferSize 4096).
 */
export const V2_MAX = 4096;
/** The most bytes a header may take: the front's bound while it waits for one. */
export const MAX_PROXY_HEADER = V2_MAX;

const V1_PREFIX = [0x50, 0x52, 0x4f, 0x58, 0x59, 0x20]; // "PROXY "
/** §2.2: the twelve bytes every version 2 header opens with. */
const V2_SIG = [0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a];

const PORT = /^(?:0|[1-9][0-9]{0,4})$/;

function port(s: string | undefined): number | null {
  if (s === undefined || !PORT.test(s)) return null;
  const n = Number(s);
  return n <= 65535 ? n : null;
}

/** Reads a header at the start of `b`. */
export function parseProxyHeader(b: Uint8Array): ProxyHeader {
  if (b.length === 0) return { kind: "more", need: 1 };
  if (b[0] === V1_PREFIX[0]) return v1(b);
  if (b[0] === V2_SIG[0]) return v2(b);
  // nginx closes a connection whose first bytes are no PROXY header ("broken header").
  return { kind: "bad" };
}

function v1(b: Uint8Array): ProxyHeader {
  const n = Math.min(b.length, V1_MAX);
  let end = -1;
  for (let i = 0; i < n; i++) {
    if (i < V1_PREFIX.length) {
      if (b[i] !== V1_PREFIX[i]) return { kind: "bad" };
      continue;
    }
    if (b[i] === 0x0a) {
      // §2.1: the line ends with CRLF; a bare LF is not one.
      if (b[i - 1] !== 0x0d) return { kind: "bad" };
      end = i + 1;
      break;
    }
  }
  if (end < 0) return b.length >= V1_MAX ? { kind: "bad" } : { kind: "more", need: b.length + 1 };
  // ASCII only: anything else is no address or port.
  for (let i = 0; i < end; i++) if ((b[i] as number) > 0x7e) return { kind: "bad" };
  const line = new TextDecoder().decode(b.subarray(0, end - 2));
  const f = line.split(" ");
  // §2.1: "UNKNOWN" may be followed by anything up to the CRLF; the receiver uses the real
  // connection's addresses.
  if (f[1] === "UNKNOWN") return { kind: "header", length: end, addresses: null };
  if (f.length !== 6 || (f[1] !== "TCP4" && f[1] !== "TCP6")) return { kind: "bad" };
  const ok = f[1] === "TCP4" ? isIPv4 : isIPv6;
  const src = f[2] as string;
  const dst = f[3] as string;
  const sp = port(f[4]);
  const dp = port(f[5]);
  if (!ok(src) || !ok(dst) || sp === null || dp === null) return { kind: "bad" };
  return { kind: "header", length: end, addresses: { source: src, sourcePort: sp, destPort: dp } };
}

function v2(b: Uint8Array): ProxyHeader {
  const n = Math.min(b.length, V2_SIG.length);
  for (let i = 0; i < n; i++) if (b[i] !== V2_SIG[i]) return { kind: "bad" };
  if (b.length < 16) return { kind: "more", need: 16 };
  const verCmd = b[12] as number;
  // §2.2: the version is the high nibble and must be 2; the command is LOCAL (0) or PROXY (1).
  if (verCmd >> 4 !== 2) return { kind: "bad" };
  const cmd = verCmd & 0x0f;
  if (cmd > 1) return { kind: "bad" };
  const famProto = b[13] as number;
  const len = ((b[14] as number) << 8) | (b[15] as number);
  const total = 16 + len;
  if (total > V2_MAX) return { kind: "bad" };
  if (b.length < total) return { kind: "more", need: total };
  // LOCAL: the load balancer's own connection (a health check); the real endpoints count.
  if (cmd === 0) return { kind: "header", length: total, addresses: null };
  const family = famProto >> 4;
  const proto = famProto & 0x0f;
  // STREAM only: a DGRAM header on a TCP port is nonsense.
  if (family !== 0 && proto !== 1) return { kind: "bad" };
  const a = 16;
  if (family === 1) {
    if (len < 12) return { kind: "bad" };
    const source = `${b[a]}.${b[a + 1]}.${b[a + 2]}.${b[a + 3]}`;
    return { kind: "header", length: total, addresses: { source, sourcePort: u16(b, a + 8), destPort: u16(b, a + 10) } };
  }
  if (family === 2) {
    if (len < 36) return { kind: "bad" };
    const groups: string[] = [];
    for (let i = 0; i < 8; i++) groups.push(u16(b, a + 2 * i).toString(16));
    return { kind: "header", length: total, addresses: { source: compactV6(groups), sourcePort: u16(b, a + 32), destPort: u16(b, a + 34) } };
  }
  // UNSPEC or AF_UNIX: §2.2 says to use the real connection's addresses.
  return { kind: "header", length: total, addresses: null };
}

const u16 = (b: Uint8Array, i: number) => ((b[i] as number) << 8) | (b[i + 1] as number);

/** RFC 5952 §4: the longest run (two groups or more) of zero groups becomes "::". */
function compactV6(g: string[]): string {
  let best = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (g[i] !== "0") {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && g[j] === "0") j++;
    if (j - i > bestLen) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  if (bestLen < 2) return g.join(":");
  return `${g.slice(0, best).join(":")}::${g.slice(best + bestLen).join(":")}`;
}
