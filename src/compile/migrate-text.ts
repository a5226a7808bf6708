// The migration report as text for people (`portico migrate`; `--output json` prints the
// MigrationReport itself). Values from the Ingresses are printed quoted and escaped, so a
// control character in an annotation cannot reach the terminal.
import { dump } from "js-yaml";
import type { AnnotationReport, AnnotationStatus, IngressReport, IngressStatus, MigrationReport } from "./migrate.ts";
import type { ConfigMapKeyStatus, ConfigMapReport } from "./nginx-configmap.ts";

const WIDTH = 100;

// The headline starts with the status as the JSON report and the portico_ingress_compat
// metric name it, so a text report and a JSON one read side by side.
const HEADLINE: Readonly<Record<IngressStatus, string>> = {
  unchanged: "unchanged (served as ingress-nginx serves it)",
  differs: "differs (served, with the differences stated below)",
  "partly-served": "partly-served (served, but part of what it does is not)",
  refused: "refused (no request reaches its backends)",
};

const TAG: Readonly<Record<AnnotationStatus, string>> = {
  same: "[same]      ",
  differs: "[differs]   ",
  "not-served": "[not served]",
  portico: "[portico]   ",
  unknown: "[unknown]   ",
};

/** Printable on one line: C0 and C1 controls (and DEL) escaped. */
function safe(s: string): string {
  return s.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => (c === "\n" ? "\\n" : `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`));
}

function quoted(value: string, max = 80): string {
  const q = JSON.stringify(value);
  return q.length > max ? `${q.slice(0, max - 2)}…"` : q;
}

/**
 * A flag as a shell word to paste: `--name=value` with the value single-quoted unless it is a
 * plain word no shell reads specially (a `!` is bash's history expansion even inside double
 * quotes; a space splits the word; `$`, `*`, `;`, quotes and the rest are the shell's). Inside
 * single quotes nothing is special but `'` itself, written `'\''` (close, an escaped quote,
 * reopen), as POSIX sh quoting works (XCU 2.2.2). The report's JSON keeps the flags as they are.
 */
export function shellFlag(flag: string): string {
  const eq = flag.indexOf("=");
  const name = eq < 0 ? flag : flag.slice(0, eq);
  if (!SHELL_WORD.test(name)) return shellQuote(flag);
  if (eq < 0) return flag;
  const value = flag.slice(eq + 1);
  return SHELL_WORD.test(value) ? flag : `${name}=${shellQuote(value)}`;
}

/** Characters no POSIX shell (nor bash or zsh, interactive or not) treats specially within a word. */
const SHELL_WORD = /^[A-Za-z0-9_@%+=:,./-]+$/;

const shellQuote = (s: string): string => `'${s.replace(/'/g, "'\\''")}'`;

/** Words of `text` wrapped at WIDTH, the first line indented by `indent`, the others by `hang`. */
function wrap(text: string, indent: number, hang = indent, after: readonly string[] = []): string[] {
  const lines: string[] = [];
  let line = "";
  const pad = () => " ".repeat(lines.length === 0 ? indent : hang);
  // `after`: words kept whole (a quoted flag may hold spaces), each printable on one line.
  for (const word of [...safe(text).split(" "), ...after.map(safe)]) {
    if (line !== "" && pad().length + line.length + 1 + word.length > WIDTH) {
      lines.push(pad() + line);
      line = word;
    } else line = line === "" ? word : `${line} ${word}`;
  }
  if (line !== "") lines.push(pad() + line);
  return lines;
}

function annotationLines(a: AnnotationReport): string[] {
  const shown = a.snippet ? `(${a.snippet.directives.length} directive${a.snippet.directives.length === 1 ? "" : "s"})` : `= ${quoted(a.value)}`;
  const out = [`  ${TAG[a.status]} ${safe(a.name)} ${shown}`, ...wrap(a.text, 6)];
  const s = a.snippet;
  if (s) {
    for (const d of s.directives) {
      const head = d.understood ? "understood:     " : "not understood: ";
      out.push(`        ${head}${safe(d.text)}`);
      if (d.note !== null) out.push(...wrap(`(${d.note})`, 24));
    }
    if (s.instead.length > 0) {
      out.push("      instead, add:");
      for (const g of s.instead) {
        const later = g.implemented ? "" : "   # not implemented in Portico yet";
        if (g.value.includes("\n")) {
          out.push(`        ${g.annotation}: |${later}`);
          for (const l of g.value.split("\n")) out.push(`          ${safe(l)}`);
        } else out.push(`        ${g.annotation}: ${quoted(g.value)}${later}`);
      }
    }
    if (s.companions.length > 0) {
      out.push("      and apply (then remove the snippet):");
      for (const c of s.companions) {
        out.push(`        # ${safe(c.name)}: for ${safe(c.directive)}`, "        ---");
        // js-yaml quotes what YAML would read otherwise; controls are escaped by safe().
        for (const l of dump(c.manifest, { lineWidth: -1, noRefs: true }).trimEnd().split("\n")) out.push(`        ${safe(l)}`);
      }
    }
  }
  return out;
}

