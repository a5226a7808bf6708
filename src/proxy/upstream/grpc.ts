// Forwarding to a gRPC backend (backend-protocol GRPC: HTTP/2 prior knowledge, GRPCS: HTTP/2
// over TLS) on a pooled HTTP/2 session per endpoint. It answers the handler as forward()
// does (a web Response, or a ProxyError the handler turns into a gRPC status), and puts the
// upstream's trailers beside the Response (trailers.ts) for the HTTP/2 listener to relay.
//
// - Every call kind works the same way: the request body streams up while the response
//   streams down (unary, server-, client- and bidirectional streaming alike).
// - grpc-timeout (gRPC over HTTP/2) is forwarded, and Portico holds the call to it as well:
//   past it the call ends with DEADLINE_EXCEEDED whether or not the backend answered.
// - Long streams are cut only by --stream-idle-timeout, i.e. when no message moved for that
//   long (the handler's body watchdog), never for their length.
// - Retried on another endpoint only when the backend cannot have seen the call: the
//   connection failed, or the stream was refused (REFUSED_STREAM, or above a GOAWAY's last
//   stream id) before one byte of the request body was read from the client. gRPC's own
//   retry rules (the "transparent retry" of gRFC A6) allow exactly these.
import type { ClientHttp2Session, ClientHttp2Stream, IncomingHttpHeaders, OutgoingHttpHeaders } from "node:http2";
import { ProxyError } from "../../http/errors.ts";
import type { ForwardInput, ForwardResult, RequestControl } from "./forward-types.ts";
import { grpcStatusOfReset, grpcTrailers, GRPC, parseGrpcTimeout } from "../../http/grpc-status.ts";
import { sharedH2Pool, type H2Pool } from "./h2-pool.ts";
import { answerTry, beginTry, endTry } from "../../log/upstream-tries.ts";
import { externalTarget, sharedExternalResolver } from "./external.ts";
import { attachTrailers, createTrailerSink, type TrailerSink } from "./trailers.ts";
import { createWatchdog, type Watchdog } from "./watchdog.ts";
import type { Backend } from "../../table/types.ts";

/** A backend-protocol GRPC or GRPCS backend: an HTTP/2 upstream on a pooled session, forwarded here. */
export function isGrpcBackend(b: Backend): boolean {
  return b.scheme === "grpc" || b.scheme === "grpcs";
}

/**
 * A backend that speaks plain HTTP over HTTP/2 cleartext with prior knowledge (a Gateway API
 * backendRef to a Service port of appProtocol `kubernetes.io/h2c`, GEP-1911): forwarded on the
 * same pooled sessions as gRPC, but as HTTP (no grpc-timeout, no `te: trailers`, failures
 * answered as HTTP statuses: it is not a gRPC backend to the rest of the proxy).
 */
export function isH2cBackend(b: Backend): boolean {
  return b.scheme === "h2c";
}

const H2_PROTOCOL_ERROR = 0x1;
const H2_CANCEL = 0x8;
const H2_REFUSED_STREAM = 0x7;

// RFC 9113 §8.2.2: never sent on HTTP/2 (the handler already dropped the hop-by-hop fields
// of the client's request; Host travels as :authority).
const NOT_FORWARDED = new Set(["host", "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te"]);

/** Not processed by the backend (safe to send elsewhere), as opposed to any other failure. */
class Unprocessed extends Error {}

function h2Headers(input: ForwardInput, tls: boolean, grpc: boolean): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {
    ":method": input.method,
    ":scheme": tls ? "https" : "http",
    ":path": input.pathAndQuery,
    // The client's authority, as ingress-nginx sets Host for grpc_pass.
    ":authority": input.headers.get("host") ?? "",
  };
  input.headers.forEach((v, k) => {
    if (!NOT_FORWARDED.has(k)) out[k] = v;
  });
  // gRPC over HTTP/2 requires "te: trailers" (it tells intermediaries the client reads trailers);
  // a plain HTTP request over h2c carries none (the client's TE is hop-by-hop, RFC 9110 §10.1.4).
  if (grpc) out.te = "trailers";
  return out;
}

