// The README's annotation tables and the annotation part of `portico --help`, generated from
// the registry so neither can drift from the code (scripts/annotations-table.ts writes the
// README; test/packaging/docs.test.ts fails when it is out of date).
import { IMPLEMENTED } from "./registry.ts";
import { NOT_IMPLEMENTED } from "./not-implemented.ts";
import { displayName, namesOf, type AnnotationSpec, type Compat, type FamilyName } from "./spec.ts";

const cell = (s: string): string => s.replace(/\|/g, "\\|").replace(/\n/g, " ");
const code = (s: string): string => `\`${s}\``;

function compatText(c: Compat): string {
  switch (c.kind) {
    case "same":
      return "same as ingress-nginx";
    case "differs":
      return c.difference;
    case "portico-only":
      return "Portico only";
    case "not-implemented":
      return c.note === undefined ? "not implemented" : `not implemented. ${c.note}`;
  }
}

/** The table of implemented annotations (Markdown, no trailing newline). */
export function implementedTable(): string {
  const rows = IMPLEMENTED.map((a) => {
    const nginx = a.nginx.map(code).join(", ");
    return `| ${code(displayName(a))} | ${nginx} | ${a.default === null ? "" : code(a.default)} | ${cell(a.description)} | ${cell(compatText(a.compat))} |`;
  });
  return ["| annotation | ingress-nginx name | default | values | compared with ingress-nginx |", "|---|---|---|---|---|", ...rows].join("\n");
}

/** ingress-nginx annotations not implemented, one row per family (Markdown, no trailing newline). */
export function notImplementedTable(): string {
  const byFamily = new Map<FamilyName, AnnotationSpec[]>();
  for (const a of NOT_IMPLEMENTED) {
    const list = byFamily.get(a.family) ?? [];
    list.push(a);
    byFamily.set(a.family, list);
  }
  const rows = [...byFamily].map(([family, list]) => {
    const names = list.map((a) => code(a.nginx.map((n) => n.slice(n.indexOf("/") + 1)).join(" / "))).join(", ");
    const notes = [...new Set(list.flatMap((a) => (a.compat.kind === "not-implemented" && a.compat.note ? [a.compat.note] : [])))];
    return `| ${family} | ${names} | ${cell(notes.join(" "))} |`;
  });
  return ["| family | `nginx.ingress.kubernetes.io/` annotations | note |", "|---|---|---|", ...rows].join("\n");
}

const plain = (s: string): string => s.replace(/`/g, "");

/** The annotation part of `portico --help`: one entry per implemented annotation. */
export function helpLines(): string[] {
  const lines = [
    "Annotations (on an Ingress; the first name with a non-empty value is read, portico.dev/ first;",
    "a bad value is an InvalidAnnotation diagnostic and the default applies):",
  ];
  for (const a of IMPLEMENTED) {
    const [first, ...rest] = namesOf(a);
    lines.push(`  ${first}${rest.length > 0 ? ` (also ${rest.join(", ")})` : ""}`);
    lines.push(`      ${plain(a.description)} (default: ${plain(a.default ?? "none")})`);
  }
  lines.push(
    "",
    `The other ${NOT_IMPLEMENTED.length} ingress-nginx annotations (listed in the README) and unknown portico.dev/`,
    "annotations are reported as UnsupportedAnnotation and ignored.",
  );
  return lines;
}

/** The README regions generated from the registry, by marker name. */
const REGIONS: Readonly<Record<string, () => string>> = {
  "annotations": implementedTable,
  "annotations-not-implemented": notImplementedTable,
};

/**
 * `readme` with every generated region replaced by its current text. A region sits between
 * `<!-- begin generated NAME -->` and `<!-- end generated NAME -->`; a missing one throws.
 */
export function withGeneratedTables(readme: string): string {
  let out = readme;
  for (const [name, render] of Object.entries(REGIONS)) {
    const begin = `<!-- begin generated ${name}: bun scripts/annotations-table.ts --write -->`;
    const end = `<!-- end generated ${name} -->`;
    const i = out.indexOf(begin);
    const j = out.indexOf(end, i);
    if (i < 0 || j < 0) throw new Error(`README has no generated region "${name}" (${begin} … ${end})`);
    out = `${out.slice(0, i + begin.length)}\n${render()}\n${out.slice(j)}`;
  }
  return out;
}
