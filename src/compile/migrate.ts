// The migration report: for each Ingress that ingress-nginx would take, what changes when
// Portico serves it instead. It reads the compiler's own work (Compiler.inspect: the plans,
// the class decisions, the compile's diagnostics) and the annotation registry at run time, so
// it can never disagree with what Portico serves, and it follows the registry as families are
// added. The live metric portico_ingress_compat counts the same statuses from the same code
// (compatCounts). Pure, like the compiler; runtime/migrate.ts reads the objects and prints.
import type { Diagnostic, DiagnosticReason } from "../model/diagnostic.ts";
import { ANNOTATIONS, compatOf, GUARDS_ACCESS, namesOf, NGINX_PREFIX, PORTICO_PREFIX, refusedByIngressNginxToo, scanSnippet, type AnnotationSpec, type CompanionEffect, type CompanionMatch, type SnippetAction } from "./annotations.ts";
import { NGINX_DEFAULTS, type NginxDefault } from "../config/nginx-defaults.ts";
import { LEGACY_CLASS_ANNOTATION } from "./class.ts";
import type { Inspection } from "./compile.ts";
import type { CompileConfig } from "./config.ts";
import { configMapReport, snippetGate, type ConfigMapReport, type NginxConfigMap, type SnippetGate } from "./nginx-configmap.ts";
import type { IngressPlan } from "./plan.ts";

/** How one annotation fares: as in ingress-nginx, with a stated difference, or not at all. */
export type AnnotationStatus =
  | "same"
  | "differs"
  | "not-served"
  /** Portico's own (portico.dev/): ingress-nginx ignores it, so it is no change of the move. */
  | "portico"
  /** Under either prefix but read by neither: no effect in either. */
  | "unknown";

/**
 * Worst first: how an Ingress fares as a whole. The same names in the JSON report, the text
 * report's headlines and summary, and the portico_ingress_compat metric's `status` label:
 * - refused: every path answers 503 or is left out (whether or not ingress-nginx does too);
 * - partly-served: served, but an annotation, snippet or path of it is not;
 * - differs: served, with stated differences;
 * - unchanged: served as ingress-nginx serves it.
 */
export const INGRESS_STATUSES = ["refused", "partly-served", "differs", "unchanged"] as const;
export type IngressStatus = (typeof INGRESS_STATUSES)[number];

export interface Suggestion {
  /** The annotation to add, and its value. */
  readonly annotation: string;
  readonly value: string;
  /** Its registry status: Portico reads it ("implemented"), or not yet. */
  readonly implemented: boolean;
}

export interface SnippetDirectiveReport {
  readonly text: string;
  readonly understood: boolean;
  readonly note: string | null;
}

/** An Ingress to apply next to this one: it does what one snippet directive did (a `location`, a `rewrite`). */
export interface CompanionIngress {
  /** The directive it replaces, as the report shows it. */
  readonly directive: string;
  readonly name: string;
  /** networking.k8s.io/v1 Ingress, ready to apply (the text report prints it as YAML). */
  readonly manifest: Readonly<Record<string, unknown>>;
}

export interface SnippetReport {
  readonly directives: readonly SnippetDirectiveReport[];
  readonly notUnderstood: number;
  /** Malformed text: nothing in it was understood. */
  readonly error: string | null;
  /** The annotations that do what the understood directives did (not yet on the Ingress). */
  readonly instead: readonly Suggestion[];
  /** The Ingresses that do what its `location` and `rewrite` directives did (not yet applied). */
  readonly companions: readonly CompanionIngress[];
}

export interface AnnotationReport {
  readonly name: string;
  readonly value: string;
  readonly status: AnnotationStatus;
  /** The registry's family, when the registry knows the name. */
  readonly family: string | null;
  /** What it means for the traffic, in the registry's words. */
  readonly text: string;
  readonly snippet?: SnippetReport;
}

export interface DiagnosticReport {
  readonly reason: DiagnosticReason;
  readonly message: string;
  /** "same": ingress-nginx does the same with this object (a conflict, a missing Service). */
  readonly effect: "not-served" | "differs" | "same";
}

export interface IngressReport {
  readonly ingress: string;
  readonly status: IngressStatus;
  /** Why the Ingress is taken (the class rule that decided). */
  readonly class: string;
  readonly annotations: readonly AnnotationReport[];
  readonly diagnostics: readonly DiagnosticReport[];
  /** Set when Portico serves none of its paths, or answers 503 on every one (the reason). */
  readonly refused: string | null;
}

export interface IgnoredIngress {
  readonly ingress: string;
  /** Why neither ingress-nginx nor Portico takes it (the class rule). */
  readonly reason: string;
}

export interface MigrationSummary {
  /** Ingresses taken: those of the class (ingress-nginx's rules, the same flags). */
  readonly ingresses: number;
  readonly unchanged: number;
  readonly differs: number;
  readonly partlyServed: number;
  readonly refused: number;
  /** Ingresses of other classes (taken by neither). */
  readonly ignored: number;
  /** ConfigMap keys (and differing defaults) Portico does not honour; 0 without a ConfigMap. */
  readonly configMapNotHonoured: number;
}

