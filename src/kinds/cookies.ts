// Reading one cookie from a request's Cookie header (RFC 6265 §5.4: `name=value` pairs
// separated by `;`). Nothing is decoded: the value is compared or hashed as sent.

/**
 * The value of the first cookie called `name`, or null. `anyCase` compares names ignoring
 * ASCII case, as nginx's `$cookie_<name>` does; affinity cookies are matched exactly, as
 * ingress-nginx's Lua (lua-resty-cookie) reads them.
 */
export function cookieValue(header: string | null, name: string, anyCase = false): string | null {
  if (header === null) return null;
  const want = anyCase ? name.toLowerCase() : name;
  let i = 0;
  while (i < header.length) {
    let end = header.indexOf(";", i);
    if (end < 0) end = header.length;
    const eq = header.indexOf("=", i);
    if (eq >= 0 && eq < end) {
      const k = header.slice(i, eq).trim();
      if ((anyCase ? k.toLowerCase() : k) === want) return header.slice(eq + 1, end).trim();
    }
    i = end + 1;
  }
  return null;
}
