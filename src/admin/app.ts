// The admin HTTP app (README.md, "Admin endpoints"): health, readiness, metrics and debug
// endpoints on their own port, separate from traffic. Everything it shows comes from
// injected functions, so runtime/run.ts wires the live table, the compiler's explain and the
// registry (or the sum of the workers' registries) without this folder importing them.
// guardAdmin keeps /debug/* to the peers --debug-allow names.

import { Hono } from "hono";
import { isIP } from "node:net";
import * as v from "valibot";
import { EXPLAIN_LIMITS, type ExplainRequest } from "../compile/explain-types.ts";
import type { Logger } from "../log/logger.ts";
import type { SerializedTable } from "../table/serialize.ts";
import { formatRoutesText, type EveryRequest, type RoutesTls } from "../table/text.ts";
import type { Readiness } from "./readiness.ts";

/** What /debug/explain asks: the same request explain takes (compile/explain-types.ts). */
export type ExplainQuery = ExplainRequest;

export interface AdminDeps {
  /** Current readiness; see createReadiness(). */
  ready(): Readiness;
  /** Prometheus text format 0.0.4 (registry.expose(), or the sum of worker snapshots). */
  metrics(): string | Promise<string>;
  /** The live table (serializeTable), or null before the first table. */
  routes(): SerializedTable | null | Promise<SerializedTable | null>;
  /** The settings in force that act on every request (--block-*, --server-header), for the text view. */
  every?(): EveryRequest;
  /** The live compile's per-host TLS settings (ssl-ciphers), for the text view's TLS column. */
  routesTls?(): RoutesTls;
  /** Why a request would go where it goes (compile/explain.ts), as JSON. */
  explain(q: ExplainQuery): unknown;
  logger?: Logger;
}

// A request Host: a bracketed IPv6 literal or a name, with an optional port (RFC 9110 §7.2).
const HOST = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,252}))(?::[0-9]{1,5})?$/;
// An origin-form path (RFC 9112 §3.2.1): starts with "/", no control characters.
const PATH = /^\/[^\u0000-\u001f\u007f]*$/;

// The lengths explain accepts (longer ones would cost more than an admin call may).
const ExplainSchema = v.object({
  host: v.pipe(v.string(), v.minLength(1), v.maxLength(EXPLAIN_LIMITS.host), v.regex(HOST)),
  path: v.optional(v.pipe(v.string(), v.maxLength(EXPLAIN_LIMITS.path), v.regex(PATH)), "/"),
  scheme: v.optional(v.picklist(["http", "https"]), "http"),
  // The client address the source-range checks see (an IP literal); absent: one in no list.
  client: v.optional(v.pipe(v.string(), v.maxLength(45), v.check((s) => isIP(s) !== 0))),
  // A method token (RFC 9110 §9.1) and a Content-Type (application/grpc: a gRPC call).
  method: v.optional(v.pipe(v.string(), v.regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,32}$/))),
  contentType: v.optional(v.pipe(v.string(), v.maxLength(256), v.regex(/^[\u0020-\u007e]+$/))),
  // The Accept-Encoding (response.compression answers for it).
  acceptEncoding: v.optional(v.pipe(v.string(), v.maxLength(256), v.regex(/^[\u0020-\u007e]*$/))),
  // The User-Agent (gzip-disable and --block-user-agents read it).
  userAgent: v.optional(v.pipe(v.string(), v.maxLength(512), v.regex(/^[\u0020-\u007e]*$/))),
  // With --gateway-ports: the Portico port, or a Gateway (and its listener port), whose table to ask.
  port: v.optional(v.pipe(v.string(), v.regex(/^[0-9]{1,5}$/), v.transform(Number), v.integer(), v.minValue(1), v.maxValue(65535))),
  gateway: v.optional(v.pipe(v.string(), v.maxLength(317), v.regex(/^[a-z0-9]([a-z0-9.-]*[a-z0-9])?\/[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/))),
  listenerPort: v.optional(v.pipe(v.string(), v.regex(/^[0-9]{1,5}$/), v.transform(Number), v.integer(), v.minValue(1), v.maxValue(65535))),
});

const FIELDS = new Set(["host", "path", "scheme", "client", "method", "contentType", "port", "gateway", "listenerPort", "acceptEncoding", "userAgent"]);

/** What every peer that reaches the admin port may ask for: the kubelet's probes, Prometheus. */
const PUBLIC_PATHS: ReadonlySet<string> = new Set(["/healthz", "/readyz", "/metrics"]);

const FORBIDDEN = "forbidden: this peer may not read the debug endpoints (see --debug-allow)";

