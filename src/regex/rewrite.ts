// rewrite-target: the replacement of nginx's `rewrite "(?i)<path>" <target> break;`.
//
// ingress-nginx accepts the annotation only when it matches RegexPathWithCapture,
// `^/?[-._~a-zA-Z0-9/:$]*$`, and has no CR/LF (internal/ingress/annotations/parser/validators.go);
// otherwise it logs a warning and uses "" (annotations/rewrite/main.go), i.e. no rewrite and
// no regex mode. So `?`, `&`, `=`, `{` and `}` never reach nginx: the query string is always
// kept and the `${name}` form cannot occur.
//
// nginx then compiles the target as a script (src/http/ngx_http_script.c,
// ngx_http_script_compile): `$` plus one digit 1-9 is that capture; `$` plus a run of
// [A-Za-z0-9_] is a variable, which for a named capture of the path is that capture (the
// regex sets it, ngx_http_regex_exec; variable names are case-insensitive,
// ngx_http_variables.c) and otherwise an nginx variable; a `$` followed by
// nothing of the kind is "invalid variable name" and the configuration does not load. Portico
// implements the captures and refuses other variables with a reason. A capture past the
// number matched expands to "" (ngx_http_script_copy_capture_code checks n < r->ncaptures).
import type { PathMatch, PathRegex } from "./path-regex.ts";

/** ingress-nginx's RegexPathWithCapture, with its CR/LF check folded in (neither is in the set). */
const REWRITE_TARGET_CHARS = /^\/?[-._~a-zA-Z0-9/:$]*$/;

/**
 * Whether ingress-nginx keeps this rewrite-target value. A value it drops behaves as if the
 * annotation were absent: no rewrite, and it does not switch the host to regex mode.
 */
export function isValidRewriteTarget(value: string): boolean {
  return REWRITE_TARGET_CHARS.test(value);
}

type Part = { readonly literal: string } | { readonly capture: number };

export interface RewriteTarget {
  /** The annotation value. */
  readonly target: string;
  /**
   * nginx's rewrite answers the client with a 302 to the expanded target instead of changing
   * the URI when the replacement starts with "http://" or "https://" (case-sensitive,
   * ngx_http_rewrite_module.c ngx_http_rewrite); the query string is appended then too.
   */
  readonly redirect: boolean;
  /** The new URI (or Location, when `redirect`) for one match of the path. */
  expand(m: PathMatch): string;
}

export type RewriteTargetResult = { readonly ok: true; readonly rewrite: RewriteTarget } | { readonly ok: false; readonly reason: string };

/** Compile a target against the path it rewrites (its named groups are the variables it may use). */
export function compileRewriteTarget(target: string, re: Pick<PathRegex, "groupNames">): RewriteTargetResult {
  if (!isValidRewriteTarget(target)) {
    return { ok: false, reason: "may contain only letters, digits and - . _ ~ / : $ (ingress-nginx ignores other values)" };
  }
  return compileTemplate(target, re);
}

/**
 * The `$` expansion of compileRewriteTarget without its character check, for other values
 * nginx expands with the same captures (x-forwarded-prefix, whose own check allows spaces).
 */
export function compileTemplate(target: string, re: Pick<PathRegex, "groupNames">): RewriteTargetResult {
  const named = namedCaptures(re.groupNames);
  const parts: Part[] = [];
  let literal = "";
  let i = 0;
  while (i < target.length) {
    const c = target[i]!;
    if (c !== "$") {
      literal += c;
      i++;
      continue;
    }
    const d = target[i + 1];
    if (d !== undefined && d >= "1" && d <= "9") {
      if (literal !== "") parts.push({ literal });
      literal = "";
      parts.push({ capture: d.charCodeAt(0) - 48 });
      i += 2;
      continue;
    }
    const name = /^[A-Za-z0-9_]*/.exec(target.slice(i + 1))![0];
    if (name === "") return { ok: false, reason: `has a "$" at offset ${i} that starts no capture or variable (nginx refuses the configuration)` };
    const group = named.get(name.toLowerCase());
    if (group === undefined) {
      return {
        ok: false,
        reason: `uses $${name}, which is not a named capture of the path; Portico expands only $1…$9 and the path's named captures, not nginx variables`,
      };
    }
    if (literal !== "") parts.push({ literal });
    literal = "";
    parts.push({ capture: group });
    i += 1 + name.length;
  }
  if (literal !== "") parts.push({ literal });
  const redirect = target.startsWith("http://") || target.startsWith("https://");
  return { ok: true, rewrite: { target, redirect, expand: (m) => expandParts(parts, m) } };
}

function expandParts(parts: readonly Part[], m: PathMatch): string {
  let out = "";
  for (const p of parts) {
    out += "literal" in p ? p.literal : (m.groups[p.capture] ?? "");
  }
  return out;
}

/**
 * Lower-cased name → group. Two names that differ only in case are one nginx variable; the
 * regex sets the variables in PCRE's name-table order (sorted by name), so the last one wins.
 */
function namedCaptures(groupNames: Readonly<Record<string, number>>): Map<string, number> {
  const out = new Map<string, number>();
  for (const name of Object.keys(groupNames).sort()) out.set(name.toLowerCase(), groupNames[name]!);
  return out;
}

/**
 * One-shot form: expand `target` for a match, or null when the target is refused. The data
 * plane should hold a compiled RewriteTarget instead of parsing per request.
 */
export function expandRewrite(target: string, re: Pick<PathRegex, "groupNames">, m: PathMatch): string | null {
  const r = compileRewriteTarget(target, re);
  return r.ok ? r.rewrite.expand(m) : null;
}
