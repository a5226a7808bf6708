// A small pool of Bun Workers that compute the password hashes nginx's auth_basic accepts and
// Portico writes itself (proxy/crypt/crypt.ts: MD5-crypt, SHA-crypt, DES), so a flood of logins never
// holds the event loop every other host is served from (docs/design.md, "Access control:
// source ranges and basic authentication"). bcrypt does not come here: Bun.password.verify
// already runs on Bun's own thread pool.

export interface HashJob {
  readonly id: number;
  readonly format: string;
  readonly password: Uint8Array;
  readonly stored: string;
}

export interface HashReply {
  readonly id: number;
  readonly ok: boolean;
}

/**
 * Hashing threads per process. Two keep one slow hash from delaying every other check while
 * leaving the cores to the event loop (with --workers N, each worker process has its own two).
 * Checks are already bounded per route (kinds/basic-auth.ts), so the queue here stays short.
 */
export const HASH_THREADS = 2;

interface Thread {
  readonly worker: Worker;
  readonly pending: Map<number, (ok: boolean | Error) => void>;
}

/**
 * The worker's module. From the sources it sits next to this file. In the compiled executable
 * every module of the bundle has the executable's URL (file:///$bunfs/root/portico) and the
 * worker is the entry point scripts/build.ts adds, src/proxy/crypt/crypt-worker.ts, stored relative to
 * src/ (the entry points' common folder) with the same name; an absolute $bunfs URL that is not
 * in the executable fails to load (ModuleNotFound), it never reads a file from disk.
 */
function workerUrl(): string {
  const compiled = import.meta.url.startsWith("file:///$bunfs/");
  return new URL(compiled ? "./proxy/crypt/crypt-worker.ts" : "./crypt-worker.ts", import.meta.url).href;
}

/** The formats computed on a hashing thread: rounds that would hold the event loop (crypt.ts). */
export type OffloadedFormat = "apr1" | "md5-crypt" | "sha256-crypt" | "sha512-crypt" | "des";

const threads: Thread[] = [];
let nextId = 1;

function failAll(t: Thread, why: Error): void {
  const i = threads.indexOf(t);
  if (i >= 0) threads.splice(i, 1);
  for (const settle of t.pending.values()) settle(why);
  t.pending.clear();
  try {
    t.worker.terminate();
  } catch {
    // already gone
  }
}

function spawn(): Thread {
  const worker = new Worker(workerUrl());
  const t: Thread = { worker, pending: new Map() };
  worker.onmessage = (e: MessageEvent) => {
    const reply = e.data as HashReply;
    const settle = t.pending.get(reply.id);
    if (settle === undefined) return;
    t.pending.delete(reply.id);
    settle(reply.ok === true);
  };
  // A thread that fails (it could not load, or threw outside a job) takes its jobs with it:
  // they are errors, which the caller answers as refusals (access control fails closed). The
  // next job starts a new thread.
  worker.onerror = (e: ErrorEvent) => failAll(t, new Error(`hashing thread failed: ${e.message}`));
  worker.addEventListener("close", () => failAll(t, new Error("hashing thread exited")));
  // An idle pool must not keep the process alive at shutdown; a pending job's request does.
  worker.unref();
  threads.push(t);
  return t;
}

/** Whether `password` matches `stored`, computed on a hashing thread; rejects when none can run it. */
export function hashOffLoop(format: OffloadedFormat, password: Uint8Array, stored: string): Promise<boolean> {
  let t: Thread | undefined;
  if (threads.length < HASH_THREADS) t = spawn();
  else for (const c of threads) if (t === undefined || c.pending.size < t.pending.size) t = c;
  const thread = t as Thread;
  const id = nextId++;
  return new Promise<boolean>((resolve, reject) => {
    thread.pending.set(id, (ok) => (ok instanceof Error ? reject(ok) : resolve(ok)));
    const job: HashJob = { id, format, password: Uint8Array.from(password), stored };
    try {
      thread.worker.postMessage(job);
    } catch (e) {
      thread.pending.delete(id);
      reject(e instanceof Error ? e : new Error(String(e)));
    }
  });
}
