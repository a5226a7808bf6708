// Leader election on a coordination.k8s.io/v1 Lease, following client-go's leaderelection:
// a lease is expired when its record has not changed for leaseDuration *as observed locally*
// (no trust in the holder's clock); writes carry the read resourceVersion, so two candidates
// racing get one 409 Conflict and re-read; the leader renews every renewInterval and steps
// down when it could not renew for renewDeadline; on shutdown it releases the lease
// (holderIdentity "" and leaseDurationSeconds 1), so a successor takes over at once.
// All replicas serve traffic; only the leader writes Ingress status and Events.
// A candidate whose rounds fail (API server down) backs off as the watches do (from the retry
// interval, doubling to 30 s, jittered) and logs the first failure, a summary at most once per
// summaryIntervalMs, and the recovery: not a line every retry interval for as long as it lasts.
import { existsSync, readFileSync } from "node:fs";
import { hostname } from "node:os";
import type { Config } from "../config/types.ts";
import { apiError, type KubeClient } from "./client.ts";
import { SERVICE_ACCOUNT_DIR } from "./kubeconfig.ts";
import type { Logger } from "../log/logger.ts";
import { assertDeclared } from "./permissions.ts";
import { backoffDelay, sleep } from "./backoff.ts";

export interface LeaderTimings {
  leaseDurationMs: number;
  renewIntervalMs: number;
  /** The leader steps down when its last successful renewal is older than this. */
  renewDeadlineMs: number;
  retryIntervalMs: number;
  /** Longest wait between failed rounds of a candidate (back-off from retryIntervalMs). */
  backoffMaxMs: number;
  /** While rounds keep failing, one summary line at most this often. */
  summaryIntervalMs: number;
  random(): number;
  now(): number;
}

export const DEFAULT_LEADER_TIMINGS: LeaderTimings = {
  leaseDurationMs: 15_000,
  renewIntervalMs: 5_000,
  renewDeadlineMs: 10_000,
  retryIntervalMs: 2_000,
  backoffMaxMs: 30_000,
  summaryIntervalMs: 60_000,
  random: Math.random,
  now: () => Date.now(),
};

export interface LeaderElectorOptions {
  client: KubeClient;
  config: Pick<Config, "electionId" | "electionNamespace">;
  log: Logger;
  onLeader(isLeader: boolean): void;
  identity?: string;
  timings?: Partial<LeaderTimings>;
  /** Test hook for the namespace file. */
  serviceAccountDir?: string;
}

export interface LeaderElector {
  readonly identity: string;
  readonly namespace: string;
  isLeader(): boolean;
  start(): void;
  /** Stop campaigning; release the lease when we hold it (unless release is false). */
  stop(release?: boolean): Promise<void>;
}

interface LeaseSpec {
  holderIdentity?: string | null;
  leaseDurationSeconds?: number | null;
  acquireTime?: string | null;
  renewTime?: string | null;
  leaseTransitions?: number | null;
}
interface Lease {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; resourceVersion?: string };
  spec?: LeaseSpec;
}

/** --election-namespace, else POD_NAMESPACE, else the service-account namespace file, else "default". */
export function electionNamespace(config: Pick<Config, "electionNamespace">, env: Record<string, string | undefined> = process.env, saDir = SERVICE_ACCOUNT_DIR): string {
  if (config.electionNamespace) return config.electionNamespace;
  if (env.POD_NAMESPACE) return env.POD_NAMESPACE;
  const f = `${saDir}/namespace`;
  if (existsSync(f)) {
    const ns = readFileSync(f, "utf8").trim();
    if (ns) return ns;
  }
  return "default";
}

/** MicroTime: RFC 3339 with microseconds, as the Lease API stores it. */
const microTime = (ms: number): string => new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");

