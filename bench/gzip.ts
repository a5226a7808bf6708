// Which gzip to compress relayed answers with (docs/design.md "Response compression"):
// Bun's native CompressionStream, node:zlib createGzip wrapped as a web stream, and
// Bun.gzipSync for a body already in hand, per MiB (16 KiB chunks, as a relayed stream
// arrives) and per small answer (300 bytes). In-process, no network.
//   bun bench/gzip.ts [--rounds N]
import { parseArgs } from "node:util";
import zlib from "node:zlib";
import { intFlag } from "./lib/flags.ts";

const { values } = parseArgs({ args: Bun.argv.slice(2), options: { rounds: { type: "string" } } });
const rounds = intFlag(values.rounds, 20, 1, 1000, "rounds");

const big = new TextEncoder().encode('<item id="1">some text that compresses, as JSON and HTML do</item>\n'.repeat(16 * 1024)).subarray(0, 1024 * 1024);
const chunks: Uint8Array[] = [];
for (let i = 0; i < big.length; i += 16 * 1024) chunks.push(big.subarray(i, i + 16 * 1024));
const small = big.subarray(0, 300);

const source = (parts: readonly Uint8Array[]) => {
  let i = 0;
  return new ReadableStream<Uint8Array>({ pull: (c) => (i < parts.length ? c.enqueue(parts[i++]!) : c.close()) });
};
async function drain(s: ReadableStream<Uint8Array>): Promise<number> {
  let n = 0;
  for await (const c of s) n += c.byteLength;
  return n;
}

function viaZlib(s: ReadableStream<Uint8Array>, level: number): ReadableStream<Uint8Array> {
  const reader = s.getReader();
  const gz = zlib.createGzip({ level });
  return new ReadableStream<Uint8Array>({
    start(c) {
      gz.on("data", (d: Buffer) => c.enqueue(new Uint8Array(d.buffer, d.byteOffset, d.byteLength)));
      gz.on("end", () => c.close());
      gz.on("error", (e) => c.error(e));
    },
    async pull() {
      const r = await reader.read();
      if (r.done) {
        gz.end();
        return new Promise((res) => gz.once("end", res));
      }
      await new Promise<void>((res) => gz.write(r.value, () => res()));
    },
  });
}

const ways: Record<string, (parts: readonly Uint8Array[]) => Promise<number>> = {
  "CompressionStream (level 6)": (parts) => drain(source(parts).pipeThrough(new CompressionStream("gzip") as unknown as ReadableWritablePair<Uint8Array, Uint8Array>)),
  "node:zlib createGzip level 1": (parts) => drain(viaZlib(source(parts), 1)),
  "Bun.gzipSync level 1 (whole body)": async (parts) => Bun.gzipSync((parts.length === 1 ? parts[0]! : big) as Uint8Array<ArrayBuffer>, { level: 1 }).byteLength,
  "Bun.gzipSync level 6 (whole body)": async (parts) => Bun.gzipSync((parts.length === 1 ? parts[0]! : big) as Uint8Array<ArrayBuffer>, { level: 6 }).byteLength,
};

const rows: string[] = ["| way | ms per MiB | out bytes | µs per 300-byte answer |", "|---|---:|---:|---:|"];
for (const [name, run] of Object.entries(ways)) {
  await run(chunks);
  let t = performance.now();
  let out = 0;
  for (let i = 0; i < rounds; i++) out = await run(chunks);
  const perMiB = (performance.now() - t) / rounds;
  const n = rounds * 100;
  t = performance.now();
  for (let i = 0; i < n; i++) await run([small]);
  const perSmall = ((performance.now() - t) / n) * 1000;
  rows.push(`| ${name} | ${perMiB.toFixed(2)} | ${out} | ${perSmall.toFixed(1)} |`);
}
console.log(`Bun ${Bun.version}, ${rounds} rounds\n\n${rows.join("\n")}`);
