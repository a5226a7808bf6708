import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdir, mkdtemp, rename, rm, unlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ManifestSource, manifestObjects } from "../../src/files/manifests.ts";
import { createLogger } from "../../src/log/logger.ts";
import type { Kind, KubeObject } from "../../src/model/kinds.ts";
import type { Diagnostic } from "../../src/model/diagnostic.ts";
import type { SourceSink, StoreEvent } from "../../src/store/types.ts";
import { eventually } from "../wait.ts";

class RecordingSink implements SourceSink {
  events: StoreEvent[] = [];
  replaced = new Map<Kind, readonly KubeObject[]>();
  syncedKinds: Kind[] = [];
  apply(event: StoreEvent): void {
    this.events.push(event);
  }
  replace(kind: Kind, objects: readonly KubeObject[]): void {
    this.replaced.set(kind, objects);
  }
  synced(kind: Kind): void {
    this.syncedKinds.push(kind);
  }
  summary(): string[] {
    return this.events.map((e) => `${e.type} ${e.kind} ${e.object.metadata.namespace ?? ""}/${e.object.metadata.name}`);
  }
}

const ingress = (name: string, svc = "web", ns?: string) => `
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: ${name}${ns ? `\n  namespace: ${ns}` : ""}
spec:
  rules:
    - host: ${name}.test
      http:
        paths:
          - path: /
            pathType: Prefix
            backend: { service: { name: ${svc}, port: { number: 80 } } }
`;
const service = (name: string, port = 80) => `
apiVersion: v1
kind: Service
metadata: { name: ${name} }
spec: { ports: [{ name: http, port: ${port} }] }
`;

/** Full re-reads of the files finished so far (ManifestSource's onReloaded). */
let reloads = 0;

/**
 * A sequence point for "nothing more happened": one more reload, begun after everything so
 * far. A reload re-reads and re-diffs every file (ManifestSource.readAll), so an event the
 * earlier change should not have caused, a repeated log line, would show up by its end. The
 * poke is not YAML: the folder's watcher reloads for it, and no file's objects change.
 */
async function reloadAgain(): Promise<void> {
  const before = reloads;
  await writeFile(join(dir, "poke.txt"), String(before));
  await eventually(() => reloads > before, 3_000, "another reload");
}

let dir: string;
let source: ManifestSource | null;
let logs: Record<string, unknown>[];
/** Every diagnostic reported, in order. */
let diagnostics: Diagnostic[];
/** The sources' current diagnostics by owner (each report replaces its owner's set). */
let current: Map<string, readonly Diagnostic[]>;
const currentList = () => [...current.values()].flat();

function makeSource(path: string): ManifestSource {
  source = new ManifestSource({
    path,
    debounceMs: 20,
    recheckMs: 100,
    onReloaded: () => void reloads++,
    log: createLogger({ level: "debug", format: "json", write: (l) => logs.push(JSON.parse(l)) }),
    onDiagnostics: (owner, ds) => {
      if (ds.length === 0) current.delete(owner);
      else current.set(owner, ds);
      diagnostics.push(...ds);
    },
  });
  return source;
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "portico-manifests-"));
  logs = [];
  diagnostics = [];
  current = new Map();
  source = null;
  reloads = 0;
});