export interface MigrationReport {
  readonly ingressClass: string;
  readonly controllerName: string;
  readonly watchIngressWithoutClass: boolean;
  readonly ingresses: readonly IngressReport[];
  /** Ingresses of other classes, taken by neither. */
  readonly ignored: readonly IgnoredIngress[];
  /** ingress-nginx's ConfigMap, key by key, when one was given (`--nginx-configmap`). */
  readonly configMap: ConfigMapReport | null;
  /**
   * Without a ConfigMap: ingress-nginx's defaults were assumed, and these are the ones that
   * differ from Portico's (config/nginx-defaults.ts), with what --ingress-nginx-compat serves.
   */
  readonly assumedDefaults: readonly NginxDefault[];
  readonly summary: MigrationSummary;
}

const rank = (s: IngressStatus): number => INGRESS_STATUSES.indexOf(s);
const worst = (a: IngressStatus, b: IngressStatus): IngressStatus => (rank(a) <= rank(b) ? a : b);

// ---------------------------------------------------------------------------------------------
// The registry, read at run time: every name (portico.dev, ingress-nginx's and its aliases).

let byName: Map<string, AnnotationSpec> | null = null;
function specOf(name: string): AnnotationSpec | undefined {
  if (byName === null) {
    byName = new Map();
    for (const a of ANNOTATIONS) for (const n of namesOf(a)) byName.set(n, a);
  }
  return byName.get(name);
}

const implemented = (name: string): boolean => {
  const s = specOf(name);
  return s !== undefined && s.compat.kind !== "not-implemented";
};

// ---------------------------------------------------------------------------------------------
// Snippets: never executed; the report says what replaces the directives it understands.

const SNIPPETS = new Set(["configuration-snippet", "server-snippet", "auth-snippet", "stream-snippet", "modsecurity-snippet"].map((n) => `${NGINX_PREFIX}${n}`));

const REQUEST_HEADERS = `${PORTICO_PREFIX}request-headers`;
const DENY_REQUEST_HEADERS = `${PORTICO_PREFIX}deny-request-headers`;
const RESPONSE_HEADERS = `${PORTICO_PREFIX}response-headers`;
const PERMANENT_REDIRECT = `${NGINX_PREFIX}permanent-redirect`;
const TEMPORAL_REDIRECT = `${NGINX_PREFIX}temporal-redirect`;
const FORCE_SSL_REDIRECT = `${NGINX_PREFIX}force-ssl-redirect`;

function httpsRedirectDifference(): string {
  const spec = specOf(`${NGINX_PREFIX}ssl-redirect`);
  const c = spec === undefined ? undefined : compatOf(spec, "true", {});
  return c?.kind === "differs" ? c.difference : c?.kind === "same" ? "the same as ingress-nginx's" : "not implemented";
}

const sameField = (a: readonly [string, string], name: string, value: string) => a[0].toLowerCase() === name.toLowerCase() && a[1] === value;

/** Is this action done already by an annotation the Ingress carries (and Portico reads)? */
function alreadyDone(plan: IngressPlan, a: SnippetAction): boolean {
  const ann = plan.ingress.metadata.annotations ?? {};
  const p = plan.annotations.policies;
  switch (a.kind) {
    case "request-header":
      return p.headers.request.some((e) => sameField(e, a.name, a.value));
    case "response-header":
      return p.headers.response.some((e) => sameField(e, a.name, a.value));
    case "redirect": {
      const [name, dflt] = a.code === 301 || a.code === 308 ? [PERMANENT_REDIRECT, 301] : [TEMPORAL_REDIRECT, 302];
      const code = Number(ann[`${name}-code`] ?? dflt);
      return implemented(name) && ann[name] === a.url && code === a.code;
    }
    case "https-redirect":
      // Every rule host of an Ingress with a non-empty spec.tls is a TLS host, listed or not
      // (compile/tls.ts: ingress-nginx's createServers gives it a certificate, its own or the
      // default), so ssl-redirect already redirects it: `tls: [{secretName: x}]` included.
      return p.tlsRedirect.forceSslRedirect || (p.tlsRedirect.sslRedirect && plan.tls.length > 0);
    case "companion":
      return false; // judged with the other Ingresses (companionFor)
    case "header-deny":
      return p.headers.deny.some((d) => d.status === a.status && d.name.toLowerCase() === a.name.toLowerCase() && d.op === a.op && d.pattern === a.pattern);
  }
}

// ---------------------------------------------------------------------------------------------
// Companion Ingresses: a `location` of a server-snippet, or a `rewrite`, becomes another Ingress
// on the same hosts whose one path answers as the directive did, with the annotations both
// controllers read (so applying it before the switch changes nothing under ingress-nginx).

const DENY_ALL = "0.0.0.0/0,::/0";
const USE_REGEX = `${NGINX_PREFIX}use-regex`;
const REWRITE_TARGET = `${NGINX_PREFIX}rewrite-target`;
const DENYLIST = `${NGINX_PREFIX}denylist-source-range`;

