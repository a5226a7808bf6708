// `portico migrate`: the migration report (compile/migrate.ts) for --manifests or a cluster,
// printed as text or JSON, with no server running. The cluster is read once (runtime/load.ts),
// every kind Portico reads, Secrets included (the users of basic authentication decide whether
// a route answers 503), so the report compiles what Portico would serve. With
// --nginx-configmap, ingress-nginx's ConfigMap is read too: from the --manifests files (the
// manifest source hands ConfigMaps to the store for auth-proxy-set-headers, not to the
// settings) or with one GET.
import { dump } from "js-yaml";
import { Compiler } from "../compile/compile.ts";
import { migrationReport, type MigrationReport } from "../compile/migrate.ts";
import { formatMigrationText } from "../compile/migrate-text.ts";
import { toGatewayApi, type GatewayConversion } from "../compile/to-gateway.ts";
import { parseNginxConfigMap, type NginxConfigMap } from "../compile/nginx-configmap.ts";
import type { Config, NamespacedName } from "../config/types.ts";
import { manifestObjects } from "../files/manifests.ts";
import { apiError, createKubeClient } from "../kube/client.ts";
import { createLogger, type Logger } from "../log/logger.ts";
import type { Diagnostic } from "../model/diagnostic.ts";
import { CLUSTER_LIST_TIMEOUT_MS, loadOnce } from "./load.ts";
import { proofText, proveConversion, type Proof } from "./prove.ts";
import { hstsField } from "../kinds/redirect.ts";

/** Exit status when at least one Ingress would change behaviour (0: none would). */
export const EXIT_CHANGES = 3;


/**
 * The ConfigMap `ref` in the --manifests files, raw, as the settings parser reads it, or null;
 * `unreadable` counts the files that did not parse (the manifest source reports them), in which
 * the ConfigMap may be. Serving reads it here too (runtime/run.ts). The files are the source's
 * (files/manifests.ts manifestObjects).
 */
export async function findConfigMapInFiles(path: string, ref: NamespacedName): Promise<{ raw: unknown | null; unreadable: number }> {
  let unreadable = 0;
  for await (const f of manifestObjects(path)) {
    if (!f.ok) {
      unreadable++;
      continue;
    }
    for (const o of f.objects) {
      const meta = o.metadata as { name?: unknown; namespace?: unknown } | undefined;
      if (o.kind === "ConfigMap" && meta?.name === ref.name && (meta.namespace ?? "default") === ref.namespace) return { raw: o, unreadable };
    }
  }
  return { raw: null, unreadable };
}

async function configMapFromFiles(path: string, ref: NamespacedName): Promise<unknown> {
  const { raw } = await findConfigMapInFiles(path, ref);
  if (raw === null) throw new Error(`ConfigMap ${ref.namespace}/${ref.name} is not in ${path}`);
  return raw;
}

/** The ConfigMap `ref` from the cluster (one GET); `missing`: what a 404 gives instead of throwing. */
export async function configMapFromCluster(config: Config, log: Logger, ref: NamespacedName, missing?: () => unknown): Promise<unknown> {
  const client = createKubeClient(config, log);
  const path = `/api/v1/namespaces/${encodeURIComponent(ref.namespace)}/configmaps/${encodeURIComponent(ref.name)}`;
  const res = await client.request("GET", path, { signal: AbortSignal.timeout(CLUSTER_LIST_TIMEOUT_MS) });
  if (res.status === 404) {
    await res.body?.cancel();
    if (missing !== undefined) return missing();
    throw new Error(`ConfigMap ${ref.namespace}/${ref.name} not found`);
  }
  if (!res.ok) throw await apiError(res, "GET", path, client.server);
  return res.json();
}

async function readConfigMap(config: Config, log: Logger, ref: NamespacedName): Promise<NginxConfigMap> {
  const raw = config.manifests ? await configMapFromFiles(config.manifests, ref) : await configMapFromCluster(config, log, ref);
  const p = parseNginxConfigMap(raw);
  if (!p.ok) throw new Error(`ConfigMap ${ref.namespace}/${ref.name}: ${p.why}`);
  return p.configMap;
}

