// Gateway API on the request path (docs/design.md "Gateway API"): the lookup before the
// Ingress table, and the policies an HTTPRoute rule's filters compile to
// (compile/gateway/table.ts).
import { chooseWeighted, findGatewayEntry, gatewayRedirectCode, modifyPath } from "../../table/gateway.ts";
import { normaliseRequestHost } from "../../request/host.ts";
import { upstreamHeaders } from "../../http/headers.ts";
import { type GatewayRoutes } from "../../table/types.ts";
import type { StagePolicy } from "../../policy/stages.ts";
import { FIELD_VALUE, FRAMING } from "../../policy/headers.ts";
import type { Match } from "../../table/types.ts";
import { refusal } from "./access.ts";
import type { HeaderEdit } from "../../http/headers.ts";
import type { KindOf, PolicyKind } from "./types.ts";
import { GATEWAY_CORS } from "./cors.ts";
import { grpcErrorResponse, isGrpc } from "../../http/grpc-status.ts";
import * as K from "../../policy/kinds.ts";

/**
 * The Match of the Gateway API rule a request gets, or null (the Ingress table decides).
 * `hostname` is the validated request host without its port; `query` is "" or "?…".
 */
export function gatewayLookup(routes: GatewayRoutes, https: boolean, hostname: string, method: string, path: string, query: string, headers: Headers): Match | null {
  const entry = findGatewayEntry(routes, https, {
    host: hostname,
    method,
    path,
    query: query.startsWith("?") ? query.slice(1) : query,
    header: (name) => headers.get(name),
  });
  return entry === null ? null : chooseWeighted(entry, Math.random());
}

const pairs = (v: StagePolicy["params"][string] | undefined, what: string): [string, string][] => {
  if (!Array.isArray(v) || !v.every((p) => Array.isArray(p) && p.length === 2 && typeof p[0] === "string" && typeof p[1] === "string")) throw new Error(`${what}: pairs expected`);
  return v as [string, string][];
};

/**
 * RequestHeaderModifier (HTTPHeaderFilter): `set` replaces, `add` appends to the value the
 * request has (`old,new`, the conformance test's expectation; RFC 9110 §5.3 makes the two
 * forms equivalent), `remove` drops the field.
 */
export const GATEWAY_REQUEST_HEADERS: KindOf<typeof K.GATEWAY_REQUEST_HEADERS> = {
  contract: K.GATEWAY_REQUEST_HEADERS,
  build(params) {
    const set = pairs(params.set, "set");
    const add = pairs(params.add, "add");
    const remove = params.remove;
    if (!Array.isArray(remove) || !remove.every((r) => typeof r === "string")) throw new Error("remove: names expected");
    if (!editableFields(set, add, remove)) throw new Error("gateway-request-headers: a field that cannot be changed");
    return (flow) => {
      const out: Record<string, string | null> = { ...flow.upstreamRequestHeaders };
      for (const [n, v] of set) out[n] = v;
      for (const [n, v] of add) {
        // What an earlier stage set (the rule's filter before a backendRef's) is the value to append to.
        const old = n in out ? out[n]! : flow.req.headers.get(n);
        out[n] = old === null ? v : `${old},${v}`;
      }
      for (const n of remove as string[]) out[n] = null;
      flow.upstreamRequestHeaders = out;
      return null;
    };
  },
};

