// CORS for the routes of one Ingress: ingress-nginx's `enable-cors` and `cors-*` annotations
// (internal/ingress/annotations/cors/main.go, the template's CORS block and
// buildCorsOriginRegex in internal/ingress/controller/template/template.go, at dbb11b92).
// The proxy side is src/kinds/cors.ts; the policy runs in the `cors` stage.
import * as v from "valibot";
import type { AnnotationSpec, Family, Reader } from "./spec.ts";
import { NGINX_PREFIX, valueIn } from "./spec.ts";
import { Bool, isFalse, isTrue } from "./values.ts";
import { stagePolicy } from "../policy/contract.ts";
import * as K from "../kinds/index.ts";

/** ingress-nginx's defaults (cors/main.go: defaultCorsMethods, defaultCorsHeaders, defaultCorsMaxAge). */
export const DEFAULT_CORS_METHODS = "GET, PUT, POST, DELETE, PATCH, OPTIONS";
export const DEFAULT_CORS_HEADERS =
  "DNT,Keep-Alive,User-Agent,X-Requested-With,If-Modified-Since,Cache-Control,Content-Type,Range,Authorization";
export const DEFAULT_CORS_MAX_AGE = 1728000;

export interface CorsPolicy {
  readonly enabled: boolean;
  /**
   * `"*"`, or the allowed origins lower-cased: `scheme://host[:port]`, `scheme://*.host[:port]`
   * (one label) or `null`. An empty list allows no origin.
   */
  readonly origins: "*" | readonly string[];
  readonly methods: string;
  readonly headers: string;
  /** Access-Control-Expose-Headers, or null for none. */
  readonly expose: string | null;
  readonly credentials: boolean;
  readonly maxAge: number;
}

const n = (name: string) => `${NGINX_PREFIX}${name}`;

export const ENABLE_CORS: AnnotationSpec = {
  portico: null,
  nginx: [n("enable-cors")],
  family: "cors",
  default: "false",
  description:
    "`true`/`false` (Go's ParseBool): answer CORS preflights with 204 and add the CORS headers to every answer for an allowed `Origin`",
  compat: {
    kind: "differs",
    difference:
      "Portico answers only a real preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) itself; any other `OPTIONS` goes to the backend, with the CORS headers (ingress-nginx answers every `OPTIONS` from an allowed origin, and in `*` mode every `OPTIONS`, with 204). With an origin list, every answer carries `Vary: Origin` (ingress-nginx adds none). `false` is served the same: no CORS in either.",
  },
  sameWhen: isFalse,
  differenceFor: (_value, all) => {
    const star = (valueIn(CORS_ALLOW_ORIGIN, all) ?? "*").split(",").some((e) => e.trim() === "*");
    return `Portico answers only a real preflight (\`OPTIONS\` with \`Origin\` and \`Access-Control-Request-Method\`) itself; any other \`OPTIONS\` goes to the backend, with the CORS headers (ingress-nginx answers every \`OPTIONS\`${star ? "" : " from an allowed origin"} with 204).${star ? "" : " Every answer carries `Vary: Origin` (ingress-nginx adds none)."}`;
  },
};

