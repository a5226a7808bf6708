// Every Portico metric (README.md, "Metrics"), defined in one place, and the functions that
// feed them. Labels only ever carry bounded values: ingress/service names from the route table,
// a fixed set of methods, status classes, and reasons/kinds filtered to short identifiers.
// Raw paths, hosts from requests and client addresses never become labels.

import type { SourceHooks } from "../kube/watch-parts.ts";
import type { AccessRecord } from "../log/access.ts";
import type { ProxyHooks } from "../proxy/types.ts";
import type { Counter, Gauge, Histogram, HistogramState, ScalarState } from "./metrics.ts";
import type { Registry } from "./registry.ts";

export interface CertificateExpiry {
  readonly host: string;
  /** Certificate notAfter: a Date or epoch milliseconds. */
  readonly notAfter: Date | number;
}

// Latency buckets in seconds: sub-millisecond proxy hops up to the 60 s response timeout.
export const REQUEST_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60] as const;
// Compiles take milliseconds for small clusters and seconds for tens of thousands of objects.
export const COMPILE_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;

// RFC 9110 §9 methods (+ PATCH, RFC 5789); anything else, including lower case (methods are
// case-sensitive, RFC 9110 §9.1), is counted as OTHER so a client cannot mint label values.
const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"]);
/** Each counted method's slot in the request-series cache (OTHER takes the slot after them). */
const METHOD_SLOTS = new Map([...METHODS].map((m, i) => [m, i] as const));
const WATCH_TYPES = new Set(["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"]);
const IDENT = /^[A-Za-z][A-Za-z0-9_.-]{0,62}$/;
/** Max distinct kinds / reasons kept per metric; they come from code, not from users. */
const SMALL_SET = 64;
/** TLS hosts exposed with an expiry: bounded so a cluster with many hosts cannot flood scrapes. */
export const MAX_TLS_HOSTS = 5_000;
/** Request label sets whose series are cached (instruments.ts requestSeries). */
const REQUEST_SERIES_CACHE = 4_096;

export function normalizeMethod(method: string): string {
  return METHODS.has(method) ? method : "OTHER";
}

export function statusClass(status: number): string {
  return Number.isInteger(status) && status >= 100 && status <= 599 ? `${Math.floor(status / 100)}xx` : "other";
}

/** A kind, reason or type from our own code: kept when it looks like an identifier, else "other". */
export function ident(s: string): string {
  return IDENT.test(s) ? s : "other";
}

function splitIngress(ref: string | null | undefined): [namespace: string, name: string] {
  if (!ref) return ["", ""];
  const i = ref.indexOf("/");
  return i < 0 ? ["", ref] : [ref.slice(0, i), ref.slice(i + 1)];
}

