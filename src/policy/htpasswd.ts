// The users of a basic-authentication Secret, read as nginx's auth_basic reads its user file,
// and the password hash formats nginx accepts. Pure: the proxy computes the hashes
// (proxy/crypt/crypt.ts); the compiler reads the Secret (compile/access.ts).
//
// nginx (ngx_http_auth_basic_module) reads the file line by line: a line starting with `#` or
// CR is skipped; the user is everything before the first `:`, compared byte for byte with the
// client's; the hash runs to the next `:`, CR or LF; the first line for a user wins. It then
// computes ngx_crypt(password, hash) and compares the result with the hash: `$apr1$`,
// `{PLAIN}`, `{SSHA}` and `{SHA}` are nginx's own (ngx_crypt.c); everything else goes to the C
// library's crypt(), which in ingress-nginx's image (Alpine, musl) knows `$1$`, `$2a$`/`$2b$`/
// `$2x$`/`$2y$` (bcrypt), `$5$`, `$6$` and traditional DES. A hash in no format never matches:
// a plain-text password without `{PLAIN}` is a user who cannot log in.

/** User names and hashes are bytes: both are held as latin1 strings (one char per byte). */
export type HashFormat = "apr1" | "md5-crypt" | "bcrypt" | "sha256-crypt" | "sha512-crypt" | "sha1" | "ssha" | "plain" | "des";

export interface HashCheck {
  readonly format: HashFormat | null;
  /** Why this user can never log in (format null), for a diagnostic. */
  readonly problem: string | null;
}

/**
 * bcrypt costs above this are refused (the user cannot log in, with a diagnostic). Each step
 * doubles the work: measured on Bun 1.4.5, cost 10 ~60 ms, 12 ~235 ms, 13 ~500 ms of a hashing
 * thread per check, and a wrong password or an unknown user costs a full check. 12 is the
 * most the usual tools write: `htpasswd -B` defaults to 5, PHP's password_hash to 10 (12 from
 * PHP 8.4), Python's bcrypt.gensalt to 12. A quarter of a second per check is the budget
 * the SHA-crypt bound stays within too.
 */
export const MAX_BCRYPT_COST = 12;
/**
 * SHA-crypt rounds above this are refused (the user cannot log in, with a diagnostic). 5000 is
 * what every tool writes by default (`htpasswd -2`/`-5`, `openssl passwd -5`/`-6`, `mkpasswd`,
 * crypt()'s own default); hardened setups write 10,000 to 50,000 by hand. 50,000 SHA-512 rounds
 * measured ~28 ms on Bun 1.4.5 (5000: ~3.4 ms), well inside the budget above; musl accepts up to
 * 9,999,999 (seconds per check).
 */
export const MAX_SHA_CRYPT_ROUNDS = 50_000;

const B64 = "[./0-9A-Za-z]";
const BCRYPT = new RegExp(`^\\$2([abxy])\\$(\\d\\d)\\$${B64}{53}$`);
const SHA_CRYPT = /^\$([56])\$(?:rounds=(\d+)\$)?/;
const DES = new RegExp(`^${B64}{13}$`);

const ok = (format: HashFormat): HashCheck => ({ format, problem: null });
const never = (problem: string): HashCheck => ({ format: null, problem });