function effectAnnotations(e: CompanionEffect, m: CompanionMatch): Record<string, string> {
  const out: Record<string, string> = {};
  if (m.regex) out[USE_REGEX] = "true";
  if (e.kind === "deny") out[DENYLIST] = DENY_ALL;
  else if (e.kind === "rewrite") out[REWRITE_TARGET] = e.target;
  else if (e.code === 301 || e.code === 308) {
    out[PERMANENT_REDIRECT] = e.url;
    if (e.code !== 301) out[`${PERMANENT_REDIRECT}-code`] = String(e.code);
  } else {
    out[TEMPORAL_REDIRECT] = e.url;
    if (e.code !== 302) out[`${TEMPORAL_REDIRECT}-code`] = String(e.code);
  }
  return out;
}

/**
 * The served Ingresses (`others`, in priority order) by host and by name, built once per
 * report: the snippet checks ask, for one Ingress, which others share its hosts, and a scan of
 * every Ingress per snippet made the report quadratic (10,000 Ingresses with snippets: minutes).
 */
interface ServedIndex {
  /** Position in `others`: the order every "first other Ingress" below keeps. */
  readonly position: ReadonlyMap<IngressPlan, number>;
  /** Valid rule hosts (null: hostless) → the Ingresses with a path there, in `others` order. */
  readonly byHost: ReadonlyMap<string | null, readonly IngressPlan[]>;
  /** `namespace/name` → the first Ingress of that name. */
  readonly byKey: ReadonlyMap<string, IngressPlan>;
  /** Hosts an Ingress with use-regex or a rewrite-target puts in regex mode (docs/design.md, "Regular expressions"). */
  readonly regexHosts: ReadonlySet<string | null>;
}

const servedIndexes = new WeakMap<readonly IngressPlan[], ServedIndex>();

function servedIndex(others: readonly IngressPlan[]): ServedIndex {
  const known = servedIndexes.get(others);
  if (known !== undefined) return known;
  const position = new Map<IngressPlan, number>();
  const byHost = new Map<string | null, IngressPlan[]>();
  const byKey = new Map<string, IngressPlan>();
  const regexHosts = new Set<string | null>();
  others.forEach((o, i) => {
    position.set(o, i);
    if (!byKey.has(o.key)) byKey.set(o.key, o);
    const rw = o.annotations.policies.regexRewrite;
    for (const h of hostsOf(o)) {
      const list = byHost.get(h);
      if (list === undefined) byHost.set(h, [o]);
      else list.push(o);
      if (rw.useRegex || rw.rewriteTarget !== "") regexHosts.add(h);
    }
  });
  const out: ServedIndex = { position, byHost, byKey, regexHosts };
  servedIndexes.set(others, out);
  return out;
}

/** The hosts of an Ingress's valid rule paths (null: hostless). */
const hostsOf = (p: IngressPlan): Set<string | null> => new Set(p.rulePaths.filter((r) => r.valid).map((r) => r.host));

/** The Ingresses with a valid path on one of `hosts`, each once, in `others` order. */
function sharingHosts(idx: ServedIndex, hosts: Iterable<string | null>): IngressPlan[] {
  const out = new Set<IngressPlan>();
  for (const h of hosts) for (const o of idx.byHost.get(h) ?? []) out.add(o);
  return [...out].sort((a, b) => (idx.position.get(a) as number) - (idx.position.get(b) as number));
}

const lower = (s: string) => s.toLowerCase();
const literalOf = (path: string) => /^[^.*+?()[\]{}|\\$^]*/.exec(path)?.[0] ?? "";
const backendKey = (b: unknown) => JSON.stringify(b);

/**
 * The Ingress that does what `a` did for `plan`, or why none can. `others`: every Ingress
 * served, to see what could take the companion's requests before it.
 */
