// What an annotation family is made of: the annotations it reads (with their documentation)
// and a parser from those values to one typed, frozen policy. docs/design.md, "Annotations
// and policies", says how the pieces fit and how to add one.
import type * as v from "valibot";
import type { StagePolicy } from "../policy/stages.ts";

export const PORTICO_PREFIX = "portico.dev/";
/** ingress-nginx's default `--annotations-prefix`; Portico does not make it configurable. */
export const NGINX_PREFIX = "nginx.ingress.kubernetes.io/";

/**
 * The families: one module each under src/annotations/ once implemented. The names of
 * families not written yet are listed so the registry can say where each missing
 * ingress-nginx annotation will live.
 */
export type FamilyName =
  | "tls-redirect"
  | "body"
  | "timeouts"
  | "backend-protocol"
  | "regex-rewrite"
  | "redirects"
  | "hosts"
  | "canary"
  | "affinity"
  | "balancing"
  | "retries"
  | "error-pages"
  | "limits"
  | "buffering"
  | "access"
  | "basic-auth"
  | "external-auth"
  | "cors"
  | "client-certs"
  | "upstream-tls"
  | "headers"
  | "snippets"
  | "ssl-passthrough"
  | "ssl-ciphers"
  | "mirror"
  | "log"
  | "other";

/** How an annotation compares with ingress-nginx's, as the README table states it. */
export type Compat =
  /** Same accepted values, default and observable behaviour. */
  | { readonly kind: "same" }
  /** Implemented, with a difference stated exactly (one sentence or two). */
  | { readonly kind: "differs"; readonly difference: string }
  /** ingress-nginx has it, Portico does not (yet): the annotation is an UnsupportedAnnotation. */
  | { readonly kind: "not-implemented"; readonly note?: string }
  /** Portico's own annotation, with no ingress-nginx counterpart. */
  | { readonly kind: "portico-only" };

export interface AnnotationSpec {
  /** `portico.dev/…`, or null when Portico reads only the ingress-nginx name (or none yet). */
  readonly portico: string | null;
  /**
   * ingress-nginx names: its canonical name first, then its own aliases (`whitelist-source-range`
   * for `allowlist-source-range`). Empty for a Portico-only annotation.
   */
  readonly nginx: readonly string[];
  readonly family: FamilyName;
  /** The value used when the annotation is absent: a literal, or the flag that supplies it. Null when not implemented. */
  readonly default: string | null;
  /** One line: the values accepted and what they do. */
  readonly description: string;
  readonly compat: Compat;
  /**
   * For a "differs" annotation: the values (given the Ingress's other annotations) that behave
   * exactly as in ingress-nginx, so the migration report and portico_ingress_compat call them
   * "same". Only values ingress-nginx accepts with the same meaning; a difference that applies
   * to every value keeps the annotation "differs" (no predicate). The `difference` text says
   * which values these are, and why.
   */
  readonly sameWhen?: (value: string, all: AnnotationValues) => boolean;
  /**
   * For a "differs" annotation: the difference as it applies to this value (a value Portico
   * accepted), leaving out what the value makes irrelevant (the sentence on `false` when it is
   * `true`, the rules for `*` and `null` when the list names exact origins), so a team reads
   * what changes for its own Ingress. The README table keeps the full `difference`. ""
   * means nothing differs for this value. Without it, a spec with `sameWhen` drops the
   * sentences on the values served the same (this value is not one of them).
   */
  readonly differenceFor?: (value: string, all: AnnotationValues) => string;
  /**
   * The value is a list that may span lines (LF; CR never). Only for Portico's own
   * annotations: ingress-nginx refuses a line break in every value of its own.
   */
  readonly multiline?: boolean;
}

/** An Ingress's `metadata.annotations`. */
export type AnnotationValues = Readonly<Record<string, string>>;

/**
 * How this value of `spec` compares with ingress-nginx: `sameWhen` narrows a "differs"
 * annotation to "same" for the values it names; otherwise the registry's static compat.
 */
