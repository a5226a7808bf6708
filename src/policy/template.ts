// Values with nginx variables, read once into literal text and variable names so that nothing
// is ever evaluated: the annotation families parse them (auth-url, auth-signin, app-root...)
// and the proxy expands them per request from the same parts (docs/design.md, "Annotations
// and policies").

/** A value with variables: literal text and variable names, in order. */
export type TemplatePart = string | { readonly v: string };

/**
 * Split `text` into literal text and variables: `$name` or `${name}`, name `[A-Za-z0-9_]+`
 * as nginx reads it. `allowed(name)` decides which are accepted; a `$` not starting a
 * variable is refused too (nginx refuses it: "invalid variable name").
 */
export function parseTemplate(text: string, allowed: (name: string) => boolean): { ok: true; parts: TemplatePart[] } | { ok: false; why: string } {
  const parts: TemplatePart[] = [];
  let lit = "";
  let i = 0;
  while (i < text.length) {
    const c = text[i] as string;
    if (c !== "$") {
      lit += c;
      i++;
      continue;
    }
    let name: string;
    let end: number;
    if (text[i + 1] === "{") {
      const close = text.indexOf("}", i + 2);
      name = close < 0 ? "" : text.slice(i + 2, close);
      end = close + 1;
    } else {
      const m = /^[A-Za-z0-9_]*/.exec(text.slice(i + 1)) as RegExpExecArray;
      name = m[0];
      end = i + 1 + name.length;
    }
    if (!/^[A-Za-z0-9_]+$/.test(name)) return { ok: false, why: `a "$" at offset ${i} starts no variable name` };
    if (!allowed(name)) return { ok: false, why: `the variable $${name} is not supported` };
    if (lit !== "") parts.push(lit);
    lit = "";
    parts.push({ v: name });
    i = end;
  }
  if (lit !== "") parts.push(lit);
  return { ok: true, parts };
}

/**
 * The nginx variables an app-root may use. nginx.tmpl writes it into the server block as
 * `return 302 $scheme://$http_host<app-root>;`, so nginx interpolates the variables in it per
 * request: `/login$is_args$args` keeps the query string (ingress-nginx's validator,
 * parser.RegexPathWithCapture, lets `$` through). These are the ones that mean something for a
 * request to `/`; any other is refused (nginx itself refuses an unknown one at `nginx -t`,
 * and ingress-nginx then keeps its previous configuration for every Ingress).
 */
export const APP_ROOT_VARIABLES: ReadonlySet<string> = new Set(["args", "query_string", "is_args", "request_uri", "uri", "document_uri", "scheme", "host", "http_host"]);

/** An app-root value as literal text and variables, or null when a `$` is not one of APP_ROOT_VARIABLES. */
export function appRootParts(text: string): TemplatePart[] | null {
  const r = parseTemplate(text, (name) => APP_ROOT_VARIABLES.has(name));
  return r.ok ? r.parts : null;
}

/** What the app-root variables read of one request. */
export interface AppRootRequest {
  /** The normalised path (`/`). */
  readonly path: string;
  /** "" or "?…", as received. */
  readonly query: string;
  /** The connection's scheme (nginx's `$scheme`). */
  readonly scheme: string;
  /** The Host header as received (`$http_host`) and the routing host name (`$host`). */
  readonly httpHost: string;
  readonly host: string;
}

/** The app-root with its variables expanded as nginx expands them for this request. */
export function expandAppRoot(parts: readonly TemplatePart[], req: AppRootRequest): string {
  let out = "";
  for (const p of parts) {
    if (typeof p === "string") {
      out += p;
      continue;
    }
    switch (p.v) {
      case "args":
      case "query_string":
        out += req.query.slice(1);
        break;
      case "is_args":
        // ngx_http_variable_is_args: "?" when the request has arguments (r->args.len > 0).
        out += req.query.length > 1 ? "?" : "";
        break;
      case "request_uri":
        out += req.path + req.query;
        break;
      case "uri":
      case "document_uri":
        out += req.path;
        break;
      case "scheme":
        out += req.scheme;
        break;
      case "http_host":
        out += req.httpHost;
        break;
      case "host":
        out += req.host;
        break;
    }
  }
  return out;
}
