// The primary ⇄ worker messages, carried by Bun's IPC channel (JSON). Both ends are the same
// executable, but a message still crosses a process boundary, so each side checks the shape
// of what it receives with valibot, as every input at an edge is, and ignores what does not fit.
//
// primary → worker: "tls" (the SNI entries to serve, built once by the primary), "table"
//   (the whole route table as a JSON string of WireTable: on hello and on resync), "delta"
//   (the change from generation `base` as a JSON string of WireDelta: stringified once, sent to
//   every worker that has `base`), "listen" (bind the traffic ports once you have a table and
//   certificates; `first`: no sibling listens yet, so probe the ports for a stranger first),
//   "metrics" (a scrape request), "drain" (shut down gracefully, then exit).
// worker → primary: "hello" (its message handler is installed: send it the state), "ready"
//   (first table live, listeners up), "applied" (a table generation is live), "resync" (a delta
//   did not apply: send the whole table), "rejected" (a whole table could not be read: this
//   worker still serves the table it had, or none; readiness says so until it applies a later
//   one), "metrics" (registry snapshot for a request id),
//   "fatal" (cannot serve: exits 1).
import * as v from "valibot";
import type { TlsEntry } from "../tls/sni.ts";

/** Environment variable that makes the executable run as worker N (set only by the primary). */
export const WORKER_ID_ENV = "PORTICO_WORKER_ID";

export type ToWorker =
  /** `ports`: the Gateways' own HTTPS ports' sets (--gateway-ports), by port. */
  | { readonly type: "tls"; readonly entries: readonly TlsEntry[]; readonly fingerprint: string; readonly ports?: readonly { readonly port: number; readonly entries: readonly TlsEntry[]; readonly fingerprint: string }[] }
  | { readonly type: "table"; readonly generation: number; readonly json: string }
  | { readonly type: "delta"; readonly generation: number; readonly base: number; readonly json: string }
  | { readonly type: "listen"; readonly first: boolean }
  | { readonly type: "metrics"; readonly id: number }
  /** The data plane's per-request settings (config/live.ts LIVE_FIELDS), checked by the worker. */
  | { readonly type: "settings"; readonly values: Readonly<Record<string, unknown>> }
  /** `delay: false`: skip --shutdown-delay (the controller never reported ready). */
  | { readonly type: "drain"; readonly delay?: boolean };

export type ToPrimary =
  | { readonly type: "hello" }
  | { readonly type: "ready"; readonly generation: number }
  | { readonly type: "applied"; readonly generation: number }
  | { readonly type: "resync" }
  | { readonly type: "rejected"; readonly generation: number }
  | { readonly type: "metrics"; readonly id: number; readonly snapshot: unknown }
  | { readonly type: "fatal"; readonly message: string };

const count = v.pipe(v.number(), v.integer(), v.minValue(0));

const TlsEntrySchema = v.object({ serverName: v.optional(v.string()), cert: v.string(), key: v.string(), ciphers: v.string(), secureOptions: v.number(), ecdhCurve: v.optional(v.string()) });

const ToWorkerSchema = v.variant("type", [
  v.object({
    type: v.literal("tls"),
    entries: v.array(TlsEntrySchema),
    fingerprint: v.string(),
    ports: v.optional(v.array(v.object({ port: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(65535)), entries: v.array(TlsEntrySchema), fingerprint: v.string() }))),
  }),
  v.object({ type: v.literal("table"), generation: count, json: v.string() }),
  v.object({ type: v.literal("delta"), generation: count, base: count, json: v.string() }),
  v.object({ type: v.literal("listen"), first: v.boolean() }),
  v.object({ type: v.literal("metrics"), id: count }),
  v.object({ type: v.literal("settings"), values: v.record(v.string(), v.unknown()) }),
  v.object({ type: v.literal("drain"), delay: v.optional(v.boolean()) }),
]);

const ToPrimarySchema = v.variant("type", [
  v.object({ type: v.literal("hello") }),
  v.object({ type: v.literal("ready"), generation: count }),
  v.object({ type: v.literal("applied"), generation: count }),
  v.object({ type: v.literal("resync") }),
  v.object({ type: v.literal("rejected"), generation: count }),
  // The snapshot itself is checked by admin/exposition.ts parseSnapshot().
  v.object({ type: v.literal("metrics"), id: count, snapshot: v.unknown() }),
  v.object({ type: v.literal("fatal"), message: v.pipe(v.string(), v.maxLength(2000)) }),
]);

export function parseToWorker(m: unknown): ToWorker | null {
  const r = v.safeParse(ToWorkerSchema, m);
  return r.success ? (r.output as ToWorker) : null;
}

export function parseToPrimary(m: unknown): ToPrimary | null {
  const r = v.safeParse(ToPrimarySchema, m);
  return r.success ? (r.output as ToPrimary) : null;
}

/** The worker id from the environment, or null in the primary / a single process. */
export function workerIdFromEnv(env: Readonly<Record<string, string | undefined>>): number | null {
  const raw = env[WORKER_ID_ENV];
  if (raw === undefined || !/^\d{1,3}$/.test(raw)) return null;
  return Number(raw);
}
