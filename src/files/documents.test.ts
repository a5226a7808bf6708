// One manifest text → objects, document by document: the split at `---` markers, the JSON
// fast path agreeing with js-yaml, and errors with the line counted from the file's start.
import { describe, expect, test } from "bun:test";
import { loadAll } from "js-yaml";
import { parseManifestText, parseManifestTextSliced, splitDocuments } from "./documents.ts";

const svc = (name: string) => ({ apiVersion: "v1", kind: "Service", metadata: { name, namespace: "d", labels: { app: name } }, spec: { ports: [{ name: "http", port: 80 }] } });

describe("splitDocuments", () => {
  test("splits at `---` lines only; keeps text before the first marker and inline content", () => {
    const text = "a: 1\n---\nb: 2\n----\nc: 3\n--- {\"d\": 4}\n---x: 5\n---\r\ne: 6\n---";
    const docs = splitDocuments(text)!;
    expect(docs.map((d) => d.text)).toEqual(["a: 1\n", "---\nb: 2\n----\nc: 3\n", '--- {"d": 4}\n---x: 5\n', "---\r\ne: 6\n", "---"]);
    expect(docs.map((d) => text.slice(d.offset, d.offset + d.text.length))).toEqual(docs.map((d) => d.text));
  });

  test("a stream starting with a marker has no empty first document", () => {
    expect(splitDocuments("---\na: 1\n")!.map((d) => d.text)).toEqual(["---\na: 1\n"]);
    expect(splitDocuments("")).toEqual([]);
  });

  test("directives and `...` end markers leave the stream to js-yaml whole", () => {
    expect(splitDocuments("%YAML 1.2\n---\na: 1\n")).toBeNull();
    expect(splitDocuments("a: 1\n...\n---\nb: 2\n")).toBeNull();
    expect(splitDocuments("a: 1\n....\n")).not.toBeNull(); // `....` is content
  });
});

describe("parseManifestText", () => {
  test("JSON documents, YAML documents and a List give the same objects js-yaml's whole-stream reading gives", () => {
    const text = [
      `---\n${JSON.stringify(svc("json-one"))}\n`,
      `--- ${JSON.stringify(svc("json-inline"))}\n`,
      "---\n# a comment makes this YAML\n{ apiVersion: v1, kind: Service, metadata: { name: flow, namespace: d }, spec: { ports: [{ port: 81 }] } }\n",
      "---\napiVersion: v1\nkind: Service\nmetadata:\n  name: block\n  namespace: d\nspec:\n  ports:\n    - port: 82\n",
      `---\n${JSON.stringify({ apiVersion: "v1", kind: "List", items: [svc("in-list-1"), svc("in-list-2")] }, null, 2)}\n`,
      "---\n",
    ].join("");
    const r = parseManifestText(text, "mixed.yaml");
    if (!r.ok) throw new Error(r.message);
    expect(r.diagnostics).toEqual([]);
    expect(r.objects.map((o) => o.object.metadata.name)).toEqual(["json-one", "json-inline", "flow", "block", "in-list-1", "in-list-2"]);
    // Same values as js-yaml reading the whole stream (then the same normalisation and validation).
    const whole = (loadAll(text) as { kind: string; items?: unknown[] }[]).flatMap((d) => (d?.kind === "List" ? d.items! : d ? [d] : []));
    const viaYaml = parseManifestText(whole.map((d) => `---\n# yaml\n${JSON.stringify(d)}\n`).join(""), "mixed.yaml");
    if (!viaYaml.ok) throw new Error(viaYaml.message);
    expect(r.objects).toEqual(viaYaml.objects);
  });

  test("documents of comments and blank lines only are empty, as js-yaml's loadAll reads them", () => {
    const svc = "apiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: default}\nspec: {ports: [{port: 80}]}\n";
    const cases: [string, number][] = [
      ["# Copyright 2026\n# SPDX-License-Identifier: Apache-2.0\n---\n" + svc, 1], // licence header before the first marker
      ["# every object commented out\n# kind: Ingress\n", 0],
      ["\uFEFF# with a byte order mark\n---\n" + svc, 1],
      ["---\n# only a comment\n---\n" + svc, 1],
      ["\r\n# CRLF\r\n---\r\n" + svc.replaceAll("\n", "\r\n"), 1],
      ["#c\n  # indented\n\n---\n" + svc + "---\n  \n# trailing\n", 1],
    ];
    for (const [text, n] of cases) {
      expect(loadAll(text).filter((d) => d != null).length).toBe(n); // what js-yaml says of the whole stream
      const r = parseManifestText(text, "f.yaml");
      expect(r.ok).toBe(true);
      if (r.ok) expect(r.objects.length).toBe(n);
    }
  });

  test("an error in a later document names the line in the file", () => {
    const text = `${JSON.stringify(svc("a"))}\n---\n${JSON.stringify(svc("b"))}\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: x\n spec: [\n`;
    const r = parseManifestText(text, "broken.yaml");
    expect(r.ok).toBe(false);
    if (r.ok) return;
    // js-yaml reading the whole stream reports the same line.
    let whole: number | null = null;
    try {
      loadAll(text);
    } catch (e) {
      whole = (e as { mark: { line: number } }).mark.line + 1;
    }
    expect(r.line).toBe(whole);
    expect(r.line).toBe(9);
  });

  test("JSON that does not parse falls to js-yaml, which reports it", () => {
    const r = parseManifestText(`---\n{"apiVersion": "v1", "kind": "Service",\n`, "cut.yaml");
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.line).toBeGreaterThanOrEqual(2);
  });

  test("a YAML alias cycle is an invalid object, not a crash", () => {
    const text = "apiVersion: v1\nkind: Service\nmetadata: { name: loop, namespace: d }\nspec: &s\n  self: *s\n---\n" + JSON.stringify(svc("fine")) + "\n";
    const r = parseManifestText(text, "cycle.yaml");
    if (!r.ok) throw new Error(r.message);
    expect(r.objects.map((o) => o.object.metadata.name)).toEqual(["fine"]);
    expect(r.diagnostics.map((d) => [d.name, d.reason])).toEqual([["loop", "InvalidObject"]]);
  });

  test("the sliced parse gives the same result and lets the event loop run between documents", async () => {
    const text = Array.from({ length: 50 }, (_, i) => `---\n${JSON.stringify(svc(`s${i}`))}\n`).join("") + "---\napiVersion: v1\nkind: Service\nmetadata: { name: yaml, namespace: d }\n";
    let turns = 0;
    let done = false;
    const spin = () => {
      if (done) return;
      turns++;
      setImmediate(spin);
    };
    setImmediate(spin);
    const sliced = await parseManifestTextSliced(text, "many.yaml", 0);
    done = true;
    expect(sliced).toEqual(parseManifestText(text, "many.yaml"));
    expect(sliced.ok && sliced.objects.length).toBe(51);
    expect(turns).toBeGreaterThanOrEqual(25); // one turn per document with a 0 ms slice
    const broken = "---\na: 1\n---\nb: [\n";
    expect(await parseManifestTextSliced(broken, "b.yaml", 0)).toEqual(parseManifestText(broken, "b.yaml"));
  });
});
