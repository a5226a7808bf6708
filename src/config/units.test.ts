import { describe, expect, test } from "bun:test";
import { MAX_DURATION_MS, parseDuration, parseSize } from "./units.ts";

describe("parseDuration", () => {
  test.each([
    ["500ms", 500],
    ["5s", 5000],
    ["2m", 120_000],
    ["1h", 3_600_000],
    ["1m30s", 90_000],
    ["1.5s", 1500],
    ["30", 30_000],
    ["0", 0],
    ["0.25", 250],
    [" 5s ", 5000],
  ])("%p → %p ms", (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  test.each(["", "x", "-5s", "5 s", "5d", "s", "1m-3s", "ms5", "1e3", "Infinity"])(
    "%p is not a duration",
    (text) => {
      expect(parseDuration(text)).toBeNull();
    },
  );

  test("too long for a timer is rejected", () => {
    expect(parseDuration("1000h")).toBeNull();
    expect(parseDuration(`${MAX_DURATION_MS}ms`)).toBe(MAX_DURATION_MS);
  });
});

describe("parseSize", () => {
  test.each([
    ["0", 0],
    ["1048576", 1048576],
    ["512k", 512 * 1024],
    ["10m", 10 * 1024 * 1024],
    ["10M", 10 * 1024 * 1024],
    ["10mb", 10 * 1024 * 1024],
    ["10MiB", 10 * 1024 * 1024],
    ["1g", 1024 ** 3],
    ["1.5k", 1536],
  ])("%p → %p bytes", (text, bytes) => {
    expect(parseSize(text)).toBe(bytes);
  });

  test.each(["", "k", "-1", "10t", "ten", "1 0m", "10mm"])("%p is not a size", (text) => {
    expect(parseSize(text)).toBeNull();
  });
});
