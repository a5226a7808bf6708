// HTTP side of the fake API server (node:http style so the same handler serves plain HTTP
// and HTTPS with client-certificate verification, which Bun.serve cannot report).
import type { IncomingMessage, ServerResponse } from "node:http";
import type { TLSSocket } from "node:tls";
import { makeSelector, mergePatch, ObjectStore, resourceByPath, StoreError, type Change, type Obj, type ResourceInfo, type Selector } from "./store.ts";

export interface Faults {
  /** "reset": connections are destroyed on arrival; "503": every request answers 503. */
  down: false | "reset" | "503";
  /** Requests are accepted and never answered (until stop). */
  hang: boolean;
  /** Delay before answering each request. */
  latencyMs: number;
  /** How a too-old watch resourceVersion is reported: HTTP 410, or 200 + an ERROR event with code 410. */
  goneMode: "status" | "event";
  /** Requests whose `METHOD path` matches answer 403 Forbidden. */
  forbidden: RegExp | null;
  /** The next N requests (matching failMatch on `METHOD path?query`, when set) answer failStatus. */
  failNext: number;
  failStatus: number;
  failMatch: RegExp | null;
  /** API groups whose CRDs are not installed: every path under them answers 404. */
  absentGroups: Set<string>;
  /** Injected failures send their status and half of the Status body, then nothing more. */
  failBodyStalls: boolean;
}

export interface RequestRecord {
  readonly method: string;
  readonly path: string;
  readonly query: string;
  readonly watch: boolean;
  status: number;
  readonly at: number;
}

interface Watcher {
  readonly res: ResourceInfo;
  readonly ns: string | null;
  readonly sel: Selector;
  readonly out: ServerResponse;
  send(c: Change): void;
  end(): void;
  drop(): void;
  /** Forget the watch but keep its connection open: nothing more is written, not even its end. */
  silence(): void;
}

export interface HandlerOptions {
  token?: string | undefined;
  clientCertAuth: boolean;
  bookmarkIntervalMs: number;
}

export function status(code: number, reason: string, message: string): object {
  return { kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message, reason, code };
}

