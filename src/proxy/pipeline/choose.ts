// Step 4, choose the backend: after the policies (a canary may have changed it), the
// no-endpoints fallback and check, and the route's error pages armed from here on (docs/design.md,
// "Error pages"). The endpoint itself is chosen per attempt by forward (balancer.ts).
import { ProxyError } from "../../http/errors.ts";
import { isGrpcBackend } from "../upstream/grpc.ts";
import { hasEndpoints } from "./checks.ts";
import type { Exchange } from "./context.ts";
import { fallbackFields } from "./error-pages.ts";

/** gRPC statuses 12 and 14 (gRPC's statuscodes.md). */
const GRPC_UNIMPLEMENTED = 12;
const GRPC_UNAVAILABLE = 14;

/** Sets `x.backend` to where the request goes; or the answer (Response, finished) or error it gets instead. */
export function chooseBackend(x: Exchange): Response | ProxyError | null {
  const { route, rec, p } = x;
  rec.service = x.backend.id;
  // Bun.serve cannot send response trailers, and every gRPC answer but a Trailers-Only one
  // ends with them (gRPC's PROTOCOL-HTTP2.md); Bun's Server is the one RequestServer without
  // a `transport`. On the HTTPS port a gRPC route moves the port to node:http2
  // (serving/https.ts), so this meets only calls that reached the outgoing Bun.serve server
  // during that hand-over's drain: UNAVAILABLE, which a retry on a new connection gets past.
  // The plain port has no such listener (node:http2's cleartext server cannot serve HTTP/1.1
  // beside h2c), so a gRPC call there is UNIMPLEMENTED with the reason. Either way the call
  // never reaches the backend and never ends without a status (docs/design.md, "HTTP/2 and gRPC").
  if (x.server.transport === undefined && isGrpcBackend(x.backend)) {
    const status = p.scheme === "http" ? GRPC_UNIMPLEMENTED : GRPC_UNAVAILABLE;
    rec.grpcStatus = status;
    x.finish(200, "GrpcNeedsTrailers");
    const message = p.scheme === "http" ? "gRPC is served over TLS only: cleartext HTTP/2 here cannot send trailers" : "listener changing over, retry";
    return new Response(null, { status: 200, headers: { ...x.responseHeaders, "content-type": "application/grpc", "grpc-status": String(status), "grpc-message": message } });
  }
  if (route.errorPages !== undefined) x.pages = route.errorPages;
  // default-backend takes the requests of a Service without endpoints (docs/design.md, "Error pages").
  if (route.fallback !== undefined && x.backend === route.backend && x.backend.status !== "ok") {
    x.backend = route.fallback;
    rec.service = x.backend.id;
    x.extra = fallbackFields(x.req.headers, route, x.requestId);
  }
  if (!hasEndpoints(x.backend)) return new ProxyError("NoEndpoints", x.backend.status);
  return null;
}
