// The command that starts this same program again as a worker (--workers N ≥ 2,
// docs/design.md "Workers").
//
// Measured on Bun 1.4.5 (a probe compiled with `bun build --compile`):
// - from sources (`bun src/main.ts --x`): execPath is bun, argv = [bun, /abs/src/main.ts, --x],
//   Bun.main = /abs/src/main.ts. Worker: [execPath, ...execArgv, argv[1], ...argv.slice(2)].
// - compiled (`./portico --x`): execPath is the binary, argv = ["bun", "/$bunfs/root/portico", --x],
//   Bun.main = "/$bunfs/root/portico". Passing argv[1] again would make it a user argument
//   (the child then sees it twice), so the worker is [execPath, ...argv.slice(2)].

/** True when running as a `bun build --compile` executable (its modules live in /$bunfs/). */
export function isCompiled(main: string): boolean {
  return main.startsWith("/$bunfs/") || /^[A-Z]:[\\/]~BUN[\\/]/.test(main);
}

export interface ProcessInfo {
  readonly execPath: string;
  readonly execArgv: readonly string[];
  readonly argv: readonly string[];
  readonly main: string;
}

export function workerArgv(p: ProcessInfo): string[] {
  const args = p.argv.slice(2);
  if (isCompiled(p.main)) return [p.execPath, ...args];
  const script = p.argv[1] ?? p.main;
  return [p.execPath, ...p.execArgv, script, ...args];
}

export function currentProcess(): ProcessInfo {
  return { execPath: process.execPath, execArgv: process.execArgv, argv: process.argv, main: Bun.main };
}
