// Fixed header fields set on the request sent to the pods (portico.dev/request-headers) and on
// the responses relayed from them (portico.dev/response-headers). They replace the commonest
// ingress-nginx snippets (`proxy_set_header`, `more_set_headers`, `add_header` with a literal
// value) without any configuration text: a value is checked here and set as one field, never
// expanded (no `$variables`) and never spliced into anything.
import * as v from "valibot";
import { compileHeaderPattern } from "../regex/header-pattern.ts";
import type { StagePolicy } from "../policy/stages.ts";
import { refuseStage } from "./access-stages.ts";
import type { AnnotationSpec, Family } from "./spec.ts";
import { NGINX_PREFIX, PORTICO_PREFIX } from "./spec.ts";
import { checkHeader, HEADER_DENY_DEFAULT_STATUS, HEADER_LIMITS, isDenyStatus, TOKEN, type HeaderEntry } from "../policy/headers.ts";
import * as K from "../kinds/index.ts";
import { stagePolicy } from "../policy/contract.ts";


export interface HeadersPolicy {
  /** Set on the upstream request, in order (a repeated name is appended). Empty: none. */
  readonly request: readonly HeaderEntry[];
  /** Set on relayed responses, likewise. */
  readonly response: readonly HeaderEntry[];
  /** Requests refused by a request header (portico.dev/deny-request-headers). Empty: none. */
  readonly deny: readonly HeaderDenyRule[];
  /** Why the deny list cannot be applied (then every request is refused), or null. */
  readonly denyInvalid: string | null;
  /** custom-headers as written (trimmed): the ConfigMap the compiler reads (compile/custom-headers.ts), or null. */
  readonly customHeaders: string | null;
  /** connection-proxy-header: the Connection field sent to the pods, or null (Portico's own). */
  readonly connection: ConnectionValue | null;
}

/** The values ingress-nginx's connection parser accepts (annotations/connection/main.go). */
type ConnectionValue = (typeof K.CONNECTION_VALUES)[number];

/**
 * One line of portico.dev/deny-request-headers: nginx's `if ($http_<name> <op> "<regex>") {
 * return <status>; }` with `op` one of `~` (matches), `~*` (matches, any case), `!~`, `!~*`
 * (does not match).
 */
export interface HeaderDenyRule {
  readonly status: number;
  readonly name: string;
  readonly op: "~" | "~*" | "!~" | "!~*";
  readonly pattern: string;
}

const DENY_RULES_MAX = 32;

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

export const CUSTOM_HEADERS: AnnotationSpec = {
  portico: null,
  nginx: [`${NGINX_PREFIX}custom-headers`],
  family: "headers",
  default: "none",
  description:
    "`<namespace>/<name>` of a ConfigMap in the Ingress's namespace whose entries are set on every response relayed from the pods (replacing the pod's field), values literal (`$` is not expanded); each name must be listed in the ConfigMap key `global-allowed-response-headers` (`--global-allowed-response-headers`), be letters, digits, `-` and `_`, and its value non-empty; otherwise, or when the ConfigMap is missing, every request answers 503, as in ingress-nginx",
  compat: {
    kind: "differs",
    difference:
      "Not set on Portico's own answers (its 502/503/504 and redirects); a ConfigMap in another namespace is refused (503; ingress-nginx's documentation allows the Ingress's own namespace only, its code reads any); a field Portico never lets a policy set (hop-by-hop fields, Content-Length, X-Request-ID) answers 503. An edit or deletion of the ConfigMap applies at once. A `<namespace>/<name>` value is served the same.",
  },
  sameWhen: (value) => /^[-._~a-zA-Z0-9:]+\/[-._~a-zA-Z0-9:]+$/.test(value.trim()),
};

// parser.BasicCharsRegex (alphaNumericChars and `/`), checked after removing spaces as
// ValidateRegex(…, true) does.
const BASIC_CHARS_RE = /^[-._~a-zA-Z0-9/:]*$/;
const ConfigMapName = v.pipe(
  v.string(),
  v.trim(),
  v.minLength(1, "empty value"),
  v.check((s) => BASIC_CHARS_RE.test(s.replaceAll(" ", "")), "expected <namespace>/<ConfigMap name>"),
);

