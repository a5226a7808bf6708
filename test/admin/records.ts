// A complete access record for the admin and log suites: the one AccessRecord type, with
// values a test overrides field by field.
import type { AccessRecord } from "../../src/log/access.ts";

export function accessRecord(p: Partial<AccessRecord> = {}): AccessRecord {
  return {
    time: Date.UTC(2026, 10, 21, 18, 0, 0, 123), requestId: "req-1", client: "203.0.113.9", method: "GET", scheme: "http",
    host: "web.example.com", path: "/app?q=1", status: 200, bytesIn: 0, bytesOut: 512, durationMs: 12.34567,
    upstream: "10.0.0.7:8080", upstreamStatus: 200, upstreamMs: 10.5, ingress: "shop/web", service: "shop/web:80",
    websocket: false, error: null, protocol: "h1", grpcStatus: null, logged: true, view: null, ...p,
  };
}
