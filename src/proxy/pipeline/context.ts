// The one request context of the pipeline (docs/design.md, "One request"): the steps in this
// folder read and fill one Exchange per request, and the route's policies see the same object
// as their PolicyFlow, so nothing a stage changes is copied back. One object per request, its
// behaviour (finish, Bun's timer) on the prototype, so the bookkeeping makes no closure per
// request. Plain class fields: the same object built by assignments in the constructor was
// not faster (0.989× in a paired run, bench/results/pipeline-vs-main.md).
import type { Config } from "../../config/types.ts";
import type { Logger } from "../../log/logger.ts";
import type { Backend, Match, Route, RouteErrorPages, RouteTable } from "../../table/types.ts";
import type { AccessRecord, ProxyDeps, RequestServer } from "../types.ts";
import type { Balancer, EndpointChoice } from "../../kinds/types.ts";
import type { ExternalResolver } from "../upstream/external.ts";
import { upstreamGate, type SlotHolder } from "../upstream/pool-gate.ts";
import type { RequestControl } from "../upstream/forward-types.ts";
import type { Watchdog } from "../upstream/watchdog.ts";
import type { ConnectionTls, PolicyFlow } from "../../kinds/types.ts";
import type { PolicyRunner } from "../policies/run.ts";
import type { BodyBudget } from "./buffer.ts";
import type { RequestFields } from "./validate.ts";
import type { Inflight } from "./inflight.ts";
import { IDLE_TIMEOUT_S } from "./keepalive.ts";
import { endLast } from "../../log/upstream-tries.ts";

/** What the handler holds for all its requests (one per listener). */
export interface Pipeline {
  readonly deps: ProxyDeps;
  readonly config: Config;
  readonly log: Logger;
  /** The connection's scheme (the listener's). */
  readonly scheme: "http" | "https";
  readonly balancer: Balancer;
  readonly external: ExternalResolver | undefined;
  readonly bodyBudget: BodyBudget;
  readonly isTrusted: (ip: string) => boolean;
  /** Portico's own answers carry nginx's pages under --ingress-nginx-compat (status-page.ts). */
  readonly compat: boolean;
  readonly inflight: Inflight;
  /** Aborted at the end of the shutdown grace period: every upstream request still running stops. */
  readonly hardStop: AbortController;
  readonly runPolicies: PolicyRunner;
  /**
   * --access-log-template is set and the access log is on: only then does a request keep what
   * the template reads (its view, every upstream attempt, its answer's head; log/template.ts).
   */
  readonly logTemplate: boolean;
  /** With it, the format names an $upstream_* variable: each attempt is kept (log/upstream-tries.ts). */
  readonly logTries: boolean;
  /** With it, the format names $bytes_sent: the answer's head is counted (handler.ts). */
  readonly logHead: boolean;
  /** With it, the format names $remote_port: finish() reads the client's port. */
  readonly logPort: boolean;
}

/** The statuses nginx's add_header (without `always`) applies to. */
const ADD_HEADER_STATUSES = new Set([200, 201, 204, 206, 301, 302, 303, 304, 307, 308]);

export class Exchange implements PolicyFlow, SlotHolder {
  readonly t0 = performance.now();
  readonly rec: AccessRecord;
  /** responseHeaders, once something asks for them. */
  private own: Record<string, string> | null = null;
  /** Portico's own answers close the connection (draining when the request came, or a request body). */
  private readonly closes: boolean;
  /** Content-Length as received, or null. */
  readonly cl: string | null;
  /** Transfer-Encoding as received, or null (validate.ts checks both). */
  readonly te: string | null;
  readonly hasBody: boolean;
  done = false;
  guard: Watchdog | null = null;
  /** Bun's request timer is switched off (timerOffNow). */
  timerOff = false;
  /** The route's error pages while they may still answer (armed by choose.ts; one use: error-pages.ts). */
  pages: RouteErrorPages | null = null;

