// Request mirroring, the copies both the Gateway API's RequestMirror (forwarding.ts
// GATEWAY_MIRROR) and ingress-nginx's mirror-target send: fire and forget, the client's answer
// never waits for a copy nor sees its failure; bounded in number (MIRROR_MAX_IN_FLIGHT copies
// per process, beyond which a copy is dropped, never queued), in time (MIRROR_TIMEOUT_MS) and
// in the body bytes held for them (MIRROR_BODY_BUDGET).
//
// INGRESS_MIRROR is ingress-nginx's mirror-target, mirror-host and mirror-request-body
// (internal/ingress/annotations/mirror, nginx.tmpl `mirror` and `mirror_request_body` in the
// location, template.go buildMirrorLocations: `location = /_mirror-<uid> { internal;
// proxy_set_header Host <mirror-host>; proxy_pass <mirror-target>; }`). So the copy carries:
// - the client's method and fields (nginx's mirror subrequest shares the request's headers,
//   and that location sets no other proxy_set_header), hop-by-hop ones dropped, Host the
//   mirror-host (default the target's host name, without port);
// - the target's path when it has one and no variable, with the request's query appended
//   (proxy_pass with a URI replaces the location's name, and nginx adds `?args`); the target
//   as rendered when it has variables (`https://test.env.com$request_uri`: proxy_pass with
//   variables sends its URL as is); the request's own path and query when it has no path
//   (nginx would send its internal `/_mirror-<uid>` name there, which means nothing upstream);
// - the body with mirror-request-body on (the default), once the request's body was read whole
//   (proxy-request-buffering, docs/design.md "Request buffering": a body that streams is not
//   held for a copy); with off, no body and no framing fields (nginx would still send the
//   client's Content-Length with no body after it).
// The target's address goes through the same policy as an auth-url (caps.resolve,
// proxy/upstream/external.ts): never loopback, link-local, metadata or this pod's addresses.
import * as v from "valibot";
import { AddressForbiddenError } from "../http/errors.ts";
import { isHopByHop } from "../http/headers.ts";
import type { TemplatePart } from "../policy/template.ts";
import type { Upstream } from "../table/types.ts";
import { defineKind, needCaps } from "./define.ts";
import type { PolicyCaps, PolicyFlow, SubrequestInit } from "./types.ts";

/** Mirrored requests in flight in this process: beyond it a copy is dropped, never queued. */
export const MIRROR_MAX_IN_FLIGHT = 256;
/** A mirror that has not answered by then is abandoned (its answer is discarded anyway). */
export const MIRROR_TIMEOUT_MS = 30_000;
/** Request-body bytes held by copies in flight in this process; a copy that would pass it is dropped. */
const MIRROR_BODY_BUDGET = 16 * 1024 * 1024;

let inFlight = 0;
let bodyBytes = 0;

/**
 * No slot is free: sendMirror would drop a copy now. Checked before a copy is prepared, so a
 * full sender costs a request no work for a copy that is never sent.
 */
export const mirrorFull = (): boolean => inFlight >= MIRROR_MAX_IN_FLIGHT;

/**
 * Sends one copy, if a slot (and, for a body, budget) is free: `send` makes the request, whose
 * answer is cancelled unread and whose failure is ignored. Returns at once.
 */
export function sendMirror(send: () => Promise<Response>, body: Uint8Array | null = null): void {
  const n = body === null ? 0 : body.byteLength;
  if (inFlight >= MIRROR_MAX_IN_FLIGHT || bodyBytes + n > MIRROR_BODY_BUDGET) return;
  inFlight++;
  bodyBytes += n;
  let p: Promise<Response>;
  try {
    p = send();
  } catch (e) {
    p = Promise.reject(e);
  }
  p.then((r) => r.body?.cancel())
    .catch(() => {})
    .finally(() => {
      inFlight--;
      bodyBytes -= n;
    });
}

const Template = v.array(v.union([v.string(), v.strictObject({ v: v.string() })]));

/** The variables a mirror-target may use (annotations/mirror.ts allows only these). */
export const MIRROR_VARIABLES: ReadonlySet<string> = new Set(["request_uri", "uri", "args", "is_args", "query_string", "host", "http_host", "scheme", "request_method"]);

function variable(flow: PolicyFlow, name: string): string {
  switch (name) {
    case "request_uri":
      return flow.pathAndQuery;
    case "uri":
      return flow.path;
    case "args":
    case "query_string":
      return flow.query.replace(/^\?/, "");
    case "is_args":
      return flow.query.length > 1 ? "?" : "";
    case "host":
      return flow.hostname;
    case "http_host":
      return flow.host;
    case "scheme":
      return flow.scheme;
    case "request_method":
      return flow.req.method;
  }
  throw new TypeError(`mirror: unsupported variable $${name}`);
}

