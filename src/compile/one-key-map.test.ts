import { describe, expect, test } from "bun:test";
import { OneKeyMap } from "./one-key-map.ts";

// Every ReadonlyMap reading answers as a Map holding the same one entry.
describe("OneKeyMap", () => {
  const value = ["a", "b"];
  const one = new OneKeyMap("app.example.com", value);
  const map: ReadonlyMap<string, string[]> = new Map([["app.example.com", value]]);

  test("reads as a Map of that entry", () => {
    for (const m of [one, map]) {
      expect(m.size).toBe(1);
      expect(m.get("app.example.com")).toBe(value);
      expect(m.get("other.example.com")).toBeUndefined();
      expect(m.get("")).toBeUndefined();
      expect(m.has("app.example.com")).toBe(true);
      expect(m.has("APP.example.com")).toBe(false);
    }
    expect([...one]).toEqual([...map]);
    expect([...one.entries()]).toEqual([...map.entries()]);
    expect([...one.keys()]).toEqual(["app.example.com"]);
    expect([...one.values()]).toEqual([value]);
    expect([...one.values()][0]).toBe(value);
    const seen: unknown[] = [];
    one.forEach(function (this: unknown, v, k, m) {
      seen.push(v, k, m, this);
    }, "ctx");
    expect(seen).toEqual([value, "app.example.com", one, "ctx"]);
  });

  test("each iteration starts again", () => {
    const it = one.keys();
    expect(it.next()).toEqual({ value: "app.example.com", done: false });
    expect(it.next().done).toBe(true);
    expect([...one.keys()]).toEqual(["app.example.com"]);
  });
});
