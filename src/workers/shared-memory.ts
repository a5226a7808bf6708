// Memory shared by the primary and its workers (docs/design.md, "Workers" and "Limits"): one
// file, mapped MAP_SHARED (Bun.mmap's default) by every process. The primary creates it in
// /dev/shm (a tmpfs: the pages are memory, never written back to a disk), or the temporary
// directory when /dev/shm is missing or too small, opens it and unlinks it at once, so no name
// is left behind whatever happens to the pod; each worker gets the open file as its descriptor
// SHARED_FD (Bun.spawn's stdio array) and maps /dev/fd/SHARED_FD. The file is sized with
// ftruncate and never shrunk (Bun.mmap's documentation: truncating a mapped file crashes the
// process). Its pages are allocated as they are first written, so a pod whose routes have no
// limits uses none of it; the free space is checked first, since a page that cannot be
// allocated later would crash a worker (SIGBUS) instead of failing here.
import { closeSync, existsSync, ftruncateSync, openSync, statfsSync, unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** The descriptor a worker finds the shared memory at (after stdin, stdout, stderr). */
export const SHARED_FD = 3;
/** Set by the primary in a worker's environment when it passes the shared memory. */
export const SHARED_FD_ENV = "PORTICO_SHARED_FD";

export interface SharedMemory {
  readonly fd: number;
  readonly mem: Uint8Array;
  /** Where it was made (for the log line). */
  readonly dir: string;
}

function roomIn(dir: string, bytes: number): boolean {
  try {
    const s = statfsSync(dir);
    return s.bavail * s.bsize >= 2 * bytes;
  } catch {
    return false;
  }
}

/** The primary's side: a zeroed shared file of `bytes` bytes, or an Error saying why not. */
export function createSharedMemory(bytes: number): SharedMemory | Error {
  const dirs = [...(existsSync("/dev/shm") ? ["/dev/shm"] : []), tmpdir()];
  const dir = dirs.find((d) => roomIn(d, bytes));
  if (dir === undefined) return new Error(`no room for ${bytes} bytes of shared memory in ${dirs.join(" or ")}`);
  const name = join(dir, `portico-shared-${process.pid}-${crypto.randomUUID()}`);
  let fd = -1;
  try {
    // "wx+": O_CREAT | O_EXCL, so an existing file (or a planted symlink) is never opened.
    fd = openSync(name, "wx+", 0o600);
    unlinkSync(name);
    ftruncateSync(fd, bytes);
    const mem = Bun.mmap(`/dev/fd/${fd}`, { shared: true, size: bytes });
    return { fd, mem, dir };
  } catch (err) {
    if (fd >= 0) {
      try {
        unlinkSync(name);
      } catch {
        // already unlinked
      }
      closeSync(fd);
    }
    return err instanceof Error ? err : new Error(String(err));
  }
}

/** A worker's side: the shared memory its primary passed, null when none was passed. */
export function mapSharedMemory(env: Readonly<Record<string, string | undefined>>): Uint8Array | null {
  if (env[SHARED_FD_ENV] !== String(SHARED_FD)) return null;
  return Bun.mmap(`/dev/fd/${SHARED_FD}`, { shared: true });
}
