// Connect timeout. Bun's fetch has no connect timeout of its own and gives no
// signal when its TCP connection is up, so a "cold" endpoint (no answer from it recently, so
// probably no pooled connection either) is first reached with a bare TCP connect bounded by
// --connect-timeout. An endpoint that is blackholed (SYN unanswered) then fails in that time
// and the request moves to another endpoint instead of waiting for the response deadline.
// Nothing has been sent yet, so this retry is safe for any method.
import type { Upstream } from "../../table/types.ts";
import { ProxyError } from "../../http/errors.ts";

export function probeConnect(u: Upstream, timeoutMs: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let settled = false;
    const settle = (err: ProxyError | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (err === null) resolve();
      else reject(err);
    };
    const timer = setTimeout(() => settle(new ProxyError("UpstreamConnect", "connect timeout")), timeoutMs);
    Bun.connect({
      hostname: u.address,
      port: u.port,
      socket: {
        open(s) {
          s.end();
          settle(null);
        },
        data() {},
        connectError(_s, e) {
          settle(new ProxyError("UpstreamConnect", `connect: ${(e as { code?: string }).code ?? e.message}`));
        },
        error() {},
      },
    }).catch((e: unknown) => settle(new ProxyError("UpstreamConnect", `connect: ${String(e)}`)));
  });
}
