// Step 6, relay: the upstream's answer to the client (upstream/respond.ts), with the header
// rules of http/headers.ts and, for the route's own request, the policies' response fields
// and cookies. error-pages.ts relays the error backend's answer through the same function.
import type { Backend } from "../../table/types.ts";
import type { ForwardResult } from "../upstream/forward-types.ts";
import { isGrpcBackend } from "../upstream/grpc.ts";
import { downstreamHeaders, editHeaders, scanResponseHeaders } from "../../http/headers.ts";
import { gzipAnswer } from "../../http/gzip.ts";
import { relayResponse } from "../upstream/respond.ts";
import { accelLimitRate, bufferingWanted } from "../upstream/response-buffering.ts";
import type { Exchange } from "./context.ts";

/**
 * The client's response for `result` from `to`. `errorRequest`: error-pages.ts's answer, relayed
 * as it is (no policy fields or cookies; the client's body may be unread, so the connection
 * closes after a request that had one). Synchronous when the answer is ready at once (respond.ts:
 * the Bun.peek small-body path), so the common small answer takes no extra turn.
 */
export function relay(x: Exchange, to: Backend, result: ForwardResult, errorRequest: boolean): Response | Promise<Response> {
  const { p, rec } = x;
  const up = result.response;
  rec.upstream = result.upstream.authority;
  rec.upstreamStatus = up.status;
  rec.upstreamMs = result.upstreamMs;
  // nginx's proxy module rewrites the pod's Location, Refresh and Set-Cookie as it reads them,
  // before any field a policy sets (kinds/proxy-rewrite.ts).
  if (!errorRequest && x.responseRewrite !== null) x.responseRewrite(up.headers, x);
  const opts = x.route.options;
  const grpc = isGrpcBackend(to);
  // proxy-buffering (upstream/response-buffering.ts): the route's, else the flag's (the error
  // location's: the flag), then the pod's X-Accel-Buffering, which the header scan lists among
  // nginx's hidden fields; never gRPC (grpc_pass has its own buffering, which ingress-nginx leaves
  // off). Read before downstreamHeaders, which drops that field and the framing ones in place.
  let scan = result.scan;
  let buffered = errorRequest ? p.config.proxyBuffering : opts.proxyBuffering ?? p.config.proxyBuffering;
  // The pod sent one of nginx's X-Accel fields (or the answer came unscanned): read them.
  const accel = scan === undefined || scan.nginxHidden.length !== 0;
  if (accel) buffered = bufferingWanted(buffered, up.headers.get("x-accel-buffering"));
  // Only the size here: relayStream builds the holder for the answers it streams.
  const bufferSize = buffered && !grpc ? (errorRequest ? p.config.proxyBufferSize : opts.proxyBufferSize ?? p.config.proxyBufferSize) : null;
  // The holder reads the framing and the head's size from the scan, which must see the fields
  // before downstreamHeaders strips them: a refused WebSocket handshake's answer comes unscanned.
  if (bufferSize !== null) scan ??= scanResponseHeaders(up.headers);
  // The pod's X-Accel-Limit-Rate replaces limit-rate for a buffered answer
  // (upstream/response-buffering.ts accelLimitRate), read as X-Accel-Buffering is.
  const accelRate = bufferSize !== null && accel ? accelLimitRate(up.headers.get("x-accel-limit-rate")) : null;
  const down = downstreamHeaders(up.headers, x.requestId, x.hsts, errorRequest ? null : x.upstreamResponseHeaders, scan, p.config.serverHeader, p.compat);
  if (errorRequest) {
    if (x.hasBody) down.set("connection", "close");
  } else {
    x.addCookies(down, up.status);
    // Affinity's cookie, when this request chose a new pod (kinds/affinity.ts).
    const cookie = x.choice?.setCookie() ?? null;
    if (cookie !== null) down.append("set-cookie", cookie);
    // Last, so a Gateway API ResponseHeaderModifier sees (and may remove) every field above.
    if (x.responseHeaderEdits !== null) editHeaders(down, x.responseHeaderEdits);
  }
  // ingress-nginx's use-gzip and enable-brotli (http/gzip.ts): off, two field reads. Never a
  // gRPC answer, whose messages carry the gRPC protocol's own compression (grpc-encoding).
  const encoding = (p.config.gzip || p.config.brotli) && !grpc ? gzipAnswer(p.config, x.req, up.status, down) : null;
  // Between two reads of the pod (plain, buffered or gRPC): the route's proxy-read-timeout unless
  // its stream-idle-timeout is set (annotations/timeouts.ts), as nginx's read timer re-armed after
  // each read (docs/design.md "Upstream timeouts").
  const idleMs = errorRequest ? p.config.streamIdleTimeoutMs : opts.streamIdleTimeoutMs ?? p.config.streamIdleTimeoutMs;
  // limit-rate (nginx's limit_rate in the route's location): only for a buffered answer, as
  // ngx_http_upstream_send_response sets r->limit_rate = 0 for an unbuffered one, so off reads
  // nothing more. Not for the error location's answer, nor gRPC (never buffered here).
  const rate = bufferSize === null || errorRequest ? 0 : accelRate ?? opts.limitRate ?? p.config.limitRate;
  return relayResponse({
    up, req: x.req, headers: down, draining: p.inflight.draining, idleMs, control: x.control!, rec, end: x,
    grpc, scan, pace: rate > 0 ? { rate, after: opts.limitRateAfter ?? p.config.limitRateAfter, start: x.t0 } : null,
    compress: encoding === null ? null : { encoding, level: encoding === "br" ? p.config.brotliLevel : p.config.gzipLevel },
    bufferSize,
  });
}