function createMetrics(r: Registry) {
  const ing = ["ingress", "namespace"];
  return {
    requests: r.counter({ name: "portico_requests_total", help: "Requests answered, by Ingress, backend service, method and status class.", labelNames: ["ingress", "namespace", "service", "method", "status_class"] }),
    requestDuration: r.histogram({ name: "portico_request_duration_seconds", help: "Time from request received to response complete, by Ingress.", labelNames: ing, buckets: REQUEST_BUCKETS }),
    upstreamDuration: r.histogram({ name: "portico_upstream_duration_seconds", help: "Time from sending upstream to upstream response headers, by Ingress.", labelNames: ing, buckets: REQUEST_BUCKETS }),
    requestBytes: r.counter({ name: "portico_request_bytes_total", help: "Request body bytes received from clients, by Ingress.", labelNames: ing }),
    responseBytes: r.counter({ name: "portico_response_bytes_total", help: "Response body bytes sent to clients, by Ingress.", labelNames: ing }),
    activeConnections: r.gauge({ name: "portico_active_connections", help: "Client connections (requests in flight) currently open on the traffic listeners." }),
    websocketSessions: r.gauge({ name: "portico_websocket_sessions", help: "WebSocket sessions currently proxied." }),
    requestsByProtocol: r.counter({ name: "portico_requests_by_protocol_total", help: "Requests answered, by client protocol (h1 or h2).", labelNames: ["protocol"], maxSeries: SMALL_SET }),
    grpcRequests: r.counter({ name: "portico_grpc_requests_total", help: "gRPC calls answered, by Ingress, backend service and the grpc-status the client got.", labelNames: ["ingress", "namespace", "service", "grpc_status"] }),
    http2Abuse: r.counter({ name: "portico_http2_connections_closed_total", help: "HTTP/2 client connections closed for abuse (GOAWAY ENHANCE_YOUR_CALM), by reason.", labelNames: ["reason"], maxSeries: SMALL_SET }),
    upstreamErrors: r.counter({ name: "portico_upstream_errors_total", help: "Failed upstream attempts, by reason.", labelNames: ["reason"], maxSeries: SMALL_SET }),
    upstreamRetries: r.counter({ name: "portico_upstream_retries_total", help: "Upstream attempts retried on another endpoint, by reason.", labelNames: ["reason"], maxSeries: SMALL_SET }),
    compileDuration: r.histogram({ name: "portico_config_compile_duration_seconds", help: "Time to compile a snapshot into a route table.", buckets: COMPILE_BUCKETS }),
    tableGeneration: r.gauge({ name: "portico_config_table_generation", help: "Generation of the live route table (increments on each applied change).", merge: "max" }),
    lastApply: r.gauge({ name: "portico_config_last_apply_timestamp_seconds", help: "Unix time of the last successful route table apply.", merge: "max" }),
    objects: r.gauge({ name: "portico_objects", help: "Objects in the store, by kind.", labelNames: ["kind"], maxSeries: SMALL_SET, merge: "max" }),
    diagnostics: r.gauge({ name: "portico_diagnostics", help: "Current diagnostics (invalid files and objects from the sources, and the last compile), by reason.", labelNames: ["reason"], maxSeries: SMALL_SET, merge: "max" }),
    ingressCompat: r.gauge({ name: "portico_ingress_compat", help: "Served Ingresses by what moving them from ingress-nginx changes (portico migrate's status).", labelNames: ["status"], maxSeries: SMALL_SET, merge: "max" }),
    watchEvents: r.counter({ name: "portico_watch_events_total", help: "Watch events received, by kind and event type.", labelNames: ["kind", "type"], maxSeries: SMALL_SET * 8 }),
    watchRestarts: r.counter({ name: "portico_watch_restarts_total", help: "Watch streams restarted, by kind.", labelNames: ["kind"], maxSeries: SMALL_SET }),
    watchRelists: r.counter({ name: "portico_watch_relists_total", help: "Full relists (initial, or after 410 Gone), by kind.", labelNames: ["kind"], maxSeries: SMALL_SET }),
    watchErrors: r.counter({ name: "portico_watch_errors_total", help: "Watch or list errors, by kind.", labelNames: ["kind"], maxSeries: SMALL_SET }),
    watchMalformed: r.counter({ name: "portico_watch_malformed_total", help: "Watch lines that could not be decoded (bad JSON, wrong shape), by kind.", labelNames: ["kind"], maxSeries: SMALL_SET }),
    watchInvalid: r.counter({ name: "portico_watch_invalid_total", help: "Objects that failed schema validation and were skipped, by kind.", labelNames: ["kind"], maxSeries: SMALL_SET }),
    tlsExpiry: r.gauge({ name: "portico_tls_certificate_expiry_timestamp_seconds", help: "Unix time at which the certificate served for a TLS host expires.", labelNames: ["host"], maxSeries: MAX_TLS_HOSTS, merge: "min" }),
    tlsRotations: r.counter({ name: "portico_tls_rotations_total", help: "TLS listener rotations (certificate set changed)." }),
    leader: r.gauge({ name: "portico_leader", help: "1 when this replica holds the status-writer lease, else 0.", merge: "max" }),
    buildInfo: r.gauge({ name: "portico_build_info", help: "Always 1; the version label says which build runs.", labelNames: ["version"], maxSeries: 4, merge: "max" }),
    passwordChecksActive: r.gauge({ name: "portico_basic_auth_checks_active", help: "Basic-auth password checks with rounds (bcrypt, crypt) running now." }),
    passwordChecksPeak: r.gauge({ name: "portico_basic_auth_checks_peak_per_route", help: "The most password checks with rounds one route has run at once since start.", merge: "max" }),
    passwordChecksBusy: r.counter({ name: "portico_basic_auth_busy_total", help: "Requests answered 503 because their route's password checks and waiting places were all taken." }),
    passwordChecksRemembered: r.counter({ name: "portico_basic_auth_remembered_total", help: "Basic-auth logins let through from the cache of successful ones, without hashing." }),
    accessLogDropped: r.counter({ name: "portico_access_log_dropped_total", help: "Access log lines dropped because the sink was slow or closed." }),
  } satisfies Record<string, Counter | Gauge | Histogram>;
}

