// Connect timeout: an endpoint whose SYNs go unanswered fails within
// --connect-timeout and the request moves to another endpoint, even for POST (nothing was
// sent). The unanswered endpoint is a listening socket with a full accept queue (backlog 0,
// never accepting), made with python3; the test is skipped where python3 is missing.
import { afterAll, expect, test } from "bun:test";
import net from "node:net";
import { probeConnect } from "../../src/proxy/upstream/probe.ts";
import { echoBackend, endpoint, makeBackend, makeTable, readFirstLine, startProxy } from "./helpers.ts";
import { eventually } from "../wait.ts";

const hasPython = Bun.which("python3") !== null;
const cleanup: Array<() => unknown> = [];
afterAll(async () => {
  for (const f of cleanup.reverse()) await f();
});

test("probe: refused fails from the refusal (not the deadline), listening succeeds", async () => {
  const be = echoBackend();
  cleanup.push(() => be.stop());
  await probeConnect(endpoint(be.port), 1000);
  const tmp = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") });
  const dead = tmp.port as number;
  await tmp.stop(true);
  // A deadline far away: the rejection must be the refusal itself ("connect: ECONNREFUSED").
  expect(await probeConnect(endpoint(dead), 60_000).then(() => "connected", (e: { detail: string }) => e.detail)).toStartWith("connect: ");
});

test.skipIf(!hasPython)("unanswered SYN: connect timeout, then another endpoint, even for POST", async () => {
  const py = Bun.spawn(["python3", "-c", "import socket,time\ns=socket.socket()\ns.bind(('127.0.0.1',0))\ns.listen(0)\nprint(s.getsockname()[1],flush=True)\ntime.sleep(60)"], { stdout: "pipe" });
  cleanup.push(() => py.kill());
  const hole = Number(await readFirstLine(py.stdout as ReadableStream<Uint8Array>));
  let connected = 0;
  for (let i = 0; i < 3; i++) {
    const s = net.connect(hole, "127.0.0.1", () => connected++);
    s.on("error", () => {});
    cleanup.push(() => s.destroy());
  }
  // The accept queue is full once a handshake has completed into it; later SYNs go unanswered.
  await eventually(() => connected >= 1, 5_000, "the accept queue filled");
  expect(await probeConnect(endpoint(hole), 300).then(() => "connected", (e: { detail: string }) => e.detail)).toBe("connect timeout");

  const live = echoBackend("live");
  cleanup.push(() => live.stop());
  const retries: string[] = [];
  const p = startProxy(makeTable([{ host: null, backend: makeBackend([hole, live.port]), options: { connectTimeoutMs: 300 } }]), {}, { onUpstreamRetry: (_b, why) => retries.push(why) });
  cleanup.push(() => p.stop());
  const codes: number[] = [];
  for (let i = 0; i < 2; i++) {
    const r = await fetch(p.url + "/post", { method: "POST", body: "x" });
    codes.push(r.status);
    expect(((await r.json()) as { name: string }).name).toBe("live");
  }
  expect(codes).toEqual([200, 200]);
  expect(retries).toEqual(["connect"]);
});
