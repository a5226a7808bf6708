// What --use-proxy-protocol costs plain HTTP traffic: `bun bench/proxy-protocol.ts`.
// Loopback only; every process it starts is stopped.
//
// With the flag, every connection on the plain port meets the TCP front (src/serving/front.ts)
// first: its PROXY header is read and stripped, then its bytes are copied to Bun.serve on a
// loopback port and back. wrk cannot write a PROXY header, so each Portico is reached through
// its own relay on the clients' CPU (bench/lib/pp-relay.ts), a load balancer stand-in: the one
// in front of the flagged Portico writes the header, the other does not. The same build is run
// with and without the flag, side by side (bench/lib/side-by-side.ts): keep-alive clients show
// the copy per byte, a new connection per request the front's per-connection work.
import { join } from "node:path";
import { addCleanup, start, stop } from "./lib/procs.ts";
import { sideBySide } from "./lib/side-by-side.ts";
import { writeManifests } from "./lib/systems.ts";

const RELAY = join(import.meta.dir, "lib", "pp-relay.ts");

/** A relay to `port` pinned to CPU 1 (the clients' and the backend's), with or without the header; its port. */
async function relay(taskset: string, port: number, header: boolean): Promise<number> {
  const p = start([process.execPath, RELAY, "--to", String(port), ...(header ? ["--header"] : [])], { cpus: "1", stdout: "pipe" }, taskset);
  addCleanup(() => void stop(p));
  const reader = (p.stdout as ReadableStream<Uint8Array>).getReader();
  const first = await reader.read();
  reader.releaseLock();
  const n = Number(new TextDecoder().decode(first.value ?? new Uint8Array()).trim());
  if (!Number.isInteger(n) || n <= 0) throw new Error("the relay did not start");
  return n;
}

sideBySide({
  name: "proxy-protocol",
  title: "--use-proxy-protocol: its cost for plain HTTP, measured side by side",
  clients: "plain HTTP/1.1, each Portico behind its own relay (bench/lib/pp-relay.ts)",
  scheme: "http",
  measured: "with the flag (relay writes the header) vs without",
  aaLabel: "A/A: without the flag, twice",
  async configs({ tools, dir, upstreams }) {
    const manifests = writeManifests(dir, upstreams, null);
    return {
      on: { manifests, tls: false, extraArgs: ["--use-proxy-protocol"], via: (port) => relay(tools.taskset, port, true) },
      off: { manifests, tls: false, via: (port) => relay(tools.taskset, port, false) },
    };
  },
});