function responseHeaders(h: IncomingHttpHeaders): Headers {
  const out = new Headers();
  for (const [k, v] of Object.entries(h)) {
    if (k.charCodeAt(0) === 0x3a || v === undefined) continue;
    if (Array.isArray(v)) for (const x of v) out.append(k, x);
    else out.append(k, String(v));
  }
  return out;
}

function trailersOfHeaders(h: IncomingHttpHeaders): Headers {
  return responseHeaders(h);
}

/** Client body → upstream stream, with backpressure. Resolves with the bytes read from the client. */
function pipeBody(body: ReadableStream<Uint8Array> | Uint8Array, up: ClientHttp2Stream, sent: { chunks: number }): void {
  // A whole body (the handler never buffers a gRPC call's body, but the forward input allows it).
  if (body instanceof Uint8Array) {
    sent.chunks++;
    up.end(body);
    return;
  }
  const reader = body.getReader();
  void (async () => {
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        sent.chunks++;
        if (up.destroyed) return void reader.cancel().catch(() => {});
        if (!up.write(value)) {
          await new Promise<void>((r) => {
            const go = () => {
              up.off("drain", go);
              up.off("close", go);
              r();
            };
            up.on("drain", go);
            up.on("close", go);
          });
        }
      }
      if (!up.destroyed) up.end();
    } catch {
      // The client's body failed (reset, over the size limit): the call cannot complete.
      if (!up.destroyed) up.close(H2_CANCEL);
    }
  })();
}

interface Call {
  readonly response: Response;
}

