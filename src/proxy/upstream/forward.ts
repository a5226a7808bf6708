// Forwarding one request upstream with fetch: endpoint choice, retries on other endpoints as
// ingress-nginx's proxy-next-upstream decides them (docs/design.md, "Retries"), a
// response-header deadline, a bound on the response header block, and errors classified once
// into ProxyError codes.
import { DEFAULT_RETRY } from "../../table/routes.ts";
import type { Backend, RetryPolicy, Upstream } from "../../table/types.ts";
import type { Balancer, EndpointChoice } from "../../kinds/types.ts";
import { ProxyError } from "../../http/errors.ts";
import { externalTarget, sharedExternalResolver, type ExternalResolver } from "./external.ts";
import { forwardGrpc, isGrpcBackend, isH2cBackend } from "./grpc.ts";
import type { ProxyHooks } from "../types.ts";
import { scanResponseHeaders, type ResponseHeaderScan } from "../../http/headers.ts";
import { upstreamGate } from "./pool-gate.ts";
import { probeConnect } from "./probe.ts";
import { createWatchdog, type Watchdog } from "./watchdog.ts";
import type { AttemptControl, ForwardInput, ForwardResult, RequestControl } from "./forward-types.ts";
import { upstreamTlsOptions } from "./upstream-tls.ts";
import { beginTry, endTry } from "../../log/upstream-tries.ts";

// Errors Bun's fetch reports when no connection could be made: the endpoint is marked for
// back-off and another one may be tried.
const CONNECT_CODES = new Set([
  "ECONNREFUSED", "ConnectionRefused", "EHOSTUNREACH", "ENETUNREACH", "EHOSTDOWN", "ETIMEDOUT",
  "FailedToOpenSocket", "EADDRNOTAVAIL", "ENOTFOUND", "EAI_AGAIN", "ConnectionTimeout",
]);
// The connection broke before response headers: the request may or may not have been seen.
const RESET_CODES = new Set(["ECONNRESET", "ConnectionClosed", "EPIPE", "UNEXPECTED_EOF"]);
// The upstream answered something that is not an HTTP response (measured codes, Bun 1.4.5):
// a bad status line or field line, too many fields, a bad or repeated Content-Length.
const INVALID_CODES = new Set(["Malformed_HTTP_Response", "InvalidHTTPResponse", "InvalidContentLength"]);

function codeOf(e: unknown): string {
  const c = (e as { code?: unknown } | null)?.code;
  return typeof c === "string" ? c : "";
}

function urlOf(b: Backend, u: Upstream, pathAndQuery: string): string {
  return `${b.scheme}://${u.authority}${pathAndQuery}`;
}

// The hooks are called through these rather than through arrows handed to a try wrapper: an
// arrow in forward()'s loop that reads a variable of the loop body (the response) made JSC
// build a scope object for every attempt, the plain request's too (bench/allocations.ts).
function retried(input: ForwardInput, reason: string): void {
  try {
    input.hooks?.onUpstreamRetry?.(input.backend.id, reason);
  } catch {}
}
function gaveUp(input: ForwardInput, reason: string): void {
  try {
    input.hooks?.onUpstreamError?.(input.backend.id, reason);
  } catch {}
}

// A class rather than an object of closures: one small allocation per request.
class Control implements AttemptControl {
  private dog: Watchdog | null = null;
  constructor(private ac: AbortController) {}
  bind(d: Watchdog): void {
    this.dog = d;
  }
  touch(): void {
    this.dog?.touch();
  }
  /** Aborts the current attempt (the request guard, the body meter and the deadline call it). */
  abort(err: unknown): void {
    this.ac.abort(err);
  }
  /** The response-header deadline fired (the watchdog calls this: no closure per attempt). */
  fire(): void {
    this.abort(new ProxyError("UpstreamTimeout", "no response headers"));
  }
  /**
   * A fresh switch for the next attempt after a deadline aborted this one. Everything that
   * aborts the request goes through abort() above, so it reaches the new switch; no
   * controller is made for a request that is never retried after a timeout.
   */
  renew(): AbortSignal {
    this.ac = new AbortController();
    return this.ac.signal;
  }
}

export function createAttemptControl(ac: AbortController): RequestControl {
  return new Control(ac);
}

/**
 * The status nginx records for an attempt that failed so (ngx_http_upstream_next: 504 for a
 * timeout, 502 for any other failure), written in $upstream_status.
 */
function failedStatus(f: Failure): number {
  return f === "timeout" ? 504 : 502;
}

/** Which proxy-next-upstream condition a failure falls under, and its name for the metrics. */
type Failure = "error" | "timeout" | "invalid_header";

function allows(p: RetryPolicy, f: Failure): boolean {
  return f === "error" ? p.error : f === "timeout" ? p.timeout : p.invalidHeader;
}

