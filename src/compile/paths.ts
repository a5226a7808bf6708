// Rule path validation. networking/v1: "Paths must begin with a '/'" for Exact and Prefix;
// we apply the same to ImplementationSpecific (served as Prefix, as ingress-nginx does,
// internal/k8s/main.go). A path has two readings, and which one is served depends on its host
// (compile/host-entry.ts):
// - as a literal path (Exact or Prefix), in the form requests are routed in: the request
//   normaliser of src/request/ (dot segments, "//", escapes) runs on it, so a rule and a
//   request spelled differently for the same resource meet (`/caf%c3%a9` and `/café` both
//   become `/caf%C3%A9`); what it refuses in a request (";", a space, an encoded "/"...) or
//   what a request path cannot hold ("?") cannot be routed as a literal;
// - as written, for a host in ingress-nginx's regex mode, where the path is a regular
//   expression (src/regex/ decides whether it can run).
import { normalisePath } from "../request/target.ts";
import type { PathType } from "../table/types.ts";

type Declared = "Exact" | "Prefix" | "ImplementationSpecific";

export type PathResult =
  | {
      readonly ok: true;
      /** The path as written ("" for ImplementationSpecific is "/"). */
      readonly raw: string;
      /** The literal (routed) form, or `raw` when that has none (see literalProblem). */
      readonly path: string;
      readonly type: PathType;
      /** Why the path cannot be served as a literal path, or null. */
      readonly literalProblem: string | null;
      /**
       * ingress-nginx's admission webhook refuses this Exact/Prefix path under
       * strict-validate-path-type (the default since v1.12); its runtime serves it anyway.
       */
      readonly strictPathType: boolean;
    }
  | { readonly ok: false; readonly message: string };

// internal/ingress/inspector/rules.go validPathType, `(?i)^/[[:alnum:]._\-/]*$`, checked by
// inspector.ValidatePathType for every non-empty path whose type is not ImplementationSpecific.
const STRICT_PATH = /^\/[A-Za-z0-9._\-/]*$/;

// Raw control characters have no place in a path in either reading: RFC 3986 has none, and
// ingress-nginx would write them into nginx's configuration.
const CONTROL = /[\x00-\x1f\x7f]/;

export function validatePath(raw: string | undefined, declared: Declared): PathResult {
  const type: PathType = declared === "Exact" ? "Exact" : "Prefix";
  let path = raw ?? "";
  if (path === "" && declared === "ImplementationSpecific") path = "/";
  if (!path.startsWith("/")) {
    return { ok: false, message: `${declared} path ${JSON.stringify(path)} must start with "/"` };
  }
  if (CONTROL.test(path)) {
    return { ok: false, message: `${declared} path ${JSON.stringify(path)} contains a control character` };
  }
  const strictPathType = declared !== "ImplementationSpecific" && !STRICT_PATH.test(path);
  const literal = path.includes("?") ? null : normalisePath(path);
  if (literal === null) return { ok: true, raw: path, path, type, literalProblem: literalProblem(path, declared), strictPathType };
  return { ok: true, raw: path, path: literal, type, literalProblem: null, strictPathType };
}

/** Why the request normaliser refuses `path` (the README's table of request paths, briefly). */
function literalProblem(path: string, declared: Declared): string {
  const what = `${declared} path ${JSON.stringify(path)}`;
  if (path.includes("?")) return `${what} contains "?", which starts the query string: no request path can match it`;
  if (path.includes("#")) return `${what} contains "#", which starts a fragment: no request path can match it`;
  if (path.includes(";")) return `${what} contains ";", which Portico refuses in request paths (400)`;
  if (path.includes(" ")) return `${what} contains a space, which Portico refuses in request paths (400)`;
  if (/%(2f|5c)/i.test(path)) return `${what} contains an encoded "/" or "\\", which Portico refuses in request paths (400)`;
  return `${what} has a malformed %-escape, an escaped control character or an escape that is not UTF-8, which Portico refuses in request paths (400)`;
}