/** One attempt on one session. Rejects with Unprocessed when the backend cannot have seen it. */
function attempt(input: ForwardInput, session: ClientHttp2Session, pool: H2Pool, tls: boolean, grpc: boolean, callMs: number | null, sent: { chunks: number }): Promise<Call> {
  return new Promise<Call>((resolve, reject) => {
    let up: ClientHttp2Stream;
    try {
      up = session.request(h2Headers(input, tls, grpc), { endStream: input.body === null });
    } catch (e) {
      // The session closed between the pool handing it out and now (GOAWAY, idle close).
      return reject(new Unprocessed(String((e as Error)?.message ?? e)));
    }
    pool.opened(session);
    up.on("error", () => {});
    let answered = false;
    let ended = false;
    const sink: TrailerSink = createTrailerSink();
    let deadline: Watchdog | null = null;
    const stopDeadline = () => deadline?.stop();

    const onAbort = () => {
      if (!up.destroyed) up.close(H2_CANCEL);
      if (!answered) reject(input.signal.reason);
    };
    if (input.signal.aborted) return onAbort();
    input.signal.addEventListener("abort", onAbort, { once: true });
    const cleanup = () => input.signal.removeEventListener("abort", onAbort);

    if (input.body !== null) pipeBody(input.body, up, sent);

    let ctrlRef: ReadableStreamDefaultController<Uint8Array> | null = null;
    const endBody = (err: boolean) => {
      if (ended) return;
      ended = true;
      stopDeadline();
      try {
        if (err) ctrlRef?.error(new Error("upstream stream failed"));
        else ctrlRef?.close();
      } catch {}
    };

    up.once("response", (headers, flags) => {
      answered = true;
      const status = Number(headers[":status"]);
      // RFC 9113 §8.3.2: a response carries one :status; RFC 9110 §15: 100..599, and only a
      // final one (200..599) ends the wait (node reports 1xx apart; §8.6 forbids 101). Bun's
      // client hands over a missing :status as NaN and any three digits as they came; no
      // web Response takes those, and building one threw out of this event, leaving the
      // request unanswered. A pod that sends one is answered 502, as a malformed HTTP/1.1 head.
      if (!Number.isInteger(status) || status < 200 || status > 599) {
        ended = true;
        cleanup();
        if (!up.destroyed) up.close(H2_PROTOCOL_ERROR);
        reject(new ProxyError("UpstreamInvalid", `response :status ${String(headers[":status"])}`));
        return;
      }
      const h = responseHeaders(headers);
      // Trailers-Only (END_STREAM on the HEADERS): grpc-status is in these headers, no body.
      if ((flags & 0x1) !== 0 || up.endAfterHeaders) {
        ended = true;
        cleanup();
        resolve({ response: new Response(null, { status, headers: h }) });
        return;
      }
      const body = new ReadableStream<Uint8Array>(
        {
          start(ctrl) {
            ctrlRef = ctrl;
          },
          pull() {
            up.resume();
          },
          cancel(reason) {
            // The client left, or the body idled past --stream-idle-timeout (body.ts).
            cleanup();
            stopDeadline();
            ended = true;
            const idle = reason instanceof ProxyError && reason.code === "UpstreamTimeout";
            sink.settle(grpcTrailers(idle ? GRPC.DEADLINE_EXCEEDED : GRPC.CANCELLED, idle ? "stream idle" : "cancelled"));
            if (!up.destroyed) up.close(H2_CANCEL);
          },
        },
        { highWaterMark: 64 * 1024, size: (c) => c?.byteLength ?? 0 },
      );
      if (callMs !== null) {
        // A watchdog nobody touches is a deadline on the shared ticker (watchdog.ts).
        deadline = createWatchdog(callMs, () => {
          sink.settle(grpcTrailers(GRPC.DEADLINE_EXCEEDED, "deadline exceeded"));
          if (!up.destroyed) up.close(H2_CANCEL);
          endBody(false);
        });
      }
      resolve({ response: attachTrailers(new Response(body, { status, headers: h }), sink) });
    });
    up.on("data", (chunk: Buffer) => {
      if (ended || ctrlRef === null) return;
      ctrlRef.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
      if ((ctrlRef.desiredSize ?? 1) <= 0) up.pause();
    });
    up.once("trailers", (t) => sink.settle(trailersOfHeaders(t)));
    // A gRPC response ends with its trailers. Bun 1.4.5's client reports an RST_STREAM from the
    // backend after the response headers as a plain end (rstCode 0, no 'error': measured), so
    // an end without trailers is the only sign of a reset: it is decided at 'close' below.
    // A plain HTTP answer over h2c may end without trailers (RFC 9113 §8.1): its end is its end.
    up.once("end", () => {
      if (sink.value !== undefined || !grpc) endBody(false);
    });
    up.once("close", () => {
      pool.closed(session);
      cleanup();
      const code = up.rstCode ?? 0;
      if (!answered) {
        // Refused, or above the last stream id of a GOAWAY: never processed (RFC 9113 §8.7).
        if (code === H2_REFUSED_STREAM || (code === 0 && session.closed)) return reject(new Unprocessed(`stream refused (${code})`));
        if (input.signal.aborted) return reject(input.signal.reason);
        return reject(new ProxyError("UpstreamReset", `stream closed before headers (${code})`));
      }
      if (ended) return;
      // Reset, or the backend (or its connection) went away mid-stream: the client learns a
      // status instead of a reset. A lost connection is UNAVAILABLE (Bun then reports CANCEL
      // for every stream on it: measured); a reset code, when known, is mapped as a gRPC
      // client would map it; Bun does not report it (above), so that is UNAVAILABLE too.
      const lost = session.destroyed || session.closed || code === 0;
      sink.settle(grpcTrailers(lost ? GRPC.UNAVAILABLE : grpcStatusOfReset(code), "upstream stream ended without status"));
      endBody(true);
    });
  });
}

