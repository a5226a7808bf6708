import { expect, test } from "bun:test";
import { newSink, Parser } from "./llhttp-client.ts";

// The prototype's figures (bench/results/upstream-client.md) stand only if its glue hands on
// what llhttp parsed: a field split across two reads is one field, a chunked body arrives
// whole, and bytes that are no HTTP answer are refused.
const enc = new TextEncoder();

test("an answer fed one byte at a time: status, whole fields, chunked body", () => {
  const raw = enc.encode(
    "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\nx-long: a-value-split-across-reads\r\n\r\n" +
      "5\r\nhello\r\n8\r\n world!\n\r\n0\r\n\r\n",
  );
  const p = new Parser();
  const s = newSink();
  for (let i = 0; i < raw.length; i++) {
    expect(s.done).toBe(false);
    p.execute(raw.subarray(i, i + 1), s);
  }
  expect(s.done).toBe(true);
  expect(s.status).toBe(200);
  expect(s.fields).toEqual(["content-type", "text/plain", "transfer-encoding", "chunked", "x-long", "a-value-split-across-reads"]);
  expect(new TextDecoder().decode(Buffer.concat(s.body))).toBe("hello world!\n");
});

test("a kept-alive parser reads the next answer after the first", () => {
  const p = new Parser();
  for (const status of [200, 404]) {
    const s = newSink();
    p.execute(enc.encode(`HTTP/1.1 ${status} X\r\ncontent-length: 2\r\n\r\nok`), s);
    expect(s.done).toBe(true);
    expect(s.status).toBe(status);
    expect(new TextDecoder().decode(s.body[0])).toBe("ok");
  }
});

test("bytes that are no HTTP answer are refused", () => {
  expect(() => new Parser().execute(enc.encode("HTTP/1.1 2x0 OK\r\n\r\n"), newSink())).toThrow(/llhttp error/);
  expect(() => new Parser().execute(enc.encode("HTTP/1.1 200 OK\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\n"), newSink())).toThrow(/llhttp error/);
});
