// A cheap inactivity timer: touch() only stores a timestamp; one setTimeout re-arms itself for
// the remaining time, so a 100 MB stream does not create a timer per chunk.

export interface Watchdog {
  touch(): void;
  stop(): void;
}

export function createWatchdog(ms: number, onFire: () => void): Watchdog {
  let last = performance.now();
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | null = null;
  const check = () => {
    timer = null;
    if (stopped) return;
    const left = last + ms - performance.now();
    if (left <= 0) {
      stopped = true;
      onFire();
      return;
    }
    timer = setTimeout(check, left + 1);
  };
  if (ms > 0 && Number.isFinite(ms)) timer = setTimeout(check, ms);
  else stopped = true;
  return {
    touch() {
      last = performance.now();
    },
    stop() {
      stopped = true;
      if (timer !== null) clearTimeout(timer);
      timer = null;
    },
  };
}
