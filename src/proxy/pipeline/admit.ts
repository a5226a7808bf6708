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
 * nginx reads a request line into one of its large_client_header_buffers (ingress-nginx: `4 8k`,
 * the ConfigMap's large-client-header-buffers); a line that does not fit, its CRLF included, is
 * answered 414 before anything else is read (ngx_http_request.c: ngx_http_alloc_large_header_buffer
 * declines, "client sent too long URI"). Measured on nginx 1.22: 8,192 bytes pass, 8,193 get 414.
 */
const REQUEST_LINE_MAX = 8192;
/** " HTTP/1.1" and CRLF around the method's SP and the target. */
const LINE_EXTRA = 1 + " HTTP/1.1\r\n".length;

/** Validates the request into `x` (host, path, query), or the 400 (414) it gets. */
export function admit(x: Exchange): ProxyError | null {
  const { req } = x;
  // req.url holds the target after a scheme and an authority, so a short one needs no more.
  if (x.p.compat && req.method.length + req.url.length + LINE_EXTRA > REQUEST_LINE_MAX) {
    if (req.method.length + targetOf(req.url).target.length + LINE_EXTRA > REQUEST_LINE_MAX) return new ProxyError("UriTooLong");
  }
  // A field line that does not fit one of those buffers: 400, "Request Header Or Cookie Too
  // Large" (validate.ts FIELD_LINE_MAX), before the header block is looked at further.
  if (x.p.compat && x.longField) return new ProxyError("HeaderTooLarge");
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
