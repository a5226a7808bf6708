// The request-target normaliser shared by the proxy and explain (docs/design.md "Request
// paths"). The proxy routes the path returned here and forwards exactly that path, so a
// backend never receives a path other than the one routed; explain runs the same function on
// its input, so both give the same answer for the same request.
//
// The result is a fixed point of the URL parsing that Bun's `fetch` and `WebSocket` apply to
// the URL they are handed (docs/design.md "Bun facts"): no dot segments, no empty segments,
// no character the WHATWG URL parser would percent-encode. Whatever reaches the wire is
// therefore the string routed, byte for byte.

export interface NormalisedTarget {
  /** Absolute path: dot segments resolved, "//" merged, unreserved escapes decoded, other escapes upper-case. */
  readonly path: string;
  /** Query string including the leading "?", or "" (forwarded, never routed). */
  readonly query: string;
}

/**
 * The request target as received and the authority of Bun's `req.url`: it is absolute
 * (`http://authority/path`, the authority from Host) or, for a request without Host (HTTP/1.0),
 * the bare target. The proxy (validation, error pages) and the access log's template read it.
 */
export function targetOf(url: string): { authority: string | null; target: string } {
  if (url.charCodeAt(0) === 0x2f) return { authority: null, target: url };
  const s = url.indexOf("://");
  if (s < 0) return { authority: null, target: url };
  const slash = url.indexOf("/", s + 3);
  if (slash < 0) return { authority: url.slice(s + 3), target: "/" };
  return { authority: url.slice(s + 3, slash), target: url.slice(slash) };
}

// RFC 3986 §2.3: unreserved = ALPHA / DIGIT / "-" / "." / "_" / "~"; §6.2.2.2: decoding them
// does not change the resource, so they are decoded to get one routed form.
function isUnreserved(c: number): boolean {
  return (
    (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) ||
    c === 0x2d || c === 0x2e || c === 0x5f || c === 0x7e
  );
}

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  const l = c | 0x20;
  return l >= 0x61 && l <= 0x66 ? l - 0x57 : -1;
}

