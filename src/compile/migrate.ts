// The migration report: for each Ingress that ingress-nginx would take, what changes when
// Portico serves it instead. It reads the compiler's own work (Compiler.inspect: the plans,
// the class decisions, the compile's diagnostics) and the annotation registry at run time, so
// it can never disagree with what Portico serves, and it follows the registry as families are
// added. The live metric portico_ingress_compat counts the same statuses from the same code
// (compatCounts). Pure, like the compiler; runtime/migrate.ts reads the objects and prints.
import type { Diagnostic, DiagnosticReason } from "../model/diagnostic.ts";
import { ANNOTATIONS, compatOf, GUARDS_ACCESS, namesOf, NGINX_PREFIX, PORTICO_PREFIX, refusedByIngressNginxToo, scanSnippet, type AnnotationSpec, type SnippetAction } from "./annotations.ts";
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

export interface SnippetReport {
  readonly directives: readonly SnippetDirectiveReport[];
  readonly notUnderstood: number;
  /** Malformed text: nothing in it was understood. */
  readonly error: string | null;
  /** The annotations that do what the understood directives did (not yet on the Ingress). */
  readonly instead: readonly Suggestion[];
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
      return p.tlsRedirect.forceSslRedirect || (p.tlsRedirect.sslRedirect && plan.tls.some((t) => t.hosts.length > 0));
  }
}

/** The annotations that do what the not-yet-replaced actions do, merged per annotation. */
function suggestions(actions: readonly SnippetAction[]): Suggestion[] {
  const req: string[] = [];
  const res: string[] = [];
  const out: Suggestion[] = [];
  const add = (annotation: string, value: string) => {
    if (!out.some((s) => s.annotation === annotation)) out.push({ annotation, value, implemented: implemented(annotation) });
  };
  for (const a of actions) {
    if (a.kind === "request-header") req.push(`${a.name}: ${a.value}`);
    else if (a.kind === "response-header") res.push(`${a.name}: ${a.value}`);
    else if (a.kind === "https-redirect") add(FORCE_SSL_REDIRECT, "true");
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
  return [...lists, ...out];
}

const GATE_TEXT: Readonly<Record<Exclude<SnippetGate, "executed">, string>> = {
  dropped: "never executed; ingress-nginx drops it too (annotations-risk-level Critical, allow-snippet-annotations off), so nothing changes",
  rejected:
    "never executed; ingress-nginx refuses this whole Ingress (a snippet is a Critical-risk annotation, above its annotations-risk-level), while Portico serves it, without the snippet",
};

function snippetReport(plan: IngressPlan, name: string, value: string, gate: SnippetGate): AnnotationReport {
  const scan = scanSnippet(value);
  if (gate !== "executed") {
    const directives = scan.directives.map((d) => ({ text: d.text, understood: d.actions.length > 0, note: d.note }));
    const notUnderstood = directives.filter((d) => !d.understood).length;
    return {
      name,
      value,
      status: gate === "dropped" ? "same" : "differs",
      family: "snippets",
      text: GATE_TEXT[gate],
      snippet: { directives, notUnderstood, error: scan.error, instead: [] },
    };
  }
  const todo: SnippetAction[] = [];
  let notUnderstood = 0;
  let differences = false;
  const directives = scan.directives.map((d): SnippetDirectiveReport => {
    let note = d.note;
    if (d.actions.length === 0) notUnderstood++;
    else {
      for (const a of d.actions) {
        // Portico's HTTPS redirect has its own rules: the registry states them.
        if (a.kind === "https-redirect") note = `Portico's HTTPS redirect (ssl-redirect, force-ssl-redirect): ${httpsRedirectDifference()}`;
        if (!alreadyDone(plan, a)) todo.push(a);
      }
      if (note !== null) differences = true;
    }
    return { text: d.text, understood: d.actions.length > 0, note };
  });
  const instead = suggestions(todo);
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
  } else if (instead.length > 0) {
    status = "not-served";
    text = `never executed: until the annotations below are added, what ${total === 1 ? "it does" : "its directives do"} is lost`;
  } else {
    status = differences ? "differs" : "same";
    text = `never executed; the Ingress's Portico annotations do what ${total === 1 ? "its directive does" : `its ${total} directives do`}${differences ? ", with the differences noted" : ""}`;
  }
  if (refusal !== undefined) {
    status = "not-served";
    const why = refusal.slice(`annotation ${name}: the snippet `.length, refusal.indexOf("; "));
    text += `; and while the snippet is set every path of the Ingress answers 503, because it ${why}: remove it once the annotations that replace it are set`;
  }
  return {
    name,
    value,
    status,
    family: "snippets",
    text,
    snippet: { directives, notUnderstood, error: scan.error, instead },
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

function annotationReport(plan: IngressPlan, name: string, value: string, gate: SnippetGate): AnnotationReport {
  if (SNIPPETS.has(name)) return snippetReport(plan, name, value, gate);
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
function planCompat(plan: IngressPlan, gate: SnippetGate = "executed"): PlanCompat {
  const hit = gate === "executed" ? planCache.get(plan) : undefined;
  if (hit !== undefined) return hit;
  const ann = plan.ingress.metadata.annotations ?? {};
  const annotations = Object.keys(ann)
    .filter(ours)
    .sort()
    .map((k) => annotationReport(plan, k, ann[k] as string, gate));
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
  if (gate === "executed") planCache.set(plan, out);
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
  let s = planCompat(plan, gate).status;
  for (const d of diags ?? []) {
    const r = diagnosticReport(d);
    if (r !== null) s = worst(s, DIAG_STATUS[r.effect]);
  }
  return s;
}

// ---------------------------------------------------------------------------------------------

function ingressReport(view: Inspection, plan: IngressPlan, diags: readonly Diagnostic[] | undefined, gate: SnippetGate): IngressReport {
  const pc = planCompat(plan, gate);
  const legacy = plan.ingress.metadata.annotations?.[LEGACY_CLASS_ANNOTATION];
  const decision = view.classify(plan);
  return {
    ingress: plan.key,
    status: statusOf(plan, diags, gate),
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
  const ingresses = view.served
    .map((plan) => ingressReport(view, plan, diags.get(plan.key), gate))
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
