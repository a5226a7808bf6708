// What ingress-nginx's rewrite-target does to one request, given the captures of the regex
// location that matched (table/regex.ts): the path forwarded, a 302, or a refusal (500). The
// proxy's rewrite stage (kinds/rewrite.ts) and explain (compile/explain.ts) both call it, so
// they agree. Pure.
//
// ingress-nginx writes `rewrite "(?i)<path>" <target> break;` (template.go buildProxyPass).
// nginx (ngx_http_rewrite_module.c ngx_http_rewrite, ngx_http_script.c regex start/end codes):
// - a target starting with "http://" or "https://" answers 302 with Location = the expanded
//   target and the request's arguments appended after "?" (the target cannot end in "?", the
//   only way to drop them, as ingress-nginx refuses "?" in targets);
// - otherwise the URI becomes the expanded target, the arguments stay, and an empty URI is a
//   500 ("the rewritten URI has a zero length");
// - captures are copied from the decoded URI ($uri) as they are; proxy_pass then escapes the new
//   URI (NGX_ESCAPE_URI) before sending it.
// Portico sends only a normalised path (src/request/target.ts: what it routes is what it
// forwards), so the expanded path is escaped where a path cannot carry a character as it is,
// then normalised; a result the normaliser refuses, or one that is not an absolute path
// (nginx would send it as is), is refused: the caller answers 500.
import { compileRewriteTarget, compileTemplate, type PathMatch, type PathRegex, type RewriteTarget, type RewriteTargetResult } from "../regex/index.ts";
import { normalisePath } from "../request/target.ts";

export type RewriteOutcome =
  | { readonly kind: "path"; readonly path: string }
  | { readonly kind: "redirect"; readonly location: string }
  | { readonly kind: "refused"; readonly reason: string };

// Compiled targets per path regex (a target's named variables are that regex's groups).
const targets = new WeakMap<PathRegex, Map<string, RewriteTargetResult>>();

function compiled(target: string, re: PathRegex, template: boolean): RewriteTargetResult {
  let byTarget = targets.get(re);
  if (byTarget === undefined) targets.set(re, (byTarget = new Map()));
  const key = template ? `\u0000${target}` : target;
  let r = byTarget.get(key);
  if (r === undefined) {
    r = template ? compileTemplate(target, re) : compileRewriteTarget(target, re);
    // Two or three per regex in practice (a target and an x-forwarded-prefix); a bound keeps
    // a table built by hand from growing it.
    if (byTarget.size < 16) byTarget.set(key, r);
  }
  return r;
}

// Printable ASCII a routed path keeps as it is (src/request/target.ts), minus "?" (it would
// start the query). Everything else is escaped: "%" (so that an escape in a capture stays data,
// as nginx's NGX_ESCAPE_URI does), ";" (the normaliser refuses it raw; nginx would send it raw),
// space, "#", "\", the characters Bun's URL parser encodes anyway, and non-ASCII as UTF-8.
const KEEP = new Uint8Array(128);
for (let c = 0x21; c < 0x7f; c++) KEEP[c] = 1;
for (const c of "%?#;\\\"<>^`{}") KEEP[c.charCodeAt(0)] = 0;

/** `s` with every character KEEP does not list percent-encoded as UTF-8; null for a lone surrogate. */
export function escapePathText(s: string): string | null {
  let out = "";
  let last = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80 && KEEP[c] === 1) continue;
    let end = i + 1;
    if (c >= 0xd800 && c <= 0xdbff && end < s.length) end++;
    // encodeURIComponent escapes every character KEEP leaves out (and keeps those it lists).
    let enc: string;
    try {
      enc = encodeURIComponent(s.slice(i, end));
    } catch {
      return null;
    }
    out += s.slice(last, i) + enc;
    last = end;
    i = end - 1;
  }
  return last === 0 ? s : out + s.slice(last);
}

/** The match with its captures escaped as escapePathText does (null: one cannot be). */
function escapedMatch(m: PathMatch): PathMatch | null {
  const groups: string[] = [];
  for (const g of m.groups) {
    const e = escapePathText(g);
    if (e === null) return null;
    groups.push(e);
  }
  const named: Record<string, string> = {};
  for (const [k, g] of Object.entries(m.named)) {
    const e = escapePathText(g);
    if (e === null) return null;
    named[k] = e;
  }
  return { groups, named };
}

/**
 * The rewrite of one request: `target` expanded with the captures `m` of `re` (the location
 * that matched the decoded path), `query` ("" or "?…", as forwarded) kept.
 */
export function rewriteRequest(target: string, re: PathRegex, m: PathMatch, query: string): RewriteOutcome {
  const c = compiled(target, re, false);
  if (!c.ok) return { kind: "refused", reason: `rewrite-target ${JSON.stringify(target)} ${c.reason}` };
  const rw: RewriteTarget = c.rewrite;
  const escaped = escapedMatch(m);
  if (escaped === null) return { kind: "refused", reason: "a capture is not well-formed text" };
  const expanded = rw.expand(escaped);
  if (rw.redirect) return { kind: "redirect", location: expanded + query };
  if (expanded === "") return { kind: "refused", reason: "the rewritten path is empty" };
  if (expanded.charCodeAt(0) !== 0x2f) return { kind: "refused", reason: `the rewritten path ${JSON.stringify(expanded)} does not start with "/"` };
  const path = normalisePath(expanded);
  if (path === null) return { kind: "refused", reason: `the rewritten path ${JSON.stringify(expanded)} is not one Portico forwards` };
  return { kind: "path", path };
}

/**
 * The X-Forwarded-Prefix value for a rewritten request: `value` with `$1`… expanded from the
 * same captures (nginx's proxy_set_header value is a script too), or null when the value uses
 * a variable Portico does not have (the header is then not sent).
 */
export function forwardedPrefix(value: string, re: PathRegex, m: PathMatch): string | null {
  const c = compiled(value, re, true);
  if (!c.ok) return null;
  const escaped = escapedMatch(m);
  return escaped === null ? null : c.rewrite.expand(escaped);
}
