// One Ingress's annotations → its backend scheme, per-family policies and problems
// (readAnnotations), and the route options they give once the compiler has assembled their
// stage policies (routeOptions; compile/annotations.ts parseAnnotations joins the two, with
// compile/stages.ts, the one place stage lists are put together). Pure.
import * as v from "valibot";
import type { StagePolicy } from "../policy/stages.ts";
import { DEFAULT_ROUTE_OPTIONS } from "../table/routes.ts";
import type { BackendScheme, RouteOptions } from "../table/types.ts";
import { GUARDS_ACCESS } from "./not-implemented.ts";
import { restrictingDirectivesIn } from "./snippet-scan.ts";
import { FAMILIES, IMPLEMENTED_NAMES } from "./registry.ts";
import { NGINX_PREFIX, PORTICO_PREFIX, namesOf, type AnnotationSpec, type Consequences, type Family, type ReadResult, type Reader } from "./spec.ts";

type Families = typeof FAMILIES;
type PolicyOf<F> = F extends Family<infer P> ? P : never;

/** One typed, frozen policy per implemented family (the family's `none` when it is not used). */
export type AnnotationPolicies = { readonly [K in keyof Families]: PolicyOf<Families[K]> };

/** What the families read of one Ingress's annotations, before its stage policies are assembled. */
export interface AnnotationReading {
  readonly scheme: BackendScheme;
  /** Per family, for the compiler; `options` and `scheme` are what the table carries of them. */
  readonly policies: AnnotationPolicies;
  /**
   * Why ingress-nginx would reject this Ingress (a malformed value it validates), or null.
   * Its paths then answer 503 and its other annotations have no effect (server-alias included).
   */
  readonly denied: string | null;
  /** One sentence per rejected value: becomes an InvalidAnnotation diagnostic. */
  readonly problems: readonly string[];
  /** Names of portico.dev/ or nginx.ingress.kubernetes.io/ annotations we do not implement. */
  readonly unsupported: readonly string[];
  /**
   * Why every request must be refused with 503 because an access check cannot be run here
   * (a snippet that may refuse requests, an unimplemented guard, ModSecurity blocking), or null.
   */
  readonly refusal: string | null;
}

/** The reading with its route options: what the compiler works with (compile/annotations.ts). */
export interface ParsedAnnotations extends Omit<AnnotationReading, "refusal"> {
  readonly options: RouteOptions;
}

type Annotations = Readonly<Record<string, string>> | null | undefined;

/** Snippet annotations whose text ran in a location or server block (never here). */
const ENABLE_MODSECURITY = `${NGINX_PREFIX}enable-modsecurity`;
const MODSECURITY_SNIPPET = `${NGINX_PREFIX}modsecurity-snippet`;
// Go's strconv.ParseBool true spellings, as ingress-nginx's annotation parser reads booleans.
const GO_TRUE: ReadonlySet<string> = new Set(["1", "t", "T", "TRUE", "true", "True"]);
const SNIPPET_NAMES = ["configuration-snippet", "server-snippet", "auth-snippet"].map((n) => `${NGINX_PREFIX}${n}`);

const ours = (k: string): boolean => k.startsWith(PORTICO_PREFIX) || k.startsWith(NGINX_PREFIX);

const UNSET: ReadResult<never> = Object.freeze({ state: "unset" });
const INVALID: ReadResult<never> = Object.freeze({ state: "invalid", empty: false });
const INVALID_EMPTY: ReadResult<never> = Object.freeze({ state: "invalid", empty: true });

