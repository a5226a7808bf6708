// A consistent-hash ring over a backend's endpoints, for `upstream-hash-by` and cookie affinity
// (docs/design.md, "Balancing and affinity"). ingress-nginx hashes with lua-resty-balancer's
// ketama-style ring (160 points per endpoint; its rootfs/etc/nginx/lua/balancer/chash.lua);
// this is the same idea, written here, with its own hash, so keys land on other pods than
// under ingress-nginx but with the properties that matter:
//
// - The same in every process and replica: the ring depends only on the endpoints' `ip:port`
//   (sorted, so the EndpointSlice order does not matter) and a fixed hash, never on a random
//   seed or the process.
// - Minimal movement: an endpoint that goes away takes only its own keys with it (they move to
//   the next endpoint on the ring); no key moves between endpoints that stay. An endpoint that
//   comes takes about 1/n of the keys. test/proxy/balancer-hash.test.ts measures both.
// - Every ready endpoint: the ring is built over `backend.endpoints`, never the subsetting
//   window of balancer.ts (a window differs per process and moves every 500 ms, which would
//   break stickiness).
import type { Backend, Upstream } from "../table/types.ts";

/** Points per endpoint: lua-resty-balancer's figure; the share of each endpoint is within ~8% of 1/n. */
export const POINTS_PER_ENDPOINT = 160;

/** MurmurHash3's 32-bit finaliser: every input bit affects every output bit. */
function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * A stable 32-bit hash of a string: FNV-1a over its UTF-16 code units, then the murmur
 * finaliser (FNV-1a alone spreads keys that differ in their last characters poorly).
 */
export function keyHash(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return fmix32(h);
}

interface Ring {
  /** The endpoints, sorted by authority; `owner` indexes into it. */
  readonly endpoints: readonly Upstream[];
  /** Ring positions, ascending. */
  readonly points: Uint32Array;
  /** The endpoint (index into `endpoints`) at each position. */
  readonly owner: Uint32Array;
}

export function buildRing(endpoints: readonly Upstream[]): Ring {
  const eps = [...endpoints].sort((a, b) => (a.authority < b.authority ? -1 : a.authority > b.authority ? 1 : 0));
  const n = eps.length;
  // point × 2^21 + owner in one float64 (exact below 2^53), so one numeric sort orders the
  // points and breaks a tie between two endpoints' points the same way everywhere.
  const packed = new Float64Array(n * POINTS_PER_ENDPOINT);
  for (let e = 0; e < n; e++) {
    const base = keyHash((eps[e] as Upstream).authority);
    for (let i = 0; i < POINTS_PER_ENDPOINT; i++) {
      const p = fmix32((base + Math.imul(i + 1, 0x9e3779b9)) >>> 0);
      packed[e * POINTS_PER_ENDPOINT + i] = p * 2 ** 21 + e;
    }
  }
  packed.sort();
  const points = new Uint32Array(packed.length);
  const owner = new Uint32Array(packed.length);
  for (let i = 0; i < packed.length; i++) {
    const v = packed[i] as number;
    const e = v % 2 ** 21;
    owner[i] = e;
    points[i] = (v - e) / 2 ** 21;
  }
  return { endpoints: eps, points, owner };
}

/** The first position at or after `h` (wrapping to 0). */
function position(r: Ring, h: number): number {
  let lo = 0;
  let hi = r.points.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((r.points[mid] as number) < h) lo = mid + 1;
    else hi = mid;
  }
  return lo === r.points.length ? 0 : lo;
}

/** The endpoint that owns `key`; null for an empty ring. */
export function ringOwner(r: Ring, key: string): Upstream | null {
  if (r.points.length === 0) return null;
  return r.endpoints[r.owner[position(r, keyHash(key))] as number] as Upstream;
}

/**
 * The distinct endpoints from `key`'s position onwards, in ring order, as long as `visit`
 * returns false (it returns true to stop). The owner comes first; the next ones are where the
 * key's traffic goes when the owner cannot take it.
 */
export function ringWalk(r: Ring, key: string, visit: (u: Upstream) => boolean): void {
  const n = r.endpoints.length;
  if (n === 0) return;
  const seen = new Uint8Array(n);
  let left = n;
  const len = r.points.length;
  for (let i = position(r, keyHash(key)), steps = 0; steps < len && left > 0; steps++, i = i + 1 === len ? 0 : i + 1) {
    const e = r.owner[i] as number;
    if (seen[e] === 1) continue;
    seen[e] = 1;
    left--;
    if (visit(r.endpoints[e] as Upstream)) return;
  }
}

/** The first `size` distinct endpoints from `key`'s position (all of them when there are fewer). */
export function ringSubset(r: Ring, key: string, size: number): Upstream[] {
  const out: Upstream[] = [];
  ringWalk(r, key, (u) => {
    out.push(u);
    return out.length >= size;
  });
  return out;
}

// A ring lives as long as its Backend object: the compiler replaces the Backend when its
// endpoints change (and keeps it otherwise), so a ring is built once per endpoint set and
// process, on the first request that needs it.
const rings = new WeakMap<Backend, Ring>();

export function ringOf(backend: Backend): Ring {
  let r = rings.get(backend);
  if (r === undefined) {
    r = buildRing(backend.endpoints);
    rings.set(backend, r);
  }
  return r;
}
