// The primary's worker pool. With real workers (src/main.ts started by the pool, as a primary
// starts them): what the workers serve after the pool publishes a first table, a change as a
// delta, a change from a base they do not have, an unreadable change, and after one of them is
// killed and restarted. With stand-in workers (bun -e scripts), what real ones do not do on
// demand: die on every start, die while binding first, fail before or after they are ready,
// ignore a drain.
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "../../src/config/parse.ts";
import type { Config } from "../../src/config/types.ts";
import { silentLogger } from "../../src/log/logger.ts";
import { createTlsBuilder } from "../../src/serving/tls.ts";
import { buildTable } from "../../src/table/build.ts";
import type { Backend as TableBackend, Route, RouteTable } from "../../src/table/types.ts";
import { encodeDelta, encodeTable, type BackendRegistry } from "../../src/table/wire.ts";
import { workerArgv } from "../../src/workers/argv.ts";
import { createWorkerPool, type WorkerPool } from "../../src/workers/pool.ts";
import { mkRoute } from "../compile/routes.ts";
import { alive, freePort, startBackend, type Backend } from "../e2e/harness.ts";
import { binding, peerCertificate } from "../tls/helpers.ts";
import { createCertificate } from "../tls/pki.ts";
import { captureLogger } from "../fake-apiserver/fixtures.ts";
import { eventually } from "../wait.ts";

const MAIN = join(import.meta.dir, "..", "..", "src", "main.ts");

let pools: WorkerPool[] = [];
afterEach(async () => {
  for (const p of pools) await p.drain(2000);
  pools = [];
});

