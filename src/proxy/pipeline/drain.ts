// Graceful shutdown: report draining at once (readiness 503), keep serving for
// --shutdown-delay so load balancers notice, stop accepting, let in-flight requests finish for
// up to --shutdown-grace-period, then close whatever is left.
import type { Server } from "bun";
import type { Config } from "../../config/types.ts";
import type { ProxyHandler } from "./handler.ts";
import type { Logger } from "../../log/logger.ts";

const POLL_MS = 25;

export interface Drain {
  /** True from the moment begin() is called; /readyz reads it. */
  readonly draining: boolean;
  /**
   * Idempotent; resolves when every listener is closed. `delay: false` skips --shutdown-delay:
   * the process never reported ready, so no load balancer or Service endpoint sends to it and
   * there is nothing to wait out.
   */
  begin(o?: { readonly delay?: boolean }): Promise<void>;
}

export interface DrainOptions {
  readonly config: Pick<Config, "shutdownDelayMs" | "shutdownGracePeriodMs">;
  /** The listeners to stop, read when stopping (TLS listeners may have been rotated). */
  readonly servers: () => ReadonlyArray<Pick<Server<unknown>, "stop" | "pendingRequests"> & { closeIdleConnections?(): number }>;
  readonly handlers: readonly ProxyHandler[];
  readonly log: Logger;
}

export function createDrain(o: DrainOptions): Drain {
  let draining = false;
  let running: Promise<void> | null = null;

  async function run(delay: boolean): Promise<void> {
    draining = true;
    // Responses now carry Connection: close, so keep-alive clients move elsewhere.
    for (const h of o.handlers) h.inflight.draining = true;
    if (delay) {
      o.log.info("drain: not ready, still serving", { delayMs: o.config.shutdownDelayMs });
      await Bun.sleep(o.config.shutdownDelayMs);
    } else {
      o.log.info("drain: never reported ready, so no shutdown delay", { delayMs: 0 });
    }
    // stop(false) closes the listening socket at once but its promise waits for every open
    // request; not awaited, since the grace period below is what bounds that wait.
    for (const s of o.servers()) void s.stop(false);
    // RFC 6455 §7.4.1 1001: the endpoint is going away; clients reconnect to another replica.
    for (const h of o.handlers) h.closeWebSockets(1001, "shutting down");
    // A request is in flight while the handler works on it (handler count) and until Bun has
    // written its whole response (pendingRequests: covers bodies piped natively, see handler.ts).
    const inflight = () =>
      o.handlers.reduce((n, h) => n + h.inflight.count, 0) + o.servers().reduce((n, s) => n + s.pendingRequests, 0);
    o.log.info("drain: stopped accepting", { inflight: inflight() });
    const deadline = performance.now() + o.config.shutdownGracePeriodMs;
    while (inflight() > 0 && performance.now() < deadline) {
      await Bun.sleep(Math.min(POLL_MS, Math.max(1, deadline - performance.now())));
      // Bun 1.4.5 (http2: true): a connection accepted just before stop(false), not yet handed
      // to the HTTP/2 side, got no GOAWAY and is still served; closing idle connections again
      // sends it one (tls/listener.ts, stopGracefully).
      for (const s of o.servers()) s.closeIdleConnections?.();
    }
    const left = inflight();
    if (left > 0) o.log.warn("drain: grace period over, closing in-flight requests", { inflight: left });
    // Abort the upstream side first: Bun's stop(true) resolves only once every handler has
    // returned, and a handler waiting on a slow upstream would otherwise hold it.
    for (const h of o.handlers) h.abortInflight();
    for (const s of o.servers()) await s.stop(true);
    o.log.info("drain: done", {});
  }

  return {
    get draining() {
      return draining;
    },
    begin(b) {
      running ??= run(b?.delay !== false);
      return running;
    },
  };
}
