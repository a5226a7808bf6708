// Whether an answer was paced, measured as the client sees it, for the limit-rate tests.

export interface PacedRead {
  readonly status: number;
  /** The whole body. */
  readonly body: Buffer;
  /** Whether the bytes held at every arrival stayed within `rate` × (t + `slackS`). */
  readonly within: boolean;
}

/**
 * GET `url` with Host `host` on a new connection, reading the body as it arrives; t is in
 * seconds from just before the request. nginx's write filter lets a paced answer send a
 * second's worth of bytes per started second (ngx_http_write_filter_module.c), so `slackS`
 * seconds' worth is the allowance; load only delays arrivals, so it can only keep a paced
 * answer within the bound.
 */
export async function readPaced(url: string, host: string, rate: number, slackS: number): Promise<PacedRead> {
  const t0 = performance.now();
  const res = await fetch(url, { headers: { host, connection: "close" } });
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const parts: Uint8Array[] = [];
  let bytes = 0;
  let within = true;
  for (;;) {
    const r = await reader.read();
    if (r.done) break;
    bytes += r.value.byteLength;
    parts.push(r.value);
    if (bytes > rate * ((performance.now() - t0) / 1000 + slackS)) within = false;
  }
  return { status: res.status, body: Buffer.concat(parts), within };
}
