// Coded data-plane errors, mapped to a status once (DESIGN §3, §6.7). Bodies are fixed short
// text: they never echo anything from the request.

export type ProxyErrorCode =
  | "BadRequest"
  | "NoRoute"
  | "NoEndpoints"
  | "UpstreamConnect"
  | "UpstreamReset"
  | "UpstreamAddressForbidden"
  | "UpstreamTimeout"
  | "BodyTooLarge"
  | "Internal";

const STATUS: Record<ProxyErrorCode, number> = {
  BadRequest: 400,
  NoRoute: 404,
  BodyTooLarge: 413,
  Internal: 500,
  UpstreamConnect: 502,
  UpstreamReset: 502,
  // An ExternalName that resolves only to addresses Portico never connects to (external.ts):
  // the upstream's answer is unusable, as with a failed connect.
  UpstreamAddressForbidden: 502,
  NoEndpoints: 503,
  UpstreamTimeout: 504,
};

const BODY: Record<ProxyErrorCode, string> = {
  BadRequest: "bad request\n",
  NoRoute: "no route\n",
  BodyTooLarge: "request body too large\n",
  Internal: "internal error\n",
  UpstreamConnect: "bad gateway\n",
  UpstreamReset: "bad gateway\n",
  UpstreamAddressForbidden: "bad gateway\n",
  NoEndpoints: "service unavailable\n",
  UpstreamTimeout: "gateway timeout\n",
};

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

export function errorResponse(code: ProxyErrorCode, headers?: Record<string, string>): Response {
  return new Response(BODY[code], {
    status: STATUS[code],
    headers: { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store", ...headers },
  });
}
