// First matching location of a regex-mode host, in one pass over the path.
//
// nginx tries the regex locations in order and stops at the first match. Testing them one by
// one costs one scan per location; an RE2 set scans the path once for all of them and says
// which matched (measured in docs/design.md "Regular expressions": 50 locations in about the
// time of one or two single matches). The lowest matching index is nginx's winner.
import { RE2JS, RE2Set } from "re2js";
import type { PathRegex } from "./path-regex.ts";

/**
 * Memory budget of the set's lazily built DFA. re2js defaults to 8 MB per automaton; a host's
 * set is bounded lower so that many regex hosts cannot grow without limit. When a path
 * exhausts it the DFA starts over or re2js falls back to its NFA: slower, still linear.
 */
export const SET_DFA_BUDGET = 1 << 20;

export class RegexLocationSet {
  private readonly set: RE2Set | null;

  /** `locations` in nginx's order (orderLocations). */
  constructor(private readonly locations: readonly PathRegex[]) {
    this.set = buildSet(locations);
  }

  get size(): number {
    return this.locations.length;
  }

  /** Index of the first location whose `^<path>` matches `uri`, or -1. */
  firstMatch(uri: string): number {
    if (this.set === null) return this.locations.findIndex((l) => l.test(uri));
    const hits = this.set.match(uri);
    let first = -1;
    for (const h of hits) if (first < 0 || h < first) first = h;
    return first;
  }
}

function buildSet(locations: readonly PathRegex[]): RE2Set | null {
  if (locations.length < 2) return null;
  try {
    const set = new RE2Set(RE2Set.UNANCHORED, RE2JS.CASE_INSENSITIVE, SET_DFA_BUDGET);
    for (const l of locations) set.add(l.locationSource);
    set.compile();
    return set;
  } catch {
    // Each pattern compiled alone (compilePathRegex); a set too large to compile as one
    // program falls back to testing the locations in order, which gives the same answer.
    return null;
  }
}
