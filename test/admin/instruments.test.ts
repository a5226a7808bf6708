import { describe, expect, test } from "bun:test";
import { Registry, OVERFLOW_METRIC } from "../../src/admin/registry.ts";
import { createInstruments, MAX_TLS_HOSTS, REQUEST_BUCKETS } from "../../src/admin/instruments.ts";
import type { AccessRecord } from "../../src/log/access.ts";
import { parseExposition, sampleValue, type Family } from "./expo-parser.ts";
import { accessRecord } from "./records.ts";

function rec(p: Partial<AccessRecord>): AccessRecord {
  return accessRecord({
    time: 0, requestId: "r", path: "/secret/path?token=1", bytesOut: 0, durationMs: 1, upstream: "10.0.0.1:8080",
    upstreamMs: 1, ingress: "ns/web", service: "ns/web:80", ...p,
  });
}

const MIX: AccessRecord[] = [
  rec({ status: 200, durationMs: 3, upstreamMs: 2, bytesOut: 100 }),
  rec({ status: 200, durationMs: 30, upstreamMs: 25, bytesOut: 200 }),
  rec({ method: "POST", status: 502, durationMs: 1200, upstreamMs: null, upstreamStatus: null, bytesIn: 50, error: "UpstreamConnect" }),
  rec({ method: "get", status: 404, durationMs: 0.5, ingress: null, service: null, upstream: null, upstreamMs: null }),
  rec({ method: "PROPFIND", status: 504, durationMs: 60_000, upstreamMs: 60_000 }),
  rec({ status: 101, durationMs: 5000, upstreamMs: 4, ingress: "ns/chat", service: "ns/chat:ws", websocket: true, bytesIn: 7, bytesOut: 9 }),
];

function bucketsOf(fams: Map<string, Family>, name: string, labels: Record<string, string>): number[] {
  return [...REQUEST_BUCKETS.map(String), "+Inf"].map((le) => sampleValue(fams, `${name}_bucket`, { ...labels, le }) ?? Number.NaN);
}

describe("request metrics after a known mix", () => {
  const registry = new Registry();
  const inst = createInstruments(registry, { version: "test" });
  for (const r of MIX) inst.observeRequest(r);
  const text = registry.expose();
  const fams = parseExposition(text);
  const web = { ingress: "web", namespace: "ns" };

  test("requests_total by ingress, service, normalised method and status class", () => {
    const series = fams.get("portico_requests_total")?.samples.map((s) => [s.labels, s.value]);
    expect(series).toEqual([
      [{ ingress: "", namespace: "", service: "", method: "OTHER", status_class: "4xx" }, 1],
      [{ ingress: "chat", namespace: "ns", service: "ns/chat:ws", method: "GET", status_class: "1xx" }, 1],
      [{ ingress: "web", namespace: "ns", service: "ns/web:80", method: "GET", status_class: "2xx" }, 2],
      [{ ingress: "web", namespace: "ns", service: "ns/web:80", method: "OTHER", status_class: "5xx" }, 1],
      [{ ingress: "web", namespace: "ns", service: "ns/web:80", method: "POST", status_class: "5xx" }, 1],
    ]);
  });

  test("request duration buckets are cumulative and exact", () => {
    // Observations for web: 3 ms, 30 ms, 1.2 s, 60 s (le is inclusive).
    expect(bucketsOf(fams, "portico_request_duration_seconds", web)).toEqual([0, 0, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4]);
    expect(sampleValue(fams, "portico_request_duration_seconds_count", web)).toBe(4);
    expect(sampleValue(fams, "portico_request_duration_seconds_sum", web)).toBeCloseTo(61.233, 9);
    expect(bucketsOf(fams, "portico_request_duration_seconds", { ingress: "", namespace: "" })).toEqual([1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]);
  });

  test("upstream duration only counts requests that reached an upstream", () => {
    // web: 2 ms, 25 ms (on the 0.025 bound: inclusive), 60 s; the 502 had no upstream time.
    expect(bucketsOf(fams, "portico_upstream_duration_seconds", web)).toEqual([0, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3]);
    expect(sampleValue(fams, "portico_upstream_duration_seconds_count", { ingress: "", namespace: "" })).toBeUndefined();
    expect(sampleValue(fams, "portico_upstream_duration_seconds_count", { ingress: "chat", namespace: "ns" })).toBe(1);
  });

  test("bytes in and out", () => {
    expect(sampleValue(fams, "portico_request_bytes_total", web)).toBe(50);
    expect(sampleValue(fams, "portico_response_bytes_total", web)).toBe(300);
    expect(sampleValue(fams, "portico_response_bytes_total", { ingress: "chat", namespace: "ns" })).toBe(9);
  });

  test("no raw path, host or client address ever becomes a label", () => {
    const allowed = new Set(["ingress", "namespace", "service", "method", "status_class", "le", "version", "metric", "protocol"]);
    for (const f of fams.values()) for (const s of f.samples) for (const k of Object.keys(s.labels)) expect(allowed).toContain(k);
    for (const leak of ["/secret", "token", "203.0.113.9", "web.example.com", "10.0.0.1"]) expect(text).not.toContain(leak);
  });
});