function companionFor(plan: IngressPlan, a: Extract<SnippetAction, { kind: "companion" }>, name: string, directive: string, others: readonly IngressPlan[], regexHost: boolean): CompanionIngress | string {
  const ing = plan.ingress;
  const rules = ing.spec?.rules ?? [];
  const paths = plan.rulePaths.filter((r) => r.valid);
  if (paths.length === 0) return "the Ingress has no path to take a backend from";
  const hosts = [...new Set(paths.map((p) => p.host))];
  let m = a.match;
  // In regex mode an Exact path is `~* "^<path>"` too (docs/design.md, "Regular expressions"),
  // which would take `/old/x` and `/older`: written as the regex `<path>$` there.
  if (m.pathType === "Exact" && regexHost) m = { ...m, path: `${m.path.replaceAll(".", "\\.")}$`, pathType: "ImplementationSpecific", regex: true };
  const own = ing.metadata.annotations ?? {};
  if (a.match.scope === "ingress") {
    if (plan.annotations.policies.regexRewrite.rewriteTarget !== "") return "the Ingress has its own rewrite-target";
    // A configuration-snippet ran only inside this Ingress's locations: the companion may take
    // only requests one of them took, and must send them to the same backend.
    if (new Set(paths.map((p) => backendKey(p.backend))).size !== 1) return "the Ingress's paths have different backends: which one the rewritten request goes to depends on the path";
    if (plan.annotations.policies.regexRewrite.useRegex) return "the Ingress's own paths are regular expressions";
    const covered = paths.some((p) => p.declaredPathType !== "Exact" && (p.path === "/" || m.literal === p.path || m.literal.startsWith(p.path.endsWith("/") ? p.path : `${p.path}/`)));
    if (!covered) return `no path of the Ingress takes ${m.literal}, so the directive never ran there`;
  }
  if (m.regex && a.effect.kind === "deny") {
    // nginx tried the snippet's regex location before the Ingresses' prefix locations; in
    // regex mode the longest path is tried first, so a longer path under the denied one would
    // now be reached first: refused rather than left open.
    const L = lower(m.literal);
    for (const o of sharingHosts(servedIndex(others), hosts)) {
      for (const r of o.rulePaths) {
        if (!r.valid || !hosts.includes(r.host) || r.path.length <= m.path.length) continue;
        const own = lower(literalOf(r.path));
        if (lower(r.path).startsWith(L) || L.startsWith(own)) return `${o.key} has the longer path ${r.path} on the same host, which would be matched before the denied one`;
      }
    }
  }
  // Per host, as written: the host and the backend of its first valid path (never reached by
  // a deny or a redirect; the rewritten request's, checked above, for a rewrite).
  const byHost = new Map<string | null, { host: string | undefined; backend: unknown }>();
  for (const p of paths) {
    if (byHost.has(p.host)) continue;
    const rule = rules[p.ruleIndex];
    byHost.set(p.host, { host: rule?.host ?? undefined, backend: rule?.http?.paths?.[p.pathIndex]?.backend });
  }
  const cls = ing.spec?.ingressClassName;
  const legacy = own[LEGACY_CLASS_ANNOTATION];
  // A rewritten request still reaches the pods: it keeps every check and setting of the
  // Ingress it came through (authentication, source ranges, timeouts...), never the snippets.
  // A deny or a redirect answers itself, as the snippet's own location did (no annotation of
  // the Ingress applied there).
  const kept: Record<string, string> = {};
  if (a.effect.kind === "rewrite") for (const [k, v] of Object.entries(own)) if (ours(k) && !SNIPPETS.has(k) && !k.startsWith(`${NGINX_PREFIX}canary`)) kept[k] = v;
  const manifest = {
    apiVersion: "networking.k8s.io/v1",
    kind: "Ingress",
    metadata: {
      name,
      namespace: plan.namespace,
      annotations: { ...(cls == null && legacy !== undefined ? { [LEGACY_CLASS_ANNOTATION]: legacy } : {}), ...kept, ...effectAnnotations(a.effect, m) },
    },
    spec: {
      ...(cls !== undefined && cls !== null ? { ingressClassName: cls } : {}),
      rules: [...byHost.values()].map((h) => ({ ...(h.host === undefined ? {} : { host: h.host }), http: { paths: [{ path: m.path, pathType: m.pathType, backend: h.backend }] } })),
    },
  };
  return { directive, name, manifest };
}

/** Why a header `if` of a snippet cannot be this Ingress's deny-request-headers (null: it can). */
function headerDenyProblem(plan: IngressPlan, a: Extract<SnippetAction, { kind: "header-deny" }>, others: readonly IngressPlan[]): string | null {
  if (a.scope === "server") {
    // A server-snippet's `if` ran for every request of the host; the annotation covers this
    // Ingress's paths only, so another Ingress of the host would no longer be checked.
    const other = sharingHosts(servedIndex(others), hostsOf(plan)).find((o) => o !== plan);
    if (other !== undefined) return `${other.key} serves the same host, and the server-snippet checked its requests too`;
  }
  return null;
}

/** Is `c` applied already: a served Ingress of that name with the same annotations and paths? */
function companionApplied(c: CompanionIngress, others: readonly IngressPlan[]): boolean {
  const meta = c.manifest.metadata as { name: string; namespace: string; annotations: Record<string, string> };
  const o = servedIndex(others).byKey.get(`${meta.namespace}/${meta.name}`);
  if (o === undefined) return false;
  const ann = o.ingress.metadata.annotations ?? {};
  return Object.entries(meta.annotations).every(([k, v]) => ann[k] === v) && backendKey(o.ingress.spec?.rules) === backendKey((c.manifest.spec as { rules: unknown }).rules);
}

