// HTTP/2's own hazards, bounded per connection (docs/design.md, "HTTP/2 and gRPC"). Most limits
// are SETTINGS that node:http2 (Bun's frame parser) enforces itself, measured on Bun 1.4.5:
// streams past SETTINGS_MAX_CONCURRENT_STREAMS get RST_STREAM REFUSED_STREAM, a header list
// past SETTINGS_MAX_HEADER_LIST_SIZE gets RST_STREAM ENHANCE_YOUR_CALM, a CONTINUATION flood
// ends the session with GOAWAY (as does a header list past the limit once it reaches 64 KiB:
// see MAX_HEADER_LIST_SIZE), and connection-specific fields in a request (RFC 9113 §8.2.2)
// get RST_STREAM PROTOCOL_ERROR. What it does not bound is what each stream costs US: Bun
// let 1,000 open-then-reset streams reach the handler before its own flood guard closed the
// session, and each would have started an upstream request. ResetBudget is that guard.

import { BUN_MAX_HEADER_SIZE } from "../config/header-buffers.ts";

/** RFC 9113 §7 error codes we send. */
export const H2_NO_ERROR = 0x0;
export const H2_PROTOCOL_ERROR = 0x1;
export const H2_INTERNAL_ERROR = 0x2;
export const H2_CANCEL = 0x8;
export const H2_ENHANCE_YOUR_CALM = 0xb;

/** ingress-nginx's http2-max-concurrent-streams default. */
export const MAX_CONCURRENT_STREAMS = 128;

/**
 * Decoded header list (RFC 9113 §6.5.2: names + values + 32 per field). Twice the head Bun.serve
 * accepts over HTTP/1.1 (BUN_MAX_HEADER_SIZE, 64 KiB: large-client-header-buffers up to `4 16k`),
 * since HPACK's accounting adds 32 bytes per field: any request the HTTP/1.1 listener would
 * take reaches the handler, whose own large-client-header-buffers check (proxy/pipeline/admit.ts)
 * then answers it as on HTTP/1.1.
 *
 * Past the limit, Bun 1.4.5's node:http2 answers RST_STREAM ENHANCE_YOUR_CALM only while the
 * list is under about 64 KiB; from there (and for any one field of 64 KiB or more, whatever the
 * limit) it ends the whole connection with GOAWAY COMPRESSION_ERROR (measured: at a 32 KiB
 * limit, 63 KiB of 1 KiB fields got RST_STREAM and 64 KiB GOAWAY; at 128 KiB, 100 KiB of 1 KiB
 * fields passed, one 64 KiB field got GOAWAY). With a limit over 64 KiB every list past it is
 * therefore a connection error, as nginx makes a header past large_client_header_buffers
 * (ngx_http_v2_state_field_len: NGX_HTTP_V2_ENHANCE_YOUR_CALM on the connection); the client
 * loses only its own connection.
 */
export const MAX_HEADER_LIST_SIZE = 2 * BUN_MAX_HEADER_SIZE;

/**
 * Stream receive window (SETTINGS_INITIAL_WINDOW_SIZE). 1 MiB lets an upload run at ~100 MB/s
 * on a 10 ms path without waiting on WINDOW_UPDATE; what 128 streams could buffer is bounded by
 * the session memory cap below. The connection window stays at the protocol's 65,535: on Bun
 * 1.4.5, raising it with session.setLocalWindowSize() stalls every upload past the stream
 * window (measured: a 3 MB POST never completes), so it is not called.
 */
export const STREAM_WINDOW = 1024 * 1024;

/** node:http2 maxSessionMemory, in MiB: a session past it refuses new streams (ENHANCE_YOUR_CALM). */
export const MAX_SESSION_MEMORY_MB = 32;

/**
 * Streams a client may cancel (RST_STREAM, or closing before our response ended) per second
 * before the connection is closed with GOAWAY ENHANCE_YOUR_CALM (CVE-2023-44487, "rapid
 * reset"). A browser leaving a page cancels at most its open streams (≤ 128) at once, so
 * twice that in one second is no browser.
 */
export const MAX_CLIENT_RESETS_PER_SECOND = 2 * MAX_CONCURRENT_STREAMS;

/** Counts client cancellations in one-second windows; `spend()` is true once the budget is gone. */
export class ResetBudget {
  private windowStart = 0;
  private count = 0;
  constructor(private readonly limit = MAX_CLIENT_RESETS_PER_SECOND) {}

  spend(now: number): boolean {
    if (now - this.windowStart >= 1000) {
      this.windowStart = now;
      this.count = 0;
    }
    return ++this.count > this.limit;
  }
}

/** The server options both node:http2 servers (TLS and h2c) start with: the limits above. */
export const SERVER_H2_OPTIONS = Object.freeze({
  settings: Object.freeze({
    maxConcurrentStreams: MAX_CONCURRENT_STREAMS,
    maxHeaderListSize: MAX_HEADER_LIST_SIZE,
    initialWindowSize: STREAM_WINDOW,
    enablePush: false,
    enableConnectProtocol: false,
  }),
  maxSessionMemory: MAX_SESSION_MEMORY_MB,
});
