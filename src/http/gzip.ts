// Response compression as ingress-nginx configures nginx's gzip module (ConfigMap use-gzip;
// nginx.tmpl: gzip on, gzip_comp_level, gzip_disable, gzip_http_version 1.1, gzip_min_length,
// gzip_types, gzip_proxied any, gzip_vary on). The decision follows nginx's
// ngx_http_gzip_header_filter and ngx_http_gzip_ok (ngx_http_core_module.c):
// docs/design.md "Response compression". Only the decision and the header edits are here; the
// body is compressed by the relay (proxy/upstream/respond.ts).
import type { Config } from "../config/types.ts";
import { compileHeaderPattern, type HeaderPattern } from "../regex/header-pattern.ts";

type GzipConfig = Pick<Config, "gzip" | "gzipMinLength" | "gzipTypes" | "gzipDisable" | "brotli" | "brotliMinLength" | "brotliTypes">;

/** The encoding an answer is sent with. */
export type AnswerEncoding = "gzip" | "br";

/**
 * Whether the client's Accept-Encoding lets gzip through, as ngx_http_gzip_accept_encoding
 * reads it: the first `gzip` token (any case) at the start or after `,` or a space decides;
 * after it the end, `,`, or spaces accept; `;` then only spaces accepts too; `;q=` accepts a
 * quality ngx_http_gzip_quantity reads as non-zero; anything else declines. `*` does not count.
 */
export function acceptsGzip(ae: string, token: AnswerEncoding = "gzip"): boolean {
  const lower = ae.toLowerCase();
  let from = 0;
  for (;;) {
    const at = lower.indexOf(token, from);
    if (at < 0) return false;
    const before = at === 0 ? "," : lower[at - 1];
    if (before === "," || before === " ") return afterToken(lower, at + token.length);
    from = at + token.length;
  }
}

/** What follows the token: nginx's two loops (parameters, then `q`) and its `=` check. */
function afterToken(s: string, p: number): boolean {
  for (; p < s.length; p++) {
    const c = s[p];
    if (c === ",") return true;
    if (c === ";") break;
    if (c !== " ") return false;
  }
  if (p >= s.length) return true;
  for (p++; p < s.length; p++) {
    const c = s[p];
    if (c === "q") break;
    if (c !== " ") return false;
  }
  if (p >= s.length) return true;
  p++;
  // `q` needs `=` and at least one character after it.
  if (p + 2 > s.length || s[p] !== "=") return false;
  return quantity(s, p + 1) > 0;
}

/**
 * RFC 9110 §12.4.2 qvalue as ngx_http_gzip_quantity reads it, in hundredths: `0` or `1`, then
 * the end, `,` or a space, or `.` and at most three digits up to the end, `,` or a space; 0
 * when unreadable or above 1. (nginx adds the decimals' digits rather than placing them, which
 * changes no answer's zero-or-not.)
 */
function quantity(s: string, p: number): number {
  const first = s[p++];
  if (first !== "0" && first !== "1") return 0;
  let q = first === "1" ? 100 : 0;
  if (p >= s.length) return q;
  const c = s[p++];
  if (c === "," || c === " ") return q;
  if (c !== ".") return 0;
  let n = 0;
  for (; p < s.length; p++) {
    const d = s[p] as string;
    if (d === "," || d === " ") break;
    if (d < "0" || d > "9") return 0;
    q += d.charCodeAt(0) - 48;
    n++;
  }
  return q > 100 || n > 3 ? 0 : q;
}

/**
 * nginx's `msie6` test (ngx_http_request.c ngx_http_user_agent): "MSIE 4.", "MSIE 5." or
 * "MSIE 6." not followed by "SV1", with at least two more characters after, and no "Opera".
 */
export function isMsie6(ua: string): boolean {
  const at = ua.indexOf("MSIE ");
  if (at < 0 || at + 7 >= ua.length || ua.includes("Opera")) return false;
  if (ua[at + 6] !== ".") return false;
  const v = ua[at + 5];
  return v === "4" || v === "5" || (v === "6" && !ua.slice(at + 8).includes("SV1"));
}

// The one gzip-disable pattern in force, compiled once per value (the value is checked by its
// flag's schema, config/values.ts userAgentPattern, before it gets here).
let disableText: string | null = null;
let disableRe: HeaderPattern | null = null;

