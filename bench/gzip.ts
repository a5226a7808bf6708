// Which gzip to compress relayed answers with (docs/design.md "Response compression"):
// Bun's native CompressionStream (zlib's level 6 only), node:zlib's encoder in Portico's bounded
// wrapper (src/http/zlib-stream.ts gzipStream, at a level), and Bun.gzipSync for a body already
// in hand, per MiB (16 KiB chunks, as a relayed stream arrives) of two bodies (a repetitive
// one, and JSON-like records whose values vary) and per small answer (300 bytes): wall time,
// and CPU time of the whole process (process.cpuUsage, so node:zlib's worker thread counts).
// In-process, no network.
//   bun bench/gzip.ts [--rounds N]
import { parseArgs } from "node:util";
import { gzipStream } from "../src/http/zlib-stream.ts";
import { intFlag } from "./lib/flags.ts";

const { values } = parseArgs({ args: Bun.argv.slice(2), options: { rounds: { type: "string" } } });
const rounds = intFlag(values.rounds, 20, 1, 1000, "rounds");

const repetitive = new TextEncoder().encode('<item id="1">some text that compresses, as JSON and HTML do</item>\n'.repeat(16 * 1024)).subarray(0, 1024 * 1024);
/** JSON-like records with varying ids, names and numbers (a 32-bit LCG): compresses about 3x at level 6. */
function records(n: number): Uint8Array {
  let seed = 7;
  const rnd = () => (seed = (Math.imul(seed, 1103515245) + 12345) & 0x7fffffff);
  const lines: string[] = [];
  for (let len = 0; len < n; ) {
    const l = `{"id":${rnd() % 100000},"name":"user-${rnd().toString(36)}","score":${(rnd() % 10000) / 100},"active":${rnd() % 2 === 0},"tags":["a${rnd() % 50}","b${rnd() % 50}"]}\n`;
    lines.push(l);
    len += l.length;
  }
  return new TextEncoder().encode(lines.join("")).subarray(0, n);
}
const bodies = { repetitive, records: records(1024 * 1024) };
const split = (big: Uint8Array) => {
  const chunks: Uint8Array[] = [];
  for (let i = 0; i < big.length; i += 16 * 1024) chunks.push(big.subarray(i, i + 16 * 1024));
  return chunks;
};
const small = repetitive.subarray(0, 300);

const source = (parts: readonly Uint8Array[]) => {
  let i = 0;
  return new ReadableStream<Uint8Array>({ pull: (c) => (i < parts.length ? c.enqueue(parts[i++]!) : c.close()) });
};
async function drain(s: ReadableStream<Uint8Array>): Promise<number> {
  let n = 0;
  for await (const c of s) n += c.byteLength;
  return n;
}

const whole = (parts: readonly Uint8Array[]) => (parts.length === 1 ? parts[0]! : Buffer.concat(parts)) as Uint8Array<ArrayBuffer>;
const ways: Record<string, (parts: readonly Uint8Array[]) => Promise<number>> = {
  "CompressionStream (level 6)": (parts) => drain(source(parts).pipeThrough(new CompressionStream("gzip") as unknown as ReadableWritablePair<Uint8Array, Uint8Array>)),
  "gzipStream level 1 (node:zlib, bounded)": (parts) => drain(source(parts).pipeThrough(gzipStream(1))),
  "gzipStream level 6 (node:zlib, bounded)": (parts) => drain(source(parts).pipeThrough(gzipStream(6))),
  "Bun.gzipSync level 1 (whole body)": async (parts) => Bun.gzipSync(whole(parts), { level: 1 }).byteLength,
  "Bun.gzipSync level 6 (whole body)": async (parts) => Bun.gzipSync(whole(parts), { level: 6 }).byteLength,
};

const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const rows: string[] = ["| way | body | wall ms per MiB | CPU ms per MiB | out bytes | µs per 300-byte answer |", "|---|---|---:|---:|---:|---:|"];
for (const [name, run] of Object.entries(ways)) {
  for (const [bodyName, big] of Object.entries(bodies)) {
    const chunks = split(big);
    await run(chunks);
    let t = performance.now();
    const c0 = cpuMs();
    let out = 0;
    for (let i = 0; i < rounds; i++) out = await run(chunks);
    const perMiB = (performance.now() - t) / rounds;
    const cpuPerMiB = (cpuMs() - c0) / rounds;
    let perSmall = "";
    if (bodyName === "repetitive") {
      const n = rounds * 100;
      t = performance.now();
      for (let i = 0; i < n; i++) await run([small]);
      perSmall = (((performance.now() - t) / n) * 1000).toFixed(1);
    }
    rows.push(`| ${name} | ${bodyName} | ${perMiB.toFixed(2)} | ${cpuPerMiB.toFixed(2)} | ${out} | ${perSmall} |`);
  }
}
console.log(`Bun ${Bun.version}, ${rounds} rounds\n\n${rows.join("\n")}`);
