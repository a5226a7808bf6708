// Checks, at type level and at run time, that the admin pieces plug into the other areas'
// published shapes as main.ts will wire them: ProxyHooks (proxy/types.ts), the kube watch
// hooks (kube/watch.ts) and the proxy's AccessRecord into the access log. Type-only imports:
// nothing of those modules runs here.
import { expect, test } from "bun:test";
import type { AccessRecord, ProxyHooks } from "../../src/proxy/types.ts";
import type { SourceHooks } from "../../src/kube/watch.ts";
import { Registry } from "../../src/admin/registry.ts";
import { createInstruments } from "../../src/admin/instruments.ts";
import { createAccessLog } from "../../src/log/access.ts";
import { parseExposition, sampleValue } from "./expo-parser.ts";

test("instruments and access log plug into ProxyHooks and SourceHooks", async () => {
  const registry = new Registry();
  const inst = createInstruments(registry, { version: "w" });
  const chunks: string[] = [];
  const access = createAccessLog({ format: "json", enabled: true, write: (c) => void chunks.push(c) });
  const hooks: ProxyHooks = inst.proxyHooks<AccessRecord>((r) => access.record(r));
  const watchHooks: SourceHooks = inst.watch;

  const r: AccessRecord = {
    time: 0, requestId: "a", client: "192.0.2.1", method: "GET", host: "h", path: "/", status: 503, bytesIn: 0, bytesOut: 3,
    durationMs: 1, upstream: null, upstreamStatus: null, upstreamMs: null, ingress: "ns/i", service: "ns/s:80",
    websocket: false, error: "NoEndpoints", scheme: "https",
  };
  hooks.onRequestDone?.(r);
  hooks.onUpstreamRetry?.("ns/s:80", "connect");
  hooks.onUpstreamError?.("ns/s:80", "timeout");
  hooks.onWebsocket?.(1);
  hooks.onWebsocket?.(1);
  hooks.onWebsocket?.(-1);
  watchHooks.onEvent?.("Ingress", "MODIFIED");
  watchHooks.onError?.("Service", "HTTP 500");
  watchHooks.onInvalid?.("Secret");
  await access.flush();

  const fams = parseExposition(registry.expose());
  expect(sampleValue(fams, "portico_requests_total", { ingress: "i", namespace: "ns", service: "ns/s:80", method: "GET", status_class: "5xx" })).toBe(1);
  expect(sampleValue(fams, "portico_upstream_retries_total", { reason: "connect" })).toBe(1);
  expect(sampleValue(fams, "portico_upstream_errors_total", { reason: "timeout" })).toBe(1);
  expect(sampleValue(fams, "portico_websocket_sessions")).toBe(1);
  expect(sampleValue(fams, "portico_watch_events_total", { kind: "Ingress", type: "MODIFIED" })).toBe(1);
  expect(sampleValue(fams, "portico_watch_errors_total", { kind: "Service" })).toBe(1);
  expect(sampleValue(fams, "portico_watch_invalid_total", { kind: "Secret" })).toBe(1);
  expect(JSON.parse(chunks.join("")).error).toBe("NoEndpoints");
  expect(JSON.parse(chunks.join("")).scheme).toBe("https");
});
