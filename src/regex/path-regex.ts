// A regex-mode path, compiled once, matched per request in time linear in the path.
//
// ingress-nginx writes each path of a regex-mode host as `location ~* "^<path>"` and, when the
// path has a rewrite-target, `rewrite "(?i)<path>" <target> break;` inside it (template.go
// buildLocation/buildProxyPass). So the location test is case-insensitive and anchored at the
// start only (a prefix match), and the captures `$1…` come from the same path searched without
// the `^`. The engine is re2js (a port of RE2): no backtracking, so no pattern can make a match
// take more than (program size × path length) steps: docs/design.md "Regular expressions".
import { RE2JS } from "re2js";
import { translatePcre } from "./translate.ts";

/** Longest path accepted in regex mode, in UTF-16 code units (as the Ingress spells it). */
export const MAX_PATTERN_LENGTH = 1024;
/**
 * Largest compiled program accepted, in RE2 instructions. A match costs at most about
 * (instructions × path length) steps, so this bounds the worst request; a literal path of
 * ~990 characters still fits, as do `{n,m}` repeats up to a few hundred.
 */
export const MAX_PROGRAM_SIZE = 1000;

export interface PathMatch {
  /** groups[0] is the whole match; groups[n] is capture n, "" when it took no part (nginx's $n). */
  readonly groups: readonly string[];
  /** Named captures, "" when unmatched: nginx makes each one a variable of that name. */
  readonly named: Readonly<Record<string, string>>;
}

export type PathRegexResult = { readonly ok: true; readonly re: PathRegex } | { readonly ok: false; readonly reason: string };

export class PathRegex {
  /**
   * @param path the path as written in the Ingress
   * @param source the RE2 translation of `path`, without an anchor
   * @param location `^` + source, case-insensitive: the nginx `location ~*` test
   * @param search source unanchored, case-insensitive: nginx's `rewrite "(?i)<path>"`; the same
   *   object as `location` when both give the same captures (see compilePathRegex)
   */
  private constructor(
    readonly path: string,
    readonly source: string,
    private readonly location: RE2JS,
    private readonly search: RE2JS,
  ) {
    this.groupCount = location.groupCount();
    this.groupNames = location.namedGroups();
    this.programSize = location.programSize();
  }

  /** Number of capture groups (named groups are numbered too, as in PCRE). */
  readonly groupCount: number;
  /** Group name → number. */
  readonly groupNames: Readonly<Record<string, number>>;
  /** Instructions in the compiled location program. */
  readonly programSize: number;

  /** The `^<path>` pattern this location tests, in RE2 syntax (for /debug/explain). */
  get locationSource(): string {
    return `^${this.source}`;
  }

  /** Whether nginx's `location ~* "^<path>"` matches `uri` (the decoded, normalised path). */
  test(uri: string): boolean {
    // find() asks the engine for the match bounds, which keeps it off the lazily built DFA:
    // that cache (up to 8 MB per pattern in re2js) is left to the per-host set (set.ts).
    return this.location.matcher(uri).find();
  }

  /** The location test, and on a match the captures nginx's rewrite of this path would see. */
  match(uri: string): PathMatch | null {
    const lm = this.location.matcher(uri);
    if (!lm.find()) return null;
    const m = this.search === this.location ? lm : this.search.matcher(uri);
    // The search always matches when the location did: `^P` matching implies `P` matching.
    if (m !== lm && !m.find()) return null;
    const groups: string[] = [];
    for (let g = 0; g <= this.groupCount; g++) groups.push(m.group(g) ?? "");
    const named: Record<string, string> = {};
    for (const [name, g] of Object.entries(this.groupNames)) named[name] = groups[g] ?? "";
    return { groups, named };
  }

  /** @internal compilePathRegex is the way in. */
  static make(path: string, source: string, location: RE2JS, search: RE2JS): PathRegex {
    return new PathRegex(path, source, location, search);
  }
}

/**
 * Compile a path the way ingress-nginx's regex mode uses it. A refusal's reason is a sentence
 * fragment for a diagnostic that names the Ingress and the path ("path "/x(?=y)" <reason>").
 */
export function compilePathRegex(path: string): PathRegexResult {
  if (path.length > MAX_PATTERN_LENGTH) {
    return { ok: false, reason: `is ${path.length} characters long; regular expressions are limited to ${MAX_PATTERN_LENGTH}` };
  }
  const t = translatePcre(path);
  if (!t.ok) return t;
  let location: RE2JS;
  let search: RE2JS;
  try {
    // Compiled first so that a syntax error quotes the pattern without the added `^`.
    search = RE2JS.compile(t.source, RE2JS.CASE_INSENSITIVE);
    location = RE2JS.compile(`^${t.source}`, RE2JS.CASE_INSENSITIVE);
    // `^P` and `P` give the same leftmost match and captures whenever `^P` matches, unless a
    // `|` outside every group lets a later alternative of `P` match further right (`^` only
    // binds the first alternative in nginx too). Only then is the second program kept.
    if (!t.topLevelAlternation) search = location;
  } catch (e) {
    return { ok: false, reason: engineReason(e) };
  }
  const size = Math.max(location.programSize(), search.programSize());
  if (size > MAX_PROGRAM_SIZE) {
    return { ok: false, reason: `compiles to ${size} instructions; regular expressions are limited to ${MAX_PROGRAM_SIZE}` };
  }
  return { ok: true, re: PathRegex.make(path, t.source, location, search) };
}

/** re2js's message, minus its prefix, as a reason. */
function engineReason(e: unknown): string {
  const raw = e instanceof Error ? e.message : String(e);
  // re2js quotes the pattern with the flag it was given as a prefix; the user wrote neither.
  const msg = raw.replace(/^error parsing regexp:\s*/, "").replaceAll("`(?i)", "`");
  if (msg.startsWith("invalid repeat count")) return `has a repeat count over 1000 or out of order (${msg})`;
  if (msg.startsWith("expression too large") || msg.startsWith("expression nests too deeply")) return `is too large to compile (${msg})`;
  return `is not a regular expression Portico can run (${msg})`;
}
