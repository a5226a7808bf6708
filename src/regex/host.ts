// One regex-mode host, compiled: its locations in nginx's order, each path compiled once, and
// the per-request lookup (first matching location, then its captures if it rewrites).
import { compilePathRegex, type PathMatch, type PathRegex } from "./path-regex.ts";
import { type HostPath, type RegexLocation, regexLocations } from "./locations.ts";
import { RegexLocationSet } from "./set.ts";

export interface CompiledLocation<T> {
  readonly location: RegexLocation<T>;
  readonly re: PathRegex;
}

export interface RefusedLocation<T> {
  readonly location: RegexLocation<T>;
  /** For a diagnostic naming the Ingress and the path (see compilePathRegex). */
  readonly reason: string;
}

export interface RegexHost<T> {
  /** Served locations, in the order nginx tries them. */
  readonly locations: readonly CompiledLocation<T>[];
  /** Locations left out because their path cannot be run safely; order kept for reporting. */
  readonly refused: readonly RefusedLocation<T>[];
  /** The first location whose `^<path>` matches the decoded, normalised path, or null. */
  first(uri: string): CompiledLocation<T> | null;
  /** first(), with the captures its rewrite would use. */
  match(uri: string): { readonly location: CompiledLocation<T>; readonly match: PathMatch } | null;
}

/**
 * Compile the host's paths (as for expandLocations: every location of the host, the implicit
 * "/" first, in ingress-nginx's order). A path that compilePathRegex refuses is left out, so
 * requests it would have taken go to the next location that matches.
 */
export function compileRegexHost<T>(paths: readonly HostPath<T>[]): RegexHost<T> {
  const locations: CompiledLocation<T>[] = [];
  const refused: RefusedLocation<T>[] = [];
  const cache = new Map<string, ReturnType<typeof compilePathRegex>>();
  for (const location of regexLocations(paths)) {
    let r = cache.get(location.path);
    if (r === undefined) {
      r = compilePathRegex(location.path);
      cache.set(location.path, r);
    }
    if (r.ok) locations.push({ location, re: r.re });
    else refused.push({ location, reason: r.reason });
  }
  const set = new RegexLocationSet(locations.map((l) => l.re));
  const first = (uri: string) => {
    const i = set.firstMatch(uri);
    return i < 0 ? null : locations[i]!;
  };
  return {
    locations,
    refused,
    first,
    match(uri) {
      const location = first(uri);
      if (location === null) return null;
      const match = location.re.match(uri);
      return match === null ? null : { location, match };
    },
  };
}
