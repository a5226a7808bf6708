// Credentials for each request: static token, token file (re-read every minute, as client-go
// does for rotating projected tokens), client certificate, exec plugin (ExecCredential,
// refreshed before status.expirationTimestamp), basic auth, and auth-provider (OIDC & co.,
// delegated to @kubernetes/client-node, loaded on first use, which refreshes expired id-tokens).
import * as v from "valibot";
import { readFileSync } from "node:fs";
import { isAbsolute, join } from "node:path";
import type { ResolvedKubeConfig } from "./kubeconfig.ts";

export interface Credentials {
  readonly headers: Record<string, string>;
  readonly cert: string | null;
  readonly key: string | null;
}

export interface AuthProvider {
  get(): Promise<Credentials>;
  /** After a 401: drop cached exec/file credentials so the next get() fetches fresh ones. */
  invalidate(): void;
  readonly kind: string;
}

export interface AuthTimings {
  readonly tokenFileRefreshMs: number;
  readonly execTimeoutMs: number;
  now(): number;
}

export const DEFAULT_AUTH_TIMINGS: AuthTimings = { tokenFileRefreshMs: 60_000, execTimeoutMs: 60_000, now: () => Date.now() };

// client.authentication.k8s.io ExecCredential (v1 and v1beta1 share these status fields).
const ExecCredentialSchema = v.looseObject({
  apiVersion: v.string(),
  kind: v.literal("ExecCredential"),
  status: v.looseObject({
    token: v.optional(v.string()),
    clientCertificateData: v.optional(v.string()),
    clientKeyData: v.optional(v.string()),
    expirationTimestamp: v.optional(v.string()),
  }),
});

interface ExecConfig {
  command: string;
  args?: string[];
  env?: { name: string; value: string }[] | null;
  apiVersion?: string;
  installHint?: string;
  provideClusterInfo?: boolean;
}

const pemOf = (path: string | undefined, data: string | undefined): string | null =>
  path ? readFileSync(path, "utf8") : data ? Buffer.from(data, "base64").toString("utf8") : null;

