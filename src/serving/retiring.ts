// Listeners replaced on the HTTPS port and still draining: the previous listener after a
// hand-over (https.ts), the previous Bun.serve side after the SNI split renewed it
// (tls-split.ts). A hand-over is a rotation (docs/design.md, "HTTP/2 and gRPC"): the next
// listener already listens, the previous one stops accepting, finishes what it has, and
// counts in `servers` and `alive` until it has stopped.
import type { DrainableServer, HttpsListener } from "../http2/listener.ts";
import type { Logger } from "../log/logger.ts";

export interface Retiring {
  /**
   * Freeze `old` (no rotation starts a server in it) and stop it: at once with `closeNow`,
   * draining its connections otherwise. The caller reads whatever decides `closeNow` first.
   */
  retire(old: HttpsListener, closeNow: boolean): void;
  /** Resolves once every listener retired so far (and any retired meanwhile) has stopped. */
  empty(): Promise<void>;
  /** Close every listener still stopping at once (shutdown); resolves when they have stopped. */
  stopAll(): Promise<void>;
  /** The servers of the listeners still stopping (the shutdown drain stops them with the rest). */
  readonly servers: readonly DrainableServer[];
  /** Connections the listeners still stopping hold. */
  readonly alive: number;
}

/** `what` names the listeners in the warning logged when one fails to stop. */
export function createRetiring(log: Logger, what: string): Retiring {
  const listeners = new Set<HttpsListener>();
  const waiting: (() => void)[] = [];
  return {
    async stopAll() {
      await Promise.all([...listeners].map((l) => l.stop(true)));
    },
    get servers() {
      return [...listeners].flatMap((l) => l.servers);
    },
    get alive() {
      let n = 0;
      for (const l of listeners) n += l.alive;
      return n;
    },
    retire(old, closeNow) {
      listeners.add(old);
      old.freeze();
      void old
        .stop(closeNow)
        .catch((err: unknown) => log.warn(`stopping ${what} failed`, { err: String(err) }))
        .finally(() => {
          listeners.delete(old);
          if (listeners.size === 0) for (const resolve of waiting.splice(0)) resolve();
        });
    },
    empty() {
      return listeners.size === 0 ? Promise.resolve() : new Promise<void>((resolve) => waiting.push(resolve));
    },
  };
}
