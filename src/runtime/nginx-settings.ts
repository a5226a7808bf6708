// Serving with --nginx-configmap (docs/design.md "ingress-nginx's ConfigMap"): each key the
// migration report maps to a flag (compile/nginx-configmap.ts, the one table) acts as that
// flag, its value validated by the flag's own schema; a flag given on the command line or as
// PORTICO_* wins. Keys Portico cannot honour are diagnostics on the ConfigMap
// (UnsupportedConfigKey); a value that cannot be read is InvalidConfigKey and the key keeps its
// last good value. Settings the compiler reads apply at once (a compile, as any change); so do
// the data plane's that its handlers read per request (config/live.ts LIVE_FIELDS: body size,
// timeouts, HSTS, status codes, what use-forwarded-headers / enable-real-ip /
// compute-full-forwarded-for say of the forwarded headers), in this process and in the
// workers; the others (listeners, TLS, the trusted ranges, process counts) are read at start,
// and a later change to them is logged as needing a restart.
import * as v from "valibot";
import { COMPILE_FIELDS, type CompileConfig } from "../compile/config.ts";
import { configMapReport, parseNginxConfigMap } from "../compile/nginx-configmap.ts";
import { envName, FLAGS, type FlagSpec } from "../config/flags.ts";
import { isLiveField } from "../config/live.ts";
import type { Config, NamespacedName } from "../config/types.ts";
import type { Logger } from "../log/logger.ts";
import type { Diagnostic } from "../model/diagnostic.ts";
import { configMapFromCluster, findConfigMapInFiles } from "./migrate.ts";

type Key = keyof Config;

const BY_NAME = new Map<string, Key>((Object.keys(FLAGS) as Key[]).map((k) => [FLAGS[k].name, k]));
const COMPILE = new Set<Key>(COMPILE_FIELDS);

