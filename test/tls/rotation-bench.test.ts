import { expect, test } from "bun:test";
import { benchRotation, formatRow } from "./rotation-bench.ts";

// Off by default (minting 5,000 keys takes seconds): PORTICO_TLS_BENCH=1 bun test test/tls
test.skipIf(!process.env.PORTICO_TLS_BENCH)("rotation time with 1, 100 and 5,000 certificates", async () => {
  for (const n of [1, 100, 5000]) {
    const row = await benchRotation(n);
    console.log(formatRow(row));
    expect(row.rotationTotalMs).toBeLessThan(30_000);
  }
}, 120_000);
