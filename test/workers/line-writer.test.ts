// Worker log lines share one stdout pipe: every write(2) must hold whole lines and ≤ PIPE_BUF bytes.
import { describe, expect, test } from "bun:test";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLineWriter, PIPE_BUF, splitLines } from "../../src/workers/line-writer.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

describe("splitLines", () => {
  test("pieces end on newlines and stay within PIPE_BUF; a long line goes alone", () => {
    const lines = Array.from({ length: 200 }, (_, i) => `${"é".repeat(i % 40)}line ${i} ${"x".repeat((i * 37) % 300)}\n`);
    const long = `${"L".repeat(PIPE_BUF * 2)}\n`;
    const text = lines.slice(0, 100).join("") + long + lines.slice(100).join("");
    const pieces = splitLines(enc.encode(text));
    expect(pieces.map((p) => dec.decode(p)).join("")).toBe(text);
    for (const p of pieces) {
      expect(p[p.length - 1]).toBe(0x0a);
      if (dec.decode(p) !== long) expect(p.length).toBeLessThanOrEqual(PIPE_BUF);
    }
    expect(pieces.some((p) => dec.decode(p) === long)).toBe(true);
  });
});

describe("createLineWriter", () => {
  test("writes everything in order to a descriptor and resolves after it is written", async () => {
    const dir = mkdtempSync(join(tmpdir(), "portico-lw-"));
    try {
      const file = join(dir, "out.log");
      const fd = openSync(file, "w");
      const w = createLineWriter(fd);
      const chunks = Array.from({ length: 20 }, (_, i) => Array.from({ length: 50 }, (_, j) => `c${i} l${j} ${"y".repeat(80)}\n`).join(""));
      await Promise.all(chunks.map((c) => w.write(c)));
      expect(w.pending).toBe(0);
      closeSync(fd);
      expect(readFileSync(file, "utf8")).toBe(chunks.join(""));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("over the pending bound, text is dropped and counted, never queued", async () => {
    const dir = mkdtempSync(join(tmpdir(), "portico-lw-"));
    try {
      const fd = openSync(join(dir, "out.log"), "w");
      const w = createLineWriter(fd, { maxPendingBytes: 100 });
      await w.write(`${"z".repeat(200)}\n`);
      expect(w.dropped).toBe(201);
      closeSync(fd);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
