// Newline-delimited JSON reader for watch streams. A chunk may hold part of an event, or
// several events; lines are split on "\n" (a trailing "\r" is dropped). A line longer than
// maxLineBytes is discarded up to its newline and reported, so one huge or endless line
// cannot grow memory without bound. A consumer that stops early (410 or ERROR mid-stream)
// cancels the body, which closes the connection, rather than leaving it to the fetch abort.
export type NdjsonItem = { readonly line: string } | { readonly tooLong: number };

export const DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024;

export async function* readNdjson(
  body: ReadableStream<Uint8Array>,
  maxLineBytes = DEFAULT_MAX_LINE_BYTES,
): AsyncGenerator<NdjsonItem> {
  const decoder = new TextDecoder();
  let buf = "";
  let skipping = 0; // > 0 while discarding the rest of an overlong line
  const reader = body.getReader();
  let ended = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      ended = done;
      // `stream: true` keeps a multi-byte character split across chunks intact.
      buf += done ? decoder.decode() : decoder.decode(value, { stream: true });
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const raw = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (skipping > 0) {
          yield { tooLong: skipping + raw.length };
          skipping = 0;
          continue;
        }
        const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
        if (line.length > maxLineBytes) yield { tooLong: line.length };
        else if (line.trim() !== "") yield { line };
      }
      if (buf.length > maxLineBytes) {
        skipping += buf.length;
        buf = "";
      }
      if (done) break;
    }
    if (skipping > 0) yield { tooLong: skipping };
    else if (buf.trim() !== "") yield { line: buf };
  } finally {
    // Whatever was not read to its end is cancelled here, not left to the caller's abort:
    // Bun 1.3 kept an aborted streaming body's bytes off-heap where a cancelled one was freed
    // (oven-sh/bun#32659). A failed read's stream is already errored; its cancel rejects.
    if (ended) reader.releaseLock();
    else reader.cancel().catch(() => {});
  }
}
