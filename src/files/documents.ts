// One YAML file's text → validated objects of the five kinds, as a watch would deliver them.
// No I/O here: manifests.ts reads files and diffs; this turns text into objects + problems.
import { createHash } from "node:crypto";
import { YAMLException, load, loadAll } from "js-yaml";
import { KIND_API, isKind, objectKey, parseObject, type Kind, type KubeObject } from "../model/kinds.ts";
import type { Diagnostic } from "../model/diagnostic.ts";
import { isRecord } from "../model/schemas.ts";

/** Conflicts go to the oldest creationTimestamp, then namespace/name: objects without one sort first and tie, so namespace/name decides among them. */
export const EPOCH = "1970-01-01T00:00:00Z";

export interface LoadedObject {
  readonly kind: Kind;
  readonly object: KubeObject;
  /** Content hash of the document as written: equal hash → no event. */
  readonly hash: string;
}

export type FileParse =
  | {
      readonly ok: true;
      readonly objects: readonly LoadedObject[];
      readonly diagnostics: readonly Diagnostic[];
      /** Kinds present in the file that Portico does not watch (logged at debug). */
      readonly ignoredKinds: readonly string[];
    }
  | { readonly ok: false; readonly line: number | null; readonly message: string };

function hashOf(text: string, length = 16): string {
  return createHash("sha256").update(text).digest("hex").slice(0, length);
}

