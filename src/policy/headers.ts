// Which header fields a route may set or test, and with which values: the headers family
// checks them when it reads the annotations, the proxy checks them again when it builds the
// policy from table data that crossed IPC (docs/design.md, "Annotations and policies").

/** One field: its name as written and its value. */
export type HeaderEntry = readonly [name: string, value: string];

export const HEADER_DENY_DEFAULT_STATUS = 403;
/** 444 is nginx's "close without an answer", which has no HTTP equivalent. */
export const isDenyStatus = (n: number): boolean => Number.isInteger(n) && n >= 400 && n <= 599 && n !== 444;

// Bounds: an annotation is at most 256 KiB of metadata in total (Kubernetes), but a header
// list this long is a mistake; nginx's default large_client_header_buffers is 8 KiB a line.
export const HEADER_LIMITS = Object.freeze({ entries: 64, value: 4096, text: 16384 });

// RFC 9110 §5.1: field-name = token; §5.5: a field value is visible characters, spaces and
// tabs (obs-text is not taken: RFC 9110 asks new values to stay in US-ASCII).
/** RFC 9110 §5.1 field-name (a token). */
export const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/**
 * RFC 9110 §5.5 field value without obs-text: what Portico sends as written from text it was
 * given (a policy's fields; the ConfigMaps of auth-proxy-set-headers, add-headers and
 * proxy-set-headers, and their values once expanded). Never CR, LF or NUL.
 */
export const ASCII_FIELD_VALUE = /^[\t\x20-\x7e]*$/;
/**
 * RFC 9110 §5.5 field value with obs-text: what a Gateway API header filter may carry (the CRD
 * takes any value without CR, LF or NUL); checked by compile/gateway/rules.ts and again by
 * kinds/schema.ts editableFields on the table a worker received.
 */
export const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
/**
 * Hop-by-hop fields and Content-Length (RFC 9110 §7.6.1, §8.6): they frame the connection a
 * message travels on, not the message, so a Gateway API header filter may not touch them
 * either way (compile/gateway/rules.ts, kinds/schema.ts).
 */
export const FRAMING: ReadonlySet<string> = new Set(["connection", "proxy-connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade", "content-length"]);

// RFC 9110 §7.6.1: hop-by-hop fields describe one connection, not the message; Content-Length
// and Transfer-Encoding its framing (RFC 9112 §6), which Portico computes itself.
const REFUSED_BOTH: ReadonlyMap<string, string> = new Map([
  ...["connection", "proxy-connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade"].map((n) => [n, "a hop-by-hop field"] as const),
  ["proxy-authorization", "a hop-by-hop field"],
  ["proxy-authenticate", "a hop-by-hop field"],
  ["content-length", "the message framing, which Portico sets"],
  ["host", "Host is the client's (RFC 9110 §7.2)"],
  ["x-request-id", "Portico's request id"],
]);
// Portico sets these from what it saw (and --trusted-proxies): a fixed value would lie to the
// pods about the client.
const REFUSED_REQUEST: ReadonlyMap<string, string> = new Map(
  ["x-forwarded-for", "x-forwarded-proto", "x-forwarded-host", "x-forwarded-port", "x-real-ip", "forwarded"].map((n) => [n, "set by Portico from the connection (see --trusted-proxies)"] as const),
);

/** Why a field of this name may not be set (null: it may). */
export function refusedHeader(name: string, side: "request" | "response"): string | null {
  const n = name.toLowerCase();
  return REFUSED_BOTH.get(n) ?? (side === "request" ? REFUSED_REQUEST.get(n) ?? null : null);
}

/** Why `name: value` cannot be set on `side` (null: it can). */
export function checkHeader(name: string, value: string, side: "request" | "response"): string | null {
  if (!TOKEN.test(name)) return `${JSON.stringify(name)} is not a header name (RFC 9110 token)`;
  const refused = refusedHeader(name, side);
  if (refused !== null) return `${name} may not be set: ${refused}`;
  if (value === "") return `${name} has no value`;
  if (value.length > HEADER_LIMITS.value) return `${name}: a value is at most ${HEADER_LIMITS.value} characters`;
  if (!ASCII_FIELD_VALUE.test(value)) return `${name}: a value holds only visible ASCII characters, spaces and tabs`;
  return null;
}
