// Coded data-plane errors, mapped to a status once. Bodies are fixed short text (or nginx's page
// under --ingress-nginx-compat, status-page.ts): they never echo anything from the request.
// Which answers close the connection: docs/design.md, "Request framing and bodies".
import { HEADER_TOO_LARGE, ownBody, type OwnBody } from "./status-page.ts";

export type ProxyErrorCode =
  | "BadRequest"
  | "BadFraming"
  | "NoRoute"
  | "NoEndpoints"
  | "UpstreamConnect"
  | "UpstreamReset"
  | "UpstreamAddressForbidden"
  | "UpstreamInvalid"
  | "UpstreamTimeout"
  | "BodyTooLarge"
  /** A request line longer than nginx's large_client_header_buffers (--ingress-nginx-compat: admit.ts). */
  | "UriTooLong"
  /**
   * A header line or the whole head over large-client-header-buffers under
   * --ingress-nginx-compat: nginx's internal 494, sent as 400 with its own page (admit.ts).
   */
  | "HeaderTooLarge"
  /** The head over large-client-header-buffers without the flag (RFC 6585 §5, as Bun answered before). */
  | "HeaderFieldsTooLarge"
  /** TRACE under --ingress-nginx-compat, which nginx refuses (admit.ts). */
  | "MethodNotAllowed"
  /** Refused by --block-cidrs, --block-user-agents or --block-referers (proxy/pipeline/block.ts). */
  | "Blocked"
  | "ClientBodyTimeout"
  | "Internal"
  /** A request on the Bun.serve side of the SNI-split HTTPS port for a host it does not serve (serving/tls-split.ts). */
  | "Misdirected"
  /** The auth service timed out, failed, or answered other than 2xx, 401 or 403 (nginx auth_request). */
  | "AuthFailed";

const STATUS: Record<ProxyErrorCode, number> = {
  BadRequest: 400,
  BadFraming: 400,
  Blocked: 403,
  NoRoute: 404,
  Misdirected: 421,
  ClientBodyTimeout: 408,
  BodyTooLarge: 413,
  UriTooLong: 414,
  MethodNotAllowed: 405,
  HeaderTooLarge: 400,
  HeaderFieldsTooLarge: 431,
  Internal: 500,
  AuthFailed: 500,
  UpstreamConnect: 502,
  UpstreamReset: 502,
  // An ExternalName that resolves only to addresses Portico never connects to (external.ts):
  // the upstream's answer is unusable, as with a failed connect.
  UpstreamAddressForbidden: 502,
  UpstreamInvalid: 502,
  NoEndpoints: 503,
  UpstreamTimeout: 504,
};

const BODY: Record<ProxyErrorCode, string> = {
  BadRequest: "bad request\n",
  BadFraming: "bad request\n",
  NoRoute: "no route\n",
  Misdirected: "misdirected request\n",
  Blocked: "forbidden\n",
  ClientBodyTimeout: "request body timeout\n",
  BodyTooLarge: "request body too large\n",
  UriTooLong: "request line too long\n",
  MethodNotAllowed: "method not allowed\n",
  HeaderTooLarge: "request header too large\n",
  HeaderFieldsTooLarge: "request header fields too large\n",
  Internal: "internal error\n",
  AuthFailed: "internal error\n",
  UpstreamConnect: "bad gateway\n",
  UpstreamReset: "bad gateway\n",
  UpstreamAddressForbidden: "bad gateway\n",
  UpstreamInvalid: "bad gateway\n",
  NoEndpoints: "service unavailable\n",
  UpstreamTimeout: "gateway timeout\n",
};