export interface Instruments {
  readonly registry: Registry;
  /** Per request, from the proxy's access record. */
  observeRequest(rec: AccessRecord): void;
  websocketOpened(): void;
  websocketClosed(): void;
  /** An HTTP/2 connection closed for abuse (http2/limits.ts): "rapid-reset". */
  http2Abuse(reason: string): void;
  upstreamError(reason: string): void;
  upstreamRetry(reason: string): void;
  /** After each compile. */
  observeCompile(durationMs: number): void;
  observeApply(generation: number, atMs: number): void;
  setObjects(counts: Readonly<Record<string, number>>): void;
  setDiagnostics(diagnostics: Iterable<{ readonly reason: string }>): void;
  /** Served Ingresses by migration status (compile/migrate.ts compatCounts), after each compile. */
  setIngressCompat(counts: Readonly<Record<string, number>>): void;
  /** The kube list+watch loop's hooks. */
  readonly watch: Required<SourceHooks>;
  /**
   * The proxy's hooks: every finished request is observed (then handed to `onRecord`, e.g. the
   * access log), retries/errors counted by reason, websockets tracked.
   */
  proxyHooks(onRecord?: (r: AccessRecord) => void): Required<ProxyHooks>;
  setCertificates(certs: Iterable<CertificateExpiry>): void;
  tlsRotated(): void;
  setLeader(leader: boolean): void;
  /** Report a growing drop count (e.g. the access log's `dropped`) into the counter at scrape time. */
  trackAccessLogDrops(read: () => number): void;
  /** Read the connections open on the traffic listeners at scrape time (summed over every caller). */
  trackActiveConnections(read: () => number): void;
  /** Read the basic-auth password checks (kinds/basic-auth.ts PASSWORD_CHECKS) at scrape time. */
  trackPasswordChecks(read: () => PasswordCheckCounts): void;
}

export interface PasswordCheckCounts {
  readonly active: number;
  readonly peakPerRoute: number;
  readonly busy: number;
  readonly remembered: number;
}

