// A node:http2 stream (or an HTTP/1.1 request on the same listener) as the web Request the
// proxy handler takes, so routing, headers, limits, policies and logs are the one code path
// Bun.serve requests take (docs/design.md, "HTTP/2 and gRPC").
//
// The URL is built as Bun.serve builds req.url: "scheme://authority" + the target as received;
// `new Request` normalises it the same way Bun.serve does (dot segments, "\" → "/": measured on
// 1.4.5), and validateRequest then reads it exactly as for an HTTP/1.1 request.
import type { IncomingMessage } from "node:http";
import type { IncomingHttpHeaders } from "node:http2";
import type { Readable } from "node:stream";

/** Why a request never reached the handler (answered 400 by the listener). */
export type Refusal = "method" | "path" | "authority" | "framing";

// RFC 9110 §9.1 method = token; `new Request` silently turns a method it does not know (and
// any lowercase spelling) into GET (measured on 1.4.5), so what it kept is compared below.
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// origin-form (RFC 9112 §3.2.1) as visible ASCII: SP, CTLs and non-ASCII are not a target.
const ORIGIN_FORM = /^\/[\x21-\x7e]*$/;

function makeRequest(method: string, url: string, headers: Headers, body: ReadableStream<Uint8Array> | null, signal: AbortSignal): Request | Refusal {
  if (!TOKEN.test(method)) return "method";
  let req: Request;
  try {
    req = new Request(url, { method, headers, body, signal, duplex: "half" } as RequestInit);
  } catch {
    return "authority";
  }
  return req.method === method ? req : "method";
}

export interface BodyLimits {
  /** Content-Length the client declared, or null. RFC 9113 §8.1.1: the DATA must match it. */
  readonly declared: number | null;
  /** Called once when the body breaks its declared length (the caller resets the stream). */
  readonly onMalformed: () => void;
}

/**
 * A node Readable as a web stream, with backpressure (paused while the web side holds 64 KiB).
 * A body that ends early, runs past its Content-Length, or is cut by the client errors the
 * stream, so the upstream request fails instead of being sent short (no desync upstream).
 */
export function bodyStream(src: Readable, limits: BodyLimits | null): ReadableStream<Uint8Array> {
  let n = 0;
  let over = false;
  return new ReadableStream<Uint8Array>(
    {
      start(ctrl) {
        const fail = (why: string) => {
          if (over) return;
          over = true;
          try {
            ctrl.error(new Error(why));
          } catch {}
        };
        src.on("data", (chunk: Buffer) => {
          if (over) return;
          n += chunk.byteLength;
          const d = limits?.declared ?? null;
          if (d !== null && n > d) {
            limits?.onMalformed();
            return fail("request body longer than its Content-Length");
          }
          ctrl.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
          if ((ctrl.desiredSize ?? 1) <= 0) src.pause();
        });
        src.once("end", () => {
          if (over) return;
          const d = limits?.declared ?? null;
          if (d !== null && n !== d) {
            limits?.onMalformed();
            return fail("request body shorter than its Content-Length");
          }
          over = true;
          ctrl.close();
        });
        src.once("close", () => fail("request stream closed before its end"));
        src.on("error", () => fail("request stream error"));
      },
      pull() {
        src.resume();
      },
      cancel() {
        // The upstream side no longer wants the body: stop buffering it. Whatever the client
        // still sends is dropped with the stream when the response is done (listener.ts).
        over = true;
        src.pause();
      },
    },
    { highWaterMark: 64 * 1024, size: (c) => c?.byteLength ?? 0 },
  );
}

const BODILESS = new Set(["GET", "HEAD", "TRACE"]);
const PSEUDO = 0x3a; // ':'

/**
 * An HTTP/2 request (RFC 9113 §8.3.1): `:authority` is the host; a Host field that names
 * another is malformed. Cookie fields split across lines are joined with "; " (§8.2.3). Bun's
 * frame parser has already refused connection-specific fields (§8.2.2) and bad field names.
 */
export function requestFromH2(
  headers: IncomingHttpHeaders,
  raw: readonly string[] | undefined,
  /** END_STREAM on the HEADERS: no body follows. */
  ended: boolean,
  body: (declared: number | null) => ReadableStream<Uint8Array>,
  signal: AbortSignal,
  /** As Bun.serve builds `req.url`: "https" on the HTTPS port, "http" for h2c on the plain one. */
  scheme: "http" | "https" = "https",
): Request | Refusal {
  const method = headers[":method"];
  const path = headers[":path"];
  const authority = headers[":authority"];
  if (typeof method !== "string") return "method";
  if (typeof path !== "string" || !ORIGIN_FORM.test(path)) return "path";
  const h = new Headers();
  let cookie: string | null = null;
  const pairs = raw ?? flatten(headers);
  for (let i = 0; i + 1 < pairs.length; i += 2) {
    const k = pairs[i] as string;
    if (k.charCodeAt(0) === PSEUDO) continue;
    const name = k.toLowerCase();
    const v = pairs[i + 1] as string;
    if (name === "cookie") cookie = cookie === null ? v : `${cookie}; ${v}`;
    else h.append(name, v);
  }
  if (cookie !== null) h.set("cookie", cookie);
  let host = h.get("host");
  if (typeof authority === "string" && authority !== "") {
    if (host !== null && host.toLowerCase() !== authority.toLowerCase()) return "authority";
    host = authority;
    h.set("host", authority);
  }
  const cl = h.get("content-length");
  const declared = cl !== null && /^[0-9]{1,16}$/.test(cl) ? Number(cl) : null;
  // As Bun.serve does for HTTP/1.1, a GET, HEAD or TRACE carries no body stream: the handler
  // sees the framing fields without one and refuses the request (proxy/pipeline/forward.ts checkBody says why).
  const b = ended || BODILESS.has(method) ? null : body(declared);
  // RFC 9113 §8.1.1: a Content-Length that the DATA frames do not match is malformed; with
  // END_STREAM on the HEADERS there are none.
  if (b === null && ended && declared !== null && declared !== 0) return "framing";
  // The handler reads "is there a body" from the framing fields, as RFC 9112 §6.3 does for
  // HTTP/1.1. An HTTP/2 body of undeclared length is what HTTP/1.1 calls chunked; the field
  // is hop-by-hop and never forwarded.
  if (!ended && cl === null) h.set("transfer-encoding", "chunked");
  return makeRequest(method, `${scheme}://${host ?? "invalid.invalid"}${path}`, h, b, signal);
}