// Answers after which the connection is closed, as nginx does (it turns keep-alive off for
// 400, 413, 414, 500 and 501, and closes on a client_body_timeout 408; its 405 to TRACE is
// given before keep-alive is decided, so that connection closes too): what follows such a
// request on the connection cannot be trusted to start a new request (a header block we
// refused, a body we did not read), and Bun would otherwise parse it as one and run it.
const CLOSES: ReadonlySet<ProxyErrorCode> = new Set<ProxyErrorCode>(["BadRequest", "BadFraming", "ClientBodyTimeout", "BodyTooLarge", "UriTooLong", "MethodNotAllowed", "HeaderTooLarge", "HeaderFieldsTooLarge", "Internal", "AuthFailed"]);

export class ProxyError extends Error {
  readonly code: ProxyErrorCode;
  /** Internal detail for logs only; never sent to the client. */
  readonly detail: string;
  constructor(code: ProxyErrorCode, detail = "") {
    super(code);
    this.name = "ProxyError";
    this.code = code;
    this.detail = detail;
  }
}

export function statusOf(code: ProxyErrorCode): number {
  return STATUS[code];
}

/**
 * The body and Content-Type of Portico's own answer for `code`: short text, or nginx's page
 * under --ingress-nginx-compat (`compat`; status-page.ts). The bodies are ASCII, so their
 * length is their size in bytes (the access log's).
 */
export function errorBody(code: ProxyErrorCode, compat = false, req: Request | null = null): OwnBody {
  // nginx's 494 has a page of its own under the 400 status line (status-page.ts).
  return ownBody(STATUS[code], BODY[code], compat, req, code === "HeaderTooLarge" ? HEADER_TOO_LARGE : null);
}

// No answer at all: nginx finalizes a request whose body read timed out with
// NGX_HTTP_REQUEST_TIME_OUT, and ngx_http_finalize_request terminates such a request instead of
// sending a page (ngx_http_request.c); with ingress-nginx's `reset_timedout_connection on`
// (nginx.tmpl) ngx_http_free_request sets SO_LINGER 0, so the client sees a reset and no byte.
// The 408 is only logged. Measured on nginx 1.22 on loopback: buffered, unbuffered and chunked
// bodies alike (test/proxy/client-timeouts-nginx.test.ts).
const UNANSWERED = new WeakSet<Response>();

/**
 * A Response that makes the listener write nothing and reset the connection (docs/design.md,
 * "Request framing and bodies", slow bodies). On Bun.serve the body stream is already errored
 * when Bun first reads it, and Bun then writes no byte, not even the status line, and resets
 * the connection (measured on 1.4.5 over TCP and TLS, 40 of 40 each; a stream that errors one
 * turn later gets its status line out first). Errored with `undefined` so Bun prints nothing
 * (pipeline/body.ts, SILENT). The node:http2 listener asks isUnanswered() and resets itself.
 */
export function unanswered(): Response {
  const res = new Response(
    new ReadableStream<Uint8Array>({
      start(ctrl) {
        ctrl.error(undefined);
      },
    }),
    { status: 408 },
  );
  UNANSWERED.add(res);
  return res;
}

/** Whether `res` stands for no answer (unanswered()). */
export function isUnanswered(res: Response): boolean {
  return UNANSWERED.has(res);
}

export function errorResponse(code: ProxyErrorCode, headers?: Record<string, string>, own: OwnBody = errorBody(code)): Response {
  const h: Record<string, string> = { "content-type": own.type, "cache-control": "no-store", ...headers };
  if (CLOSES.has(code)) h.connection = "close";
  return new Response(own.body, { status: STATUS[code], headers: h });
}

/** "UpstreamAddressForbidden", with each address the name resolved to and why it was refused. */
export class AddressForbiddenError extends ProxyError {
  readonly refused: readonly { readonly address: string; readonly reason: string }[];
  constructor(name: string, refused: readonly { readonly address: string; readonly reason: string }[]) {
    super("UpstreamAddressForbidden", `${name} resolves only to refused addresses: ${refused.map((r) => `${r.address} (${r.reason})`).join(", ") || "none"}`);
    this.refused = refused;
  }
}
