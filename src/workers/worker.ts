// A data-plane worker process (docs/design.md, "Workers"): the same executable, started by the
// primary with PORTICO_WORKER_ID and an IPC channel. It parses the same flags, holds no source
// and compiles nothing: it receives the route table and the TLS entries from the primary,
// serves HTTP and HTTPS on the shared ports with serveTraffic (SO_REUSEPORT: the kernel spreads
// new connections over the workers), and answers metrics requests with its registry snapshot.
//
// It starts listening only once it has its first table and the primary's leave (one worker at
// a time binds first, serving/ports.ts), so a (re)starting worker never answers 404 for routes
// the others serve. When the primary says "drain", or the IPC channel
// closes (the primary died: no orphans), or a signal arrives (Ctrl-C reaches the whole
// process group), it drains like a single process does and exits 0.
import { createInstruments } from "../admin/instruments.ts";
import { Registry } from "../admin/registry.ts";
import { createLiveConfig, parseLiveValues } from "../config/live.ts";
import type { Config } from "../config/types.ts";
import { createLogger } from "../log/logger.ts";
import { serveTraffic, type PortSharing, type Serving } from "../serving/serve.ts";
import { TableHolder } from "../table/holder.ts";
import type { RouteTable } from "../table/types.ts";
import { applyDelta, decodeTable, type BackendRegistry, type TableProblem, type WireDelta, type WireTable } from "../table/wire.ts";
import type { TlsEntry } from "../tls/sni.ts";
import { VERSION } from "../version.ts";
import { createLineWriter } from "./line-writer.ts";
import { parseToWorker, type ToPrimary, type ToWorker } from "./protocol.ts";
import { mapSharedMemory } from "./shared-memory.ts";
import { useEwmaScores } from "../proxy/upstream/balancer.ts";
import { createAuthCache, layeredAuthCache, useAuthCache } from "../proxy/policies/caps.ts";
import { useProcessLimiter } from "../proxy/policies/limiter.ts";
import { openSharedState } from "../proxy/shared/state.ts";

