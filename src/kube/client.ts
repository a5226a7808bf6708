// The Kubernetes API client: kubeconfig resolution and credentials from kubeconfig.ts /
// auth.ts, HTTP with Bun's fetch. Under Bun, @kubernetes/client-node drops its TLS
// options (Bun replaces undici), so the CA, client certificate and skip-verify go to
// `fetch(url, { tls })` here, and plain http:// servers (kubectl proxy) are used as is.
import type { Config } from "../config/types.ts";
import { createAuthProvider, DEFAULT_AUTH_TIMINGS, type AuthProvider, type AuthTimings } from "./auth.ts";
import { resolveKubeConfig, type ResolveEnv, type ResolvedKubeConfig } from "./kubeconfig.ts";
import type { Logger } from "../log/logger.ts";

export interface RequestOptions {
  body?: unknown;
  /** Default application/json when body is set; PATCH callers pass application/merge-patch+json. */
  contentType?: string;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

export interface KubeClient {
  readonly server: string;
  readonly namespace: string | null;
  readonly authKind: string;
  /** One request with fresh credentials. Never throws for HTTP statuses; network errors reject. */
  request(method: string, path: string, opts?: RequestOptions): Promise<Response>;
  /** A GET whose body is read as a stream (watch); same as request("GET", ...). */
  stream(path: string, opts?: RequestOptions): Promise<Response>;
}

/** An API answer that is not 2xx, with the Status message when the body had one. */
export class KubeApiError extends Error {
  constructor(
    readonly status: number,
    readonly method: string,
    readonly path: string,
    readonly server: string,
    readonly reason: string,
    detail: string,
  ) {
    super(`kubernetes API ${server} answered ${status}${reason ? ` ${reason}` : ""} to ${method} ${path}${detail ? `: ${detail}` : ""}`);
  }
}

// Bun's fetch errors read like a browser's ("ECONNREFUSED: Unable to connect. Is the computer
// able to access the url?") and do not name the server: say it in our words, code kept last.
const NETWORK_CAUSES: Readonly<Record<string, string>> = {
  ECONNREFUSED: "connection refused (nothing listens there, or the server is down)",
  ConnectionRefused: "connection refused (nothing listens there, or the server is down)",
  ENOTFOUND: "its host name does not resolve",
  EAI_AGAIN: "its host name could not be resolved (DNS unavailable)",
  ETIMEDOUT: "the connection timed out",
  ConnectionTimeout: "the connection timed out",
  EHOSTUNREACH: "no route to the host",
  ENETUNREACH: "the network is unreachable",
  ECONNRESET: "the connection was reset",
  ConnectionClosed: "the connection was closed before an answer",
  EPROTO: "the TLS handshake failed (is the server URL's scheme right?)",
  DEPTH_ZERO_SELF_SIGNED_CERT: "its certificate is self-signed and not trusted (certificate-authority in the kubeconfig)",
  SELF_SIGNED_CERT_IN_CHAIN: "its certificate chain is not trusted (certificate-authority in the kubeconfig)",
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: "its certificate is not trusted (certificate-authority in the kubeconfig)",
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: "its certificate is not trusted (certificate-authority in the kubeconfig)",
  CERT_HAS_EXPIRED: "its certificate has expired",
  ERR_TLS_CERT_ALTNAME_INVALID: "its certificate does not name the host (tls-server-name in the kubeconfig)",
};

/** The API server could not be reached at all (no HTTP answer): which server, and why. */
export class KubeUnreachableError extends Error {
  readonly code: string;
  constructor(
    readonly server: string,
    cause: unknown,
  ) {
    const code = String((cause as { code?: unknown } | null)?.code ?? "");
    const raw = cause instanceof Error ? cause.message : String(cause);
    const why = NETWORK_CAUSES[code] ?? raw.split("\n")[0]!.slice(0, 200);
    super(`cannot reach the Kubernetes API server ${server}: ${why}${code && !why.includes(code) ? ` (${code})` : ""}`);
    this.name = "KubeUnreachableError";
    this.code = code;
  }
}

/** Read an error body (a Status object per the API conventions) into a KubeApiError. */
export async function apiError(res: Response, method: string, path: string, server: string): Promise<KubeApiError> {
  let reason = "";
  let message = "";
  try {
    const s = (await res.json()) as { reason?: unknown; message?: unknown };
    if (typeof s.reason === "string") reason = s.reason;
    if (typeof s.message === "string") message = s.message.slice(0, 300);
  } catch {
    // not a Status body
  }
  return new KubeApiError(res.status, method, path, server, reason, message);
}

export interface ClientOptions {
  env?: ResolveEnv;
  serviceAccountDir?: string;
  authTimings?: AuthTimings;
}

export function createKubeClient(config: Pick<Config, "kubeconfig" | "context">, log: Logger, opts: ClientOptions = {}): KubeClient {
  const rc = resolveKubeConfig(config, opts.env ?? process.env, opts.serviceAccountDir);
  return createKubeClientFrom(rc, log, opts.authTimings ?? DEFAULT_AUTH_TIMINGS);
}

export function createKubeClientFrom(rc: ResolvedKubeConfig, log: Logger, timings: AuthTimings = DEFAULT_AUTH_TIMINGS): KubeClient {
  const auth: AuthProvider = createAuthProvider(rc, timings);
  const server = rc.server;
  const secure = server.startsWith("https:");
  if (!secure && !server.startsWith("http:")) throw new Error(`cluster server ${server} is not an http(s) URL`);
  log.info("kubernetes API client", { server, context: rc.contextName, source: rc.source, auth: auth.kind });

  async function once(method: string, path: string, o: RequestOptions): Promise<Response> {
    const creds = await auth.get();
    const headers: Record<string, string> = { Accept: "application/json", "User-Agent": "portico", ...creds.headers, ...o.headers };
    let body: string | undefined;
    if (o.body !== undefined) {
      body = typeof o.body === "string" ? o.body : JSON.stringify(o.body);
      headers["Content-Type"] = o.contentType ?? "application/json";
    }
    const tls = secure
      ? {
          ...(rc.ca ? { ca: rc.ca } : {}),
          ...(creds.cert && creds.key ? { cert: creds.cert, key: creds.key } : {}),
          ...(rc.tlsServerName ? { serverName: rc.tlsServerName } : {}),
          rejectUnauthorized: !rc.insecureSkipTLSVerify,
        }
      : undefined;
    try {
      return await fetch(server + path, { method, headers, body, signal: o.signal ?? null, redirect: "manual", ...(tls ? { tls } : {}), ...(rc.proxyUrl ? { proxy: rc.proxyUrl } : {}) });
    } catch (err) {
      // An abort is the caller's own doing (stop, deadline): it stays what it was.
      if (o.signal?.aborted) throw err;
      throw new KubeUnreachableError(server, err);
    }
  }

  async function request(method: string, path: string, o: RequestOptions = {}): Promise<Response> {
    let res = await once(method, path, o);
    if (res.status === 401 && (auth.kind === "exec" || auth.kind === "token-file")) {
      // A rotated credential: fetch a fresh one and retry once (client-go does the same for exec).
      await res.body?.cancel();
      auth.invalidate();
      res = await once(method, path, o);
    }
    if (res.status === 401 || res.status === 403) {
      log.error(`kubernetes API ${server} refused ${method} ${path}: ${res.status} ${res.status === 401 ? "Unauthorized (check the credentials of the kubeconfig context)" : "Forbidden (check RBAC: k8s/rbac.yaml)"}`, {
        server,
        path,
        status: res.status,
        context: rc.contextName,
        auth: auth.kind,
      });
    }
    return res;
  }

  return {
    server,
    namespace: rc.namespace,
    authKind: auth.kind,
    request,
    stream: (path, o) => request("GET", path, o),
  };
}
