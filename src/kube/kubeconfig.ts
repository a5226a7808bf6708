// Find the cluster and credentials the way kubectl does: --kubeconfig, else $KUBECONFIG
// (several files joined by ':'; for duplicate names the first file wins, as
// clientcmd's merge rules say), else the in-cluster service account, else ~/.kube/config.
// The files are read here with the same field mapping and checks as @kubernetes/client-node's
// KubeConfig (config_types.js: newClusters/newUsers/newContexts), without importing it:
// loading client-node costs about 0.2 s and 50 MiB at start-up (docs/design.md "Sources at
// start-up"). auth.ts loads it only for `auth-provider` users (OIDC & co.), whose token
// refresh it owns.
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, isAbsolute, join } from "node:path";
import { load as loadYaml } from "js-yaml";

/** A kubeconfig cluster entry, as client-node's `Cluster` names the fields. */
export interface Cluster {
  readonly name: string;
  readonly server: string;
  readonly caData?: string | undefined;
  readonly caFile?: string | undefined;
  readonly skipTLSVerify: boolean;
  readonly tlsServerName?: string | undefined;
  readonly proxyUrl?: string | undefined;
}

/** A kubeconfig user entry, as client-node's `User` names the fields (auth.ts hands it to client-node for auth-provider). */
export interface User {
  readonly name: string;
  readonly certData?: string | undefined;
  readonly certFile?: string | undefined;
  readonly exec?: unknown;
  readonly keyData?: string | undefined;
  readonly keyFile?: string | undefined;
  readonly authProvider?: { name?: unknown; config?: Record<string, unknown> & { exec?: unknown } } | undefined;
  readonly token?: string | undefined;
  readonly username?: string | undefined;
  readonly password?: string | undefined;
  readonly impersonateUser?: string | undefined;
}

export interface Context {
  readonly name: string;
  readonly cluster: string;
  readonly user: string;
  readonly namespace?: string | undefined;
}

export const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

export interface ResolvedKubeConfig {
  /** Where it came from, for logs: a file list or "in-cluster". */
  readonly source: string;
  readonly contextName: string;
  readonly namespace: string | null;
  /** cluster.server without a trailing slash; http:// is allowed (kubectl proxy). */
  readonly server: string;
  readonly ca: string | null;
  readonly insecureSkipTLSVerify: boolean;
  readonly tlsServerName: string | null;
  /** cluster.proxy-url (http/https proxies; Bun's fetch has no SOCKS). */
  readonly proxyUrl: string | null;
  readonly user: User;
  /** `token-file` of the user (re-read periodically), absolute. */
  readonly tokenFile: string | null;
  /** Directory of the file that declared the user: relative exec commands resolve against it. */
  readonly userDir: string;
  /** The server entry as read, for client-node's auth-provider support (auth.ts). */
  readonly cluster: Cluster;
}

export interface ResolveInput {
  readonly kubeconfig: string | null;
  readonly context: string | null;
}

/** Environment variables read: KUBECONFIG, KUBERNETES_SERVICE_HOST/PORT, HOME. */
export type ResolveEnv = Readonly<Record<string, string | undefined>>;

interface RawUserInfo {
  tokenFile: string | null;
  dir: string;
}

interface Loaded {
  clusters: Cluster[];
  users: User[];
  contexts: Context[];
  current: string;
}

type Raw = Record<string, unknown>;
const rec = (x: unknown): Raw | null => (typeof x === "object" && x !== null && !Array.isArray(x) ? (x as Raw) : null);
const optString = (x: unknown): string | undefined => (typeof x === "string" ? x : undefined);
const entries = (x: unknown): Raw[] => (Array.isArray(x) ? x.map((e) => rec(e) ?? {}) : []);
/** Relative certificate, key and CA paths resolve against the file's directory (kubectl rule). */
const absolute = (dir: string, file: string | undefined): string | undefined => (file && !isAbsolute(file) ? join(dir, file) : file);

/**
 * Parse one file, with client-node's mapping and its error messages for missing names.
 * `token-file` is resolved against the file's directory and re-read periodically (auth.ts),
 * as kubectl does, instead of being read once relative to the working directory.
 */
