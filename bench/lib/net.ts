// Loopback helpers: free ports, readiness polling, one checked request.

/** A port the OS considers free right now on 127.0.0.1 (bind to 0, read, release). */
export function freePort(): number {
  const s = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = s.port;
  s.stop(true);
  return port;
}

export function freePorts(n: number): number[] {
  const out = new Set<number>();
  for (let i = 0; out.size < n && i < n * 20; i++) out.add(freePort());
  if (out.size < n) throw new Error("could not find free ports");
  return [...out];
}

/** Polls `url` until it answers `status` (default 200) or `timeoutMs` passes. */
export async function waitFor(
  url: string,
  opts: { timeoutMs: number; host?: string; status?: number; alive?: () => boolean },
): Promise<void> {
  const deadline = performance.now() + opts.timeoutMs;
  let last = "";
  while (performance.now() < deadline) {
    if (opts.alive && !opts.alive()) throw new Error(`process exited while waiting for ${url}`);
    try {
      const r = await fetch(url, {
        headers: opts.host ? { host: opts.host } : {},
        signal: AbortSignal.timeout(1000),
        tls: { rejectUnauthorized: false },
      });
      await r.arrayBuffer();
      if (r.status === (opts.status ?? 200)) return;
      last = `status ${r.status}`;
    } catch (e) {
      last = e instanceof Error ? e.message : String(e);
    }
    await Bun.sleep(50);
  }
  throw new Error(`timed out waiting for ${url} (${last})`);
}

/** One request; returns status and body length (used to check each system before loading it). */
export async function probe(url: string, host: string | null): Promise<{ status: number; bytes: number }> {
  const r = await fetch(url, {
    headers: host ? { host } : {},
    signal: AbortSignal.timeout(3000),
    tls: { rejectUnauthorized: false },
  });
  const b = await r.arrayBuffer();
  return { status: r.status, bytes: b.byteLength };
}
