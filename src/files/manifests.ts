// The --manifests source: YAML files (one file, or every *.yaml/*.yml in a folder) feed the
// store exactly like a watch would, so the whole pipeline runs without a cluster.
import { createHash } from "node:crypto";
import { watch, type FSWatcher } from "node:fs";
import { readFile, readdir, stat } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { KINDS, objectKey, type Kind, type KindObjects, type KubeObject } from "../model/kinds.ts";
import type { Diagnostic } from "../model/diagnostic.ts";
import type { Logger } from "../log/logger.ts";
import type { DiagnosticsReport, Source, SourceSink } from "../store/types.ts";
import { parseManifestObjects, parseManifestTextSliced, type LoadedObject } from "./documents.ts";

export interface ManifestSourceOptions {
  path: string;
  log: Logger;
  /** Quiet time after the last file event before re-reading (editors write in several steps). */
  debounceMs?: number;
  /** How often to check that the watched file/folder is still the one being watched. */
  recheckMs?: number;
  /** The diagnostics of each file (owner `file:PATH`): its parse error, or its invalid objects. */
  onDiagnostics?: DiagnosticsReport;
  /** After each re-read of the files (--nginx-configmap reads its ConfigMap from them again). */
  onReloaded?: () => void;
}

interface FileState {
  /** Digest of the text last parsed successfully (an unchanged file is not parsed again; the text itself is not kept). */
  readonly digest: string;
  readonly objects: readonly LoadedObject[];
  /** Its invalid objects (they stay reported while the file keeps failing to parse). */
  readonly diagnostics: readonly Diagnostic[];
}

/** Owner of a file's diagnostics (DiagnosticsReport). */
export const fileOwner = (file: string): string => `file:${file}`;

const YAML_FILE = /\.ya?ml$/i;
const folderId = (s: { ino: number; birthtimeMs: number }): string => `${s.ino}/${s.birthtimeMs}`;
const mapKey = (kind: Kind, o: KubeObject): string => `${kind}\u0000${objectKey(o.metadata)}`;

/**
 * The files --manifests names: the file itself, or a folder's *.yaml/*.yml files in name order.
 * Dotfiles are left out: editor swap and lock files, and a ConfigMap volume's `..data`
 * internals. Throws when the path cannot be read.
 */
export async function manifestFiles(path: string, isDir?: boolean): Promise<string[]> {
  if (!(isDir ?? (await stat(path)).isDirectory())) return [path];
  return (await readdir(path)).filter((n) => YAML_FILE.test(n) && !n.startsWith(".")).sort().map((n) => join(path, n));
}

/** One file's objects as written (parseManifestObjects), or why it could not be read. */
export type ManifestFileObjects =
  | { readonly file: string; readonly ok: true; readonly objects: readonly Record<string, unknown>[] }
  | { readonly file: string; readonly ok: false; readonly message: string };

/**
 * The objects of the --manifests files as written, one file at a time, for the readers beside
 * the source (ingress-nginx's ConfigMap, `migrate --prove`): the same files and the same
 * document rules as the source reads, so none of them sees a file the others skip. A file that
 * cannot be read or does not parse is yielded as such; the caller decides what that means.
 */
export async function* manifestObjects(path: string): AsyncGenerator<ManifestFileObjects> {
  for (const file of await manifestFiles(path)) {
    let text: string;
    try {
      text = await readFile(file, "utf8");
    } catch (err) {
      yield { file, ok: false, message: (err as Error).message };
      continue;
    }
    const parsed = parseManifestObjects(text, file);
    yield parsed.ok ? { file, ok: true, objects: parsed.objects } : { file, ok: false, message: `line ${parsed.line ?? "?"}: ${parsed.message}` };
  }
}

export class ManifestSource implements Source {
  private readonly log: Logger;
  private readonly debounceMs: number;
  private readonly recheckMs: number;
  private sink: SourceSink | null = null;
  private isDir = false;
  private files = new Map<string, FileState>();
  /** Files whose last text did not parse, with that text's digest (the same text is not parsed and logged again). */
  private broken = new Map<string, string>();
  /** Files with diagnostics reported and not cleared yet. */
  private reported = new Set<string>();
  /** What the sink has now, keyed by kind + namespace/name. */
  private current = new Map<string, LoadedObject>();
  private watcher: FSWatcher | null = null;
  /**
   * The watched folder's identity: inode and birth time. A folder removed and made again at
   * once can get its old inode back (seen on ext4), so the inode alone would keep a watcher on
   * the folder that is gone.
   */
  private watchedId: string | null = null;
  private debounce: ReturnType<typeof setTimeout> | null = null;
  private recheck: ReturnType<typeof setInterval> | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;

