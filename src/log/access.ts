// Access log (README.md, "Access log"): one line per request, JSON or logfmt-style text, written off
// the request path. record() only appends to a bounded queue; a setImmediate pump formats
// and writes batches. A slow sink (write returns false or a pending promise) pauses the pump
// until it drains; meanwhile the queue fills and further lines are dropped and counted.
// A closed or throwing sink loses lines, never throws into record().

/**
 * One line of the access log, filled by the proxy once per request and handed over when its
 * response is finished (the fields in README.md, "Access log"; metrics read the same record).
 * Mutable while the proxy fills it; the log formats it later, so nobody writes it after.
 */
export interface AccessRecord {
  /** Request start, ms since epoch. */
  time: number;
  requestId: string;
  client: string;
  method: string;
  host: string;
  path: string;
  status: number;
  bytesIn: number;
  bytesOut: number;
  durationMs: number;
  /** `ip:port` of the last endpoint tried (it answered, or its connection failed), or null when none was. */
  upstream: string | null;
  upstreamStatus: number | null;
  /** Time from the first upstream attempt to response headers. */
  upstreamMs: number | null;
  /** `namespace/name` of the Ingress that routed the request. */
  ingress: string | null;
  /** Backend id `namespace/service:port`. */
  service: string | null;
  websocket: boolean;
  /** ProxyErrorCode, "ClientClosed", "UpstreamAborted", "StreamIdle" or null. */
  error: string | null;
  scheme: "http" | "https";
  /** Client protocol: HTTP/1.x or HTTP/2 (the HTTPS listener offers both: docs/design.md). */
  protocol: "h1" | "h2";
  /** grpc-status of a gRPC call (relayed, or Portico's own failure), else null. */
  grpcStatus: number | null;
  /**
   * false: the route asked for no access-log line (ingress-nginx's enable-access-log, nginx's
   * `access_log off` in the location); the metrics still read the record. Not a field of the line.
   */
  logged: boolean;
  /**
   * The request, kept for --access-log-template's variables (log/template.ts) when a template
   * is set; null otherwise. Read by the pump, after the response.
   */
  view: RequestView | null;
  /**
   * Every upstream attempt (log/upstream-tries.ts), for the template's $upstream_* variables:
   * an array only while a template is set; null or absent otherwise.
   */
  tries?: UpstreamTry[] | null;
}

/** What a template reads of the request beyond the record (the proxy's Exchange is one; log/template.ts). */
export interface RequestView {
  readonly req: Request;
  /** The client address after the trusted-proxy rules (nginx's $remote_addr after realip). */
  readonly clientIp: string;
  /** The query, "" or "?…" (the host and the normalised path are the record's). */
  readonly query: string;
  /** The client's scheme ($scheme). */
  readonly scheme: "http" | "https";
  /** The port the request came to ($server_port). */
  readonly localPort: number;
  /** The connection's scheme, the listener's ($https). */
  readonly connectionScheme: "http" | "https";
  /** The client's port ($remote_port), or null when the listener does not tell it. */
  readonly remotePort: number | null;
  /** A PROXY protocol header's source ($proxy_protocol_addr, $proxy_protocol_port), or null. */
  readonly proxySource: { readonly address: string; readonly port: number } | null;
  /** The matched route's path as the Ingress wrote it (ingress-nginx's $location_path), or null: no route. */
  readonly locationPath: string | null;
  /** The address the request came to ($server_addr) when Portico knows it (a --bind address), else null. */
  readonly serverAddr: string | null;
  /** The request's field lines in bytes, `name: value` CRLF each and the blank line (validate.ts readFields). */
  readonly headBytes: number;
  /** The bytes of the answer's head as Bun writes it (log/template.ts answerHeadBytes), or -1: not known. */
  readonly sentHeadBytes: number;
  /** The request's TLS connection when the listener shows it (SNI: $ssl_server_name), else null. */
  tls(): { readonly servername: string | null } | null;
}

import type { UpstreamTry } from "./upstream-tries.ts";

/** A Node-style writable (process.stdout): write() returning false means wait for 'drain'. */
export interface WritableLike {
  write(chunk: string): boolean;
  once(event: "drain", cb: () => void): unknown;
  on?(event: "error" | "close", cb: (...args: unknown[]) => void): unknown;
}

export interface AccessLogOptions {
  readonly format: "json" | "text";
  readonly enabled: boolean;
  /** Formats each line instead of `format` (--access-log-template: log/template.ts compileLogTemplate). */
  readonly line?: ((r: AccessRecord) => string) | null;
  /** Lines waiting to be written before new ones are dropped. Default 10,000. */
  readonly maxQueue?: number;
  /** A plain sink: false = backpressure (retried after a pause), a promise = wait for it. */
  readonly write?: (chunk: string) => void | boolean | PromiseLike<unknown>;
  /** A stream sink (default: process.stdout); wins over `write` when both are given. */
  readonly stream?: WritableLike;
}

export interface AccessLog {
  /** Never blocks, never throws. The caller must not mutate `r` afterwards (formatted later). */
  record(r: AccessRecord): void;
  /** Resolves when the queue is written, or after `timeoutMs` (default 2 s) if the sink is stuck. */
  flush(timeoutMs?: number): Promise<void>;
  readonly dropped: number;
}

const BATCH_LINES = 256;
const BATCHES_PER_TURN = 8;
/** How long a plain `write` returning false pauses the pump (it has no 'drain' event). */
const PLAIN_BACKOFF_MS = 20;