/** The client's fields as the mirror location passes them (nginx's proxy defaults), Host replaced. */
function mirrorHeaders(flow: PolicyFlow, host: string): Headers {
  const h = new Headers();
  for (const [k, val] of flow.req.headers) {
    if (isHopByHop(k) || k === "host" || k === "content-length" || k === "transfer-encoding" || k === "expect") continue;
    // nginx drops a field with "_" when it reads the request (underscores_in_headers off).
    if (!flow.underscores && k.includes("_")) continue;
    h.append(k, val);
  }
  h.set("host", host);
  return h;
}

/**
 * mirror-target (`url`: its parts; `path`: whether the literal target has a path), mirror-host
 * (`host`) and mirror-request-body (`body`).
 */
export const INGRESS_MIRROR = defineKind(
  "ingress-mirror",
  "forwarding",
  v.strictObject({ url: v.pipe(Template, v.minLength(1)), path: v.boolean(), host: v.pipe(v.string(), v.minLength(1)), body: v.boolean() }),
  (params, caps) => {
    const c: PolicyCaps = needCaps(caps, "ingress-mirror");
    const parts = params.url as readonly TemplatePart[];
    if (!parts.every((p) => typeof p === "string" || MIRROR_VARIABLES.has(p.v))) throw new TypeError("mirror: unsupported variable");
    const variables = parts.some((p) => typeof p !== "string");
    if (/[\r\n\0]/.test(params.host)) throw new TypeError("mirror: host is not a field value");

    function target(flow: PolicyFlow): { url: URL; path: string } | null {
      let text = "";
      for (const p of parts) text += typeof p === "string" ? p : variable(flow, p.v);
      let url: URL;
      try {
        url = new URL(text);
      } catch {
        return null;
      }
      if (url.protocol !== "http:" && url.protocol !== "https:") return null;
      const path = variables ? `${url.pathname}${url.search}` : params.path ? `${url.pathname}${flow.query}` : flow.pathAndQuery;
      return { url, path };
    }

    async function copy(flow: PolicyFlow, t: { url: URL; path: string }, headers: Headers, body: Uint8Array | null): Promise<Response> {
      const https = t.url.protocol === "https:";
      const name = t.url.hostname.startsWith("[") ? t.url.hostname.slice(1, -1) : t.url.hostname;
      const port = t.url.port === "" ? (https ? 443 : 80) : Number(t.url.port);
      const want: Upstream = { address: name, port, authority: `${t.url.hostname}:${port}`, ready: true, serving: true, terminating: false };
      // The pipelining guard, as for an auth subrequest (docs/design.md, "Request framing and
      // bodies"): no copy of a request Bun gives up on.
      await c.pipelineGuard(flow.connectionScheme === "https");
      flow.req.signal.throwIfAborted();
      let to: Upstream;
      try {
        to = await c.resolve(want, flow.connectTimeoutMs);
      } catch (e) {
        if (e instanceof AddressForbiddenError) tellRefused(flow, name, e);
        throw e;
      }
      const init: SubrequestInit = {
        method: flow.req.method,
        headers,
        // Never tied to the client: a copy outlives the request it copies, within its bound.
        signal: c.deadline(MIRROR_TIMEOUT_MS, null),
        // nginx's proxy_ssl_verify off and proxy_ssl_server_name off: encrypted, not authenticated.
        ...(https ? { tls: { rejectUnauthorized: false } } : {}),
        ...(body === null ? {} : { body }),
      };
      return c.subrequest(`${t.url.protocol}//${to.authority}${t.path}`, init);
    }

    return (flow) => {
      if (mirrorFull()) return null;
      const t = target(flow);
      if (t === null) return null;
      const headers = mirrorHeaders(flow, params.host);
      if (flow.hasBody && params.body) {
        // Sent once the forward step has read the body whole (and never, if it streams).
        flow.bodyTap = (bytes) => sendMirror(() => copy(flow, t, headers, bytes), bytes);
        return null;
      }
      sendMirror(() => copy(flow, t, headers, null));
      return null;
    };
  },
);

// Said once per route and address, not per request (bounded: when full it starts afresh).
const told = new Set<string>();
function tellRefused(flow: PolicyFlow, name: string, e: AddressForbiddenError): void {
  const r = flow.route;
  for (const { address, reason } of e.refused) {
    const key = `${r.ingress.namespace}/${r.ingress.name}\0${r.host ?? ""}\0${r.path}\0${address}`;
    if (told.has(key)) continue;
    if (told.size >= 4_096) told.clear();
    told.add(key);
    flow.log.warn("mirror: the mirror target's address is refused; Portico never connects to it", {
      ingress: `${r.ingress.namespace}/${r.ingress.name}`, host: r.host, path: r.path, mirrorHost: name, address, reason,
    });
  }
}
