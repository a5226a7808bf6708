// The handler's web Response written to an HTTP/2 stream or to node's HTTP/1.1 response, with
// backpressure, trailers (gRPC status) and the same "a broken body is never mistaken for a
// whole one" rule as on Bun.serve: a body that fails mid-way resets the stream (or the
// connection) instead of ending it cleanly.
import { STATUS_CODES, type ServerResponse } from "node:http";
import type { OutgoingHttpHeaders, ServerHttp2Stream } from "node:http2";
import type { Duplex, Writable } from "node:stream";
import { isUnanswered } from "../http/errors.ts";
import { trailersOf, type TrailerBox } from "../proxy/upstream/trailers.ts";
import { H2_INTERNAL_ERROR, H2_NO_ERROR, H2_PROTOCOL_ERROR } from "./limits.ts";

// RFC 9113 §8.2.2: connection-specific fields are malformed in HTTP/2 (node:http2 refuses to
// send them); TE is allowed in requests only. The listener turns a drain into GOAWAY itself.
const CONNECTION_SPECIFIC = new Set(["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te"]);

export function h2Headers(res: Response): OutgoingHttpHeaders {
  const headers: OutgoingHttpHeaders = { ":status": res.status };
  res.headers.forEach((v, k) => {
    if (!CONNECTION_SPECIFIC.has(k) && k !== "set-cookie") headers[k] = v;
  });
  const cookies = res.headers.getSetCookie();
  if (cookies.length > 0) headers["set-cookie"] = cookies;
  return headers;
}

/** Resolves once `w` may be written again, or has closed (then the caller stops). */
function drained(w: Writable): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      w.off("drain", done);
      w.off("close", done);
      resolve();
    };
    w.on("drain", done);
    w.on("close", done);
  });
}

/** Copy `body` into `w`. False when the body failed or the client left before its end. */
async function pump(body: ReadableStream<Uint8Array>, w: Writable, chunked = false): Promise<boolean> {
  const reader = body.getReader();
  // The client left: cancel the body so the handler records ClientClosed and the upstream
  // read stops, rather than waiting for its next chunk.
  const onClose = () => void reader.cancel().catch(() => {});
  w.once("close", onClose);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return !w.destroyed;
      if (w.destroyed) return false;
      if (chunked) {
        // An empty chunk would read as the last one (RFC 9112 §7.1).
        if (value.byteLength === 0) continue;
        w.write(`${value.byteLength.toString(16)}\r\n`);
        w.write(value);
        if (!w.write("\r\n")) await drained(w);
      } else if (!w.write(value)) await drained(w);
    }
  } catch {
    return false;
  } finally {
    w.off("close", onClose);
  }
}

/**
 * Once the answer is all sent, a stream whose request is still open is reset with NO_ERROR:
 * RFC 9113 §8.1 lets a server that sent a complete response before the request's end ask the
 * client to stop sending that way, and nginx does (ngx_http_v2_close_stream: RST_STREAM
 * NO_ERROR when the request side is not closed; measured on nginx 1.22 with an early 413).
 * Without it an early answer (413 on a declared length, 408 on a stalled body, a pod that
 * answers before reading its upload) left the stream half-open: the client kept its upload
 * waiting on a window that never opened, and the stream held its slot until the session ended.
 */
function stopRequestSide(stream: ServerHttp2Stream): void {
  const stop = () => {
    if (!stream.closed && !stream.destroyed && stream.state.remoteClose === 0) stream.close(H2_NO_ERROR);
  };
  // A turn later: streams.ts counts a stream that closes before its answer is done as the
  // client's reset (the rapid-reset guard), and marks the answer done once sendH2 resolves.
  const later = () => void setImmediate(stop);
  if (stream.writableFinished) later();
  else stream.once("finish", later);
}

/** Send `res` on `stream`. `head`: HEAD request (headers only). */
export async function sendH2(stream: ServerHttp2Stream, res: Response, head: boolean): Promise<void> {
  await writeH2(stream, res, head);
  if (!stream.closed && !stream.destroyed) stopRequestSide(stream);
}

async function writeH2(stream: ServerHttp2Stream, res: Response, head: boolean): Promise<void> {
  if (isUnanswered(res)) {
    // No answer (errors.ts unanswered()): nginx resets a timed-out HTTP/2 stream with
    // PROTOCOL_ERROR (ngx_http_v2_close_stream, fc->timedout).
    if (!stream.destroyed && !stream.closed) stream.close(H2_PROTOCOL_ERROR);
    return;
  }
  const headers = h2Headers(res);
  if (stream.destroyed || stream.closed) {
    if (!head) void res.body?.cancel().catch(() => {});
    return;
  }
  const box = trailersOf(res) ?? null;
  const small = head || box !== null ? null : await smallBody(res);
  if (small !== null) {
    // One write for what relayResponse buffered anyway (a declared length of at most 64 KiB).
    if (stream.destroyed || stream.closed) return;
    stream.respond(headers, { endStream: false });
    stream.end(small);
    return;
  }
  const body = head ? null : res.body;
  if (body === null && box === null) {
    stream.respond(headers, { endStream: true });
    return;
  }
  stream.respond(headers, { endStream: false, waitForTrailers: box !== null });
  const ok = body === null ? true : await pump(body, stream);
  if (stream.destroyed || stream.closed) return;
  if (box !== null) {
    // gRPC: on success the upstream's trailers; on failure the ones the forwarder made up for
    // it (grpc-status UNAVAILABLE...), so the client learns a status instead of a reset.
    const t = await settled(box);
    if (ok || t !== null) return endWithTrailers(stream, t ?? new Headers());
  }
  if (ok) stream.end();
  else stream.close(H2_INTERNAL_ERROR);
}

