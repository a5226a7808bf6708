// Diagnostics about Ingresses become events.k8s.io/v1 Events on the Ingress, so
// `kubectl describe ingress` says what is wrong; those about Gateway API objects (a route
// parent not accepted, a reference not resolved, a listener not programmed) become Events on
// the Gateway, HTTPRoute or GRPCRoute, so `kubectl describe httproute` says it beside the
// status (docs/design.md "Gateway API"). The compiler reports the same diagnostic
// on every compile, so: the first sighting creates an Event; while it persists, at most one
// PATCH per seriesInterval bumps `series.count` (the events.k8s.io series mechanism, as
// client-go's EventSeries does); a diagnostic unseen for forgetAfter starts afresh. Writes
// are rate-limited (token bucket, maxPerMinute) and made only by the leader.
import type { Config } from "../config/types.ts";
import { diagnosticKey, type Diagnostic } from "../model/diagnostic.ts";
import { apiError, type KubeClient } from "./client.ts";
import type { Logger } from "../log/logger.ts";
import { assertDeclared } from "./permissions.ts";

export interface EventTimings {
  seriesIntervalMs: number;
  forgetAfterMs: number;
  maxPerMinute: number;
  now(): number;
}

export const DEFAULT_EVENT_TIMINGS: EventTimings = { seriesIntervalMs: 5 * 60_000, forgetAfterMs: 30 * 60_000, maxPerMinute: 30, now: () => Date.now() };

export interface EventRecorderOptions {
  client: KubeClient;
  /** reportingController: --controller-name, or for a Gateway API object --gateway-controller-name (the GatewayClass's controllerName). */
  config: Pick<Config, "controllerName"> & Partial<Pick<Config, "gatewayControllerName">>;
  log: Logger;
  isLeader(): boolean;
  /** reportingInstance: the pod name / elector identity. */
  instance: string;
  /** uid of the object (an Ingress, Gateway, HTTPRoute or GRPCRoute), when the store knows it (makes `regarding` exact). */
  uidOf?(namespace: string, name: string, kind: string): string | undefined;
  timings?: Partial<EventTimings>;
  maxTracked?: number;
}

export interface EventStats {
  created: number;
  patched: number;
  deduplicated: number;
  rateLimited: number;
  failed: number;
}

export interface EventRecorder {
  /** The diagnostics of one compile (all of them; non-Ingress ones are ignored). */
  report(diagnostics: readonly Diagnostic[]): void;
  /** Wait for the writes queued so far. */
  flush(): Promise<void>;
  readonly stats: Readonly<EventStats>;
}

interface Tracked {
  name: string;
  namespace: string;
  count: number;
  lastSentAt: number;
  lastSeenAt: number;
}

const microTime = (ms: number): string => new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
// events.k8s.io/v1 validation: note at most 1 kB; reason at most 128 characters.
const NOTE_MAX = 1024;

/**
 * The kinds Events are written about, with their apiVersion: Ingresses, ingress-nginx's
 * ConfigMap (--nginx-configmap), and the Gateway API objects of our controller whose problems
 * compile/gateway/table.ts reports (Gateway: ListenerNotProgrammed; HTTPRoute, GRPCRoute:
 * RouteNotAccepted, RouteRefsNotResolved). GatewayClass has no namespace and no diagnostic.
 */
const REGARDING: Readonly<Record<string, string>> = {
  Ingress: "networking.k8s.io/v1",
  ConfigMap: "v1",
  Gateway: "gateway.networking.k8s.io/v1",
  HTTPRoute: "gateway.networking.k8s.io/v1",
  GRPCRoute: "gateway.networking.k8s.io/v1",
};

