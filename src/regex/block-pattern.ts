// ingress-nginx's block-user-agents and block-referers on the linear-time engine. nginx.tmpl
// writes each entry as a key of `map $http_user_agent $block_ua` (`$http_referer $block_ref`)
// with the value 1, and every server answers 403 when it is set. nginx's map (ngx_http_map
// module) reads a key starting with `~` as a case-sensitive PCRE and `~*` as a caseless one,
// both unanchored; any other key is an exact value, compared without regard to case (the map's
// hash lowercases its keys and the value looked up, ngx_http_map_find). An absent header is the
// empty value. The regexes are translated and bounded as canary-by-header-pattern's are
// (header-pattern.ts; docs/design.md "Regular expressions"): no entry reaches a JS RegExp.
import { compileHeaderPattern, type HeaderPattern } from "./header-pattern.ts";

/** Whether a value is blocked by any entry. */
export type BlockTest = (value: string) => boolean;

function regexOf(entry: string): string | null {
  if (entry.startsWith("~*")) return `(?i)${entry.slice(2)}`;
  if (entry.startsWith("~")) return entry.slice(1);
  return null;
}

/** Why `entry` cannot be used (a regex the engine refuses), or null. */
export function blockPatternProblem(entry: string): string | null {
  const re = regexOf(entry);
  if (re === null) return null;
  const c = compileHeaderPattern(re);
  return c.ok ? null : `the regular expression ${c.reason}`;
}

/**
 * The test for a list (null: empty, nothing blocked). An entry that does not compile blocks
 * every value: the list was checked where it was read (config/values.ts), so this only guards a
 * list that reached a worker some other way, and access control fails closed.
 */
export function compileBlockList(list: readonly string[]): BlockTest | null {
  if (list.length === 0) return null;
  const exact = new Set<string>();
  const patterns: HeaderPattern[] = [];
  for (const entry of list) {
    const re = regexOf(entry);
    if (re === null) {
      exact.add(entry.toLowerCase());
      continue;
    }
    const c = compileHeaderPattern(re);
    if (!c.ok) return () => true;
    patterns.push(c.re);
  }
  return (value) => exact.has(value.toLowerCase()) || patterns.some((p) => p.test(value));
}
