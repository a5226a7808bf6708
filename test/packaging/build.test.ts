// scripts/build.ts: the argv it hands to `bun build`, the commit it injects, and a real compile
// of a small probe with exactly those flags (the lead's suite runs the real dist/portico).
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { OUTFILE, ROOT, buildArgs, gitCommit, parseCli } from "../../scripts/build.ts";
import pkg from "../../package.json" with { type: "json" };

const tmp = mkdtempSync(join(tmpdir(), "portico-build-test-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe("buildArgs", () => {
  const base = { version: "1.2.3", commit: "abc1234", outfile: OUTFILE, target: null };

  test("compiles main.ts (and the hashing worker) minified, without .env / bunfig.toml autoload, with version and commit defined", () => {
    expect(buildArgs(base)).toEqual([
      "build",
      "--compile",
      "--minify",
      "--no-compile-autoload-dotenv",
      "--no-compile-autoload-bunfig",
      "--compile-exec-argv=--max-http-header-size=65536",
      '--define=PORTICO_VERSION="1.2.3"',
      '--define=PORTICO_COMMIT="abc1234"',
      "--outfile=dist/portico",
      "src/main.ts",
      "src/proxy/crypt/crypt-worker.ts",
    ]);
  });

  test("cross target is passed through", () => {
    expect(buildArgs({ ...base, target: "bun-linux-arm64" })).toContain("--target=bun-linux-arm64");
  });

  test("a --target build goes to its own file, never over dist/portico (this machine's binary)", () => {
    expect(parseCli([])).toEqual({ target: null, outfile: "dist/portico" });
    expect(parseCli(["--target", "bun-linux-arm64"])).toEqual({ target: "bun-linux-arm64", outfile: "dist/portico-linux-arm64" });
    expect(parseCli(["--target=bun-linux-x64"])).toEqual({ target: "bun-linux-x64", outfile: "dist/portico-linux-x64" });
    expect(parseCli(["--target", "bun-linux-arm64", "--outfile", "out/p"])).toEqual({ target: "bun-linux-arm64", outfile: "out/p" });
  });

  test("a commit that is not hex never reaches --define; a non-semver version is refused", () => {
    const args = buildArgs({ ...base, commit: '";process.exit(1);"' });
    expect(args).toContain('--define=PORTICO_COMMIT="unknown"');
    expect(() => buildArgs({ ...base, version: '1.0.0"+globalThis.x+"' })).toThrow("not semver");
  });
});

describe("gitCommit", () => {
  test("is HEAD's short id in this checkout (with -dirty when the tree has changes)", () => {
    const r = Bun.spawnSync(["git", "rev-parse", "--short", "HEAD"], { cwd: ROOT, stdout: "pipe", stderr: "ignore" });
    if (r.exitCode !== 0) return; // not a git checkout (e.g. an exported tarball)
    const dirty = Bun.spawnSync(["git", "status", "--porcelain"], { cwd: ROOT, stdout: "pipe" }).stdout.toString().trim() !== "";
    expect(gitCommit(ROOT, {})).toBe(`${r.stdout.toString().trim()}${dirty ? "-dirty" : ""}`);
  });

  test("a tree with changes no commit holds is marked -dirty: modified, staged or new files", () => {
    const repo = join(tmp, "repo");
    const git = (...args: string[]) => {
      const r = Bun.spawnSync(["git", "-c", "user.name=t", "-c", "user.email=t@example.test", "-c", "commit.gpgsign=false", ...args], { cwd: repo, stdout: "pipe", stderr: "pipe" });
      if (r.exitCode !== 0) throw new Error(r.stderr.toString());
      return r.stdout.toString().trim();
    };
    Bun.spawnSync(["mkdir", "-p", repo]);
    git("init", "-q");
    writeFileSync(join(repo, "a.ts"), "export const a = 1;\n");
    git("add", "a.ts");
    git("commit", "-qm", "one");
    const head = git("rev-parse", "--short", "HEAD");
    expect(gitCommit(repo, {})).toBe(head);
    writeFileSync(join(repo, "a.ts"), "export const a = 2;\n");
    expect(gitCommit(repo, {})).toBe(`${head}-dirty`);
    git("add", "a.ts");
    expect(gitCommit(repo, {})).toBe(`${head}-dirty`);
    git("commit", "-qm", "two");
    expect(gitCommit(repo, {})).toBe(git("rev-parse", "--short", "HEAD"));
    writeFileSync(join(repo, "new.ts"), "x\n");
    expect(gitCommit(repo, {})).toEndWith("-dirty");
    // The marker reaches --define intact; anything else still falls back to unknown.
    expect(buildArgs({ version: "1.2.3", commit: `${head}-dirty`, outfile: OUTFILE, target: null })).toContain(`--define=PORTICO_COMMIT="${head}-dirty"`);
    expect(gitCommit(tmp, { PORTICO_BUILD_COMMIT: "abc1234-dirty" })).toBe("abc1234-dirty");
    expect(gitCommit(tmp, { PORTICO_BUILD_COMMIT: "abc1234-dirty-x" })).toBe("unknown");
  });

  test("is unknown outside a git checkout, and PORTICO_BUILD_COMMIT wins only when it is hex", () => {
    expect(gitCommit(tmp, {})).toBe("unknown");
    expect(gitCommit(tmp, { PORTICO_BUILD_COMMIT: "0123abcd" })).toBe("0123abcd");
    expect(gitCommit(ROOT, { PORTICO_BUILD_COMMIT: "$(reboot)" })).toBe("unknown");
  });
});

