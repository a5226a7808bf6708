// The data plane's settings that change while it serves (docs/design.md "ingress-nginx's
// ConfigMap": live or at restart). ingress-nginx reloads nginx when its ConfigMap changes, so
// a new proxy-body-size or hsts-max-age applies to the next request; here the handlers read
// these fields from their Config on every request, and that Config is a LiveConfig: a frozen
// object whose live fields are getters over values `set` replaces in one step. Every other
// field keeps its start value (the listeners' and TLS settings, the trusted proxies, whose
// matcher is built once, the process counts). Workers get the values over IPC
// (workers/protocol.ts "settings") and check them with the schemas here before using them.
import * as v from "valibot";
import type { Config } from "./types.ts";
import { fitsBun } from "./header-buffers.ts";

const MAX_MS = 596 * 3600 * 1000;
const ms = v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(MAX_MS));
const bool = v.boolean();
const status = v.pipe(v.number(), v.integer(), v.minValue(400), v.maxValue(599));

/** The fields the handlers read per request, with the shape a value must have. */
export const LIVE_FIELDS = {
  // Read per request by proxy/pipeline/admit.ts.
  largeClientHeaderBuffers: v.pipe(
    v.object({ number: v.pipe(v.number(), v.integer(), v.minValue(1)), size: v.pipe(v.number(), v.integer(), v.minValue(1)) }),
    v.check(fitsBun),
  ),
  maxBodySize: v.nullable(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(Number.MAX_SAFE_INTEGER))),
  connectTimeoutMs: ms,
  responseTimeoutMs: ms,
  streamIdleTimeoutMs: ms,
  clientBodyTimeoutMs: ms,
  hsts: bool,
  hstsMaxAge: v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(2 ** 31 - 1)),
  hstsIncludeSubdomains: bool,
  hstsPreload: bool,
  limitReqStatusCode: status,
  limitConnStatusCode: status,
  enableUnderscoresInHeaders: bool,
  httpRedirectCode: v.picklist([301, 302, 307, 308]),
  // Read per request by proxy/pipeline (route.ts, forward.ts); the trusted CIDRs themselves are not live.
  trustedProxyHeaders: v.picklist(["all", "address"]),
  computeFullForwardedFor: bool,
  // Read per response by http/headers.ts downstreamHeaders and pipeline/handler.ts.
  serverHeader: v.picklist(["backend", "none", "portico"]),
  // Read per response by proxy/pipeline/relay.ts (limit-rate: upstream/respond.ts).
  limitRate: v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(Number.MAX_SAFE_INTEGER)),
  limitRateAfter: v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(Number.MAX_SAFE_INTEGER)),
  // Read per response by proxy/pipeline/relay.ts (proxy-buffering: upstream/response-buffering.ts).
  proxyBuffering: bool,
  proxyBufferSize: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(Number.MAX_SAFE_INTEGER)),
  // Read per response by proxy/pipeline/relay.ts (http/gzip.ts).
  gzip: bool,
  gzipLevel: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(9)),
  gzipMinLength: v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(2 ** 31 - 1)),
  gzipTypes: v.pipe(v.array(v.pipe(v.string(), v.maxLength(255))), v.maxLength(1024)),
  gzipDisable: v.nullable(v.pipe(v.string(), v.maxLength(1024))),
  brotli: bool,
  brotliLevel: v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(11)),
  brotliMinLength: v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(2 ** 31 - 1)),
  brotliTypes: v.pipe(v.array(v.pipe(v.string(), v.maxLength(255))), v.maxLength(1024)),
  // Read per request by proxy/pipeline/route.ts (block.ts); checked again there when compiled.
  blockCidrs: v.array(v.string()),
  blockUserAgents: v.array(v.string()),
  blockReferers: v.array(v.string()),
  // Read by serving/tls.ts on every build of the TLS entries (compile fields too, so a build follows).
  tlsMinVersion: v.picklist(["1.2", "1.3"]),
  tlsMaxVersion: v.picklist(["1.2", "1.3"]),
  tlsCiphers: v.string(),
  tlsEcdhCurve: v.string(),
} as const satisfies Partial<Record<keyof Config, v.GenericSchema>>;

export type LiveField = keyof typeof LIVE_FIELDS;
export type LiveValues = Pick<Config, LiveField>;

export const isLiveField = (key: string): key is LiveField => Object.hasOwn(LIVE_FIELDS, key);

export interface LiveConfig {
  /** The Config to hand the handlers: its live fields read the latest values. */
  readonly config: Config;
  /** Replace the live values (the other fields of `next` are ignored); returns the fields that changed. */
  set(next: LiveValues): LiveField[];
  /** The live values now, as plain data (for the workers). */
  values(): LiveValues;
}

export function createLiveConfig(initial: Config): LiveConfig {
  const keys = Object.keys(LIVE_FIELDS) as LiveField[];
  let current: Record<LiveField, unknown> = Object.fromEntries(keys.map((k) => [k, initial[k]])) as Record<LiveField, unknown>;
  const out: Record<string, unknown> = {};
  for (const [k, value] of Object.entries(initial)) {
    if (isLiveField(k)) Object.defineProperty(out, k, { get: () => current[k], enumerable: true });
    else Object.defineProperty(out, k, { value, enumerable: true });
  }
  const config = Object.freeze(out) as unknown as Config;
  return {
    config,
    set(next) {
      const changed = keys.filter((k) => JSON.stringify(current[k]) !== JSON.stringify(next[k]));
      // One new object: a request reading several fields sees them from one version or the next.
      if (changed.length > 0) current = Object.fromEntries(keys.map((k) => [k, next[k]])) as Record<LiveField, unknown>;
      return changed;
    },
    values() {
      return { ...current } as LiveValues;
    },
  };
}

/** Values received over IPC, each checked against its field's shape; null when any is missing or wrong. */
export function parseLiveValues(raw: unknown): LiveValues | null {
  if (raw === null || typeof raw !== "object") return null;
  const out: Record<string, unknown> = {};
  for (const [k, schema] of Object.entries(LIVE_FIELDS)) {
    const r = v.safeParse(schema as v.GenericSchema, (raw as Record<string, unknown>)[k]);
    if (!r.success) return null;
    out[k] = r.output;
  }
  return out as LiveValues;
}
