import { expect, test } from "bun:test";
import { readNdjson, type NdjsonItem } from "./ndjson.ts";

function streamOf(chunks: (string | Uint8Array)[]): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  return new ReadableStream({
    start(c) {
      for (const ch of chunks) c.enqueue(typeof ch === "string" ? enc.encode(ch) : ch);
      c.close();
    },
  });
}

async function all(s: ReadableStream<Uint8Array>, max?: number): Promise<NdjsonItem[]> {
  const out: NdjsonItem[] = [];
  for await (const i of readNdjson(s, max)) out.push(i);
  return out;
}

test("events split across chunks and several per chunk", async () => {
  const items = await all(streamOf(['{"a":', '1}\n{"b":2}\n{"c"', ":3}\r\n\n", '{"d":4}']));
  expect(items).toEqual([{ line: '{"a":1}' }, { line: '{"b":2}' }, { line: '{"c":3}' }, { line: '{"d":4}' }]);
});

test("a multi-byte character split between chunks survives", async () => {
  const bytes = new TextEncoder().encode('{"n":"é€"}\n');
  const items = await all(streamOf([bytes.slice(0, 7), bytes.slice(7)]));
  expect(items).toEqual([{ line: '{"n":"é€"}' }]);
});

test("an overlong line is reported and skipped; the next line is read", async () => {
  const items = await all(streamOf(["x".repeat(30), "y".repeat(30), "\n", '{"ok":1}\n', "z".repeat(50), "\n"]), 40);
  expect(items).toEqual([{ tooLong: 60 }, { line: '{"ok":1}' }, { tooLong: 50 }]);
});

test("a consumer that stops mid-stream cancels the body (the connection closes), one that reads to the end does not", async () => {
  const enc = new TextEncoder();
  let cancelled = 0;
  let n = 0;
  const endless = new ReadableStream<Uint8Array>({
    pull(c) {
      c.enqueue(enc.encode(`{"n":${n++}}\n`));
    },
    cancel() {
      cancelled++;
    },
  });
  for await (const item of readNdjson(endless)) {
    expect(item).toEqual({ line: '{"n":0}' });
    break; // as a 410 ERROR event ends the watch
  }
  expect(cancelled).toBe(1);
  const s = streamOf(['{"a":1}\n']);
  expect(await all(s)).toEqual([{ line: '{"a":1}' }]);
  expect(s.locked).toBe(false);
});