/** The annotations that do what the not-yet-replaced actions do, merged per annotation. */
function suggestions(actions: readonly SnippetAction[]): Suggestion[] {
  const req: string[] = [];
  const res: string[] = [];
  const deny: string[] = [];
  const out: Suggestion[] = [];
  const add = (annotation: string, value: string) => {
    if (!out.some((s) => s.annotation === annotation)) out.push({ annotation, value, implemented: implemented(annotation) });
  };
  for (const a of actions) {
    if (a.kind === "request-header") req.push(`${a.name}: ${a.value}`);
    else if (a.kind === "response-header") res.push(`${a.name}: ${a.value}`);
    else if (a.kind === "https-redirect") add(FORCE_SSL_REDIRECT, "true");
    else if (a.kind === "companion") continue;
    else if (a.kind === "header-deny") {
      deny.push(`${a.status === 403 ? "" : `${a.status} `}${a.name} ${a.op} ${a.pattern}`);
    }
    else if (a.code === 301 || a.code === 308) {
      add(PERMANENT_REDIRECT, a.url);
      if (a.code !== 301) add(`${PERMANENT_REDIRECT}-code`, String(a.code));
    } else {
      add(TEMPORAL_REDIRECT, a.url);
      if (a.code !== 302) add(`${TEMPORAL_REDIRECT}-code`, String(a.code));
    }
  }
  const lists: Suggestion[] = [];
  if (req.length > 0) lists.push({ annotation: REQUEST_HEADERS, value: req.join("\n"), implemented: implemented(REQUEST_HEADERS) });
  if (res.length > 0) lists.push({ annotation: RESPONSE_HEADERS, value: res.join("\n"), implemented: implemented(RESPONSE_HEADERS) });
  if (deny.length > 0) lists.push({ annotation: DENY_REQUEST_HEADERS, value: deny.join("\n"), implemented: implemented(DENY_REQUEST_HEADERS) });
  return [...lists, ...out];
}

const GATE_TEXT: Readonly<Record<Exclude<SnippetGate, "executed">, string>> = {
  dropped: "never executed; ingress-nginx drops it too (annotations-risk-level Critical, allow-snippet-annotations off), so nothing changes",
  rejected:
    "never executed; ingress-nginx refuses this whole Ingress (a snippet is a Critical-risk annotation, above its annotations-risk-level), while Portico serves it, without the snippet",
};

const contextOf = (name: string) => (name === `${NGINX_PREFIX}server-snippet` ? "server" : "location");

function snippetReport(plan: IngressPlan, name: string, value: string, gate: SnippetGate, others: readonly IngressPlan[]): AnnotationReport {
  // A server-snippet runs in the server block (its `location` blocks are the host's); the
  // others inside each of the Ingress's locations.
  const scan = scanSnippet(value, contextOf(name));
  if (gate !== "executed") {
    const directives = scan.directives.map((d) => ({ text: d.text, understood: d.actions.length > 0, note: d.note }));
    const notUnderstood = directives.filter((d) => !d.understood).length;
    return {
      name,
      value,
      status: gate === "dropped" ? "same" : "differs",
      family: "snippets",
      text: GATE_TEXT[gate],
      snippet: { directives, notUnderstood, error: scan.error, instead: [], companions: [] },
    };
  }
  const todo: SnippetAction[] = [];
  const companions: CompanionIngress[] = [];
  let notUnderstood = 0;
  let differences = false;
  // The host is in regex mode once any of these companions, or any Ingress of its hosts, uses
  // a regex (use-regex, or a rewrite-target: docs/design.md, "Regular expressions").
  const own = plan.ingress.metadata.annotations ?? {};
  const regexHosts = servedIndex(others).regexHosts;
  const regexHost =
    Object.keys(own).some((k) => SNIPPETS.has(k) && scanSnippet(own[k] as string, contextOf(k)).directives.some((d) => d.actions.some((a) => a.kind === "companion" && a.match.regex))) ||
    [...hostsOf(plan)].some((h) => regexHosts.has(h));
  const short = name.slice(name.indexOf("/") + 1);
  const directives = scan.directives.map((d, i): SnippetDirectiveReport => {
    let note = d.note;
    let understood = d.actions.length > 0;
    for (const a of d.actions) {
      if (a.kind === "header-deny") {
        const why = headerDenyProblem(plan, a, others);
        if (why !== null) {
          understood = false;
          note = `no annotation can do it: ${why}`;
        }
        continue;
      }
      if (a.kind !== "companion") continue;
      const c = companionFor(plan, a, `${plan.name}-${short}-${i + 1}`.slice(0, 253), d.text, others, regexHost);
      if (typeof c === "string") {
        understood = false;
        note = `no companion Ingress can do it: ${c}`;
      } else if (!companionApplied(c, others)) companions.push(c);
    }
    if (!understood) notUnderstood++;
    else {
      for (const a of d.actions) {
        // Portico's HTTPS redirect has its own rules: the registry states them.
        if (a.kind === "https-redirect") note = `Portico's HTTPS redirect (ssl-redirect, force-ssl-redirect): ${httpsRedirectDifference()}`;
        if (!alreadyDone(plan, a)) todo.push(a);
      }
      if (note !== null) differences = true;
    }
    return { text: d.text, understood, note };
  });
  const instead = suggestions(todo);
  // A rewritten request is proxied from the companion Ingress: the annotations that replace
  // the snippet's other directives (headers...) must be on it too, as the snippet ran there.
  for (const [i, c] of companions.entries()) {
    const meta = c.manifest.metadata as { annotations: Record<string, string> };
    if (meta.annotations[REWRITE_TARGET] === undefined || instead.length === 0) continue;
    const annotations = { ...meta.annotations };
    for (const s of instead) if (s.implemented) annotations[s.annotation] = s.value;
    companions[i] = { ...c, manifest: { ...c.manifest, metadata: { ...meta, annotations } } };
  }
  const total = scan.directives.length;
  // parse.ts refuses the Ingress's paths while a snippet holds anything not known to be
  // harmless; the equivalents above still say what to use instead of it.
  const refusal = plan.annotations.problems.find((p) => p.startsWith(`annotation ${name}: the snippet `));
  let status: AnnotationStatus;
  let text: string;
  if (scan.error !== null) {
    status = "not-served";
    text = `never executed, and not readable as nginx configuration (${scan.error})`;
  } else if (notUnderstood > 0) {
    status = "not-served";
    text = `never executed: ${notUnderstood} of ${total} directive${total === 1 ? "" : "s"} not understood; what they did is lost`;
  } else if (instead.length > 0 || companions.length > 0) {
    status = "not-served";
    const what = instead.length === 0 ? "Ingresses below are applied" : companions.length === 0 ? "annotations below are added" : "annotations below are added and the Ingresses below applied";
    text = `never executed: until the ${what}, what ${total === 1 ? "it does" : "its directives do"} is lost`;
  } else {
    status = differences ? "differs" : "same";
    text = `never executed; the Ingress's Portico annotations do what ${total === 1 ? "its directive does" : `its ${total} directives do`}${differences ? ", with the differences noted" : ""}`;
  }
  if (refusal !== undefined) {
    status = "not-served";
    const why = refusal.slice(`annotation ${name}: the snippet `.length, refusal.indexOf("; "));
    text += `; and while the snippet is set every path of the Ingress answers 503, because it ${why}: remove it once what replaces it is in place`;
  }
  return {
    name,
    value,
    status,
    family: "snippets",
    text,
    snippet: { directives, notUnderstood, error: scan.error, instead, companions },
  };
}