function disabledFor(pattern: string, ua: string | null): boolean {
  if (pattern === "msie6") return ua !== null && isMsie6(ua);
  if (pattern !== disableText) {
    const r = compileHeaderPattern(pattern, true);
    disableText = pattern;
    // Cannot happen after the schema's check; fail safe by compressing nothing for no one.
    disableRe = r.ok ? r.re : { test: () => true };
  }
  // nginx runs gzip_disable's regexes on User-Agent; a request without one matches none.
  return ua !== null && (disableRe as HeaderPattern).test(ua);
}

/** The media type of a Content-Type value as nginx compares it: before `;`, trimmed, lowercased. */
function mediaType(ct: string): string {
  const semi = ct.indexOf(";");
  return (semi < 0 ? ct : ct.slice(0, semi)).trim().toLowerCase();
}

const listed = (types: readonly string[], type: string) => type === "text/html" || types.includes(type) || types.includes("*");

/**
 * Decide for one answer and edit `out` (the client's response fields) to match: null when the
 * answer goes as it is; otherwise its Content-Encoding (`br` before `gzip`: ngx_brotli's filter,
 * a module nginx loads after its own, runs before gzip's and sets Content-Encoding, which gzip's
 * then finds), no Content-Length, no Accept-Ranges, a weak ETag. `Vary: Accept-Encoding` is
 * added to every answer either could apply to, whether or not this client gets it, when gzip is
 * on (gzip_vary on; both filters set r->gzip_vary before asking the request, and nginx writes
 * Vary only under gzip_vary, which ingress-nginx sets with use-gzip).
 */
export function gzipAnswer(cfg: GzipConfig, req: Request, status: number, out: Headers): AnswerEncoding | null {
  // ngx_http_gzip_header_filter (and ngx_brotli's alike): 200, 403 and 404 only (so never 206,
  // 304 or 204), nothing the pod encoded already, a declared length not under the minimum, a
  // listed type (text/html always: ngx_http_types_slot adds nginx's default types), a body.
  if (status !== 200 && status !== 403 && status !== 404) return null;
  if (req.method === "HEAD") return null;
  const enc = out.get("content-encoding");
  if (enc !== null && enc !== "") return null;
  const ct = out.get("content-type");
  if (ct === null) return null;
  const type = mediaType(ct);
  const lenText = out.get("content-length");
  const len = lenText === null ? null : Number(lenText);
  const br = cfg.brotli && (len === null || len >= cfg.brotliMinLength) && listed(cfg.brotliTypes, type);
  const gz = cfg.gzip && (len === null || len >= cfg.gzipMinLength) && listed(cfg.gzipTypes, type);
  if (!br && !gz) return null;
  if (cfg.gzip) addVary(out);
  const ae = req.headers.get("accept-encoding");
  if (ae === null) return null;
  let chosen: AnswerEncoding | null = null;
  // ngx_brotli: a `br` token in Accept-Encoding; gzip_disable and msie6 are gzip's alone.
  if (br && acceptsGzip(ae, "br")) chosen = "br";
  // ngx_http_gzip_ok: Accept-Encoding, msie6 and gzip_disable. gzip_proxied any: Via is not read.
  else if (gz && acceptsGzip(ae) && (cfg.gzipDisable === null || !disabledFor(cfg.gzipDisable, req.headers.get("user-agent")))) chosen = "gzip";
  if (chosen === null) return null;
  out.set("content-encoding", chosen);
  out.delete("content-length");
  out.delete("accept-ranges");
  weakenEtag(out);
  return chosen;
}

/** Vary: Accept-Encoding, added to the pod's list unless there already or the list is `*` (RFC 9110 §12.5.5). */
function addVary(out: Headers): void {
  const prior = out.get("vary");
  if (prior === null || prior.trim() === "") {
    out.set("vary", "Accept-Encoding");
    return;
  }
  const members = prior.split(",").map((m) => m.trim().toLowerCase());
  if (!members.includes("*") && !members.includes("accept-encoding")) out.set("vary", `${prior}, Accept-Encoding`);
}

/**
 * nginx's ngx_http_weak_etag: a strong ETag becomes weak (the compressed bytes differ, RFC 9110
 * §8.8.1), a weak one stays, one that is not a quoted entity-tag is dropped.
 */
function weakenEtag(out: Headers): void {
  const etag = out.get("etag");
  if (etag === null) return;
  if (etag.length > 2 && etag.startsWith("W/")) return;
  if (!etag.startsWith('"')) out.delete("etag");
  else out.set("etag", `W/${etag}`);
}
