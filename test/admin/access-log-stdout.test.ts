// The default sink is the real process.stdout: a reader that stops reading (a full pipe) or
// goes away (closed pipe) must neither stall record() nor crash the process.
import { expect, test } from "bun:test";
import { join } from "node:path";

const CHILD = join(import.meta.dir, "fixtures", "access-child.ts");

interface Report {
  maxBurstMs: number;
  dropped: number;
  recorded: number;
}

async function run(reader: (stdout: ReadableStream<Uint8Array>) => Promise<number>): Promise<{ report: Report; lines: number; code: number }> {
  const p = Bun.spawn([process.execPath, CHILD], { stdout: "pipe", stderr: "pipe" });
  try {
    const lines = await reader(p.stdout);
    const code = await p.exited;
    const report = JSON.parse(await new Response(p.stderr).text()) as Report;
    return { report, lines, code };
  } finally {
    p.kill();
  }
}

test("a stdout reader that stalls: bursts stay fast, overflow is dropped and counted, the rest arrives", async () => {
  const { report, lines, code } = await run(async (stdout) => {
    await Bun.sleep(400); // the pipe fills while nobody reads
    const text = await new Response(stdout).text();
    return text.split("\n").length - 1;
  });
  expect(code).toBe(0);
  expect(report.maxBurstMs).toBeLessThan(500); // 2,000 record() calls; measured ~3 ms
  expect(report.dropped).toBeGreaterThan(0);
  expect(lines + report.dropped).toBe(report.recorded);
});

test("a stdout reader that goes away: no crash, everything after is dropped", async () => {
  const { report, code } = await run(async (stdout) => {
    await Bun.sleep(50);
    await stdout.cancel();
    return 0;
  });
  expect(code).toBe(0);
  expect(report.maxBurstMs).toBeLessThan(500);
  expect(report.dropped).toBeGreaterThan(0);
});