export function createLeaderElector(o: LeaderElectorOptions): LeaderElector {
  const t: LeaderTimings = { ...DEFAULT_LEADER_TIMINGS, ...o.timings };
  for (const verb of ["get", "create", "update"]) assertDeclared("coordination.k8s.io", "leases", verb);
  const identity = o.identity ?? process.env.POD_NAME ?? `${hostname()}_${process.pid}`;
  const namespace = electionNamespace(o.config, process.env, o.serviceAccountDir);
  const name = o.config.electionId;
  const base = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/leases`;
  const path = `${base}/${encodeURIComponent(name)}`;
  const { client, log } = o;
  const stopper = new AbortController();
  let leader = false;
  let lastRenew = 0;
  let observed: { key: string; at: number } | null = null;
  let loop: Promise<void> | null = null;
  let current: Lease | null = null;

  const setLeader = (v: boolean) => {
    if (v === leader) return;
    leader = v;
    log.info(v ? "became leader" : "lost leadership", { identity, lease: `${namespace}/${name}` });
    o.onLeader(v);
  };

  const spec = (prev: LeaseSpec | undefined, now: number, leaseSeconds: number): LeaseSpec => {
    const same = prev?.holderIdentity === identity;
    return {
      holderIdentity: identity,
      leaseDurationSeconds: leaseSeconds,
      acquireTime: same && prev?.acquireTime ? prev.acquireTime : microTime(now),
      renewTime: microTime(now),
      leaseTransitions: (prev?.leaseTransitions ?? 0) + (same || !prev ? 0 : 1),
    };
  };

  /** One round of client-go's tryAcquireOrRenew. True when we hold the lease afterwards. */
  async function tryAcquireOrRenew(): Promise<boolean> {
    const now = t.now();
    const leaseSeconds = Math.max(1, Math.round(t.leaseDurationMs / 1000));
    const signal = AbortSignal.any([stopper.signal, AbortSignal.timeout(Math.max(1000, t.renewIntervalMs))]);
    const got = await client.request("GET", path, { signal });
    if (got.status === 404) {
      await got.body?.cancel();
      const body: Lease = { apiVersion: "coordination.k8s.io/v1", kind: "Lease", metadata: { name, namespace }, spec: spec(undefined, now, leaseSeconds) };
      const res = await client.request("POST", base, { body, signal });
      if (res.status === 409) return void (await res.body?.cancel()), false; // someone else created it first
      if (!res.ok) throw await apiError(res, "POST", base, client.server);
      current = (await res.json()) as Lease;
      return true;
    }
    if (!got.ok) throw await apiError(got, "GET", path, client.server);
    const lease = (await got.json()) as Lease;
    const s = lease.spec ?? {};
    const key = `${s.holderIdentity ?? ""}|${s.renewTime ?? ""}|${lease.metadata.resourceVersion ?? ""}`;
    if (observed?.key !== key) observed = { key, at: now };
    const holder = s.holderIdentity ?? "";
    const durationMs = (s.leaseDurationSeconds ?? leaseSeconds) * 1000;
    if (holder && holder !== identity && now < observed.at + durationMs) return false; // held by a live leader
    const body: Lease = { ...lease, spec: spec(s, now, leaseSeconds) };
    const res = await client.request("PUT", path, { body, signal });
    if (res.status === 409) return void (await res.body?.cancel()), false; // lost a race: re-read next round
    if (!res.ok) throw await apiError(res, "PUT", path, client.server);
    current = (await res.json()) as Lease;
    return true;
  }

  /** Failed rounds in a row, since when, and when the last line about them was logged. */
  let failing: { count: number; since: number; loggedAt: number; lastErr: string } | null = null;
  const lease = `${namespace}/${name}`;

  function failed(err: string, retryInMs: number): void {
    const now = t.now();
    if (failing === null) {
      failing = { count: 1, since: now, loggedAt: now, lastErr: err };
      log.warn("leader election failing; retrying with back-off", { lease, err, retryInMs: Math.round(retryInMs) });
      return;
    }
    failing.count++;
    const changed = err !== failing.lastErr;
    failing.lastErr = err;
    if (!changed && now - failing.loggedAt < t.summaryIntervalMs) {
      log.debug("leader election round failed", { lease, err, retryInMs: Math.round(retryInMs) });
      return;
    }
    failing.loggedAt = now;
    log.warn("leader election still failing", { lease, err, failedRounds: failing.count, failingForS: Math.round((now - failing.since) / 1000), retryInMs: Math.round(retryInMs) });
  }

  function succeeded(): void {
    if (failing === null) return;
    log.info("leader election recovered", { lease, failedRounds: failing.count, failedForS: Math.round((t.now() - failing.since) / 1000) });
    failing = null;
  }

  async function run(): Promise<void> {
    while (!stopper.signal.aborted) {
      let renewed = false;
      let error: string | null = null;
      try {
        if ((renewed = await tryAcquireOrRenew())) {
          lastRenew = t.now();
          setLeader(true);
        } else if (leader) setLeader(false);
      } catch (e) {
        if (stopper.signal.aborted) break;
        error = e instanceof Error ? e.message : String(e);
      }
      if (leader && t.now() - lastRenew > t.renewDeadlineMs) setLeader(false);
      let delay: number;
      if (error === null) {
        succeeded();
        delay = leader && renewed ? t.renewIntervalMs : t.retryIntervalMs;
      } else {
        // A leader whose renewal failed retries at the retry interval, as client-go does, to
        // renew within renewDeadline; a candidate backs off (nothing is lost by waiting: the
        // lease cannot be taken while the API server does not answer).
        delay = leader ? t.retryIntervalMs : backoffDelay(failing?.count ?? 0, { backoffInitialMs: t.retryIntervalMs, backoffMaxMs: t.backoffMaxMs, random: t.random });
        failed(error, delay);
      }
      await sleep(delay, stopper.signal);
    }
  }

  return {
    identity,
    namespace,
    isLeader: () => leader,
    start() {
      loop ??= run();
    },
    async stop(release = true) {
      stopper.abort();
      await loop;
      if (!leader || !release || !current) return void setLeader(false);
      // Release: an empty holder lets the next candidate acquire without waiting for expiry.
      // Stopping aborts a renewal in flight, which the API server may still have applied: our
      // copy is then one resourceVersion behind and the release gets 409 Conflict. Re-read and
      // release again while the lease is still ours (never a lease another holder took).
      try {
        let lease: Lease | null = current;
        for (let attempt = 0; lease !== null && attempt < 3; attempt++) {
          const body: Lease = { ...lease, spec: { ...lease.spec, holderIdentity: "", leaseDurationSeconds: 1, renewTime: microTime(t.now()) } };
          const res = await client.request("PUT", path, { body, signal: AbortSignal.timeout(2000) });
          await res.body?.cancel();
          if (res.ok) {
            log.info("released leadership", { lease: `${namespace}/${name}` });
            break;
          }
          if (res.status !== 409) break;
          const got = await client.request("GET", path, { signal: AbortSignal.timeout(2000) });
          if (!got.ok) break;
          const fresh = (await got.json()) as Lease;
          lease = fresh.spec?.holderIdentity === identity ? fresh : null;
        }
      } catch (e) {
        log.warn("could not release the lease", { err: e instanceof Error ? e.message : String(e) });
      }
      setLeader(false);
    },
  };
}
