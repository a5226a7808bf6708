// HTTP/2 client sessions to gRPC upstreams, one per endpoint, shared by every call to it: an
// HTTP/2 connection carries many concurrent streams (RFC 9113 §5), so unlike HTTP/1.1 there
// is no pool of connections to size. A session is dropped from the pool when it closes,
// errors or receives GOAWAY (new calls then open a new one), and closed after an idle period
// with no stream open, so connections to pods that left the table do not stay forever.
import http2, { type ClientHttp2Session } from "node:http2";
import { ProxyError } from "../../http/errors.ts";
import type { UpstreamTls } from "../../table/types.ts";
import { upstreamTlsH2Options } from "./upstream-tls.ts";

export interface H2Target {
  readonly tls: boolean;
  /** ip:port to connect to. */
  readonly authority: string;
  /** SNI for TLS upstreams without proxy-ssl-* (then the pods are not verified: see forward.ts). */
  readonly serverName: string;
  /** proxy-ssl-* (docs/design.md, "TLS to the pods"): its settings replace the above. */
  readonly upstreamTls?: UpstreamTls | null | undefined;
}

// Sessions made with proxy-ssl-* settings are kept apart per settings object: one route's
// client certificate is never used for another's calls.
const tlsIds = new WeakMap<UpstreamTls, number>();
let nextTlsId = 1;
function tlsIdOf(t: UpstreamTls): number {
  let id = tlsIds.get(t);
  if (id === undefined) tlsIds.set(t, (id = nextTlsId++));
  return id;
}

export interface H2Pool {
  /** A ready session to `t`, connecting (at most once at a time per target) when needed. */
  session(t: H2Target, connectTimeoutMs: number): Promise<ClientHttp2Session>;
  /** Streams opened on and ended on a session: an idle session is closed, a busy one not. */
  opened(s: ClientHttp2Session): void;
  closed(s: ClientHttp2Session): void;
  readonly size: number;
  closeAll(): void;
}

/** An upstream session with no stream for this long is closed (the backend keeps its own limit too). */
export const UPSTREAM_IDLE_MS = 60_000;

export function createH2Pool(idleMs = UPSTREAM_IDLE_MS): H2Pool {
  const ready = new Map<string, ClientHttp2Session>();
  const connecting = new Map<string, Promise<ClientHttp2Session>>();
  const streams = new WeakMap<ClientHttp2Session, number>();

  const keyOf = (t: H2Target) => `${t.tls ? "s" : "c"}|${t.authority}|${t.serverName}${t.tls && t.upstreamTls ? `|${tlsIdOf(t.upstreamTls)}` : ""}`;

  function forget(key: string, s: ClientHttp2Session): void {
    if (ready.get(key) === s) ready.delete(key);
  }

  function connect(key: string, t: H2Target, timeoutMs: number): Promise<ClientHttp2Session> {
    return new Promise<ClientHttp2Session>((resolve, reject) => {
      let s: ClientHttp2Session;
      try {
        s = !t.tls
          ? http2.connect(`http://${t.authority}`)
          : t.upstreamTls
            ? http2.connect(`https://${t.authority}`, { ...upstreamTlsH2Options(t.upstreamTls), ALPNProtocols: ["h2"] })
            : http2.connect(`https://${t.authority}`, { servername: t.serverName, rejectUnauthorized: false, ALPNProtocols: ["h2"] });
      } catch (e) {
        // node:tls refuses some options before connecting (a cipher list it cannot use).
        const code = (e as { code?: unknown } | null)?.code;
        reject(new ProxyError("UpstreamConnect", `${typeof code === "string" ? code : ""} ${String((e as Error)?.message ?? e)}`.trim()));
        return;
      }
      let settled = false;
      const fail = (err: unknown) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        s.destroy();
        const code = (err as { code?: unknown } | null)?.code;
        reject(new ProxyError("UpstreamConnect", `${typeof code === "string" ? code : ""} ${String((err as Error)?.message ?? err)}`.trim()));
      };
      const timer = setTimeout(() => fail(new Error("connect timeout")), timeoutMs);
      // An 'error' without a listener would throw out of the event loop.
      s.on("error", (e) => fail(e));
      s.once("connect", () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        ready.set(key, s);
        resolve(s);
      });
      s.once("close", () => forget(key, s));
      // RFC 9113 §6.8: no new streams on a session that received GOAWAY.
      s.once("goaway", () => forget(key, s));
      s.setTimeout(idleMs, () => {
        if ((streams.get(s) ?? 0) === 0) {
          forget(key, s);
          s.close();
        }
      });
    });
  }

  return {
    async session(t, timeoutMs) {
      const key = keyOf(t);
      const s = ready.get(key);
      if (s !== undefined && !s.closed && !s.destroyed) return s;
      let p = connecting.get(key);
      if (p === undefined) {
        p = connect(key, t, timeoutMs).finally(() => connecting.delete(key));
        connecting.set(key, p);
      }
      return await p;
    },
    opened(s) {
      streams.set(s, (streams.get(s) ?? 0) + 1);
    },
    closed(s) {
      streams.set(s, Math.max(0, (streams.get(s) ?? 1) - 1));
    },
    get size() {
      return ready.size;
    },
    closeAll() {
      for (const s of ready.values()) s.close();
      ready.clear();
    },
  };
}

let shared: H2Pool | null = null;

/** The process-wide pool (every listener's handler shares the upstream sessions). */
export function sharedH2Pool(): H2Pool {
  shared ??= createH2Pool();
  return shared;
}
