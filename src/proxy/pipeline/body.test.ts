// meterRequestBody's rate rule on its own: a minimum rate of 0 means no minimum (as the
// --client-body-min-rate flag documents), never a division that cuts every body at once.
import { describe, expect, test } from "bun:test";
import { meterRequestBody, type RequestBodyOptions } from "./body.ts";

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
  for (const minRate of [0, null, 500]) {
    test(`minRate ${minRate}: the whole body passes, nothing is cut`, async () => {
      const aborts: unknown[] = [];
      const m = meterRequestBody(body(), options(minRate, aborts));
      expect(await new Response(m.stream).text()).toBe("abcdefghi");
      expect(m.bytes()).toBe(9);
      expect(aborts).toEqual([]);
    });
  }
});
