// Path elements for Prefix matching. The Ingress API (networking/v1 types.go, HTTPIngressPath):
// "Matching is done on a path element by element basis. A path element refers to the list
// of labels in the path split by the '/' separator ... a trailing '/' is ignored".
// So: drop the leading "/", drop one trailing "/", split the rest on "/" ("/" → no element).
// Empty elements ("/a//b") are kept as "" so they only match the same spelling.

/** Elements of a rule or request path, as described above. */
export function pathSegments(path: string): string[] {
  let end = path.length;
  if (end > 1 && path.charCodeAt(end - 1) === 47 /* / */) end--;
  const start = path.charCodeAt(0) === 47 ? 1 : 0;
  if (end <= start) return [];
  return path.slice(start, end).split("/");
}

/** Does a Prefix rule with these elements match a request with those elements? */
export function isSegmentPrefix(rule: readonly string[], request: readonly string[]): boolean {
  if (rule.length > request.length) return false;
  for (let i = 0; i < rule.length; i++) if (rule[i] !== request[i]) return false;
  return true;
}

/**
 * isSegmentPrefix(pathSegments(rule), pathSegments(path)) without building either list: the
 * element text of `rule` is a prefix of that of `path`, ending where an element ends. For
 * explain, which tests thousands of rule paths against one request path.
 */
export function isPathPrefix(rule: string, path: string): boolean {
  let re = rule.length;
  if (re > 1 && rule.charCodeAt(re - 1) === 47) re--;
  const rs = rule.charCodeAt(0) === 47 ? 1 : 0;
  if (re <= rs) return true; // no elements: a prefix of every path
  let pe = path.length;
  if (pe > 1 && path.charCodeAt(pe - 1) === 47) pe--;
  const ps = path.charCodeAt(0) === 47 ? 1 : 0;
  const len = re - rs;
  if (pe - ps < len) return false;
  for (let i = 0; i < len; i++) if (rule.charCodeAt(rs + i) !== path.charCodeAt(ps + i)) return false;
  return ps + len === pe || path.charCodeAt(ps + len) === 47;
}