describe("bun scripts/build.ts command line", () => {
  test("rejects an unknown target or argument with exit 2, before building anything", () => {
    for (const argv of [["--target", "bun-windows-x64"], ["--minify"]]) {
      const r = Bun.spawnSync([process.execPath, "scripts/build.ts", ...argv], { cwd: ROOT, stdout: "pipe", stderr: "pipe", timeout: 20_000 });
      expect(r.exitCode).toBe(2);
      expect(r.stderr.toString()).toStartWith("build: ");
    }
  });
});

describe("a binary compiled with these flags", () => {
  test("reports the defined version and commit, and ignores .env and bunfig.toml in its working directory", async () => {
    const outfile = join(tmp, "probe");
    const args = buildArgs({ version: pkg.version, commit: "abc1234", outfile, target: null, entry: "test/packaging/fixtures/version-probe.ts" });
    const b = Bun.spawn([process.execPath, ...args], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
    expect(await b.exited).toBe(0);

    // Without --no-compile-autoload-* a compiled binary loads both from its cwd (checked by hand:
    // the .env value shows up and the preload runs).
    const cwd = join(tmp, "cwd");
    Bun.spawnSync(["mkdir", "-p", cwd]);
    writeFileSync(join(cwd, ".env"), "PORTICO_PROBE_DOTENV=leaked\n");
    writeFileSync(join(cwd, "evil.ts"), 'console.log("BUNFIG PRELOAD RAN");\n');
    writeFileSync(join(cwd, "bunfig.toml"), 'preload = ["./evil.ts"]\n');
    const env = { PATH: process.env.PATH ?? "/usr/bin:/bin" };
    const r = Bun.spawnSync([outfile], { cwd, env, stdout: "pipe", stderr: "pipe", timeout: 20_000 });
    expect(r.exitCode).toBe(0);
    expect(r.stdout.toString().trim()).toBe(JSON.stringify({ version: pkg.version, commit: "abc1234", dotenv: null }));
  });

  test("Bun's parser takes a 64 KiB request head (65,537 bytes get 431), and so does the same executable started again as a worker", async () => {
    const outfile = join(tmp, "header-probe");
    const args = buildArgs({ version: pkg.version, commit: "abc1234", outfile, target: null, entry: "test/packaging/fixtures/header-size-probe.ts" });
    const b = Bun.spawn([process.execPath, ...args], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
    expect(await b.exited).toBe(0);
    const r = Bun.spawnSync([outfile], { cwd: tmp, env: { PATH: process.env.PATH ?? "/usr/bin:/bin" }, stdout: "pipe", stderr: "pipe", timeout: 30_000 });
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout.toString())).toEqual({
      maxHeaderSize: 65536,
      atLimit: "HTTP/1.1 200 OK",
      overLimit: "HTTP/1.1 431 Request Header Fields Too Large",
      child: { maxHeaderSize: 65536 },
    });
  });

  test("from sources, the version comes from package.json and the commit is dev", async () => {
    const r = Bun.spawnSync([process.execPath, "test/packaging/fixtures/version-probe.ts"], { cwd: ROOT, stdout: "pipe", timeout: 20_000 });
    expect(JSON.parse(r.stdout.toString())).toMatchObject({ version: pkg.version, commit: "dev" });
  });
});
