// Rule path validation. networking/v1: "Paths must begin with a '/'" for Exact and Prefix;
// we apply the same to ImplementationSpecific (served as Prefix, as ingress-nginx does outside
// regex mode). Characters are limited to RFC 3986 §3.3 `pchar` and "/" plus "%" escapes, so
// "?", "#", spaces and control characters are rejected. %-escapes are decoded, because the
// proxy matches decoded paths.
import type { PathType } from "../table/types.ts";

type Declared = "Exact" | "Prefix" | "ImplementationSpecific";

// unreserved / pct-encoded / sub-delims / ":" / "@" / "/"
const PATH_CHARS = /^\/(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/]|%[0-9A-Fa-f]{2})*$/;

export type PathResult =
  | { readonly ok: true; readonly path: string; readonly type: PathType }
  | { readonly ok: false; readonly message: string };

export function validatePath(raw: string | undefined, declared: Declared): PathResult {
  const type: PathType = declared === "Exact" ? "Exact" : "Prefix";
  let path = raw ?? "";
  if (path === "" && declared === "ImplementationSpecific") path = "/";
  if (!path.startsWith("/")) {
    return { ok: false, message: `${declared} path ${JSON.stringify(path)} must start with "/"` };
  }
  if (!PATH_CHARS.test(path)) {
    return {
      ok: false,
      message: `${declared} path ${JSON.stringify(path)} contains characters outside RFC 3986 path characters`,
    };
  }
  if (!path.includes("%")) return { ok: true, path, type };
  // The proxy matches the decoded request path, so rules are decoded the same way.
  try {
    return { ok: true, path: decodeURIComponent(path), type };
  } catch {
    return { ok: false, message: `${declared} path ${JSON.stringify(path)} has a malformed %-escape` };
  }
}
