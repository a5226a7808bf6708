// Every upstream attempt of one request, for --access-log-template's $upstream_* variables
// (docs/design.md "The access log"). nginx keeps one ngx_http_upstream_state_t per peer tried
// (ngx_http_upstream_connect pushes it onto r->upstream_states) and writes the variables as one
// value per state joined by ", "; an internal redirect to another upstream (error_page to a named
// location) pushes a state without a peer, written as " : " between the groups
// (ngx_http_upstream_addr_variable, ngx_http_upstream_status_variable,
// ngx_http_upstream_response_time_variable in ngx_http_upstream.c). Kept only while a template
// is set: the record's `tries` is null otherwise, and each call below is then one comparison.

/** One attempt: nginx's ngx_http_upstream_state_t as far as Portico knows it. */
export interface UpstreamTry {
  /** `ip:port` tried; "" for the separator between two upstream groups. */
  readonly addr: string;
  /** performance.now() when the attempt started (the peer was picked). */
  readonly start: number;
  /** The upstream's status, or the one nginx records for a failed attempt (502, 504); 0: none (`-`). */
  status: number;
  /** ms to the connection: only known when Portico probed the endpoint first (upstream/probe.ts); -1: `-`. */
  connectMs: number;
  /** ms to the response headers; -1: none came (`-`). */
  headerMs: number;
  /** ms to the attempt's end: its failure, or the upstream body's end; -1: not ended yet. */
  endMs: number;
  /** Bytes of the upstream's response body read (0 for a failed or dropped attempt). */
  length: number;
}

/** A new attempt on `tries` (null: no template, nothing kept), started at `start` (performance.now()). */
export function beginTry(tries: UpstreamTry[] | null | undefined, addr: string, start = performance.now()): UpstreamTry | null {
  if (tries == null) return null;
  const t: UpstreamTry = { addr, start, status: 0, connectMs: -1, headerMs: -1, endMs: -1, length: 0 };
  tries.push(t);
  return t;
}

/**
 * The attempt's response headers came with `status`: its header time ($upstream_header_time)
 * is now, from the attempt's start.
 */
export function answerTry(t: UpstreamTry | null, status: number): void {
  if (t === null) return;
  t.status = status;
  t.headerMs = performance.now() - t.start;
}

/** The attempt failed (or its answer was dropped for the next one) with the status nginx records. */
export function endTry(t: UpstreamTry | null, status: number): void {
  if (t === null) return;
  if (t.status === 0) t.status = status;
  if (t.endMs < 0) t.endMs = performance.now() - t.start;
}

/** The last attempt of the request, if one is kept. */
export function lastTry(tries: UpstreamTry[] | null | undefined): UpstreamTry | null {
  if (tries == null || tries.length === 0) return null;
  const t = tries[tries.length - 1] as UpstreamTry;
  return t.addr === "" ? null : t;
}

/** The last attempt ends at `now` unless it has ended already. */
export function endLast(tries: UpstreamTry[] | null | undefined, now: number): void {
  const last = lastTry(tries);
  if (last !== null && last.endMs < 0) last.endMs = now - last.start;
}

/** Before an error page's request to another upstream: nginx's state without a peer (" : "). */
export function newGroup(tries: UpstreamTry[] | null | undefined): void {
  if (tries == null || tries.length === 0) return;
  // The group's last attempt ends here, as ngx_http_upstream_finalize_request ends it before
  // the redirect.
  endLast(tries, performance.now());
  tries.push({ addr: "", start: 0, status: 0, connectMs: -1, headerMs: -1, endMs: -1, length: 0 });
}

/**
 * One variable over every attempt, as nginx joins it: ", " between attempts, " : " where a
 * group ends (the separator state itself writes no value).
 */
export function joinTries(tries: readonly UpstreamTry[], value: (t: UpstreamTry) => string): string {
  let out = "";
  for (let i = 0; i < tries.length; i++) {
    const t = tries[i] as UpstreamTry;
    if (t.addr === "") {
      if (i > 0) out += " : ";
      continue;
    }
    if (i > 0 && (tries[i - 1] as UpstreamTry).addr !== "") out += ", ";
    out += value(t);
  }
  return out;
}
