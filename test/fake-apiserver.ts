// A fake kube-apiserver that speaks the wire protocol Portico uses, over real sockets.
//
// Run by hand:   bun test/fake-apiserver.ts --port 8001 [--token T]
// Import:        const api = await startFakeApiServer({ token: "t" }); api.create("Ingress", {...}); api.stop()
//
// Implements (per the Kubernetes API conventions, sig-architecture/api-conventions.md and
// the "API concepts" page):
// - list with a collection resourceVersion, `limit` / `continue` pagination (continue token
//   expires with 410 Expired once its version is compacted), items sorted by namespace/name
//   and without kind/apiVersion, as kube-apiserver serves them;
// - watch as NDJSON over a chunked response: resourceVersion unset or "0" sends synthetic
//   ADDED events for the current state; an exact version replays later changes from a
//   bounded history; an older one is 410 Gone, either as the HTTP status of the watch or
//   as `200` + `{"type":"ERROR","object":Status{code:410}}` (faults.goneMode);
//   `allowWatchBookmarks=true` sends BOOKMARK events (only metadata.resourceVersion);
//   `timeoutSeconds` ends the stream cleanly (unless the watch was silenced, a fault that
//   holds it open with nothing on it); objects that stop/start matching a selector
//   become DELETED/ADDED, as the watch cache does;
// - fieldSelector on metadata.name, metadata.namespace and (Secrets) type; labelSelector
//   with =, ==, !=, key, !key;
// - create (409 AlreadyExists, generateName), update with optimistic concurrency (409 Conflict
//   on a resourceVersion mismatch), RFC 7386 merge PATCH, DELETE; the status subresource
//   writes only .status and the main resource keeps the stored .status (Ingress, Service);
//   a no-op write keeps the resourceVersion; generation bumps on spec changes;
// - errors as `Status` objects with code/reason/message;
// - bearer-token auth, client-certificate auth over HTTPS (node:https, because Bun.serve cannot
//   report whether a client certificate verified; under Bun, node:https gives
//   `socket.authorized` but not the peer certificate, so any certificate signed by the client CA
//   is accepted as one user), or anonymous when neither is configured; plain HTTP too.
//
// Not implemented (a controller must not depend on these being absent):
// - resourceVersion on a list ("0", exact, unset alike) always serves the latest state, which
//   satisfies "NotOlderThan" and "Any" but not resourceVersionMatch=Exact;
// - a list continuation is not a snapshot: later pages show the current state (kube-apiserver
//   serves the snapshot at the list's version); the version reported stays the first page's;
// - resourceVersionMatch, watch resourceVersion newer than the server (kube waits/504s; here
//   treated as current), sendInitialEvents / streaming lists, `watch` on a single object;
// - JSON patch, server-side apply, strategic merge (treated as merge patch), dry-run,
//   finalizers and graceful deletion, admission and schema validation, defaulting;
// - RBAC (every authenticated user may do everything, except paths in faults.forbidden),
//   impersonation, namespaces as objects, discovery beyond GET /version;
// - HTTP/2, protobuf, table output, compression, APF (429 with Retry-After).
import http from "node:http";
import https from "node:https";
import type { Socket } from "node:net";
import { createHandler, type Faults, type RequestRecord } from "./fake-apiserver/handler.ts";
import { keyOf, ObjectStore, resourceByKind, type Obj } from "./fake-apiserver/store.ts";

export type { Faults, RequestRecord } from "./fake-apiserver/handler.ts";
export type { Obj } from "./fake-apiserver/store.ts";

export interface FakeApiServerOptions {
  port?: number;
  host?: string;
  /** Require `Authorization: Bearer <token>` (or a client certificate when clientCa is set). */
  token?: string;
  /** Serve HTTPS; with clientCa, client certificates signed by it authenticate. */
  tls?: { cert: string; key: string; clientCa?: string };
  /** Changes kept for watch resumption; older versions answer 410. */
  historyLimit?: number;
  bookmarkIntervalMs?: number;
}

