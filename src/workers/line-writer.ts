// Writes log lines to an inherited file descriptor (stdout) so that lines from several
// processes sharing that descriptor never mix mid-line.
//
// Why not process.stdout.write: measured on Bun 1.4.5, when the pipe is full Bun buffers
// later writes and flushes them as one large write(2); a write larger than PIPE_BUF (4096
// bytes on Linux) is not atomic (POSIX write(2), pipe(7)), so another worker's bytes land
// inside our lines (3 workers × 40k access lines: ~400 broken lines). Here every write(2)
// carries whole lines and at most PIPE_BUF bytes, one at a time, off the event loop (fs.write
// runs on Bun's thread pool), so each is atomic. A single line over 4 KiB is written alone.
import { write as fsWrite } from "node:fs";

/** POSIX PIPE_BUF on Linux: writes up to this size to a pipe are atomic. */
export const PIPE_BUF = 4096;
const NL = 0x0a;
const RETRY_MS = 5;

export interface LineWriter {
  /** Queue text made of whole lines (each ending in "\n"); resolves once it is written or dropped. */
  write(text: string): Promise<void>;
  /** Resolves when everything queued so far is written. */
  flush(): Promise<void>;
  /** Bytes queued and not yet written. */
  readonly pending: number;
  /** Bytes dropped because the queue was over its bound or the descriptor failed. */
  readonly dropped: number;
}

/** Split `bytes` into pieces of at most `max` bytes that end on a line boundary where possible. */
export function splitLines(bytes: Uint8Array, max = PIPE_BUF): Uint8Array[] {
  const out: Uint8Array[] = [];
  let start = 0;
  while (start < bytes.length) {
    if (bytes.length - start <= max) {
      out.push(bytes.subarray(start));
      break;
    }
    // The last newline within the window ends this piece; with none, the long line goes alone.
    let end = bytes.lastIndexOf(NL, start + max - 1) + 1;
    if (end <= start) {
      const nl = bytes.indexOf(NL, start + max);
      end = nl < 0 ? bytes.length : nl + 1;
    }
    out.push(bytes.subarray(start, end));
    start = end;
  }
  return out;
}

export function createLineWriter(fd = 1, opts: { maxPendingBytes?: number } = {}): LineWriter {
  const maxPending = opts.maxPendingBytes ?? 8 * 1024 * 1024;
  const encoder = new TextEncoder();
  const queue: { piece: Uint8Array; done?: () => void }[] = [];
  let pending = 0;
  let dropped = 0;
  let busy = false;
  const idle: Array<() => void> = [];

  function next(): void {
    const item = queue[0];
    if (!item) {
      busy = false;
      for (const fn of idle.splice(0)) fn();
      return;
    }
    busy = true;
    fsWrite(fd, item.piece, 0, item.piece.length, null, (err, written) => {
      if (err) {
        const code = (err as NodeJS.ErrnoException).code;
        // A non-blocking descriptor that is full: wait a little and write the same piece again.
        if (code === "EAGAIN") return void setTimeout(next, RETRY_MS);
        // EPIPE or a closed descriptor: the reader is gone; this piece is lost, try the rest.
        dropped += item.piece.length;
        written = item.piece.length;
      }
      pending -= written;
      if (written < item.piece.length) {
        // A regular file may take part of a write; the rest follows (pipes never split ≤ PIPE_BUF).
        item.piece = item.piece.subarray(written);
        return void next();
      }
      queue.shift();
      item.done?.();
      next();
    });
  }

  return {
    write(text) {
      const bytes = encoder.encode(text);
      if (pending + bytes.length > maxPending) {
        dropped += bytes.length;
        return Promise.resolve();
      }
      const pieces = splitLines(bytes);
      return new Promise<void>((resolve) => {
        pieces.forEach((piece, i) => {
          queue.push(i === pieces.length - 1 ? { piece, done: resolve } : { piece });
          pending += piece.length;
        });
        if (pieces.length === 0) resolve();
        if (!busy) next();
      });
    },
    flush() {
      return busy ? new Promise<void>((resolve) => idle.push(resolve)) : Promise.resolve();
    },
    get pending() {
      return pending;
    },
    get dropped() {
      return dropped;
    },
  };
}
