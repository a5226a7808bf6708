// Open QUIC connections across a rotation of Bun.serve's HTTP/3 listener: which way of
// replacing the server loses no request (docs/design.md, "Bun facts measured here").
//
//   bun bench/h3-rotation.ts [--clients 6] [--runs 3] [--out bench/results/h3-rotation.md]
//
// Each client is a process of its own (test/tls/h3-client.ts: Bun's fetch keeps one QUIC
// connection per process), so each has its own UDP source port and its own place in the
// kernel's SO_REUSEPORT hash. They GET (or POST) in a loop; once every one has been answered,
// the server on the port is replaced one way or another; the run ends when every client has
// 5 answers from the next server, or after 15 s. Counted over the requests made after the
// change: answered, failed fast (an error before the client's 5 s bound) and stalled (no
// answer within it). Loopback only; every process is stopped at the end.
import { parseArgs } from "node:util";
import { createCertificate } from "../test/tls/pki.ts";

const { values } = parseArgs({
  options: { clients: { type: "string", default: "6" }, runs: { type: "string", default: "3" }, out: { type: "string" } },
});
const CLIENTS = Math.min(16, Math.max(1, Number(values.clients)));
const RUNS = Math.min(10, Math.max(1, Number(values.runs)));
const BOUND_MS = 5_000;

type Server = ReturnType<typeof Bun.serve>;
const cert = (cn: string) => {
  const c = createCertificate({ subjectCN: cn, sans: ["127.0.0.1"] });
  return { cert: c.certPem, key: c.keyPem };
};

/** How the server on the port is replaced by `next()`; returns the server left serving. */
const ways: Record<string, { what: string; change(old: Server, next: () => Server): Server | Promise<Server> }> = {
  drain: {
    what: "main before this change: the next joins the port group, the previous stops with stop(false) after a 1 s drain",
    change(old, next) {
      const s = next();
      setTimeout(() => void old.stop(false), 1_000);
      return s;
    },
  },
  joinThenClose: {
    what: "chosen: the next joins, the previous stops with stop(true) in the same turn",
    change(old, next) {
      const s = next();
      void old.stop(true);
      return s;
    },
  },
  joinThenStop: {
    what: "the next joins, the previous stops with stop(false) in the same turn (requests in flight finish)",
    change(old, next) {
      const s = next();
      void old.stop(false);
      return s;
    },
  },
  closeThenBind: {
    what: "the previous stops with stop(true), then the next binds (no UDP listener in between)",
    change(old, next) {
      void old.stop(true);
      return next();
    },
  },
  reload: {
    what: "server.reload() with the new tls (keeps the old certificate: reload ignores tls on QUIC too)",
    change(old) {
      old.reload({ tls: cert("next.test"), fetch: () => new Response("reloaded") } as never);
      return old;
    },
  },
};

interface Line { i: number; body?: string; error?: string; ms: number }

async function run(way: keyof typeof ways, slowMs: number, post: boolean): Promise<{ answered: number; fast: number; stalled: number }> {
  let gen = 0;
  const serve = (port: number): Server => {
    const tag = `s${++gen}`;
    return Bun.serve({
      hostname: "127.0.0.1", port, reusePort: true, tls: cert(`${tag}.test`), http3: true, http1: false,
      async fetch(req: Request) {
        if (post) await req.text();
        if (slowMs > 0) await Bun.sleep(slowMs); // a slow backend: requests in flight at the change
        return new Response(tag);
      },
    } as never);
  };
  let live = serve(0);
  const port = live.port as number;
  const procs = Array.from({ length: CLIENTS }, (_, id) =>
    Bun.spawn([process.execPath, `${import.meta.dir}/../test/tls/h3-client.ts`, String(port), String(BOUND_MS), "5000", "1", String(id), "10", post ? "POST" : "GET"], {
      stdin: "pipe", stdout: "pipe", stderr: "ignore",
    }),
  );
  const lines: { at: number; x: Line }[][] = procs.map(() => []);
  const reading = procs.map(async (p, j) => {
    const dec = new TextDecoder();
    let buf = "";
    for await (const chunk of p.stdout) {
      buf += dec.decode(chunk, { stream: true });
      for (let n = buf.indexOf("\n"); n >= 0; n = buf.indexOf("\n")) {
        lines[j]?.push({ at: performance.now(), x: JSON.parse(buf.slice(0, n)) as Line });
        buf = buf.slice(n + 1);
      }
    }
  });
  const until = async (ok: () => boolean, ms: number) => {
    const end = performance.now() + ms;
    while (!ok() && performance.now() < end) await Bun.sleep(20);
  };
  await until(() => lines.every((l) => l.some((e) => e.x.body === "s1")), 20_000);
  const at = performance.now();
  live = await ways[way]!.change(live, () => serve(port));
  await until(() => lines.every((l) => l.filter((e) => e.at > at && e.x.body !== undefined && e.x.body !== "s1").length >= 5), 15_000);
  for (const p of procs) p.stdin.end();
  await Promise.race([Promise.all(procs.map((p) => p.exited)), Bun.sleep(BOUND_MS + 2_000)]);
  for (const p of procs) p.kill();
  await Promise.all(reading);
  void live.stop(true);
  let answered = 0, fast = 0, stalled = 0;
  for (const l of lines) {
    for (const e of l) {
      if (e.at <= at && e.x.body !== undefined) continue;
      if (e.x.body !== undefined) answered++;
      else if (e.x.ms >= BOUND_MS - 50) stalled++;
      else if (e.at > at) fast++;
    }
  }
  return { answered, fast, stalled };
}

const rows: string[] = [];
for (const [load, slowMs, post] of [["GET, answered at once", 0, false], ["GET, 300 ms backend", 300, false], ["POST, 300 ms backend", 300, true]] as const) {
  for (const way of Object.keys(ways) as (keyof typeof ways)[]) {
    if (post && (way === "reload" || way === "drain")) continue;
    const per: string[] = [];
    const sum = { answered: 0, fast: 0, stalled: 0 };
    for (let r = 0; r < RUNS; r++) {
      const x = await run(way, slowMs, post);
      sum.answered += x.answered; sum.fast += x.fast; sum.stalled += x.stalled;
      per.push(`${x.stalled}/${x.fast}`);
    }
    const row = `| ${load} | ${way} | ${sum.answered} | ${sum.fast} | ${sum.stalled} | ${per.join(", ")} |`;
    console.log(row);
    rows.push(row);
  }
}
const report = [
  `# Open QUIC connections across a server change (bench/h3-rotation.ts)`,
  ``,
  `Bun ${Bun.version}, ${CLIENTS} client processes (one QUIC connection each), ${RUNS} runs per row, loopback.`,
  `Requests made after the change; "stalled" = no answer within ${BOUND_MS / 1000} s, "failed fast" = an error before that.`,
  ``,
  ...Object.entries(ways).map(([k, v]) => `- \`${k}\`: ${v.what}`),
  ``,
  `| load | way | answered | failed fast | stalled | per run (stalled/failed fast) |`,
  `|---|---|---|---|---|---|`,
  ...rows,
  ``,
].join("\n");
if (values.out) await Bun.write(values.out, report);
else console.log(report);
process.exit(0);
