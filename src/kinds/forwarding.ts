// The `forwarding` stage, last before the request goes upstream: what is sent and how
// (backend-protocol AUTO_HTTP, upstream-vhost, portico.dev/request-headers and
// response-headers, the Gateway API's RequestHeaderModifier and RequestMirror, ingress-nginx's
// mirror-target). Every kind of the stage is defined or exported here (mirror.ts has the
// copies both mirrors send).
//
// portico.dev/request-headers and portico.dev/response-headers: the forwarding stage adds its fields to those the handler sets on the upstream request
// (flow.upstreamRequestHeaders) and on the relayed response (flow.upstreamResponseHeaders).
// Fields an earlier stage set there (external authentication's auth-response-headers, the CORS
// stage's) stay: these fixed values only fill in the names no policy computed for the request.
// src/annotations/headers.ts checked every field at compile time; they are checked again here.
import * as v from "valibot";
import { upstreamHeaders } from "../http/headers.ts";
import { isWebSocketUpgrade } from "../http/upgrade.ts";
import { checkHeader, type HeaderEntry } from "../policy/headers.ts";
import type { StagePolicy } from "../policy/stages.ts";
import { normaliseRequestHost } from "../request/host.ts";
import type { Backend } from "../table/types.ts";
import { defineKind, needCaps } from "./define.ts";
import { MIRROR_TIMEOUT_MS, mirrorFull, sendMirror } from "./mirror.ts";
import { editableFields, Pair, Str, Strings } from "./schema.ts";

/**
 * The entries of one side, checked again: the table crossed IPC as JSON to reach a worker,
 * and a field refused at compile time must not reach the wire from there either.
 */
function entriesOf(raw: StagePolicy["params"][string], side: "request" | "response"): HeaderEntry[] {
  if (!Array.isArray(raw)) throw new Error(`${side}: not a list`);
  return raw.map((e) => {
    if (!Array.isArray(e) || e.length !== 2 || typeof e[0] !== "string" || typeof e[1] !== "string") throw new Error(`${side}: not a [name, value] pair`);
    const bad = checkHeader(e[0], e[1], side);
    if (bad !== null) throw new Error(`${side}: ${bad}`);
    return [e[0], e[1]] as const;
  });
}

/**
 * The fields as one record (lowercased names): a repeated name becomes one field whose values
 * are joined with ", " (RFC 9110 §5.3), except Set-Cookie, which cannot be joined (§5.3) and
 * which a list takes once.
 */
function fieldsOf(entries: readonly HeaderEntry[]): Readonly<Record<string, string>> | null {
  if (entries.length === 0) return null;
  const out: Record<string, string> = {};
  for (const [name, value] of entries) {
    const key = name.toLowerCase();
    if (key === "set-cookie" && out[key] !== undefined) throw new Error("Set-Cookie may be set once");
    out[key] = out[key] === undefined ? value : `${out[key]}, ${value}`;
  }
  return Object.freeze(out);
}

/**
 * request-headers and response-headers: `[name, value]` pairs.
 */
export const HEADERS = defineKind("headers", "forwarding", v.object({ request: v.optional(v.array(Pair), []), response: v.optional(v.array(Pair), []) }), (params) => {
  const request = fieldsOf(entriesOf(params.request ?? [], "request"));
  const response = fieldsOf(entriesOf(params.response ?? [], "response"));
  return (flow) => {
    if (request !== null) flow.upstreamRequestHeaders = flow.upstreamRequestHeaders === null ? request : { ...request, ...flow.upstreamRequestHeaders };
    if (response !== null) flow.upstreamResponseHeaders = flow.upstreamResponseHeaders === null ? response : { ...response, ...flow.upstreamResponseHeaders };
    return null;
  };
});

/**
 * custom-headers: the entries of the ConfigMap it names, set on every response relayed from
 * the pods as nginx.tmpl's `more_set_headers "Name: value"` in the location does (replacing the
 * pod's field; values literal: the template escapes `$`, escapeLiteralDollar). `headers` is
 * null until the compiler has read the ConfigMap (compile/custom-headers.ts), which this kind
 * refuses to build: never served as if the ConfigMap said nothing.
 */
export const CUSTOM_HEADERS = defineKind("custom-headers", "forwarding", v.object({ headers: v.nullable(v.array(Pair)) }), (params) => {
  if (params.headers === null) throw new Error("custom-headers: the ConfigMap is not resolved");
  const response = fieldsOf(entriesOf(params.headers, "response"));
  return (flow) => {
    if (response !== null) flow.upstreamResponseHeaders = flow.upstreamResponseHeaders === null ? response : { ...response, ...flow.upstreamResponseHeaders };
    return null;
  };
});

// One HTTPS twin per Backend object, made on first use: the balancer keeps its round-robin
// cursor per Backend object (balancer.ts), so the twin must last as long as the table's
// Backend does. It takes the id an HTTPS backend of the same port has (compile/backends.ts).
const httpsTwins = new WeakMap<Backend, Backend>();

function httpsTwin(b: Backend): Backend {
  if (b.scheme === "https") return b;
  let t = httpsTwins.get(b);
  if (t === undefined) {
    t = Object.freeze({ ...b, id: `${b.id}#https`, scheme: "https" as const });
    httpsTwins.set(b, t);
  }
  return t;
}