const OPS = ["!~*", "!~", "~*", "~"] as const;

/**
 * `[status] Name op regex` lines (blank lines skipped; the status 403 unless given), the regex
 * being the rest of the line: each must compile on the linear-time engine
 * (regex/header-pattern.ts), as canary-by-header-pattern does.
 */
export function parseDenyRules(text: string): { ok: true; rules: HeaderDenyRule[] } | { ok: false; why: string } {
  if (text.length > HEADER_LIMITS.text) return { ok: false, why: `the list is longer than ${HEADER_LIMITS.text} characters` };
  if (text.includes("\r") || text.includes("\0")) return { ok: false, why: "the list may not contain CR or NUL" };
  const rules: HeaderDenyRule[] = [];
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "") continue;
    const m = /^(?:(\d{3})[ \t]+)?(\S+)[ \t]+(\S+)[ \t]+(.+)$/.exec(line);
    if (m === null) return { ok: false, why: `${JSON.stringify(line.slice(0, 60))} is not "[status] Name op regex"` };
    const [, code, name, op, pattern] = m as unknown as [string, string | undefined, string, string, string];
    const status = code === undefined ? HEADER_DENY_DEFAULT_STATUS : Number(code);
    if (!isDenyStatus(status)) return { ok: false, why: `${code} is not a status from 400 to 599 (444 excepted)` };
    if (!TOKEN.test(name)) return { ok: false, why: `${JSON.stringify(name)} is not a header name (RFC 9110 token)` };
    const o = OPS.find((x) => x === op);
    if (o === undefined) return { ok: false, why: `${JSON.stringify(op)} is not one of ~ ~* !~ !~*` };
    const c = compileHeaderPattern(o.endsWith("*") ? `(?i)${pattern}` : pattern);
    if (!c.ok) return { ok: false, why: `the pattern ${JSON.stringify(pattern)} ${c.reason}` };
    if (rules.length === DENY_RULES_MAX) return { ok: false, why: `at most ${DENY_RULES_MAX} rules` };
    rules.push(Object.freeze({ status, name, op: o, pattern }));
  }
  if (rules.length === 0) return { ok: false, why: "no `[status] Name op regex` rule" };
  return { ok: true, rules };
}

const DenyRules: v.GenericSchema<string, readonly HeaderDenyRule[]> = v.pipe(
  v.string(),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    const r = parseDenyRules(dataset.value);
    if (!r.ok) {
      addIssue({ message: r.why });
      return NEVER;
    }
    return Object.freeze(r.rules);
  }),
);

export const DENY_REQUEST_HEADERS: AnnotationSpec = {
  portico: `${PORTICO_PREFIX}deny-request-headers`,
  nginx: [],
  family: "headers",
  default: "none",
  description:
    "rules, one per line, `[status] Name op regex` with `op` `~` (matches), `~*` (matches, any case), `!~` or `!~*` (does not match), as nginx's `if ($http_name op \"regex\") { return status; }`: a request whose header (its value, or empty when absent) meets a rule gets its status (403 unless given; 400-599), the first rule met deciding, before the source ranges and authentication; the regex is unanchored and runs on the linear-time engine (RE2 syntax, PCRE spellings translated); an invalid list answers 503 on every path",
  compat: { kind: "portico-only" },
  multiline: true,
};

const NONE: HeadersPolicy = Object.freeze({ request: Object.freeze([]), response: Object.freeze([]), deny: Object.freeze([]), denyInvalid: null, customHeaders: null, connection: null });

export const CONNECTION_PROXY_HEADER: AnnotationSpec = {
  portico: `${PORTICO_PREFIX}connection-proxy-header`,
  nginx: [`${NGINX_PREFIX}connection-proxy-header`],
  family: "headers",
  default: "keep-alive (Portico's own)",
  description:
    "`close` or `keep-alive`: the Connection field of every request sent to the pods (nginx's `proxy_set_header Connection <value>`); `close` asks the pod to end the connection after its answer",
  compat: {
    kind: "differs",
    difference:
      "A WebSocket upgrade keeps `Connection: Upgrade` (in ingress-nginx the value replaces `$connection_upgrade`, so no WebSocket can be opened through such a location), and a gRPC backend gets no Connection field (HTTP/2 has none). Any other value is an InvalidAnnotation and the field stays Portico's (ingress-nginx refuses the Ingress). `close` and `keep-alive` on other requests are served the same.",
  },
  sameWhen: (value) => ConnectionSchemaValues.has(value.trim()),
};

