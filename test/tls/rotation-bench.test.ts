import { expect, test } from "bun:test";
import { benchRotation, formatRow } from "./rotation-bench.ts";

// Off by default (minting 5,000 keys takes seconds): PORTICO_TLS_BENCH=1 bun test test/tls
test.skipIf(!process.env.PORTICO_TLS_BENCH)("rotation time with 1, 100 and 5,000 certificates", async () => {
  for (const n of [1, 100, 5000]) {
    const row = await benchRotation(n);
    console.log(formatRow(row));
    // A figure to read, not a bound to assert (docs/design.md: speed is measured, never asserted);
    // benchRotation itself throws unless the rotated certificates are served.
    expect(Number.isFinite(row.rotationTotalMs)).toBe(true);
  }
}, 120_000);
