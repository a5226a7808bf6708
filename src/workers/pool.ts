// The primary's side of --workers N ≥ 2 (docs/design.md, "Workers"): N worker processes, each
// the same executable re-spawned with an IPC channel. The pool keeps the latest TLS entries
// and hands them, with the whole latest table, to every worker that says hello (first start or
// restart) or asks for a resync; every other table change goes out as a delta to the workers
// that have its base generation. It lets one worker at a time bind the traffic ports first
// (probing them for a stranger) and the others join once it listens; it restarts a worker that
// dies with a back-off (100 ms doubling to 5 s), gathers metrics snapshots, and drains them all.
import type { Subprocess } from "bun";
import { parseSnapshot, type RegistrySnapshot } from "../admin/exposition.ts";
import type { Logger } from "../log/logger.ts";
import type { TlsEntry } from "../tls/sni.ts";
import { parseToPrimary, WORKER_ID_ENV, type ToPrimary, type ToWorker } from "./protocol.ts";
import { SHARED_FD, SHARED_FD_ENV } from "./shared-memory.ts";

export const BACKOFF_INITIAL_MS = 100;
export const BACKOFF_MAX_MS = 5_000;
/** A worker that lived this long before dying restarts after the initial delay again. */
const STABLE_MS = 10_000;

/**
 * The whole latest table, encoded on each call (null: no table yet). The pool keeps the result
 * only until every worker has been sent that generation (see wholeTable() below).
 */
export type FullTable = () => { readonly generation: number; readonly json: string } | null;

export interface WorkerPoolOptions {
  readonly count: number;
  /** The whole latest table, for a worker that has none or lost track (null: no table yet). */
  readonly fullTable: FullTable;
  /** The command that runs this program (see argv.ts). */
  readonly argv: readonly string[];
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly log: Logger;
  /** A worker could not serve (e.g. the port is taken) before every worker was ever ready. */
  onFatal(message: string): void;
  /** Every worker has served a table (once): the traffic ports listen. */
  onAllServing?(): void;
  /** For the line saying so. */
  readonly ports?: Readonly<Record<string, unknown>>;
  /**
   * Memory shared with every worker (shared-memory.ts): its descriptor, passed to each worker
   * as SHARED_FD, and what to do when a worker is gone, before its successor starts.
   */
  readonly shared?: { readonly fd: number; workerGone(id: number, pid: number): void };
}

export interface WorkerPool {
  /** `ports`: the Gateways' own HTTPS ports' sets (--gateway-ports). */
  setTls(entries: readonly TlsEntry[], fingerprint: string, ports?: ReadonlyMap<number, { readonly entries: readonly TlsEntry[]; readonly fingerprint: string }>): void;
  /** New per-request settings (config/live.ts): sent to every worker now, and to each that starts later. */
  setSettings(values: Readonly<Record<string, unknown>>): void;
  /**
   * A new table generation is current. `delta` (JSON of a WireDelta from generation `base`) goes
   * to every worker that was last sent `base`; any other open worker gets fullTable().
   */
  publish(generation: number, delta: { readonly base: number; readonly json: string } | null): void;
  /** True once every worker has had a table live (a worker restarting later does not undo it). */
  readonly allReady: boolean;
  /**
   * The workers that do not serve the latest table now (ids): not running, not listening since
   * they (re)started, or behind it with no table of theirs on the way (a whole table they could
   * not read). A worker sent the latest table or delta counts as serving it until it says
   * otherwise (it serves the one before meanwhile, as a single process does while it swaps).
   */
  notServing(): number[];
  /** How many workers have acknowledged `generation` (or a later one). */
  appliedCount(generation: number): number;
  /** Snapshots of the workers that answer within `timeoutMs`. */
  metrics(timeoutMs?: number): Promise<RegistrySnapshot[]>;
  /** Tell every worker to drain and wait for them to exit; kill what is left at `timeoutMs`. `delay`: see DataPlane.shutdown. */
  drain(timeoutMs: number, o?: { readonly delay?: boolean }): Promise<void>;
  /** Live worker pids, for logs and tests. */
  pids(): number[];
}

interface Slot {
  readonly id: number;
  proc: Subprocess | null;
  startedAt: number;
  delayMs: number;
  /** The worker said hello: its message handler is installed. */
  open: boolean;
  /** Highest table generation it reported live (0 = none yet). */
  generation: number;
  /** Generation of the last table or delta sent to it (0 = none since it started). */
  sent: number;
  /** It was told it may listen (since it started). */
  permitted: boolean;
  /** It listens on the traffic ports (since it started). */
  listening: boolean;
  /** Generation of a whole table it could not read (0: none since it last applied one). */
  rejected: number;
  everReady: boolean;
  restartTimer: ReturnType<typeof setTimeout> | null;
}