/** The report for what `config` names. Throws when the objects cannot be read. */
export async function buildMigrationReport(
  config: Config,
  log: Logger,
  quiet: Logger = log,
  nginxConfigMap: NamespacedName | null = null,
): Promise<{ report: MigrationReport; invalid: Diagnostic[] }> {
  const { snapshot, invalid } = await loadOnce(config, { log, quiet });
  const cm = nginxConfigMap === null ? null : await readConfigMap(config, log, nginxConfigMap);
  const view = new Compiler(config).inspect(snapshot, []);
  return { report: migrationReport(view, config, cm), invalid };
}

/**
 * What the report could not read: files that do not parse and objects that fail validation.
 * What they hold is missing from the report, so they count in its summary and make the exit
 * status 1 (README, "Step by step"): a report that silently skips a file would say "moves
 * unchanged" about a set it never saw.
 */
function notReadLines(invalid: readonly Diagnostic[]): string[] {
  if (invalid.length === 0) return [];
  const files = invalid.filter((d) => d.kind === "ManifestFile");
  const objects = invalid.filter((d) => d.kind !== "ManifestFile");
  const out = [`  NOT READ: ${files.length} file${files.length === 1 ? "" : "s"} that do${files.length === 1 ? "es" : ""} not parse, ${objects.length} invalid object${objects.length === 1 ? "" : "s"}; what they hold is not in this report:`];
  for (const d of files) out.push(`    ${JSON.stringify(d.name)}: ${d.message}`);
  for (const d of objects) out.push(`    ${d.kind} ${JSON.stringify(d.namespace === "" ? d.name : `${d.namespace}/${d.name}`)}: ${d.message}`);
  return out;
}

/** The report as `--output json` prints it: the summary counts what was not read. */
export function migrationJson(report: MigrationReport, invalid: readonly Diagnostic[]): string {
  const unreadableFiles = invalid.filter((d) => d.kind === "ManifestFile").length;
  const summary = { ...report.summary, unreadableFiles, invalidObjects: invalid.length - unreadableFiles };
  return `${JSON.stringify({ ...report, summary, invalidObjects: invalid }, null, 2)}\n`;
}

/** The report as text: what was not read closes the summary. */
export function migrationText(report: MigrationReport, invalid: readonly Diagnostic[]): string {
  const lines = notReadLines(invalid);
  return formatMigrationText(report) + (lines.length > 0 ? `${lines.join("\n")}\n` : "");
}

/** Prints the report on stdout (problems reading objects on stderr); returns the exit code. */
export async function migrateCli(config: Config, output: "text" | "json", nginxConfigMap: NamespacedName | null = null): Promise<number> {
  // Logs go to stderr so stdout is the report alone.
  const write = (line: string) => void process.stderr.write(`${line}\n`);
  const log = createLogger({ level: "warn", format: config.logFormat, write });
  const quiet = createLogger({ level: "error", format: config.logFormat, write });
  let built: Awaited<ReturnType<typeof buildMigrationReport>>;
  try {
    built = await buildMigrationReport(config, log, quiet, nginxConfigMap);
  } catch (err) {
    log.error(config.manifests ? "cannot read manifests" : "cannot read the cluster", { err });
    return 1;
  }
  const { report, invalid } = built;
  process.stdout.write(output === "json" ? migrationJson(report, invalid) : migrationText(report, invalid));
  if (invalid.length > 0) return 1;
  const s = report.summary;
  return s.unchanged === s.ingresses && s.configMapNotHonoured === 0 ? 0 : EXIT_CHANGES;
}

/** The Strict-Transport-Security value of Portico's HTTPS answers, for a route that keeps HSTS. */
function hstsOf(config: Config): string | null {
  return config.hsts ? hstsField(config) : null;
}

/** The prefix of a note's line in the YAML output: `# portico-note: {json}` (docs/design.md, "Converting to Gateway API"). */
const NOTE_PREFIX = "# portico-note: ";