function loadOne(file: string): { loaded: Loaded; users: Map<string, RawUserInfo> } {
  try {
    return parseOne(file);
  } catch (err) {
    // js-yaml and the field checks below say what is wrong, not where: name the file.
    const msg = err instanceof Error ? err.message : String(err);
    throw new Error(`kubeconfig ${file}: ${msg.split("\n")[0]}`);
  }
}

function parseOne(file: string): { loaded: Loaded; users: Map<string, RawUserInfo> } {
  const doc = rec(loadYaml(readFileSync(file, "utf8"))) ?? {};
  const dir = dirname(file);
  const raw = new Map<string, RawUserInfo>();
  const clusters = entries(doc.clusters).map((e, i): Cluster => {
    const c = rec(e.cluster);
    if (!e.name) throw new Error(`clusters[${i}].name is missing`);
    if (!c) throw new Error(`clusters[${i}].cluster is missing`);
    if (!c.server) throw new Error(`clusters[${i}].cluster.server is missing`);
    return {
      name: String(e.name),
      server: String(c.server).replace(/\/$/, ""),
      caData: optString(c["certificate-authority-data"]),
      caFile: absolute(dir, optString(c["certificate-authority"])),
      skipTLSVerify: c["insecure-skip-tls-verify"] === true,
      tlsServerName: optString(c["tls-server-name"]),
      proxyUrl: optString(c["proxy-url"]),
    };
  });
  const users = entries(doc.users).map((e, i): User => {
    if (!e.name) throw new Error(`users[${i}].name is missing`);
    const name = String(e.name);
    const u = rec(e.user) ?? {};
    const tf = u["token-file"];
    if (!raw.has(name)) raw.set(name, { tokenFile: typeof tf === "string" ? (isAbsolute(tf) ? tf : join(dir, tf)) : null, dir });
    return {
      name,
      authProvider: (rec(u["auth-provider"]) ?? undefined) as User["authProvider"],
      certData: optString(u["client-certificate-data"]),
      certFile: absolute(dir, optString(u["client-certificate"])),
      exec: rec(u.exec) ?? undefined,
      keyData: optString(u["client-key-data"]),
      keyFile: absolute(dir, optString(u["client-key"])),
      token: optString(u.token) || undefined,
      password: optString(u.password),
      username: optString(u.username),
      impersonateUser: optString(u.as),
    };
  });
  const contexts = entries(doc.contexts).map((e, i): Context => {
    const c = rec(e.context);
    if (!e.name) throw new Error(`contexts[${i}].name is missing`);
    if (!c) throw new Error(`contexts[${i}].context is missing`);
    if (!c.cluster) throw new Error(`contexts[${i}].context.cluster is missing`);
    return { name: String(e.name), cluster: String(c.cluster), user: optString(c.user) || "", namespace: optString(c.namespace) || undefined };
  });
  return { loaded: { clusters, users, contexts, current: optString(doc["current-context"]) ?? "" }, users: raw };
}

function loadFiles(files: readonly string[]): { loaded: Loaded; users: Map<string, RawUserInfo> } {
  const users = new Map<string, RawUserInfo>();
  const all: Loaded = { clusters: [], users: [], contexts: [], current: "" };
  for (const f of files) {
    if (!existsSync(f)) continue; // kubectl ignores missing entries of $KUBECONFIG
    const { loaded: one, users: raw } = loadOne(f);
    all.current ||= one.current;
    for (const c of one.clusters) if (!all.clusters.some((x) => x.name === c.name)) all.clusters.push(c);
    for (const u of one.users) if (!all.users.some((x) => x.name === u.name)) all.users.push(u);
    for (const c of one.contexts) if (!all.contexts.some((x) => x.name === c.name)) all.contexts.push(c);
    for (const [name, info] of raw) if (!users.has(name)) users.set(name, info);
  }
  return { loaded: all, users };
}

