// The PEM check of a kubernetes.io/tls Secret (model/pem-check.ts), cached by Secret uid +
// resourceVersion: a Secret that did not change is never parsed twice.
import { LRUCache } from "lru-cache";
import { parsePem, pemDigest, withExpiry, type PemCheck, type PemParse } from "../model/pem-check.ts";

// The check is pure and lives in model/ so that explain asks the same one (compile may not
// import tls/); this module adds the cache the listener builds go through.

export interface PemChecker {
  check(input: { cert: string | null; key: string | null; version: string | null }, now: number): PemCheck;
  readonly size: number;
}

/**
 * A bounded cache in front of checkPem, keyed by the Secret version (uid/resourceVersion:
 * the API server changes resourceVersion on every write, so a version names one content).
 * A binding without a version is keyed by a digest of its PEM text instead.
 */
export function createPemChecker(max = 10_000): PemChecker {
  const cache = new LRUCache<string, PemParse>({ max });
  return {
    check(input, now) {
      const digest = input.version !== null ? null : pemDigest(input.cert, input.key);
      const cacheKey = digest === null ? `v:${input.version}` : `d:${digest}`;
      let parsed = cache.get(cacheKey);
      if (parsed === undefined) {
        parsed = parsePem(input.cert, input.key, digest);
        cache.set(cacheKey, parsed);
      }
      return withExpiry(parsed, now);
    },
    get size() {
      return cache.size;
    },
  };
}
