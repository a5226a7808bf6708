// One QUIC client for h3-rotation.test.ts, in a process of its own: Bun's fetch keeps one QUIC
// connection per process and origin (measured on 1.4.5: every request of a process, sequential
// or concurrent, came from the same client port), so each process is one open connection,
// with its own UDP source port and so its own place in the kernel's SO_REUSEPORT hash.
// It GETs in a loop and prints one JSON line per request, until its stdin closes or `max`
// requests were made. A request without an answer within `boundMs` is aborted and reported.
const port = Number(process.argv[2]);
const boundMs = Number(process.argv[3]);
const max = Number(process.argv[4]);
const streams = Number(process.argv[5] ?? 1);
// Names this client in every path, so a server tells its requests (and a retried one) apart.
const id = process.argv[6] ?? "0";
const pauseMs = Number(process.argv[7] ?? 0);
// POST sends a 100-byte body (bench/h3-rotation.ts measures a request that is not a GET).
const method = process.argv[8] === "POST" ? "POST" : "GET";
let open = true;
void (async () => {
  for await (const _ of Bun.stdin.stream()) {
    // Nothing is ever written: the parent only closes stdin.
  }
  open = false;
})();
let next = 0;
async function loop(): Promise<void> {
  while (open && next < max) {
    const i = next++;
    const t0 = performance.now();
    try {
      const res = await fetch(`https://127.0.0.1:${port}/${id}/${i}`, {
        method, ...(method === "POST" ? { body: "x".repeat(100) } : {}), protocol: "http3", tls: { rejectUnauthorized: false }, signal: AbortSignal.timeout(boundMs),
      } as RequestInit);
      console.log(JSON.stringify({ i, status: res.status, body: await res.text(), ms: Math.round(performance.now() - t0) }));
    } catch (err) {
      const [name, message] = err instanceof Error ? [err.name, err.message] : ["Error", String(err)];
      console.log(JSON.stringify({ i, error: name, message, ms: Math.round(performance.now() - t0) }));
    }
    // A pace, not a wait on anything: a few hundred requests a second per client are plenty,
    // and a loaded machine keeps its cores for the servers under test.
    await Bun.sleep(pauseMs);
  }
}
// `streams` loops at once: concurrent requests share the one connection (streams of it).
await Promise.all(Array.from({ length: streams }, loop));
process.exit(0);
export {};
