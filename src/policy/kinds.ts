// Every stage policy kind, defined once: id, stage and parameter schema (contract.ts). The
// annotation families and the compiler write policies with these contracts, the proxy runs
// them with the same ones (proxy/policies/registry.ts pairs each with its runner; a test holds
// the two lists equal), and explain reads the stages from here (compile/answer.ts). A new kind
// is one `defineKind` export here: policy/registry.ts collects every exported contract.
//
// The schemas check shape and types: what a kind's build must be able to read. The checks that
// need the kind's own machinery (a CIDR list parsing, a hash format, a header pattern
// compiling, a PEM certificate) stay in its build, which throws, and the runner refuses the
// route then too.
import * as v from "valibot";
import { defineKind } from "./contract.ts";

const Str = v.string();
const NullableStr = v.nullable(v.string());
const Strings = v.array(v.string());
const Pair = v.tuple([v.string(), v.string()]);

// --- denied: the route cannot be served as written ---------------------------------------

/**
 * An Ingress ingress-nginx would refuse (a malformed redirect, upstream-vhost or server-alias
 * value): 503 for every request. `reason` is for /debug/routes and the diagnostic.
 */
export const DENIED = defineKind("denied", "denied", v.object({ reason: Str }));
/** Access or authentication annotations that cannot be applied: `status` for every request. */
export const REFUSE = defineKind("refuse", "denied", v.object({ status: v.pipe(v.number(), v.integer(), v.minValue(400), v.maxValue(599)), reason: Str }));
/** The host's auth-tls-secret cannot be used: ingress-nginx's server-level 403, in the first stage. */
export const CERTIFICATE_REFUSE = defineKind("certificate-refuse", "certificate", REFUSE.schema);
/** deny-request-headers: `[status, name, op, pattern]` rules tried in order. */
export const HEADER_DENY = defineKind(
  "header-deny",
  "denied",
  v.object({ rules: v.pipe(v.array(v.tuple([v.number(), v.string(), v.picklist(["~", "~*", "!~", "!~*"]), v.string()])), v.minLength(1)) }),
);

// --- certificate, server, cors, redirects, rewrite ----------------------------------------

/** auth-tls-*: `ca` is null until compile/access.ts reads the Secret (the runner then refuses). */
export const CLIENT_CERT = defineKind(
  "client-cert",
  "certificate",
  v.object({
    verify: v.picklist(["on", "off", "optional", "optional_no_ca"]),
    depth: v.pipe(v.number(), v.integer(), v.minValue(1)),
    errorPage: NullableStr,
    passCertificate: v.boolean(),
    /** auth-tls-match-cn: a pattern the subject DN must match (checked when compiled), or null. */
    matchCn: NullableStr,
    secret: Str,
    ca: v.nullable(Strings),
  }),
);
/** app-root: `/` redirects to `path` (nginx variables allowed: policy/template.ts). */
export const APP_ROOT = defineKind("app-root", "server", v.object({ path: Str }));
/** from-to-www-redirect: the host's other name redirects to `to`. */
export const WWW_REDIRECT = defineKind("www-redirect", "server", v.object({ to: Str }));
/** enable-cors and its options. */
export const CORS = defineKind(
  "cors",
  "cors",
  v.strictObject({
    enabled: v.literal(true),
    origins: v.union([v.literal("*"), Strings]),
    methods: Str,
    headers: Str,
    expose: NullableStr,
    credentials: v.boolean(),
    maxAge: v.number(),
  }),
);
/** permanent-redirect / temporal-redirect. */
export const REDIRECT = defineKind("redirect", "redirects", v.object({ url: Str, code: v.pipe(v.number(), v.integer(), v.minValue(300), v.maxValue(308)), relative: v.boolean() }));
/** rewrite-target, with x-forwarded-prefix. */
export const REWRITE_TARGET = defineKind("rewrite-target", "rewrite", v.object({ target: v.pipe(Str, v.minLength(1)), xForwardedPrefix: NullableStr }));

