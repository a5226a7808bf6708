// `bun run build`: compiles src/main.ts into one executable, dist/portico.
//
//   bun scripts/build.ts [--target bun-linux-x64|bun-linux-arm64] [--outfile PATH]
//
// Without --outfile: dist/portico, or dist/portico-linux-arm64 (and so on) with --target.
//
// The bun CLI is spawned with an argv array (never a shell string), and the only values that
// reach it are the package.json version and a commit id that must look like hex: both are
// validated and passed through JSON.stringify, since `--define` takes a JS expression.
import { statSync } from "node:fs";
import { join, resolve } from "node:path";
import pkg from "../package.json" with { type: "json" };
import { BUN_HEADER_FLAG } from "../src/config/header-buffers.ts";

export const ROOT = resolve(import.meta.dir, "..");
export const ENTRY = "src/main.ts";
/**
 * Worker threads' entry points, compiled into the executable next to main.ts: Bun bundles a
 * `new Worker(...)` module only when it is listed as an entry point. Each keeps its path under
 * src/ (the entry points' common folder), which is where src/proxy/crypt/hash-pool.ts looks for it.
 */
export const WORKER_ENTRIES = ["src/proxy/crypt/crypt-worker.ts"] as const;
/** Build output, relative to the repository root. The Dockerfile copies this path (a test checks it). */
export const OUTFILE = "dist/portico";
export const TARGETS = ["bun-linux-x64", "bun-linux-arm64"] as const;
export type Target = (typeof TARGETS)[number];

export interface BuildOptions {
  readonly version: string;
  readonly commit: string;
  readonly outfile: string;
  readonly target: Target | null;
  /** Entry point relative to the repository root; tests compile a small probe instead of main.ts. */
  readonly entry?: string;
}

const SEMVER = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;
/** A short or full commit id, with "-dirty" when the tree had changes no commit holds. */
const COMMIT_ID = /^[0-9a-f]{4,40}(?:-dirty)?$/;

/** The argv for `bun build`, without the bun executable itself. */
export function buildArgs(o: BuildOptions): string[] {
  if (!SEMVER.test(o.version)) throw new Error(`package.json version is not semver: ${JSON.stringify(o.version)}`);
  const commit = COMMIT_ID.test(o.commit) ? o.commit : "unknown";
  const args = [
    "build",
    "--compile",
    "--minify",
    // A stray .env or bunfig.toml in the directory the binary is started from must never change
    // its behaviour (both default to on for compiled executables in bun 1.4).
    "--no-compile-autoload-dotenv",
    "--no-compile-autoload-bunfig",
    // Bun's HTTP parser refuses a head over 16 KiB by default; the executable (and every worker
    // it starts, the same executable) runs with the limit large-client-header-buffers is
    // bounded by (src/config/header-buffers.ts; docs/design.md "Request framing and bodies").
    `--compile-exec-argv=${BUN_HEADER_FLAG}`,
    `--define=PORTICO_VERSION=${JSON.stringify(o.version)}`,
    `--define=PORTICO_COMMIT=${JSON.stringify(commit)}`,
  ];
  if (o.target !== null) args.push(`--target=${o.target}`);
  // A probe entry (tests) compiles alone: the worker paths hold only for src/main.ts.
  args.push(`--outfile=${o.outfile}`, ...(o.entry === undefined ? [ENTRY, ...WORKER_ENTRIES] : [o.entry]));
  return args;
}

/**
 * Short HEAD commit, with "-dirty" when `git status --porcelain` lists anything (modified,
 * staged or untracked files): such a binary is not what the commit holds, and `--version` must
 * not claim it is. PORTICO_BUILD_COMMIT wins when set (the Dockerfile passes it as a build
 * argument: .git is not in the build context); "unknown" outside a git checkout.
 */
export function gitCommit(cwd: string, env: Record<string, string | undefined> = process.env): string {
  const given = env.PORTICO_BUILD_COMMIT;
  if (given !== undefined && given !== "") return COMMIT_ID.test(given) ? given : "unknown";
  try {
    const r = Bun.spawnSync(["git", "rev-parse", "--short", "HEAD"], { cwd, stdout: "pipe", stderr: "ignore" });
    const out = r.stdout.toString().trim();
    if (r.exitCode !== 0 || !/^[0-9a-f]{4,40}$/.test(out)) return "unknown";
    const status = Bun.spawnSync(["git", "status", "--porcelain"], { cwd, stdout: "pipe", stderr: "ignore" });
    if (status.exitCode !== 0) return "unknown";
    return status.stdout.toString().trim() === "" ? out : `${out}-dirty`;
  } catch {
    return "unknown"; // git not installed (the oven/bun image has none)
  }
}

/**
 * Where a build goes when --outfile is not given: dist/portico for this machine, and
 * dist/portico-<os>-<arch> for a --target, so a cross build never replaces the binary this
 * machine runs (the README's `./dist/portico` lines would then fail with "Exec format error").
 */
export function defaultOutfile(target: Target | null): string {
  return target === null ? OUTFILE : `${OUTFILE}-${target.replace(/^bun-/, "")}`;
}

export function parseCli(argv: readonly string[]): { target: Target | null; outfile: string } {
  let target: Target | null = null;
  let outfile: string | null = null;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] ?? "";
    const [name, inline] = a.includes("=") ? [a.slice(0, a.indexOf("=")), a.slice(a.indexOf("=") + 1)] : [a, undefined];
    const value = (): string => {
      const v = inline ?? argv[++i];
      if (v === undefined || v === "") throw new Error(`${name} needs a value`);
      return v;
    };
    if (name === "--target") {
      const v = value();
      if (!(TARGETS as readonly string[]).includes(v)) throw new Error(`--target must be one of ${TARGETS.join(", ")}`);
      target = v as Target;
    } else if (name === "--outfile") {
      outfile = value();
    } else {
      throw new Error(`unknown argument ${JSON.stringify(a)} (usage: bun scripts/build.ts [--target T] [--outfile PATH])`);
    }
  }
  return { target, outfile: outfile ?? defaultOutfile(target) };
}

async function main(): Promise<number> {
  let cli: ReturnType<typeof parseCli>;
  try {
    cli = parseCli(Bun.argv.slice(2));
  } catch (e) {
    console.error(`build: ${(e as Error).message}`);
    return 2;
  }
  const opts: BuildOptions = { version: pkg.version, commit: gitCommit(ROOT), ...cli };
  const args = buildArgs(opts);
  console.log(`build: bun ${args.join(" ")}`);
  const started = performance.now();
  // process.execPath is the bun running this script: the same version builds the binary.
  const proc = Bun.spawn([process.execPath, ...args], { cwd: ROOT, stdout: "inherit", stderr: "inherit" });
  const code = await proc.exited;
  if (code !== 0) {
    console.error(`build: bun build exited with ${code}`);
    return code || 1;
  }
  const out = join(ROOT, opts.outfile);
  const size = statSync(out).size;
  const ms = Math.round(performance.now() - started);
  console.log(
    `build: ${opts.outfile} ${(size / 1048576).toFixed(1)} MiB ` +
      `(${size} bytes), version ${opts.version}, commit ${opts.commit}, target ${opts.target ?? "host"}, ${ms} ms`,
  );
  return 0;
}

if (import.meta.main) process.exit(await main());