  constructor(private readonly opts: ManifestSourceOptions) {
    this.log = opts.log.child({ source: "manifests" });
    this.debounceMs = opts.debounceMs ?? 100;
    this.recheckMs = opts.recheckMs ?? 2000;
  }

  async start(sink: SourceSink): Promise<void> {
    this.sink = sink;
    // A missing path at start is a configuration error, not a transient state: fail loudly.
    try {
      this.isDir = (await stat(this.opts.path)).isDirectory();
    } catch (err) {
      throw new Error(`--manifests ${this.opts.path}: ${(err as NodeJS.ErrnoException).code === "ENOENT" ? "no such file or folder" : String(err)}`);
    }
    await this.readAll(false);
    const byKind = new Map<Kind, KubeObject[]>(KINDS.map((k) => [k, []]));
    for (const { kind, object } of this.current.values()) byKind.get(kind)!.push(object);
    for (const kind of KINDS) sink.replace(kind, byKind.get(kind)! as KindObjects[typeof kind][]);
    for (const kind of KINDS) sink.synced(kind);
    this.log.info("manifests loaded", { path: this.opts.path, objects: this.current.size, files: this.files.size });
    this.ensureWatcher();
    this.recheck = setInterval(() => this.checkWatchTarget(), this.recheckMs);
    (this.recheck as { unref?: () => void }).unref?.();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.debounce) clearTimeout(this.debounce);
    if (this.recheck) clearInterval(this.recheck);
    this.debounce = this.recheck = null;
    this.closeWatcher();
    await this.running;
  }

  /** The file watched: the folder itself, or the parent of a single file (editors replace files by rename). */
  private get watchTarget(): string {
    return this.isDir ? this.opts.path : dirname(this.opts.path);
  }

  private ensureWatcher(): void {
    if (this.stopped || this.watcher) return;
    try {
      const w = watch(this.watchTarget, (_event, filename) => {
        if (!this.isDir && filename && !this.relevantToFile(String(filename))) return;
        this.schedule();
      });
      w.on("error", (err) => {
        this.log.warn("manifests watcher failed; retrying", { path: this.watchTarget, err });
        this.closeWatcher();
      });
      this.watcher = w;
      stat(this.watchTarget).then(
        (s) => (this.watchedId = folderId(s)),
        () => (this.watchedId = null),
      );
    } catch (err) {
      this.log.warn("cannot watch manifests yet; retrying", { path: this.watchTarget, err });
    }
  }

  /** In single-file mode the parent folder is watched: react to our file and to ConfigMap `..data` swaps. */
  private relevantToFile(filename: string): boolean {
    return filename === basename(this.opts.path) || filename.startsWith("..");
  }

  private closeWatcher(): void {
    this.watcher?.close();
    this.watcher = null;
    this.watchedId = null;
  }

  /** Re-establish the watcher when the watched folder was removed or replaced (rename, remount). */
  private checkWatchTarget(): void {
    if (this.stopped) return;
    stat(this.watchTarget).then(
      (s) => {
        if (this.watcher && this.watchedId !== null && folderId(s) === this.watchedId) return;
        this.closeWatcher();
        this.ensureWatcher();
        this.schedule();
      },
      () => this.closeWatcher(), // missing for now: keep serving, look again next time
    );
  }

  private schedule(): void {
    if (this.stopped) return;
    if (this.debounce) clearTimeout(this.debounce);
    this.debounce = setTimeout(() => {
      this.debounce = null;
      this.reload();
    }, this.debounceMs);
  }

  /** Reloads never overlap: an event during one asks for one more pass. */
  private reload(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = (async () => {
      try {
        do {
          this.again = false;
          await this.readAll(true);
          this.opts.onReloaded?.();
        } while (this.again && !this.stopped);
      } catch (err) {
        this.log.error("manifests reload failed", { path: this.opts.path, err });
      } finally {
        this.running = null;
      }
    })();
  }

  private async listFiles(): Promise<string[] | null> {
    try {
      const s = await stat(this.opts.path);
      this.isDir = s.isDirectory();
      return await manifestFiles(this.opts.path, this.isDir);
    } catch {
      return null;
    }
  }

  /** Re-read every file, then emit the difference when `emit` (start() hands over with replace instead). */
  private async readAll(emit: boolean): Promise<void> {
    const list = await this.listFiles();
    if (list === null) {
      this.log.warn("manifests path is missing; keeping the objects loaded before", { path: this.opts.path });
      return;
    }
    const next = new Map<string, FileState>();
    for (const file of list) {
      const state = await this.readFileState(file);
      if (state) next.set(file, state);
    }
    if (this.stopped) return;
    // A file that is gone takes its diagnostics, parse error included, with it.
    const listed = new Set(list);
    for (const file of [...this.reported]) {
      if (listed.has(file)) continue;
      if (this.broken.delete(file)) this.log.info("manifest file that did not parse is gone; its error is cleared", { path: file });
      this.report(file, []);
    }
    this.files = next;
    this.publish(emit);
  }

  private report(file: string, diagnostics: readonly Diagnostic[]): void {
    if (diagnostics.length === 0 && !this.reported.has(file)) return;
    if (diagnostics.length === 0) this.reported.delete(file);
    else this.reported.add(file);
    this.opts.onDiagnostics?.(fileOwner(file), diagnostics);
  }

  /** The new state of one file; its previous state when it cannot be parsed; null when it is gone. */
  private async readFileState(file: string): Promise<FileState | null> {
    const previous = this.files.get(file);
    let text: string;
    try {
      text = await readFile(file, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
      this.log.warn("cannot read manifest file; keeping its objects", { path: file, err });
      return previous ?? null;
    }
    const digest = createHash("sha256").update(text).digest("base64");
    if (previous && previous.digest === digest) {
      // Back to the text that last parsed (an edit undone): the parse error goes.
      if (this.broken.delete(file)) {
        this.log.info("manifest file parses again", { path: file, objects: previous.objects.length });
        this.report(file, previous.diagnostics);
      }
      return previous;
    }
    if (this.broken.get(file) === digest) return previous ?? null; // the same broken text: already said
    const parsed = await parseManifestTextSliced(text, file);
    if (!parsed.ok) {
      // A half-saved file must not take its routes down: the last good objects keep serving.
      this.broken.set(file, digest);
      this.log.warn("manifest file does not parse; keeping its previous objects", { path: file, line: parsed.line, err: parsed.message });
      const error: Diagnostic = { kind: "ManifestFile", namespace: "", name: file, reason: "InvalidObject", message: `line ${parsed.line ?? "?"}: ${parsed.message}` };
      this.report(file, [error, ...(previous?.diagnostics ?? [])]);
      return previous ?? null;
    }
    if (this.broken.delete(file)) this.log.info("manifest file parses again", { path: file, objects: parsed.objects.length });
    for (const kind of new Set(parsed.ignoredKinds)) this.log.debug("ignoring a kind Portico does not watch", { path: file, kind });
    for (const d of parsed.diagnostics) {
      this.log.warn("invalid object in manifest file; skipped", { path: file, kind: d.kind, namespace: d.namespace, name: d.name, reason: d.reason, err: d.message });
    }
    this.report(file, parsed.diagnostics);
    return { digest, objects: parsed.objects, diagnostics: parsed.diagnostics };
  }

  private publish(emit: boolean): void {
    const merged = new Map<string, LoadedObject>();
    for (const [file, state] of this.files) {
      for (const o of state.objects) {
        const key = mapKey(o.kind, o.object);
        if (merged.has(key)) {
          this.log.warn("duplicate object in manifests; the first one (by file name) wins", { path: file, kind: o.kind, namespace: o.object.metadata.namespace, name: o.object.metadata.name });
          continue;
        }
        merged.set(key, o);
      }
    }
    const previous = this.current;
    this.current = merged;
    const sink = this.sink;
    if (!emit || !sink) return;
    // Unchanged objects (equal content hash) produce no event.
    for (const [key, old] of previous) {
      if (!merged.has(key)) sink.apply({ type: "DELETED", kind: old.kind, object: old.object });
    }
    for (const [key, o] of merged) {
      const old = previous.get(key);
      if (!old) sink.apply({ type: "ADDED", kind: o.kind, object: o.object });
      else if (old.hash !== o.hash) sink.apply({ type: "MODIFIED", kind: o.kind, object: o.object });
    }
  }
}
