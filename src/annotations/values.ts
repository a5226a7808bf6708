// Value schemas shared by the annotation families. Each turns a string into a number, a
// boolean or a member of a fixed list and is never spliced into any text. ingress-nginx's own
// rules (its annotations parser): booleans are Go's strconv.ParseBool, integers strconv.Atoi,
// an empty value is invalid rather than absent, and a value holding CR or LF is refused
// (parse.ts checks the last two for every annotation before any schema runs).
import * as v from "valibot";
import { MAX_DURATION_MS } from "../config/units.ts";

const TRUE = ["1", "t", "T", "TRUE", "true", "True"] as const;
const FALSE = ["0", "f", "F", "FALSE", "false", "False"] as const;
const TRUE_SET: ReadonlySet<string> = new Set(TRUE);
const FALSE_SET: ReadonlySet<string> = new Set(FALSE);

/** Go's strconv.ParseBool reads `s` as true (ingress-nginx's GetBoolAnnotation). */
export const isTrue = (s: string): boolean => TRUE_SET.has(s);
/** Go's strconv.ParseBool reads `s` as false. */
export const isFalse = (s: string): boolean => FALSE_SET.has(s);

/** Exactly the spellings Go's strconv.ParseBool accepts (no trimming, no other case mixes). */
export const Bool = v.pipe(
  v.string(),
  v.picklist([...TRUE, ...FALSE], "expected true or false"),
  v.transform((s) => TRUE_SET.has(s)),
);

const SIZE_UNITS: Readonly<Record<string, number>> = { "": 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 };

/**
 * `1048576`, `512k`, `10m`, `1g` (nginx's size syntax, binary multiples, any case); 0 means
 * unlimited and becomes Infinity (null already means "use the flag").
 */
export const Size = v.pipe(
  v.string(),
  v.trim(),
  v.regex(/^\d{1,15}[kmg]?$/i, "expected a byte size such as 1048576, 512k, 10m or 1g"),
  v.transform((s) => {
    const m = /^(\d+)([kmg]?)$/i.exec(s) as RegExpExecArray;
    const n = Number(m[1]) * (SIZE_UNITS[(m[2] ?? "").toLowerCase()] ?? 1);
    return n === 0 ? Number.POSITIVE_INFINITY : n;
  }),
  v.check((n) => n === Number.POSITIVE_INFINITY || Number.isSafeInteger(n), "size too large"),
);

const DURATION_UNITS: Readonly<Record<string, number>> = { "": 1000, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * `500ms`, `5s`, `2m`, `1h`; a plain number is seconds (ingress-nginx's proxy-*-timeout are
 * whole seconds). Greater than zero and at most 2^31-1 ms: Bun fires a longer setTimeout
 * after 1 ms (measured on 1.4.5), the bound the flags use too (config/units.ts).
 */
export const Duration = v.pipe(
  v.string(),
  v.trim(),
  v.regex(/^\d{1,9}(ms|s|m|h)?$/, "expected a duration such as 500ms, 5s, 2m or a number of seconds"),
  v.transform((s) => {
    const m = /^(\d+)(ms|s|m|h)?$/.exec(s) as RegExpExecArray;
    return Number(m[1]) * (DURATION_UNITS[m[2] ?? ""] ?? 1000);
  }),
  v.minValue(1, "a timeout must be greater than zero"),
  v.maxValue(MAX_DURATION_MS, `a timeout must be at most ${MAX_DURATION_MS} ms (about 24.8 days)`),
);

/**
 * Digits only, as ingress-nginx reads a proxy-*-timeout (strconv.Atoi, whole seconds), and a
 * Duration Portico accepts: the same number of seconds in both.
 */
export const isWholeSeconds = (s: string): boolean => /^\d+$/.test(s) && v.is(Duration, s);

/**
 * One of `options`, compared case-insensitively after trimming (ingress-nginx's
 * ValidateOptions with caseSensitive=false, trimSpace=true); gives the option as listed.
 */
export function oneOf<const T extends string>(options: readonly T[], message: string): v.GenericSchema<string, T> {
  const byLower = new Map(options.map((o) => [o.toLowerCase(), o] as const));
  return v.pipe(
    v.string(),
    v.trim(),
    v.check((s) => byLower.has(s.toLowerCase()), message),
    v.transform((s) => byLower.get(s.toLowerCase()) as T),
  );
}

/**
 * An integer as Go's strconv.Atoi reads it (optional sign, decimal digits, nothing else: no
 * spaces, no unit), within ±(2^31-1) so that products with a multiplier stay exact.
 */
export const Int = v.pipe(
  v.string(),
  v.regex(/^[+-]?\d{1,10}$/, "expected an integer"),
  v.transform(Number),
  v.check((n) => Math.abs(n) <= 2 ** 31 - 1, "integer out of range"),
);

/** Exactly one of `options`, as written (ingress-nginx's ValidateOptions with caseSensitive=true; spaces around are trimmed). */
export function exactlyOneOf<const T extends string>(options: readonly T[], message: string): v.GenericSchema<string, T> {
  const set: ReadonlySet<string> = new Set(options);
  return v.pipe(
    v.string(),
    v.trim(),
    v.check((s) => set.has(s), message),
    v.transform((s) => s as T),
  );
}

const INT64_MAX = 2n ** 63n - 1n;

/**
 * An integer as Go's strconv.Atoi reads it (ingress-nginx's integer annotations): an optional
 * sign and decimal digits, nothing else (no spaces, no `_`), within int64. Large values stay
 * large (a status code outside its range falls back to the default either way).
 */
export const GoInt = v.pipe(
  v.string(),
  v.regex(/^[+-]?[0-9]+$/, "expected an integer"),
  // valibot runs a pipe's checks after a failed one too: this one tests the syntax again.
  v.check((s) => {
    if (!/^[+-]?[0-9]+$/.test(s)) return true;
    const n = BigInt(s.replace(/^\+/, ""));
    return n <= INT64_MAX && n >= -INT64_MAX - 1n;
  }, "integer out of range"),
  v.transform((s) => Number(s)),
);

/**
 * A certificate verify depth (auth-tls-verify-depth, proxy-ssl-verify-depth) as
 * parser.GetIntAnnotation reads it: Go's strconv.Atoi, where 0 means the default (1). A negative
 * depth is not a depth (nginx would refuse its configuration); above 100 is OpenSSL's own default.
 */
export const VerifyDepth = v.pipe(
  v.string(),
  v.trim(),
  v.regex(/^[+]?[0-9]{1,9}$/, "expected a whole number"),
  v.transform(Number),
  v.maxValue(100, "at most 100"),
  v.transform((n) => (n === 0 ? 1 : n)),
);
