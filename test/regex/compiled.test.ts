// The regex engine inside a compiled executable, built with the release flags
// (scripts/build.ts) and run from an empty directory: re2js is plain JavaScript, so it is
// bundled into the binary. (The WASM candidate, @adguard/re2-wasm, read its .wasm from the
// build machine's node_modules path at run time and failed exactly here: docs/design.md "Regular expressions".)
import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT, buildArgs } from "../../scripts/build.ts";
import pkg from "../../package.json" with { type: "json" };

const tmp = mkdtempSync(join(tmpdir(), "portico-regex-compiled-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

test("a binary importing src/regex matches, rewrites, survives a hostile pattern and refuses a backreference", async () => {
  const outfile = join(tmp, "regex-probe");
  const args = buildArgs({ version: pkg.version, commit: "abc1234", outfile, target: null, entry: "test/regex/fixtures/regex-probe.ts" });
  const b = Bun.spawn([process.execPath, ...args], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  expect(await b.exited).toBe(0);

  const cwd = join(tmp, "empty");
  mkdirSync(cwd);
  const r = Bun.spawnSync([outfile], { cwd, env: { PATH: "/usr/bin:/bin" }, stdout: "pipe", stderr: "pipe", timeout: 20_000 });
  expect(r.stderr.toString()).toBe("");
  expect(r.exitCode).toBe(0);
  expect(JSON.parse(r.stdout.toString())).toEqual({
    rewrite: "/new",
    hostile: false,
    refused: "uses a backreference, which no linear-time engine can run (\\1)",
  });
});