/** metadata.name of an Event: a DNS-1123 subdomain (kube-apiserver's NameIsDNSSubdomain), 253 characters at most. */
const NAME_MAX = 253;
const DNS_SUBDOMAIN = /^[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*$/;

/**
 * `<object>.<suffix>`, always a name the API server accepts: an object name may itself be 253
 * characters, so the object part is cut to leave room for the dot and the suffix (which keeps
 * the name unique), and what the cut leaves at its end that cannot end a DNS label (`-`, `.`)
 * goes too. client-go's recorder (tools/record/util GenerateEventName) checks the same
 * NameIsDNSSubdomain rule but replaces an invalid name by a random UUID; cutting keeps the
 * object's name readable in `kubectl get events`. A name still invalid (an object name the API
 * server would not have accepted) gets a UUID, as there.
 */
export function eventName(object: string, suffix: string): string {
  const head = object.slice(0, Math.max(0, NAME_MAX - suffix.length - 1)).replace(/[-.]+$/, "");
  const name = head === "" ? suffix : `${head}.${suffix}`;
  return name.length <= NAME_MAX && DNS_SUBDOMAIN.test(name) ? name : crypto.randomUUID();
}

/** The Gateway API kinds, whose Events name the Gateway API controller. */
const GATEWAY_API_KINDS: ReadonlySet<string> = new Set(["Gateway", "HTTPRoute", "GRPCRoute"]);

export function createEventRecorder(o: EventRecorderOptions): EventRecorder {
  const t: EventTimings = { ...DEFAULT_EVENT_TIMINGS, ...o.timings };
  assertDeclared("events.k8s.io", "events", "create");
  assertDeclared("events.k8s.io", "events", "patch");
  const { client, log } = o;
  const tracked = new Map<string, Tracked>();
  const stats: EventStats = { created: 0, patched: 0, deduplicated: 0, rateLimited: 0, failed: 0 };
  let tokens = t.maxPerMinute;
  let refilledAt = t.now();
  let chain: Promise<void> = Promise.resolve();
  let limitedLogged = false;

  const take = (): boolean => {
    const now = t.now();
    tokens = Math.min(t.maxPerMinute, tokens + ((now - refilledAt) * t.maxPerMinute) / 60_000);
    refilledAt = now;
    if (tokens < 1) return false;
    tokens -= 1;
    return true;
  };

  const base = (namespace: string) => `/apis/events.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/events`;

  async function create(d: Diagnostic, tr: Tracked, now: number): Promise<void> {
    const uid = d.kind === "ConfigMap" ? undefined : o.uidOf?.(d.namespace, d.name, d.kind);
    const controller = GATEWAY_API_KINDS.has(d.kind) ? (o.config.gatewayControllerName ?? o.config.controllerName) : o.config.controllerName;
    const body = {
      apiVersion: "events.k8s.io/v1",
      kind: "Event",
      metadata: { name: tr.name, namespace: d.namespace },
      eventTime: microTime(now),
      reportingController: controller,
      reportingInstance: o.instance,
      action: "Compile",
      reason: d.reason,
      note: d.message.slice(0, NOTE_MAX),
      type: "Warning",
      regarding: { apiVersion: REGARDING[d.kind], kind: d.kind, namespace: d.namespace, name: d.name, ...(uid ? { uid } : {}) },
    };
    const res = await client.request("POST", base(d.namespace), { body, signal: AbortSignal.timeout(10_000) });
    if (!res.ok) throw await apiError(res, "POST", base(d.namespace), client.server);
    await res.body?.cancel();
    stats.created++;
  }

  async function bump(d: Diagnostic, tr: Tracked, now: number): Promise<void> {
    const path = `${base(tr.namespace)}/${encodeURIComponent(tr.name)}`;
    const body = { series: { count: tr.count, lastObservedTime: microTime(now) } };
    const res = await client.request("PATCH", path, { body, contentType: "application/merge-patch+json", signal: AbortSignal.timeout(10_000) });
    if (res.status === 404) {
      // The API server expired the Event (default TTL 1 h): start a new one.
      await res.body?.cancel();
      tr.name = nameFor(d.name, now);
      tr.count = 1;
      return create(d, tr, now);
    }
    if (!res.ok) throw await apiError(res, "PATCH", path, client.server);
    await res.body?.cancel();
    stats.patched++;
  }

  // <object name>.<hex nanosecond-ish timestamp>, unique per Event, as client-go names them
  // (eventName above keeps it a valid name).
  let seq = 0;
  const nameFor = (obj: string, now: number) => eventName(obj, (now * 1000 + (seq++ % 1000)).toString(16));

  function enqueue(job: () => Promise<void>, d: Diagnostic): void {
    chain = chain.then(job).catch((e) => {
      stats.failed++;
      log.warn("could not write Event", { kind: d.kind, namespace: d.namespace, name: d.name, reason: d.reason, err: e instanceof Error ? e.message : String(e) });
    });
  }

  return {
    stats,
    flush: () => chain,
    report(diagnostics) {
      if (!o.isLeader()) return;
      const now = t.now();
      for (const d of diagnostics) {
        if (!Object.hasOwn(REGARDING, d.kind) || !d.namespace || !d.name) continue;
        const key = diagnosticKey(d);
        let tr = tracked.get(key);
        if (tr && now - tr.lastSeenAt > t.forgetAfterMs) {
          tracked.delete(key);
          tr = undefined;
        }
        if (tr && now - tr.lastSentAt < t.seriesIntervalMs) {
          tr.lastSeenAt = now;
          stats.deduplicated++;
          continue;
        }
        if (!take()) {
          stats.rateLimited++;
          if (!limitedLogged) log.warn("Event rate limit reached: some diagnostics are only logged", { maxPerMinute: t.maxPerMinute });
          limitedLogged = true;
          continue;
        }
        limitedLogged = false;
        if (!tr) {
          const fresh: Tracked = { name: nameFor(d.name, now), namespace: d.namespace, count: 1, lastSentAt: now, lastSeenAt: now };
          tracked.set(key, fresh);
          while (tracked.size > (o.maxTracked ?? 10_000)) tracked.delete(tracked.keys().next().value!);
          enqueue(() => create(d, fresh, now), d);
        } else {
          const cur = tr;
          cur.count++;
          cur.lastSentAt = now;
          cur.lastSeenAt = now;
          enqueue(() => bump(d, cur, now), d);
        }
      }
    },
  };
}