export function createInstruments(registry: Registry, opts: { readonly version: string }): Instruments {
  const m = createMetrics(registry);
  m.buildInfo.set([opts.version], 1);
  m.leader.set([], 0);
  m.websocketSessions.set([], 0);
  // Read at scrape time: 0 in a process that serves no traffic (the primary of --workers N).
  const connectionReaders: (() => number)[] = [];
  registry.onCollect(() => m.activeConnections.set([], connectionReaders.reduce((n, read) => n + read(), 0)));

  // The series one request updates, cached by the request's label values: building five label
  // keys and looking each up per request was ~5% of a small proxied request (measured with bench/).
  // Ingress and Service ids are Kubernetes names (never NUL), method and class are normalised,
  // so the joined key is unambiguous. A forgotten series (epoch) or a full cache starts afresh.
  interface RequestSeries {
    readonly epoch: number;
    readonly ing: readonly string[];
    readonly requests: ScalarState;
    readonly requestDuration: HistogramState;
    upstreamDuration: HistogramState | undefined;
    requestBytes: ScalarState | undefined;
    responseBytes: ScalarState | undefined;
  }
  // Looked up by nested maps on the route's own strings and an array slot for method × status
  // class, so a request builds no key string (the joined key was 3-4% of a small proxied
  // request in a CPU profile, docs/design.md "Performance notes").
  const cache = new Map<string, Map<string, (RequestSeries | undefined)[]>>();
  let cached = 0;
  const slotsPerService = (METHOD_SLOTS.size + 1) * 6;
  const epoch = () => m.requests.epoch + m.requestDuration.epoch + m.upstreamDuration.epoch + m.requestBytes.epoch + m.responseBytes.epoch;
  function requestSeries(rec: AccessRecord): RequestSeries | null {
    const ingress = rec.ingress ?? "";
    const service = rec.service ?? "";
    const st = rec.status;
    const cls = Number.isInteger(st) && st >= 100 && st <= 599 ? Math.floor(st / 100) : 0;
    const slot = (METHOD_SLOTS.get(rec.method) ?? METHOD_SLOTS.size) * 6 + cls;
    const now = epoch();
    let byService = cache.get(ingress);
    let slots = byService?.get(service);
    const hit = slots?.[slot];
    if (hit !== undefined && hit.epoch === now) return hit;
    const method = normalizeMethod(rec.method);
    const [namespace, name] = splitIngress(rec.ingress);
    const ing = Object.freeze([name, namespace]);
    const requests = m.requests.seriesFor([name, namespace, service, method, statusClass(st)]);
    const requestDuration = m.requestDuration.seriesFor(ing);
    if (!requests || !requestDuration) return null;
    if (cached >= REQUEST_SERIES_CACHE) {
      cache.clear();
      cached = 0;
      byService = undefined;
      slots = undefined;
    }
    if (byService === undefined) cache.set(ingress, (byService = new Map()));
    if (slots === undefined) byService.set(service, (slots = new Array(slotsPerService)));
    const s: RequestSeries = { epoch: now, ing, requests, requestDuration, upstreamDuration: undefined, requestBytes: undefined, responseBytes: undefined };
    if (slots[slot] === undefined) cached++;
    slots[slot] = s;
    return s;
  }

  // The protocol series, cached like the request series (a label array and a key per request
  // showed in the small-body profile).
  const byProtocol = new Map<string, { epoch: number; series: ScalarState }>();
  const countProtocol = (protocol: string) => {
    const now = m.requestsByProtocol.epoch;
    let hit = byProtocol.get(protocol);
    if (hit === undefined || hit.epoch !== now) {
      const series = m.requestsByProtocol.seriesFor([protocol]);
      if (series === undefined) return m.requestsByProtocol.inc([protocol]);
      byProtocol.set(protocol, (hit = { epoch: now, series }));
    }
    m.requestsByProtocol.incSeries(hit.series);
  };

  let passwordReader: (() => PasswordCheckCounts) | null = null;
  let passwordSeen = { busy: 0, remembered: 0 };

  const inst: Instruments = {
    registry,
    observeRequest(rec) {
      countProtocol(rec.protocol);
      if (rec.grpcStatus !== null) {
        const [namespace, name] = splitIngress(rec.ingress);
        m.grpcRequests.inc([name, namespace, rec.service ?? "", String(rec.grpcStatus)]);
      }
      const s = requestSeries(rec);
      if (s === null) {
        // A bound refused a series: the slow path counts what still fits (and the overflow).
        const [namespace, name] = splitIngress(rec.ingress);
        m.requests.inc([name, namespace, rec.service ?? "", normalizeMethod(rec.method), statusClass(rec.status)]);
        const ing = [name, namespace];
        if (Number.isFinite(rec.durationMs)) m.requestDuration.observe(ing, rec.durationMs / 1000);
        if (rec.upstreamMs != null && Number.isFinite(rec.upstreamMs)) m.upstreamDuration.observe(ing, rec.upstreamMs / 1000);
        if (rec.bytesIn > 0) m.requestBytes.inc(ing, rec.bytesIn);
        if (rec.bytesOut > 0) m.responseBytes.inc(ing, rec.bytesOut);
        return;
      }
      m.requests.incSeries(s.requests);
      if (Number.isFinite(rec.durationMs)) m.requestDuration.observeSeries(s.requestDuration, rec.durationMs / 1000);
      // The others appear only once they have something to say (as without the cache).
      if (rec.upstreamMs != null && Number.isFinite(rec.upstreamMs)) {
        const u = (s.upstreamDuration ??= m.upstreamDuration.seriesFor(s.ing));
        if (u) m.upstreamDuration.observeSeries(u, rec.upstreamMs / 1000);
      }
      if (rec.bytesIn > 0) {
        const c = (s.requestBytes ??= m.requestBytes.seriesFor(s.ing));
        if (c) m.requestBytes.incSeries(c, rec.bytesIn);
      }
      if (rec.bytesOut > 0) {
        const c = (s.responseBytes ??= m.responseBytes.seriesFor(s.ing));
        if (c) m.responseBytes.incSeries(c, rec.bytesOut);
      }
    },
    websocketOpened: () => m.websocketSessions.inc(),
    http2Abuse: (reason) => m.http2Abuse.inc([ident(reason)]),
    websocketClosed: () => m.websocketSessions.dec(),
    upstreamError: (reason) => m.upstreamErrors.inc([ident(reason)]),
    upstreamRetry: (reason) => m.upstreamRetries.inc([ident(reason)]),
    observeCompile: (ms) => m.compileDuration.observe([], ms / 1000),
    observeApply(generation, atMs) {
      m.tableGeneration.set([], generation);
      m.lastApply.set([], atMs / 1000);
    },
    setObjects(counts) {
      m.objects.reset();
      for (const [kind, n] of Object.entries(counts)) m.objects.set([ident(kind)], n);
    },
    setDiagnostics(diagnostics) {
      // A gauge of the current count: reasons that went away drop back out of the exposition.
      const by = new Map<string, number>();
      for (const d of diagnostics) by.set(ident(d.reason), (by.get(ident(d.reason)) ?? 0) + 1);
      m.diagnostics.reset();
      for (const [reason, n] of by) m.diagnostics.set([reason], n);
    },
    setIngressCompat(counts) {
      // Every status is exposed, zeros included, so a dashboard can divide by their sum.
      for (const [status, n] of Object.entries(counts)) m.ingressCompat.set([ident(status)], n);
    },
    watch: {
      onEvent: (kind, type) => m.watchEvents.inc([ident(kind), WATCH_TYPES.has(type) ? type : "OTHER"]),
      onRestart: (kind) => m.watchRestarts.inc([ident(kind)]),
      onRelist: (kind) => m.watchRelists.inc([ident(kind)]),
      onError: (kind) => m.watchErrors.inc([ident(kind)]),
      onMalformed: (kind) => m.watchMalformed.inc([ident(kind)]),
      onInvalid: (kind) => m.watchInvalid.inc([ident(kind)]),
    },
    proxyHooks(onRecord) {
      return {
        onRequestDone: (r) => {
          inst.observeRequest(r);
          onRecord?.(r);
        },
        // Labelled by reason only: backend ids are already on portico_requests_total.
        onUpstreamRetry: (_backend, reason) => inst.upstreamRetry(reason),
        onUpstreamError: (_backend, reason) => inst.upstreamError(reason),
        onWebsocket: (delta) => (delta > 0 ? inst.websocketOpened() : inst.websocketClosed()),
      };
    },
    setCertificates(certs) {
      m.tlsExpiry.reset();
      for (const c of certs) {
        const ms = typeof c.notAfter === "number" ? c.notAfter : c.notAfter.getTime();
        if (Number.isFinite(ms)) m.tlsExpiry.set([c.host.toLowerCase()], Math.floor(ms / 1000));
      }
    },
    tlsRotated: () => m.tlsRotations.inc(),
    setLeader: (leader) => m.leader.set([], leader ? 1 : 0),
    trackAccessLogDrops(read) {
      let seen = 0;
      registry.onCollect(() => {
        const now = read();
        if (now > seen) m.accessLogDropped.inc([], now - seen);
        seen = Math.max(seen, now);
      });
    },
    trackActiveConnections: (read) => void connectionReaders.push(read),
    trackPasswordChecks(read) {
      // The counts are the process's (one set of routes): a second reader replaces the first.
      if (passwordReader === null) {
        m.passwordChecksActive.set([], 0);
        m.passwordChecksPeak.set([], 0);
        registry.onCollect(() => {
          const now = passwordReader?.();
          if (now === undefined) return;
          m.passwordChecksActive.set([], now.active);
          m.passwordChecksPeak.set([], now.peakPerRoute);
          if (now.busy > passwordSeen.busy) m.passwordChecksBusy.inc([], now.busy - passwordSeen.busy);
          if (now.remembered > passwordSeen.remembered) m.passwordChecksRemembered.inc([], now.remembered - passwordSeen.remembered);
          passwordSeen = { busy: Math.max(passwordSeen.busy, now.busy), remembered: Math.max(passwordSeen.remembered, now.remembered) };
        });
      }
      passwordReader = read;
    },
  };
  return inst;
}