/** Which computation verifies this stored hash, or why none can. */
export function checkHash(hash: string): HashCheck {
  // nginx's own formats first, in ngx_crypt()'s order.
  if (hash.startsWith("$apr1$")) return ok("apr1");
  if (hash.startsWith("{PLAIN}")) return ok("plain");
  if (hash.startsWith("{SSHA}")) return ok("ssha");
  if (hash.startsWith("{SHA}")) return ok("sha1");
  // Then musl's crypt().
  if (hash.startsWith("$1$")) return ok("md5-crypt");
  if (hash.startsWith("$2")) {
    const m = BCRYPT.exec(hash);
    if (m === null) return never("its bcrypt hash is malformed");
    // $2x$ asks for the sign-extension bug of old crypt_blowfish on 8-bit passwords; the
    // bcrypt Portico runs does not reproduce it.
    if (m[1] === "x") return never("$2x$ bcrypt hashes (the crypt_blowfish bug-compatible variant) are not supported; rehash it with htpasswd -B");
    const cost = Number(m[2]);
    if (cost < 4 || cost > 31) return never("its bcrypt cost is outside 4-31");
    if (cost > MAX_BCRYPT_COST) return never(`its bcrypt cost ${cost} is above ${MAX_BCRYPT_COST}, the most Portico computes per request`);
    return ok("bcrypt");
  }
  const sha = SHA_CRYPT.exec(hash);
  if (sha !== null) {
    const rounds = sha[2] === undefined ? 5000 : Number(sha[2]);
    if (rounds > MAX_SHA_CRYPT_ROUNDS) return never(`its ${rounds} SHA-crypt rounds are above ${MAX_SHA_CRYPT_ROUNDS}, the most Portico computes per request`);
    return ok(sha[1] === "5" ? "sha256-crypt" : "sha512-crypt");
  }
  if (DES.test(hash)) return ok("des");
  if (hash.startsWith("$")) return never("its hash is in a format nginx cannot check");
  return never("its password is not hashed (nginx compares plain text only after {PLAIN})");
}

export interface UserEntry {
  readonly user: string;
  readonly hash: string;
}

export interface ReadUsers {
  /** In file order, first line per user, users whose hash can never match left out. */
  readonly users: readonly UserEntry[];
  /** One sentence per user left out or line ignored, naming the user, never the hash. */
  readonly problems: readonly string[];
}

const show = (user: string): string => JSON.stringify(user);

/** The hash field of a line: up to the next `:`, CR or LF, as nginx reads it. */
function hashField(rest: string): string {
  const end = rest.search(/[:\r\n]/);
  return end < 0 ? rest : rest.slice(0, end);
}

function collect(entries: Iterable<readonly [string, string]>, problems: string[]): UserEntry[] {
  const users: UserEntry[] = [];
  const seen = new Set<string>();
  for (const [user, hash] of entries) {
    if (seen.has(user)) {
      problems.push(`user ${show(user)} is listed again; the first entry is used`);
      continue;
    }
    seen.add(user);
    const c = checkHash(hash);
    if (c.format === null) problems.push(`user ${show(user)} cannot log in: ${c.problem}`);
    else users.push(Object.freeze({ user, hash }));
  }
  return users;
}

/** htpasswd text (latin1, one char per byte), as auth_basic_user_file reads it. */
export function usersFromFile(text: string): ReadUsers {
  const problems: string[] = [];
  const entries: [string, string][] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    if (line === "" || line === "\r" || line.startsWith("#") || line.startsWith("\r")) continue;
    const colon = line.indexOf(":");
    // A client's user name is never empty (a `Basic` value with an empty user is no user), so
    // a line with no `:` or nothing before it matches nobody.
    if (colon <= 0) {
      problems.push(`line ${i + 1} of the user file has no user name followed by ":"; it is ignored`);
      continue;
    }
    entries.push([line.slice(0, colon), hashField(line.slice(colon + 1))]);
  }
  return { users: collect(entries, problems), problems };
}

/**
 * auth-map: each key a user, its value the hash. ingress-nginx writes `key:value` lines into a
 * user file, so the value is read as that line's hash field: up to a `:`, CR or LF. Further
 * lines of a value would be more users there; here they are not (a Secret value cannot
 * create a user whose name is not a key).
 */
export function usersFromMap(entries: readonly (readonly [string, string])[]): ReadUsers {
  const problems: string[] = [];
  const pairs: [string, string][] = [];
  for (const [user, value] of entries) {
    const hash = hashField(value);
    const rest = value.slice(hash.length);
    if (/[\r\n]\s*\S/.test(rest)) problems.push(`the value of user ${show(user)} has more than one line; only the first is read`);
    pairs.push([user, hash]);
  }
  return { users: collect(pairs, problems), problems };
}
