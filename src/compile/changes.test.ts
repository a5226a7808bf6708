// changedKeys (src/compile/changes.ts) must report exactly the keys added, removed or rebound,
// whether the two maps share their order (a copy-on-write copy) or not (a relist).
import { expect, test } from "bun:test";
import { changedKeys, insertSorted, removeSorted, compareStrings } from "./changes.ts";
import { rng } from "../../bench/lib/cp-gen.ts";

function expected(a: ReadonlyMap<string, object>, b: ReadonlyMap<string, object>): string[] {
  return [...new Set([...a.keys(), ...b.keys()])].filter((k) => a.get(k) !== b.get(k)).sort();
}

test("changedKeys matches a brute-force diff on copies, reorders and unrelated maps", () => {
  const r = rng(5);
  const n = (m: number) => Math.floor(r() * m);
  let outOfOrder = 0;
  for (let t = 0; t < 3000; t++) {
    const a = new Map<string, object>();
    for (let i = n(30); i > 0; i--) a.set(`k${n(40)}`, {});
    let b: Map<string, object>;
    const shape = t % 3;
    if (shape === 0) b = new Map(a); // the store's copy: same order
    else if (shape === 1) b = new Map([...a].reverse()); // a relist: same entries, other order
    else b = new Map<string, object>([[`k${n(40)}`, {}]]); // unrelated
    for (let i = n(5); i > 0; i--) {
      const k = `k${n(40)}`;
      if (r() < 0.4) b.delete(k);
      else if (r() < 0.5 && a.has(k)) b.set(k, a.get(k) as object);
      else b.set(k, {});
    }
    const got: string[] = [];
    changedKeys(a, b, (k) => got.push(k));
    expect({ t, got: got.sort() }).toEqual({ t, got: expected(a, b) });
    expect(new Set(got).size).toBe(got.length); // each key once
    if (shape === 1 && a.size > 1) outOfOrder++;
  }
  expect(outOfOrder).toBeGreaterThan(100);
  const calls: string[] = [];
  const m = new Map([["x", {}]]);
  changedKeys(m, m, (k) => calls.push(k));
  changedKeys(null, m, (k) => calls.push(k));
  expect(calls).toEqual(["x"]);
});

test("insertSorted / removeSorted keep order and remove by identity", () => {
  const xs: string[] = [];
  for (const k of ["m", "c", "x", "a", "m2", "b"]) insertSorted(xs, k, compareStrings);
  expect(xs).toEqual(["a", "b", "c", "m", "m2", "x"]);
  expect(removeSorted(xs, "m", compareStrings)).toBe(true);
  expect(removeSorted(xs, "zz", compareStrings)).toBe(false);
  expect(xs).toEqual(["a", "b", "c", "m2", "x"]);
  // Equal by the comparator but another object: only the same one is removed.
  const byN = (p: { n: number }, q: { n: number }) => p.n - q.n;
  const one = { n: 1 };
  const other = { n: 1 };
  const list = [one];
  expect(removeSorted(list, other, byN)).toBe(false);
  expect(removeSorted(list, one, byN)).toBe(true);
});
