// The authentication stage's basic-auth policy: nginx's auth_basic, as ingress-nginx
// configures it for `auth-type: basic` (annotations/basic-auth.ts). The compiler has resolved
// the Secret into the users (compile/access.ts); this checks the client's credentials. The
// hashing itself runs on the I/O side (proxy/crypt/, bcrypt off the event loop), reached
// through PolicyCaps.verifyPassword; kinds/authentication.ts registers the kind.
import { createHmac, randomBytes } from "node:crypto";
import * as v from "valibot";
import { checkHash, type HashFormat } from "../policy/htpasswd.ts";
import { defineKind, needCaps } from "./define.ts";
import { refusal } from "./refusal.ts";
import { Pair, Str } from "./schema.ts";
import type { PolicyFlow } from "./types.ts";

/**
 * Credentials (user, `:`, password) longer than this are refused without hashing: MD5-crypt
 * hashes the password 2000 times, so a 16 KiB one would hold the event loop for ~100 ms.
 */
export const MAX_CREDENTIALS_BYTES = 1024;

const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const B64_VALUE = new Int8Array(256).fill(-1);
for (let i = 0; i < B64.length; i++) B64_VALUE[B64.charCodeAt(i)] = i;

/**
 * Base64 as nginx's ngx_decode_base64 reads it: the text up to the first `=` must be all
 * base64 characters (anything else, a space included, fails), padding is optional, what
 * follows the first `=` is ignored, and a length of 4n+1 characters fails.
 */
function decodeBase64Nginx(text: string): Uint8Array | null {
  const eq = text.indexOf("=");
  const src = eq < 0 ? text : text.slice(0, eq);
  if (src.length % 4 === 1) return null;
  const out = new Uint8Array(Math.floor((src.length * 3) / 4));
  let o = 0;
  let acc = 0;
  let bits = 0;
  for (let i = 0; i < src.length; i++) {
    const c = src.charCodeAt(i);
    const v = c < 256 ? (B64_VALUE[c] as number) : -1;
    if (v < 0) return null;
    acc = ((acc << 6) | v) & 0xffffff;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (acc >> bits) & 0xff;
    }
  }
  return out.subarray(0, o);
}

export interface Credentials {
  /** The user name's bytes as a latin1 string (one char per byte), as the users are held. */
  readonly user: string;
  readonly password: Uint8Array;
}

/**
 * The credentials of an Authorization header, or null when there are none to check, as nginx's
 * ngx_http_auth_basic_user decides: the scheme is `Basic ` in any case, spaces after it are
 * skipped, the rest is base64 of `user:password` split at the first `:`, and an empty user or
 * no `:` is no credentials. Portico also refuses a password with a NUL byte (nginx would check
 * only what precedes it) and credentials over MAX_CREDENTIALS_BYTES.
 */
function parseBasicAuthorization(header: string | null): Credentials | null {
  if (header === null || header.length < 6 || header.slice(0, 6).toLowerCase() !== "basic ") return null;
  let i = 6;
  while (i < header.length && header[i] === " ") i++;
  if (i === header.length || header.length - i > Math.ceil(MAX_CREDENTIALS_BYTES / 3) * 4 + 4) return null;
  const decoded = decodeBase64Nginx(header.slice(i));
  if (decoded === null || decoded.length > MAX_CREDENTIALS_BYTES) return null;
  const colon = decoded.indexOf(0x3a);
  if (colon <= 0) return null;
  const password = decoded.subarray(colon + 1);
  if (password.includes(0)) return null;
  return { user: Buffer.from(decoded.subarray(0, colon)).toString("latin1"), password };
}

interface StoredUser {
  readonly hash: string;
  readonly format: HashFormat;
}

const REALM = /^[A-Za-z0-9 ._~/:-]*$/;

/**
 * Costly checks (bcrypt, the crypt() formats) one route runs at once. Four cover a browser's
 * first burst of parallel requests with the same credentials; more would let one route's
 * flood of wrong passwords fill the hashing threads every route shares.
 */
export const CHECKS_PER_ROUTE = 4;
/**
 * Requests of one route waiting for a check slot; past them the answer is 503 with
 * Retry-After. A wait keeps a legitimate burst from failing; the bound keeps a flood from
 * holding unbounded requests (each waiting request holds its connection and memory).
 */
