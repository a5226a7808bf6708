// Per-Ingress behaviour annotations. Values are parsed with valibot into numbers and
// booleans and are never spliced into any text (DESIGN §6.9). A bad value gives an
// InvalidAnnotation diagnostic and the default is used. ingress-nginx spellings are
// accepted when the portico.dev one is absent, to ease migration.
import * as v from "valibot";
import { MAX_DURATION_MS } from "../config/units.ts";
import { DEFAULT_ROUTE_OPTIONS } from "../table/routes.ts";
import type { RouteOptions } from "../table/types.ts";

const UNITS: Readonly<Record<string, number>> = { "": 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 };
const DURATION_UNITS: Readonly<Record<string, number>> = { "": 1000, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

const Bool = v.pipe(
  v.string(),
  v.trim(),
  v.toLowerCase(),
  v.picklist(["true", "false"], "expected true or false"),
  v.transform((s) => s === "true"),
);

// `1048576`, `512k`, `10m`, `1g`; 0 means unlimited (Infinity: null already means "use the flag").
const Size = v.pipe(
  v.string(),
  v.trim(),
  v.regex(/^\d{1,15}[kmg]?$/i, "expected a byte size such as 1048576, 512k, 10m or 1g"),
  v.transform((s) => {
    const m = /^(\d+)([kmg]?)$/i.exec(s) as RegExpExecArray;
    const n = Number(m[1]) * (UNITS[(m[2] ?? "").toLowerCase()] ?? 1);
    return n === 0 ? Number.POSITIVE_INFINITY : n;
  }),
  v.check((n) => n === Number.POSITIVE_INFINITY || Number.isSafeInteger(n), "size too large"),
);

// `500ms`, `5s`, `2m`, `1h`; a plain number is seconds (as ingress-nginx's proxy-*-timeout).
const Duration = v.pipe(
  v.string(),
  v.trim(),
  v.regex(/^\d{1,9}(ms|s|m|h)?$/, "expected a duration such as 500ms, 5s, 2m or a number of seconds"),
  v.transform((s) => {
    const m = /^(\d+)(ms|s|m|h)?$/.exec(s) as RegExpExecArray;
    return Number(m[1]) * (DURATION_UNITS[m[2] ?? ""] ?? 1000);
  }),
  v.minValue(1, "a timeout must be greater than zero"),
  // A timer set past 2^31-1 ms fires at once (Bun, like Node, clamps it to 1 ms): refuse it.
  v.maxValue(MAX_DURATION_MS, "a timeout must be at most 596h (2^31-1 ms, the longest timer)"),
);

const Protocol = v.pipe(
  v.string(),
  v.trim(),
  v.toUpperCase(),
  v.picklist(["HTTP", "HTTPS"], "expected HTTP or HTTPS"),
  v.transform((s): "http" | "https" => (s === "HTTPS" ? "https" : "http")),
);

const NGINX = "nginx.ingress.kubernetes.io/";

/** Every annotation Portico understands (for the README and `portico --help`). */
export const ANNOTATIONS = [
  { name: "portico.dev/ssl-redirect", aliases: [`${NGINX}ssl-redirect`], default: "true", description: "Redirect plain HTTP to HTTPS (308) when the host is covered by spec.tls." },
  { name: "portico.dev/force-ssl-redirect", aliases: [`${NGINX}force-ssl-redirect`], default: "false", description: "Redirect plain HTTP to HTTPS even without a spec.tls entry." },
  { name: "portico.dev/hsts", aliases: [], default: "true", description: "Send Strict-Transport-Security on HTTPS responses." },
  { name: "portico.dev/max-body-size", aliases: [`${NGINX}proxy-body-size`], default: "--max-body-size", description: "Request body limit: bytes, or with k/m/g suffix; 0 = unlimited." },
  { name: "portico.dev/connect-timeout", aliases: [`${NGINX}proxy-connect-timeout`], default: "--connect-timeout", description: "Upstream connect timeout: 500ms, 5s, 2m, or a number of seconds." },
  { name: "portico.dev/response-timeout", aliases: [`${NGINX}proxy-read-timeout`], default: "--response-timeout", description: "Time to wait for upstream response headers." },
  { name: "portico.dev/stream-idle-timeout", aliases: [], default: "--stream-idle-timeout", description: "Idle time allowed between body chunks." },
  { name: "portico.dev/backend-protocol", aliases: [`${NGINX}backend-protocol`], default: "HTTP", description: "HTTP or HTTPS to the backend pods." },
] as const;

export interface ParsedAnnotations {
  readonly options: RouteOptions;
  readonly scheme: "http" | "https";
  /** One sentence per rejected value: becomes an InvalidAnnotation diagnostic. */
  readonly problems: readonly string[];
  /** Names of portico.dev/ or nginx.ingress.kubernetes.io/ annotations we do not implement. */
  readonly unsupported: readonly string[];
}

type Annotations = Readonly<Record<string, string>> | null | undefined;

function read<T>(ann: Annotations, index: number, schema: v.GenericSchema<string, T>, fallback: T, problems: string[]): T {
  const spec = ANNOTATIONS[index] as (typeof ANNOTATIONS)[number];
  let name: string = spec.name;
  let raw = ann?.[name];
  for (const alias of spec.aliases) {
    if (raw !== undefined) break;
    name = alias;
    raw = ann?.[alias];
  }
  if (raw === undefined) return fallback;
  const r = v.safeParse(schema, raw);
  if (r.success) return r.output;
  problems.push(`annotation ${name}=${JSON.stringify(raw)}: ${r.issues[0]?.message ?? "invalid"}; using the default`);
  return fallback;
}

const DEFAULTS: ParsedAnnotations = Object.freeze({
  options: DEFAULT_ROUTE_OPTIONS,
  scheme: "http",
  problems: Object.freeze([]),
  unsupported: Object.freeze([]),
});

const KNOWN = new Set<string>(ANNOTATIONS.flatMap((a) => [a.name, ...a.aliases]));

const hasOurs = (ann: Readonly<Record<string, string>>): boolean =>
  Object.keys(ann).some((k) => k.startsWith("portico.dev/") || k.startsWith(NGINX));

export function parseAnnotations(ann: Annotations): ParsedAnnotations {
  // Fast path: most Ingresses carry none of ours; share one frozen default object.
  if (!ann || !hasOurs(ann)) return DEFAULTS;
  const problems: string[] = [];
  const options: RouteOptions = Object.freeze({
    sslRedirect: read(ann, 0, Bool, true, problems),
    forceSslRedirect: read(ann, 1, Bool, false, problems),
    hsts: read(ann, 2, Bool, true, problems),
    maxBodySize: read<number | null>(ann, 3, Size, null, problems),
    connectTimeoutMs: read<number | null>(ann, 4, Duration, null, problems),
    responseTimeoutMs: read<number | null>(ann, 5, Duration, null, problems),
    streamIdleTimeoutMs: read<number | null>(ann, 6, Duration, null, problems),
  });
  const scheme = read(ann, 7, Protocol, "http" as const, problems);
  // An ingress-nginx annotation we ignore (rewrite-target, use-regex, auth-url, snippets...)
  // changes where or how traffic goes there: say so instead of ignoring it silently.
  const unsupported = Object.keys(ann)
    .filter((k) => (k.startsWith("portico.dev/") || k.startsWith(NGINX)) && !KNOWN.has(k))
    .sort();
  return Object.freeze({ options, scheme, problems: Object.freeze(problems), unsupported: Object.freeze(unsupported) });
}

export { DEFAULT_ROUTE_OPTIONS };