// Besides the C0 controls JSON.stringify escapes, escape DEL, C1 controls, line/paragraph
// separators and bidi overrides so a logged path cannot rewrite a terminal or a viewer's line.
/** Those characters as a regex character class's source: the JSON line's and the template's (template.ts). */
export const UNSAFE_CHARS = "[\\u007f-\\u009f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]";
const UNSAFE = new RegExp(UNSAFE_CHARS, "g");
const escapeUnsafe = (s: string) => s.replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);

function isoTime(ms: number): string {
  const d = new Date(ms);
  return Number.isNaN(d.getTime()) ? "" : d.toISOString();
}

const ms = (n: number | null | undefined) => (n == null || !Number.isFinite(n) ? null : Math.round(n * 1000) / 1000);

/** The fields of one line, in their fixed order (documented in README.md, "Access log"). */
export function accessFields(r: AccessRecord): Record<string, string | number | boolean | null> {
  return {
    time: isoTime(r.time),
    request_id: r.requestId,
    client: r.client,
    method: r.method,
    scheme: r.scheme,
    protocol: r.protocol,
    host: r.host,
    path: r.path,
    status: r.status,
    bytes_in: r.bytesIn,
    bytes_out: r.bytesOut,
    duration_ms: ms(r.durationMs),
    upstream: r.upstream,
    upstream_status: r.upstreamStatus,
    upstream_ms: ms(r.upstreamMs),
    ingress: r.ingress,
    service: r.service,
    websocket: r.websocket,
    grpc_status: r.grpcStatus,
    error: r.error,
  };
}

export function formatJson(r: AccessRecord): string {
  return escapeUnsafe(JSON.stringify(accessFields(r)));
}

// logfmt-style: key=value, values quoted (JSON string rules) when empty, "-", or holding
// anything beyond printable ASCII without spaces, quotes or backslash (a logfmt key ends at its first =, so = may stay bare). null prints as -.
const BARE = /^[\x21\x23-\x5b\x5d-\x7e]+$/;
function textValue(v: string | number | boolean | null): string {
  if (v === null) return "-";
  if (typeof v !== "string") return String(v);
  return BARE.test(v) && v !== "-" ? v : escapeUnsafe(JSON.stringify(v));
}

export function formatText(r: AccessRecord): string {
  return Object.entries(accessFields(r))
    .map(([k, v]) => `${k}=${textValue(v)}`)
    .join(" ");
}

function defaultStream(): WritableLike {
  return process.stdout as unknown as WritableLike;
}

export function createAccessLog(opts: AccessLogOptions): AccessLog {
  const maxQueue = Math.max(1, opts.maxQueue ?? 10_000);
  const format = opts.line ?? (opts.format === "text" ? formatText : formatJson);
  const stream = opts.stream ?? (opts.write ? undefined : defaultStream());
  const write = stream ? (c: string) => stream.write(c) : (opts.write as NonNullable<AccessLogOptions["write"]>);

  let queue: AccessRecord[] = [];
  let head = 0;
  let dropped = 0;
  let scheduled = false;
  let waiting = false;
  let closed = false;
  const idle: Array<() => void> = [];

  const size = () => queue.length - head;
  const settle = () => {
    if ((size() === 0 && !waiting) || closed) for (const fn of idle.splice(0)) fn();
  };
  const schedule = () => {
    if (scheduled || waiting || closed) return;
    scheduled = true;
    setImmediate(pump);
  };
  const resume = () => {
    waiting = false;
    if (size() > 0) schedule();
    settle();
  };
  const close = () => {
    closed = true;
    dropped += size();
    queue = [];
    head = 0;
    settle();
  };
  // A stream that errors or closes (EPIPE on stdout) takes no more lines.
  stream?.on?.("error", close);
  stream?.on?.("close", close);

  function take(): AccessRecord[] {
    const batch = queue.slice(head, head + BATCH_LINES);
    head += batch.length;
    if (head === queue.length) {
      queue = [];
      head = 0;
    }
    return batch;
  }

  function pump(): void {
    scheduled = false;
    for (let turn = 0; turn < BATCHES_PER_TURN && size() > 0 && !waiting && !closed; turn++) {
      const batch = take();
      let chunk = "";
      for (const r of batch) {
        try {
          chunk += `${format(r)}\n`;
        } catch {
          dropped++; // e.g. a field that JSON cannot encode: lose the line, not the batch
        }
      }
      try {
        const res = write(chunk);
        if (res === false) {
          waiting = true;
          if (stream) stream.once("drain", resume);
          else setTimeout(resume, PLAIN_BACKOFF_MS);
        } else if (res && typeof (res as PromiseLike<unknown>).then === "function") {
          waiting = true;
          (res as PromiseLike<unknown>).then(resume, () => {
            dropped += batch.length;
            resume();
          });
        }
      } catch {
        dropped += batch.length;
      }
    }
    if (size() > 0) schedule();
    settle();
  }

  return {
    record(r) {
      if (!opts.enabled || !r.logged) return;
      if (closed || size() >= maxQueue) {
        dropped++;
        return;
      }
      queue.push(r);
      schedule();
    },
    flush(timeoutMs = 2000) {
      if ((size() === 0 && !waiting) || closed || !opts.enabled) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          const i = idle.indexOf(done);
          if (i >= 0) idle.splice(i, 1);
          resolve();
        };
        const timer = setTimeout(done, timeoutMs);
        idle.push(done);
        schedule();
      });
    },
    get dropped() {
      return dropped;
    },
  };
}
