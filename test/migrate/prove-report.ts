// Writes docs/migrate-to-gateway-report.md: test/migrate/prove.ts run on each set of
// ingress-nginx Ingresses in this repository (the migration report's fixtures, the demo, and the
// compatibility fixtures of test/fixtures, whose Ingresses use Portico's class: converted and
// served with `--ingress-class portico --controller-class portico.dev/ingress-controller`, the
// flags ingress-nginx would need to take them). Run: bun test/migrate/prove-report.ts [OUT.md]
import { readdirSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { prove, type ProofAnswer, type ProofDifference, type ProofReport } from "./prove.ts";

const ROOT = join(import.meta.dir, "..", "..");
const PORTICO_CLASS = ["--ingress-class", "portico", "--controller-class", "portico.dev/ingress-controller"];

const sets: { path: string; flags: string[] }[] = [
  { path: "test/fixtures/migrate/manifests", flags: [] },
  { path: "test/fixtures/migrate/gateway/filters.yaml", flags: [] },
  { path: "k8s/examples/demo", flags: PORTICO_CLASS },
  ...readdirSync(join(ROOT, "test", "fixtures"))
    .filter((f) => f.endsWith(".yaml") && f !== "gateway.yaml")
    .sort()
    .map((f) => ({ path: `test/fixtures/${f}`, flags: PORTICO_CLASS })),
];

const cell = (s: string) => s.replaceAll("|", "\\|").replaceAll("\n", " ");
const code = (s: string) => `\`${s.replaceAll("`", "'")}\``;

function answer(a: ProofAnswer): string {
  const parts = [String(a.status)];
  if (a.location !== null) parts.push(`→ ${a.location}`);
  if (a.received !== null) parts.push(`${a.received.backend} got ${code(a.received.line)}`);
  return parts.join(" ");
}

function fieldsDiff(d: ProofDifference): string {
  const out: string[] = [];
  const onlyI = d.ingress.fields.filter((f) => !d.gateway.fields.includes(f) && !f.startsWith("location:"));
  const onlyG = d.gateway.fields.filter((f) => !d.ingress.fields.includes(f) && !f.startsWith("location:"));
  if (onlyI.length > 0) out.push(`Ingress only: ${onlyI.map(code).join(", ")}`);
  if (onlyG.length > 0) out.push(`Gateway only: ${onlyG.map(code).join(", ")}`);
  const ri = d.ingress.received;
  const rg = d.gateway.received;
  if (ri !== null && rg !== null) {
    if (ri.line !== rg.line) out.push(`request line ${code(ri.line)} / ${code(rg.line)}`);
    const a = ri.fields.filter((f) => !rg.fields.includes(f));
    const b = rg.fields.filter((f) => !ri.fields.includes(f));
    if (a.length > 0) out.push(`backend got, Ingress only: ${a.map(code).join(", ")}`);
    if (b.length > 0) out.push(`backend got, Gateway only: ${b.map(code).join(", ")}`);
  }
  return out.join("; ");
}

/** The stated reason for a difference, from the notes of the Ingress that asked for it. */
function cause(r: ProofReport, d: ProofDifference): string {
  // The notes of every Ingress with a route for the request's host (a rule of another Ingress
  // of the host may be the one answering), the asking Ingress's first.
  const ing = d.request.why.split(" ")[0]!;
  const onHost = new Set([ing]);
  for (const o of r.objectsList) {
    const spec = o.spec as { hostnames?: string[] } | undefined;
    const from = o.metadata?.annotations?.["portico.dev/converted-from"];
    if (from === undefined || !(spec?.hostnames ?? [d.request.host]).includes(d.request.host)) continue;
    onHost.add(from.replace(/^Ingress /, ""));
  }
  const notes = r.notesList.filter((n) => onHost.has(n.ingress));
  const ext = notes.some((n) => n.carriedAs === "portico-extension");
  const i = d.ingress;
  const g = d.gateway;
  if (g.status === 500 && ext) return "its rules name the IngressNginxPolicy (portico-extension) with an annotation one rule cannot apply (README, \"IngressNginxPolicy\"): 500";
  if (i.received !== null && g.received !== null && i.received.backend !== g.received.backend && r.notesList.some((n) => n.annotation.endsWith("/canary-weight") && n.carriedAs === "gateway-api")) return "a weighted split (canary-weight): each side picks the backend by the weights, so a run may differ here";
  if (i.location !== null && g.location !== null && g.location === `${i.location}/`) return "the HTTPS redirect keeps the trailing `/` (ssl-redirect note)";
  if (d.request.why.includes("CORS") || [...i.fields, ...g.fields].some((f) => f.startsWith("access-control-") || f === "vary: Origin")) return "CORS filter (enable-cors note)";
  const snippet = notes.find((n) => n.annotation.endsWith("/configuration-snippet") && n.carriedAs === "gateway-api");
  if (snippet !== undefined && i.status === g.status && g.fields.length > i.fields.length) return "the snippet's header settings: ingress-nginx ran them, as the Gateway API form does; Portico serving the Ingress does not (configuration-snippet note)";
  const merged = notes.find((n) => n.text.includes("which merges the routes of every matching hostname"));
  if (merged !== undefined && i.status === 404 && g.status !== 404) return "a `*.` or hostless route takes a path the host's own rules do not (Gateway API merges matching hostnames; note)";
  if (notes.some((n) => n.text.startsWith("the implicit `/` location") && n.carriedAs === "not-expressible") && g.status === 404) return "the host's implicit `/` location with the first Ingress's annotations (note)";
  const listeners = r.objectsList.filter((o) => o.kind === "Gateway").flatMap((o) => ((o.spec as { listeners?: { protocol: string; hostname?: string }[] }).listeners ?? []));
  const h = d.request.host;
  const tlsListener = listeners.some((l) => l.protocol === "HTTPS" && (l.hostname === h || (l.hostname?.startsWith("*.") === true && h.endsWith(l.hostname.slice(1)) && !h.slice(0, -l.hostname.length + 1).includes("."))));
  if (d.request.scheme === "https" && !tlsListener && g.status === 404) return "HTTPS to a host without a TLS listener (ingress-nginx serves every host on 443, with its default certificate when no spec.tls of a main Ingress names it)";
  if (d.request.path !== d.request.path.toLowerCase() && g.status === 404 && i.status !== 404) return "case-sensitive Gateway API match where nginx's `~*` location is not (rewrite-target note)";
  const onlyHsts = (a: ProofAnswer, b: ProofAnswer) => a.fields.filter((f) => !b.fields.includes(f)).every((f) => f.startsWith("strict-transport-security:"));
  if (i.status === g.status && JSON.stringify(i.received) === JSON.stringify(g.received) && onlyHsts(i, g) && onlyHsts(g, i)) return "HSTS on an HTTPS answer no rule of the host's routes gives (HSTS note)";
  if (i.status === 503 && g.status === 500 && i.received === null) return "the backend cannot take the request (no Service, port or endpoints): ingress-nginx answers 503, Gateway API 500 (HTTPRouteRule.backendRefs)";
  if (notes.some((n) => n.carriedAs === "not-expressible")) return `not expressible: ${notes.filter((n) => n.carriedAs === "not-expressible").map((n) => n.annotation || n.text.slice(0, 60)).join(", ")}`;
  return "not stated by a note";
}

const reports: { path: string; flags: string[]; r: ProofReport | null; error: string | null }[] = [];
for (const s of sets) {
  try {
    reports.push({ ...s, r: await prove(join(ROOT, s.path), s.flags), error: null });
  } catch (e) {
    reports.push({ ...s, r: null, error: (e as Error).message.split("\n")[0] ?? "" });
  }
  process.stderr.write(`${s.path}: done\n`);
}

const fmt = (o: Readonly<Record<string, number>>) => Object.entries(o).map(([k, v]) => `${k} ${v}`).join(", ") || "none";
const lines: string[] = [
  "# `portico migrate --to gateway-api`: the differences report",
  "",
  "Produced by `bun test/migrate/prove-report.ts` (test/migrate/prove.ts for each set; docs/design.md,",
  '"Converting to Gateway API", says what it does). For each set of manifests it runs the real command,',
  "then serves the Ingresses with one Portico (`--ingress-nginx-compat`) and only the objects the command",
  "wrote with another (same flags), in front of the same raw backends (one per Service, answering its",
  "name; the set's EndpointSlices replaced, each TLS Secret an Ingress names replaced by a certificate",
  "for its hosts), asks both the same sample and lists every request whose answer differs: status,",
  "Location, response fields (all but Date, X-Request-ID and the framing ones), and which backend got",
  "which request line and fields. The sample, from the Ingresses as written: every host and path (the",
  "path, a deeper one, one with a letter more, upper case; a regex path also as a path it matches), on",
  "HTTPS too for a TLS host, each canary header and cookie value, and for `enable-cors` a preflight and",
  "a simple request from an allowed Origin and from another. Requests that answer 401, 302 (app-root,",
  "auth-signin) or 308 (HTTPS) are in the sample as plain GETs. The compatibility fixtures use",
  `Portico's class, so they are converted and served with \`${PORTICO_CLASS.join(" ")}\`.`,
  "",
  "The Ingress side is Portico serving the Ingresses, standing in for ingress-nginx (where Portico",
  "differs from ingress-nginx, `portico migrate` says so). The `cause` column names the note that",
  "states the difference (matched from the notes of the host's Ingresses by the answers' shape;",
  '"not stated by a note" would be a wrong answer of the conversion). A weighted canary picks its',
  "backend at random on both sides, so counts may move by a request or two between runs.",
  "",
  "## Summary",
  "",
  "| set | command exit | objects written | notes (carriedAs) | asked | same | differ |",
  "|---|---:|---|---|---:|---:|---:|",
];
for (const { path, r, error } of reports) {
  if (r === null) lines.push(`| ${path} | error: ${cell(error ?? "")} | | | | | |`);
  else lines.push(`| ${path} | ${r.exitCode} | ${fmt(r.objects)} | ${fmt(r.notes)} | ${r.asked} | ${r.same} | ${r.differing.length} |`);
}
const all = reports.flatMap((x) => (x.r === null ? [] : [x.r]));
const byCause = new Map<string, number>();
for (const r of all) for (const d of r.differing) byCause.set(cause(r, d), (byCause.get(cause(r, d)) ?? 0) + 1);
lines.push(
  `| **all** | | | | ${all.reduce((n, r) => n + r.asked, 0)} | ${all.reduce((n, r) => n + r.same, 0)} | ${all.reduce((n, r) => n + r.differing.length, 0)} |`,
  "",
  "Differences by cause:",
  "",
  ...[...byCause].sort((a, b) => b[1] - a[1]).map(([c, k]) => `- ${k}: ${c}`),
  "",
);
for (const { path, flags, r } of reports) {
  if (r === null || r.differing.length === 0) continue;
  lines.push(`## ${path}`, "", `\`portico migrate --to gateway-api --manifests ${path}${flags.length > 0 ? ` ${flags.join(" ")}` : ""}\``, "", "| request | why in the sample | Ingress | Gateway API | fields | cause |", "|---|---|---|---|---|---|");
  for (const d of r.differing) {
    const q = d.request;
    const hdrs = Object.entries(q.headers).map(([k, v]) => `${k}: ${v}`).join(", ");
    lines.push(`| ${cell(`${q.method} ${q.scheme}://${q.host}${q.path}${hdrs ? ` (${hdrs})` : ""}`)} | ${cell(q.why)} | ${cell(answer(d.ingress))} | ${cell(answer(d.gateway))} | ${cell(fieldsDiff(d))} | ${cell(cause(r, d))} |`);
  }
  lines.push("");
}
const out = process.argv[2] ?? join(ROOT, "docs", "migrate-to-gateway-report.md");
writeFileSync(out, `${lines.join("\n")}\n`);
process.stderr.write(`wrote ${relative(ROOT, out)}\n`);
process.exit(0);