// --- backend: which backend and endpoint ---------------------------------------------------

const CookieName = v.pipe(v.string(), v.regex(/^[A-Za-z0-9._~-]{1,128}$/));
const HeaderOrCookie = v.nullable(v.pipe(v.string(), v.regex(/^[a-z0-9._~-]+$/i)));

/** A canary Ingress's rules (policy/params.ts CanaryRules), and main's affinity cookie when it has one. */
export const CANARY = defineKind(
  "canary",
  "backend",
  v.object({
    header: HeaderOrCookie,
    headerValue: NullableStr,
    headerPattern: NullableStr,
    cookie: HeaderOrCookie,
    weight: v.pipe(v.number(), v.safeInteger()),
    weightTotal: v.pipe(v.number(), v.safeInteger(), v.minValue(100)),
    affinity: v.optional(v.object({ cookie: CookieName, sticky: v.boolean() })),
  }),
);
/** Cookie affinity (affinity, session-cookie-*). */
export const AFFINITY = defineKind(
  "affinity",
  "backend",
  v.object({
    mode: v.picklist(["balanced", "persistent"]),
    name: CookieName,
    path: v.nullable(v.pipe(v.string(), v.regex(/^[A-Za-z0-9._~:/,?&=-]{1,1024}$/))),
    domain: v.nullable(v.pipe(v.string(), v.regex(/^[A-Za-z0-9._-]{1,253}$/))),
    maxAge: v.nullable(v.pipe(v.number(), v.integer())),
    expires: v.nullable(v.pipe(v.number(), v.integer())),
    sameSite: v.nullable(v.picklist(["None", "Lax", "Strict"])),
    conditionalSameSiteNone: v.boolean(),
    secure: v.boolean(),
    changeOnFailure: v.boolean(),
  }),
);
const HashPartSchema = v.union([
  v.strictObject({ text: v.string() }),
  v.strictObject({ var: v.picklist(["remote_addr", "request_uri"]) }),
  v.strictObject({ header: v.pipe(v.string(), v.regex(/^[0-9a-z-]+$/)) }),
  v.strictObject({ cookie: v.pipe(v.string(), v.regex(/^[0-9a-zA-Z_]+$/)) }),
]);
/** upstream-hash-by (policy/params.ts HashPart); subsetSize 0 is the key's own pod, k > 0 one of k. */
export const HASH = defineKind(
  "hash",
  "backend",
  v.object({ parts: v.pipe(v.array(HashPartSchema), v.minLength(1)), subsetSize: v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(1000)) }),
);
/** load-balance: ewma. */
export const EWMA = defineKind("ewma", "backend", v.object({}));

// --- limits, access, authentication --------------------------------------------------------

const Count = v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(2 ** 31 - 1));
/** limit-rps, limit-rpm, limit-connections, limit-burst-multiplier, limit-whitelist; `denied` for a refused value. */
export const LIMITS = defineKind(
  "limits",
  "limits",
  v.object({ rps: Count, rpm: Count, connections: Count, burstMultiplier: Count, allow: Strings, denied: v.boolean() }),
);
/** whitelist/denylist-source-range: at least one list (null for none). */
export const SOURCE_RANGE = defineKind("source-range", "access", v.object({ allow: v.nullable(Strings), deny: v.nullable(Strings) }));
/** auth-type basic: `users` is null until compile/access.ts reads the Secret (the runner then refuses). */
export const BASIC_AUTH = defineKind("basic-auth", "authentication", v.object({ realm: Str, secret: Str, users: v.nullable(v.array(Pair)) }));
const Template = v.array(v.union([v.string(), v.strictObject({ v: v.string() })]));
/** auth-url and its options (policy/template.ts holds the template parts). */
export const EXTERNAL_AUTH = defineKind(
  "external-auth",
  "authentication",
  v.strictObject({
    url: v.pipe(Template, v.minLength(1)),
    method: NullableStr,
    signin: v.nullable(Template),
    redirectParam: Str,
    responseHeaders: Strings,
    requestRedirect: NullableStr,
    alwaysSetCookie: v.boolean(),
    cacheKey: v.nullable(Template),
    cacheRules: v.array(v.strictObject({ statuses: v.nullable(v.array(v.number())), ms: v.number() })),
    /**
     * auth-proxy-set-headers: the named ConfigMap's entries, set on the auth request (name,
     * value template); null while that ConfigMap is not read (compile/auth-headers.ts reads
     * it), which the runner refuses to build: never an auth request without them.
     */
    proxySetHeaders: v.nullable(v.array(v.strictObject({ name: Str, value: Template }))),
  }),
);

