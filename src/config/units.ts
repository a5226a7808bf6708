// Durations and sizes as people write them in flags and annotations. Pure (no clock, no I/O),
// so compile/ may import it for annotation values too.

const DURATION_UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const DURATION_PART = /(\d+(?:\.\d+)?)(ms|s|m|h)/y;
/** Timers overflow past 2^31-1 ms (about 24.8 days); nothing we time should come near it. */
export const MAX_DURATION_MS = 2_147_483_647;

/**
 * Parse `500ms`, `5s`, `2m`, `1h`, compounds like `1m30s`, or a plain number of seconds
 * (`30`, `1.5`). Returns whole milliseconds, or null when the text is not a duration or is
 * out of range (negative values are not durations).
 */
export function parseDuration(text: string): number | null {
  const s = text.trim();
  if (s === "") return null;
  if (/^\d+(?:\.\d+)?$/.test(s)) return clampMs(Number(s) * 1000);
  let total = 0;
  let pos = 0;
  DURATION_PART.lastIndex = 0;
  while (pos < s.length) {
    DURATION_PART.lastIndex = pos;
    const m = DURATION_PART.exec(s);
    if (!m) return null;
    total += Number(m[1]) * (DURATION_UNITS[m[2]!] ?? Number.NaN);
    pos = DURATION_PART.lastIndex;
  }
  return clampMs(total);
}

function clampMs(ms: number): number | null {
  if (!Number.isFinite(ms) || ms < 0 || ms > MAX_DURATION_MS) return null;
  return Math.round(ms);
}

// Binary multiples, as nginx reads `client_max_body_size 10m` (ingress-nginx's proxy-body-size).
const SIZE_UNITS: Readonly<Record<string, number>> = { "": 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 };

/**
 * Parse a byte size: `1048576`, `512k`, `10m`, `1g` (also `10M`, `10mb`, `10MiB`).
 * Returns bytes, or null when the text is not a size.
 */
export function parseSize(text: string): number | null {
  const m = /^(\d+(?:\.\d+)?)\s*([kmg]?)(?:i?b)?$/i.exec(text.trim());
  if (!m) return null;
  const unit = SIZE_UNITS[m[2]!.toLowerCase()];
  if (unit === undefined) return null;
  const bytes = Math.floor(Number(m[1]) * unit);
  return Number.isSafeInteger(bytes) ? bytes : null;
}
