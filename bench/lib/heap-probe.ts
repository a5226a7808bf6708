// Preloaded into a proxy under bench/allocations.ts (`bun --preload bench/lib/heap-probe.ts`).
// On SIGUSR2 it reads a command from HEAP_PROBE_FILE + ".cmd" and writes JSC's object counts by
// type to HEAP_PROBE_FILE: "gc" collects everything first and leaves a canary (a WeakRef to a
// fresh object); "count" collects nothing, so every object allocated since the "gc", dead or
// alive, is still counted (JSC's heapStats counts cells not yet swept, checked with a loop of
// 10,000 objects), and says whether the canary survived (if it did not, a collection ran in
// between and the counts are short).
import { fullGC, heapStats } from "bun:jsc";
import { readFileSync, writeFileSync } from "node:fs";

const file = process.env.HEAP_PROBE_FILE;
if (file !== undefined && file !== "") {
  let canary: WeakRef<object> | null = null;
  process.on("SIGUSR2", () => {
    const cmd = readFileSync(`${file}.cmd`, "utf8").trim();
    if (cmd === "gc") {
      fullGC();
      canary = new WeakRef({});
    }
    const counts = heapStats().objectTypeCounts;
    writeFileSync(file, JSON.stringify({ cmd, counts, canary: canary?.deref() !== undefined }));
  });
}
