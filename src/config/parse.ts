// Command line + PORTICO_* environment → one frozen Config (or help, version, a subcommand:
// explain, routes, demo, migrate, or an error).
// A flag wins over its environment twin; a bad value is one line naming the flag (main exits 2).
import { isIP } from "node:net";
import * as v from "valibot";
import { EXPLAIN_FLAGS, FLAGS, MIGRATE_FLAGS, envName, type FlagSpec } from "./flags.ts";
import { NGINX_COMPAT_FLAG_DEFAULTS } from "./nginx-defaults.ts";
import type { Config, NamespacedName } from "./types.ts";
import { isDnsLabel, isDnsSubdomain } from "./values.ts";

export type ParseOutcome =
  /** `explicit`: the flags given on the command line or as PORTICO_* (they win over --nginx-configmap's keys). */
  | { readonly type: "run"; readonly config: Config; readonly explicit: ReadonlySet<keyof Config> }
  | { readonly type: "help" }
  | { readonly type: "version" }
  | {
      readonly type: "explain";
      readonly config: Config;
      /** The flags given (they win over --nginx-configmap's keys). */
      readonly explicit?: ReadonlySet<keyof Config>;
      readonly host: string;
      readonly path: string;
      readonly scheme: "http" | "https";
      readonly client?: string;
      readonly method?: string;
      readonly contentType?: string;
      readonly acceptEncoding?: string;
      readonly userAgent?: string;
      readonly port?: number;
      readonly gateway?: string;
      readonly listenerPort?: number;
    }
  /** `portico routes`: print the route table of --manifests or of the cluster, then exit. */
  | { readonly type: "routes"; readonly config: Config; readonly explicit?: ReadonlySet<keyof Config> }
  /** `portico demo`: demo backends plus Portico serving the demo manifests. */
  | { readonly type: "demo"; readonly config: Config }
  /** `portico migrate`: the migration report for --manifests or the cluster (ingress-nginx's class rules). */
  | {
      readonly type: "migrate";
      readonly config: Config;
      readonly output: "text" | "json";
      readonly nginxConfigMap: NamespacedName | null;
      /** --to gateway-api: the Gateway API objects instead of the report, for this Gateway. */
      readonly toGateway?: { readonly name: string; readonly namespace: string; readonly prove: boolean };
    }
  | { readonly type: "error"; readonly message: string };

type Key = keyof Config;
type ExplainKey = keyof typeof EXPLAIN_FLAGS;
type MigrateKey = keyof typeof MIGRATE_FLAGS;

interface RawValue {
  readonly text: string;
  /** How the user gave it, for messages: `--http-port` or `PORTICO_HTTP_PORT (--http-port)`. */
  readonly source: string;
}

const BY_NAME = new Map<string, Key>(
  (Object.keys(FLAGS) as Key[]).flatMap((k) => [FLAGS[k].name, ...((FLAGS[k] as FlagSpec<unknown>).aliases ?? [])].map((n) => [n, k] as const)),
);

/**
 * What --ingress-nginx-compat sets unless the flag (or its PORTICO_* twin) is given:
 * ingress-nginx's own defaults for its --ingress-class and --controller-class, and the
 * ConfigMap defaults it serves differently from Portico (config/nginx-defaults.ts).
 */
const NGINX_COMPAT_DEFAULTS: Partial<Record<Key, string>> = {
  ingressClass: "nginx",
  controllerName: "k8s.io/ingress-nginx",
  ...NGINX_COMPAT_FLAG_DEFAULTS,
};
const EXPLAIN_BY_NAME = new Map<string, string>((Object.keys(EXPLAIN_FLAGS) as ExplainKey[]).map((k) => [EXPLAIN_FLAGS[k].name, k]));
const MIGRATE_BY_NAME = new Map<string, string>((Object.keys(MIGRATE_FLAGS) as MigrateKey[]).map((k) => [MIGRATE_FLAGS[k].name, k]));