export const CORS_ALLOW_ORIGIN: AnnotationSpec = {
  portico: null,
  nginx: [n("cors-allow-origin")],
  family: "cors",
  default: "*",
  description:
    "comma list of `scheme://host[:port]`, `scheme://*.host[:port]` (one label), `null`, or `*`; a matching `Origin` is echoed in `Access-Control-Allow-Origin`",
  compat: {
    kind: "differs",
    difference:
      "An `Origin` must equal an entry (case-insensitive); ingress-nginx's regex is anchored only at the end, so it also takes any `Origin` that ends with an entry (`https://x-null` against `null`). An entry ingress-nginx's validator refuses (`https://a.com/`, `HTTPS://a.com`) is dropped with a diagnostic and the other entries stay (ingress-nginx then allows every origin, `*`). A list with `*` is served the same (every origin), and so is any value while `enable-cors` is not true (neither uses it).",
  },
  sameWhen: (value, all) => !isTrue(valueIn(ENABLE_CORS, all) ?? "") || value.split(",").some((e) => e.trim() === "*"),
  // With no `*` (sameWhen): only the matching rule is left to say, for these entries.
  differenceFor: (value) => {
    const entries = value.split(",").map((e) => e.trim()).filter((e) => e !== "");
    const shown = entries.length <= 3 ? entries.map((e) => `\`${e}\``).join(entries.length === 2 ? " or " : ", ") : `one of the ${entries.length} entries`;
    const wildcard = entries.some((e) => e.includes("://*.")) ? " (`*.` standing for one label)" : "";
    const nullEntry = entries.some((e) => e.toLowerCase() === "null") ? ", such as `https://x-null` for `null`" : "";
    return `An \`Origin\` must equal ${shown}${wildcard}, in any case; ingress-nginx's regex is anchored only at the end, so it also takes an \`Origin\` that merely ends with ${entries.length === 1 ? "it" : "one"}${nullEntry}.`;
  },
};

export const CORS_ALLOW_METHODS: AnnotationSpec = {
  portico: null,
  nginx: [n("cors-allow-methods")],
  family: "cors",
  default: DEFAULT_CORS_METHODS,
  description: "`Access-Control-Allow-Methods`: method names (letters) separated by commas or spaces",
  compat: { kind: "same" },
};

export const CORS_ALLOW_HEADERS: AnnotationSpec = {
  portico: null,
  nginx: [n("cors-allow-headers")],
  family: "cors",
  default: DEFAULT_CORS_HEADERS,
  description: "`Access-Control-Allow-Headers`: header names (letters, digits, `-`, `_`) separated by commas",
  compat: { kind: "same" },
};

export const CORS_EXPOSE_HEADERS: AnnotationSpec = {
  portico: null,
  nginx: [n("cors-expose-headers")],
  family: "cors",
  default: "none",
  description: "`Access-Control-Expose-Headers`: header names or `*`, separated by commas",
  compat: { kind: "same" },
};

export const CORS_ALLOW_CREDENTIALS: AnnotationSpec = {
  portico: null,
  nginx: [n("cors-allow-credentials")],
  family: "cors",
  default: "true",
  description: "`true`/`false`: send `Access-Control-Allow-Credentials: true` (also with `*`, as ingress-nginx does; browsers then send no credentials)",
  compat: { kind: "same" },
};

export const CORS_MAX_AGE: AnnotationSpec = {
  portico: null,
  nginx: [n("cors-max-age")],
  family: "cors",
  default: String(DEFAULT_CORS_MAX_AGE),
  description: "`Access-Control-Max-Age` in seconds (an integer as Go's Atoi reads it)",
  compat: { kind: "same" },
};

// Each pattern below is written so that no two ways of matching one string exist (every
// repetition starts with a separator), so it runs in linear time; the language is that of
// ingress-nginx's corsMethodsRegex `^([A-Za-z]+,?\s?)+$` and corsExposeHeadersRegex
// `^(([A-Za-z0-9\-\_]+|\*),?\s?)+$`, whose nested repetitions backtrack exponentially in a
// backtracking engine. `\s` is Go's (RE2) class, not JavaScript's.
const SEP = "(?:,[\\t\\n\\f\\r ]?|[\\t\\n\\f\\r ])";
const METHODS_RE = new RegExp(`^[A-Za-z]+(?:${SEP}[A-Za-z]+)*${SEP}?$`);
const EXPOSE_RE = new RegExp(`^[A-Za-z0-9_*-]+(?:${SEP}[A-Za-z0-9_*-]+)*${SEP}?$`);
/** parser.HeadersVariable. */
const HEADERS_RE = /^[A-Za-z0-9_, -]*$/;
/** corsOriginRegex, for one entry (`*` is handled before). */
const ORIGIN_RE = /^(?:[a-z]+:\/\/(?:\*\.)?[A-Za-z0-9.-]*(?::\d+)?|null)$/;

