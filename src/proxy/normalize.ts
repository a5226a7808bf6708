// Path normalisation for routing (issue 3 point 3). The path we route is exactly the path we
// forward, so a request can never match `/app` and reach the backend as `/admin`.
//
// Note (DESIGN §5): Bun builds `req.url` with the WHATWG URL parser, which already turns a raw
// `\` into `/` and resolves `.`, `..`, `%2e` and `%2e%2e` segments before we see the request.
// We still apply every rule below ourselves so the policy does not depend on that behaviour
// (and so fallback URLs Bun leaves unparsed are covered).

export interface NormalizedTarget {
  /** Absolute path, dot segments resolved, unreserved escapes decoded. */
  readonly path: string;
  /** Query string including the leading "?", or "" (kept as received, never routed). */
  readonly query: string;
}

const HEX = /^[0-9A-Fa-f]{2}$/;

// RFC 3986 §2.3: unreserved = ALPHA / DIGIT / "-" / "." / "_" / "~"; §6.2.2.2 says decoding
// them does not change the resource, so we do it to get one canonical routed form.
function isUnreserved(c: number): boolean {
  return (
    (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) ||
    c === 0x2d || c === 0x2e || c === 0x5f || c === 0x7e
  );
}

/** Decode unreserved escapes; null when the path must be rejected with 400. */
function decodePath(p: string): string | null {
  let out = "";
  let last = 0;
  for (let i = 0; i < p.length; i++) {
    const c = p.charCodeAt(i);
    // RFC 9112 §3.2 / RFC 3986 §3.3: no controls, space, backslash or '#' in a request path.
    // A raw backslash is rejected because some backends treat it as a separator.
    if (c <= 0x20 || c === 0x7f || c === 0x5c || c === 0x23) return null;
    if (c !== 0x25) continue;
    const hex = p.slice(i + 1, i + 3);
    // RFC 3986 §2.1: "%" must start a pct-encoded triplet.
    if (!HEX.test(hex)) return null;
    const v = parseInt(hex, 16);
    // Encoded "/" "\" and NUL would let the routed path and the backend's view of it differ
    // (a proxy that routes "/app%2F..%2Fadmin" as one segment, a backend that decodes it).
    if (v === 0x2f || v === 0x5c || v === 0x00) return null;
    if (isUnreserved(v)) {
      out += p.slice(last, i) + String.fromCharCode(v);
      last = i + 3;
    }
    i += 2;
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
 * Normalise an origin-form request target (`/path?query`). Returns null for 400.
 * RFC 9112 §3.2.1: origin-form = absolute-path [ "?" query ]; anything else is not routable here.
 */
export function normalizeTarget(target: string): NormalizedTarget | null {
  const q = target.indexOf("?");
  const rawPath = q < 0 ? target : target.slice(0, q);
  const query = q < 0 ? "" : target.slice(q);
  if (rawPath.charCodeAt(0) !== 0x2f) return null;
  // The query is forwarded untouched but must not carry controls or a fragment either.
  for (let i = 0; i < query.length; i++) {
    const c = query.charCodeAt(i);
    if (c <= 0x20 || c === 0x7f || c === 0x23) return null;
  }
  const decoded = decodePath(rawPath);
  if (decoded === null) return null;
  return { path: removeDotSegments(decoded), query };
}
