// meterRequestBody's rate rule on its own: a minimum rate of 0 means no minimum (as the
// --client-body-min-rate flag documents), never a division that cuts every body at once. The
// options' builder (forward.ts) normalises it with bodyMinRate.
import { describe, expect, test } from "bun:test";
import { bodyMinRate, meterRequestBody, type RequestBodyOptions } from "./body.ts";

function options(minRate: number | null, aborts: unknown[]): RequestBodyOptions {
  return {
    limit: null,
    declared: 9,
    gapMs: 10_000,
    minRate,
    clientGone: () => false,
    endIsFinal: true,
    onProgress: () => {},
    onAbort: (e) => aborts.push(e),
  };
}

function body(): ReadableStream<Uint8Array> {
  const parts = ["abc", "def", "ghi"].map((s) => new TextEncoder().encode(s));
  return new ReadableStream<Uint8Array>({
    pull(c) {
      const p = parts.shift();
      if (p === undefined) c.close();
      else c.enqueue(p);
    },
  });
}

describe("meterRequestBody minimum rate", () => {
  for (const rate of [0, null, 500]) {
    test(`a configured rate of ${rate}: the whole body passes, nothing is cut`, async () => {
      const aborts: unknown[] = [];
      const m = meterRequestBody(body(), options(bodyMinRate(rate), aborts));
      expect(await new Response(m.stream).text()).toBe("abcdefghi");
      expect(m.bytes()).toBe(9);
      expect(aborts).toEqual([]);
    });
  }
});

test("bodyMinRate: 0 and null are no minimum, a positive rate is kept", () => {
  expect([bodyMinRate(0), bodyMinRate(null), bodyMinRate(500)]).toEqual([null, null, 500]);
});