// --- forwarding ----------------------------------------------------------------------------

/** backend-protocol AUTO_HTTP. */
export const AUTO_HTTP = defineKind("auto-http", "forwarding", v.object({}));
/** upstream-vhost. */
export const UPSTREAM_VHOST = defineKind("upstream-vhost", "forwarding", v.object({ host: Str }));
/** request-headers and response-headers: `[name, value]` pairs. */
export const HEADERS = defineKind("headers", "forwarding", v.object({ request: v.optional(v.array(Pair), []), response: v.optional(v.array(Pair), []) }));

// --- Gateway API (compile/gateway/table.ts) ------------------------------------------------

/** RequestHeaderModifier. */
export const GATEWAY_REQUEST_HEADERS = defineKind("gateway-request-headers", "forwarding", v.object({ set: v.array(Pair), add: v.array(Pair), remove: Strings }));
/**
 * ResponseHeaderModifier: set, add (`old,new`) and remove on the answer. In the cors stage,
 * before the redirects stage, so Portico's own answers for the rule (a RequestRedirect's, a
 * 500) carry the same changes as the proxied one.
 */
export const GATEWAY_RESPONSE_HEADERS = defineKind("gateway-response-headers", "cors", v.object({ set: v.array(Pair), add: v.array(Pair), remove: Strings }));
/**
 * CORS (HTTPCORSFilter): origins exact or with a left `*` (any number of labels), or ["*"];
 * methods, headers and expose lists, ["*"] for any; maxAge in seconds.
 */
export const GATEWAY_CORS = defineKind(
  "gateway-cors",
  "cors",
  v.strictObject({
    origins: Strings,
    methods: Strings,
    headers: Strings,
    expose: Strings,
    credentials: v.boolean(),
    maxAge: v.pipe(v.number(), v.integer(), v.minValue(1)),
  }),
);
/** RequestRedirect, with the listener it was reached through and the prefix a ReplacePrefixMatch replaces. */
export const GATEWAY_REDIRECT = defineKind(
  "gateway-redirect",
  "redirects",
  v.object({
    scheme: NullableStr,
    hostname: NullableStr,
    port: v.nullable(v.number()),
    statusCode: v.nullable(v.number()),
    listenerPort: v.nullable(v.number()),
    listenerScheme: v.picklist(["http", "https"]),
    pathType: NullableStr,
    pathValue: NullableStr,
    matchedPrefix: NullableStr,
  }),
);
/** URLRewrite: the Host and path sent upstream, with the prefix a ReplacePrefixMatch replaces. */
export const GATEWAY_REWRITE = defineKind(
  "gateway-rewrite",
  "rewrite",
  v.object({ hostname: NullableStr, pathType: v.nullable(v.picklist(["ReplaceFullPath", "ReplacePrefixMatch"])), pathValue: NullableStr, matchedPrefix: NullableStr }),
);
/** RequestMirror: the mirror Service's endpoints (`host:port` authorities) and the share of requests mirrored, in percent. */
export const GATEWAY_MIRROR = defineKind(
  "gateway-mirror",
  "forwarding",
  v.object({ endpoints: Strings, percent: v.pipe(v.number(), v.minValue(0), v.maxValue(100)) }),
);
/** A rule, or a share of one, that cannot be served: 500. */
export const GATEWAY_ERROR = defineKind("gateway-error", "denied", v.object({ reason: Str }));