const fileText = (path: string | undefined, b64: string | undefined): string | null =>
  path ? readFileSync(path, "utf8") : b64 ? Buffer.from(b64, "base64").toString("utf8") : null;

/** Throws an Error with a one-line reason when no usable configuration is found. */
export function resolveKubeConfig(input: ResolveInput, env: ResolveEnv = process.env, saDir = SERVICE_ACCOUNT_DIR): ResolvedKubeConfig {
  let loaded: Loaded;
  let users = new Map<string, RawUserInfo>();
  let source: string;
  const home = env.HOME || homedir();
  if (input.kubeconfig) {
    if (!existsSync(input.kubeconfig)) throw new Error(`kubeconfig ${input.kubeconfig} does not exist`);
    ({ loaded, users } = loadFiles([input.kubeconfig]));
    source = input.kubeconfig;
  } else if (env.KUBECONFIG) {
    const files = env.KUBECONFIG.split(":").filter(Boolean);
    ({ loaded, users } = loadFiles(files));
    source = files.join(":");
  } else if (env.KUBERNETES_SERVICE_HOST && existsSync(join(saDir, "token"))) {
    const host = env.KUBERNETES_SERVICE_HOST.includes(":") ? `[${env.KUBERNETES_SERVICE_HOST}]` : env.KUBERNETES_SERVICE_HOST;
    const nsFile = join(saDir, "namespace");
    loaded = {
      clusters: [{ name: "in-cluster", server: `https://${host}:${env.KUBERNETES_SERVICE_PORT ?? "443"}`, caFile: join(saDir, "ca.crt"), skipTLSVerify: false }],
      users: [{ name: "in-cluster" }],
      contexts: [{ name: "in-cluster", cluster: "in-cluster", user: "in-cluster", ...(existsSync(nsFile) ? { namespace: readFileSync(nsFile, "utf8").trim() } : {}) }],
      current: "in-cluster",
    };
    // The projected service-account token rotates: re-read it like a token-file.
    users.set("in-cluster", { tokenFile: join(saDir, "token"), dir: saDir });
    source = "in-cluster";
  } else {
    const f = join(home, ".kube", "config");
    if (!existsSync(f)) throw new Error("no cluster to watch: pass --kubeconfig PATH, set $KUBECONFIG, run in a pod, or create ~/.kube/config; or serve YAML files with no cluster: --manifests PATH");
    ({ loaded, users } = loadFiles([f]));
    source = f;
  }
  const context = (name: string) => loaded.contexts.find((c) => c.name === name);
  if (input.context && !context(input.context)) throw new Error(`context ${JSON.stringify(input.context)} not found in ${source}`);
  const ctx = context(input.context || loaded.current);
  if (!ctx) {
    const known = loaded.contexts.map((c) => c.name);
    const list = known.length === 0 ? "it defines no contexts" : `its contexts: ${known.slice(0, 10).join(", ")}${known.length > 10 ? ", …" : ""}`;
    if (loaded.current) throw new Error(`kubeconfig ${source}: current-context ${JSON.stringify(loaded.current)} names no context (${list}); pass --context`);
    throw new Error(`kubeconfig ${source} has no current-context (${list}); pass --context`);
  }
  const cluster = loaded.clusters.find((c) => c.name === ctx.cluster);
  if (!cluster?.server) throw new Error(`kubeconfig ${source}: context ${ctx.name} names cluster ${JSON.stringify(ctx.cluster)}, which has no server`);
  const user = loaded.users.find((u) => u.name === ctx.user) ?? { name: ctx.user };
  const raw = users.get(user.name);
  return {
    source,
    contextName: ctx.name,
    namespace: ctx.namespace ?? null,
    server: cluster.server.replace(/\/+$/, ""),
    ca: fileText(cluster.caFile, cluster.caData),
    insecureSkipTLSVerify: cluster.skipTLSVerify === true,
    tlsServerName: cluster.tlsServerName ?? null,
    proxyUrl: cluster.proxyUrl ?? null,
    user,
    tokenFile: raw?.tokenFile ?? null,
    userDir: raw?.dir ?? process.cwd(),
    cluster,
  };
}