  // admit
  hostname = "";
  path = "";
  query = "";
  host = "";
  port: string | null = null;
  /** What the request's one field pass found (validate.ts readFields), read by admit. */
  readonly badField: boolean;
  readonly filtered: readonly string[];
  /** The header lines' bytes and the longest of them (RequestFields), for admit's head limit. */
  readonly headBytes: number;
  readonly longestField: number;
  /** Host and Connection as received, or null. */
  readonly hostField: string | null;
  readonly connectionField: string | null;
  // route
  /** The table route() read (ProxyDeps.table: once per request); the handler's add-headers read it too. */
  table: RouteTable | null = null;
  route!: Route;
  match!: Match;
  /** The peer is a trusted proxy believed on X-Forwarded-Proto, -Host and -Port too (--trusted-proxy-headers=all). */
  trusted = false;
  /** The peer's X-Forwarded-For is appended to upstream (trusted for the address, --compute-full-forwarded-for). */
  appendForwardedFor = false;
  clientIp = "";
  /** The client's scheme (X-Forwarded-Proto only from a trusted proxy); the listener's is `p.scheme`. */
  scheme: "http" | "https";
  /**
   * The port a PROXY protocol header named (--use-proxy-protocol), sent as X-Forwarded-Port
   * unless a trusted proxy sent one; null without such a header.
   */
  proxyPort: string | null = null;
  hsts: string | null = null;
  connectTimeoutMs = 0;
  responseTimeoutMs = 0;
  // policies (PolicyFlow) and the backend choice
  pathAndQuery = "";
  backend!: Backend;
  upstreamResponseHeaders: Readonly<Record<string, string>> | null = null;
  responseHeaderEdits: PolicyFlow["responseHeaderEdits"] = null;
  responseRewrite: PolicyFlow["responseRewrite"] = null;
  upstreamRequestHeaders: Readonly<Record<string, string | null>> | null = null;
  setCookies: PolicyFlow["setCookies"] = null;
  removeHeaders: string[] | null = null;
  upstreamHost: string | null = null;
  choice: EndpointChoice | null = null;
  release: (() => void) | null = null;
  bodyTap: PolicyFlow["bodyTap"] = null;
  /** The upstream request's abort switch and its control (forward.ts arm), once made. */
  abort: AbortController | null = null;
  control: RequestControl | null = null;
  /** Its slot of Bun's keep-alive pool (upstream/pool-gate.ts), held until finish(); -1: none. */
  slot = -1;
  /** The client's port ($remote_port), read in finish() only while a template is set (RequestView). */
  remotePort: number | null = null;
  /** The head of the answer handed to Bun, in bytes, counted only while a template is set ($bytes_sent; handler.ts); -1: none. */
  sentHeadBytes = -1;
  /** The answer's body is streamed (Bun frames it chunked): upstream/respond.ts relayStream. */
  streamed = false;
  /** Fields the no-endpoints fallback adds to the upstream request (error-pages.ts), or null. */
  extra: Readonly<Record<string, string>> | null = null;

  constructor(
    readonly p: Pipeline,
    readonly req: Request,
    readonly server: RequestServer,
    readonly peer: string,
    readonly requestId: string,
    fields: Readonly<RequestFields>,
  ) {
    this.scheme = p.scheme;
    this.rec = {
      time: Date.now(), requestId, client: peer, method: req.method, host: "", path: "", status: 0,
      bytesIn: 0, bytesOut: 0, durationMs: 0, upstream: null, upstreamStatus: null, upstreamMs: null,
      ingress: null, service: null, websocket: false, error: null, scheme: p.scheme,
      protocol: server.transport ?? "h1", grpcStatus: null, logged: true, view: null,
      // Each upstream attempt, kept only for --access-log-template (log/upstream-tries.ts).
      tries: p.logTries ? [] : null,
    };
    // RFC 9112 §6.3: an HTTP/1.1 request has a body only when Content-Length or
    // Transfer-Encoding says so (touching req.body would also make Bun build a stream for every
    // GET). An HTTP/2 or HTTP/3 request may carry DATA without either (RFC 9113 §8.1.1), and
    // Bun.serve adds neither, so a request of a method that can have content and declares no
    // length asks Bun whether a body stream exists: on HTTP/1.1 Bun answers null (measured).
    const { cl, te } = fields;
    this.badField = fields.badField;
    this.filtered = fields.filtered;
    this.headBytes = fields.headBytes;
    this.longestField = fields.longestField;
    this.hostField = fields.hostField;
    this.connectionField = fields.connectionField;
    this.cl = cl;
    this.te = te;
    this.hasBody = (cl !== null && cl !== "0") || te !== null || (cl === null && mayCarryContent(req.method) && req.body !== null);
    // Such an answer to a request with a body ends the connection, like the answers that always
    // do (errors.ts): the body may be unread, and what follows it on the connection is not known
    // to start a new request.
    this.closes = p.inflight.draining || this.hasBody;
  }