export const WAITING_PER_ROUTE = 16;
/**
 * Costly checks the whole process runs at once, over every route: as many as keep the two
 * hashing threads (proxy/crypt/hash-pool.ts) and Bun's bcrypt threads busy. Past it, checks wait in
 * the process's line, which serves the routes in turn (FairLine): without it, every route's
 * CHECKS_PER_ROUTE checks went straight to the threads' queues, first come first served, so a
 * flood on many routes (one tenant's many Ingresses, or a client hitting every host) put
 * another route's login behind all of them.
 */
export const CHECKS_IN_PROCESS = 4;
/** Successful logins remembered per route (LoginCache below). */
const REMEMBERED_PER_ROUTE = 256;

/**
 * What the password checks do, for /metrics (admin/instruments.ts reads it at scrape time):
 * summed over every route of this process.
 */
export const PASSWORD_CHECKS = {
  /** Costly checks running now. */
  active: 0,
  /** The most costly checks one route has run at once: never above CHECKS_PER_ROUTE. */
  peakPerRoute: 0,
  /** Requests answered 503 because their route's checks and waiting places were all taken. */
  busy: 0,
  /** Logins answered from the cache of successful ones, without hashing. */
  remembered: 0,
};

/** At most `limit` holders at once, then at most `waiting` in line, then no. */
class CheckSlots {
  private active = 0;
  private readonly line: (() => void)[] = [];
  constructor(
    private readonly limit: number,
    private readonly waiting: number,
  ) {}

  /** true once a slot is held (release it), false when the line is full. */
  async acquire(): Promise<boolean> {
    if (this.active < this.limit) {
      this.active++;
      PASSWORD_CHECKS.active++;
      if (this.active > PASSWORD_CHECKS.peakPerRoute) PASSWORD_CHECKS.peakPerRoute = this.active;
      return true;
    }
    if (this.line.length >= this.waiting) return false;
    // The releasing holder hands its slot over: `active` does not change.
    await new Promise<void>((resolve) => this.line.push(resolve));
    return true;
  }

  release(): void {
    const next = this.line.shift();
    if (next !== undefined) return next();
    this.active--;
    PASSWORD_CHECKS.active--;
  }
}

/**
 * At most `limit` holders at once over every route; the others wait in one line per route, and
 * a freed place goes to the route at the head of the round, which then moves to its end. A
 * route's line holds at most its CHECKS_PER_ROUTE checks, so the lines are bounded too.
 */
class FairLine {
  private active = 0;
  private readonly lines = new Map<object, (() => void)[]>();
  constructor(private readonly limit: number) {}

  acquire(route: object): Promise<void> | null {
    if (this.active < this.limit) {
      this.active++;
      return null;
    }
    return new Promise<void>((resolve) => {
      const line = this.lines.get(route);
      if (line === undefined) this.lines.set(route, [resolve]);
      else line.push(resolve);
    });
  }

  /** The place goes to the next route in turn (`active` unchanged), else it is freed. */
  release(): void {
    const head = this.lines.entries().next();
    if (head.done === true) {
      this.active--;
      return;
    }
    const [route, line] = head.value;
    const next = line.shift() as () => void;
    this.lines.delete(route);
    if (line.length > 0) this.lines.set(route, line);
    next();
  }
}

const PROCESS_LINE = new FairLine(CHECKS_IN_PROCESS);

/**
 * The process's key for remembering logins: random per process, never written anywhere, so
 * what the cache holds (an HMAC of user and password) cannot be tested against a password
 * list without this process's memory, where the passwords themselves pass anyway.
 */
const LOGIN_KEY = randomBytes(32);

/**
 * Successful logins of one route, most recent last, at most REMEMBERED_PER_ROUTE: a request
 * with the same user and password is let through without hashing again (nginx hashes every
 * request; with bcrypt at cost 12 that is a quarter of a second of a thread per request of a
 * logged-in browser). Only successes are held, so a wrong password always costs a full check,
 * and the cache belongs to one policy object: the users it was built with (a changed Secret
 * builds a new one, and a new, empty cache).
 */
class LoginCache {
  private readonly keys = new Set<string>();

  static keyOf(user: string, password: Uint8Array): string {
    return createHmac("sha256", LOGIN_KEY).update(user, "latin1").update(new Uint8Array([0])).update(password).digest("base64");
  }