afterEach(async () => {
  await source?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe("initial load", () => {
  test("replaces every kind, marks each synced, synthesises metadata", async () => {
    await writeFile(join(dir, "a.yaml"), `${ingress("shop")}---\n${service("web")}---\n`);
    await writeFile(
      join(dir, "b.yml"),
      `apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: { name: portico, namespace: ignored }
spec: { controller: portico.dev/ingress-controller }
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: web-1, labels: { kubernetes.io/service-name: web } }
addressType: IPv4
endpoints: [{ addresses: [10.0.0.1] }]
ports: [{ name: http, port: 8080 }]
---
apiVersion: v1
kind: Secret
metadata: { name: cert, creationTimestamp: "2025-05-05T00:00:00Z" }
stringData: { tls.crt: x, tls.key: y }
`,
    );
    await writeFile(join(dir, "notes.txt"), "kind: Service\nnot yaml: [");
    const sink = new RecordingSink();
    await makeSource(dir).start(sink);
    expect([...sink.replaced.keys()].sort()).toEqual(["ConfigMap", "EndpointSlice", "GRPCRoute", "Gateway", "GatewayClass", "HTTPRoute", "Ingress", "IngressClass", "IngressNginxPolicy", "Namespace", "ReferenceGrant", "Secret", "Service"]);
    expect(sink.syncedKinds.sort()).toEqual(["ConfigMap", "EndpointSlice", "GRPCRoute", "Gateway", "GatewayClass", "HTTPRoute", "Ingress", "IngressClass", "IngressNginxPolicy", "Namespace", "ReferenceGrant", "Secret", "Service"]);
    expect(sink.events).toEqual([]);
    const ing = sink.replaced.get("Ingress")![0]!;
    expect(ing.metadata.namespace).toBe("default");
    expect(ing.metadata.creationTimestamp).toBe("1970-01-01T00:00:00Z");
    expect(ing.metadata.uid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(ing.metadata.resourceVersion).toMatch(/^[0-9a-f]{16}$/);
    expect(sink.replaced.get("IngressClass")![0]!.metadata.namespace).toBeUndefined();
    expect(sink.replaced.get("Secret")![0]!.metadata.creationTimestamp).toBe("2025-05-05T00:00:00Z");
    expect(sink.replaced.get("EndpointSlice")).toHaveLength(1);
    expect(diagnostics).toEqual([]);
  });

  test("List kind is expanded; unknown kinds are ignored with a debug line", async () => {
    await writeFile(
      join(dir, "list.yaml"),
      `apiVersion: v1
kind: List
items:
  - { apiVersion: v1, kind: Service, metadata: { name: a }, spec: { ports: [{ port: 80 }] } }
  - { apiVersion: v1, kind: Service, metadata: { name: b, namespace: prod }, spec: { ports: [{ port: 81 }] } }
  - { apiVersion: v1, kind: ConfigMap, metadata: { name: c }, data: { x: y } }
  - { apiVersion: v1, kind: Pod, metadata: { name: p } }
`,
    );
    const sink = new RecordingSink();
    await makeSource(dir).start(sink);
    expect(sink.replaced.get("Service")!.map((s) => `${s.metadata.namespace}/${s.metadata.name}`)).toEqual(["default/a", "prod/b"]);
    // ConfigMaps are read (auth-proxy-set-headers may name one).
    expect(sink.replaced.get("ConfigMap")!.map((s) => `${s.metadata.namespace}/${s.metadata.name}`)).toEqual(["default/c"]);
    expect(diagnostics).toEqual([]);
    expect(logs.some((l) => l.level === "debug" && l.kind === "Pod")).toBe(true);
  });

  test("an invalid object becomes a diagnostic and a warn line; the rest loads", async () => {
    await writeFile(
      join(dir, "bad.yaml"),
      `${ingress("good")}---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: { name: broken, namespace: team }
spec:
  rules: [{ http: { paths: [{ path: /, pathType: Sometimes, backend: { service: { name: x } } }] } }]
---
apiVersion: extensions/v1beta1
kind: Ingress
metadata: { name: ancient }
spec: {}
`,
    );
    const sink = new RecordingSink();
    await makeSource(dir).start(sink);
    expect(sink.replaced.get("Ingress")!.map((i) => i.metadata.name)).toEqual(["good"]);
    expect(diagnostics.map((d) => [d.kind, d.namespace, d.name, d.reason])).toEqual([
      ["Ingress", "team", "broken", "InvalidObject"],
      ["Ingress", "default", "ancient", "InvalidObject"],
    ]);
    expect(diagnostics[0]!.message).toContain("pathType");
    expect(diagnostics[1]!.message).toContain("networking.k8s.io/v1");
    const warn = logs.find((l) => l.level === "warn" && l.name === "broken");
    expect(warn).toMatchObject({ kind: "Ingress", namespace: "team", path: join(dir, "bad.yaml") });
  });

  test("a missing path fails start", async () => {
    await expect(makeSource(join(dir, "nope")).start(new RecordingSink())).rejects.toThrow("no such file or folder");
  });
});

describe("watching a folder", () => {
  test("edit → MODIFIED only for what changed; delete a doc → DELETED; new file → ADDED", async () => {
    const file = join(dir, "app.yaml");
    await writeFile(file, `${ingress("shop")}---\n${service("web")}`);
    const sink = new RecordingSink();
    await makeSource(dir).start(sink);

    await writeFile(file, `${ingress("shop")}---\n${service("web", 8080)}`);
    await eventually(() => sink.events.length >= 1, 3_000, "MODIFIED");
    await reloadAgain();
    expect(sink.summary()).toEqual(["MODIFIED Service default/web"]);
    const svc = sink.events[0]!.object as { spec?: { ports?: { port: number }[] | null } };
    expect(svc.spec?.ports?.[0]?.port).toBe(8080);

    sink.events = [];
    await writeFile(file, ingress("shop"));
    await eventually(() => sink.events.length >= 1, 3_000, "DELETED");
    await reloadAgain();
    expect(sink.summary()).toEqual(["DELETED Service default/web"]);

    sink.events = [];
    await writeFile(join(dir, "more.yml"), service("api"));
    await eventually(() => sink.events.length >= 1, 3_000, "ADDED");
    expect(sink.summary()).toEqual(["ADDED Service default/api"]);

    sink.events = [];
    await unlink(join(dir, "more.yml"));
    await eventually(() => sink.events.length >= 1, 3_000, "DELETED after unlink");
    expect(sink.summary()).toEqual(["DELETED Service default/api"]);
  });

  test("broken YAML: line reported, old objects keep serving, other files unaffected", async () => {
    const a = join(dir, "a.yaml");
    await writeFile(a, ingress("shop"));
    await writeFile(join(dir, "b.yaml"), service("web"));
    const sink = new RecordingSink();
    await makeSource(dir).start(sink);

    await writeFile(a, "apiVersion: v1\nkind: Service\nmetadata:\n  name: x\n spec: [\n");
    await writeFile(join(dir, "b.yaml"), service("web", 9090));
    await eventually(() => logs.some((l) => l.level === "warn" && l.line !== undefined), 3_000, "parse warning");
    await eventually(() => sink.events.length >= 1, 3_000, "b.yaml change");
    await reloadAgain();
    expect(sink.summary()).toEqual(["MODIFIED Service default/web"]);
    const warn = logs.find((l) => l.level === "warn" && l.line !== undefined)!;
    expect(warn.path).toBe(a);
    expect(warn.line).toBe(5);
    expect(diagnostics.some((d) => d.name === a && d.message.startsWith("line 5:"))).toBe(true);

    // Fixing the file resumes normal diffs against the objects it served before it broke.
    sink.events = [];
    await writeFile(a, ingress("shop", "api"));
    await eventually(() => sink.events.length >= 1, 3_000, "MODIFIED after fix");
    expect(sink.summary()).toEqual(["MODIFIED Ingress default/shop"]);
  });

  test("a file's diagnostics go with their cause: fixed, broken again, deleted", async () => {
    const a = join(dir, "a.yaml");
    await writeFile(a, ingress("shop"));
    const sink = new RecordingSink();
    await makeSource(dir).start(sink);
    expect(currentList()).toEqual([]);

    await writeFile(a, "kind: Service\nmetadata: [\n");
    await eventually(() => currentList().length === 1, 3_000, "parse error reported");
    expect(currentList()[0]).toMatchObject({ kind: "ManifestFile", name: a, reason: "InvalidObject" });

    // Fixed: the error goes and the log says the file parses again.
    await writeFile(a, ingress("shop", "api"));
    await eventually(() => currentList().length === 0, 3_000, "parse error cleared");
    await eventually(() => logs.some((l) => l.msg === "manifest file parses again" && l.path === a), 3_000, "parses-again line");

    // Broken again, then deleted: the error goes with the file (no compile needed for that).
    await writeFile(a, "kind: Service\nmetadata: [\n");
    await eventually(() => currentList().length === 1, 3_000, "parse error reported again");
    await unlink(a);
    await eventually(() => currentList().length === 0, 3_000, "cleared after delete");
    expect(logs.some((l) => l.msg === "manifest file that did not parse is gone; its error is cleared" && l.path === a)).toBe(true);
  });

  test("an invalid object's diagnostic goes when it is fixed or removed from its file; a broken file keeps it", async () => {
    const a = join(dir, "a.yaml");
    const broken = `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: { name: broken }
spec: { rules: [{ http: { paths: [{ path: /, pathType: Sometimes, backend: { service: { name: x } } }] } }] }
`;
    await writeFile(a, `${ingress("shop")}---\n${broken}`);
    const sink = new RecordingSink();
    await makeSource(dir).start(sink);
    expect(currentList().map((d) => d.name)).toEqual(["broken"]);
    // While the file does not parse, its invalid object is still what it holds: both are reported.
    await writeFile(a, "kind: [\n");
    await eventually(() => currentList().length === 2, 3_000, "parse error next to the invalid object");
    // Fixed without the invalid object: nothing left.
    await writeFile(a, ingress("shop"));
    await eventually(() => currentList().length === 0, 3_000, "invalid object cleared");
  });

  test("the same broken text is parsed and logged once", async () => {
    const a = join(dir, "a.yaml");
    await writeFile(a, ingress("shop"));
    const sink = new RecordingSink();
    await makeSource(dir).start(sink);
    await writeFile(a, "kind: [\n");
    await eventually(() => logs.some((l) => l.msg === "manifest file does not parse; keeping its previous objects"), 3_000, "parse warning");
    await writeFile(join(dir, "b.yaml"), service("web")); // another reload; a.yaml unchanged
    await eventually(() => sink.events.length >= 1, 3_000, "b.yaml added");
    await reloadAgain();
    expect(logs.filter((l) => l.msg === "manifest file does not parse; keeping its previous objects")).toHaveLength(1);
  });

  test("atomic replace by rename is picked up", async () => {
    const file = join(dir, "app.yaml");
    await writeFile(file, service("web"));
    const sink = new RecordingSink();
    await makeSource(dir).start(sink);
    const tmp = join(dir, ".app.yaml.tmp");
    await writeFile(tmp, service("web", 7070));
    await rename(tmp, file);
    await eventually(() => sink.events.length >= 1, 3_000, "MODIFIED after rename");
    expect(sink.summary()).toEqual(["MODIFIED Service default/web"]);
  });

  test("the folder removed and recreated: objects kept while missing, watching resumes", async () => {
    const folder = join(dir, "m");
    await mkdir(folder);
    await writeFile(join(folder, "app.yaml"), service("web"));
    const sink = new RecordingSink();
    await makeSource(folder).start(sink);
    await rm(folder, { recursive: true });
    // The reload that found the folder missing says so, and emits nothing.
    await eventually(() => logs.some((l) => l.level === "warn" && String(l.msg).includes("missing")), 3_000, "the folder reported missing");
    expect(sink.events).toEqual([]);
    // Recreated at once: the new folder can take the removed one's inode number (ext4 reuses it
    // at once), so the recheck tells them apart by birth time too. Recreated in one step (as a ConfigMap volume swaps), so no reload sees it empty.
    await mkdir(`${folder}.new`);
    await writeFile(join(`${folder}.new`, "app.yaml"), service("web", 81));
    await rename(`${folder}.new`, folder);
    await eventually(() => sink.events.length >= 1, 3_000, "MODIFIED after the folder came back");
    expect(sink.summary()).toEqual(["MODIFIED Service default/web"]);
    // The new folder is watched, not only polled once.
    sink.events = [];
    await writeFile(join(folder, "app.yaml"), service("web", 82));
    await eventually(() => sink.events.length >= 1, 3_000, "MODIFIED in the new folder");
    expect(sink.summary()).toEqual(["MODIFIED Service default/web"]);
  });

  test("stop() ends watching", async () => {
    const file = join(dir, "app.yaml");
    await writeFile(file, service("web"));
    const sink = new RecordingSink();
    const s = makeSource(dir);
    await s.start(sink);
    await s.stop();
    await writeFile(file, service("web", 81));
    // A stopped source has no reload to wait for, and another source's reload would not be
    // ordered after this one's: showing that nothing happened takes a wait, here seven
    // debounce periods (20 ms) and a recheck (100 ms).
    await Bun.sleep(150);
    expect(sink.events).toEqual([]);
    expect(reloads).toBe(0);
  });
});

describe("watching a single file", () => {
  test("edits, editor-style rename, and a brief absence", async () => {
    const file = join(dir, "routes.yaml");
    await writeFile(file, service("web"));
    await writeFile(join(dir, "other.yaml"), service("not-watched"));
    const sink = new RecordingSink();
    await makeSource(file).start(sink);
    expect(sink.replaced.get("Service")!.map((s) => s.metadata.name)).toEqual(["web"]);

    await writeFile(file, service("web", 81));
    await eventually(() => sink.events.length >= 1, 3_000, "MODIFIED");
    expect(sink.summary()).toEqual(["MODIFIED Service default/web"]);

    sink.events = [];
    await writeFile(join(dir, "routes.yaml.new"), service("web", 82));
    await rename(join(dir, "routes.yaml.new"), file);
    await eventually(() => sink.events.length >= 1, 3_000, "MODIFIED after rename");
    expect(sink.summary()).toEqual(["MODIFIED Service default/web"]);

    // The file disappears for a while: its objects keep serving until it comes back.
    sink.events = [];
    await unlink(file);
    // The reload that found it missing says so, and emits nothing.
    await eventually(() => logs.some((l) => l.level === "warn" && String(l.msg).includes("missing")), 3_000, "the file reported missing");
    expect(sink.events).toEqual([]);
    await writeFile(file, `${service("web", 82)}---\n${service("api")}`);
    await eventually(() => sink.events.length >= 1, 3_000, "ADDED after return");
    expect(sink.summary()).toEqual(["ADDED Service default/api"]);
  });
});

describe("manifestObjects: the readers beside the source read the source's files by its rules", () => {
  let root: string;
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), "portico-objects-"));
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  test("every object as written, List items included, in file-name order; dotfiles and other names left out; a broken file says where", async () => {
    await writeFile(join(root, "b.yaml"), "kind: ConfigMap\nmetadata: {name: cm}\ndata: {a: b}\n---\n{\"kind\": \"List\", \"items\": [{\"kind\": \"Service\", \"metadata\": {\"name\": \"s\"}}, 7]}\n---\n# nothing\n");
    await writeFile(join(root, "a.yml"), "kind: Widget\nmetadata: {name: w}\n");
    await writeFile(join(root, "c.yaml"), "kind: Service\n---\nkind: [\n");
    // An editor's copy and a ConfigMap volume's internals: the source never reads them.
    await writeFile(join(root, ".b.yaml"), "kind: [\n");
    await mkdir(join(root, "..data"));
    await writeFile(join(root, "notes.txt"), "kind: Service\n");
    const seen: unknown[] = [];
    for await (const f of manifestObjects(root)) seen.push(f.ok ? { file: f.file, kinds: f.objects.map((o) => o.kind) } : { file: f.file, message: f.message });
    expect(seen).toEqual([
      { file: join(root, "a.yml"), kinds: ["Widget"] },
      { file: join(root, "b.yaml"), kinds: ["ConfigMap", "Service"] },
      // js-yaml reports the unclosed flow sequence where the text ends.
      { file: join(root, "c.yaml"), message: "line 4: deficient indentation" },
    ]);
  });

  test("a single file is read whatever its name", async () => {
    const file = join(root, ".hidden.yaml");
    await writeFile(file, "kind: Ingress\nmetadata: {name: x}\n");
    const seen: unknown[] = [];
    for await (const f of manifestObjects(file)) seen.push(f.ok ? f.objects.map((o) => o.kind) : f.message);
    expect(seen).toEqual([["Ingress"]]);
  });
});
