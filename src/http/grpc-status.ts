// gRPC status codes (grpc/grpc doc/statuscodes.md) for what Portico itself answers to a gRPC
// client, and for what it reads back from a gRPC upstream.
//
// Portico's own failures on a gRPC request are a "Trailers-Only" response (the gRPC over
// HTTP/2 protocol spec): HTTP 200 with content-type application/grpc and grpc-status /
// grpc-message in the one HEADERS frame, which every gRPC client reads as that status.
// ingress-nginx adds no grpc-status to its own failures (its grpc_pass answers plain HTTP
// 502/503/504), which clients turn into UNAVAILABLE or UNKNOWN; here the client learns which
// failure it was.
import type { ProxyErrorCode } from "./errors.ts";

export const GRPC = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
} as const;

const BY_CODE: Record<ProxyErrorCode, number> = {
  // Malformed request: the HTTP status 400 maps to INTERNAL in gRPC's HTTP mapping.
  BadRequest: GRPC.INTERNAL,
  BadFraming: GRPC.INTERNAL,
  // The client stopped sending its messages: it is gone or stuck (HTTP 408).
  ClientBodyTimeout: GRPC.CANCELLED,
  // No route for the method's path: the service is not here (HTTP 404 → UNIMPLEMENTED).
  NoRoute: GRPC.UNIMPLEMENTED,
  Blocked: GRPC.PERMISSION_DENIED,
  // A plain 421 is UNKNOWN in gRPC's HTTP mapping (doc/http-grpc-status-mapping.md), which no
  // client retries; UNAVAILABLE is the status gRPC clients retry, on a new connection that the
  // SNI-split front sends to node:http2 (serving/tls-split.ts).
  Misdirected: GRPC.UNAVAILABLE,
  NoEndpoints: GRPC.UNAVAILABLE,
  UpstreamConnect: GRPC.UNAVAILABLE,
  // The connection to the pod broke before its answer: gRPC clients see the same on their own
  // broken connections (and may retry with back-off if the method is idempotent).
  UpstreamReset: GRPC.UNAVAILABLE,
  UpstreamAddressForbidden: GRPC.UNAVAILABLE,
  // The pod answered something that is not HTTP: a broken backend, as a failed connect is.
  UpstreamInvalid: GRPC.UNAVAILABLE,
  UpstreamTimeout: GRPC.DEADLINE_EXCEEDED,
  BodyTooLarge: GRPC.RESOURCE_EXHAUSTED,
  // A request line over nginx's limit: too large, as a body over its limit.
  UriTooLong: GRPC.RESOURCE_EXHAUSTED,
  // Never a gRPC call (TRACE); HTTP 405 is UNKNOWN in gRPC's HTTP mapping, UNIMPLEMENTED says more.
  MethodNotAllowed: GRPC.UNIMPLEMENTED,
  // A header line over nginx's limit: too large, as a request line over it.
  HeaderTooLarge: GRPC.RESOURCE_EXHAUSTED,
  // The head over the limit without --ingress-nginx-compat (431).
  HeaderFieldsTooLarge: GRPC.RESOURCE_EXHAUSTED,
  Internal: GRPC.INTERNAL,
  // The external authentication service failed (HTTP 500 in ingress-nginx's auth_request).
  AuthFailed: GRPC.INTERNAL,
};

const MESSAGE: Record<ProxyErrorCode, string> = {
  BadRequest: "bad request",
  BadFraming: "bad request",
  ClientBodyTimeout: "request body timeout",
  NoRoute: "no route",
  Blocked: "forbidden",
  Misdirected: "misdirected request: retry on a new connection",
  NoEndpoints: "no endpoints",
  UpstreamConnect: "upstream connect failed",
  UpstreamReset: "upstream connection reset",
  UpstreamAddressForbidden: "upstream address forbidden",
  UpstreamInvalid: "upstream answer invalid",
  UpstreamTimeout: "upstream timeout",
  BodyTooLarge: "request too large",
  UriTooLong: "request line too long",
  MethodNotAllowed: "method not allowed",
  HeaderTooLarge: "request header too large",
  HeaderFieldsTooLarge: "request header too large",
  Internal: "internal error",
  AuthFailed: "internal error",
};

/** A gRPC message's content type: application/grpc, alone or with a +format suffix or parameters. */
export const GRPC_CONTENT_TYPE = /^application\/grpc(?:[+;]|$)/i;

/** A gRPC message (request or response): its content-type is GRPC_CONTENT_TYPE. */
export function isGrpc(h: Headers): boolean {
  const ct = h.get("content-type");
  return ct !== null && GRPC_CONTENT_TYPE.test(ct);
}

export function grpcStatusOf(code: ProxyErrorCode): number {
  return BY_CODE[code];
}

/** The Trailers-Only answer for one of Portico's own failures. */
export function grpcErrorResponse(code: ProxyErrorCode, headers?: Record<string, string>): Response {
  return new Response(null, {
    status: 200,
    headers: { ...headers, "content-type": "application/grpc", "grpc-status": String(BY_CODE[code]), "grpc-message": MESSAGE[code] },
  });
}

/** Trailers that end a stream Portico had to cut (the body was already under way). */
export function grpcTrailers(status: number, message: string): Headers {
  return new Headers({ "grpc-status": String(status), "grpc-message": message });
}

/**
 * The status of a relayed call: grpc-status in the trailers, or in the headers of a
 * Trailers-Only response; null when there is none (not a gRPC answer).
 */
export function relayedGrpcStatus(headers: Headers, trailers: Headers | null | undefined): number | null {
  const v = trailers?.get("grpc-status") ?? headers.get("grpc-status");
  if (v === null || v === undefined || !/^[0-9]{1,2}$/.test(v)) return null;
  return Number(v);
}

// RFC 9113 §7 error code of an upstream RST_STREAM → the status a gRPC client would have seen
// on that stream (the gRPC over HTTP/2 spec's "Errors" table).
export function grpcStatusOfReset(h2code: number): number {
  switch (h2code) {
    case 0x7: // REFUSED_STREAM: not processed
      return GRPC.UNAVAILABLE;
    case 0x8: // CANCEL
      return GRPC.CANCELLED;
    case 0xb: // ENHANCE_YOUR_CALM
      return GRPC.RESOURCE_EXHAUSTED;
    case 0xc: // INADEQUATE_SECURITY
      return GRPC.PERMISSION_DENIED;
    default:
      return GRPC.INTERNAL;
  }
}

const UNITS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 0.001, n: 0.000001 };

/** grpc-timeout (gRPC over HTTP/2: 1-8 digits and a unit) in milliseconds, or null. */
export function parseGrpcTimeout(v: string | null): number | null {
  if (v === null) return null;
  const m = /^([0-9]{1,8})([HMSmun])$/.exec(v);
  if (m === null) return null;
  // setTimeout-style timers clamp past 2^31-1 ms (docs/design.md); 99999999H is far beyond.
  return Math.min(2 ** 31 - 1, Math.max(1, Math.ceil(Number(m[1]) * (UNITS[m[2] as string] as number))));
}
