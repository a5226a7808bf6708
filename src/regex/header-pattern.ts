// `canary-by-header-pattern` on the linear-time engine. ingress-nginx tests the request header
// with `ngx.re.match(header, pattern)` (rootfs/etc/nginx/lua/balancer.lua,
// route_to_alternative_balancer): PCRE, no options, so unanchored and case-sensitive. The
// pattern is translated to RE2 syntax the way regex paths are (translate.ts) and run by re2js,
// so no header value can make a match take more than (program size × value length) steps:
// docs/design.md "Regular expressions". A tenant's pattern never reaches a JS RegExp.
import { RE2JS } from "re2js";
import { MAX_PATTERN_LENGTH, MAX_PROGRAM_SIZE } from "./path-regex.ts";
import { translatePcre } from "./translate.ts";

export interface HeaderPattern {
  /** Whether the pattern matches anywhere in `value` (ngx.re.match without the `a` option). */
  test(value: string): boolean;
}

export type HeaderPatternResult = { readonly ok: true; readonly re: HeaderPattern } | { readonly ok: false; readonly reason: string };

/** `caseless`: nginx's NGX_REGEX_CASELESS (gzip_disable compiles its patterns so). */
export function compileHeaderPattern(pattern: string, caseless = false): HeaderPatternResult {
  if (pattern.length > MAX_PATTERN_LENGTH) return { ok: false, reason: `is longer than ${MAX_PATTERN_LENGTH} characters` };
  const t = translatePcre(pattern);
  if (!t.ok) return t;
  let re: RE2JS;
  try {
    re = RE2JS.compile(t.source, caseless ? RE2JS.CASE_INSENSITIVE : 0);
  } catch (e) {
    const msg = (e instanceof Error ? e.message : String(e)).replace(/^error parsing regexp:\s*/, "");
    return { ok: false, reason: `is not a regular expression Portico can run (${msg})` };
  }
  if (re.programSize() > MAX_PROGRAM_SIZE) {
    return { ok: false, reason: `compiles to ${re.programSize()} instructions; regular expressions are limited to ${MAX_PROGRAM_SIZE}` };
  }
  return { ok: true, re: { test: (value) => re.matcher(value).find() } };
}