/** RFC 9110 §5.1 field name (token), lowercased as the compiler writes it. */
const LOWER_TOKEN = /^[!#$%&'*+.^_`|~0-9a-z-]+$/;
const editable = (n: string) => LOWER_TOKEN.test(n) && !FRAMING.has(n);
/**
 * The compiler's checks again (compile/gateway/rules.ts): the table reached this worker as
 * JSON, and a field it cannot send must refuse the route (500), never reach a header line.
 */
const editableFields = (set: readonly [string, string][], add: readonly [string, string][], remove: readonly string[]) =>
  [...set, ...add].every(([n, v]) => editable(n) && FIELD_VALUE.test(v)) && remove.every(editable);

/**
 * ResponseHeaderModifier (HTTPHeaderFilter on the answer): the proxied answer is changed in
 * the relay, after every field Portico sets (PolicyFlow.responseHeaderEdits), and Portico's own
 * answers for the rule (a redirect, a 500, a 502) through flow.responseHeaders now. On those a
 * Set-Cookie already there is kept rather than joined (RFC 6265 §3).
 */
export const GATEWAY_RESPONSE_HEADERS: KindOf<typeof K.GATEWAY_RESPONSE_HEADERS> = {
  contract: K.GATEWAY_RESPONSE_HEADERS,
  build(params) {
    const set = pairs(params.set, "set");
    const add = pairs(params.add, "add");
    const remove = params.remove;
    if (!Array.isArray(remove) || !remove.every((r) => typeof r === "string")) throw new Error("remove: names expected");
    if (!editableFields(set, add, remove)) throw new Error("gateway-response-headers: a field that cannot be changed");
    const edit: HeaderEdit = Object.freeze({ set, add, remove });
    return (flow) => {
      flow.responseHeaderEdits = flow.responseHeaderEdits === null ? [edit] : [...flow.responseHeaderEdits, edit];
      const own = flow.responseHeaders;
      for (const [n, v] of set) own[n] = v;
      for (const [n, v] of add) {
        const old = own[n];
        own[n] = old === undefined ? v : n === "set-cookie" ? old : `${old},${v}`;
      }
      for (const n of remove) delete own[n];
      return null;
    };
  },
};

const str = (v: unknown): string | null => (typeof v === "string" ? v : null);

/**
 * RequestRedirect (HTTPRequestRedirectFilter): scheme, hostname and path as asked, else the
 * request's; the port as asked, else the well-known port of a changed scheme, else the
 * listener's declared port (never Portico's own socket port), left out when it is the
 * scheme's default (80 for http, 443 for https).
 */
export const GATEWAY_REDIRECT: KindOf<typeof K.GATEWAY_REDIRECT> = {
  contract: K.GATEWAY_REDIRECT,
  build(params) {
    const status = gatewayRedirectCode(params.statusCode);
    const askedScheme = str(params.scheme);
    const askedHost = str(params.hostname);
    const askedPort = typeof params.port === "number" ? params.port : null;
    const listenerPort = typeof params.listenerPort === "number" ? params.listenerPort : null;
    const listenerScheme = params.listenerScheme === "https" ? "https" : "http";
    const pathType = str(params.pathType);
    const pathValue = str(params.pathValue);
    const matched = str(params.matchedPrefix);
    if (listenerPort === null) throw new Error("gateway-redirect: listenerPort expected");
    return (flow) => {
      const scheme = askedScheme ?? listenerScheme;
      const port = askedPort ?? (askedScheme !== null ? (scheme === "https" ? 443 : 80) : listenerPort);
      const host = askedHost ?? flow.hostname;
      const defaultPort = scheme === "https" ? 443 : 80;
      const path = modifyPath(flow.path, pathType, pathValue, matched);
      const authority = port === defaultPort ? host : `${host}:${port}`;
      return new Response(null, { status, headers: { ...flow.responseHeaders, location: `${scheme}://${authority}${path}${flow.query}` } });
    };
  },
};

/**
 * URLRewrite (HTTPURLRewriteFilter): the Host sent upstream and the path, the query kept
 * (HTTPPathModifier changes the path only). Runs in the rewrite stage, so the forwarding
 * stage's header changes still apply; X-Forwarded-Host keeps the client's Host, as
 * upstream-vhost does.
 */
export const GATEWAY_REWRITE: KindOf<typeof K.GATEWAY_REWRITE> = {
  contract: K.GATEWAY_REWRITE,
  build(params) {
    const host = str(params.hostname);
    if (host !== null && normaliseRequestHost(host) === null) throw new Error("gateway-rewrite: a host name is expected");
    const pathType = str(params.pathType);
    const pathValue = str(params.pathValue);
    const matched = str(params.matchedPrefix);
    return (flow) => {
      if (host !== null) flow.upstreamHost = host;
      if (pathType !== null) flow.pathAndQuery = modifyPath(flow.path, pathType, pathValue, matched) + flow.query;
      return null;
    };
  },
};

/** Mirrored requests in flight in this process: beyond it a copy is dropped, never queued. */
const MIRROR_MAX_IN_FLIGHT = 256;
/** A mirror that has not answered by then is abandoned (its answer is discarded anyway). */
const MIRROR_TIMEOUT_MS = 30_000;
let mirrorsInFlight = 0;

/** `host:port`, `[v6]:port` or a DNS name's: what Upstream.authority holds. */
const AUTHORITY = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]):[0-9]{1,5}$/;

