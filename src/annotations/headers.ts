// Fixed header fields set on the request sent to the pods (portico.dev/request-headers) and on
// the responses relayed from them (portico.dev/response-headers). They replace the commonest
// ingress-nginx snippets (`proxy_set_header`, `more_set_headers`, `add_header` with a literal
// value) without any configuration text: a value is checked here and set as one field, never
// expanded (no `$variables`) and never spliced into anything.
import * as v from "valibot";
import type { StagePolicy } from "../table/policy.ts";
import type { AnnotationSpec, Family } from "./spec.ts";
import { PORTICO_PREFIX } from "./spec.ts";

/** One field: its name as written and its value. */
export type HeaderEntry = readonly [name: string, value: string];

export interface HeadersPolicy {
  /** Set on the upstream request, in order (a repeated name is appended). Empty: none. */
  readonly request: readonly HeaderEntry[];
  /** Set on relayed responses, likewise. */
  readonly response: readonly HeaderEntry[];
}

/** The stage policy kind the proxy implements (proxy/header-policy.ts). */
export const HEADERS_KIND = "headers";

// Bounds: an annotation is at most 256 KiB of metadata in total (Kubernetes), but a header
// list this long is a mistake; nginx's default large_client_header_buffers is 8 KiB a line.
export const HEADER_LIMITS = Object.freeze({ entries: 64, value: 4096, text: 16384 });

// RFC 9110 §5.1: field-name = token; §5.5: a field value is visible characters, spaces and
// tabs (obs-text is not taken: RFC 9110 asks new values to stay in US-ASCII).
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const VALUE = /^[\t\x20-\x7e]*$/;

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
  if (!VALUE.test(value)) return `${name}: a value holds only visible ASCII characters, spaces and tabs`;
  return null;
}

// A comma starts a new entry only when `Name:` follows it, so a value such as
// `no-cache, no-store` stays whole. Linear: the lookahead stops at the first non-token byte.
const ENTRY_COMMA = /,(?=[ \t]*[!#$%&'*+\-.^_`|~0-9A-Za-z]+:)/;

/**
 * `Name: value` entries, one per line, or on one line separated by commas each followed by
 * `Name:` (a value holding `, word:` needs the one-per-line form). Blank lines are skipped;
 * optional whitespace around a value is not part of it (RFC 9110 §5.5).
 */
export function parseHeaderList(text: string, side: "request" | "response"): { ok: true; entries: HeaderEntry[] } | { ok: false; why: string } {
  if (text.length > HEADER_LIMITS.text) return { ok: false, why: `the list is longer than ${HEADER_LIMITS.text} characters` };
  if (text.includes("\r") || text.includes("\0")) return { ok: false, why: "a value may not contain CR or NUL" };
  const parts = text.includes("\n") ? text.split("\n") : text.split(ENTRY_COMMA);
  const entries: HeaderEntry[] = [];
  for (const part of parts) {
    const line = part.trim();
    if (line === "") continue;
    const colon = line.indexOf(":");
    // RFC 9112 §5.1: no whitespace between the field name and the colon.
    if (colon <= 0) return { ok: false, why: `${JSON.stringify(line.slice(0, 60))} is not "Name: value"` };
    const name = line.slice(0, colon);
    const value = line.slice(colon + 1).trim();
    const bad = checkHeader(name, value, side);
    if (bad !== null) return { ok: false, why: bad };
    if (entries.length === HEADER_LIMITS.entries) return { ok: false, why: `at most ${HEADER_LIMITS.entries} headers` };
    // RFC 9110 §5.3: Set-Cookie values cannot be joined into one field, and a response's
    // fields are set as one field per name.
    if (side === "response" && name.toLowerCase() === "set-cookie" && entries.some(([n]) => n.toLowerCase() === "set-cookie")) {
      return { ok: false, why: "Set-Cookie may appear once" };
    }
    entries.push(Object.freeze([name, value] as const));
  }
  if (entries.length === 0) return { ok: false, why: "no `Name: value` entry" };
  return { ok: true, entries };
}

const listSchema = (side: "request" | "response"): v.GenericSchema<string, readonly HeaderEntry[]> =>
  v.pipe(
    v.string(),
    v.rawTransform(({ dataset, addIssue, NEVER }) => {
      const r = parseHeaderList(dataset.value, side);
      if (!r.ok) {
        addIssue({ message: r.why });
        return NEVER;
      }
      return Object.freeze(r.entries);
    }),
  );

const LIST_FORM = "`Name: value` entries, one per line (or separated by commas, each followed by `Name:`)";

export const REQUEST_HEADERS: AnnotationSpec = {
  portico: `${PORTICO_PREFIX}request-headers`,
  nginx: [],
  family: "headers",
  default: "none",
  description: `${LIST_FORM}: set on the request sent to the pods, replacing a field the client sent (a field another annotation sets, such as auth-response-headers, stays); a repeated name is one field, its values joined by ", "; literal values, no variables; hop-by-hop fields, Host, Content-Length, X-Request-ID and the X-Forwarded-*/X-Real-IP/Forwarded fields are refused`,
  compat: { kind: "portico-only" },
  multiline: true,
};

export const RESPONSE_HEADERS: AnnotationSpec = {
  portico: `${PORTICO_PREFIX}response-headers`,
  nginx: [],
  family: "headers",
  default: "none",
  description: `${LIST_FORM}: set on every response relayed from the pods (any status), replacing the pod's field of that name (Vary: added to the pod's list; a field the CORS annotations set stays); a repeated name is one field, its values joined by ", "; not on Portico's own answers (its errors and redirects); hop-by-hop fields, Content-Length and X-Request-ID are refused, Set-Cookie may appear once`,
  compat: { kind: "portico-only" },
  multiline: true,
};

const NONE: HeadersPolicy = Object.freeze({ request: Object.freeze([]), response: Object.freeze([]) });

const CONSEQUENCE = "no header of this annotation is set";

export const HEADERS: Family<HeadersPolicy> = {
  name: "headers",
  annotations: [REQUEST_HEADERS, RESPONSE_HEADERS],
  none: NONE,
  parse(r) {
    const req = r.read(REQUEST_HEADERS, listSchema("request"), CONSEQUENCE);
    const res = r.read(RESPONSE_HEADERS, listSchema("response"), CONSEQUENCE);
    const request = req.state === "ok" ? req.value : NONE.request;
    const response = res.state === "ok" ? res.value : NONE.response;
    if (request.length === 0 && response.length === 0) return NONE;
    return Object.freeze({ request, response });
  },
};

/** The forwarding-stage policy that carries the headers to the proxy (none when there are none). */
export function headerStages(p: HeadersPolicy): StagePolicy[] {
  if (p.request.length === 0 && p.response.length === 0) return [];
  const list = (entries: readonly HeaderEntry[]) => entries.map(([n, val]) => [n, val]);
  return [{ stage: "forwarding", kind: HEADERS_KIND, params: { request: list(p.request), response: list(p.response) } }];
}