export interface FakeApiServer {
  readonly url: string;
  readonly port: number;
  readonly faults: Faults;
  readonly requests: RequestRecord[];
  /** Change the accepted bearer token (credential rotation tests). */
  setToken(token: string): void;
  create(kind: string, obj: Record<string, unknown>): Obj;
  /** Replace (resourceVersion in obj is checked only when set). */
  update(kind: string, obj: Record<string, unknown>): Obj;
  delete(kind: string, namespace: string | null, name: string): Obj;
  get(kind: string, namespace: string | null, name: string): Obj | undefined;
  list(kind: string): Obj[];
  /** Current global resourceVersion. */
  readonly resourceVersion: number;
  /** Forget history: any older resourceVersion now gets 410 Gone. */
  compact(): void;
  dropWatches(): void;
  /** Open watches (of one kind, or all) stay connected but send nothing more, ever. */
  silenceWatches(kind?: string): void;
  endWatches(): void;
  injectLine(line: string, kind?: string): void;
  openWatches(kind?: string): number;
  /** The most watches of `kind` that were open at once since the start (or the last reset). */
  peakWatches(kind: string): number;
  resetPeakWatches(): void;
  stop(): Promise<void>;
}

export async function startFakeApiServer(opts: FakeApiServerOptions = {}): Promise<FakeApiServer> {
  const store = new ObjectStore(opts.historyLimit ?? 1000);
  const faults: Faults = { down: false, hang: false, latencyMs: 0, goneMode: "status", forbidden: null, failNext: 0, failStatus: 500, failMatch: null, failBodyStalls: false, absentGroups: new Set() };
  const requests: RequestRecord[] = [];
  const hopts = {
    token: opts.token,
    clientCertAuth: !!opts.tls?.clientCa,
    bookmarkIntervalMs: opts.bookmarkIntervalMs ?? 60_000,
  };
  const h = createHandler(store, faults, requests, hopts);
  const server = opts.tls
    ? https.createServer({ cert: opts.tls.cert, key: opts.tls.key, ...(opts.tls.clientCa ? { ca: opts.tls.clientCa, requestCert: true, rejectUnauthorized: false } : {}) }, h.handle)
    : http.createServer(h.handle);
  const sockets = new Set<Socket>();
  // With faults.down = "reset" each request is logged, then its connection destroyed (handler).
  server.on(opts.tls ? "secureConnection" : "connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, opts.host ?? "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  const host = opts.host ?? "127.0.0.1";
  const nsOf = (kind: string, ns: string | null) => (resourceByKind(kind).namespaced ? (ns ?? "default") : null);
  const key = (kind: string, ns: string | null, name: string) => keyOf({ metadata: { name, namespace: nsOf(kind, ns) ?? undefined } });
  return {
    url: `${opts.tls ? "https" : "http"}://${host}:${port}`,
    port,
    faults,
    requests,
    setToken: (t) => void (hopts.token = t),
    // The store copies what it is given and what it returns.
    create: (kind, obj) => store.create(resourceByKind(kind), obj as Obj),
    update: (kind, obj) => store.update(resourceByKind(kind), obj as Obj),
    delete: (kind, ns, name) => store.delete(resourceByKind(kind), key(kind, ns, name)),
    get: (kind, ns, name) => store.get(resourceByKind(kind), key(kind, ns, name)),
    list: (kind) => store.list(resourceByKind(kind)),
    get resourceVersion() {
      return store.rv;
    },
    compact: () => store.compact(),
    dropWatches: h.dropWatches,
    silenceWatches: h.silenceWatches,
    endWatches: h.endWatches,
    injectLine: h.injectLine,
    openWatches: (kind) => [...h.watchers].filter((w) => !kind || w.res.kind === kind).length,
    peakWatches: (kind) => h.peaks.get(kind) ?? 0,
    resetPeakWatches: () => h.peaks.clear(),
    async stop() {
      h.releaseHung();
      h.dropWatches();
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

if (import.meta.main) {
  const arg = (name: string) => {
    const i = process.argv.indexOf(`--${name}`);
    return i >= 0 ? process.argv[i + 1] : undefined;
  };
  const api = await startFakeApiServer({ port: Number(arg("port") ?? 0), ...(arg("token") ? { token: arg("token")! } : {}), bookmarkIntervalMs: 10_000 });
  process.stdout.write(`fake apiserver listening on ${api.url}\n`);
  process.on("SIGINT", () => void api.stop().then(() => process.exit(0)));
}