function flatten(headers: IncomingHttpHeaders): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined) continue;
    if (Array.isArray(v)) for (const x of v) out.push(k, x);
    else out.push(k, String(v));
  }
  return out;
}

/**
 * An HTTP/1.x request node's parser read on the HTTP/2 listener (ALPN http/1.1). Fields come
 * from rawHeaders so a repeated Host reaches validateRequest as "a, b" and is refused there,
 * as on Bun.serve (node itself would keep the first).
 */
export function requestFromH1(
  req: IncomingMessage,
  withBody: boolean,
  signal: AbortSignal,
  /** Where the body comes from instead of `req` (an upgrade request's raw socket); null: none. */
  body?: (h: Headers) => ReadableStream<Uint8Array> | null,
): Request | Refusal {
  const h = new Headers();
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) h.append(raw[i] as string, raw[i + 1] as string);
  const target = req.url ?? "";
  const host = h.get("host");
  if (host === null && req.httpVersion === "1.1") return "authority"; // RFC 9112 §3.2
  // RFC 9112 §6.1: an HTTP/1.0 message with Transfer-Encoding has faulty framing (an HTTP/1.0
  // hop before us may not have read it as chunked); nginx answers 400 ("client sent HTTP/1.0
  // request with Transfer-Encoding", ngx_http_process_request_header), and Bun.serve does too.
  // node's parser de-chunked it and the request went upstream.
  if (req.httpVersion !== "1.1" && h.has("transfer-encoding")) return "framing";
  let url: string;
  if (ORIGIN_FORM.test(target)) url = `https://${host ?? "invalid.invalid"}${target}`;
  // absolute-form (RFC 9112 §3.2.2): kept whole, so validateRequest compares its authority
  // with Host and refuses a mismatch.
  else if (/^https?:\/\/[\x21-\x7e]+$/i.test(target)) url = target;
  else return "path";
  const method = req.method ?? "";
  // As on Bun.serve, a GET, HEAD or TRACE carries no body stream, whatever its framing says: the
  // handler sees the framing fields without one and refuses the request (400, close). Handing
  // node's body over instead made `fetch` refuse it upstream (a 502).
  const hasBody = withBody && !BODILESS.has(method) && (h.has("content-length") || h.has("transfer-encoding"));
  return makeRequest(method, url, h, hasBody ? (body === undefined ? bodyStream(req, null) : body(h)) : null, signal);
}

/**
 * The body of a request node:http handed over with its raw socket ('upgrade'): node parses no
 * body there. `head` holds the bytes read past the header block; the rest is read from the
 * socket up to the declared Content-Length, with backpressure (the socket is paused while the
 * web side holds 64 KiB). A socket that ends first errors the stream, so the upstream never
 * sees the body whole. Bytes past the length are left unread: the connection closes after the
 * answer. A chunked body is not decoded here (null: the handler refuses a body it cannot
 * read, 400, and the connection closes).
 */
export function rawLengthBody(socket: Readable, head: Buffer, h: Headers): ReadableStream<Uint8Array> | null {
  if (h.has("transfer-encoding")) return null;
  const cl = h.get("content-length");
  if (cl === null || !/^[0-9]{1,16}$/.test(cl)) return null;
  const declared = Number(cl);
  let n = 0;
  let over = false;
  const onData = (chunk: Buffer, ctrl: ReadableStreamDefaultController<Uint8Array>) => {
    if (over) return;
    const take = Math.min(chunk.byteLength, declared - n);
    n += take;
    if (take > 0) ctrl.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, take));
    if (n === declared) {
      over = true;
      socket.pause();
      ctrl.close();
    } else if ((ctrl.desiredSize ?? 1) <= 0) socket.pause();
  };
  return new ReadableStream<Uint8Array>(
    {
      start(ctrl) {
        const fail = () => {
          if (over) return;
          over = true;
          try {
            ctrl.error(new Error("request stream closed before its end"));
          } catch {}
        };
        onData(head, ctrl);
        if (over) return;
        socket.pause();
        socket.on("data", (d: Buffer) => onData(d, ctrl));
        socket.once("end", fail);
        socket.once("close", fail);
      },
      pull() {
        if (!over) socket.resume();
      },
      cancel() {
        over = true;
        socket.pause();
      },
    },
    { highWaterMark: 64 * 1024, size: (c) => c?.byteLength ?? 0 },
  );
}