/** A gRPC call, or (an h2c backend) a plain HTTP request over HTTP/2 with prior knowledge. */
export async function forwardGrpc(input: ForwardInput, control: RequestControl, pool: H2Pool = sharedH2Pool()): Promise<ForwardResult> {
  const tls = input.backend.scheme === "grpcs";
  const grpc = isGrpcBackend(input.backend);
  const callMs = grpc ? parseGrpcTimeout(input.headers.get("grpc-timeout")) : null;
  // The client's deadline bounds the wait for response headers too; without one, the route's.
  const headerMs = callMs ?? input.responseTimeoutMs;
  const t0 = performance.now();
  const sent = { chunks: 0 };
  const tried = new Set<string>();
  for (;;) {
    // The route's endpoint choice (affinity, upstream-hash-by, EWMA) as for HTTP backends.
    const choice = input.choice ?? null;
    const exclude = tried.size === 0 ? undefined : tried;
    const u = choice === null ? input.balancer.pick(input.backend, exclude) : choice.pick(input.backend, input.balancer, exclude);
    const picked = choice === null ? 0 : performance.now();
    if (u === null) throw new ProxyError(tried.size === 0 ? "NoEndpoints" : "UpstreamConnect", "no endpoint left");
    tried.add(u.authority);
    const ext = input.backend.externalName ? (input.external ?? sharedExternalResolver()) : null;
    const to = ext === null ? u : await externalTarget(input, ext, u);
    // As forward.ts: the address tried, and the attempt for --access-log-template's $upstream_*
    // (null without one: log/upstream-tries.ts), as nginx keeps a state per peer for grpc_pass.
    if (input.record) input.record.upstream = to.authority;
    const at = beginTry(input.record?.tries, to.authority);
    const dog = createWatchdog(headerMs, () => control.abort(new ProxyError("UpstreamTimeout", "no response headers")));
    control.bind(dog);
    try {
      let session: ClientHttp2Session;
      try {
        session = await pool.session({ tls, authority: to.authority, serverName: input.backend.serverName, upstreamTls: input.upstreamTls }, input.connectTimeoutMs);
      } catch (e) {
        input.balancer.failed(u);
        ext?.forget(u.address);
        // ngx_http_upstream_next: 504 for a connect deadline (`timeout`), 502 otherwise.
        endTry(at, e instanceof ProxyError && e.detail === "connect timeout" ? 504 : 502);
        throw new Unprocessed(String((e as Error)?.message ?? e));
      }
      const call = await attempt(input, session, pool, tls, grpc, callMs, sent);
      dog.stop();
      answerTry(at, call.response.status);
      input.balancer.succeeded(u);
      choice?.answered(u, performance.now() - picked, input.balancer);
      return { response: call.response, upstream: to, upstreamMs: performance.now() - t0 };
    } catch (e) {
      dog.stop();
      if (input.clientSignal.aborted || input.stopSignal.aborted) throw e;
      endTry(at, e instanceof ProxyError && e.code === "UpstreamTimeout" ? 504 : 502);
      if (e instanceof Unprocessed) {
        // Nothing of the call reached the backend; once a byte of the body was taken from the
        // client it could not be sent again, so then it is an error like any other.
        if (sent.chunks === 0 && tried.size < Math.min(2, input.backend.endpoints.length)) {
          try {
            input.hooks?.onUpstreamRetry?.(input.backend.id, "connect");
          } catch {}
          continue;
        }
        try {
          input.hooks?.onUpstreamError?.(input.backend.id, "connect");
        } catch {}
        throw new ProxyError("UpstreamConnect", e.message);
      }
      if (e instanceof ProxyError && e.code === "UpstreamTimeout") input.balancer.cooled(u);
      try {
        input.hooks?.onUpstreamError?.(input.backend.id, e instanceof ProxyError && e.code === "UpstreamTimeout" ? "timeout" : "reset");
      } catch {}
      throw e instanceof ProxyError ? e : new ProxyError("UpstreamReset", String((e as Error)?.message ?? e));
    }
  }
}