export async function runWorker(config: Config, id: number): Promise<void> {
  const send = process.send?.bind(process);
  // Every line this process writes goes through one line-atomic writer (see line-writer.ts).
  const out = createLineWriter(1);
  const log = createLogger({
    level: config.logLevel,
    format: config.logFormat,
    write: (line) => void out.write(`${line}\n`),
  }).child({ worker: id });
  if (!send) {
    log.error("a worker needs the IPC channel of its primary; start portico without PORTICO_WORKER_ID");
    process.exit(2);
  }
  const tell = (m: ToPrimary) => {
    try {
      send(m);
    } catch {
      // The channel is gone: the disconnect handler below drains and exits.
    }
  };

  // Count limits, EWMA scores and cached auth answers in the pod's shared tables, before any
  // route is built or the balancer made (a route keeps what it was built with). Without them
  // this worker keeps its own, and says so.
  try {
    const mem = mapSharedMemory(process.env);
    if (mem === null) log.warn("no shared memory from the primary: this worker keeps limits, EWMA scores and auth answers on its own");
    else {
      const shared = openSharedState(mem, id);
      useProcessLimiter(shared.limiter);
      useEwmaScores(() => shared.ewma);
      // An answer too large for a shared slot is kept by this worker alone, as before.
      useAuthCache(() => layeredAuthCache(shared.authCache, createAuthCache()));
    }
  } catch (err) {
    log.error("cannot use the shared memory from the primary: this worker keeps limits, EWMA scores and auth answers on its own", { err });
  }

  const registry = new Registry();
  const inst = createInstruments(registry, { version: VERSION });
  // Requests served by this worker: lets an operator (and the tests) see the spread across
  // workers. One series per worker, so bounded by --workers.
  const served = registry.counter({ name: "portico_worker_requests_total", help: "Requests answered, by worker process.", labelNames: ["worker"], maxSeries: 256 });
  let requests = 0;
  let reported = 0;
  registry.onCollect(() => {
    served.inc([String(id)], requests - reported);
    reported = requests;
  });

  // Our per-request settings: the start-up values until the primary sends others (config/live.ts).
  const live = createLiveConfig(config);
  const holder = new TableHolder();
  // The backends of our table by id, kept as the primary's mirror of it is (table/wire.ts).
  const backends: BackendRegistry = new Map();
  let tls: { entries: readonly TlsEntry[]; fingerprint: string; ports: ReadonlyMap<number, { entries: readonly TlsEntry[]; fingerprint: string }> } | null = null;
  let ports: PortSharing | null = null;
  let serving: Serving | null = null;
  let stopping = false;
  let collected = false;

  /** Listen once we have a table, certificates and the primary's word (pool.ts, permit). */
  function listen(): void {
    if (serving || stopping || !tls || !ports || holder.generation === 0) return;
    try {
      serving = serveTraffic({
        config: live.config,
        log,
        inst,
        table: () => holder.current,
        tls,
        ports,
        // Spread the workers' subset windows (proxy/upstream/subset.ts) evenly over a large backend's endpoints.
        balancerSeed: id / Math.max(1, config.workers),
        accessWrite: (chunk) => out.write(chunk),
        onRequest: () => void requests++,
      });
    } catch (err) {
      stopping = true;
      log.error("worker cannot listen", { err });
      tell({ type: "fatal", message: String(err instanceof Error ? err.message : err).slice(0, 500) });
      void Promise.race([out.flush(), Bun.sleep(1000)]).then(() => process.exit(1));
      return;
    }
    log.info("listening", { ...serving.ports, bind: config.bind, pid: process.pid });
    tell({ type: "ready", generation: holder.generation });
  }

  function onMessage(m: ToWorker): void {
    switch (m.type) {
      case "settings": {
        const values = parseLiveValues(m.values);
        if (values === null) return void log.error("settings from the primary are unreadable; keeping the current ones");
        const changed = live.set(values);
        if (changed.length > 0) log.info("settings from the primary applied", { fields: changed });
        return;
      }
      case "tls":
        tls = { entries: m.entries, fingerprint: m.fingerprint, ports: new Map((m.ports ?? []).map((p) => [p.port, { entries: p.entries, fingerprint: p.fingerprint }])) };
        if (serving && !stopping) serving.setTls(m.entries, m.fingerprint, tls.ports);
        listen();
        return;
      case "listen":
        ports = m.first ? "first" : "join";
        listen();
        return;
      case "table":
      case "delta": {
        if (m.generation <= holder.generation) return; // an older table: never go back
        if (m.type === "delta" && m.base !== holder.generation) {
          // Not the table this delta was made from (we missed one, or could not read it).
          log.warn("route table change does not follow our table; asking for the whole table", { generation: m.generation, base: m.base, have: holder.generation });
          tell({ type: "resync" });
          return;
        }
        const t0 = performance.now();
        let table: RouteTable;
        // A host entry that cannot be built costs that host alone (table/wire.ts): it keeps the
        // entry we had, else answers as a host with no paths, and the line names it.
        const onProblem = (p: TableProblem) =>
          log.error("a host of the route table from the primary cannot be served; it keeps its previous routes, or none", {
            host: p.host,
            ingresses: p.ingresses,
            err: p.error,
            kept: p.kept,
            generation: m.generation,
          });
        const previous = holder.generation === 0 ? null : holder.current;
        try {
          table = m.type === "table"
            ? decodeTable(JSON.parse(m.json) as WireTable, backends, { onProblem, previous })
            : applyDelta(holder.current, JSON.parse(m.json) as WireDelta, backends, onProblem);
        } catch (err) {
          log.error("route table from the primary is unreadable; keeping the current one", { err, generation: m.generation, kind: m.type });
          // A delta: the whole table may still apply. A whole table: the primary's readiness
          // must not count this worker as serving it.
          tell(m.type === "delta" ? { type: "resync" } : { type: "rejected", generation: m.generation });
          return;
        }
        // The holder counts its own swaps; keep it equal to the primary's generation.
        while (holder.generation < m.generation - 1) holder.swap(holder.current);
        holder.swap(table);
        serving?.tableChanged();
        log.debug("route table applied", { generation: m.generation, kind: m.type, routes: table.routeCount, decodeMs: Math.round(performance.now() - t0) });
        if (serving) tell({ type: "applied", generation: m.generation });
        else listen();
        if (!collected && !stopping) {
          // The first table's message and its decoding leave ~20 MB of garbage at 10k Ingresses
          // (the 18 MB JSON string, the parsed wire objects) that an idle worker would keep
          // resident for a long time. Collect it once, after this handler has returned (the
          // message is still referenced here) and after "ready" went out: ~25 ms, once.
          collected = true;
          setTimeout(() => Bun.gc(true), 0);
        }
        return;
      }
      case "metrics":
        tell({ type: "metrics", id: m.id, snapshot: registry.toJSON() });
        return;
      case "drain":
        void shutdown("primary", m.delay !== false);
        return;
    }
  }

  async function shutdown(reason: string, delay = true): Promise<void> {
    if (stopping) return;
    stopping = true;
    log.info("worker shutting down", { reason });
    await serving?.shutdown({ delay });
    await Promise.race([out.flush(), Bun.sleep(1000)]);
    process.exit(0);
  }

  process.on("message", (raw: unknown) => {
    const m = parseToWorker(raw);
    if (m) onMessage(m);
    else log.warn("ignored a malformed message from the primary");
  });
  // The primary is gone (exited, killed): serve no longer than a drain, leave no orphan.
  process.on("disconnect", () => void shutdown("primary gone"));
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
  tell({ type: "hello" });
}
