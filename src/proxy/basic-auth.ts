// The authentication stage's basic-auth policy: nginx's auth_basic, as ingress-nginx
// configures it for `auth-type: basic` (annotations/basic-auth.ts). The compiler has resolved
// the Secret into the users (compile/access.ts); this checks the client's credentials.
import { checkHash, type HashFormat } from "../annotations/htpasswd.ts";
import type { PolicyFlow, PolicyKind } from "./policies.ts";
import { refusal } from "./access.ts";
import { verifyPassword } from "./crypt.ts";

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
export function decodeBase64Nginx(text: string): Uint8Array | null {
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
export function parseBasicAuthorization(header: string | null): Credentials | null {
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
 * `{ realm, secret, users: [[user, hash], ...] }` (users and hashes as latin1 strings). Missing
 * or wrong credentials get 401 with `WWW-Authenticate: Basic realm="…"`; on success the
 * request goes on without its Authorization header (ingress-nginx sets it to "" upstream).
 * A user who is not listed costs one verification against another user's hash, so the time
 * of a 401 does not tell which users exist.
 */
export const BASIC_AUTH: PolicyKind = {
  stage: "authentication",
  build(params) {
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
    return async (flow) => {
      // A no-auth-locations rule (the compiler decided it on the path as written:
      // annotations/basic-auth.ts skipsAuthentication), never the request's path.
      if (flow.route.authExempt === true) return null;
      const creds = parseBasicAuthorization(flow.req.headers.get("authorization"));
      if (creds === null) return unauthorized(flow);
      const stored = table.get(creds.user);
      const against = stored ?? dummy;
      // With no users at all there is nothing to time against: every answer is a 401.
      const ok = against !== null && (await verifyPassword(creds.password, against.hash, against.format));
      if (stored === undefined || !ok) return unauthorized(flow);
      (flow.removeHeaders ??= []).push("authorization");
      return null;
    };
  },
};