/** Rejected text, quoted and escaped so the message stays on one line, and short. */
function quote(text: string): string {
  return JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}…` : text);
}

const error = (message: string): ParseOutcome => ({ type: "error", message });

const SUBCOMMANDS = new Set(["explain", "routes", "demo", "migrate"]);
type Subcommand = "explain" | "routes" | "demo" | "migrate" | null;

/**
 * Defaults of the subcommands where they differ from a server's (flags and PORTICO_* still
 * win). demo: loopback only, lines for people, and Ctrl-C stops at once (in a cluster the
 * shutdown delay lets endpoints update first). routes and migrate: their output is for people,
 * so are the problems they list after it.
 */
const SUB_DEFAULTS: Readonly<Record<string, Partial<Record<Key, string>>>> = {
  demo: { bind: "127.0.0.1", logFormat: "text", shutdownDelayMs: "0s" },
  routes: { logFormat: "text" },
  migrate: { logFormat: "text" },
};

/** `argv` is the arguments after the program name (process.argv.slice(2)). */
export function parseArgs(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): ParseOutcome {
  // Help and version win over everything else, even a bad flag next to them.
  if (argv.includes("--help") || argv.includes("-h")) return { type: "help" };
  if (argv.includes("--version")) return { type: "version" };

  const sub: Subcommand = SUBCOMMANDS.has(argv[0] ?? "") ? (argv[0] as Subcommand) : null;
  const explain = sub === "explain";
  const migrate = sub === "migrate";
  const tokens = sub !== null ? argv.slice(1) : argv;
  const given = new Map<Key, RawValue>();
  /** The subcommand's own flags, by key. */
  const subFlags = explain ? EXPLAIN_BY_NAME : migrate ? MIGRATE_BY_NAME : null;
  const subGiven = new Map<string, string>();

  let bareSwitch: string | null = null;
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    const afterSwitch = bareSwitch;
    bareSwitch = null;
    if (afterSwitch !== null && /^(true|false|yes|no|on|off|0|1)$/i.test(token)) {
      return error(`--${afterSwitch}: a switch takes its value after "=" (--${afterSwitch}=${token.toLowerCase()})`);
    }
    if (!token.startsWith("--") || token === "--") {
      return error(token.startsWith("-") && token !== "-" ? `unknown flag ${quote(token)} (see --help)` : `unexpected argument ${quote(token)} (see --help)`);
    }
    const eq = token.indexOf("=");
    const name = token.slice(2, eq < 0 ? undefined : eq);
    const key = BY_NAME.get(name);
    const subKey = subFlags?.get(name);
    if (key === undefined && subKey === undefined) return error(`unknown flag --${quote(name).slice(1, -1)} (see --help)`);

    let text: string;
    if (eq >= 0) {
      text = token.slice(eq + 1);
    } else if ((key !== undefined && FLAGS[key].metavar === null) || (migrate && subKey !== undefined && MIGRATE_FLAGS[subKey as MigrateKey].metavar === null)) {
      text = "true"; // a bare switch
      bareSwitch = name;
    } else {
      const next = tokens[i + 1];
      if (next === undefined || next.startsWith("--")) return error(`--${name}: missing value`);
      text = next;
      i++;
    }
    if (key !== undefined) given.set(key, { text, source: `--${name}` });
    else subGiven.set(subKey!, text);
  }

  const config: Record<string, unknown> = {};
  const sources = new Map<Key, string>();
  const rawOf = (key: Key): RawValue | undefined => {
    const spec = FLAGS[key] as FlagSpec<unknown>;
    const raw = given.get(key);
    if (raw !== undefined) return raw;
    const fromEnv = env[envName(spec.name)];
    // An empty variable counts as unset (a common way to "unset" in manifests and shells).
    return fromEnv !== undefined && fromEnv !== "" ? { text: fromEnv, source: `${envName(spec.name)} (--${spec.name})` } : undefined;
  };
  const compatRaw = rawOf("ingressNginxCompat");
  // migrate always reads the Ingresses as ingress-nginx does: that is what it compares with.
  const compat = migrate || (compatRaw !== undefined && v.safeParse(FLAGS.ingressNginxCompat.schema, compatRaw.text).output === true);
  for (const key of Object.keys(FLAGS) as Key[]) {
    const spec = FLAGS[key] as FlagSpec<unknown>;
    let raw = rawOf(key);
    if (raw !== undefined) sources.set(key, raw.source);
    const subDefault = sub === null ? undefined : SUB_DEFAULTS[sub]?.[key];
    if (raw === undefined && subDefault !== undefined) raw = { text: subDefault, source: `${sub} default --${spec.name}` };
    const compatDefault = compat ? NGINX_COMPAT_DEFAULTS[key] : undefined;
    // nginx has one read timer for the head and the gaps of a body (config/nginx-defaults.ts,
    // proxy-read-timeout): under compat a given --response-timeout is the idle default too.
    // It counts as given, so --nginx-configmap's proxy-read-timeout, which sets both, is skipped
    // for both (runtime/nginx-settings.ts) and the two timers stay one.
    const readTimeout = key === "streamIdleTimeoutMs" && compat ? rawOf("responseTimeoutMs") : undefined;
    if (raw === undefined && readTimeout !== undefined) {
      raw = { text: readTimeout.text, source: `--ingress-nginx-compat (--${spec.name} from ${readTimeout.source})` };
      sources.set(key, raw.source);
    }
    if (raw === undefined && compatDefault !== undefined) raw = { text: compatDefault, source: `--ingress-nginx-compat (--${spec.name})` };
    if (raw === undefined) {
      config[key] = spec.fallback();
      continue;
    }
    const r = v.safeParse(spec.schema, raw.text);
    if (!r.success) return error(`${raw.source}: ${r.issues[0]?.message ?? "invalid value"}, got ${quote(raw.text)}`);
    config[key] = r.output;
  }
  if (migrate) config.ingressNginxCompat = true;
  const frozen = Object.freeze(config) as unknown as Config;

  const clash = portClash(frozen);
  if (clash) return error(clash);
  // QUIC is not TCP: the front could not see it, and the terminating listener, on a loopback
  // port then, would advertise that port in Alt-Svc (docs/design.md, "SSL passthrough").
  if (frozen.enableSslPassthrough && frozen.http3) return error("--enable-ssl-passthrough: cannot be combined with --http3");
  // The same for the PROXY protocol front: QUIC carries no PROXY header.
  if (frozen.useProxyProtocol && frozen.http3) return error("--use-proxy-protocol: cannot be combined with --http3");
  // The Gateways' Services are made in --publish-service's namespace with its selector and type.
  if (frozen.gatewayPorts !== null && frozen.publishService === null && frozen.manifests === null) return error("--gateway-ports: needs --publish-service (the Gateways' Services copy its namespace, selector and type)");
  const mixed = sourceClash(sources, sub);
  if (mixed) return error(mixed);

  // routes and explain apply --nginx-configmap's keys as serving does: the flags given win.
  if (sub === "routes") return { type: sub, config: frozen, explicit: new Set(sources.keys()) };
  if (sub === "demo") return { type: sub, config: frozen };
  if (migrate) {
    const output = subGiven.get("output") ?? "text";
    if (output !== "text" && output !== "json") return error(`--output: expected text or json, got ${quote(output)}`);
    const to = subGiven.get("to");
    if (to !== undefined && to !== "gateway-api") return error(`--to: expected gateway-api, got ${quote(to)}`);
    const gwName = subGiven.get("gatewayName") ?? "portico";
    const gwNs = subGiven.get("gatewayNamespace") ?? "portico";
    // Object names: DNS-1123 subdomain for the Gateway, label for a namespace (Kubernetes API).
    if (!isDnsSubdomain(gwName)) return error(`--gateway-name: expected a Kubernetes object name, got ${quote(gwName)}`);
    if (!isDnsLabel(gwNs)) return error(`--gateway-namespace: expected a namespace name, got ${quote(gwNs)}`);
    if (to === undefined && (subGiven.has("gatewayName") || subGiven.has("gatewayNamespace"))) return error("--gateway-name and --gateway-namespace go with --to gateway-api");
    const proveText = (subGiven.get("prove") ?? "false").toLowerCase();
    if (!/^(true|false)$/.test(proveText)) return error(`--prove: expected true or false, got ${quote(proveText)}`);
    const prove = proveText === "true";
    if (prove && to === undefined) return error("--prove goes with --to gateway-api");
    // The proof serves the set from files (docs/design.md, "Converting to Gateway API").
    if (prove && frozen.manifests === null) return error("--prove needs --manifests");
    return { type: "migrate", config: frozen, output, nginxConfigMap: frozen.nginxConfigmap, ...(to !== undefined ? { toGateway: { name: gwName, namespace: gwNs, prove } } : {}) };
  }
  if (!explain) return { type: "run", config: frozen, explicit: new Set(sources.keys()) };
  return explainOutcome(frozen, subGiven, new Set(sources.keys()));
}

/**
 * Portico reads one source: YAML files or a cluster. --manifests next to --kubeconfig or
 * --context (a flag or its PORTICO_* twin) used to serve the files and ignore the cluster
 * silently; it is refused instead, naming both. `demo` serves its own manifests.
 */
function sourceClash(sources: ReadonlyMap<Key, string>, sub: Subcommand): string | null {
  const cluster = sources.get("kubeconfig") ?? sources.get("context");
  const manifests = sources.get("manifests");
  if (sub === "demo") {
    const own = manifests ?? cluster;
    return own ? `demo: ${own} cannot be used: the demo serves its own manifests and backends` : null;
  }
  if (manifests && cluster) return `${manifests} and ${cluster} name two sources; Portico serves either YAML files or a cluster: drop one`;
  return null;
}

function portClash(c: Config): string | null {
  const ports: [string, number][] = [
    ["--http-port", c.httpPort],
    ["--https-port", c.httpsPort],
    ["--admin-port", c.adminPort],
  ];
  const r = c.gatewayPorts;
  if (r !== null) for (const [flag, port] of ports) if (port >= r.from && port <= r.to) return `--gateway-ports: ${r.from}-${r.to} includes ${flag} ${port}`;
  for (let i = 0; i < ports.length; i++) {
    for (let j = 0; j < i; j++) {
      if (ports[i]![1] === ports[j]![1]) return `${ports[i]![0]}: port ${ports[i]![1]} is already used by ${ports[j]![0]}`;
    }
  }
  return null;
}

function explainOutcome(config: Config, given: ReadonlyMap<string, string>, explicit: ReadonlySet<keyof Config>): ParseOutcome {
  if (config.manifests === null) return error("explain: --manifests is required");
  const host = given.get("host");
  if (host === undefined || host.trim() === "") return error("explain: --host is required");
  if (/[\s/]/.test(host)) return error(`--host: expected a host name, got ${quote(host)}`);
  const path = given.get("path") ?? "/";
  if (!path.startsWith("/")) return error(`--path: expected a path starting with /, got ${quote(path)}`);
  const scheme = given.get("scheme") ?? "http";
  if (scheme !== "http" && scheme !== "https") return error(`--scheme: expected http or https, got ${quote(scheme)}`);
  const client = given.get("client");
  if (client !== undefined && isIP(client) === 0) return error(`--client: expected an IP address, got ${quote(client)}`);
  const method = given.get("method");
  if (method !== undefined && !/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,32}$/.test(method)) return error(`--method: expected an HTTP method, got ${quote(method)}`);
  const contentType = given.get("contentType");
  if (contentType !== undefined && !/^[\u0020-\u007e]{1,256}$/.test(contentType)) return error(`--content-type: expected a header value, got ${quote(contentType)}`);
  const acceptEncoding = given.get("acceptEncoding");
  if (acceptEncoding !== undefined && !/^[\u0020-\u007e]{0,256}$/.test(acceptEncoding)) return error(`--accept-encoding: expected a header value, got ${quote(acceptEncoding)}`);
  const userAgent = given.get("userAgent");
  if (userAgent !== undefined && !/^[\u0020-\u007e]{0,512}$/.test(userAgent)) return error(`--user-agent: expected a header value, got ${quote(userAgent)}`);
  const gateway = given.get("gateway");
  if (gateway !== undefined && !/^[a-z0-9]([a-z0-9.-]*[a-z0-9])?\/[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/.test(gateway)) return error(`--gateway: expected NAMESPACE/NAME, got ${quote(gateway)}`);
  const ports: { port?: number; listenerPort?: number } = {};
  for (const [key, flag] of [["port", "--port"], ["listenerPort", "--listener-port"]] as const) {
    const text = given.get(key);
    if (text === undefined) continue;
    const n = /^[0-9]{1,5}$/.test(text) ? Number(text) : 0;
    if (n < 1 || n > 65535) return error(`${flag}: expected a port number, got ${quote(text)}`);
    ports[key] = n;
  }
  if (ports.listenerPort !== undefined && gateway === undefined) return error("--listener-port: needs --gateway");
  return {
    type: "explain",
    config,
    explicit,
    host,
    path,
    scheme,
    ...(client === undefined ? {} : { client }),
    ...(method === undefined ? {} : { method }),
    ...(contentType === undefined ? {} : { contentType }),
    ...(acceptEncoding === undefined ? {} : { acceptEncoding }),
    ...(userAgent === undefined ? {} : { userAgent }),
    ...(gateway === undefined ? {} : { gateway }),
    ...ports,
  };
}