/** The conversion as YAML: every note as one comment line of JSON first, then the objects. */
export function gatewayYaml(conv: GatewayConversion, invalid: readonly Diagnostic[]): string {
  const head = [
    ...invalid.map((d) => `${NOTE_PREFIX}${JSON.stringify({ notRead: d.kind === "ManifestFile" ? d.name : `${d.kind} ${d.namespace === "" ? d.name : `${d.namespace}/${d.name}`}`, text: d.message })}`),
    ...conv.notes.map((n) => `${NOTE_PREFIX}${JSON.stringify(n)}`),
  ];
  const docs = conv.objects.map((o) => dump(o, { lineWidth: -1, noRefs: true, sortKeys: false }));
  return `${head.map((l) => `${l}\n`).join("")}${docs.map((d) => `---\n${d}`).join("")}`;
}

/**
 * `portico migrate --to gateway-api`: the Ingresses as Gateway API objects on stdout (YAML, or
 * JSON with --output json). Exit status as `migrate`: 1 when objects could not be read, 3 when
 * an annotation is carried by Portico's extension or by nothing, 0 when Gateway API alone says it all.
 * With --prove (runtime/prove.ts) the conversion is served both ways and asked the same sample:
 * a request whose answer differs makes the status 3 too (a difference in behaviour, whether or
 * not a note states it); a proof that cannot run makes it 1.
 */
export async function migrateToGatewayCli(config: Config, output: "text" | "json", gateway: { name: string; namespace: string; prove?: boolean }): Promise<number> {
  const write = (line: string) => void process.stderr.write(`${line}\n`);
  const log = createLogger({ level: "warn", format: config.logFormat, write });
  const quiet = createLogger({ level: "error", format: config.logFormat, write });
  const convert = async (c: Config) => {
    const loaded = await loadOnce(c, { log, quiet });
    const view = new Compiler(c).inspect(loaded.snapshot, []);
    const conv = toGatewayApi(view, { gatewayName: gateway.name, gatewayNamespace: gateway.namespace, controllerName: c.gatewayControllerName, httpRedirectCode: c.httpRedirectCode, hsts: hstsOf(c) });
    return { conv, invalid: loaded.invalid };
  };
  let conv: GatewayConversion;
  let invalid: Diagnostic[];
  try {
    ({ conv, invalid } = await convert(config));
  } catch (err) {
    log.error(config.manifests ? "cannot read manifests" : "cannot read the cluster", { err });
    return 1;
  }
  let proof: Proof | null = null;
  let proofFailed = false;
  // A set that was not read whole is not proved: the proof would leave out what was not read.
  if (gateway.prove === true && config.manifests !== null && invalid.length === 0) {
    try {
      proof = await proveConversion({
        manifests: config.manifests,
        convert: async (dir) => {
          const c = await convert({ ...config, manifests: dir });
          return { yaml: gatewayYaml(c.conv, c.invalid), notes: c.conv.notes };
        },
        ingressFlags: [
          "--ingress-class", config.ingressClass,
          "--controller-class", config.controllerName,
          ...(config.watchIngressWithoutClass ? ["--watch-ingress-without-class"] : []),
          ...(config.disableCatchAll ? ["--disable-catch-all"] : []),
          "--gateway-controller-name", config.gatewayControllerName,
        ],
        gatewayFlags: ["--gateway-controller-name", config.gatewayControllerName],
      });
    } catch (err) {
      log.error("cannot prove the conversion", { err });
      proofFailed = true;
    }
  }
  const proofJson = proof === null ? {} : { proof };
  process.stdout.write(output === "json" ? `${JSON.stringify({ objects: conv.objects, notes: conv.notes, invalidObjects: invalid, ...proofJson }, null, 2)}\n` : gatewayYaml(conv, invalid) + (proof === null ? "" : proofText(proof)));
  if (invalid.length > 0 || proofFailed) return 1;
  if (proof !== null && proof.differ.length > 0) return EXIT_CHANGES;
  return conv.notes.some((n) => n.carriedAs === "not-expressible" || n.carriedAs === "portico-extension") ? EXIT_CHANGES : 0;
}
