// Find the cluster and credentials the way kubectl does: --kubeconfig, else $KUBECONFIG
// (several files joined by ':'; for duplicate names the first file wins, as
// clientcmd's merge rules say), else the in-cluster service account, else ~/.kube/config.
// @kubernetes/client-node parses the files (and owns auth-provider refresh); we read the few
// fields it does not keep (token-file, the exec command's directory) and never use its HTTP.
import { KubeConfig, type Cluster, type Context, type User } from "@kubernetes/client-node";
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, isAbsolute, join } from "node:path";
import { load as loadYaml } from "js-yaml";

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
  /** The client-node object, for auth-provider (OIDC, ...) header refresh. */
  readonly kc: KubeConfig;
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

/**
 * Parse one file. `token-file` is taken out before client-node sees it: client-node reads it
 * once, relative to the working directory, while kubectl resolves it against the file's
 * directory and we re-read it periodically (auth.ts).
 */
function loadOne(file: string): { kc: KubeConfig; users: Map<string, RawUserInfo> } {
  const out = new Map<string, RawUserInfo>();
  const doc = loadYaml(readFileSync(file, "utf8")) as { users?: { name?: unknown; user?: Record<string, unknown> }[] } | null;
  const dir = dirname(file);
  for (const u of doc?.users ?? []) {
    if (typeof u?.name !== "string" || out.has(u.name)) continue;
    const tf = u.user?.["token-file"];
    if (u.user) delete u.user["token-file"];
    out.set(u.name, { tokenFile: typeof tf === "string" ? (isAbsolute(tf) ? tf : join(dir, tf)) : null, dir });
  }
  const kc = new KubeConfig();
  kc.loadFromString(JSON.stringify(doc ?? {})); // JSON is YAML
  kc.makePathsAbsolute(dir); // certificate-authority, client-certificate, client-key: relative to the file
  return { kc, users: out };
}

function loadFiles(files: readonly string[]): { kc: KubeConfig; users: Map<string, RawUserInfo> } {
  const kc = new KubeConfig();
  const users = new Map<string, RawUserInfo>();
  const clusters: Cluster[] = [];
  const us: User[] = [];
  const contexts: Context[] = [];
  let current = "";
  for (const f of files) {
    if (!existsSync(f)) continue; // kubectl ignores missing entries of $KUBECONFIG
    const { kc: one, users: raw } = loadOne(f);
    current ||= one.currentContext ?? "";
    for (const c of one.clusters) if (!clusters.some((x) => x.name === c.name)) clusters.push(c);
    for (const u of one.users) if (!us.some((x) => x.name === u.name)) us.push(u);
    for (const c of one.contexts) if (!contexts.some((x) => x.name === c.name)) contexts.push(c);
    for (const [name, info] of raw) if (!users.has(name)) users.set(name, info);
  }
  kc.loadFromOptions({ clusters, users: us, contexts, currentContext: current });
  return { kc, users };
}

const fileText = (path: string | undefined, b64: string | undefined): string | null =>
  path ? readFileSync(path, "utf8") : b64 ? Buffer.from(b64, "base64").toString("utf8") : null;

/** Throws an Error with a one-line reason when no usable configuration is found. */
export function resolveKubeConfig(input: ResolveInput, env: ResolveEnv = process.env, saDir = SERVICE_ACCOUNT_DIR): ResolvedKubeConfig {
  let kc: KubeConfig;
  let users = new Map<string, RawUserInfo>();
  let source: string;
  const home = env.HOME || homedir();
  if (input.kubeconfig) {
    if (!existsSync(input.kubeconfig)) throw new Error(`kubeconfig ${input.kubeconfig} does not exist`);
    ({ kc, users } = loadFiles([input.kubeconfig]));
    source = input.kubeconfig;
  } else if (env.KUBECONFIG) {
    const files = env.KUBECONFIG.split(":").filter(Boolean);
    ({ kc, users } = loadFiles(files));
    source = files.join(":");
  } else if (env.KUBERNETES_SERVICE_HOST && existsSync(join(saDir, "token"))) {
    kc = new KubeConfig();
    const host = env.KUBERNETES_SERVICE_HOST.includes(":") ? `[${env.KUBERNETES_SERVICE_HOST}]` : env.KUBERNETES_SERVICE_HOST;
    const nsFile = join(saDir, "namespace");
    kc.loadFromOptions({
      clusters: [{ name: "in-cluster", server: `https://${host}:${env.KUBERNETES_SERVICE_PORT ?? "443"}`, caFile: join(saDir, "ca.crt"), skipTLSVerify: false }],
      users: [{ name: "in-cluster" }],
      contexts: [{ name: "in-cluster", cluster: "in-cluster", user: "in-cluster", ...(existsSync(nsFile) ? { namespace: readFileSync(nsFile, "utf8").trim() } : {}) }],
      currentContext: "in-cluster",
    });
    // The projected service-account token rotates: re-read it like a token-file.
    users.set("in-cluster", { tokenFile: join(saDir, "token"), dir: saDir });
    source = "in-cluster";
  } else {
    const f = join(home, ".kube", "config");
    if (!existsSync(f)) throw new Error("no kubeconfig: pass --kubeconfig, set $KUBECONFIG, run in a pod, or create ~/.kube/config");
    ({ kc, users } = loadFiles([f]));
    source = f;
  }
  if (input.context) {
    if (!kc.getContextObject(input.context)) throw new Error(`context ${JSON.stringify(input.context)} not found in ${source}`);
    kc.setCurrentContext(input.context);
  }
  const ctx = kc.getContextObject(kc.getCurrentContext());
  if (!ctx) throw new Error(`kubeconfig ${source} has no current context (pass --context)`);
  const cluster = kc.getCluster(ctx.cluster);
  if (!cluster?.server) throw new Error(`context ${ctx.name} names cluster ${JSON.stringify(ctx.cluster)}, which has no server`);
  const user = kc.getUser(ctx.user) ?? { name: ctx.user };
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
    kc,
  };
}