export function createAuthProvider(rc: ResolvedKubeConfig, t: AuthTimings = DEFAULT_AUTH_TIMINGS): AuthProvider {
  const u = rc.user;
  const staticCert = pemOf(u.certFile, u.certData);
  const staticKey = pemOf(u.keyFile, u.keyData);
  const base = (): Record<string, string> => (u.impersonateUser ? { "Impersonate-User": u.impersonateUser } : {});
  const exec = (u.exec ?? u.authProvider?.config?.exec) as ExecConfig | undefined;

  if (exec?.command) {
    let cached: { creds: Credentials; refreshAt: number } | null = null;
    let inflight: Promise<Credentials> | null = null;
    const run = async (): Promise<Credentials> => {
      // Relative commands with a slash resolve against the kubeconfig's directory (kubectl rule);
      // bare names go through PATH. The command and its args come from the user's kubeconfig.
      const cmd = exec.command.includes("/") && !isAbsolute(exec.command) ? join(rc.userDir, exec.command) : exec.command;
      const env: Record<string, string | undefined> = { ...process.env };
      for (const e of exec.env ?? []) env[e.name] = e.value;
      // client.authentication.k8s.io ExecCredential spec: never interactive (we are a daemon);
      // cluster details only when the kubeconfig asks for them (provideClusterInfo).
      const cluster = exec.provideClusterInfo
        ? { server: rc.server, "insecure-skip-tls-verify": rc.insecureSkipTLSVerify, ...(rc.ca ? { "certificate-authority-data": Buffer.from(rc.ca).toString("base64") } : {}) }
        : undefined;
      env.KUBERNETES_EXEC_INFO = JSON.stringify({ apiVersion: exec.apiVersion ?? "client.authentication.k8s.io/v1", kind: "ExecCredential", spec: { interactive: false, ...(cluster ? { cluster } : {}) } });
      let done: Promise<[string, string, number]>;
      try {
        const proc = Bun.spawn([cmd, ...(exec.args ?? [])], { env, stdin: "ignore", stdout: "pipe", stderr: "pipe", timeout: t.execTimeoutMs });
        done = Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
      } catch (e) {
        throw new Error(`exec credential plugin ${exec.command} could not start (${e instanceof Error ? e.message : String(e)})${exec.installHint ? `: ${exec.installHint.trim().split("\n")[0]}` : ""}`);
      }
      const [out, err, code] = await done;
      if (code !== 0) throw new Error(`exec credential plugin ${exec.command} exited with ${code}: ${err.trim().split("\n")[0] ?? ""}`);
      let parsed: v.InferOutput<typeof ExecCredentialSchema>;
      try {
        parsed = v.parse(ExecCredentialSchema, JSON.parse(out));
      } catch {
        throw new Error(`exec credential plugin ${exec.command} did not print an ExecCredential`);
      }
      const s = parsed.status;
      const fetched = t.now();
      const exp = s.expirationTimestamp ? Date.parse(s.expirationTimestamp) : NaN;
      // Refresh when 80% of the lifetime has passed (and never later than 10 s before expiry).
      const refreshAt = Number.isFinite(exp) ? Math.min(fetched + (exp - fetched) * 0.8, exp - 10_000) : Infinity;
      const creds: Credentials = {
        headers: { ...base(), ...(s.token ? { Authorization: `Bearer ${s.token}` } : {}) },
        cert: s.clientCertificateData ?? staticCert,
        key: s.clientKeyData ?? staticKey,
      };
      cached = { creds, refreshAt };
      return creds;
    };
    return {
      kind: "exec",
      async get() {
        if (cached && t.now() < cached.refreshAt) return cached.creds;
        inflight ??= run().finally(() => (inflight = null));
        return inflight;
      },
      invalidate: () => void (cached = null),
    };
  }

  if (rc.tokenFile) {
    const file = rc.tokenFile;
    let cached: { token: string; at: number } | null = null;
    return {
      kind: "token-file",
      async get() {
        if (!cached || t.now() - cached.at >= t.tokenFileRefreshMs) cached = { token: readFileSync(file, "utf8").trim(), at: t.now() };
        return { headers: { ...base(), Authorization: `Bearer ${cached.token}` }, cert: staticCert, key: staticKey };
      },
      invalidate: () => void (cached = null),
    };
  }

  if (u.authProvider) {
    // OIDC, GCP, Azure: client-node keeps and refreshes the token inside its KubeConfig. It is
    // loaded here, on first use, so the other credential kinds never pay for it (kubeconfig.ts).
    let kc: Promise<{ applyAuthorizationHeader(opts: { headers: Record<string, string> }): Promise<void> }> | null = null;
    const load = async () => {
      const { KubeConfig } = await import("@kubernetes/client-node");
      const k = new KubeConfig();
      k.loadFromOptions({
        clusters: [{ ...rc.cluster, name: "portico" }],
        users: [u as never],
        contexts: [{ name: "portico", cluster: "portico", user: u.name }],
        currentContext: "portico",
      });
      return k as unknown as { applyAuthorizationHeader(opts: { headers: Record<string, string> }): Promise<void> };
    };
    return {
      kind: `auth-provider:${String(u.authProvider.name)}`,
      async get() {
        const opts: { headers: Record<string, string> } = { headers: {} };
        kc ??= load().catch((e: unknown) => {
          kc = null; // try again on the next request
          throw e;
        });
        await (await kc).applyAuthorizationHeader(opts);
        return { headers: { ...base(), ...opts.headers }, cert: staticCert, key: staticKey };
      },
      invalidate() {},
    };
  }

  const headers: Record<string, string> = base();
  if (u.token) headers.Authorization = `Bearer ${u.token.trim()}`;
  else if (u.username) headers.Authorization = `Basic ${Buffer.from(`${u.username}:${u.password ?? ""}`).toString("base64")}`;
  const kind = u.token ? "token" : staticCert ? "client-certificate" : u.username ? "basic" : "anonymous";
  return { kind, get: async () => ({ headers, cert: staticCert, key: staticKey }), invalidate() {} };
}
