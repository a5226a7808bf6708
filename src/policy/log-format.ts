// ingress-nginx's log-format-upstream, read once into literal text and variable names
// (policy/template.ts), never evaluated: the access log expands the variables per line
// (log/template.ts; docs/design.md "The access log"). nginx.tmpl writes the value between
// single quotes, `log_format upstreaminfo [escape=...] '<value>';`, so nginx's configuration
// reader (ngx_conf_read_token) sees it as one quoted word: `\"`, `\'` and `\\` stand for the
// character, `\t` for a tab, `\n` and `\r` for line breaks, and any other `\` stays as written;
// an unescaped `'` ends the word early, which nginx then refuses. ngx_http_log_compile_format
// reads `$name` and `${name}` (`[A-Za-z0-9_]`), and a `$` that starts no name is refused.
import { parseTemplate, type TemplatePart } from "./template.ts";

/** nginx's log_format `escape=` (ngx_http_log_module): `default`, `json` or `none`. */
export type LogEscape = "default" | "json" | "none";

/**
 * ingress-nginx's own log-format-upstream, the line it writes when the ConfigMap has no such key
 * (internal/ingress/controller/config/config.go, logFormatUpstream). Portico keeps its own fields
 * without a template; `--access-log-template=ingress-nginx` names this one.
 */
export const INGRESS_NGINX_LOG_FORMAT =
  '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" $request_length $request_time [$proxy_upstream_name] [$proxy_alternative_upstream_name] $upstream_addr $upstream_response_length $upstream_response_time $upstream_status $req_id';

/** The name --access-log-template takes for INGRESS_NGINX_LOG_FORMAT. */
export const INGRESS_NGINX_LOG_FORMAT_NAME = "ingress-nginx";

/** Longest format read (the line's literal text is bounded by it). */
const LOG_FORMAT_MAX = 8192;

/**
 * The format as literal text and variables, or why it cannot be one. Line breaks (a literal CR
 * or LF, or `\n`/`\r`) and NUL are refused: an access-log line stays one line.
 */
export function parseLogFormat(text: string): { ok: true; parts: TemplatePart[] } | { ok: false; why: string } {
  if (text.length === 0) return { ok: false, why: "the format is empty" };
  if (text.length > LOG_FORMAT_MAX) return { ok: false, why: `the format is longer than ${LOG_FORMAT_MAX} characters` };
  let out = "";
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (c === "\r" || c === "\n" || c === "\0") return { ok: false, why: "the format may not contain a line break or NUL" };
    if (c === "'") return { ok: false, why: `an unescaped ' at offset ${i} (nginx.tmpl quotes the format with ')` };
    if (c !== "\\") {
      out += c;
      continue;
    }
    const next = text[i + 1];
    if (next === undefined) return { ok: false, why: "a \\ at the end would escape nginx.tmpl's closing quote" };
    if (next === '"' || next === "'" || next === "\\") {
      out += next;
      i++;
    } else if (next === "t") {
      out += "\t";
      i++;
    } else if (next === "n" || next === "r") {
      return { ok: false, why: "the format may not contain a line break (\\n, \\r)" };
    } else out += c;
  }
  return parseTemplate(out, () => true);
}
