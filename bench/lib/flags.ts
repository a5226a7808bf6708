// Command-line numbers for the bench scripts: a bad value is an exit 2 naming the flag.

/** `v` as an integer in min..max, `def` when absent; anything else prints the bound and exits 2. */
export function intFlag(v: string | undefined, def: number, min: number, max: number, name: string): number {
  if (v === undefined) return def;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max) {
    console.error(`--${name} must be an integer in ${min}..${max}`);
    process.exit(2);
  }
  return n;
}