async function settled(box: TrailerBox): Promise<Headers | null> {
  return box.value !== undefined ? box.value : await box.ready;
}

function endWithTrailers(stream: ServerHttp2Stream, t: Headers): void {
  const out: OutgoingHttpHeaders = {};
  t.forEach((v, k) => {
    if (!CONNECTION_SPECIFIC.has(k) && k.charCodeAt(0) !== 0x3a) out[k] = v;
  });
  stream.once("wantTrailers", () => {
    try {
      stream.sendTrailers(out);
    } catch {
      stream.close(H2_NO_ERROR);
    }
  });
  stream.end();
}

/** Bodies the proxy already holds whole: relayResponse buffers declared lengths up to this. */
const SMALL = 64 * 1024;

/** The whole body when it is declared small (and so already in memory), else null. */
async function smallBody(res: Response): Promise<Uint8Array | null> {
  const cl = res.headers.get("content-length");
  if (cl === null || res.body === null || !/^[0-9]{1,5}$/.test(cl) || Number(cl) > SMALL) return null;
  try {
    return new Uint8Array(await res.arrayBuffer());
  } catch {
    return null;
  }
}

/** Send `res` on node's HTTP/1.1 response object (the listener's http/1.1 side). */
export async function sendH1(out: ServerResponse, res: Response, head: boolean): Promise<void> {
  if (isUnanswered(res)) {
    // No answer (errors.ts unanswered()): no byte, and a reset, as nginx with
    // reset_timedout_connection on.
    if (out.socket !== null) resetSocket(out.socket);
    else out.destroy();
    return;
  }
  res.headers.forEach((v, k) => {
    if (k !== "set-cookie") out.setHeader(k, v);
  });
  const cookies = res.headers.getSetCookie();
  if (cookies.length > 0) out.setHeader("set-cookie", cookies);
  const small = head ? null : await smallBody(res);
  out.writeHead(res.status, res.statusText || undefined);
  if (small !== null) {
    out.end(small);
    return;
  }
  const body = head ? null : res.body;
  if (body === null) {
    out.end();
    return;
  }
  const ok = await pump(body, out);
  // As on Bun.serve: a body that failed mid-way ends the connection without the last chunk.
  if (ok) out.end();
  else out.destroy();
}

/** Close with a TCP reset (SO_LINGER 0, as nginx's reset_timedout_connection), nothing written. */
export function resetSocket(socket: Duplex): void {
  const s = socket as Duplex & { resetAndDestroy?(): void };
  if (typeof s.resetAndDestroy === "function") s.resetAndDestroy();
  else s.destroy();
}

/** The framing fields sendRaw writes itself, whatever the handler's Response carries. */
const RAW_FRAMING = new Set(["connection", "keep-alive", "content-length", "transfer-encoding"]);

/**
 * Send `res` as raw HTTP/1.1 on a socket node:http has handed over (its 'upgrade' event), then
 * close it: the handler's answer to a WebSocket handshake it refused, or to a request whose
 * Upgrade it ignored (RFC 9110 §7.8: a server may). The body is streamed with backpressure, as
 * sendH1 does, never read whole: a client that stops reading holds the upstream read, not
 * memory. A declared Content-Length is kept; otherwise the body is chunked (RFC 9112 §7.1),
 * or delimited by the close for an HTTP/1.0 client (§6.3), so a body that fails mid-way ends
 * the connection without its last chunk and is never taken for a whole one.
 */
export async function sendRaw(socket: Duplex, res: Response, o: { head: boolean; http10: boolean }): Promise<void> {
  if (isUnanswered(res)) return resetSocket(socket);
  const status = res.status;
  // RFC 9110 §6.4.1: no content in answers to HEAD, in 1xx, 204 and 304.
  const bodiless = o.head || status < 200 || status === 204 || status === 304;
  const cl = res.headers.get("content-length");
  const declared = cl !== null && /^[0-9]{1,16}$/.test(cl) ? cl : null;
  const chunked = !bodiless && declared === null && !o.http10;
  const lines = [`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? "Unknown"}`];
  res.headers.forEach((v, k) => {
    if (!RAW_FRAMING.has(k) && k !== "set-cookie") lines.push(`${k}: ${v}`);
  });
  for (const c of res.headers.getSetCookie()) lines.push(`set-cookie: ${c}`);
  lines.push("connection: close");
  if (declared !== null && (o.head || !bodiless)) lines.push(`content-length: ${declared}`);
  if (chunked) lines.push("transfer-encoding: chunked");
  const head = Buffer.from(`${lines.join("\r\n")}\r\n\r\n`, "latin1");
  const body = bodiless ? null : res.body;
  if (bodiless) void res.body?.cancel().catch(() => {});
  if (socket.destroyed) {
    void body?.cancel().catch(() => {});
    return;
  }
  if (body === null) {
    socket.end(head);
    return;
  }
  if (!socket.write(head)) await drained(socket);
  const ok = await pump(body, socket, chunked);
  if (!ok || socket.destroyed) {
    socket.destroy();
    return;
  }
  socket.end(chunked ? "0\r\n\r\n" : undefined);
}