/** ingress-nginx trims each line of a string annotation (parser.normalizeString). */
const Trimmed = v.pipe(v.string(), v.trim(), v.minLength(1, "empty value"));

const Methods = v.pipe(Trimmed, v.regex(METHODS_RE, "expected method names (letters) separated by commas"));
const Headers = v.pipe(Trimmed, v.regex(HEADERS_RE, "expected header names (letters, digits, - and _) separated by commas"));
const Expose = v.pipe(Trimmed, v.regex(EXPOSE_RE, "expected header names or * separated by commas"));

/** Go's strconv.Atoi: optional sign, decimal digits; bounded to what a JSON number holds exactly. */
const Atoi = v.pipe(
  v.string(),
  v.regex(/^[+-]?\d{1,15}$/, "expected an integer number of seconds"),
  v.transform((s) => Number(s)),
);

const NONE: CorsPolicy = Object.freeze({
  enabled: false,
  origins: "*",
  methods: DEFAULT_CORS_METHODS,
  headers: DEFAULT_CORS_HEADERS,
  expose: null,
  credentials: true,
  maxAge: DEFAULT_CORS_MAX_AGE,
});

export const CORS: Family<CorsPolicy> = {
  name: "cors",
  annotations: [ENABLE_CORS, CORS_ALLOW_ORIGIN, CORS_ALLOW_METHODS, CORS_ALLOW_HEADERS, CORS_EXPOSE_HEADERS, CORS_ALLOW_CREDENTIALS, CORS_MAX_AGE],
  none: NONE,
  stages: (c) =>
    c.enabled
      ? [stagePolicy(K.CORS, { enabled: true, origins: c.origins, methods: c.methods, headers: c.headers, expose: c.expose, credentials: c.credentials, maxAge: c.maxAge })]
      : [],
  parse(r) {
    // ingress-nginx parses the other cors-* keys whether or not CORS is on, and uses them only
    // when it is; Portico reads (and reports) them only when it is on.
    if (r.value(ENABLE_CORS, Bool) !== true) return NONE;
    return Object.freeze({
      enabled: true,
      origins: readOrigins(r),
      methods: r.value(CORS_ALLOW_METHODS, Methods) ?? DEFAULT_CORS_METHODS,
      headers: r.value(CORS_ALLOW_HEADERS, Headers) ?? DEFAULT_CORS_HEADERS,
      expose: r.value(CORS_EXPOSE_HEADERS, Expose) ?? null,
      credentials: r.value(CORS_ALLOW_CREDENTIALS, Bool) ?? true,
      maxAge: r.value(CORS_MAX_AGE, Atoi) ?? DEFAULT_CORS_MAX_AGE,
    });
  },
};

/**
 * cors-allow-origin as ingress-nginx's Parse reads it: split on commas, entries trimmed,
 * blanks skipped; a `*` anywhere means every origin. An entry that is not an origin is dropped
 * and reported, whatever ingress-nginx does with it (it drops an entry without a scheme, and
 * turns the whole list into `*` for one its validator refuses): an origin list never widens.
 */
function readOrigins(r: Reader): CorsPolicy["origins"] {
  const read = r.read(CORS_ALLOW_ORIGIN, Trimmed, "using the default, *");
  if (read.state !== "ok") return "*";
  const entries = read.value.split(",").map((s) => s.trim()).filter((s) => s !== "");
  if (entries.includes("*")) return "*";
  const out: string[] = [];
  for (const e of entries) {
    if (ORIGIN_RE.test(e)) out.push(e.toLowerCase());
    else r.problem(`annotation ${CORS_ALLOW_ORIGIN.nginx[0]}: ${JSON.stringify(e)} is not an origin (scheme://host[:port], scheme://*.host[:port], null or *); that entry is left out`);
  }
  if (out.length === 0) r.problem(`annotation ${CORS_ALLOW_ORIGIN.nginx[0]}: no valid origin; no origin is allowed`);
  return Object.freeze(out);
}
