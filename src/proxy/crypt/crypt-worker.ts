// The thread that computes the crypt() formats of proxy/crypt/crypt.ts (MD5-crypt, SHA-crypt, DES)
// for proxy/crypt/hash-pool.ts, so the proxy's event loop never runs their rounds (docs/design.md,
// "Access control: source ranges and basic authentication"). Started as a Bun Worker; in the
// compiled executable it is one of the build's entry points (scripts/build.ts).
import { computedMatches, OFFLOADED_FORMATS } from "./crypt.ts";
import type { HashJob, HashReply, OffloadedFormat } from "./hash-pool.ts";

declare const self: Worker;

self.onmessage = (event: MessageEvent) => {
  const job = event.data as HashJob;
  let ok = false;
  try {
    // The pool only sends these; anything else is no match (fail closed).
    if (job.password instanceof Uint8Array && typeof job.stored === "string" && OFFLOADED_FORMATS.has(job.format)) {
      ok = computedMatches(job.password, job.stored, job.format as OffloadedFormat);
    }
  } catch {
    ok = false;
  }
  const reply: HashReply = { id: job.id, ok };
  self.postMessage(reply);
};