/**
 * backend-protocol AUTO_HTTP: ingress-nginx writes `proxy_pass $scheme://upstream_balancer`
 * (template.go buildProxyPass), so the pods get HTTPS when the client's connection is TLS and
 * HTTP otherwise; `$scheme` is the connection's even behind a trusted proxy.
 */
export const AUTO_HTTP = defineKind("auto-http", "forwarding", v.object({}), () => (flow) => {
  if (flow.connectionScheme === "https") flow.backend = httpsTwin(flow.backend);
  return null;
});

/** The Connection values connection-proxy-header may set (annotations/connection/main.go `^(close|keep-alive)$`). */
export const CONNECTION_VALUES = ["close", "keep-alive"] as const;

/**
 * connection-proxy-header: the Connection field of the request to the pods, as nginx.tmpl's
 * `proxy_set_header Connection <value>` (annotations/connection/main.go allows `close` and
 * `keep-alive` only; the schema holds the worker to that too, so nothing else reaches the
 * header line). A WebSocket upgrade is left alone: Portico's own WebSocket client makes that
 * connection (upstream/websocket.ts), and an upgrade needs `Connection: Upgrade`. A gRPC
 * backend drops the field (HTTP/2 has no Connection, RFC 9113 §8.2.2; upstream/grpc.ts).
 */
export const CONNECTION_FIELD = defineKind("connection-field", "forwarding", v.object({ value: v.picklist(CONNECTION_VALUES) }), (params) => {
  const value = params.value;
  return (flow) => {
    if (isWebSocketUpgrade(flow.req)) return null;
    flow.upstreamRequestHeaders = { ...flow.upstreamRequestHeaders, connection: value };
    return null;
  };
});

/**
 * upstream-vhost: the Host header sent upstream (nginx.tmpl `proxy_set_header Host <value>`);
 * X-Forwarded-Host keeps the client's. The handler applies flow.upstreamHost.
 */
export const UPSTREAM_VHOST = defineKind("upstream-vhost", "forwarding", v.object({ host: Str }), (params) => {
  const host = params.host;
  if (typeof host !== "string" || host.includes("$") || normaliseRequestHost(host) === null) throw new Error("upstream-vhost: a host is expected");
  return (flow) => {
    flow.upstreamHost = host;
    return null;
  };
});

/**
 * RequestHeaderModifier (HTTPHeaderFilter): `set` replaces, `add` appends to the value the
 * request has (`old,new`, the conformance test's expectation; RFC 9110 §5.3 makes the two
 * forms equivalent), `remove` drops the field.
 */
export const GATEWAY_REQUEST_HEADERS = defineKind("gateway-request-headers", "forwarding", v.object({ set: v.array(Pair), add: v.array(Pair), remove: Strings }), (params) => {
  const { set, add, remove } = params;
  if (!editableFields(set, add, remove)) throw new Error("gateway-request-headers: a field that cannot be changed");
  return (flow) => {
    const out: Record<string, string | null> = { ...flow.upstreamRequestHeaders };
    for (const [n, v] of set) out[n] = v;
    for (const [n, v] of add) {
      // What an earlier stage set (the rule's filter before a backendRef's) is the value to append to.
      const old = n in out ? out[n]! : flow.req.headers.get(n);
      out[n] = old === null ? v : `${old},${v}`;
    }
    for (const n of remove) out[n] = null;
    flow.upstreamRequestHeaders = out;
    return null;
  };
});


/** `host:port`, `[v6]:port` or a DNS name's: what Upstream.authority holds. */
const AUTHORITY = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]):[0-9]{1,5}$/;

/**
 * RequestMirror: the mirror Service's endpoints (`host:port` authorities) and the share of requests mirrored, in percent.
 *
 * RequestMirror (HTTPRequestMirrorFilter): a copy of the request, with the fields the backend
 * gets (the header filters before it applied), goes to one ready endpoint of the mirror
 * Service, and its answer is discarded: fire and forget, the client's answer never waits for
 * it nor sees its failure. A request with a body is not mirrored: the body streams once, to
 * the backend (docs/design.md "Gateway API"). Copies are bounded in number and in time.
 */
export const GATEWAY_MIRROR = defineKind("gateway-mirror", "forwarding", v.object({ endpoints: Strings, percent: v.pipe(v.number(), v.minValue(0), v.maxValue(100)) }), (params, caps) => {
  const { subrequest, deadline } = needCaps(caps, "gateway-mirror");
  const endpoints = params.endpoints;
  if (!Array.isArray(endpoints) || !endpoints.every((e) => typeof e === "string" && AUTHORITY.test(e))) throw new Error("gateway-mirror: endpoints expected");
  const percent = typeof params.percent === "number" ? params.percent : 100;
  return (flow) => {
    if (endpoints.length === 0 || mirrorFull()) return null;
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
    sendMirror(() => subrequest(`http://${to}${flow.pathAndQuery}`, { method: flow.req.method, headers, signal: deadline(MIRROR_TIMEOUT_MS, null) }));
    return null;
  };
});

export { INGRESS_MIRROR } from "./mirror.ts";
export { PROXY_REWRITE } from "./proxy-rewrite.ts";
