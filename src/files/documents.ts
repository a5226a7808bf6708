// One YAML file's text → validated objects of the five kinds, as a watch would deliver them.
// No I/O here: manifests.ts reads files and diffs; this turns text into objects + problems.
import { createHash } from "node:crypto";
import { YAMLException, loadAll } from "js-yaml";
import { KIND_API, isKind, objectKey, parseObject, type Kind, type KubeObject } from "../model/kinds.ts";
import type { Diagnostic } from "../model/diagnostic.ts";

/** Objects without a creationTimestamp sort first and tie, so conflicts fall back to namespace/name (§4). */
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

function isRecord(x: unknown): x is Record<string, unknown> {
  return typeof x === "object" && x !== null && !Array.isArray(x);
}

function expectedApiVersion(kind: Kind): string {
  const api = KIND_API[kind];
  return api.group ? `${api.group}/${api.version}` : api.version;
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
  return { ...doc, metadata: meta };
}

export function parseManifestText(text: string, file: string): FileParse {
  let docs: unknown[];
  try {
    docs = loadAll(text, { filename: file });
  } catch (e) {
    if (e instanceof YAMLException) {
      // js-yaml marks are 0-based; people count lines from 1.
      return { ok: false, line: e.mark ? e.mark.line + 1 : null, message: e.reason || e.message };
    }
    return { ok: false, line: null, message: e instanceof Error ? e.message : String(e) };
  }

  const flat: unknown[] = [];
  for (const doc of docs) {
    // `kind: List` (what `kubectl get -o yaml` prints) carries its objects in items.
    if (isRecord(doc) && doc.kind === "List" && Array.isArray(doc.items)) flat.push(...doc.items);
    else flat.push(doc);
  }

  const objects: LoadedObject[] = [];
  const diagnostics: Diagnostic[] = [];
  const ignoredKinds: string[] = [];
  for (const doc of flat) {
    if (doc === null || doc === undefined) continue; // empty document (`---` at the end)
    if (!isRecord(doc)) {
      diagnostics.push({ kind: "", namespace: "", name: "", reason: "InvalidObject", message: `${file}: a document is not a mapping` });
      continue;
    }
    if (!isKind(doc.kind)) {
      ignoredKinds.push(typeof doc.kind === "string" ? doc.kind : "(no kind)");
      continue;
    }
    const kind = doc.kind;
    const meta = isRecord(doc.metadata) ? doc.metadata : {};
    const where = {
      kind,
      namespace: KIND_API[kind].namespaced ? (typeof meta.namespace === "string" && meta.namespace !== "" ? meta.namespace : "default") : "",
      name: typeof meta.name === "string" ? meta.name : "",
    };
    if (typeof doc.apiVersion === "string" && doc.apiVersion !== expectedApiVersion(kind)) {
      diagnostics.push({ ...where, reason: "InvalidObject", message: `apiVersion ${doc.apiVersion} is not served; use ${expectedApiVersion(kind)}` });
      continue;
    }
    const hash = hashOf(JSON.stringify(doc));
    const parsed = parseObject(kind, normalise(kind, doc, hash));
    if (!parsed.ok) {
      diagnostics.push({ ...parsed.diagnostic, namespace: parsed.diagnostic.namespace || where.namespace });
      continue;
    }
    objects.push({ kind, object: parsed.object, hash });
  }
  return { ok: true, objects, diagnostics, ignoredKinds };
}
