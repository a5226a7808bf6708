// Reading h2load's summary (nghttp2's HTTP/2 load generator).
//
// "done" is not "answered with a status": with --warm-up-time, h2load counts a status only
// when its HEADERS arrive in the measured phase (Client::on_status_code returns early in the
// warm-up), but counts every stream that closes in the measured phase as done
// (Client::on_stream_close), succeeded when its status was 2xx/3xx whenever it came
// (nghttp2 src/h2load.cc). A stream in flight when the warm-up ends, whose response headers
// came before and whose end came after, is therefore done and succeeded with no status
// counted: `done - 2xx` over-counts non-2xx answers by those streams. It shows where a
// response's headers and its end are apart in time: 1 MiB bodies, and gRPC through a proxy
// that sends the trailers after the body (h2load's --log-file prints such a stream with
// status 0). Non-2xx answers are the 3xx, 4xx and 5xx h2load counted, no more.

export interface H2loadResult {
  readonly rps: number;
  readonly mbps: number;
  readonly done: number;
  readonly failed: number;
  readonly errored: number;
  readonly status2xx: number;
  /** 3xx + 4xx + 5xx answers in the measured phase. */
  readonly non2xx: number;
  /** Streams done in the measured phase whose status arrived during the warm-up (see above). */
  readonly statusInWarmUp: number;
}

/** "finished in 10.00s, 12345.67 req/s, 1.23MB/s" and the requests/status lines. */
export function parseH2load(out: string): H2loadResult {
  const fin = /finished in [\d.]+m?s, ([\d.]+) req\/s, ([\d.]+)([KMG]?)B\/s/.exec(out);
  const req = /requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored/.exec(out);
  const st = /status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx/.exec(out);
  if (!fin || !req || !st) throw new Error(`unreadable h2load output:\n${out}`);
  const unit = { "": 1 / 1e6, K: 1 / 1e3, M: 1, G: 1e3 }[fin[3] as "" | "K" | "M" | "G"];
  const [s2, s3, s4, s5] = [st[1], st[2], st[3], st[4]].map(Number) as [number, number, number, number];
  const done = Number(req[3]);
  return {
    rps: Number(fin[1]),
    mbps: Number(fin[2]) * unit,
    done,
    failed: Number(req[5]),
    errored: Number(req[6]),
    status2xx: s2,
    non2xx: s3 + s4 + s5,
    // Streams that failed (reset, connection lost) have no status either: only the succeeded
    // ones beyond the counted statuses are the warm-up's.
    statusInWarmUp: Math.max(0, Number(req[4]) - (s2 + s3)),
  };
}
