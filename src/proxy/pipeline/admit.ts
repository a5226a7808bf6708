// Step 1, admit: the request's context, counted in flight, and its target validated and
// normalised (validate.ts, request/target.ts; docs/design.md, "Request paths").
import { ProxyError } from "../errors.ts";
import type { RequestServer } from "../types.ts";
import { requestIdOf } from "../upstream/headers.ts";
import { Exchange, type Pipeline } from "./context.ts";
import { validateRequest } from "./validate.ts";

function peerOf(req: Request, server: RequestServer): string {
  const a = server.requestIP(req)?.address ?? "";
  // An IPv4 client on a dual-stack socket shows up as ::ffff:a.b.c.d.
  return a.startsWith("::ffff:") && a.includes(".") ? a.slice(7) : a;
}

/** The request's Exchange; it counts in flight from here until Exchange.finish. */
export function open(p: Pipeline, req: Request, server: RequestServer): Exchange {
  const x = new Exchange(p, req, server, peerOf(req, server), requestIdOf(req.headers));
  p.inflight.enter();
  return x;
}

/** Validates the request into `x` (host, path, query), or the 400 it gets. */
export function admit(x: Exchange): ProxyError | null {
  const v = validateRequest(x.req, x.cl, x.te);
  if (v instanceof ProxyError) return v;
  x.hostname = v.hostname;
  x.host = v.host;
  x.port = v.port;
  x.path = v.target.path;
  x.query = v.target.query;
  x.pathAndQuery = v.target.path + v.target.query;
  x.filtered = v.filtered;
  x.rec.host = v.hostname;
  x.rec.path = v.target.path;
  return null;
}