describe("the proxy's hooks", () => {
  test("a finished request is counted, then handed on; retries and errors by reason; WebSocket sessions", () => {
    const registry = new Registry();
    const inst = createInstruments(registry, { version: "t" });
    const handed: AccessRecord[] = [];
    const hooks = inst.proxyHooks((r) => void handed.push(r));
    const r = rec({ status: 503, ingress: "ns/i", service: "ns/s:80", error: "NoEndpoints" });
    hooks.onRequestDone(r);
    hooks.onUpstreamRetry("ns/s:80", "connect");
    hooks.onUpstreamError("ns/s:80", "timeout");
    hooks.onWebsocket(1);
    hooks.onWebsocket(1);
    hooks.onWebsocket(-1);
    expect(handed).toEqual([r]);
    const fams = parseExposition(registry.expose());
    expect(sampleValue(fams, "portico_requests_total", { ingress: "i", namespace: "ns", service: "ns/s:80", method: "GET", status_class: "5xx" })).toBe(1);
    expect(sampleValue(fams, "portico_upstream_retries_total", { reason: "connect" })).toBe(1);
    expect(sampleValue(fams, "portico_upstream_errors_total", { reason: "timeout" })).toBe(1);
    expect(sampleValue(fams, "portico_websocket_sessions")).toBe(1);
  });
});