/** The byte of the `%XX` triplet at `i`, or -1 when there is none (RFC 3986 §2.1). */
function escapeAt(p: string, i: number): number {
  if (p.charCodeAt(i) !== 0x25) return -1;
  const hi = hexValue(p.charCodeAt(i + 1));
  const lo = hexValue(p.charCodeAt(i + 2));
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

const HEX = "0123456789ABCDEF";
const pct = (b: number): string => `%${HEX[b >> 4]}${HEX[b & 15]}`;

// Characters the WHATWG URL parser percent-encodes in a path (the path percent-encode set)
// plus "^", which Bun's parser encodes too (measured): Bun has already encoded them in
// `req.url` whenever the request had a Host, and `fetch` would encode them on the way out.
// Encoding them here keeps one form for every request and for explain's input.
const ENCODED_IN_PATH = [0x22, 0x3c, 0x3e, 0x5e, 0x60, 0x7b, 0x7d];

// ASCII characters a path keeps as they are: printable, minus "%" (an escape to read), "#",
// ";", "\" (see canonicalPath) and ENCODED_IN_PATH. One table lookup per character.
const PLAIN_IN_PATH = new Uint8Array(128);
for (let c = 0x21; c < 0x7f; c++) PLAIN_IN_PATH[c] = 1;
for (const c of [0x25, 0x23, 0x3b, 0x5c, ...ENCODED_IN_PATH]) PLAIN_IN_PATH[c] = 0;

/**
 * Length of the well-formed UTF-8 sequence of escapes starting at `i` (lead byte `b0`), in
 * characters of `p`, or -1. RFC 3629 §3/§10: overlong forms (`%C0%AE` for "."), surrogates and
 * code points above U+10FFFF are invalid, and a decoder that accepts them lets "%C0%AE%C0%AE"
 * mean ".." to one program and not to another. U+FFFD (`%EF%BF%BD`) is refused too: it is
 * what Bun puts in `req.url` for raw bytes that are not UTF-8, the one trace of them left.
 */
function utf8Length(p: string, i: number, b0: number): number {
  let n: number;
  let lo = 0x80;
  let hi = 0xbf;
  if (b0 >= 0xc2 && b0 <= 0xdf) n = 2;
  else if (b0 >= 0xe0 && b0 <= 0xef) {
    n = 3;
    if (b0 === 0xe0) lo = 0xa0;
    else if (b0 === 0xed) hi = 0x9f;
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    n = 4;
    if (b0 === 0xf0) lo = 0x90;
    else if (b0 === 0xf4) hi = 0x8f;
  } else return -1;
  let b1 = -1;
  for (let k = 1; k < n; k++) {
    const b = escapeAt(p, i + 3 * k);
    if (b < (k === 1 ? lo : 0x80) || b > (k === 1 ? hi : 0xbf)) return -1;
    if (k === 1) b1 = b;
    else if (k === 2 && b0 === 0xef && b1 === 0xbf && b === 0xbd) return -1;
  }
  return 3 * n;
}

/** Raw non-ASCII characters as UTF-8 escapes (what Bun does to raw bytes); null for a lone surrogate. */
function encodeNonAscii(s: string): string | null {
  try {
    return s.replace(/[^\x00-\x7f]+/g, encodeURIComponent);
  } catch {
    return null;
  }
}

/**
 * The path with every character in its routed form; null means 400. Raw characters first:
 * - controls, space, DEL, "#": RFC 9112 §3.2 / RFC 3986 §3.3 allow none in a request path;
 * - ";": Tomcat, Spring and Jetty cut `;params` out of a segment before matching, so
 *   `/admin;x=1/secret` would be routed as written and served as `/admin/secret`. Routing on
 *   the cut form instead would forward bytes nobody routed; refusing is the only choice that
 *   never lets a backend read a path other than the routed one (Spring Security's default
 *   firewall refuses it for the same reason). An escaped `%3B` is data (RFC 3986 §2.2), kept;
 * - "\": the WHATWG URL parser reads it as "/" for http(s) URLs, and Bun does so in `req.url`
 *   before the handler runs; doing it here keeps explain and a request without Host the same.
 * Then escapes: `%2F` and `%5C` would let the routed segments and the backend's differ
 * (a "/" one program splits on and another does not); escaped controls are refused like raw
 * ones; bytes above 0x7F must be well-formed UTF-8 (utf8Length). Escapes are decoded once,
 * so `%252e` stays `%252e` and is never read as `.`.
 */
function canonicalPath(p: string): string | null | undefined {
  let out = "";
  let last = 0;
  for (let i = 0; i < p.length; i++) {
    const c = p.charCodeAt(i);
    if (PLAIN_IN_PATH[c] === 1) continue;
    // undefined: raw non-ASCII, to be encoded first (rare, so not looked for up front).
    if (c > 0x7f) return undefined;
    if (c <= 0x20 || c === 0x7f || c === 0x23 || c === 0x3b) return null;
    let rep: string;
    let used = 1;
    if (c === 0x5c) rep = "/";
    else if (c !== 0x25) rep = pct(c);
    else {
      const b = escapeAt(p, i);
      if (b < 0x20 || b === 0x7f || b === 0x2f || b === 0x5c) return null;
      if (b >= 0x80) {
        used = utf8Length(p, i, b);
        if (used < 0) return null;
        rep = p.slice(i, i + used).toUpperCase();
      } else {
        used = 3;
        rep = isUnreserved(b) ? String.fromCharCode(b) : pct(b);
      }
      if (rep === p.slice(i, i + used)) {
        i += used - 1;
        continue;
      }
    }
    out += p.slice(last, i) + rep;
    last = i + used;
    i += used - 1;
  }
  return last === 0 ? p : out + p.slice(last);
}

/** RFC 3986 §5.2.4 remove_dot_segments on an absolute path, keeping a trailing "/". */
function removeDotSegments(path: string): string {
  if (!path.includes("/.")) return path;
  const segs = path.split("/");
  const out: string[] = [];
  for (let i = 1; i < segs.length; i++) {
    const s = segs[i] as string;
    const last = i === segs.length - 1;
    if (s === ".") {
      if (last) out.push("");
    } else if (s === "..") {
      out.pop();
      if (last) out.push("");
    } else {
      out.push(s);
    }
  }
  return "/" + out.join("/");
}

/**
 * The routed form of an absolute path, or null for 400. Dot segments are resolved before
 * slashes are merged, the order Bun's `req.url` already has them in (it resolves dots and
 * keeps "//"), so the proxy and explain agree. Repeated slashes are merged like nginx's
 * default `merge_slashes on` (kept by ingress-nginx): `//admin` is routed and forwarded as
 * `/admin`, so it can no longer be routed by one rule and read by the backend as another.
 */
export function normalisePath(raw: string): string | null {
  if (raw.charCodeAt(0) !== 0x2f) return null;
  let canonical = canonicalPath(raw);
  if (canonical === undefined) {
    const encoded = encodeNonAscii(raw);
    canonical = encoded === null ? null : canonicalPath(encoded);
  }
  if (canonical == null) return null;
  const resolved = removeDotSegments(canonical);
  return resolved.includes("//") ? resolved.replace(/\/{2,}/g, "/") : resolved;
}

// The query keeps printable ASCII except "#" (refused) and the characters the WHATWG parser
// percent-encodes in the query of an http(s) URL (the special-query percent-encode set:
// `"` `'` `<` `>`): Bun has encoded them in `req.url` already when there was a Host, and
// `fetch` would encode them; encoding here makes the forwarded query the one computed.
const PLAIN_IN_QUERY = new Uint8Array(128);
for (let c = 0x21; c < 0x7f; c++) PLAIN_IN_QUERY[c] = 1;
for (const c of [0x23, 0x22, 0x27, 0x3c, 0x3e]) PLAIN_IN_QUERY[c] = 0;

/** The query as forwarded, or null for 400. It is never routed, so escapes are not read. */
function normaliseQuery(query: string): string | null {
  let out = "";
  let last = 0;
  for (let i = 1; i < query.length; i++) {
    const c = query.charCodeAt(i);
    if (PLAIN_IN_QUERY[c] === 1) continue;
    // RFC 9112 §3.2: no controls, space or DEL in a request-target; "#" starts a fragment,
    // which a request never carries (RFC 9110 §7.1) and which `fetch` would drop.
    if (c <= 0x20 || c === 0x7f || c === 0x23) return null;
    if (c > 0x7f) {
      let end = i + 1;
      while (end < query.length && query.charCodeAt(end) > 0x7f) end++;
      const enc = encodeNonAscii(query.slice(i, end));
      if (enc === null) return null;
      out += query.slice(last, i) + enc;
      last = end;
      i = end - 1;
      continue;
    }
    out += query.slice(last, i) + pct(c);
    last = i + 1;
  }
  return last === 0 ? query : out + query.slice(last);
}

/**
 * Normalise an origin-form request target (`/path?query`); null means 400.
 * RFC 9112 §3.2.1: origin-form = absolute-path [ "?" query ].
 */
export function normaliseTarget(target: string): NormalisedTarget | null {
  const out = { path: "", query: "" };
  return normaliseTargetInto(target, out) ? out : null;
}

/**
 * normaliseTarget into `out` (written only when the target is valid): the proxy's request
 * context takes the parts without an object of their own per request (bench/allocations.ts).
 */
export function normaliseTargetInto(target: string, out: { path: string; query: string }): boolean {
  const q = target.indexOf("?");
  const path = normalisePath(q < 0 ? target : target.slice(0, q));
  if (path === null) return false;
  let query = "";
  if (q >= 0) {
    const nq = normaliseQuery(target.slice(q));
    if (nq === null) return false;
    query = nq;
  }
  out.path = path;
  out.query = query;
  return true;
}