describe("real workers", () => {
  let web: Backend;
  let api: Backend;
  const ports = { http: 0, https: 0 };
  let config: Config;
  let flags: string[];

  beforeAll(() => {
    web = startBackend("web");
    api = startBackend("api");
    ports.http = freePort();
    ports.https = freePort();
    flags = ["--bind", "127.0.0.1", "--http-port", String(ports.http), "--https-port", String(ports.https), "--workers", "2", "--access-log", "off", "--log-level", "error", "--shutdown-delay", "0s"];
    const parsed = parseArgs(flags, {});
    if (parsed.type !== "run") throw new Error(`flags: ${JSON.stringify(parsed)}`);
    config = parsed.config;
  });
  afterAll(() => {
    web.stop();
    api.stop();
  });

  const backendOf = (b: Backend): TableBackend => ({
    id: `default/${b.name}:80`,
    namespace: "default",
    service: b.name,
    port: "80",
    status: "ok",
    endpoints: [{ address: "127.0.0.1", port: b.port, authority: `127.0.0.1:${b.port}`, ready: true, serving: true, terminating: false }],
    allEndpoints: [],
    scheme: "http",
    serverName: `${b.name}.default.svc`,
    externalName: false,
  });
  const route = (host: string, to: Backend): Route => ({ ...mkRoute(host, "/", "Prefix", `${host}-ing`), backend: backendOf(to) });

  /**
   * A pool of two real workers and the primary's side of the table exchange, as
   * workers/plane.ts does it: the whole table encoded on demand, changes as deltas from the
   * previous generation.
   */
  function primary() {
    let current: { table: RouteTable; generation: number } | null = null;
    const registry: BackendRegistry = new Map();
    const fatal: string[] = [];
    const fullTable = () => (current === null ? null : { generation: current.generation, json: JSON.stringify(encodeTable(current.table, registry)) });
    const argv = workerArgv({ execPath: process.execPath, execArgv: [], argv: [process.execPath, MAIN, ...flags], main: MAIN });
    const pool = createWorkerPool({ count: 2, argv, env: process.env, log: silentLogger, onFatal: (m) => fatal.push(m), fullTable });
    pools.push(pool);
    const tls = createTlsBuilder(config, silentLogger);
    const initial = tls.build([]);
    pool.setTls(initial.entries, initial.fingerprint);
    return {
      pool,
      fatal,
      get generation() {
        return current?.generation ?? 0;
      },
      /** Publish `table` as the next generation: as a delta from `base` (default: the previous generation), or `json` as given. */
      publish(table: RouteTable, delta: { base?: number; json?: string } | "whole" = {}) {
        const prev = current;
        current = { table, generation: (prev?.generation ?? 0) + 1 };
        if (delta === "whole" || prev === null) return pool.publish(current.generation, null);
        const json = delta.json ?? JSON.stringify(encodeDelta(prev.table, table, registry));
        pool.publish(current.generation, { base: delta.base ?? prev.generation, json });
      },
      setCertificates(bindings: Parameters<typeof tls.build>[0]) {
        const built = tls.build(bindings);
        pool.setTls(built.entries, built.fingerprint);
      },
    };
  }

  /** One GET on a fresh connection, so SO_REUSEPORT picks a worker for each. */
  async function freshGet(host: string, path = "/"): Promise<string> {
    try {
      const res = await fetch(`http://127.0.0.1:${ports.http}${path}`, { headers: { host, connection: "close" }, keepalive: false });
      return `${res.status} ${await res.text()}`;
    } catch {
      return "no answer";
    }
  }

  /** True when 30 fresh connections (spread over both workers) all get `want` ("404": that status). */
  const everyWorker = async (host: string, path: string, want: string) =>
    (await Promise.all(Array.from({ length: 30 }, () => freshGet(host, path)))).every((got) => (want === "404" ? got.startsWith("404 ") : got === want));

  /** Requests each worker answered since it started, by worker id (its own counter, read through the pool). */
  async function servedPerWorker(pool: WorkerPool): Promise<Record<string, number>> {
    const out: Record<string, number> = {};
    for (const snap of await pool.metrics(2000)) {
      for (const f of snap.families) {
        if (f.type === "counter" && f.name === "portico_worker_requests_total") for (const x of f.series) out[x.labels[0]!] = x.value;
      }
    }
    return out;
  }

  test("no worker listens before it has a table; then every worker serves each change: a delta, a whole table for a base it lacks, an unreadable delta", async () => {
    const p = primary();
    // Both workers are up (they answer the pool) and hold the certificates, but no table yet:
    // they do not listen, so a request is refused rather than answered 404.
    await eventually(async () => (await p.pool.metrics(1000)).length === 2, 15_000);
    expect(p.pool.allReady).toBe(false);
    expect(await freshGet("a.test")).toBe("no answer");

    p.publish(buildTable([route("a.test", web)], null));
    await eventually(() => p.pool.allReady, 15_000);
    expect(await everyWorker("a.test", "/x", "200 web /x")).toBe(true);
    expect(await everyWorker("b.test", "/", "404")).toBe(true);

    // A change goes out as a delta from the generation the workers hold.
    p.publish(buildTable([route("a.test", web), route("b.test", api)], null));
    await eventually(() => everyWorker("b.test", "/y", "200 api /y"), 8000);
    expect(await everyWorker("a.test", "/x", "200 web /x")).toBe(true);

    // A delta from a generation the workers were not sent: they get the whole table instead.
    p.publish(buildTable([route("a.test", api)], null), { base: 1 });
    await eventually(() => everyWorker("a.test", "/x", "200 api /x"), 8000);
    expect(await everyWorker("b.test", "/y", "404")).toBe(true);

    // A delta no worker can read: each asks for the whole table and serves it.
    p.publish(buildTable([route("a.test", web), route("c.test", web)], null), { json: "{ not a delta" });
    await eventually(() => everyWorker("c.test", "/z", "200 web /z"), 8000);
    expect(await everyWorker("a.test", "/x", "200 web /x")).toBe(true);

    // Both workers answered some of those fresh connections; nothing was fatal.
    const served = await servedPerWorker(p.pool);
    expect([served["0"]! > 0, served["1"]! > 0]).toEqual([true, true]);
    expect(p.fatal).toEqual([]);
  }, 60_000);

  test("a killed worker is restarted and serves the current table and certificates; later deltas reach it", async () => {
    const p = primary();
    p.publish(buildTable([route("a.test", web)], null));
    p.publish(buildTable([route("a.test", web), route("b.test", api)], null));
    const pem = createCertificate({ subjectCN: "a-cert", sans: ["a.test"] });
    p.setCertificates([binding("a.test", "default/a-tls", pem)]);
    await eventually(() => p.pool.allReady, 15_000);
    await eventually(() => everyWorker("b.test", "/", "200 api /"), 8000);

    // Slot order: pids()[0] is worker 0.
    const [victim, other] = p.pool.pids();
    process.kill(victim!, "SIGKILL");
    await eventually(() => p.pool.pids().length === 2 && !p.pool.pids().includes(victim!), 8000);
    expect(p.pool.pids()).toContain(other!);

    // The new worker 0 starts from nothing: it must get generation 2 and the certificate from
    // the pool. Wait until it has answered requests itself (its counter starts from zero), and
    // every answer meanwhile is the current one: b.test routed, a.test's certificate served.
    await eventually(async () => {
      const answers = await Promise.all(Array.from({ length: 30 }, () => freshGet("b.test", "/after")));
      const certs = await Promise.all(Array.from({ length: 12 }, () => peerCertificate(ports.https, "a.test").then((c) => c.cn, () => "no answer")));
      const wrong = [...answers.filter((a) => a !== "200 api /after"), ...certs.filter((cn) => cn !== "a-cert")];
      expect(wrong).toEqual([]);
      return ((await servedPerWorker(p.pool))["0"] ?? 0) > 0;
    }, 10_000);

    // The restarted worker got the whole table at generation 2: a delta from 2 applies there too.
    p.publish(buildTable([route("a.test", web), route("b.test", web)], null));
    await eventually(() => everyWorker("b.test", "/later", "200 web /later"), 8000);
    expect(alive(victim!)).toBe(false);
    expect(p.fatal).toEqual([]);
  }, 60_000);
});

