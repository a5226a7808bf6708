// Loads the manifests under k8s/ for the packaging tests. Only the fields the tests read are
// typed; the rest of each object is left as unknown.
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { loadAll } from "js-yaml";

export const ROOT = resolve(import.meta.dir, "../..");
export const K8S_DIR = join(ROOT, "k8s");

export interface Meta {
  name: string;
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: Meta;
  [field: string]: unknown;
}
export interface Loaded {
  file: string; // relative to the repository root
  doc: Manifest;
}

export interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  verbs?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}
export interface Role extends Manifest {
  rules?: PolicyRule[];
}
export interface Binding extends Manifest {
  roleRef: { apiGroup: string; kind: string; name: string };
  subjects?: { kind: string; name: string; namespace?: string }[];
}

/** Every document of one YAML file; null documents (a trailing `---`) are dropped. */
export function loadFile(path: string): Manifest[] {
  const docs = loadAll(readFileSync(path, "utf8"));
  return docs.filter((d): d is Manifest => d !== null && d !== undefined).map((d) => {
    const m = d as Partial<Manifest>;
    if (typeof m.kind !== "string" || typeof m.apiVersion !== "string" || typeof m.metadata?.name !== "string") {
      throw new Error(`${path}: a document without apiVersion, kind or metadata.name`);
    }
    return d as Manifest;
  });
}

/** The *.yaml files directly in `dir` (sorted), not kustomization.yaml, not subfolders. */
export function resourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isFile() && /\.ya?ml$/.test(e.name) && !/^kustomization\.ya?ml$/.test(e.name))
    .map((e) => e.name)
    .sort();
}

export function loadDir(dir: string): Loaded[] {
  return resourceFiles(dir).flatMap((f) =>
    loadFile(join(dir, f)).map((doc) => ({ file: join(dir, f).slice(ROOT.length + 1), doc })),
  );
}

export function find<T extends Manifest = Manifest>(docs: readonly Loaded[], kind: string, name: string): T {
  const hits = docs.filter((l) => l.doc.kind === kind && l.doc.metadata.name === name);
  if (hits.length !== 1) throw new Error(`expected one ${kind} ${name}, found ${hits.length}`);
  return hits[0]!.doc as T;
}

export function ofKind<T extends Manifest = Manifest>(docs: readonly Loaded[], kind: string): T[] {
  return docs.filter((l) => l.doc.kind === kind).map((l) => l.doc as T);
}