/** The Reader every family parses through; `problems` collects the InvalidAnnotation sentences. */
export function createReader(ann: Readonly<Record<string, string>>, problems: string[]): Reader {
  const read = <T>(spec: AnnotationSpec, schema: v.GenericSchema<string, T>, consequence: string | Consequences): ReadResult<T> => {
    // The first name with a non-empty value wins: portico.dev over ingress-nginx's name, and
    // ingress-nginx's aliases only when the names before them are empty or absent, as its
    // parser reads them. An empty value with nothing after it is invalid, not absent.
    let name: string | null = null;
    let raw: string | undefined;
    for (const n of namesOf(spec)) {
      const val = ann[n];
      if (val === undefined) continue;
      if (raw === undefined || val !== "") {
        name = n;
        raw = val;
      }
      if (val !== "") break;
    }
    if (raw === undefined || name === null) return UNSET;
    const empty = raw === "";
    const fail = (why: string): ReadResult<T> => {
      const then = typeof consequence === "string" ? consequence : empty ? consequence.empty : consequence.invalid;
      problems.push(`annotation ${name}=${JSON.stringify(raw)}: ${why}; ${then}`);
      return empty ? INVALID_EMPTY : INVALID;
    };
    // ingress-nginx refuses CR and LF in every annotation value, whatever its type; a list of
    // Portico's own may put one entry per line (LF only).
    if (raw.includes("\r") || (raw.includes("\n") && spec.multiline !== true)) return fail("a value may not contain a line break");
    const r = v.safeParse(schema, raw);
    if (!r.success) return fail(r.issues[0]?.message ?? "invalid");
    return { state: "ok", value: r.output, name, raw };
  };
  return {
    read,
    value(spec, schema) {
      const r = read(spec, schema, "using the default");
      return r.state === "ok" ? r.value : undefined;
    },
    problem(message) {
      problems.push(message);
    },
  };
}

function policiesOf(r: Reader | null): AnnotationPolicies {
  const out: Record<string, unknown> = {};
  for (const [key, family] of Object.entries(FAMILIES) as [keyof Families, Family<unknown>][]) {
    out[key] = r === null ? family.none : family.parse(r);
  }
  return Object.freeze(out) as AnnotationPolicies;
}

const deniedBy = (p: AnnotationPolicies): string | null => p.redirects.denied ?? p.hosts.denied;

/**
 * What the table carries of the policies: route settings, and the request-side stage policies
 * `stages` as compile/stages.ts assembled them (null: none). An Ingress ingress-nginx would
 * refuse carries one policy only, the 503 (docs/design.md, "Annotations and policies").
 */
export function routeOptions(p: AnnotationPolicies, denied: string | null, stages: readonly StagePolicy[] | null): RouteOptions {
  const fromToWwwRedirect = denied === null && p.redirects.fromToWww;
  const { usePortInRedirects } = p.redirects;
  const none =
    FAMILIES.tlsRedirect.none === p.tlsRedirect && FAMILIES.body.none === p.body && FAMILIES.timeouts.none === p.timeouts && p.retries === null &&
    FAMILIES.buffering.none === p.buffering && FAMILIES.log.none === p.log && FAMILIES.limitRate.none === p.limitRate;
  if (none && stages === null && !fromToWwwRedirect && !usePortInRedirects) return DEFAULT_ROUTE_OPTIONS;
  return Object.freeze({
    ...p.tlsRedirect, ...p.body, ...p.timeouts, retry: p.retries, requestBufferSize: p.buffering.requestBufferSize,
    proxyBuffering: p.buffering.proxyBuffering, proxyBufferSize: p.buffering.proxyBufferSize,
    usePortInRedirects, fromToWwwRedirect, accessLog: p.log.accessLog,
    limitRate: p.limitRate.rate, limitRateAfter: p.limitRate.after, stages,
  });
}

const NONE: AnnotationReading = Object.freeze({
  scheme: "http",
  policies: policiesOf(null),
  denied: null,
  problems: Object.freeze([]),
  unsupported: Object.freeze([]),
  refusal: null,
});

/** Directive names from a snippet, for a message: each shortened and quoted when odd, at most six. */
function shownNames(names: readonly string[]): string {
  const shown = names.slice(0, 6).map((n) => (/^[a-z0-9_]{1,40}$/.test(n) ? n : JSON.stringify(n.length > 40 ? `${n.slice(0, 39)}…` : n)));
  return names.length > 6 ? `${shown.join(", ")} and ${names.length - 6} more` : shown.join(", ");
}

/**
 * ssl-passthrough marks the backend as speaking TLS: ingress-nginx proxies every request it
 * terminates for it with `https://` (`grpcs://` for gRPC), whatever backend-protocol says
 * (template.go buildProxyPass, backend.SSLPassthrough; set by controller.go whether or not
 * --enable-ssl-passthrough is on). Here per Ingress, for its own backends.
 */
