// The body of an answer Portico makes itself. Under --ingress-nginx-compat it is the page nginx
// sends for that status as ingress-nginx configures it (`server_tokens off`): clients and
// monitors match on "404 Not Found" or "401 Authorization Required", and ingress-nginx's own e2e
// tests do. Facts from nginx's src/http/ngx_http_special_response.c (ngx_http_error_*_page,
// ngx_http_error_tail, ngx_http_send_special_response) and src/http/ngx_http_request.c
// (ngx_http_process_user_agent). Outside compat mode Portico keeps its short text answers.
// docs/design.md, "Portico's own answers".

/** nginx's status lines for its built-in pages (reason phrases as nginx spells them). */
const TITLES: Readonly<Record<number, string>> = {
  400: "400 Bad Request",
  401: "401 Authorization Required",
  403: "403 Forbidden",
  404: "404 Not Found",
  405: "405 Not Allowed",
  408: "408 Request Time-out",
  413: "413 Request Entity Too Large",
  414: "414 Request-URI Too Large",
  421: "421 Misdirected Request",
  429: "429 Too Many Requests",
  500: "500 Internal Server Error",
  502: "502 Bad Gateway",
  503: "503 Service Temporarily Unavailable",
  504: "504 Gateway Time-out",
};

// ngx_http_error_tail: what follows every page with server_tokens off (ingress-nginx's default,
// ConfigMap server-tokens false).
const TAIL = "<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n";

// ngx_http_msie_padding: appended to 4xx and 5xx pages for MSIE and Chrome clients (msie_padding
// is on by default and ingress-nginx's template leaves it), so their "friendly" error page does
// not replace nginx's.
const PADDING = "<!-- a padding to disable MSIE and Chrome friendly error page -->\r\n".repeat(6);

const page = (title: string) => `<html>\r\n<head><title>${title}</title></head>\r\n<body>\r\n<center><h1>${title}</h1></center>\r\n${TAIL}`;
const PAGES: ReadonlyMap<number, string> = new Map(Object.entries(TITLES).map(([status, title]) => [Number(status), page(title)]));

/**
 * nginx's 400 pages for client certificates (its internal 495 and 496, sent as 400), keyed by
 * the words Portico's plain answer uses too, and for a header line over
 * large_client_header_buffers (its internal 494, NGX_HTTP_REQUEST_HEADER_TOO_LARGE).
 */
export const HEADER_TOO_LARGE = "Request Header Or Cookie Too Large";
const CERT_PAGES: ReadonlyMap<string, string> = new Map(
  ["The SSL certificate error", "No required SSL certificate was sent", HEADER_TOO_LARGE].map((t) => [
    t,
    `<html>\r\n<head><title>400 ${t}</title></head>\r\n<body>\r\n<center><h1>400 Bad Request</h1></center>\r\n<center>${t}</center>\r\n${TAIL}`,
  ]),
);

/**
 * Whether nginx pads an error page for this User-Agent: ngx_http_process_user_agent marks MSIE
 * ("MSIE " with at least 3 more bytes, unless "Opera") and Chrome ("Chrome/", unless the agent
 * already counted as MSIE, Opera or Gecko ("Gecko/")).
 */
export function nginxPads(userAgent: string | null): boolean {
  if (userAgent === null) return false;
  const opera = userAgent.includes("Opera");
  const at = userAgent.indexOf("MSIE ");
  const msie = !opera && at >= 0 && at + 7 < userAgent.length;
  if (msie) return true;
  if (opera || userAgent.includes("Gecko/")) return false;
  return userAgent.includes("Chrome/");
}

/**
 * nginx's page for `status` (for a 400 about a client certificate or a header line too long,
 * the one `certificate` names),
 * padded as nginx pads it for this client; null when nginx has none here.
 */
export function nginxPage(status: number, userAgent: string | null, certificate: string | null = null): string | null {
  const found = (certificate !== null && status === 400 ? CERT_PAGES.get(certificate) : undefined) ?? PAGES.get(status);
  if (found === undefined) return null;
  return nginxPads(userAgent) ? found + PADDING : found;
}

// ngx_http_special_response.c ngx_http_error_301_page ... _308_page: the pages nginx sends with
// the redirects it makes itself (`return 301 <url>`, an error_page to a URL, Lua's
// ngx.redirect): ingress-nginx's HTTPS and www redirects, permanent-/temporal-redirect, app-root
// and auth-signin. Never padded (msie_padding is for 4xx and 5xx). nginx's status line says
// "302 Moved Temporarily" over the page's "302 Found"; Bun writes its own reason phrase.
const REDIRECT_PAGES: ReadonlyMap<number, string> = new Map(
  ([[301, "301 Moved Permanently"], [302, "302 Found"], [303, "303 See Other"], [307, "307 Temporary Redirect"], [308, "308 Permanent Redirect"]] as const).map(([status, title]) => [status, page(title)]),
);

/** nginx's page for a redirect it makes itself with this status, or null when it has none. */
export function nginxRedirectPage(status: number): string | null {
  return REDIRECT_PAGES.get(status) ?? null;
}

export const NGINX_PAGE_TYPE = "text/html";
export const PLAIN_TYPE = "text/plain; charset=utf-8";

/**
 * Body and Content-Type of Portico's own answer: nginx's page under --ingress-nginx-compat (when
 * nginx has one for the status), else Portico's short text.
 */
export interface OwnBody {
  readonly body: string;
  readonly type: string;
}

export function ownBody(status: number, plain: string, compat: boolean, req: Request | null, certificate: string | null = null): OwnBody {
  if (compat) {
    const page = nginxPage(status, req?.headers.get("user-agent") ?? null, certificate);
    if (page !== null) return { body: page, type: NGINX_PAGE_TYPE };
  }
  return { body: plain, type: PLAIN_TYPE };
}