// connection/main.go: parser.ValidateRegex(`^(close|keep-alive)$`, true), the value trimmed
// (parseString's normalizeString). Exactly these two strings: never a CR, LF or a
// second field.
const ConnectionSchemaValues: ReadonlySet<string> = new Set(K.CONNECTION_VALUES);
const ConnectionSchema = v.pipe(
  v.string(),
  v.trim(),
  v.picklist(K.CONNECTION_VALUES, `expected ${K.CONNECTION_VALUES.join(" or ")}`),
);

const CONSEQUENCE = "no header of this annotation is set";
// Access control fails closed: a deny list that cannot be read refuses every request.
const DENY_CONSEQUENCE = "every path of the Ingress answers 503 until it is fixed";

export const HEADERS: Family<HeadersPolicy> = {
  name: "headers",
  annotations: [REQUEST_HEADERS, RESPONSE_HEADERS, DENY_REQUEST_HEADERS, CUSTOM_HEADERS, CONNECTION_PROXY_HEADER],
  none: NONE,
  stages: (p) => headerStages(p),
  parse(r) {
    const req = r.read(REQUEST_HEADERS, listSchema("request"), CONSEQUENCE);
    const res = r.read(RESPONSE_HEADERS, listSchema("response"), CONSEQUENCE);
    const deny = r.read(DENY_REQUEST_HEADERS, DenyRules, DENY_CONSEQUENCE);
    const request = req.state === "ok" ? req.value : NONE.request;
    const response = res.state === "ok" ? res.value : NONE.response;
    const rules = deny.state === "ok" ? deny.value : NONE.deny;
    const denyInvalid = deny.state === "invalid" ? "deny-request-headers is invalid" : null;
    // customheaders/main.go: a value its validator refuses is logged and the location is
    // served without custom headers (Parse goes on with an empty name).
    const custom = r.read(CUSTOM_HEADERS, ConfigMapName, "no custom header is set");
    const customHeaders = custom.state === "ok" ? custom.value : null;
    const connection = r.value(CONNECTION_PROXY_HEADER, ConnectionSchema) ?? null;
    if (request.length === 0 && response.length === 0 && rules.length === 0 && denyInvalid === null && customHeaders === null && connection === null) return NONE;
    return Object.freeze({ request, response, deny: rules, denyInvalid, customHeaders, connection });
  },
};

/**
 * The policies that carry the headers to the proxy (none when there are none): the deny list
 * in the `denied` stage (nginx's `if … return` runs in the rewrite phase, before access and
 * authentication), the fields to set in `forwarding`.
 */
export function headerStages(p: HeadersPolicy): StagePolicy[] {
  const out: StagePolicy[] = [];
  if (p.denyInvalid !== null) out.push(refuseStage(p.denyInvalid));
  else if (p.deny.length > 0) {
    out.push(stagePolicy(K.HEADER_DENY, { rules: p.deny.map((d) => [d.status, d.name, d.op, d.pattern] as const) }));
  }
  // The ConfigMap's entries are the compiler's to read (compile/custom-headers.ts); until then
  // the stage has none, which the proxy refuses to build.
  if (p.customHeaders !== null) out.push(stagePolicy(K.CUSTOM_HEADERS, { headers: null }));
  if (p.connection !== null) out.push(stagePolicy(K.CONNECTION_FIELD, { value: p.connection }));
  if (p.request.length === 0 && p.response.length === 0) return out;
  const list = (entries: readonly HeaderEntry[]) => entries.map(([n, val]): [string, string] => [n, val]);
  out.push(stagePolicy(K.HEADERS, { request: list(p.request), response: list(p.response) }));
  return out;
}