/**
 * RequestMirror (HTTPRequestMirrorFilter): a copy of the request, with the fields the backend
 * gets (the header filters before it applied), goes to one ready endpoint of the mirror
 * Service, and its answer is discarded: fire and forget, the client's answer never waits for
 * it nor sees its failure. A request with a body is not mirrored: the body streams once, to
 * the backend (docs/design.md "Gateway API"). Copies are bounded in number and in time.
 */
export const GATEWAY_MIRROR: KindOf<typeof K.GATEWAY_MIRROR> = {
  contract: K.GATEWAY_MIRROR,
  build(params) {
    const endpoints = params.endpoints;
    if (!Array.isArray(endpoints) || !endpoints.every((e) => typeof e === "string" && AUTHORITY.test(e))) throw new Error("gateway-mirror: endpoints expected");
    const percent = typeof params.percent === "number" ? params.percent : 100;
    return (flow) => {
      if (endpoints.length === 0 || mirrorsInFlight >= MIRROR_MAX_IN_FLIGHT) return null;
      if (flow.hasBody) return null;
      if (percent < 100 && Math.random() * 100 >= percent) return null;
      const to = endpoints[Math.floor(Math.random() * endpoints.length)]!;
      const headers = upstreamHeaders(
        flow.req.headers,
        {
          peer: flow.peer, trusted: flow.trusted, appendForwardedFor: flow.appendForwardedFor, scheme: flow.scheme, host: flow.host, port: flow.port, requestId: flow.requestId,
          underscores: flow.underscores, remove: flow.removeHeaders, upstreamHost: flow.upstreamHost,
        },
        flow.clientIp,
      );
      for (const [k, v] of Object.entries(flow.upstreamRequestHeaders ?? {})) {
        if (v === null) headers.delete(k);
        else headers.set(k, v);
      }
      mirrorsInFlight++;
      fetch(`http://${to}${flow.pathAndQuery}`, {
        method: flow.req.method,
        headers,
        redirect: "manual",
        decompress: false,
        signal: AbortSignal.timeout(MIRROR_TIMEOUT_MS),
      } as RequestInit)
        .then((r) => r.body?.cancel())
        .catch(() => {})
        .finally(() => {
          mirrorsInFlight--;
        });
      return null;
    };
  },
};

/**
 * A rule, or a share of one, that cannot be served: 500 (HTTPBackendRef: invalid references).
 * A gRPC call gets Trailers-Only UNAVAILABLE instead, as Portico's own failures on gRPC
 * requests do (docs/design.md "HTTP/2 and gRPC"), which is what GRPCRouteRule.backendRefs asks
 * for a call that would have gone to an invalid backend.
 */
export const GATEWAY_ERROR: KindOf<typeof K.GATEWAY_ERROR> = {
  contract: K.GATEWAY_ERROR,
  build() {
    return (flow) => (isGrpc(flow.req.headers) ? grpcErrorResponse("NoEndpoints", flow.responseHeaders) : refusal(flow, 500, "internal server error\n"));
  },
};

export const GATEWAY_KINDS: readonly PolicyKind[] = [GATEWAY_REQUEST_HEADERS, GATEWAY_RESPONSE_HEADERS, GATEWAY_CORS, GATEWAY_REDIRECT, GATEWAY_REWRITE, GATEWAY_MIRROR, GATEWAY_ERROR];