const REASONS: Record<number, string> = { 400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed", 409: "Conflict", 410: "Expired", 415: "UnsupportedMediaType", 422: "Invalid", 500: "InternalError", 503: "ServiceUnavailable" };

/**
 * kube-apiserver validates an Event's metadata.name as a DNS-1123 subdomain of at most 253
 * characters (apimachinery NameIsDNSSubdomain, which client-go's GenerateEventName checks
 * before it creates one), answering 422 Invalid. Other kinds' names are not checked here.
 */
function invalidEventName(name: unknown): string | null {
  if (typeof name !== "string") return null;
  if (name.length > 253) return "must be no more than 253 characters";
  return /^[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*$/.test(name) ? null : "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
}

function parsePath(pathname: string): { res: ResourceInfo; ns: string | null; name: string | null; sub: string | null } | null {
  const s = pathname.split("/").filter(Boolean);
  let group: string, version: string | undefined, rest: string[];
  if (s[0] === "api") [group, version, rest] = ["", s[1], s.slice(2)];
  else if (s[0] === "apis") [group, version, rest] = [s[1] ?? "", s[2], s.slice(3)];
  else return null;
  let ns: string | null = null;
  if (rest[0] === "namespaces" && rest.length >= 3) [ns, rest] = [rest[1]!, rest.slice(2)];
  const res = version ? resourceByPath(group, version, rest[0] ?? "") : undefined;
  if (!res || rest.length > 3 || (ns !== null && !res.namespaced)) return null;
  return { res, ns, name: rest[1] ?? null, sub: rest[2] ?? null };
}

export function createHandler(store: ObjectStore, faults: Faults, log: RequestRecord[], opts: HandlerOptions) {
  const watchers = new Set<Watcher>();
  /** The most watches of each kind open at once (a test bounds the connections a controller holds). */
  const peaks = new Map<string, number>();
  const hung = new Set<ServerResponse>();
  store.listeners.add((c) => {
    for (const w of watchers) w.send(c);
  });

  const json = (res: ServerResponse, rec: RequestRecord, code: number, body: unknown) => {
    rec.status = code;
    res.writeHead(code, { "Content-Type": "application/json" });
    res.end(JSON.stringify(body));
  };
  const fail = (res: ServerResponse, rec: RequestRecord, code: number, message: string, reason = REASONS[code] ?? "Unknown") =>
    json(res, rec, code, status(code, reason, message));

  function translate(w: Watcher, c: Change): { type: string; object: Obj } | null {
    if (c.res !== w.res) return null;
    const inNs = (o: Obj) => w.ns === null || o.metadata.namespace === w.ns;
    const m = (o: Obj | null) => o !== null && inNs(o) && w.sel.matches(o);
    if (c.type !== "MODIFIED") return m(c.object) ? { type: c.type, object: c.object } : null;
    const was = m(c.previous), now = m(c.object);
    if (was && now) return { type: "MODIFIED", object: c.object };
    if (now) return { type: "ADDED", object: c.object };
    if (was) return { type: "DELETED", object: c.object };
    return null;
  }

  function watch(req: IncomingMessage, res: ServerResponse, rec: RequestRecord, r: ResourceInfo, ns: string | null, sel: Selector, q: URLSearchParams) {
    const rvParam = q.get("resourceVersion") ?? "";
    const replay: { type: string; object: Obj }[] = [];
    if (rvParam === "" || rvParam === "0") {
      // Unset: "Get State and Start at Most Recent"; "0": "Start at Any" (we serve the latest).
      for (const o of store.entries(r)) if ((ns === null || o.metadata.namespace === ns) && sel.matches(o)) replay.push({ type: "ADDED", object: o });
    } else {
      const from = Number(rvParam);
      if (!Number.isInteger(from) || from < 0) return fail(res, rec, 400, `invalid resourceVersion ${JSON.stringify(rvParam)}`);
      if (from < store.compactedRv) {
        const msg = `too old resource version: ${from} (${store.compactedRv})`;
        if (faults.goneMode === "status") return fail(res, rec, 410, msg, "Expired");
        rec.status = 200;
        res.writeHead(200, { "Content-Type": "application/json" });
        res.end(JSON.stringify({ type: "ERROR", object: status(410, "Expired", msg) }) + "\n");
        return;
      }
      if (from > store.rv) {
        // kube-apiserver: a version its watch cache has not reached waits up to 3 s, then answers
        // 504 Timeout "Too large resource version" with the cause ResourceVersionTooLarge
        // (k8s.io/apiserver storage.NewTooLargeResourceVersionError); here at once.
        const body = status(504, "Timeout", `Timeout: Too large resource version: ${rvParam}, current: ${store.rv}`);
        return json(res, rec, 504, { ...body, details: { causes: [{ reason: "ResourceVersionTooLarge", message: "Too large resource version" }], retryAfterSeconds: 1 } });
      }
      const w0 = { res: r, ns, sel } as Watcher;
      for (const c of store.history) if (c.rv > from) { const e = translate(w0, c); if (e) replay.push(e); }
    }
    rec.status = 200;
    res.writeHead(200, { "Content-Type": "application/json", "Transfer-Encoding": "chunked" });
    res.flushHeaders?.();
    const timeoutS = Number(q.get("timeoutSeconds") ?? "1800");
    const bookmarks = q.get("allowWatchBookmarks") === "true";
    let open = true;
    const write = (e: unknown) => open && res.write(JSON.stringify(e) + "\n");
    const timers: ReturnType<typeof setTimeout>[] = [];
    const cleanup = () => {
      open = false;
      watchers.delete(w);
      for (const t of timers) clearTimeout(t), clearInterval(t);
    };
    const w: Watcher = {
      res: r, ns, sel, out: res,
      send: (c) => { const e = translate(w, c); if (e) write(e); },
      end: () => { if (open) { cleanup(); res.end(); } },
      drop: () => { if (open) { cleanup(); res.socket?.destroy(); } },
      silence: () => cleanup(),
    };
    for (const e of replay) write(e);
    watchers.add(w);
    const nowOpen = [...watchers].filter((x) => x.res === r).length;
    if (nowOpen > (peaks.get(r.kind) ?? 0)) peaks.set(r.kind, nowOpen);
    timers.push(setTimeout(w.end, Math.max(0, timeoutS) * 1000));
    if (bookmarks) {
      const apiVersion = r.group ? `${r.group}/${r.version}` : r.version;
      timers.push(setInterval(() => write({ type: "BOOKMARK", object: { kind: r.kind, apiVersion, metadata: { resourceVersion: String(store.rv) } } }), opts.bookmarkIntervalMs));
    }
    req.on("close", cleanup);
    res.on("close", cleanup);
  }

  function list(res: ServerResponse, rec: RequestRecord, r: ResourceInfo, ns: string | null, sel: Selector, q: URLSearchParams) {
    let listRv = store.rv;
    let after: string | null = null;
    const cont = q.get("continue");
    if (cont) {
      try {
        const t = JSON.parse(Buffer.from(cont, "base64url").toString()) as { rv: number; after: string };
        [listRv, after] = [t.rv, t.after];
      } catch {
        return fail(res, rec, 400, "continue key is not valid");
      }
      if (listRv < store.compactedRv) return fail(res, rec, 410, "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.", "Expired");
    }
    const limit = Number(q.get("limit") ?? "0");
    const page = store.page(r, (o) => (ns === null || o.metadata.namespace === ns) && sel.matches(o), after, limit > 0 ? limit : 0);
    const next = page.last === null ? undefined : Buffer.from(JSON.stringify({ rv: listRv, after: page.last })).toString("base64url");
    const apiVersion = r.group ? `${r.group}/${r.version}` : r.version;
    // The items are kept serialised by the store: the body is assembled, not re-serialised.
    const head = JSON.stringify({ kind: `${r.kind}List`, apiVersion, metadata: { resourceVersion: String(listRv), ...(next ? { continue: next } : {}) } });
    rec.status = 200;
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(`${head.slice(0, -1)},"items":[${page.items.join(",")}]}`);
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://fake");
    const q = url.searchParams;
    const isWatch = q.get("watch") === "1" || q.get("watch") === "true";
    const rec: RequestRecord = { method: req.method ?? "GET", path: url.pathname, query: url.search, watch: isWatch, status: 0, at: Date.now() };
    log.push(rec);
    if (faults.down === "reset") return void req.socket.destroy();
    if (faults.latencyMs > 0) await Bun.sleep(faults.latencyMs); // a slow API server on purpose (the fault under test)
    if (faults.hang) return void hung.add(res);
    if (faults.down === "503") return fail(res, rec, 503, "the fake apiserver is down");
    if (faults.failNext > 0 && (!faults.failMatch || faults.failMatch.test(`${rec.method} ${rec.path}${rec.query}`))) {
      faults.failNext--;
      if (faults.failBodyStalls) {
        rec.status = faults.failStatus;
        res.writeHead(faults.failStatus, { "Content-Type": "application/json", "Transfer-Encoding": "chunked" });
        res.write(JSON.stringify(status(faults.failStatus, REASONS[faults.failStatus] ?? "Unknown", "injected failure")).slice(0, 20));
        return void hung.add(res);
      }
      return fail(res, rec, faults.failStatus, "injected failure");
    }
    const bearer = req.headers.authorization?.match(/^Bearer (.+)$/)?.[1];
    const certOk = opts.clientCertAuth && (req.socket as TLSSocket).authorized === true;
    const tokenOk = opts.token !== undefined && bearer === opts.token;
    if ((opts.token !== undefined || opts.clientCertAuth) && !certOk && !tokenOk) return fail(res, rec, 401, "Unauthorized");
    if (faults.forbidden?.test(`${rec.method} ${rec.path}`)) return fail(res, rec, 403, `forbidden: cannot ${rec.method} ${rec.path}`);
    if (url.pathname === "/version") return json(res, rec, 200, { major: "1", minor: "34", gitVersion: "v1.34.0-fake" });
    const p = parsePath(url.pathname);
    if (!p || faults.absentGroups.has(p.res.group)) return fail(res, rec, 404, "the server could not find the requested resource");
    const { res: r, ns, name, sub } = p;
    if (sub !== null && sub !== "status") return fail(res, rec, 404, `no subresource ${sub}`);
    const key = r.namespaced ? `${ns ?? ""}/${name ?? ""}` : (name ?? "");
    let body: Obj | undefined;
    if (req.method === "POST" || req.method === "PUT" || req.method === "PATCH") {
      let text = "";
      for await (const chunk of req) text += chunk;
      try {
        body = JSON.parse(text) as Obj;
      } catch {
        return fail(res, rec, 400, "request body is not JSON");
      }
    }
    try {
      if (req.method === "GET" && name === null) {
        const sel = makeSelector(q.get("fieldSelector"), q.get("labelSelector"));
        return isWatch ? watch(req, res, rec, r, ns, sel, q) : list(res, rec, r, ns, sel, q);
      }
      if (req.method === "GET") {
        const o = store.get(r, key);
        return o ? json(res, rec, 200, o) : fail(res, rec, 404, `${r.resource} "${name}" not found`, "NotFound");
      }
      if (req.method === "POST" && name === null && body) {
        if (r.namespaced && (ns === null || (body.metadata.namespace && body.metadata.namespace !== ns))) return fail(res, rec, 400, "the namespace of the object does not match the namespace of the request");
        body.metadata ??= {} as Obj["metadata"];
        if (ns) body.metadata.namespace = ns;
        const bad = r.resource === "events" ? invalidEventName(body.metadata.name) : null;
        if (bad !== null) return fail(res, rec, 422, `Event.${r.group || "core"} "${String(body.metadata.name)}" is invalid: metadata.name: Invalid value: ${JSON.stringify(body.metadata.name)}: ${bad}`);
        return json(res, rec, 201, store.create(r, body));
      }
      if (req.method === "PUT" && name !== null && body) {
        if (body.metadata?.name !== name) return fail(res, rec, 400, "the name of the object does not match the name on the URL");
        if (ns) body.metadata.namespace = ns;
        if (sub === "status" && !r.hasStatus) return fail(res, rec, 404, "no status subresource");
        return json(res, rec, 200, store.update(r, body, { statusOnly: sub === "status" }));
      }
      if (req.method === "PATCH" && name !== null && body) {
        const ct = req.headers["content-type"] ?? "";
        // Strategic merge is treated as RFC 7386 merge; JSON patch and apply are not implemented.
        if (!ct.startsWith("application/merge-patch+json") && !ct.startsWith("application/strategic-merge-patch+json")) return fail(res, rec, 415, `unsupported patch type ${ct}`);
        const cur = store.get(r, key);
        if (!cur) return fail(res, rec, 404, `${r.resource} "${name}" not found`, "NotFound");
        const patched = mergePatch(cur, body) as Obj;
        if (body.metadata?.resourceVersion === undefined) patched.metadata.resourceVersion = cur.metadata.resourceVersion;
        return json(res, rec, 200, store.update(r, patched, { statusOnly: sub === "status" }));
      }
      if (req.method === "DELETE" && name !== null) {
        store.delete(r, key);
        return json(res, rec, 200, { kind: "Status", apiVersion: "v1", metadata: {}, status: "Success", code: 200 });
      }
      return fail(res, rec, 405, `method ${req.method} not allowed here`);
    } catch (e) {
      if (e instanceof StoreError) return fail(res, rec, e.code, e.message, e.reason);
      return fail(res, rec, 500, String(e));
    }
  }

  return {
    handle: (req: IncomingMessage, res: ServerResponse) => void handle(req, res),
    watchers,
    peaks,
    /** Close every open watch abruptly (the TCP connection dies mid-stream). */
    dropWatches: () => [...watchers].forEach((w) => w.drop()),
    /**
     * Open watches (of one kind, or all) go silent: no event, no bookmark, no end at
     * timeoutSeconds, the connection held open, as when the server loses a watcher or a proxy
     * keeps a dead connection's client side open. Only the client can end them.
     */
    silenceWatches: (kind?: string) => {
      for (const w of [...watchers]) if (!kind || w.res.kind === kind) w.silence();
    },
    /** End every open watch cleanly, as timeoutSeconds would. */
    endWatches: () => [...watchers].forEach((w) => w.end()),
    /** Write a raw line into the open watches (of one kind, or all). */
    injectLine: (line: string, kind?: string) => {
      for (const w of watchers) if (!kind || w.res.kind === kind) w.out.write(line.endsWith("\n") ? line : line + "\n");
    },
    releaseHung: () => {
      for (const r of hung) r.socket?.destroy();
      hung.clear();
    },
  };
}
