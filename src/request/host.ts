// The Host normaliser shared by the proxy and explain: one grammar, one routing key.

export interface NormalisedHost {
  /** Lowercased name without port or trailing dot: the routing key (docs/design.md "Ingress decisions"). */
  readonly hostname: string;
  /** Port from the Host value, or null. */
  readonly port: string | null;
}

// RFC 3986 §3.2.2 reg-name restricted to DNS-style names (letters, digits, "-", "_", dots),
// which also covers IPv4address. Userinfo ("@"), commas (Bun joins a repeated Host with ", "),
// spaces and every other character are refused.
const REG_NAME = /^[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?)*\.?$/i;
// RFC 3986 §3.2.2 IP-literal (IPv6 only; no zone ids, no IPvFuture).
const IP_LITERAL = /^\[[0-9a-f:.]{2,45}\]$/i;
const PORT = /^[0-9]{1,5}$/;

/** RFC 9110 §7.2 Host = uri-host [ ":" port ]; null when the value is not one (400). */
export function normaliseRequestHost(host: string): NormalisedHost | null {
  const out = { hostname: "", port: null as string | null };
  return normaliseRequestHostInto(host, out) ? out : null;
}

/**
 * normaliseRequestHost into `out` (written only when the value is a Host): the proxy's
 * request context takes the parts without an object of their own per request
 * (bench/allocations.ts).
 */
export function normaliseRequestHostInto(host: string, out: { hostname: string; port: string | null }): boolean {
  let name = host;
  let port: string | null = null;
  const colon = host.lastIndexOf(":");
  if (colon >= 0 && host.indexOf("]", colon) < 0) {
    name = host.slice(0, colon);
    port = host.slice(colon + 1);
    // RFC 3986 §3.2.3: port = *DIGIT, so "a.test:" is a Host; an empty port is the scheme's
    // default and normalises away (§6.2.3). nginx takes it too (ngx_http_validate_host).
    if (port === "") port = null;
    else if (!PORT.test(port) || Number(port) > 65535) return false;
  }
  if (name.length === 0 || name.length > 253) return false;
  if (name.startsWith("[")) {
    if (!IP_LITERAL.test(name)) return false;
  } else if (!REG_NAME.test(name)) {
    return false;
  }
  let hostname = name.toLowerCase();
  // RFC 1034 §3.1: "a.test." and "a.test" name the same host.
  if (hostname.endsWith(".")) hostname = hostname.slice(0, -1);
  out.hostname = hostname;
  out.port = port;
  return true;
}