/** A stable uid (UUID-shaped) from kind + key, so it survives edits and reloads. */
function syntheticUid(kind: Kind, key: string): string {
  const h = hashOf(`${kind}/${key}`, 32);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

function expectedApiVersion(kind: Kind): string {
  const api = KIND_API[kind];
  return api.group ? `${api.group}/${api.version}` : api.version;
}

/** The apiVersions a document of `kind` may be written in (ReferenceGrant: v1beta1 and v1). */
function servedApiVersions(kind: Kind): string[] {
  const api = KIND_API[kind];
  return [api.version, ...(api.alsoServed ?? [])].map((v) => (api.group ? `${api.group}/${v}` : v));
}

/** Fill in what the API server would have: namespace, uid, resourceVersion, creationTimestamp. */
function normalise(kind: Kind, doc: Record<string, unknown>, hash: string): Record<string, unknown> {
  const meta = isRecord(doc.metadata) ? { ...doc.metadata } : {};
  if (KIND_API[kind].namespaced) {
    if (typeof meta.namespace !== "string" || meta.namespace === "") meta.namespace = "default";
  } else {
    delete meta.namespace; // cluster-scoped: keyed by name alone
  }
  const name = typeof meta.name === "string" ? meta.name : "";
  const namespace = typeof meta.namespace === "string" ? meta.namespace : undefined;
  meta.uid ??= syntheticUid(kind, objectKey({ name, namespace }));
  meta.resourceVersion ??= hash;
  meta.creationTimestamp ??= EPOCH;
  // The API server starts generation at 1; Gateway API status reports it as observedGeneration.
  meta.generation ??= 1;
  return { ...doc, metadata: meta };
}

/** A document's text: from its `---` marker (or the start of the stream) to the next marker. */
export interface DocumentText {
  readonly text: string;
  /** Offset of `text` in the stream (for line numbers in errors). */
  readonly offset: number;
}

const DIRECTIVE_OR_END = /^(?:%|\.\.\.(?:[ \t\r]|$))/m;

/**
 * Splits a YAML stream at its document markers (`---` at the start of a line, followed by a
 * space, a tab or the end of the line), so each document is parsed, validated and dropped on
 * its own instead of the whole stream being held as parsed trees at once. YAML forbids such a
 * line inside a document's content (c-forbidden, YAML 1.2 §9.1.4), so the split is exact.
 * Streams with directives (`%YAML`, `%TAG`) or `...` end markers return null: js-yaml reads
 * those whole.
 */
export function splitDocuments(text: string): DocumentText[] | null {
  if (DIRECTIVE_OR_END.test(text)) return null;
  const docs: DocumentText[] = [];
  let start = 0;
  for (let at = text.startsWith("---") ? 0 : text.indexOf("\n---"); at >= 0; at = text.indexOf("\n---", at + 1)) {
    const marker = text.charCodeAt(at) === 10 ? at + 1 : at;
    const next = text.charCodeAt(marker + 3);
    if (!(Number.isNaN(next) || next === 32 || next === 9 || next === 10 || next === 13)) continue; // `----`, `---x`: content
    if (marker > start) docs.push({ text: text.slice(start, marker), offset: start });
    start = marker;
  }
  if (start < text.length) docs.push({ text: text.slice(start), offset: start });
  return docs;
}

// Blank and comment lines only (a licence header before the first `---`, or every object of a
// file commented out): an empty document, as js-yaml's loadAll reads it. js-yaml's load()
// throws on such a document instead.
const NOTHING_BUT_COMMENTS = /^\uFEFF?(?:[ \t]*(?:#[^\r\n]*)?(?:\r?\n|\r))*[ \t]*(?:#[^\r\n]*)?$/;

/**
 * One document → its value (null for an empty one). A document that is a JSON object (what
 * `kubectl get -o json` and generators write) is read by JSON.parse, many times faster than
 * js-yaml and the same value (YAML 1.2 is a superset of JSON); anything else, or JSON that
 * does not parse, goes to js-yaml, which also reports the errors.
 */
function parseDocument(doc: DocumentText, file: string): unknown {
  const body = doc.text.startsWith("---") ? doc.text.slice(3) : doc.text;
  if (NOTHING_BUT_COMMENTS.test(body)) return null;
  const first = body.trimStart();
  if (first.startsWith("{")) {
    try {
      return JSON.parse(first);
    } catch {
      // YAML flow mapping, comments, or a real error: js-yaml decides
    }
  }
  return load(doc.text, { filename: file });
}

/** 1-based line of a js-yaml error in `doc`, counted from the start of the stream. */
function lineOf(text: string, doc: DocumentText | null, e: YAMLException): number | null {
  if (!e.mark) return null;
  if (!doc) return e.mark.line + 1; // js-yaml marks are 0-based; people count lines from 1
  let lines = 0;
  for (let i = text.indexOf("\n"); i >= 0 && i < doc.offset; i = text.indexOf("\n", i + 1)) lines++;
  return lines + e.mark.line + 1;
}

/** A document that does not parse, and which one (null: the stream was read whole). */
class DocumentError {
  constructor(
    readonly doc: DocumentText | null,
    readonly cause: unknown,
  ) {}
}

/** Every document's value, in order; throws DocumentError at the first that does not parse. */
function* documents(text: string, file: string): Generator<unknown> {
  const docs = splitDocuments(text);
  if (docs === null) {
    let all: unknown[];
    try {
      all = loadAll(text, { filename: file });
    } catch (e) {
      throw new DocumentError(null, e);
    }
    yield* all;
    return;
  }
  for (const d of docs) {
    let value: unknown;
    try {
      value = parseDocument(d, file);
    } catch (e) {
      throw new DocumentError(d, e);
    }
    yield value;
  }
}

/** A document's objects: `kind: List` (what `kubectl get -o yaml` prints) carries them in items. */
function itemsOf(doc: unknown): readonly unknown[] {
  return isRecord(doc) && doc.kind === "List" && Array.isArray(doc.items) ? doc.items : [doc];
}

/** Turns document values into validated objects, diagnostics and ignored kinds. */
class Collector {
  private readonly objects: LoadedObject[] = [];
  private readonly diagnostics: Diagnostic[] = [];
  private readonly ignoredKinds: string[] = [];

  constructor(private readonly file: string) {}

  add(doc: unknown): void {
    for (const item of itemsOf(doc)) this.one(item);
  }

  done(): FileParse {
    return { ok: true, objects: this.objects, diagnostics: this.diagnostics, ignoredKinds: this.ignoredKinds };
  }

  private one(doc: unknown): void {
    if (doc === null || doc === undefined) return; // empty document (`---` at the end)
    if (!isRecord(doc)) {
      this.diagnostics.push({ kind: "", namespace: "", name: "", reason: "InvalidObject", message: `${this.file}: a document is not a mapping` });
      return;
    }
    if (!isKind(doc.kind)) {
      this.ignoredKinds.push(typeof doc.kind === "string" ? doc.kind : "(no kind)");
      return;
    }
    const kind = doc.kind;
    const meta = isRecord(doc.metadata) ? doc.metadata : {};
    const where = {
      kind,
      namespace: KIND_API[kind].namespaced ? (typeof meta.namespace === "string" && meta.namespace !== "" ? meta.namespace : "default") : "",
      name: typeof meta.name === "string" ? meta.name : "",
    };
    if (typeof doc.apiVersion === "string" && !servedApiVersions(kind).includes(doc.apiVersion)) {
      this.diagnostics.push({ ...where, reason: "InvalidObject", message: `apiVersion ${doc.apiVersion} is not served; use ${expectedApiVersion(kind)}` });
      return;
    }
    let hash: string;
    try {
      hash = hashOf(JSON.stringify(doc));
    } catch {
      // YAML aliases can build a cycle (`a: &x {b: *x}`), which no Kubernetes object has.
      this.diagnostics.push({ ...where, reason: "InvalidObject", message: "the document refers to itself through a YAML alias" });
      return;
    }
    const parsed = parseObject(kind, normalise(kind, doc, hash));
    if (!parsed.ok) {
      this.diagnostics.push({ ...parsed.diagnostic, namespace: parsed.diagnostic.namespace || where.namespace });
      return;
    }
    this.objects.push({ kind, object: parsed.object, hash });
  }
}

function failure(text: string, e: unknown): Extract<FileParse, { ok: false }> {
  const error = e instanceof DocumentError ? e.cause : e;
  if (error instanceof YAMLException) return { ok: false, line: lineOf(text, e instanceof DocumentError ? e.doc : null, error), message: error.reason || error.message };
  return { ok: false, line: null, message: error instanceof Error ? error.message : String(error) };
}

export function parseManifestText(text: string, file: string): FileParse {
  const c = new Collector(file);
  try {
    for (const doc of documents(text, file)) c.add(doc);
  } catch (e) {
    return failure(text, e);
  }
  return c.done();
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * parseManifestText, giving the event loop a turn every `sliceMs` of work: the admin port keeps
 * answering while a large file loads, and the process does not stall for tens of milliseconds
 * after one long synchronous load (measured with 10k Ingresses: 50-110 ms before the first
 * /readyz answer after ready; about 2 ms with slices).
 */
export async function parseManifestTextSliced(text: string, file: string, sliceMs = 10): Promise<FileParse> {
  const c = new Collector(file);
  let since = performance.now();
  try {
    for (const doc of documents(text, file)) {
      c.add(doc);
      if (performance.now() - since >= sliceMs) {
        await nextTurn();
        since = performance.now();
      }
    }
  } catch (e) {
    return failure(text, e);
  }
  return c.done();
}

export type RawParse =
  | { readonly ok: true; readonly objects: readonly Record<string, unknown>[] }
  | { readonly ok: false; readonly line: number | null; readonly message: string };

/**
 * One file's objects as written, of every kind and not checked against one (List items
 * included; empty documents and ones that are not mappings left out), read by the same rules
 * as parseManifestText: for readers that need what the source leaves out or rewrites
 * (ingress-nginx's ConfigMap, the set `migrate --prove` serves again). The whole file or
 * nothing: a document that does not parse fails it.
 */
export function parseManifestObjects(text: string, file: string): RawParse {
  const objects: Record<string, unknown>[] = [];
  try {
    for (const doc of documents(text, file)) for (const item of itemsOf(doc)) if (isRecord(item)) objects.push(item);
  } catch (e) {
    return failure(text, e);
  }
  return { ok: true, objects };
}