function passthroughScheme(p: AnnotationPolicies): AnnotationPolicies {
  if (!p.sslPassthrough.on) return p;
  const was = p.backendProtocol.scheme;
  const scheme: BackendScheme = was === "http" ? "https" : was === "grpc" ? "grpcs" : was;
  if (scheme === was && !p.backendProtocol.auto) return p;
  return Object.freeze({ ...p, backendProtocol: Object.freeze({ scheme, auto: false }) });
}

/** Read `ann` with every family; the compiler assembles the stages (compile/annotations.ts parseAnnotations). */
export function readAnnotations(ann: Annotations): AnnotationReading {
  // Most Ingresses carry none of ours: they share one frozen result.
  if (!ann || !Object.keys(ann).some(ours)) return NONE;
  const problems: string[] = [];
  const policies = passthroughScheme(policiesOf(createReader(ann, problems)));
  // An annotation we do not implement (affinity, rate limits, snippets...) changes where or
  // how traffic goes under ingress-nginx: say so instead of ignoring it silently.
  const unsupported = Object.keys(ann)
    .filter((k) => ours(k) && !IMPLEMENTED_NAMES.has(k))
    .sort();
  // Fail closed: an access check Portico cannot run is not skipped (docs/design.md,
  // "Annotations and policies").
  const guards = unsupported.filter((k) => GUARDS_ACCESS.has(k));
  let refusal: string | null = null;
  if (guards.length > 0) {
    refusal = `${guards.join(", ")} guards access and is not implemented by Portico`;
    problems.push(`annotation ${guards.join(", ")}: access control Portico does not implement; every request to this Ingress's paths is refused with 503 rather than served unchecked`);
  }
  // Snippets never run here. Unless every directive in one is known to be harmless (headers,
  // buffering, timeouts: annotations/snippet-scan.ts), it may have kept requests from the
  // backend under ingress-nginx (deny, an `if` that returns 444, `internal`, a Lua access
  // handler...), so the route is refused like an access check Portico cannot run rather than
  // served open. ingress-nginx's defaults refuse any Ingress with a snippet, so this is no
  // stricter than a default ingress-nginx.
  for (const name of SNIPPET_NAMES) {
    const text = ann[name];
    if (text === undefined) continue;
    const found = restrictingDirectivesIn(text);
    if (found !== null && found.length === 0) continue;
    const what = found === null ? "cannot be read, so a directive that refuses requests cannot be ruled out" : `may refuse requests (${shownNames(found)})`;
    refusal ??= `${name} ${what}`;
    problems.push(`annotation ${name}: the snippet ${what}; snippets never run in Portico, so every request to this Ingress's paths is refused with 503 rather than served unchecked (remove the snippet, using Portico's annotations for what it did: the migration report names them)`);
  }
  // ModSecurity blocks only with its engine On: ingress-nginx's default modsecurity.conf runs it
  // DetectionOnly (docs/user-guide/third-party-addons/modsecurity.md), and an Ingress turns
  // blocking on in its modsecurity-snippet (test/e2e/annotations/modsecurity: 403 then). Such a route expected a web
  // application firewall in front of it; Portico has none, so it is refused rather than served
  // open. Detection only (the default) refuses nothing under ingress-nginx and stays ignored.
  const modsec = ann[MODSECURITY_SNIPPET];
  if (GO_TRUE.has(ann[ENABLE_MODSECURITY] ?? "") && modsec !== undefined && /(^|[\s;"'])SecRuleEngine\s+"?On\b/im.test(modsec)) {
    refusal ??= `${MODSECURITY_SNIPPET} turns ModSecurity's blocking on`;
    problems.push(`annotation ${MODSECURITY_SNIPPET}: the snippet turns ModSecurity's blocking on (SecRuleEngine On) and Portico has no web application firewall, so every request to this Ingress's paths is refused with 503 rather than served unchecked`);
  }
  return Object.freeze({
    scheme: policies.backendProtocol.scheme,
    policies,
    denied: deniedBy(policies),
    problems: Object.freeze(problems),
    unsupported: Object.freeze(unsupported),
    refusal,
  });
}
