// The I/O side of the policy kinds (kinds/types.ts PolicyCaps): what the pure kinds may not
// do themselves (read a clock, arm a timer, fetch, resolve a name, hash a password on a
// thread, keep process-wide tables). The handler makes one per listener (pipeline/handler.ts)
// and the runner hands it to each kind's build, once per route's policies: a step holds what
// it took from it, so nothing here runs per request that did not run per request before.
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { Readable } from "node:stream";
import { LRUCache } from "lru-cache";
import type { Config } from "../../config/types.ts";
import type { AuthAnswer, AuthCacheStore, PolicyCaps, SubrequestInit } from "../../kinds/types.ts";
import { isCostly, verifyPassword } from "../crypt/crypt.ts";
import { pipelineGuard } from "../pipeline/body.ts";
import { sharedExternalResolver } from "../upstream/external.ts";
import { processLimiter } from "./limiter.ts";

/**
 * One process's auth answer cache. ingress-nginx: keys_zone=auth_cache:10m max_size=128m.
 * Here: entries and bytes bounded. It lives on the I/O side because lru-cache's `ttl` reads
 * performance.now and arms timers (docs/design.md "Layout": kinds/ stay pure).
 */
export function createAuthCache(o: { readonly entries?: number; readonly bytes?: number } = {}): AuthCacheStore {
  const cache = new LRUCache<string, AuthAnswer>({
    max: o.entries ?? 10_000,
    maxSize: o.bytes ?? 32 * 1024 * 1024,
    sizeCalculation: (a, k) => k.length + Object.entries(a.copy).reduce((n, [h, val]) => n + h.length + (val?.length ?? 0), 64) + (a.wwwAuthenticate?.length ?? 0),
  });
  return {
    get: (key) => cache.get(key),
    set(key, answer, ttlMs) {
      cache.set(key, answer, { ttl: ttlMs });
      return true;
    },
  };
}

/** The shared store first; what it cannot hold, in `local`. */
export function layeredAuthCache(shared: AuthCacheStore, local: AuthCacheStore): AuthCacheStore {
  return {
    get: (key) => shared.get(key) ?? local.get(key),
    set: (key, answer, ttlMs) => shared.set(key, answer, ttlMs) || local.set(key, answer, ttlMs),
  };
}

/**
 * The process's auth answer cache: the workers' shared table when a worker has set one
 * (workers/worker.ts, before any route is built), else an LRU of this process, made on first
 * use and shared by both listeners' handlers.
 */
let authCacheMaker: (() => AuthCacheStore) | null = null;
let authCache: AuthCacheStore | null = null;

export function useAuthCache(make: () => AuthCacheStore): void {
  authCacheMaker = make;
}

function processAuthCache(): AuthCacheStore {
  return (authCache ??= authCacheMaker?.() ?? createAuthCache());
}

/** Bun's fetch options for a request Portico makes itself: no redirects followed, the body as sent. */
function subrequest(url: string, init: SubrequestInit): Promise<Response> {
  const u = new URL(url);
  // Bun 1.4.5's fetch sends a request-target whose path starts with "//" with one "/"
  // (docs/bun-upstream-reports.md §17), and nginx sends it as rendered (a mirror-target
  // `https://host/$request_uri` gives `GET //foo?bar=1`). Only such a request goes through Bun's
  // node:http client, which keeps the path; remove this branch when §17 is fixed in Bun.
  if (u.pathname.startsWith("//")) return verbatimSubrequest(u, init);
  return fetch(url, { ...init, redirect: "manual", decompress: false } as RequestInit);
}

/**
 * The request `subrequest` would make with fetch, sent with node:http(s) so that the path goes
 * out as written. What fetch sends, measured on Bun 1.4.5, is kept: the method, the fields
 * (plus the User-Agent and Accept fetch adds when they are absent), a body with its
 * Content-Length (0 without one, but for GET and HEAD), the TLS verification asked for and SNI
 * only when `tls.serverName` names one (fetch to an address sends none). Redirects are not
 * followed and the body is not decoded (node:http does neither). The signal aborts it as it
 * aborts a fetch, answer included.
 */
function verbatimSubrequest(u: URL, init: SubrequestInit): Promise<Response> {
  const https = u.protocol === "https:";
  const fields: Record<string, string | string[]> = {};
  for (const [k, val] of init.headers) {
    const had = fields[k];
    fields[k] = had === undefined ? val : [...(Array.isArray(had) ? had : [had]), val];
  }
  fields["user-agent"] ??= `Bun/${Bun.version}`;
  fields.accept ??= "*/*";
  const method = init.method.toUpperCase();
  if (init.body !== undefined) fields["content-length"] = String(init.body.byteLength);
  else if (method !== "GET" && method !== "HEAD") fields["content-length"] = "0";
  const options = {
    host: u.hostname.startsWith("[") ? u.hostname.slice(1, -1) : u.hostname,
    port: u.port === "" ? (https ? 443 : 80) : Number(u.port),
    path: `${u.pathname}${u.search}`,
    method: init.method,
    headers: fields,
    // One connection per request, closed after it: no pool of node:http's to bound or drain.
    agent: false as const,
    // An empty servername sends no SNI (node:tls), as fetch to an address does.
    ...(https ? { rejectUnauthorized: init.tls?.rejectUnauthorized ?? true, servername: init.tls?.serverName ?? "" } : {}),
  };
  const signal = init.signal;
  return new Promise<Response>((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const req = (https ? httpsRequest : httpRequest)(options, (res) => {
      const headers = new Headers();
      const raw = res.rawHeaders;
      for (let i = 0; i + 1 < raw.length; i += 2) headers.append(raw[i]!, raw[i + 1]!);
      const status = res.statusCode ?? 0;
      const empty = method === "HEAD" || status === 204 || status === 304;
      let response: Response;
      try {
        response = new Response(empty ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>), { status, statusText: res.statusMessage ?? "", headers });
      } catch (e) {
        res.destroy();
        reject(e);
        return;
      }
      if (empty) res.resume();
      resolve(response);
    });
    const onAbort = (): void => {
      req.destroy(signal.reason instanceof Error ? signal.reason : new Error("aborted"));
    };
    signal.addEventListener("abort", onAbort, { once: true });
    req.on("close", () => signal.removeEventListener("abort", onAbort));
    req.on("error", reject);
    req.end(init.body === undefined ? undefined : Buffer.from(init.body.buffer, init.body.byteOffset, init.body.byteLength));
  });
}

function deadline(ms: number, also: AbortSignal | null): AbortSignal {
  const timer = AbortSignal.timeout(ms);
  return also === null ? timer : AbortSignal.any([also, timer]);
}

/** The capabilities of this process, with `config` (the live configuration). */
export function policyCaps(config: Config): PolicyCaps {
  return {
    config,
    now: Date.now,
    random: Math.random,
    limiter: processLimiter,
    authCache: processAuthCache,
    resolve: (u, timeoutMs) => sharedExternalResolver().target(u, timeoutMs),
    pipelineGuard,
    subrequest,
    deadline,
    // Through the module's live bindings, so a test's spy on proxy/crypt/crypt.ts is the one
    // called (once per password check: nothing per plain request).
    verifyPassword: (password, hash, format) => verifyPassword(password, hash, format),
    isCostly: (format) => isCostly(format),
  };
}
