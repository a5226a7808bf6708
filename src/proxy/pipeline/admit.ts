// Step 1, admit: the request's context, counted in flight, and its target validated and
// normalised (validate.ts, request/target.ts; docs/design.md, "Request paths").
import { ProxyError } from "../../http/errors.ts";
import type { RequestServer } from "../types.ts";
import { requestIdFrom } from "../../http/headers.ts";
import { Exchange, type Pipeline } from "./context.ts";
import { targetOf } from "../../request/target.ts";
import { readFields, validateInto } from "./validate.ts";

function peerOf(req: Request, server: RequestServer): string {
  const a = server.requestIP(req)?.address ?? "";
  // An IPv4 client on a dual-stack socket shows up as ::ffff:a.b.c.d.
  return a.startsWith("::ffff:") && a.includes(".") ? a.slice(7) : a;
}

/**
 * The request's Exchange; it counts in flight from here until Exchange.finish. Its fields are
 * read in one pass here (validate.ts readFields), checked by admit.
 */
export function open(p: Pipeline, req: Request, server: RequestServer): Exchange {
  const f = readFields(req.headers);
  const x = new Exchange(p, req, server, peerOf(req, server), requestIdFrom(f.requestId), f);
  p.inflight.enter();
  return x;
}

/**
 * nginx reads a request head into its large_client_header_buffers (ingress-nginx: `4 8k`, the
 * ConfigMap's large-client-header-buffers; config/header-buffers.ts): a line must fit one
 * buffer, its CRLF included, and the head at most all of them. A request line that does not fit
 * is answered 414 before anything else is read (ngx_http_request.c:
 * ngx_http_alloc_large_header_buffer declines, "client sent too long URI"; measured on nginx
 * 1.22: 8,192 bytes pass, 8,193 get 414); a header line that does not fit, or a head past the
 * last buffer, 400 with the page of nginx's internal 494 ("client sent too long header line",
 * NGX_HTTP_REQUEST_HEADER_TOO_LARGE). Without --ingress-nginx-compat only the head's size is
 * checked, answered 431 (RFC 6585 §5) as Bun's own parser limit was before.
 * docs/design.md, "Request framing and bodies".
 */
/** " HTTP/1.1" and CRLF around the method's SP and the target. */
const LINE_EXTRA = 1 + " HTTP/1.1\r\n".length;

/** Validates the request into `x` (host, path, query), or the 400 (414, 431) it gets. */
export function admit(x: Exchange): ProxyError | null {
  const { req } = x;
  const { number, size } = x.p.config.largeClientHeaderBuffers;
  // req.url holds the target after a scheme and an authority, so a short one needs no more.
  const urlLine = req.method.length + req.url.length + LINE_EXTRA;
  if (urlLine + x.headBytes > size) {
    // Only a head past one buffer gets here, so a small request pays two additions.
    const line = req.method.length + targetOf(req.url).target.length + LINE_EXTRA;
    if (x.p.compat) {
      if (line > size) return new ProxyError("UriTooLong");
      if (x.longestField > size || line + x.headBytes > number * size) return new ProxyError("HeaderTooLarge", "request head over large-client-header-buffers");
    } else if (line + x.headBytes > number * size) return new ProxyError("HeaderFieldsTooLarge", "request head over large-client-header-buffers");
  }
  const err = validateInto(req, x, x);
  if (err !== null) return err;
  // nginx answers TRACE 405 itself, whatever the location, once the header block is read and
  // checked (ngx_http_request.c ngx_http_process_request_header: "client sent TRACE method",
  // NGX_HTTP_NOT_ALLOWED), before keep-alive is decided, so the connection closes; a body is
  // never read. Without --ingress-nginx-compat TRACE is the pod's to answer (RFC 9110 §9.3.8).
  if (x.p.compat && req.method === "TRACE") return new ProxyError("MethodNotAllowed");
  x.pathAndQuery = x.path + x.query;
  x.rec.host = x.hostname;
  x.rec.path = x.path;
  return null;
}
