// The default sink is the real process.stdout: a reader that stops reading (a full pipe) or
// goes away (closed pipe) must neither stall record() nor crash the process.
import { expect, test } from "bun:test";
import { join } from "node:path";

const CHILD = join(import.meta.dir, "fixtures", "access-child.ts");

interface Report {
  writesInBursts: number;
  writes: number;
  dropped: number;
  recorded: number;
}

async function run(reader: (stdout: ReadableStream<Uint8Array>, exited: Promise<number>) => Promise<number>): Promise<{ report: Report; lines: number; code: number }> {
  const p = Bun.spawn([process.execPath, CHILD], { stdout: "pipe", stderr: "pipe" });
  try {
    const lines = await reader(p.stdout, p.exited);
    const code = await p.exited;
    const report = JSON.parse(await new Response(p.stderr).text()) as Report;
    return { report, lines, code };
  } finally {
    p.kill();
  }
}

test("a stdout reader that stalls: record() never writes, overflow is dropped and counted, the rest arrives", async () => {
  const { report, lines, code } = await run(async (stdout, exited) => {
    // A reader that reads nothing until the writer is done: the pipe fills, whatever the
    // machine's speed, and what it holds is read after.
    await exited;
    const text = await new Response(stdout).text();
    return text.split("\n").length - 1;
  });
  expect(code).toBe(0);
  expect(report.writesInBursts).toBe(0);
  expect(report.writes).toBeGreaterThan(0);
  expect(report.dropped).toBeGreaterThan(0);
  expect(lines + report.dropped).toBe(report.recorded);
});

test("a stdout reader that goes away: no crash, everything after is dropped", async () => {
  const { report, code } = await run(async (stdout) => {
    // Go away once the first lines have arrived.
    const reader = stdout.getReader();
    await reader.read();
    await reader.cancel();
    return 0;
  });
  expect(code).toBe(0);
  expect(report.writesInBursts).toBe(0);
  expect(report.writes).toBeGreaterThan(0);
  expect(report.dropped).toBeGreaterThan(0);
});