describe("control plane, watch, TLS and process metrics", () => {
  test("each instrument lands in its series", () => {
    const registry = new Registry();
    const inst = createInstruments(registry, { version: "0.1.0" });
    // Two listeners' in-flight counts, read at scrape time and summed.
    let httpsOpen = 2;
    inst.trackActiveConnections(() => 1);
    inst.trackActiveConnections(() => httpsOpen);
    inst.websocketOpened();
    inst.upstreamError("connect");
    inst.upstreamError("connect");
    inst.upstreamError("bad reason\nwith newline");
    inst.upstreamRetry("reset");
    inst.observeCompile(12);
    inst.observeApply(7, 1_700_000_000_500);
    inst.setObjects({ Ingress: 3, Service: 2 });
    inst.setObjects({ Ingress: 4 });
    inst.setDiagnostics([{ reason: "PathConflict" }, { reason: "PathConflict" }, { reason: "NoEndpoints" }]);
    inst.watch.onEvent("Ingress", "ADDED");
    inst.watch.onEvent("Ingress", "ADDED");
    inst.watch.onEvent("Ingress", "WEIRD");
    inst.watch.onRestart("Service");
    inst.watch.onRelist("Secret");
    inst.watch.onError("EndpointSlice", "HTTP 500");
    inst.watch.onMalformed("Ingress");
    inst.setCertificates([{ host: "Foo.com", notAfter: new Date("2030-01-01T00:00:00Z") }, { host: "*.bar.com", notAfter: 1_900_000_000_999 }]);
    inst.tlsRotated();
    inst.setLeader(true);
    let drops = 3;
    inst.trackAccessLogDrops(() => drops);
    let fams = parseExposition(registry.expose());
    const v = (name: string, labels: Record<string, string> = {}) => sampleValue(fams, name, labels);
    expect(v("portico_active_connections")).toBe(3);
    expect(v("portico_websocket_sessions")).toBe(1);
    expect(v("portico_upstream_errors_total", { reason: "connect" })).toBe(2);
    expect(v("portico_upstream_errors_total", { reason: "other" })).toBe(1);
    expect(v("portico_upstream_retries_total", { reason: "reset" })).toBe(1);
    expect(v("portico_config_compile_duration_seconds_bucket", { le: "0.01" })).toBe(0);
    expect(v("portico_config_compile_duration_seconds_bucket", { le: "0.025" })).toBe(1);
    expect(v("portico_config_table_generation")).toBe(7);
    expect(v("portico_config_last_apply_timestamp_seconds")).toBe(1_700_000_000.5);
    expect(v("portico_objects", { kind: "Ingress" })).toBe(4);
    expect(v("portico_objects", { kind: "Service" })).toBeUndefined();
    expect(v("portico_diagnostics", { reason: "PathConflict" })).toBe(2);
    expect(v("portico_diagnostics", { reason: "NoEndpoints" })).toBe(1);
    expect(v("portico_watch_events_total", { kind: "Ingress", type: "ADDED" })).toBe(2);
    expect(v("portico_watch_events_total", { kind: "Ingress", type: "OTHER" })).toBe(1);
    expect(v("portico_watch_restarts_total", { kind: "Service" })).toBe(1);
    expect(v("portico_watch_relists_total", { kind: "Secret" })).toBe(1);
    expect(v("portico_watch_errors_total", { kind: "EndpointSlice" })).toBe(1);
    expect(v("portico_watch_malformed_total", { kind: "Ingress" })).toBe(1);
    expect(v("portico_tls_certificate_expiry_timestamp_seconds", { host: "foo.com" })).toBe(1_893_456_000);
    expect(v("portico_tls_certificate_expiry_timestamp_seconds", { host: "*.bar.com" })).toBe(1_900_000_000);
    expect(v("portico_tls_rotations_total")).toBe(1);
    expect(v("portico_leader")).toBe(1);
    expect(v("portico_build_info", { version: "0.1.0" })).toBe(1);
    expect(v("portico_access_log_dropped_total")).toBe(3);

    // Diagnostics are a current count: a later compile without conflicts clears the reason.
    inst.setDiagnostics([{ reason: "NoEndpoints" }]);
    inst.setLeader(false);
    drops = 10;
    httpsOpen = 0;
    fams = parseExposition(registry.expose());
    expect(v("portico_diagnostics", { reason: "PathConflict" })).toBeUndefined();
    expect(v("portico_leader")).toBe(0);
    expect(v("portico_access_log_dropped_total")).toBe(10);
    expect(v("portico_active_connections")).toBe(1);
  });

  test("TLS hosts are bounded and the overflow is counted", () => {
    const registry = new Registry();
    const inst = createInstruments(registry, { version: "x" });
    const certs = Array.from({ length: MAX_TLS_HOSTS + 10 }, (_, i) => ({ host: `h${i}.example.com`, notAfter: 2e12 }));
    inst.setCertificates(certs);
    const fams = parseExposition(registry.expose());
    expect(fams.get("portico_tls_certificate_expiry_timestamp_seconds")?.samples.length).toBe(MAX_TLS_HOSTS);
    expect(sampleValue(fams, OVERFLOW_METRIC, { metric: "portico_tls_certificate_expiry_timestamp_seconds" })).toBe(10);
  });

  test("every metric of the README's Metrics section exists with its type", () => {
    const fams = parseExposition(new Registry().expose() + "");
    expect(fams.size).toBe(2); // the registry's own overflow and collector-error counters
    const all = parseExposition(createInstruments(new Registry(), { version: "v" }).registry.expose());
    const types = Object.fromEntries([...all.values()].map((f) => [f.name, f.type]));
    expect(types).toMatchObject({
      portico_requests_total: "counter",
      portico_request_duration_seconds: "histogram",
      portico_upstream_duration_seconds: "histogram",
      portico_request_bytes_total: "counter",
      portico_response_bytes_total: "counter",
      portico_active_connections: "gauge",
      portico_websocket_sessions: "gauge",
      portico_basic_auth_checks_active: "gauge",
      portico_basic_auth_checks_peak_per_route: "gauge",
      portico_basic_auth_busy_total: "counter",
      portico_basic_auth_remembered_total: "counter",
      portico_upstream_errors_total: "counter",
      portico_upstream_retries_total: "counter",
      portico_config_compile_duration_seconds: "histogram",
      portico_config_table_generation: "gauge",
      portico_config_last_apply_timestamp_seconds: "gauge",
      portico_objects: "gauge",
      portico_diagnostics: "gauge",
      portico_watch_events_total: "counter",
      portico_watch_restarts_total: "counter",
      portico_watch_relists_total: "counter",
      portico_watch_errors_total: "counter",
      portico_watch_malformed_total: "counter",
      portico_watch_invalid_total: "counter",
      portico_tls_certificate_expiry_timestamp_seconds: "gauge",
      portico_tls_rotations_total: "counter",
      portico_leader: "gauge",
      portico_build_info: "gauge",
      portico_access_log_dropped_total: "counter",
      portico_metrics_label_overflow_total: "counter",
    });
  });
});