export function compatOf(spec: AnnotationSpec, value: string, all: AnnotationValues): Compat {
  // A line break is refused in every ingress-nginx value (parse.ts): never "same".
  if (spec.compat.kind !== "differs" || /[\r\n]/.test(value)) return spec.compat;
  if (spec.sameWhen?.(value, all) === true) return SAME;
  if (spec.differenceFor !== undefined) {
    const difference = spec.differenceFor(value, all);
    return difference === "" ? SAME : { kind: "differs", difference };
  }
  // The sentences naming the values served the same speak of other values than this one.
  if (spec.sameWhen !== undefined) {
    const kept = spec.compat.difference.split(/(?<=\.) +(?=[`A-Z0-9])/).filter((s) => !s.includes("served the same"));
    if (kept.length > 0) return { kind: "differs", difference: kept.join(" ") };
  }
  return spec.compat;
}

const SAME: Compat = Object.freeze({ kind: "same" });

/**
 * The value `spec` is read under on an Ingress: its first name with a non-empty value, as
 * parse.ts reads it (undefined when none is set).
 */
export function valueIn(spec: AnnotationSpec, all: AnnotationValues): string | undefined {
  for (const n of namesOf(spec)) {
    const v = all[n];
    if (v !== undefined && v !== "") return v;
  }
  return undefined;
}

/** The name users see first: the portico.dev one when there is one. */
export const displayName = (a: AnnotationSpec): string => a.portico ?? (a.nginx[0] as string);

/** Every name the annotation is read under, in the order they are tried. */
export const namesOf = (a: AnnotationSpec): readonly string[] => (a.portico ? [a.portico, ...a.nginx] : a.nginx);

/** The outcome of reading one annotation. */
export type ReadResult<T> =
  | { readonly state: "unset" }
  /**
   * Reported already (an InvalidAnnotation diagnostic naming the annotation and the value).
   * `empty`: the value was "" (ingress-nginx validates only non-empty values, so an empty one
   * can have another consequence there than a malformed one).
   */
  | { readonly state: "invalid"; readonly empty: boolean }
  /** `name` is the name the value was read under, `raw` the value as written. */
  | { readonly state: "ok"; readonly value: T; readonly name: string; readonly raw: string };

/** What an invalid value leads to, when an empty value leads somewhere else. */
export interface Consequences {
  readonly empty: string;
  readonly invalid: string;
}

/** What a family's parser reads annotations through (parse.ts implements it once for all). */
export interface Reader {
  /**
   * Read `spec` under its first name that has a non-empty value (portico.dev, then
   * ingress-nginx's canonical name, then its aliases). A value that fails `schema`, is empty,
   * or holds a line break is reported as "annotation NAME="VALUE": <why>; <consequence>".
   */
  read<T>(spec: AnnotationSpec, schema: v.GenericSchema<string, T>, consequence: string | Consequences): ReadResult<T>;
  /** `read` for the common case: an invalid value is reported and the default is used (undefined). */
  value<T>(spec: AnnotationSpec, schema: v.GenericSchema<string, T>): T | undefined;
  /** Report a problem that is not about one value (two annotations that contradict each other). */
  problem(message: string): void;
}

export interface Family<P> {
  readonly name: FamilyName;
  /** The annotations this family reads; the registry lists them. */
  readonly annotations: readonly AnnotationSpec[];
  /** The policy when none of its annotations is set (shared, frozen). */
  readonly none: P;
  /** Parse the family's annotations into a frozen policy (`none` when nothing is set). */
  parse(r: Reader): P;
  /**
   * The request-side stage policies the policy gives, each written with stagePolicy() from its
   * kind's contract (kinds/<stage>.ts); `all` is every family's policy, by its FAMILIES key.
   * compile/stages.ts collects them (annotationStages, in FAMILIES order) and orders them by
   * their contracts' stages (assembleStages); absent: the family has none.
   */
  stages?(policy: P, all: { readonly [family: string]: unknown }): readonly StagePolicy[];
}
