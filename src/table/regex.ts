// A host in ingress-nginx's regex mode (docs/design.md "Regular expressions"): its locations
// in the order nginx tries them, each compiled once, and the lookup that runs them. The table
// keeps the locations as plain data (RegexLocationSpec: the pattern as written and the route
// it leads to), which is what crosses IPC to the workers (table/wire.ts); every process
// compiles the patterns itself.
import { compilePathRegex, type PathMatch, type PathRegex, type PathRegexResult, RegexLocationSet } from "../regex/index.ts";
import type { Match, RegexHit, RegexLocation, RegexLocationSpec, RegexRoutes, Route } from "./types.ts";

// Compiling a path costs tens of microseconds and a host is rebuilt whenever one of its
// Services or EndpointSlices changes, so compiled paths are kept, a bounded number of them
// (PathRegex objects are immutable: matching creates its own matcher).
const CACHE_MAX = 2048;
const cache = new Map<string, PathRegexResult>();

/** compilePathRegex, remembering the last CACHE_MAX distinct paths. */
export function compilePath(path: string): PathRegexResult {
  let r = cache.get(path);
  if (r !== undefined) return r;
  r = compilePathRegex(path);
  if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value as string);
  cache.set(path, r);
  return r;
}

/**
 * Compile a host's locations. `routes` is the host's HostRoutes.routes (what spec.route
 * indexes). Throws on a spec the compiler would not have produced (a path that does not
 * compile, a route index out of range): a corrupt table is refused whole.
 */
export function buildRegexRoutes(
  specs: readonly RegexLocationSpec[],
  routes: readonly Route[],
  hostKey: string,
  via: Match["via"],
): RegexRoutes {
  const locations = specs.map((spec): RegexLocation => {
    const r = compilePath(spec.path);
    if (!r.ok) throw new Error(`regex location ${JSON.stringify(spec.path)} of ${hostKey}: ${r.reason}`);
    if (spec.route === -1) return { spec, re: r.re, match: null };
    const route = routes[spec.route];
    if (route === undefined) throw new Error(`regex location ${JSON.stringify(spec.path)} of ${hostKey}: route ${spec.route} out of range`);
    return { spec, re: r.re, match: { route, hostKey, via, regex: { location: spec.path, re: r.re, captures: null } } };
  });
  return { specs, locations, set: new RegexLocationSet(locations.map((l) => l.re)) };
}

/**
 * The path as nginx matches it: `$uri`, every escape decoded. The routed path keeps escapes
 * of characters other than unreserved ones (src/request/target.ts), so `/caf%C3%A9` is matched
 * as `/café` and `/a%20b` as `/a b`, as nginx does. The normaliser has refused escapes that
 * are not UTF-8, and encoded "/" and "\" (400), so decoding cannot split or join segments.
 * Null when the string does not decode (not a routed path): no location matches it.
 */
export function decodedPath(path: string): string | null {
  if (!path.includes("%")) return path;
  try {
    return decodeURIComponent(path);
  } catch {
    return null;
  }
}

/** The first location matching `path` (a routed path), or null (the default route applies). */
export function matchRegex(rx: RegexRoutes, path: string): Match | null {
  const uri = decodedPath(path);
  if (uri === null) return null;
  const i = rx.set.firstMatch(uri);
  if (i < 0) return null;
  const loc = rx.locations[i] as RegexLocation;
  const m = loc.match;
  if (m === null || !loc.spec.captures) return m;
  // Captures cost 2-4 times a set pass (docs/design.md "Regular expressions"): only for a
  // location whose rewrite needs them.
  const captures = loc.re.match(uri);
  return { route: m.route, hostKey: m.hostKey, via: m.via, regex: { location: m.regex.location, re: m.regex.re, captures } };
}
