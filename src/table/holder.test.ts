import { expect, test } from "bun:test";
import { buildTable } from "./build.ts";
import { TableHolder } from "./holder.ts";
import { lookup } from "./lookup.ts";

test("swap installs a table with one assignment and bumps the generation", () => {
  const holder = new TableHolder();
  expect(holder.generation).toBe(0);
  const before = holder.current;
  expect(lookup(before, "a.test", "/")).toBeNull();
  const next = buildTable([], null);
  expect(holder.swap(next)).toBe(1);
  expect(holder.current).toBe(next);
  expect(holder.generation).toBe(1);
  // A request that read the old table keeps it.
  expect(before).not.toBe(next);
  expect(Object.isFrozen(next)).toBe(true);
});