/** One `--name=value` (or bare `--name`) of the report as the flag key and its text. */
function splitFlag(flag: string): { key: Key; text: string } | null {
  const body = flag.replace(/^--/, "");
  const eq = body.indexOf("=");
  const key = BY_NAME.get(eq < 0 ? body : body.slice(0, eq));
  return key === undefined ? null : { key, text: eq < 0 ? "true" : body.slice(eq + 1) };
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

export interface NginxSettings {
  /** The flags with the ConfigMap's keys applied. */
  readonly config: Config;
  /** PORTICO_* variables carrying the ConfigMap's values to worker processes (they parse their own flags). */
  workerEnv(): Record<string, string>;
  /** A new version of the ConfigMap (null: there is none). */
  update(raw: unknown | null): void;
}

export function createNginxSettings(o: {
  base: Config;
  explicit: ReadonlySet<Key>;
  ref: NamespacedName;
  log: Logger;
  onDiagnostics: (diagnostics: readonly Diagnostic[]) => void;
  onCompileConfig: (config: CompileConfig) => void;
  /** A field of config/live.ts LIVE_FIELDS changed: the data plane takes the new values. */
  onLiveConfig?: (config: Config) => void;
}): NginxSettings {
  const { base, explicit, ref, log } = o;
  const where = { kind: "ConfigMap", namespace: ref.namespace, name: ref.name };
  let config = base;
  /** The values applied at start: the data plane keeps them until a restart. */
  let started: Config | null = null;
  /** Per ConfigMap key, the flag values last applied from it (kept while a later value is bad). */
  let lastGood = new Map<string, ReadonlyMap<Key, { value: unknown; text: string }>>();
  let texts = new Map<Key, string>();
  let seen = "";
  /** The data-plane flags last said to need a restart (said again only when the list changes). */
  let restartLogged = "";

  function update(raw: unknown | null): void {
    const diagnostics: Diagnostic[] = [];
    const diag = (reason: Diagnostic["reason"], message: string) => diagnostics.push({ ...where, reason, message, severity: "warning" });
    let data: Readonly<Record<string, string>> = {};
    if (raw !== null) {
      const p = parseNginxConfigMap(raw);
      if (!p.ok) {
        // The whole object cannot be read: every key keeps what it had.
        diag("InvalidConfigKey", `${p.why}; the last good settings are kept`);
        log.warn("ConfigMap not read; keeping the last good settings", { ...where, err: p.why });
        o.onDiagnostics(diagnostics);
        return;
      }
      data = p.configMap.data;
    }
    const fingerprint = JSON.stringify(data);
    if (fingerprint === seen && started !== null) return;
    seen = fingerprint;
    if (raw === null) log.warn("ConfigMap not found: serving with the flags alone", where);

    const good = new Map<string, ReadonlyMap<Key, { value: unknown; text: string }>>();
    const ignored: string[] = [];
    for (const k of configMapReport({ ...ref, data }).keys) {
      if (k.value === null) continue; // an ingress-nginx default the report mentions, not a key
      const keep = () => {
        const prev = lastGood.get(k.key);
        if (prev !== undefined) good.set(k.key, prev);
      };
      if (k.invalid) {
        diag("InvalidConfigKey", `${k.key}=${JSON.stringify(k.value)}: ${k.text}; ${lastGood.has(k.key) ? "its last good value is kept" : "ignored"}`);
        keep();
        continue;
      }
      if (k.status === "not-honoured") {
        diag("UnsupportedConfigKey", `${k.key}=${JSON.stringify(k.value)} is not honoured: ${k.text}`);
        continue;
      }
      const values = new Map<Key, { value: unknown; text: string }>();
      let bad: string | null = null;
      for (const f of k.flags) {
        const s = splitFlag(f);
        if (s === null) continue;
        if (explicit.has(s.key)) {
          ignored.push(`${k.key} (--${FLAGS[s.key].name} given)`);
          continue;
        }
        const r = v.safeParse((FLAGS[s.key] as FlagSpec<unknown>).schema, s.text);
        if (!r.success) {
          bad = `--${FLAGS[s.key].name}: ${r.issues[0]?.message ?? "invalid value"}`;
          break;
        }
        values.set(s.key, { value: r.output, text: s.text });
      }
      if (bad !== null) {
        diag("InvalidConfigKey", `${k.key}=${JSON.stringify(k.value)}: ${bad}; ${lastGood.has(k.key) ? "its last good value is kept" : "ignored"}`);
        keep();
        continue;
      }
      if (k.bounded) log.warn("ConfigMap key applied, bounded", { ...where, key: k.key, value: k.value, text: k.text });
      // Also a key whose value is Portico's default: a bad value later keeps that.
      good.set(k.key, values);
    }
    lastGood = good;

    const overlay: Partial<Record<Key, unknown>> = {};
    const nextTexts = new Map<Key, string>();
    for (const values of good.values()) {
      for (const [key, { value, text }] of values) {
        overlay[key] = value;
        nextTexts.set(key, text);
      }
    }
    texts = nextTexts;
    const prev = config;
    config = Object.freeze({ ...base, ...overlay }) as Config;
    const changed = (Object.keys(FLAGS) as Key[]).filter((key) => !same(prev[key], config[key]));
    for (const d of diagnostics) log.warn("ConfigMap key not applied", { ...where, reason: d.reason, err: d.message });
    if (ignored.length > 0) log.info("ConfigMap keys ignored: the flag given wins", { ...where, keys: ignored });
    log.info("ConfigMap applied", { ...where, flags: [...texts].map(([key, text]) => `--${FLAGS[key].name}=${text}`) });
    o.onDiagnostics(diagnostics);
    if (started === null) {
      started = config;
      return;
    }
    if (changed.some((key) => COMPILE.has(key))) o.onCompileConfig(config);
    if (o.onLiveConfig !== undefined && changed.some((key) => isLiveField(key))) {
      log.info("ConfigMap settings of the data plane applied", { ...where, flags: changed.filter((key) => isLiveField(key)).map((key) => `--${FLAGS[key].name}`) });
      o.onLiveConfig(config);
    }
    const live = (key: Key) => o.onLiveConfig !== undefined && isLiveField(key);
    const restart = (Object.keys(FLAGS) as Key[]).filter((key) => !COMPILE.has(key) && !live(key) && !same(started![key], config[key]));
    const restartText = restart.join(",");
    if (restart.length > 0 && restartText !== restartLogged) {
      log.warn("ConfigMap settings of the data plane change at the next restart", { ...where, flags: restart.map((key) => `--${FLAGS[key].name}`) });
    }
    restartLogged = restartText;
  }

  return {
    get config() {
      return config;
    },
    workerEnv() {
      const env: Record<string, string> = {};
      for (const [key, text] of texts) env[envName(FLAGS[key].name)] = text;
      return env;
    },
    update,
  };
}

/**
 * The flags with --nginx-configmap's keys applied, read once: what a server started now would
 * serve with, for the commands that compile once and must say what it answers (`portico
 * routes`, `portico explain`). The same settings code as serving (createNginxSettings); its
 * diagnostics are logged. A ConfigMap that is not there leaves the flags alone, as serving does.
 */
export async function configWithNginxConfigMap(config: Config, explicit: ReadonlySet<Key>, log: Logger): Promise<Config> {
  const ref = config.nginxConfigmap;
  if (ref === null) return config;
  const settings = createNginxSettings({
    base: config,
    explicit,
    ref,
    log,
    onDiagnostics: (ds) => {
      for (const d of ds) log.warn("ConfigMap key not applied", { namespace: d.namespace, name: d.name, reason: d.reason, err: d.message });
    },
    onCompileConfig: () => {},
  });
  const raw = config.manifests !== null ? (await findConfigMapInFiles(config.manifests, ref)).raw : await configMapFromCluster(config, log, ref, () => null);
  settings.update(raw);
  return settings.config;
}