function ingressLines(i: IngressReport): string[] {
  const out = [`${i.ingress}: ${HEADLINE[i.status]}`, ...wrap(`class: ${i.class}`, 2, 4)];
  if (i.refused !== null) out.push(...wrap(i.refused, 2));
  for (const a of i.annotations) out.push(...annotationLines(a));
  for (const d of i.diagnostics) {
    const effect = d.effect === "same" ? "as in ingress-nginx" : d.effect === "differs" ? "differs" : "not served";
    out.push(`  [${d.reason}, ${effect}]`, ...wrap(d.message, 6));
  }
  return out;
}

const KEY_TAG: Readonly<Record<ConfigMapKeyStatus, string>> = {
  flag: "[flag]        ",
  same: "[same]        ",
  "not-honoured": "[not honoured]",
  read: "[read]        ",
};

function configMapLines(c: ConfigMapReport): string[] {
  const out = [`ConfigMap ${c.configMap}:`];
  for (const k of c.keys) {
    out.push(`  ${KEY_TAG[k.status]} ${safe(k.key)} ${k.value === null ? "(not set: ingress-nginx's default)" : `= ${quoted(k.value)}`}`);
    out.push(...(k.flags.length > 0 ? wrap(`${k.text}:`, 6, 6, k.flags.map(shellFlag)) : wrap(k.text, 6)));
  }
  if (c.flags.length > 0) out.push("  Run Portico with:", ...c.flags.map((f) => `    ${safe(shellFlag(f))}`));
  return out;
}

export function formatMigrationText(r: MigrationReport): string {
  const s = r.summary;
  const out = [
    "Moving from ingress-nginx to Portico: what changes, Ingress by Ingress",
    `Ingresses of class ${r.ingressClass} (controller ${r.controllerName}${r.watchIngressWithoutClass ? ", and those with no class" : ""}), as ingress-nginx takes them.`,
    "",
  ];
  for (const i of r.ingresses) out.push(...ingressLines(i), "");
  if (r.configMap !== null) out.push(...configMapLines(r.configMap), "");
  if (r.assumedDefaults.length > 0) {
    out.push("No --nginx-configmap: ingress-nginx's defaults were assumed. Where they differ from Portico's (README, \"ingress-nginx's defaults\", says why):");
    for (const d of r.assumedDefaults) {
      const served = d.compat === "ingress-nginx" ? `ingress-nginx's${d.flagName !== null && d.flagValue !== undefined ? ` (${shellFlag(`--${d.flagName}=${d.flagValue}`)})` : ""}` : "Portico's";
      out.push(...wrap(`${d.setting}: ingress-nginx ${d.nginx}; Portico ${d.portico}; --ingress-nginx-compat serves ${served}`, 2, 4));
    }
    out.push("");
  }
  if (r.ignored.length > 0) {
    out.push("Not taken, by ingress-nginx or by Portico (other classes):");
    for (const g of r.ignored) out.push(...wrap(`${g.ingress}: ${g.reason}`, 2, 4));
    out.push("");
  }
  out.push(
    `Summary: ${s.ingresses} Ingress${s.ingresses === 1 ? "" : "es"} of class ${r.ingressClass}; ${s.ignored} of other classes ignored`,
    `  ${s.unchanged} unchanged (served as ingress-nginx serves ${s.unchanged === 1 ? "it" : "them"})`,
    `  ${s.differs} differs (served, with stated differences)`,
    `  ${s.partlyServed} partly-served (served, but an annotation, snippet or path is not)`,
    `  ${s.refused} refused (no request reaches ${s.refused === 1 ? "its" : "their"} backends)`,
  );
  if (r.configMap !== null) out.push(`  ${s.configMapNotHonoured} ConfigMap key${s.configMapNotHonoured === 1 ? "" : "s"} (or ingress-nginx defaults) not honoured`);
  return `${out.join("\n")}\n`;
}
