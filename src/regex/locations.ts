// Which hosts are in regex mode, and the locations of such a host in nginx's match order.
//
// Everything here restates ingress-nginx (kubernetes/ingress-nginx, read at dbb11b92):
//  - internal/k8s/main.go SetDefaultNGINXPathType: a missing pathType and ImplementationSpecific
//    are Prefix;
//  - internal/ingress/controller/template/template.go needsRewrite / enforceRegexModifier: a host
//    is in regex mode when any of its locations has use-regex or a rewrite-target that differs
//    from its path; buildLocation then writes EVERY location as `~* "^<path>"`, whatever its type;
//  - internal/ingress/controller/location.go updateServerLocations: a Prefix location other than
//    "/" without its own use-regex or rewrite becomes "<path>/" (a trailing slash added if
//    missing) plus an Exact copy of the original path, unless an Exact location with that path
//    already exists; in regex mode both copies are regexes too;
//  - internal/ingress/controller/controller.go (after createServers): the locations are sorted
//    stably by path in reverse byte order, then stably by path length, longest first; nginx
//    tries regex locations in that order and the first that matches wins
//    (docs/user-guide/ingress-path-matching.md "Path Priority").

export type DeclaredPathType = "Exact" | "Prefix" | "ImplementationSpecific";

export interface HostPath<T> {
  /** The path as written in the Ingress; "" is "/" (controller.go uses rootLocation for it). */
  readonly path: string;
  readonly pathType: DeclaredPathType | undefined;
  /** The location's use-regex annotation, parsed (an invalid value is false in ingress-nginx). */
  readonly useRegex: boolean;
  /**
   * The location's rewrite-target, or "" when absent or refused by isValidRewriteTarget
   * (ingress-nginx then uses "", annotations/rewrite/main.go).
   */
  readonly rewriteTarget: string;
  /** The caller's handle (backend, Ingress, annotations); carried through untouched. */
  readonly ref: T;
}

export interface RegexLocation<T> {
  /** The regex written after `^` in the location. */
  readonly path: string;
  /** Which of updateServerLocations' outputs this is. */
  readonly origin: "as-written" | "slash-added" | "exact-copy";
  readonly ref: T;
}

const normalPath = (p: string) => (p === "" ? "/" : p);

/** template.go needsRewrite: a rewrite-target that differs from the path. */
export function needsRewrite(p: Pick<HostPath<unknown>, "path" | "rewriteTarget">): boolean {
  return p.rewriteTarget !== "" && p.rewriteTarget !== normalPath(p.path);
}

/**
 * template.go enforceRegexModifier, given every location of one host from every Ingress
 * (including the implicit "/" location, which carries the first Ingress's annotations).
 */
export function hostUsesRegex(paths: readonly Pick<HostPath<unknown>, "path" | "useRegex" | "rewriteTarget">[]): boolean {
  return paths.some((p) => p.useRegex || needsRewrite(p));
}

/**
 * location.go updateServerLocations for one host, in regex mode. `paths` must be the host's
 * locations in ingress-nginx's order: the implicit "/" location first, then each Ingress's
 * paths in processing order, a duplicate path+type already dropped (controller.go).
 */
export function expandLocations<T>(paths: readonly HostPath<T>[]): RegexLocation<T>[] {
  const typeOf = (p: HostPath<T>) => (p.pathType === "Exact" ? "Exact" : "Prefix");
  const exact = new Set(paths.filter((p) => typeOf(p) === "Exact").map((p) => normalPath(p.path)));
  const out: RegexLocation<T>[] = [];
  for (const p of paths) {
    const path = normalPath(p.path);
    if (path === "/" || typeOf(p) !== "Prefix" || needsRewrite(p) || p.useRegex) {
      out.push({ path, origin: "as-written", ref: p.ref });
      continue;
    }
    const slashed = path.endsWith("/") ? path : `${path}/`;
    out.push({ path: slashed, origin: "slash-added", ref: p.ref });
    if (!exact.has(path)) out.push({ path, origin: "exact-copy", ref: p.ref });
  }
  return out;
}

/** Byte-order comparison of two strings as UTF-8, as Go's string `>` compares them. */
function compareUtf8(a: string, b: string): number {
  // UTF-16 code-unit order differs from UTF-8 byte order only when surrogates meet code units
  // U+E000..U+FFFF; comparing code points fixes that.
  const ia = a[Symbol.iterator]();
  const ib = b[Symbol.iterator]();
  for (;;) {
    const x = ia.next();
    const y = ib.next();
    if (x.done || y.done) return x.done && y.done ? 0 : x.done ? -1 : 1;
    const cx = x.value.codePointAt(0)!;
    const cy = y.value.codePointAt(0)!;
    if (cx !== cy) return cx - cy;
  }
}

/** UTF-8 length, as Go's len(string). */
function utf8Length(s: string): number {
  let n = 0;
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    n += c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
  }
  return n;
}

/**
 * controller.go's two stable sorts: by path descending, then by length descending. The net
 * order is longest first, equal lengths in reverse byte order, equal paths in input order.
 */
export function orderLocations<L extends { readonly path: string }>(locations: readonly L[]): L[] {
  // Array.prototype.sort is stable (ECMA-262 since ES2019), as sort.SliceStable is.
  const byPath = [...locations].sort((a, b) => compareUtf8(b.path, a.path));
  return byPath.sort((a, b) => utf8Length(b.path) - utf8Length(a.path));
}

/** The regex locations of one host in regex mode, in the order nginx tries them. */
export function regexLocations<T>(paths: readonly HostPath<T>[]): RegexLocation<T>[] {
  return orderLocations(expandLocations(paths));
}