  /**
   * Headers of every answer Portico gives itself (errors, redirects, policy answers), never of
   * a relayed one (PolicyFlow.responseHeaders). Made on first use: a relayed answer never
   * reads them, and one object fewer per plain GET (bench/allocations.ts).
   */
  get responseHeaders(): Record<string, string> {
    if (this.own !== null) return this.own;
    const h: Record<string, string> = { "x-request-id": this.requestId };
    if (this.closes) h.connection = "close";
    return (this.own = h);
  }

  get config(): Config {
    return this.p.config;
  }
  get log(): Logger {
    return this.p.log;
  }
  get connectionScheme(): "http" | "https" {
    return this.p.scheme;
  }
  get underscores(): boolean {
    return this.p.config.enableUnderscoresInHeaders;
  }
  get maxResponseHeaderBytes(): number {
    return this.p.config.maxResponseHeaderSize;
  }
  get localPort(): number {
    const c = this.p.config;
    return this.server.port ?? (this.p.scheme === "https" ? c.httpsPort : c.httpPort);
  }
  // The views --access-log-template reads after the response (log/access.ts RequestView): read
  // only when a template names them, so they cost nothing on the request path.
  get proxySource(): { readonly address: string; readonly port: number } | null {
    return this.server.proxySource ?? null;
  }
  get serverAddr(): string | null {
    // Bun.serve does not tell a request's local address; a --bind address is it, a wildcard is not.
    const b = this.p.config.bind;
    return b === "0.0.0.0" || b === "::" || b === "localhost" ? null : b;
  }
  get locationPath(): string | null {
    return (this.route as Route | undefined)?.path ?? null;
  }
  tls(): ConnectionTls | null {
    return this.p.scheme === "https" ? this.server.tlsOf?.(this.req) ?? null : null;
  }

  /** Ends the request's bookkeeping once, however it ends: one access record. */
  finish(status: number, error: string | null): void {
    if (this.done) return;
    this.done = true;
    this.p.inflight.leave();
    this.guard?.stop();
    if (this.release !== null) this.release();
    if (this.slot >= 0) upstreamGate.release(this);
    const rec = this.rec;
    rec.status = status;
    rec.error = error;
    const now = performance.now();
    rec.durationMs = now - this.t0;
    // $upstream_response_time of the attempt that answered ends with its body, as nginx's
    // ngx_http_upstream_finalize_request sets it.
    endLast(rec.tries, now);
    // --access-log-template reads the request when the line is formatted (log/template.ts).
    // The client's port is read now, while the connection is surely still the request's.
    if (this.p.logTemplate) {
      rec.view = this;
      if (this.p.logPort) {
        const ip = this.server.requestIP(this.req) as { port?: number } | null;
        this.remotePort = typeof ip?.port === "number" ? ip.port : null;
      }
    }
    try {
      this.p.deps.hooks?.onRequestDone?.(rec);
    } catch {}
  }

  // Bun's per-request timer: once switched off it stays off for the connection's later
  // keep-alive idling too (measured), so it is set back to IDLE_TIMEOUT_S just before the
  // response ends; Bun ignores the call once the response is complete, hence "before".
  timerOffNow(): void {
    this.timerOff = true;
    this.server.timeout(this.req, 0);
  }
  timerBack(): void {
    if (this.timerOff) this.server.timeout(this.req, IDLE_TIMEOUT_S);
  }

  /** A policy's Set-Cookie lines (PolicyFlow.setCookies) on an answer with this status. */
  addCookies(h: Headers, status: number): void {
    const c = this.setCookies;
    if (c === null || (!c.always && !ADD_HEADER_STATUSES.has(status))) return;
    for (const val of c.values) h.append("set-cookie", val);
  }
}

/** Bun.serve gives these no body stream (docs/design.md, "Bun facts measured here"). */
function mayCarryContent(method: string): boolean {
  return method !== "GET" && method !== "HEAD" && method !== "TRACE";
}
