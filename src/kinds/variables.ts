// nginx's variables that read the client's request as sent: $arg_NAME, $remote_user and the
// prefixed families $http_NAME, $cookie_NAME, $arg_NAME (ngx_http_variables.c). Both places
// that expand them read these: external authentication's header values (external-auth.ts,
// where a value not found is "") and the access log's template (log/template.ts, where it is
// `-` or nothing by escape mode). So each returns null for "not found" and leaves the
// spelling of that to its caller.
import { cookieValue } from "./cookies.ts";

/** nginx's $arg_NAME: the first argument of that name, raw (not decoded), compared in any case (ngx_http_arg). */
function argOf(query: string, name: string): string | null {
  if (query.length <= 1) return null;
  const want = name.toLowerCase();
  for (const pair of query.slice(1).split("&")) {
    const eq = pair.indexOf("=");
    const k = eq < 0 ? pair : pair.slice(0, eq);
    if (k.toLowerCase() === want) return eq < 0 ? "" : pair.slice(eq + 1);
  }
  return null;
}

/** nginx's $remote_user: the user name of an `Authorization: Basic` field (RFC 7617 §2), or not found. */
export function remoteUser(h: Headers): string | null {
  const a = h.get("authorization");
  // RFC 9110 §5.6.3: the whitespace a field may carry around a token is SP and HTAB.
  const m = a === null ? null : /^basic[ \t]+([A-Za-z0-9+/=]+)[ \t]*$/i.exec(a);
  if (m === null) return null;
  const decoded = Buffer.from(m[1] as string, "base64").toString("latin1");
  const colon = decoded.indexOf(":");
  return colon < 0 ? null : decoded.slice(0, colon);
}

/**
 * $http_NAME (the field, `_` read as `-`), $cookie_NAME (the first cookie of that name,
 * compared in any case) and $arg_NAME for this request: the value, null when not found, or
 * undefined when `name` is none of the three forms.
 */
export function prefixedVariable(name: string, headers: Headers, query: string): string | null | undefined {
  if (name.startsWith("http_")) return headers.get(name.slice(5).replaceAll("_", "-"));
  if (name.startsWith("cookie_")) return cookieValue(headers.get("cookie"), name.slice(7), true);
  if (name.startsWith("arg_")) return argOf(query, name.slice(4));
  return undefined;
}
