// The access-log line as an nginx log_format (--access-log-template, ingress-nginx's
// log-format-upstream; docs/design.md "The access log"): the format is read once into literal
// text and variable names (policy/log-format.ts), and each line is the literal text with every
// variable's value for the request, escaped as nginx's ngx_http_log_module escapes it (escape.ts). Nothing
// is evaluated: a variable is a name looked up in the switch below. Formatted by the access
// log's pump, off the request path, from the record and the request it keeps (RequestView).
import { STATUS_CODES } from "node:http";
import { hostname as osHostname } from "node:os";
import { freshRequestId } from "../http/headers.ts";
import { prefixedVariable, remoteUser } from "../kinds/variables.ts";
import { parseLogFormat, type LogEscape } from "../policy/log-format.ts";
import { targetOf } from "../request/target.ts";
import type { TemplatePart } from "../policy/template.ts";
import type { AccessRecord, RequestView } from "./access.ts";
import { escapeDefault, escapeJson, escapeNone } from "./escape.ts";
import { joinTries } from "./upstream-tries.ts";

const HOST = osHostname();
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const two = (n: number) => (n < 10 ? `0${n}` : String(n));

/** nginx's $time_local in UTC: `28/Nov/2026:08:26:50 +0000`. */
function timeLocal(ms: number): string {
  const d = new Date(ms);
  return `${two(d.getUTCDate())}/${MONTHS[d.getUTCMonth()]}/${d.getUTCFullYear()}:${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())} +0000`;
}

