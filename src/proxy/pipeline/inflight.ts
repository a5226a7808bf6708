// In-flight request accounting for graceful shutdown. A request counts from
// the moment the handler sees it until its response body has finished (or failed).

export interface Inflight {
  readonly count: number;
  /** True once draining began: responses then carry `Connection: close`. */
  draining: boolean;
  enter(): void;
  leave(): void;
  /** Resolves when count reaches 0 or after `ms`; true when idle. */
  idle(ms: number): Promise<boolean>;
}

export function createInflight(): Inflight {
  let count = 0;
  let waiters: Array<() => void> = [];
  return {
    get count() {
      return count;
    },
    draining: false,
    enter() {
      count++;
    },
    leave() {
      count--;
      if (count <= 0 && waiters.length > 0) {
        const w = waiters;
        waiters = [];
        for (const f of w) f();
      }
    },
    idle(ms) {
      if (count <= 0) return Promise.resolve(true);
      return new Promise<boolean>((resolve) => {
        const t = setTimeout(() => resolve(count <= 0), ms);
        waiters.push(() => {
          clearTimeout(t);
          resolve(true);
        });
      });
    },
  };
}