/**
 * Whether another endpoint may be tried after attempt `attempt` failed with `f` (null: a
 * listed status, checked by the caller): the condition is listed, tries and
 * proxy-next-upstream-timeout (measured from the first attempt, as nginx's peer.start_time)
 * leave room, and the client is still there. A function, not a closure: no allocation per
 * request.
 */
function again(input: ForwardInput, p: RetryPolicy, maxAttempts: number, t0: number, attempt: number, f: Failure | null): boolean {
  return (
    attempt < maxAttempts &&
    (f === null || allows(p, f)) &&
    (p.timeoutMs === 0 || performance.now() - t0 < p.timeoutMs) &&
    !input.clientSignal.aborted &&
    !input.stopSignal.aborted
  );
}

export async function forward(input: ForwardInput, control: RequestControl): Promise<ForwardResult> {
  // gRPC and h2c backends are HTTP/2 upstreams, on pooled node:http2 sessions (grpc.ts).
  if (isGrpcBackend(input.backend) || isH2cBackend(input.backend)) return forwardGrpc(input, control);
  // Endpoints tried so far; the set exists only once a second pick needs it (most requests
  // make one attempt, and a Set per request showed in the profile).
  let first: string | null = null;
  let tried: Set<string> | null = null;
  const policy = input.retry ?? DEFAULT_RETRY;
  // Attempts in all: proxy-next-upstream-tries (0 = unlimited in nginx), and never the same
  // endpoint twice in one request, so at most one per endpoint.
  const endpoints = input.backend.endpoints.length;
  const maxAttempts = policy.tries === 0 ? endpoints : Math.min(policy.tries, endpoints);
  // Sent again after it reached a pod: only without a body or with a buffered one (a streamed
  // body is not kept: nginx too refuses once a request was sent unbuffered,
  // ngx_http_upstream_next's request_body_no_buffering check), and for POST/LOCK/PATCH only
  // with `non_idempotent`.
  const replayable = input.body === null || input.body instanceof Uint8Array;
  const resend = replayable && (input.idempotent || policy.nonIdempotent);
  const t0 = performance.now();
  let signal = input.signal;
  for (let attempt = 1; ; attempt++) {
    const exclude: ReadonlySet<string> | undefined = first === null ? undefined : (tried ??= new Set([first]));
    const choice = input.choice ?? null;
    const u: Upstream | null = choice === null ? input.balancer.pick(input.backend, exclude) : choice.pick(input.backend, input.balancer, exclude);
    const picked = choice === null ? 0 : performance.now();
    if (u === null) throw new ProxyError(first === null ? "NoEndpoints" : "UpstreamConnect", "no endpoint left");
    if (first === null) first = u.authority;
    else tried?.add(u.authority);
    // An ExternalName is never handed to the probe or fetch as a name: they would resolve it
    // again, possibly to an address never checked (external.ts).
    const ext = input.backend.externalName ? (input.external ?? sharedExternalResolver()) : null;
    const to = ext === null ? u : await externalTarget(input, ext, u);
    // The address connected to (an ExternalName's checked one); one refused before any
    // connection (external.ts) was not tried and leaves the record as it was.
    if (input.record) input.record.upstream = to.authority;
    // This attempt for --access-log-template's $upstream_* (null without one: log/upstream-tries.ts).
    const at = beginTry(input.record?.tries, to.authority);
    if (!input.balancer.isWarm(u)) {
      try {
        await probeConnect(to, input.connectTimeoutMs);
        if (at !== null) at.connectMs = performance.now() - at.start;
      } catch (e) {
        input.balancer.failed(u);
        ext?.forget(u.address);
        if (input.clientSignal.aborted || input.stopSignal.aborted) throw e;
        // Nothing was sent: any method, with a body or not, may move on (nginx: a failed
        // connect is `error`, a connect deadline `timeout`).
        const f: Failure = e instanceof ProxyError && e.detail === "connect timeout" ? "timeout" : "error";
        endTry(at, failedStatus(f));
        if (again(input, policy, maxAttempts, t0, attempt, f)) {
          retried(input, "connect");
          continue;
        }
        gaveUp(input, "connect");
        throw e;
      }
    }
    // Past Bun's 64 pooled connections a request waits (a bounded time) for one to free
    // (pool-gate.ts); under that, the slot is taken synchronously and nothing is awaited.
    const slot = input.slot;
    if (slot !== undefined && slot.slot < 0 && input.backend.scheme === "http") {
      const wait = upstreamGate.acquire(slot);
      if (wait !== null) await wait;
    }
    // Response-header deadline (--response-timeout / annotation): measured from the last
    // activity, so a long upload keeps it alive while bytes move (body meter calls touch()).
    const dog = createWatchdog(input.responseTimeoutMs, control);
    control.bind(dog);
    const init: RequestInit & { decompress: boolean; tls?: unknown } = {
      method: input.method,
      headers: input.headers,
      body: input.body,
      // Without decompress:false Bun inflates the body but keeps Content-Encoding (measured);
      // redirects belong to the client; duplex "half" streams the request body.
      decompress: false,
      redirect: "manual",
      duplex: "half",
      // The client's signal must reach fetch, or a client that leaves early does not abort
      // the upstream; the caller wires req.signal into this one.
      signal,
    } as RequestInit & { decompress: boolean };
    // Pods rarely carry certificates that chain to anything we could verify for an IP, so
    // HTTPS upstreams (backend-protocol HTTPS) are encrypted but not authenticated, like
    // ingress-nginx's default (proxy_ssl_verify off). serverName is set explicitly: Bun sends
    // no SNI for an IP literal otherwise.
    // With proxy-ssl-* the Secret's certificate, CA and settings apply instead (upstream-tls.ts).
    if (input.backend.scheme === "https") init.tls = input.upstreamTls ? upstreamTlsOptions(input.upstreamTls) : { serverName: input.backend.serverName, rejectUnauthorized: false };
    let response: Response;
    try {
      response = await fetch(urlOf(input.backend, to, input.pathAndQuery), init);
    } catch (e) {
      dog.stop();
      if (input.clientSignal.aborted || input.stopSignal.aborted) throw e;
      if (e instanceof ProxyError) {
        if (e.code !== "UpstreamTimeout") throw e;
        endTry(at, 504);
        input.balancer.cooled(u);
        // A latency-aware choice learns from the wait too (ingress-nginx's EWMA counts it).
        choice?.answered(u, performance.now() - picked, input.balancer);
        // The deadline aborted this attempt's switch; the next one needs a fresh one.
        if (resend && again(input, policy, maxAttempts, t0, attempt, "timeout")) {
          signal = control.renew();
          retried(input, "timeout");
          continue;
        }
        gaveUp(input, "timeout");
        throw e;
      }
      const code = codeOf(e);
      const connect = CONNECT_CODES.has(code);
      if (connect) {
        input.balancer.failed(u);
        ext?.forget(u.address);
      }
      const invalid = INVALID_CODES.has(code);
      const reason = connect ? "connect" : RESET_CODES.has(code) ? "reset" : invalid ? "invalid" : "error";
      // A connect that timed out in the kernel is nginx's `timeout`; any other failure to
      // connect or to carry the request is `error`; a malformed answer `invalid_header`.
      const f: Failure = invalid ? "invalid_header" : code === "ETIMEDOUT" || code === "ConnectionTimeout" ? "timeout" : "error";
      endTry(at, failedStatus(f));
      // A refused connect sent nothing: nginx moves any method on then (ngx_http_upstream_next
      // checks request_sent before refusing POST, LOCK and PATCH), if the body can be sent again.
      if ((connect ? replayable : resend) && again(input, policy, maxAttempts, t0, attempt, f)) {
        retried(input, reason);
        continue;
      }
      gaveUp(input, reason);
      throw new ProxyError(connect ? "UpstreamConnect" : invalid ? "UpstreamInvalid" : "UpstreamReset", `${code} ${String((e as Error)?.message ?? e)}`);
    }
    dog.stop();
    if (at !== null) at.headerMs = performance.now() - at.start;
    input.balancer.succeeded(u);
    choice?.answered(u, performance.now() - picked, input.balancer);
    // nginx answers 502 to a header block larger than its buffer ("upstream sent too big
    // header", which its proxy_next_upstream counts as `invalid_header`); relaying it would
    // hand the client a response most clients refuse anyway.
    const scan = scanResponseHeaders(response.headers);
    const size = scan.bytes;
    // RFC 9110 §15: a status outside 100..599 is invalid, to be handled as a server error.
    // Bun's fetch hands over any three digits (000, 099, 600, 999 measured on 1.4.5), which no
    // web Response can carry: the relay then failed as Portico's own 500.
    const badStatus = response.status < 100 || response.status > 599;
    if (size > input.maxHeaderBytes || badStatus) {
      response.body?.cancel().catch(() => {});
      // nginx never parsed a status from such an answer: its state has the 502 of invalid_header.
      endTry(at, 502);
      if (resend && again(input, policy, maxAttempts, t0, attempt, "invalid_header")) {
        retried(input, "invalid");
        continue;
      }
      gaveUp(input, "invalid");
      throw new ProxyError("UpstreamInvalid", badStatus ? `response status ${response.status}` : `response header block of ${size} bytes`);
    }
    if (at !== null) at.status = response.status;
    // http_5xx and friends: the answer is dropped (its body cancelled, so its connection is
    // not left half-read) and another endpoint asked; the last answer goes to the client as
    // it is, as nginx does once tries run out.
    if (policy.statuses.length > 0 && resend && policy.statuses.includes(response.status) && again(input, policy, maxAttempts, t0, attempt, null)) {
      response.body?.cancel().catch(() => {});
      endTry(at, response.status);
      retried(input, `http_${response.status}`);
      continue;
    }
    return { response, upstream: to, upstreamMs: performance.now() - t0, scan };
  }
}
