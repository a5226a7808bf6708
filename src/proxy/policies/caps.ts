// The I/O side of the policy kinds (kinds/types.ts PolicyCaps): what the pure kinds may not
// do themselves (read a clock, arm a timer, fetch, resolve a name, hash a password on a
// thread, keep process-wide tables). The handler makes one per listener (pipeline/handler.ts)
// and the runner hands it to each kind's build, once per route's policies: a step holds what
// it took from it, so nothing here runs per request that did not run per request before.
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
  return fetch(url, { ...init, redirect: "manual", decompress: false } as RequestInit);
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