describe("protocol and gRPC metrics", () => {
  const registry = new Registry();
  const inst = createInstruments(registry, { version: "test" });
  inst.observeRequest(rec({ status: 200 }));
  inst.observeRequest(rec({ status: 200, protocol: "h2" }));
  inst.observeRequest(rec({ status: 200, protocol: "h2", grpcStatus: 0, ingress: "ns/api", service: "ns/api:50051#grpc" }));
  inst.observeRequest(rec({ status: 200, protocol: "h2", grpcStatus: 14, ingress: "ns/api", service: "ns/api:50051#grpc", error: "NoEndpoints" }));
  inst.observeRequest(rec({ status: 200, protocol: "h2", grpcStatus: 14, ingress: "ns/api", service: "ns/api:50051#grpc", error: "NoEndpoints" }));
  inst.http2Abuse("rapid-reset");
  const fams = parseExposition(registry.expose());

  test("requests by protocol", () => {
    expect(sampleValue(fams, "portico_requests_by_protocol_total", { protocol: "h1" })).toBe(1);
    expect(sampleValue(fams, "portico_requests_by_protocol_total", { protocol: "h2" })).toBe(4);
  });

  test("gRPC calls by the grpc-status the client got; non-gRPC requests are not counted there", () => {
    const api = { ingress: "api", namespace: "ns", service: "ns/api:50051#grpc" };
    expect(sampleValue(fams, "portico_grpc_requests_total", { ...api, grpc_status: "0" })).toBe(1);
    expect(sampleValue(fams, "portico_grpc_requests_total", { ...api, grpc_status: "14" })).toBe(2);
    expect(fams.get("portico_grpc_requests_total")?.samples).toHaveLength(2);
  });

  test("HTTP/2 connections closed for abuse, by reason", () => {
    expect(sampleValue(fams, "portico_http2_connections_closed_total", { reason: "rapid-reset" })).toBe(1);
  });
});
