// The primary's worker pool against tiny stand-in workers (bun -e scripts): restart back-off,
// the state a (re)started worker receives, fatal start-up, metrics timeouts, drain with a kill.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createWorkerPool, type WorkerPool } from "../../src/workers/pool.ts";
import { workerArgv } from "../../src/workers/argv.ts";

interface Rec {
  level: string;
  msg: string;
  f: Record<string, unknown>;
}

function recorder() {
  const recs: Rec[] = [];
  const mk = (level: string) => (msg: string, f: Record<string, unknown> = {}) => void recs.push({ level, msg, f });
  const log = { debug: mk("debug"), info: mk("info"), warn: mk("warn"), error: mk("error"), child: () => log };
  return { recs, log };
}

const script = (code: string) => [process.execPath, "-e", code];

let pools: WorkerPool[] = [];
afterEach(async () => {
  for (const p of pools) await p.drain(500);
  pools = [];
});

async function until(check: () => boolean, ms = 5000): Promise<void> {
  const t0 = performance.now();
  while (!check()) {
    if (performance.now() - t0 > ms) throw new Error("condition not met");
    await Bun.sleep(10);
  }
}

describe("worker pool", () => {
  test("a worker that keeps dying is restarted with a doubling back-off", async () => {
    const { recs, log } = recorder();
    pools.push(createWorkerPool({ count: 1, argv: script("process.exit(3)"), env: process.env, log, onFatal: () => {}, fullTable: () => null }));
    await until(() => recs.filter((r) => r.msg === "worker exited; restarting").length >= 4);
    const delays = recs.filter((r) => r.msg === "worker exited; restarting").map((r) => r.f.restartInMs);
    expect(delays.slice(0, 4)).toEqual([100, 200, 400, 800]);
    expect(recs.find((r) => r.msg === "worker exited; restarting")?.f.code).toBe(3);
  });

  test("hello gets the latest TLS entries then the whole table; changes go as deltas; resync gets the whole table; ready/applied are counted; metrics time out", async () => {
    const { recs, log } = recorder();
    // Echo what arrives; ready on the first table; ask for a resync once, on delta 3; never answer metrics.
    const code = `
      let asked = false;
      process.on("message", (m) => {
        if (m.type === "table" || m.type === "delta") process.send({ type: m.generation === 1 ? "ready" : "applied", generation: m.generation });
        process.send({ type: "fatal", message: "seen " + m.type + (m.generation ?? "") + (m.base !== undefined ? "<" + m.base : "") });
        if (m.type === "delta" && m.generation === 3 && !asked) { asked = true; process.send({ type: "resync" }); }
      });
      process.send({ type: "hello" });`;
    const fatal: string[] = [];
    let generation = 0;
    let encoded = 0;
    const fullTable = () => (generation === 0 ? null : (encoded++, { generation, json: "{}" }));
    const pool = createWorkerPool({ count: 2, argv: script(code), env: process.env, log, onFatal: (m) => fatal.push(m), fullTable });
    pools.push(pool);
    pool.setTls([], "fp1");
    generation = 1;
    pool.publish(1, null);
    await until(() => pool.allReady);
    expect(pool.appliedCount(1)).toBe(2);
    generation = 2;
    pool.publish(2, { base: 1, json: "{}" });
    await until(() => pool.appliedCount(2) === 2);
    generation = 3;
    pool.publish(3, { base: 2, json: "{}" });
    // A delta from a base a worker was not sent is not sent to it: it gets the whole table.
    generation = 4;
    pool.publish(4, { base: 1, json: "{}" });
    await until(() => recs.filter((r) => r.msg === "worker cannot serve" && String(r.f.err).startsWith("seen table4")).length >= 2 + 2);
    const seen = recs.filter((r) => r.msg === "worker cannot serve").map((r) => `${r.f.worker} ${r.f.err}`);
    // Each worker got the state in order on hello (tls before table, then its leave to listen),
    // then the deltas, then the whole table 4 twice: once for its resync (asked after delta 3),
    // once for the base mismatch.
    for (const w of [0, 1]) {
      expect(seen.filter((s) => s.startsWith(`${w} `))).toEqual([`${w} seen tls`, `${w} seen table1`, `${w} seen listen`, `${w} seen delta2<1`, `${w} seen delta3<2`, `${w} seen table4`, `${w} seen table4`]);
    }
    expect(recs.filter((r) => r.msg === "a worker could not apply a table change; sending the whole table")).toHaveLength(2);
    // The whole table is encoded once for the workers that need it together (table 1 on both
    // hellos, table 4 for the base mismatch) and not kept once both have it: each resync
    // encodes table 4 again.
    expect(encoded).toBe(1 + 1 + 2);
    // "fatal" before every worker was ready reaches onFatal; after that it is only logged.
    expect(fatal).toContain("seen tls");
    expect(fatal.filter((m) => m.includes("table2"))).toEqual([]);
    expect(await pool.metrics(100)).toEqual([]);
  });

  test("one worker at a time binds first (probing the ports); the others join once it listens; a first that dies hands the role on", async () => {
    const { recs, log } = recorder();
    const dir = mkdtempSync(join(tmpdir(), "portico-pool-"));
    const marker = join(dir, "first-died");
    // Worker 1 says hello 50 ms after worker 0. The first worker told to bind first dies before
    // listening (once: the marker file); any later one listens at once.
    const code = `
      const fs = require("node:fs");
      const id = process.env.PORTICO_WORKER_ID;
      process.on("message", (m) => {
        if (m.type !== "listen") return;
        process.send({ type: "fatal", message: "listen " + m.first });
        if (m.first && !fs.existsSync(${JSON.stringify(marker)})) {
          fs.writeFileSync(${JSON.stringify(marker)}, "");
          setTimeout(() => process.exit(1), 100);
        } else process.send({ type: "ready", generation: 1 });
      });
      setTimeout(() => process.send({ type: "hello" }), id === "0" ? 0 : 50);
      setInterval(() => {}, 1000);`;
    const pool = createWorkerPool({ count: 2, argv: script(code), env: process.env, log, onFatal: () => {}, fullTable: () => null });
    pools.push(pool);
    await until(() => recs.filter((r) => r.msg === "worker cannot serve").length >= 3);
    const events = recs
      .filter((r) => r.msg === "worker cannot serve" || r.msg === "worker exited; restarting")
      .map((r) => (r.msg === "worker exited; restarting" ? `${r.f.worker} exited` : `${r.f.worker} ${r.f.err}`));
    expect(events.slice(0, 4)).toEqual(["0 listen true", "0 exited", "1 listen true", "0 listen false"]);
    await until(() => pool.allReady);
    rmSync(dir, { recursive: true, force: true });
  });

  test("fatal before every worker is ready reaches onFatal", async () => {
    const { log } = recorder();
    let fatal = "";
    pools.push(
      createWorkerPool({
        count: 1,
        argv: script(`process.send({ type: "fatal", message: "port taken" }); setTimeout(() => process.exit(1), 50);`),
        env: process.env,
        log,
        onFatal: (m) => (fatal = m),
        fullTable: () => null,
      }),
    );
    await until(() => fatal !== "");
    expect(fatal).toBe("port taken");
  });

  test("drain kills a worker that ignores it after the timeout", async () => {
    const { recs, log } = recorder();
    const pool = createWorkerPool({ count: 1, argv: script(`process.on("message", () => {}); process.send({ type: "hello" }); setInterval(() => {}, 1000);`), env: process.env, log, onFatal: () => {}, fullTable: () => null });
    await until(() => pool.pids().length === 1);
    await Bun.sleep(200);
    const t0 = performance.now();
    await pool.drain(300);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(250);
    expect(recs.some((r) => r.msg === "worker did not exit in time; killing it")).toBe(true);
    expect(recs.some((r) => r.msg === "worker exited; restarting")).toBe(false);
  });
});

describe("workerArgv", () => {
  test("from sources: bun, its own flags, the script, then the arguments", () => {
    expect(workerArgv({ execPath: "/usr/bin/bun", execArgv: ["--smol"], argv: ["/usr/bin/bun", "/app/src/main.ts", "--workers", "2"], main: "/app/src/main.ts" })).toEqual([
      "/usr/bin/bun", "--smol", "/app/src/main.ts", "--workers", "2",
    ]);
  });
  test("compiled: the binary and the arguments, without the embedded script path", () => {
    expect(workerArgv({ execPath: "/usr/local/bin/portico", execArgv: [], argv: ["bun", "/$bunfs/root/portico", "--workers", "2"], main: "/$bunfs/root/portico" })).toEqual([
      "/usr/local/bin/portico", "--workers", "2",
    ]);
  });
});