// ---------------------------------------------------------------------------------------------
// One Ingress's annotations: kept per plan (a plan is one immutable Ingress object).

interface PlanCompat {
  readonly annotations: readonly AnnotationReport[];
  readonly status: IngressStatus;
  readonly refused: string | null;
}

const planCache = new WeakMap<IngressPlan, PlanCompat>();

const ours = (k: string) => k.startsWith(NGINX_PREFIX) || k.startsWith(PORTICO_PREFIX);

function annotationReport(plan: IngressPlan, name: string, value: string, gate: SnippetGate, others: readonly IngressPlan[]): AnnotationReport {
  if (SNIPPETS.has(name)) return snippetReport(plan, name, value, gate, others);
  const spec = specOf(name);
  if (spec === undefined) return { name, value, status: "unknown", family: null, text: "read by neither ingress-nginx nor Portico: no effect in either" };
  const family = spec.family;
  // parse.ts words every value problem "annotation NAME=…".
  const problem = plan.annotations.problems.find((p) => p.startsWith(`annotation ${name}=`));
  if (problem !== undefined) return { name, value, status: "differs", family, text: `Portico refuses the value: ${problem.slice(problem.indexOf(": ") + 2)}` };
  const ann = plan.ingress.metadata.annotations ?? {};
  // This value's compat: a family may state that some values behave exactly as in ingress-nginx.
  const c = compatOf(spec, value, ann);
  if (c.kind === "not-implemented") {
    return { name, value, status: "not-served", family, text: `not served (in ingress-nginx: ${spec.description})${c.note ? `. ${c.note}` : ""}` };
  }
  if (c.kind === "portico-only") return { name, value, status: "portico", family, text: "Portico's own annotation (ingress-nginx ignores it)" };
  // A portico.dev name set next to this one is read first (parse.ts).
  if (name !== spec.portico && spec.portico !== null && ann[spec.portico] !== undefined && ann[spec.portico] !== "" && ann[spec.portico] !== value) {
    return { name, value, status: "differs", family, text: `Portico reads ${spec.portico} (set on this Ingress, to ${JSON.stringify(ann[spec.portico])}) instead` };
  }
  if (c.kind === "same") return { name, value, status: "same", family, text: "served the same" };
  return { name, value, status: "differs", family, text: c.difference };
}

const ANNOTATION_EFFECT: Readonly<Record<AnnotationStatus, IngressStatus>> = {
  same: "unchanged",
  portico: "unchanged",
  unknown: "unchanged",
  differs: "differs",
  "not-served": "partly-served",
};

/**
 * One Ingress's part of the report. Kept per plan for the usual gate (snippets run by
 * ingress-nginx, the assumption without a ConfigMap, and the live metric's).
 */