  has(key: string): boolean {
    if (!this.keys.has(key)) return false;
    this.keys.delete(key);
    this.keys.add(key);
    return true;
  }

  add(key: string): void {
    this.keys.delete(key);
    this.keys.add(key);
    if (this.keys.size > REMEMBERED_PER_ROUTE) this.keys.delete(this.keys.values().next().value as string);
  }
}

/**
 * auth-type basic: `users` is null until compile/access.ts reads the Secret (the runner then refuses).
 *
 * `{ realm, secret, users: [[user, hash], ...] }` (users and hashes as latin1 strings). Missing
 * or wrong credentials get 401 with `WWW-Authenticate: Basic realm="…"`; on success the
 * request goes on without its Authorization header (ingress-nginx sets it to "" upstream).
 * A user who is not listed costs one verification against another user's hash, so the time
 * of a 401 does not tell which users exist. A costly check waits for one of the route's
 * CHECKS_PER_ROUTE slots; when those and the WAITING_PER_ROUTE places are taken, or no hashing
 * thread can run it, the answer is 503 (never the backend: access control fails closed).
 */
export const BASIC_AUTH = defineKind("basic-auth", "authentication", v.object({ realm: Str, secret: Str, users: v.nullable(v.array(Pair)) }), (params, caps) => {
  const { verifyPassword, isCostly } = needCaps(caps, "basic-auth");
  const { realm, users } = params;
  if (typeof realm !== "string" || !REALM.test(realm)) throw new TypeError("realm is missing or has characters a quoted string cannot hold");
  if (!Array.isArray(users)) throw new TypeError("users are not resolved (the Secret was not read)");
  const table = new Map<string, StoredUser>();
  for (const entry of users) {
    if (!Array.isArray(entry) || entry.length !== 2 || typeof entry[0] !== "string" || typeof entry[1] !== "string") throw new TypeError("a user entry is malformed");
    const [user, hash] = entry as [string, string];
    const { format } = checkHash(hash);
    if (format === null) throw new TypeError("a user's hash cannot be verified");
    if (!table.has(user)) table.set(user, { hash, format });
  }
  const dummy: StoredUser | null = table.values().next().value ?? null;
  const challenge = { "www-authenticate": `Basic realm="${realm}"` };
  const unauthorized = (flow: PolicyFlow) => refusal(flow, 401, "unauthorized\n", challenge);
  const busy = (flow: PolicyFlow) => refusal(flow, 503, "password checks busy, retry later\n", { "retry-after": "1" });
  const slots = new CheckSlots(CHECKS_PER_ROUTE, WAITING_PER_ROUTE);
  const remembered = new LoginCache();
  return async (flow) => {
    // A no-auth-locations rule (the compiler decided it on the path as written:
    // annotations/basic-auth.ts skipsAuthentication), never the request's path.
    if (flow.route.authExempt === true) return null;
    const creds = parseBasicAuthorization(flow.req.headers.get("authorization"));
    if (creds === null) return unauthorized(flow);
    const stored = table.get(creds.user);
    const against = stored ?? dummy;
    // With no users at all there is nothing to time against: every answer is a 401.
    if (against === null) return unauthorized(flow);
    // Computed for an unknown user too, so its 401 costs what a known user's does.
    const key = LoginCache.keyOf(creds.user, creds.password);
    if (stored !== undefined && remembered.has(key)) {
      PASSWORD_CHECKS.remembered++;
      (flow.removeHeaders ??= []).push("authorization");
      return null;
    }
    const costly = isCostly(against.format);
    if (costly && !(await slots.acquire())) {
      PASSWORD_CHECKS.busy++;
      return busy(flow);
    }
    let ok: boolean;
    try {
      if (costly) await PROCESS_LINE.acquire(slots);
      try {
        ok = await verifyPassword(creds.password, against.hash, against.format);
      } finally {
        if (costly) PROCESS_LINE.release();
      }
    } catch {
      // No hashing thread could run it: refused, and said to be the server's fault.
      return busy(flow);
    } finally {
      if (costly) slots.release();
    }
    if (stored === undefined || !ok) return unauthorized(flow);
    remembered.add(key);
    (flow.removeHeaders ??= []).push("authorization");
    return null;
  };
});
