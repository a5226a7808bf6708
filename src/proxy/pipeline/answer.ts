// Portico's own answers to a request (errors.ts codes, status-page.ts bodies), and the
// record of a client that left: the ends of the pipeline that are not a relayed response.
import { errorBody, errorResponse, statusOf, unanswered, type ProxyError } from "../../http/errors.ts";
import { grpcErrorResponse, grpcStatusOf, isGrpc } from "../../http/grpc-status.ts";
import type { Exchange } from "./context.ts";

/** Portico's own answer for `e` (error pages aside: error-pages.ts wraps this). */
export function ownAnswer(x: Exchange, e: ProxyError): Response {
  const { req, rec, p } = x;
  x.timerBack();
  // A gRPC client reads failures from grpc-status, not from the HTTP status (grpc-status.ts);
  // asked only here, on the error path, so a request that succeeds never pays for it.
  const grpc = isGrpc(req.headers);
  // A stalled body under --ingress-nginx-compat: nginx writes nothing and resets the connection
  // (errors.ts unanswered()); the record keeps the 408 nginx logs, with no bytes sent. A gRPC
  // call keeps its Trailers-Only status (grpc-status.ts).
  if (p.compat && e.code === "ClientBodyTimeout" && !grpc) {
    rec.bytesOut = 0;
    x.finish(statusOf(e.code), e.code);
    return unanswered();
  }
  // Our own answer's body is what the client gets (none for HEAD, RFC 9110 §9.3.2); a
  // gRPC client gets a Trailers-Only answer, no body.
  const own = grpc ? null : errorBody(e.code, p.compat, req);
  rec.bytesOut = req.method === "HEAD" || own === null ? 0 : own.body.length;
  if (grpc) rec.grpcStatus = grpcStatusOf(e.code);
  x.finish(grpc ? 200 : statusOf(e.code), e.code);
  if (e.code === "Internal") p.log.error("proxy internal error", { err: e.detail, requestId: x.requestId });
  const res = own === null ? grpcErrorResponse(e.code, x.responseHeaders) : errorResponse(e.code, x.responseHeaders, own);
  x.addCookies(res.headers, res.status);
  return res;
}

/** The client left, or the shutdown grace period ended, before an answer: 499 in the record. */
export function gone(x: Exchange): Response {
  x.finish(499, x.req.signal.aborted ? "ClientClosed" : "Shutdown");
  return new Response(null, { status: 499 });
}

/** Whether a failure is the client leaving or the shutdown rather than the request's own. */
export function isGone(x: Exchange): boolean {
  return x.req.signal.aborted || x.p.hardStop.signal.aborted;
}