function planCompat(plan: IngressPlan, gate: SnippetGate = "executed", others: readonly IngressPlan[] | null = null): PlanCompat {
  // `others` (every Ingress served) decides only what the snippets' companion Ingresses look
  // like, never the status (a snippet with a `location` or `rewrite` refuses the Ingress).
  const cached = gate === "executed" && others === null;
  const hit = cached ? planCache.get(plan) : undefined;
  if (hit !== undefined) return hit;
  const ann = plan.ingress.metadata.annotations ?? {};
  const annotations = Object.keys(ann)
    .filter(ours)
    .sort()
    .map((k) => annotationReport(plan, k, ann[k] as string, gate, others ?? [plan]));
  let status: IngressStatus = "unchanged";
  for (const a of annotations) status = worst(status, ANNOTATION_EFFECT[a.status]);
  // Value problems a family reported without naming one annotation.
  if (plan.annotations.problems.some((p) => !annotations.some((a) => p.startsWith(`annotation ${a.name}=`)))) status = worst(status, "differs");
  // A route may be kept and answer 503 on every request (a `refuse` policy): an access
  // annotation Portico cannot apply, or cannot apply yet (GUARDS_ACCESS), fails closed.
  const refusing = (plan.annotations.options.stages ?? []).filter((p) => p.kind === "refuse" || p.kind === "certificate-refuse");
  const refusals = refusing.map((p) => String(p.params.reason));
  const noPath = plan.rulePaths.length > 0 && plan.defaultBackend === null && plan.rulePaths.every((r) => !r.valid);
  // The answer every path gives: a CA Secret that cannot be read is a 403 (compile/access.ts).
  const codes = [...new Set(refusing.map((p) => Number(p.params.status)))].sort().join(" or ");
  // The refusals ingress-nginx makes the same way (an unreadable source-range list, a Secret it
  // cannot or may not read, a CA it cannot load); the others are stated by their annotation.
  const sameThere = refusing.length > 0 && refusing.every((p) => p.kind === "certificate-refuse" || refusedByIngressNginxToo(p));
  const refused = noPath
    ? "Portico serves none of its paths (see the diagnostics)"
    : refusals.length > 0
      ? `every path answers ${codes}${sameThere ? ` (ingress-nginx answers ${codes} too)` : ""}: ${refusals.join("; ")}`
      : null;
  // A report that says an Ingress moves unchanged, or with differences, must never sit above
  // "every path answers 503": whenever no request reaches its backends the Ingress is refused,
  // and the text says whether ingress-nginx refuses it too. An access annotation Portico does
  // not implement (GUARDS_ACCESS) always refuses (its annotation item says so).
  if (refused !== null || Object.keys(ann).some((k) => GUARDS_ACCESS.has(k))) status = "refused";
  const out: PlanCompat = Object.freeze({ annotations: Object.freeze(annotations), status, refused });
  if (cached) planCache.set(plan, out);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Compile diagnostics: which of them change what the Ingress does compared with ingress-nginx.

/**
 * Reasons that mean the same in both (ingress-nginx lets the oldest Ingress win a path, answers
 * 503 without endpoints), and reasons left out (the annotation items cover them). Any other
 * reason is a change until shown otherwise.
 */
const DIAGNOSTIC_EFFECT: Partial<Record<DiagnosticReason, DiagnosticReport["effect"] | "omitted">> = {
  UnsupportedAnnotation: "omitted",
  InvalidAnnotation: "omitted",
  InvalidPath: "not-served",
  InvalidHost: "not-served",
  InvalidBackend: "not-served",
  ExternalNameNotAllowed: "not-served",
  DuplicatePath: "same",
  PathConflict: "same",
  ServiceNotFound: "same",
  ServicePortNotFound: "same",
  NoEndpoints: "same",
  UnsupportedBackend: "same",
  // The default certificate is served in both; a missing auth Secret is a 503 in both.
  SecretNotFound: "same",
  InvalidCertificate: "same",
  CertificateExpired: "same",
  DefaultBackendConflict: "same",
  // ingress-nginx also drops a canary with no main Ingress, and uses the first of two canaries.
  CanaryWithoutMain: "same",
  CanaryConflict: "same",
  // Warnings about what ingress-nginx does too: a host in regex mode because of another
  // Ingress, a path its admission webhook would refuse but its controller serves.
  RegexModeHost: "same",
  // Another Ingress's auth-tls-* covering this one's paths: ingress-nginx sets it per server.
  HostClientCertificates: "same",
  StrictPathType: "same",
};

const EXTERNAL_NAME_NOTE = " (ingress-nginx proxies ExternalName Services; Portico answers 503 unless --allow-external-name-services)";

function diagnosticReport(d: Diagnostic): DiagnosticReport | null {
  const e = DIAGNOSTIC_EFFECT[d.reason] ?? "differs";
  if (e === "omitted") return null;
  return { reason: d.reason, message: d.reason === "ExternalNameNotAllowed" ? `${d.message}${EXTERNAL_NAME_NOTE}` : d.message, effect: e };
}

const DIAG_STATUS: Readonly<Record<DiagnosticReport["effect"], IngressStatus>> = { same: "unchanged", differs: "differs", "not-served": "partly-served" };

/** Diagnostics by `namespace/name`, of Ingresses only. */
function diagnosticsByIngress(diagnostics: readonly Diagnostic[]): Map<string, Diagnostic[]> {
  const out = new Map<string, Diagnostic[]>();
  for (const d of diagnostics) {
    if (d.kind !== "Ingress") continue;
    const key = `${d.namespace}/${d.name}`;
    const list = out.get(key);
    if (list) list.push(d);
    else out.set(key, [d]);
  }
  return out;
}

function statusOf(plan: IngressPlan, diags: readonly Diagnostic[] | undefined, gate: SnippetGate = "executed"): IngressStatus {
  return withDiagnostics(planCompat(plan, gate).status, diags);
}

/** An Ingress's status made worse by what its diagnostics say. */
function withDiagnostics(status: IngressStatus, diags: readonly Diagnostic[] | undefined): IngressStatus {
  let s = status;
  for (const d of diags ?? []) {
    const r = diagnosticReport(d);
    if (r !== null) s = worst(s, DIAG_STATUS[r.effect]);
  }
  return s;
}

// ---------------------------------------------------------------------------------------------

function ingressReport(view: Inspection, plan: IngressPlan, diags: readonly Diagnostic[] | undefined, gate: SnippetGate, served: readonly IngressPlan[]): IngressReport {
  const pc = planCompat(plan, gate, served);
  const legacy = plan.ingress.metadata.annotations?.[LEGACY_CLASS_ANNOTATION];
  const decision = view.classify(plan);
  return {
    ingress: plan.key,
    // planCompat's status does not depend on `others` (its comment), so the report above has it.
    status: withDiagnostics(pc.status, diags),
    class: `${decision.reason}${legacy !== undefined && decision.rule !== "annotation" ? ` (${LEGACY_CLASS_ANNOTATION} is not read: spec.ingressClassName is set)` : ""}`,
    annotations: pc.annotations,
    diagnostics: (diags ?? []).map(diagnosticReport).filter((r): r is DiagnosticReport => r !== null),
    refused: pc.refused,
  };
}

/**
 * The report for the compile `view` describes. The compiler must run with ingress-nginx's class
 * rules (config.ingressNginxCompat), so that the Ingresses Portico takes are the ones
 * ingress-nginx takes with the same --ingress-class, --controller-class and
 * --watch-ingress-without-class. With ingress-nginx's ConfigMap, its keys are reported and its
 * snippet gates decide what ingress-nginx did with each snippet; without it, snippets are taken
 * to have run (a cluster that has them usually allows them).
 */
export function migrationReport(view: Inspection, config: CompileConfig, configMap: NginxConfigMap | null = null): MigrationReport {
  const diags = diagnosticsByIngress(view.result.diagnostics);
  const gate = snippetGate(configMap);
  const cm = configMap === null ? null : configMapReport(configMap);
  // A copy of its own: the compiler updates its served list in place on later compiles, and
  // the snippets' index (servedIndex) is kept per list for this report only.
  const served = view.served.slice();
  const ingresses = served
    .map((plan) => ingressReport(view, plan, diags.get(plan.key), gate, served))
    .sort((a, b) => (a.ingress < b.ingress ? -1 : a.ingress > b.ingress ? 1 : 0));
  const count = (s: IngressStatus) => ingresses.filter((i) => i.status === s).length;
  return {
    ingressClass: config.ingressClass,
    controllerName: config.controllerName,
    watchIngressWithoutClass: config.watchIngressWithoutClass,
    ingresses,
    ignored: view.ignored
      .map((plan) => ({ ingress: plan.key, reason: view.classify(plan).reason }))
      .sort((a, b) => (a.ingress < b.ingress ? -1 : a.ingress > b.ingress ? 1 : 0)),
    configMap: cm,
    assumedDefaults: cm === null ? NGINX_DEFAULTS : [],
    summary: {
      ingresses: ingresses.length,
      unchanged: count("unchanged"),
      differs: count("differs"),
      partlyServed: count("partly-served"),
      refused: count("refused"),
      ignored: view.ignored.length,
      configMapNotHonoured: cm?.notHonoured ?? 0,
    },
  };
}

/** Served Ingresses by report status (portico_ingress_compat): the per-Ingress work is cached on the plan. */
export function compatCounts(view: Pick<Inspection, "served" | "result">): Record<IngressStatus, number> {
  const out: Record<IngressStatus, number> = { refused: 0, "partly-served": 0, differs: 0, unchanged: 0 };
  // Only the few Ingresses with diagnostics need a lookup.
  const diags = diagnosticsByIngress(view.result.diagnostics);
  for (const plan of view.served) out[statusOf(plan, diags.get(plan.key))]++;
  return out;
}

/** The ingress-nginx and portico.dev annotations of one Ingress with their registry status (explain). */
export function annotationsOf(plan: IngressPlan): readonly AnnotationReport[] {
  return planCompat(plan).annotations;
}