describe("stand-in workers", () => {
  const script = (code: string) => [process.execPath, "-e", code];
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "portico-pool-"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const lines = (file: string) => (existsSync(file) ? readFileSync(file, "utf8").trim().split("\n") : []);

  test("a worker that keeps dying is restarted, waiting 100 ms, then twice as long each time", async () => {
    const starts = join(dir, "starts");
    const code = `require("node:fs").appendFileSync(${JSON.stringify(starts)}, process.pid + "\\n"); process.exit(3);`;
    const log = captureLogger();
    pools.push(createWorkerPool({ count: 1, argv: script(code), env: process.env, log, onFatal: () => {}, fullTable: () => null }));
    await eventually(() => lines(starts).length >= 5, 10_000);
    // The back-off is the pool's decision, named in its line before each restart (the pool
    // arms its timer with that value): asserted as such, not by a stopwatch around the starts.
    const waits = log.lines.filter((l) => l.msg === "worker exited; restarting").map((l) => l.fields?.restartInMs);
    expect(waits.slice(0, 4)).toEqual([100, 200, 400, 800]);
    expect(new Set(lines(starts)).size).toBe(lines(starts).length); // each start a new process
  }, 20_000);

  test("one worker at a time binds first; the others join once it listens; a first that dies before listening hands the role on", async () => {
    const told = join(dir, "told");
    const died = join(dir, "first-died");
    // Worker 1 says hello only once worker 0 has been told to bind first (a sequence point on
    // the marker file, not a delay: under load a fixed 50 ms let worker 1's hello come first).
    // The first worker told to bind first dies before listening (once: the marker file); any
    // later one listens at once.
    const code = `
      const fs = require("node:fs");
      const id = process.env.PORTICO_WORKER_ID;
      process.on("message", (m) => {
        if (m.type !== "listen") return;
        fs.appendFileSync(${JSON.stringify(told)}, id + " " + (m.first ? "first" : "join") + "\\n");
        if (m.first && !fs.existsSync(${JSON.stringify(died)})) {
          fs.writeFileSync(${JSON.stringify(died)}, "");
          setTimeout(() => process.exit(1), 100);
        } else process.send({ type: "ready", generation: 1 });
      });
      const hello = () => process.send({ type: "hello" });
      if (id === "0") hello();
      else {
        const wait = setInterval(() => {
          if (fs.existsSync(${JSON.stringify(told)}) && fs.readFileSync(${JSON.stringify(told)}, "utf8").includes("0 first")) { clearInterval(wait); hello(); }
        }, 5);
      }
      setInterval(() => {}, 1000);`;
    const pool = createWorkerPool({ count: 2, argv: script(code), env: process.env, log: silentLogger, onFatal: () => {}, fullTable: () => null });
    pools.push(pool);
    await eventually(() => pool.allReady, 10_000);
    // Worker 1 waited while worker 0 was binding first; when 0 died, 1 became first; the
    // restarted 0 joined the ports 1 listens on.
    expect(lines(told)).toEqual(["0 first", "1 first", "0 join"]);
  }, 20_000);

  test("notServing: a worker counts only while it listens and has not refused the latest whole table; a dead one does not count", async () => {
    // Stand-ins that listen when told, take every whole table except generation 2, which they
    // report they could not read (worker.ts does so for a table it cannot decode).
    const code = `
      process.on("message", (m) => {
        if (m.type === "listen") process.send({ type: "ready", generation: 1 });
        if (m.type === "table" && m.generation > 1) process.send(m.generation === 2 ? { type: "rejected", generation: 2 } : { type: "applied", generation: m.generation });
      });
      process.send({ type: "hello" });
      setInterval(() => {}, 1000);`;
    let generation = 1;
    const pool = createWorkerPool({ count: 2, argv: script(code), env: process.env, log: silentLogger, onFatal: () => {}, fullTable: () => ({ generation, json: "{}" }) });
    pools.push(pool);
    pool.publish(1, null);
    expect(pool.notServing()).toEqual([0, 1]);
    await eventually(() => pool.notServing().length === 0, 10_000);
    generation = 2;
    pool.publish(2, null);
    await eventually(() => pool.notServing().length === 2, 10_000);
    expect(pool.notServing()).toEqual([0, 1]);
    expect(pool.allReady).toBe(true);
    generation = 3;
    pool.publish(3, null);
    await eventually(() => pool.notServing().length === 0, 10_000);
    // A worker that dies is out until its successor listens again.
    const [victim] = pool.pids();
    process.kill(victim as number, "SIGKILL");
    await eventually(() => pool.notServing().length === 1, 10_000);
    expect(pool.notServing()).toEqual([0]);
    await eventually(() => pool.notServing().length === 0 && !pool.pids().includes(victim as number), 10_000);
  }, 30_000);

  test("a worker that cannot serve stops the start-up while not every worker is ready, and not after", async () => {
    // Worker `failing` reports it cannot serve at once, and exits. The others become ready
    // when told to listen, and report a failure when asked for metrics.
    const standIn = (failing: string) => `
      const id = process.env.PORTICO_WORKER_ID;
      if (id === "${failing}") { process.send({ type: "fatal", message: "port taken" }); setTimeout(() => process.exit(1), 50); }
      else process.send({ type: "hello" });
      process.on("message", (m) => {
        if (m.type === "listen") process.send({ type: "ready", generation: 1 });
        if (m.type === "metrics") { process.send({ type: "fatal", message: "late" }); process.send({ type: "metrics", id: m.id, snapshot: null }); }
      });
      setInterval(() => {}, 1000);`;
    const fatal: string[] = [];
    const pool = createWorkerPool({ count: 2, argv: script(standIn("0")), env: process.env, log: silentLogger, onFatal: (m) => fatal.push(m), fullTable: () => null });
    await eventually(() => fatal.length > 0, 10_000);
    expect(fatal[0]).toBe("port taken");
    expect(pool.allReady).toBe(false);
    await pool.drain(1000);

    // Every worker ready: a later failure is that worker's own (it is restarted), not a failed start.
    const later: string[] = [];
    const healthy = createWorkerPool({ count: 2, argv: script(standIn("none")), env: process.env, log: silentLogger, onFatal: (m) => later.push(m), fullTable: () => null });
    pools.push(healthy);
    await eventually(() => healthy.allReady, 10_000);
    // Each reply follows that worker's "late" failure on the same channel: once the replies are
    // in, both failures have been handled.
    await healthy.metrics(5000);
    expect(later).toEqual([]);
  }, 30_000);

  test("metrics: a worker that does not answer in time is left out", async () => {
    const pool = createWorkerPool({ count: 1, argv: script(`process.on("message", () => {}); process.send({ type: "hello" }); setInterval(() => {}, 1000);`), env: process.env, log: silentLogger, onFatal: () => {}, fullTable: () => null });
    pools.push(pool);
    await eventually(() => pool.pids().length === 1, 5000);
    expect(await pool.metrics(100)).toEqual([]);
  });

  test("drain kills a worker that ignores it once the timeout passes, and restarts nothing", async () => {
    // The worker writes down each message it is sent, and ignores them.
    const got = join(dir, "drain-ignored");
    const log = captureLogger();
    const pool = createWorkerPool({ count: 1, argv: script(`process.on("message", (m) => require("node:fs").appendFileSync(${JSON.stringify(got)}, m.type + "\\n")); process.send({ type: "hello" }); setInterval(() => {}, 1000);`), env: process.env, log, onFatal: () => {}, fullTable: () => null });
    await eventually(() => pool.pids().length === 1, 5000);
    const [pid] = pool.pids();
    // Sent at once, or on its hello if that is not in yet.
    await pool.drain(300);
    expect(lines(got)).toContain("drain"); // it was told, and ignored it...
    expect(log.lines.map((l) => l.msg)).toContain("worker did not exit in time; killing it"); // ...so the timeout killed it
    expect(alive(pid!)).toBe(false);
    // The pool decides on a restart when it sees the exit (the slot empties), and says so in
    // the same step before arming the timer: once the slot is empty with no such line, nothing
    // will restart. That is the sequence point; no wait of the back-off's length is needed.
    await eventually(() => pool.pids().length === 0, 5_000, "the exit seen by the pool");
    expect(log.lines.map((l) => l.msg)).not.toContain("worker exited; restarting");
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