export function createWorkerPool(o: WorkerPoolOptions): WorkerPool {
  const { log } = o;
  let tls: ToWorker | null = null;
  let settings: ToWorker | null = null;
  let draining = false;
  let drainMessage: ToWorker = { type: "drain" };
  let nextRequest = 1;
  const waiting = new Map<number, Map<number, (s: RegistrySnapshot | null) => void>>();
  const slots: Slot[] = Array.from({ length: o.count }, (_, id) => ({
    id,
    proc: null,
    startedAt: 0,
    delayMs: BACKOFF_INITIAL_MS,
    open: false,
    generation: 0,
    sent: 0,
    permitted: false,
    listening: false,
    rejected: 0,
    everReady: false,
    restartTimer: null,
  }));
  /** The worker allowed to bind first (it probes the ports) that does not listen yet. */
  let first: Slot | null = null;

  // The whole latest table as encoded for the workers (18 MB at 10k Ingresses), shared by the
  // workers that need it at about the same time (every worker's first hello, a large change).
  // It is dropped once every worker has been sent its generation, and when a newer generation
  // is published: a later restart or resync encodes it again (~100 ms at 10k) rather than
  // every primary holding a copy of what its workers already have.
  let whole: { readonly generation: number; readonly json: string } | null = null;
  let latest = 0;

  function wholeTable(): { readonly generation: number; readonly json: string } | null {
    if (whole === null || whole.generation !== latest) whole = o.fullTable();
    return whole;
  }

  /** Let go of the encoded whole table once no worker is still to be sent it. */
  function releaseWhole(): void {
    if (whole !== null && slots.every((s) => s.sent === whole?.generation)) whole = null;
  }

  /** Send the whole latest table (a first table, or after a delta could not apply). */
  function sendFull(slot: Slot): void {
    if (!slot.open) return;
    const full = wholeTable();
    if (full === null) return;
    sendTo(slot, { type: "table", generation: full.generation, json: full.json });
    slot.sent = full.generation;
    releaseWhole();
  }

  function sendTo(slot: Slot, m: ToWorker): void {
    if (!slot.open || !slot.proc) return;
    try {
      slot.proc.send(m);
    } catch (err) {
      log.warn("cannot send to worker", { worker: slot.id, err });
    }
  }

  /**
   * Tell workers they may listen. While no worker listens, one at a time binds first, probing
   * the ports: a stranger holding them fails that worker, not a sibling probing after it
   * (which would find the first worker and fail for nothing). Once one listens, the others
   * join its ports without probing. serving/ports.ts says why strangers are kept out.
   */
  function permit(): void {
    if (draining) return;
    const listening = slots.some((s) => s.proc !== null && s.generation > 0);
    for (const s of slots) {
      if (!s.open || s.permitted) continue;
      if (!listening && first !== null) return;
      s.permitted = true;
      if (!listening) first = s;
      sendTo(s, { type: "listen", first: !listening });
    }
  }

  function onMessage(slot: Slot, raw: unknown): void {
    const m: ToPrimary | null = parseToPrimary(raw);
    if (!m) return void log.warn("ignored a malformed message from a worker", { worker: slot.id });
    switch (m.type) {
      case "hello":
        slot.open = true;
        slot.sent = 0;
        if (tls) sendTo(slot, tls);
        // Before its first table: a worker started with the start-up values never serves a request with them after a change.
        if (settings) sendTo(slot, settings);
        sendFull(slot);
        if (draining) sendTo(slot, drainMessage);
        permit();
        return;
      case "resync":
        log.warn("a worker could not apply a table change; sending the whole table", { worker: slot.id });
        sendFull(slot);
        return;
      case "rejected":
        // Its own line names the host or the reason; readiness counts it out (notServing).
        log.error("a worker could not read the whole route table; it keeps serving the one it had, or none", { worker: slot.id, generation: m.generation });
        slot.rejected = Math.max(slot.rejected, m.generation);
        return;
      case "ready":
      case "applied":
        slot.generation = Math.max(slot.generation, m.generation);
        if (m.type === "ready") slot.listening = true;
        if (slot.rejected <= slot.generation) slot.rejected = 0;
        if (first === slot) first = null;
        if (m.type === "ready" && !slot.everReady) {
          slot.everReady = true;
          if (slots.every((s) => s.everReady)) {
            log.info("every worker is serving", { workers: slots.length, ...o.ports, pids: pool.pids() });
            o.onAllServing?.();
          }
        }
        permit();
        return;
      case "metrics":
        waiting.get(m.id)?.get(slot.id)?.(parseSnapshot(m.snapshot));
        return;
      case "fatal":
        log.error("worker cannot serve", { worker: slot.id, err: m.message });
        if (!slots.every((s) => s.everReady)) o.onFatal(m.message);
        return;
    }
  }

  function spawn(slot: Slot): void {
    slot.restartTimer = null;
    slot.open = false;
    slot.generation = 0;
    slot.sent = 0;
    slot.permitted = false;
    slot.listening = false;
    slot.rejected = 0;
    slot.startedAt = performance.now();
    const shared = o.shared;
    const proc: Subprocess = Bun.spawn([...o.argv], {
      env: { ...o.env, [WORKER_ID_ENV]: String(slot.id), ...(shared ? { [SHARED_FD_ENV]: String(SHARED_FD) } : {}) },
      // The shared memory's descriptor lands at SHARED_FD, right after stdin, stdout, stderr.
      stdio: shared ? ["ignore", "inherit", "inherit", shared.fd] : ["ignore", "inherit", "inherit"],
      ipc: (message) => onMessage(slot, message),
      onExit: (p, code, signal): void => onExit(slot, p, code, signal),
    });
    slot.proc = proc;
    log.info("worker started", { worker: slot.id, pid: proc.pid });
  }

  function onExit(slot: Slot, proc: Subprocess, code: number | null, signal: number | NodeJS.Signals | null): void {
    if (slot.proc !== proc) return;
    // Its share of the shared state (connections it counted, a lock it held) goes first, even
    // when draining: the others still serve.
    if (o.shared) {
      try {
        o.shared.workerGone(slot.id, proc.pid);
      } catch (err) {
        log.error("cannot release a gone worker's shared state", { worker: slot.id, err });
      }
    }
    slot.proc = null;
    slot.open = false;
    slot.generation = 0;
    slot.listening = false;
    if (first === slot) first = null;
    for (const m of waiting.values()) m.get(slot.id)?.(null);
    if (draining) return;
    permit(); // another worker may have to bind first now
    const lived = performance.now() - slot.startedAt;
    if (lived >= STABLE_MS) slot.delayMs = BACKOFF_INITIAL_MS;
    const delay = slot.delayMs;
    slot.delayMs = Math.min(BACKOFF_MAX_MS, slot.delayMs * 2);
    log.warn("worker exited; restarting", { worker: slot.id, pid: proc.pid, code, signal, livedMs: Math.round(lived), restartInMs: delay });
    slot.restartTimer = setTimeout(() => spawn(slot), delay);
  }

  const pool: WorkerPool = {
    setTls(entries, fingerprint, ports) {
      tls = { type: "tls", entries, fingerprint, ...(ports && ports.size > 0 ? { ports: [...ports].map(([port, s]) => ({ port, entries: s.entries, fingerprint: s.fingerprint })) } : {}) };
      for (const s of slots) sendTo(s, tls);
    },
    setSettings(values) {
      settings = { type: "settings", values };
      for (const s of slots) sendTo(s, settings);
    },
    publish(generation, delta) {
      latest = generation;
      if (whole !== null && whole.generation !== generation) whole = null;
      for (const s of slots) {
        if (!s.open || !s.proc) continue;
        if (delta !== null && s.sent === delta.base) {
          sendTo(s, { type: "delta", generation, base: delta.base, json: delta.json });
          s.sent = generation;
        } else sendFull(s);
      }
    },
    get allReady() {
      return slots.every((s) => s.everReady);
    },
    notServing() {
      const current = (s: Slot) => s.generation >= latest || (s.sent >= latest && s.rejected < s.sent);
      return slots.filter((s) => s.proc === null || !s.listening || !current(s)).map((s) => s.id);
    },
    appliedCount(generation) {
      return slots.filter((s) => s.proc && s.generation >= generation).length;
    },
    async metrics(timeoutMs = 1000) {
      const id = nextRequest++;
      const replies = new Map<number, (s: RegistrySnapshot | null) => void>();
      waiting.set(id, replies);
      const asked = slots.filter((s) => s.open && s.proc);
      const answers = asked.map(
        (s) =>
          new Promise<RegistrySnapshot | null>((resolve) => {
            const timer = setTimeout(() => resolve(null), timeoutMs);
            replies.set(s.id, (snap) => {
              clearTimeout(timer);
              resolve(snap);
            });
            sendTo(s, { type: "metrics", id });
          }),
      );
      try {
        return (await Promise.all(answers)).filter((s): s is RegistrySnapshot => s !== null);
      } finally {
        waiting.delete(id);
      }
    },
    async drain(timeoutMs, d) {
      draining = true;
      drainMessage = d?.delay === false ? { type: "drain", delay: false } : { type: "drain" };
      for (const s of slots) {
        if (s.restartTimer) clearTimeout(s.restartTimer);
        s.restartTimer = null;
        sendTo(s, drainMessage);
      }
      const live = slots.map((s) => s.proc).filter((p): p is Subprocess => p !== null);
      const killer = setTimeout(() => {
        for (const p of live) {
          if (p.exitCode === null && p.signalCode === null) {
            log.warn("worker did not exit in time; killing it", { pid: p.pid });
            p.kill("SIGKILL");
          }
        }
      }, timeoutMs);
      await Promise.all(live.map((p) => p.exited));
      clearTimeout(killer);
    },
    pids() {
      return slots.flatMap((s) => (s.proc ? [s.proc.pid] : []));
    },
  };

  for (const s of slots) spawn(s);
  return pool;
}