/** nginx's $time_iso8601 in UTC: `2026-11-28T08:26:50+00:00`. */
function timeIso(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 19)}+00:00`;
}

/** Seconds with millisecond resolution, as nginx writes $request_time and $upstream_*_time. */
const seconds = (ms: number): string => (Math.max(0, ms) / 1000).toFixed(3);

// Bun.serve does not tell a request's HTTP version, so an HTTP/1.0 request is logged as HTTP/1.1
// (docs/design.md "Bun facts measured here").
const protocolOf = (r: AccessRecord): string => (r.protocol === "h2" ? "HTTP/2.0" : "HTTP/1.1");

/**
 * $request_length from the request as parsed: the request line, each field as `name: value`
 * with CRLF, the empty line, and the body bytes read. The client's own spelling (spaces, a
 * field repeated rather than joined) can make its bytes differ a little.
 */
function requestLength(r: AccessRecord, v: RequestView): number {
  // The fields were counted once, as admit read them (validate.ts readFields: the blank line included).
  return v.req.method.length + 1 + targetOf(v.req.url).target.length + 1 + protocolOf(r).length + 2 + v.headBytes + r.bytesIn;
}

/** "Date: Sat, 28 Nov 2026 08:52:01 GMT" and CRLF: the field Bun adds to every answer. */
const DATE_FIELD = 37;
/** "Transfer-Encoding: chunked" and CRLF, and the last chunk "0" CRLF CRLF. */
const CHUNKED_FIELD = 28;
const LAST_CHUNK = 5;

/**
 * The bytes Bun writes before and around the body of `res` ($bytes_sent less the body; measured
 * on Bun 1.4.5, HTTP/1.1): the status line with the standard reason phrase (Bun ignores
 * statusText; "HM" for a code it has no phrase for), each field as `name: value` CRLF, a Date
 * field, Content-Length for a body it holds whole (`bodyBytes` long) or Transfer-Encoding:
 * chunked and the last chunk for a streamed one (neither for 1xx, 204, 304), the empty line. A
 * streamed body's chunk-size lines are not counted (Bun chooses the chunks), nor HTTP/2's
 * frames: the HTTP/1.1 form stands for an HTTP/2 answer. Read before Bun is handed the answer
 * (proxy/pipeline/handler.ts): Bun takes the fields out of a Response it sends (measured).
 */
export function answerHeadBytes(res: Response, streamed: boolean, bodyBytes: number): number {
  const s = res.status;
  let n = 9 + 3 + 1 + (STATUS_CODES[s] ?? "HM").length + 2;
  let date = false;
  let framed = false;
  // The Content-Length line's size, kept for a streamed body (below): one walk of the fields.
  let lengthLine = 0;
  res.headers.forEach((value, name) => {
    const line = name.length + 2 + value.length + 2;
    n += line;
    if (name === "date") date = true;
    else if (name === "content-length") {
      framed = true;
      lengthLine = line;
    } else if (name === "transfer-encoding") framed = true;
  });
  if (!date) n += DATE_FIELD;
  const bodiless = s < 200 || s === 204 || s === 304;
  if (!bodiless && streamed) {
    // Bun drops a Content-Length field for a streamed body and frames it chunked.
    n += CHUNKED_FIELD + LAST_CHUNK - lengthLine;
  } else if (!bodiless && !framed) n += 16 + 2 + String(bodyBytes).length;
  return n + 2;
}

/** `namespace/service:port` as ingress-nginx names the upstream: `namespace-service-port`. */
function upstreamName(service: string | null): string {
  if (service === null) return "-";
  const slash = service.indexOf("/");
  const colon = service.lastIndexOf(":");
  if (slash < 0 || colon < slash) return service;
  return `${service.slice(0, slash)}-${service.slice(slash + 1, colon)}-${service.slice(colon + 1)}`;
}

/** A time in ms as nginx writes it, or `-` for none (-1). */
const msOrDash = (ms: number): string => (ms < 0 ? "-" : seconds(ms));

/**
 * The $upstream_* variables. With a template, forward.ts keeps every attempt (log/upstream-tries.ts)
 * and each variable is one value per attempt, as ngx_http_upstream.c writes them: the address;
 * the status (502/504 for a failed attempt, `-` for none); the times to the connection (only
 * when Portico probed it; `-` otherwise), to the headers, and to the attempt's end (its failure,
 * or the pod's body's end: ngx_http_upstream_finalize_request); the pod's body bytes read. gRPC
 * and h2c calls (grpc.ts) and WebSocket handshakes (websocket.ts) keep their attempts too. No
 * attempt (an answer Portico made itself, or a handshake refused before any pod was contacted,
 * though `record.upstream` may already name the one chosen): not found, `-`, as nginx writes
 * these when a request has no upstream state (ngx_http_upstream_addr_variable: r->upstream_states
 * empty, not found).
 */
function upstreamVariable(name: string, r: AccessRecord): string | null {
  const tries = r.tries;
  if (tries != null && tries.length > 0) {
    switch (name) {
      case "upstream_addr":
        return joinTries(tries, (t) => t.addr);
      case "upstream_status":
        return joinTries(tries, (t) => (t.status === 0 ? "-" : String(t.status)));
      case "upstream_response_time":
        return joinTries(tries, (t) => msOrDash(t.endMs));
      case "upstream_header_time":
        return joinTries(tries, (t) => msOrDash(t.headerMs));
      case "upstream_connect_time":
        return joinTries(tries, (t) => msOrDash(t.connectMs));
      default:
        return joinTries(tries, (t) => String(t.length));
    }
  }
  return null;
}

/**
 * One variable's value for this line, or null where nginx's variable is "not found" (which
 * escape=default writes as `-`, json and none as nothing). A name Portico does not know is not
 * found, as an unset variable in nginx.
 */
function logVariable(name: string, r: AccessRecord, v: RequestView | null): string | null {
  switch (name) {
    case "status":
      return String(r.status);
    case "body_bytes_sent":
      return String(r.bytesOut);
    case "request_time":
      return seconds(r.durationMs);
    case "msec":
      return ((r.time + r.durationMs) / 1000).toFixed(3);
    case "time_local":
      return timeLocal(r.time + r.durationMs);
    case "time_iso8601":
      return timeIso(r.time + r.durationMs);
    case "request_method":
      return r.method;
    case "server_protocol":
      return protocolOf(r);
    case "upstream_addr":
    case "upstream_status":
    case "upstream_response_time":
    case "upstream_header_time":
    case "upstream_connect_time":
    case "upstream_response_length":
      return upstreamVariable(name, r);
    // ingress-nginx's `map $http_x_request_id $req_id` (nginx.tmpl): the client's X-Request-ID,
    // else nginx's $request_id; the id Portico sends upstream and returns (http/headers.ts).
    case "req_id":
      return r.requestId;
    case "proxy_upstream_name":
      return upstreamName(r.service);
    // ingress-nginx's Lua sets it to the canary's upstream when one served; nginx.tmpl starts it empty.
    case "proxy_alternative_upstream_name":
      return "";
    case "namespace":
    case "ingress_name": {
      if (r.ingress === null) return null;
      const slash = r.ingress.indexOf("/");
      return name === "namespace" ? r.ingress.slice(0, slash) : r.ingress.slice(slash + 1);
    }
    case "service_name":
    case "service_port": {
      if (r.service === null) return null;
      const slash = r.service.indexOf("/");
      const colon = r.service.lastIndexOf(":");
      return name === "service_name" ? r.service.slice(slash + 1, colon) : r.service.slice(colon + 1);
    }
    case "hostname":
      return HOST;
    case "pid":
      return String(process.pid);
  }
  if (v === null) return null;
  switch (name) {
    case "remote_addr":
      return v.clientIp;
    case "remote_user":
      return remoteUser(v.req.headers);
    case "request":
      return `${v.req.method} ${targetOf(v.req.url).target} ${protocolOf(r)}`;
    case "request_uri":
      return targetOf(v.req.url).target;
    case "uri":
    case "document_uri":
      return r.path;
    case "args":
    case "query_string":
      return v.query.slice(1);
    case "is_args":
      return v.query.length > 1 ? "?" : "";
    case "scheme":
      return v.scheme;
    // ngx_http_variable_https: "on" on a TLS connection, else empty (found, not `-`).
    case "https":
      return v.connectionScheme === "https" ? "on" : "";
    case "server_addr":
      return v.serverAddr;
    case "remote_port":
      return v.remotePort === null ? null : String(v.remotePort);
    // ngx_http_variable_proxy_protocol_addr/_port: the header's source, whoever sent it.
    case "proxy_protocol_addr":
      return v.proxySource === null ? null : v.proxySource.address;
    case "proxy_protocol_port":
      return v.proxySource === null ? null : String(v.proxySource.port);
    // nginx.tmpl: `map '' $the_real_ip`, $proxy_protocol_addr with use-proxy-protocol, else $remote_addr.
    case "the_real_ip":
      return v.proxySource !== null ? v.proxySource.address : v.clientIp;
    // nginx.tmpl `set $location_path` in each Ingress location; unset in the catch-all server.
    case "location_path":
      return v.locationPath;
    case "ssl_server_name": {
      const sni = v.connectionScheme === "https" ? v.tls()?.servername ?? null : null;
      return sni === null || sni === "" ? null : sni;
    }
    case "host":
      return r.host;
    case "server_port":
      return String(v.localPort);
    case "request_length":
      return String(requestLength(r, v));
    case "bytes_sent":
      return v.sentHeadBytes < 0 ? null : String(v.sentHeadBytes + r.bytesOut);
  }
  return prefixedVariable(name, v.req.headers, v.query) ?? null;
}

const UPSTREAM_VARIABLES = new Set(["upstream_addr", "upstream_status", "upstream_response_time", "upstream_header_time", "upstream_connect_time", "upstream_response_length"]);

/**
 * What a request must keep for this format beyond its view: every upstream attempt (only for
 * the $upstream_* variables), its answer's head (only for $bytes_sent: counting it costs a
 * promise turn per request and a read of the fields Bun would otherwise take as they are,
 * about 6-10% of a small proxied request, bench/paired.ts) and the client's port (only for
 * $remote_port: Bun's requestIP makes an object). null: no template in effect.
 */
export function templateNeeds(format: string | null): { readonly tries: boolean; readonly head: boolean; readonly port: boolean } | null {
  if (format === null) return null;
  const parsed = parseLogFormat(format);
  if (!parsed.ok) return null;
  let tries = false;
  let head = false;
  let port = false;
  for (const p of parsed.parts) {
    if (typeof p === "string") continue;
    if (UPSTREAM_VARIABLES.has(p.v)) tries = true;
    else if (p.v === "bytes_sent") head = true;
    else if (p.v === "remote_port") port = true;
  }
  return { tries, head, port };
}

/**
 * nginx's $request_id: its own id for every request, 16 random bytes in hex, made when the
 * variable is first read and kept for the request (ngx_http_variables.c
 * ngx_http_variable_request_id), whatever the client sent. When the client sent no usable
 * X-Request-ID, $req_id already is Portico's own (http/headers.ts requestIdFrom). Otherwise a
 * fresh one is made here, when the line is formatted: nginx too makes it only when something
 * reads the variable, and nothing but this line reads it, so the request path does no work for
 * it. A header equal to the record's id is the client's (validate.ts reads the field as get()
 * joins it); a fresh id equal to it would be a 128-bit collision.
 */
function ownRequestId(r: AccessRecord, v: RequestView | null): string {
  if (v === null || v.req.headers.get("x-request-id") !== r.requestId) return r.requestId;
  return freshRequestId();
}

/** A line formatter for this format and escape mode; throws when the format is not one (the flag checked it). */
export function compileLogTemplate(format: string, escape: LogEscape): (r: AccessRecord) => string {
  const parsed = parseLogFormat(format);
  if (!parsed.ok) throw new Error(`access-log template: ${parsed.why}`);
  const parts: readonly TemplatePart[] = parsed.parts;
  const esc = escape === "json" ? escapeJson : escape === "none" ? escapeNone : escapeDefault;
  const absent = escape === "default" ? "-" : "";
  return (r) => {
    const v = r.view;
    let out = "";
    // $request_id named twice in a line is one id (nginx keeps a variable's value per request).
    let own: string | null = null;
    for (const p of parts) {
      if (typeof p === "string") out += p;
      else {
        const val = p.v === "request_id" ? (own ??= ownRequestId(r, v)) : logVariable(p.v, r, v);
        out += val === null ? absent : esc(val);
      }
    }
    return out;
  };
}