/**
 * The admin port's fetch: /healthz, /readyz and /metrics for every peer, anything else (the
 * /debug/* endpoints: every tenant's routes and pod addresses) only for a peer `debugAllowed`
 * accepts. Decided on the exact path before any routing, by what is allowed rather than what
 * is not, so no other spelling of a debug path (percent-encoded, doubled slashes, case) can
 * reach a debug endpoint from elsewhere: every other path is refused to such a peer.
 */
export function guardAdmin(
  fetch: (req: Request) => Response | Promise<Response>,
  debugAllowed: (peer: string) => boolean,
): (req: Request, server: { requestIP(req: Request): { readonly address: string } | null }) => Response | Promise<Response> {
  return (req, server) => {
    if (PUBLIC_PATHS.has(pathOf(req.url)) || debugAllowed(server.requestIP(req)?.address ?? "")) return fetch(req);
    return new Response(FORBIDDEN, { status: 403, headers: { "Content-Type": "text/plain; charset=utf-8", "Cache-Control": "no-store" } });
  };
}

/** The path of an absolute request URL as Bun hands it over ("" when unreadable: not public). */
function pathOf(url: string): string {
  try {
    return new URL(url).pathname;
  } catch {
    return "";
  }
}
// Set explicitly: Hono 4.13's c.text() sets none and leaves it to the server (Bun adds
// text/plain on the wire; the app alone, as tests and other runtimes see it, has none).
const TEXT = { "Content-Type": "text/plain; charset=utf-8" } as const;

export function createAdminApp(deps: AdminDeps): Hono {
  const app = new Hono();
  const log = (msg: string, err: unknown) => deps.logger?.error(msg, { err: err instanceof Error ? err.message : String(err) });

  app.use("*", async (c, next) => {
    await next();
    // Admin answers describe live state; no cache may serve an old one.
    c.header("Cache-Control", "no-store");
  });

  app.get("/healthz", (c) => c.body("ok", 200, TEXT));

  app.get("/readyz", (c) => {
    const r = deps.ready();
    // The reason is ours (kinds, "draining"), never request input.
    return r.ready ? c.body("ok", 200, TEXT) : c.body(`not ready: ${r.reason}`, 503, TEXT);
  });

  app.get("/metrics", async (c) => {
    try {
      const body = await deps.metrics();
      return c.body(body, 200, { "Content-Type": "text/plain; version=0.0.4; charset=utf-8" });
    } catch (err) {
      log("metrics failed", err);
      return c.text("metrics unavailable", 500);
    }
  });

  app.get("/debug/routes", async (c) => {
    // JSON for programs; an aligned table for people: ?format=text, or an Accept header that
    // asks for text/plain and not JSON (curl -H 'Accept: text/plain').
    const format = c.req.query("format");
    if (format !== undefined && format !== "text" && format !== "json") return c.json({ error: "format must be text or json" }, 400);
    const accept = c.req.header("accept") ?? "";
    const text = format === "text" || (format === undefined && accept.includes("text/plain") && !accept.includes("application/json"));
    try {
      const table = await deps.routes();
      if (table == null) return text ? c.body("no route table yet\n", 503, TEXT) : c.json({ error: "no route table yet" }, 503);
      return text ? c.body(formatRoutesText(table, deps.every?.() ?? {}, deps.routesTls?.() ?? {}), 200, TEXT) : c.json(table);
    } catch (err) {
      log("debug/routes failed", err);
      return c.json({ error: "internal error" }, 500);
    }
  });

  app.get("/debug/explain", async (c) => {
    const all = c.req.queries();
    // A repeated parameter is ambiguous: refuse it rather than pick one silently.
    const repeated = Object.entries(all).filter(([k, vals]) => FIELDS.has(k) && vals.length > 1).map(([k]) => k);
    if (repeated.length > 0) return c.json({ error: "invalid query", fields: repeated.sort() }, 400);
    const parsed = v.safeParse(ExplainSchema, c.req.query());
    if (!parsed.success) {
      // Name the fields, never echo their values.
      const fields = [...new Set(parsed.issues.map((i) => String(i.path?.[0]?.key ?? "query")))].sort();
      return c.json({ error: "invalid query", fields }, 400);
    }
    try {
      const result = await deps.explain(parsed.output);
      // A port or Gateway with no table of its own (runtime/explain.ts): the question, not the server, is wrong.
      if (result !== null && typeof result === "object" && "error" in result) return c.json(result as object, 400);
      return c.json((result ?? null) as object);
    } catch (err) {
      log("debug/explain failed", err);
      return c.json({ error: "internal error" }, 500);
    }
  });

  app.notFound((c) => c.text("not found", 404));
  app.onError((err, c) => {
    log("admin request failed", err);
    return c.text("internal error", 500);
  });
  return app;
}
