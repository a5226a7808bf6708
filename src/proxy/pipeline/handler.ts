// The request handler shared by the HTTP and HTTPS listeners, as one pipeline over one
// request context (context.ts Exchange; docs/design.md, "One request"):
// admit → route → policies → choose backend → forward → relay, each step a function in its
// own file here; error pages wrap forward and relay (error-pages.ts); one access record per
// request (Exchange.finish).
import type { ServerWebSocket, WebSocketHandler } from "bun";
import { createBalancer } from "../upstream/balancer.ts";
import type { Balancer } from "../../kinds/types.ts";
import { pipelineGuard } from "./body.ts";
import { createBodyBudget, type BodyBudget } from "./buffer.ts";
import { cidrMatcher } from "../../config/cidr.ts";
import { errorResponse, ProxyError, statusOf } from "../../http/errors.ts";
import type { ExternalResolver } from "../upstream/external.ts";
import { createInflight, type Inflight } from "./inflight.ts";
import { POLICY_KINDS } from "../../kinds/registry.ts";
import { createPolicyRunner } from "../policies/run.ts";
import { policyCaps } from "../policies/caps.ts";
import type { ProxyDeps, RequestServer } from "../types.ts";
import { PORTICO_SERVER } from "../../http/headers.ts";
import { answerHeadBytes, templateNeeds } from "../../log/template.ts";
import { sweep } from "../upstream/watchdog.ts";
import { isWebSocketUpgrade } from "../../http/upgrade.ts";
import { websocketHandler, type WsData } from "../upstream/websocket.ts";
import { admit, open } from "./admit.ts";
import { gone, isGone, ownAnswer } from "./answer.ts";
import { addResponseHeaders } from "./global-headers.ts";
import { BUILT_IN_STAGES } from "./checks.ts";
import { chooseBackend } from "./choose.ts";
import type { Exchange, Pipeline } from "./context.ts";
import { errorPage } from "./error-pages.ts";
import { checkBody, forwardRequest, forwardWebSocket } from "./forward.ts";
import { policies } from "./policies.ts";
import { relay } from "./relay.ts";
import type { GlobalHeaders } from "../../table/types.ts";
import { strictClientCas } from "../../table/client-certs.ts";
import { clientChainTrusted } from "../../kinds/client-cert.ts";
import type { X509Certificate } from "node:crypto";
import { route } from "./route.ts";

export interface ProxyHandler {
  fetch(req: Request, server: RequestServer): Promise<Response | undefined>;
  readonly websocket: WebSocketHandler<WsData>;
  /** H2Handler.refusesClient: a Gateway API AllowValidOnly listener's handshake check. */
  refusesClient(servername: string | null, chain: () => readonly X509Certificate[]): boolean;
  error(e: Error): Response;
  readonly inflight: Inflight;
  /** Close every relayed WebSocket (drain: 1001 Going Away, RFC 6455 §7.4.1). */
  closeWebSockets(code: number, reason: string): void;
  /** Abort every upstream request still running (end of the shutdown grace period). */
  abortInflight(): void;
  readonly balancer: Balancer;
}

/** The Server field of --server-header=portico on an answer (undefined: a WebSocket took the request). */
function namePortico(res: Response | undefined): Response | undefined {
  if (res === undefined) return res;
  try {
    res.headers.set("server", PORTICO_SERVER);
  } catch {
    // Headers the Fetch standard makes immutable (Response.redirect's, Response.error's); Bun
    // 1.4.5 lets both be set, so this copy is only the fallback should that change.
    const headers = new Headers(res.headers);
    headers.set("server", PORTICO_SERVER);
    return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
  }
  return res;
}

/**
 * add-headers onto the answer once it is ready. A function of its own: a closure in fetch
 * itself would make JSC give every call of fetch a scope object for the variables it captures,
 * add-headers set or not (bench/allocations.ts).
 */
function withAddHeaders(x: Exchange, global: GlobalHeaders, done: Promise<Response | undefined>): Promise<Response | undefined> {
  return done.then((res) => addResponseHeaders(x, global, res));
}

/** Portico's own answer for `e`, or the route's error page instead once armed (choose.ts). */
function fail(x: Exchange, e: ProxyError): Response | Promise<Response> {
  return errorPage(x, statusOf(e.code), e.code) ?? ownAnswer(x, e);
}

/** The answer as Bun is handed it: add-headers and --server-header=portico applied. */
function finalAnswer(x: Exchange, done: Promise<Response | undefined>): Promise<Response | undefined> {
  const { config } = x.p;
  const global = (x.table ?? x.p.deps.table()).globalHeaders;
  if (global == null || !(global.response?.length > 0)) return config.serverHeader === "portico" ? done.then(namePortico) : done;
  const added = withAddHeaders(x, global, done);
  return config.serverHeader === "portico" ? added.then(namePortico) : added;
}

/** The answer's head counted for $bytes_sent now: once Bun has it, its fields are gone (measured). */
function keepAnswer(x: Exchange, res: Response | undefined): Response | undefined {
  if (res !== undefined) x.sentHeadBytes = answerHeadBytes(res, x.streamed, x.rec.bytesOut);
  return res;
}

/**
 * keepAnswer once `out` settles. Its own function: an arrow over `x` written in the handler's
 * fetch would make JSC build a scope object on every request, template or not (docs/design.md,
 * "Performance notes": the second pass).
 */
function keptAnswer(x: Exchange, out: Promise<Response | undefined>): Promise<Response | undefined> {
  return out.then((res) => keepAnswer(x, res));
}

/** The pipeline, in order; a step that ends the request returns its answer. */
async function handle(x: Exchange): Promise<Response | undefined> {
  const { req } = x;
  try {
    let err = admit(x) ?? route(x);
    if (err !== null) return fail(x, err);
    let answer = policies(x);
    if (answer instanceof Promise) answer = await answer;
    if (answer !== null) return answer;
    const chosen = chooseBackend(x) ?? checkBody(x);
    if (chosen instanceof Response) return chosen;
    if (chosen !== null) return fail(x, chosen);

    // Pipelining: Bun runs the handler as soon as a request head is parsed, and when the
    // same read holds another request it closes the connection and aborts this one, whose
    // answer is then never written (measured on 1.4.5; docs/design.md, "Request framing and
    // bodies"). The rest of the read is parsed within the same I/O callback, so one turn
    // later the signal tells (some more over TLS: pipelineGuard); a request Bun has given up
    // on never reaches an upstream. The node:http2 listener (a RequestServer with a
    // transport) queues pipelined requests itself, so one turn does there. The turn is one
    // setImmediate shared by every request of the poll (body.ts nextTurn); what the guard costs
    // a small request: bench/results/small-pipelining-guard.md.
    await pipelineGuard(x.p.scheme === "https" && x.server.transport === undefined);
    if (req.signal.aborted) return gone(x);

    // Upgrade is a filtered name (validate.ts readFields): a request whose list is empty sent
    // none, and is not asked for it again: one of the Headers calls whose cut made a plain GET
    // 1.026× main side by side (bench/paired.ts; bench/results/paired-vs-main-alloc2.md).
    let result;
    if (x.filtered.length > 0 && isWebSocketUpgrade(req)) {
      const ws = await forwardWebSocket(x);
      if (ws === undefined) return undefined;
      if (ws instanceof ProxyError) return fail(x, ws);
      // The pod refused the upgrade: its answer goes the way of any proxied answer.
      result = ws;
    } else result = await forwardRequest(x);
    const paged = errorPage(x, result.response.status, null, result.response);
    if (paged !== null) return await paged;
    const out = relay(x, x.backend, result, false);
    // Ready at once for most small answers (respond.ts, Bun.peek): no extra turn through a
    // promise; 3% of a small proxied request side by side (bench/paired.ts; docs/design.md,
    // "Bun facts measured here").
    return out instanceof Response ? out : await out;
  } catch (e) {
    // Bun has answered 400 itself and closed (body.ts): recorded as what the client saw.
    if (e instanceof ProxyError && e.code === "BadFraming") return fail(x, e);
    if (isGone(x)) return gone(x);
    if (e instanceof ProxyError) return fail(x, e);
    return fail(x, new ProxyError("Internal", String((e as Error)?.stack ?? e)));
  }
}

export function createProxyHandler(
  deps: ProxyDeps & { balancer?: Balancer; external?: ExternalResolver; bodyBudget?: BodyBudget },
): ProxyHandler {
  const { config, hooks, log } = deps;
  const balancer = deps.balancer ?? createBalancer();
  const sockets = new Set<ServerWebSocket<WsData>>();
  // What the access log's template reads per request, when one is in effect (set, log on).
  const needs = config.accessLog === "off" ? null : templateNeeds(config.accessLogTemplate);
  const p: Pipeline = {
    deps, config, log, scheme: deps.scheme, balancer, external: deps.external,
    // One per process when serving passes it (both listeners share it): --request-buffer-budget.
    bodyBudget: deps.bodyBudget ?? createBodyBudget(config.requestBufferBudget),
    isTrusted: cidrMatcher(config.trustedProxies),
    compat: config.ingressNginxCompat,
    inflight: createInflight(),
    hardStop: new AbortController(),
    runPolicies: createPolicyRunner(deps.policyKinds ?? POLICY_KINDS, policyCaps(config), BUILT_IN_STAGES),
    logTemplate: needs !== null,
    logTries: needs?.tries === true,
    logHead: needs?.head === true,
    logPort: needs?.port === true,
  };

  return {
    // --server-header=portico names Portico on every answer, its own ones too, as nginx's
    // server_tokens on does (ingress-nginx's server-tokens true); proxied answers already carry
    // it (headers.ts downstreamHeaders). Read per request: the ConfigMap may change it.
    // add-headers (RouteTable.globalHeaders) likewise on every answer; absent, one property check.
    // The table is the one route() read (ProxyDeps.table: once per request): handle runs
    // synchronously up to its first await, route included, so x.table is set when handle
    // returns; only a request admit refused never reached route, and its answer reads the table
    // here. Without add-headers the answer takes no closure and no extra promise turn.
    fetch: (req, server) => {
      const x = open(p, req, server);
      const out = finalAnswer(x, handle(x));
      // --access-log-template's $bytes_sent reads the head of the answer Bun is handed
      // (log/template.ts); without a template, no extra turn.
      return p.logHead ? keptAnswer(x, out) : out;
    },
    // Gateway API listeners in AllowValidOnly mode refuse a client at the handshake
    // (table/client-certs.ts strictClientCas); the node:http2 listener asks per connection.
    refusesClient(servername, chain) {
      const checks = strictClientCas(deps.table(), servername);
      return checks.length > 0 && !clientChainTrusted(checks, chain(), Date.now());
    },
    websocket: websocketHandler(sockets, (d) => {
      try {
        hooks?.onWebsocket?.(d);
      } catch {}
    }),
    error(e) {
      log.error("proxy handler crashed", { err: String(e?.stack ?? e) });
      return errorResponse("Internal");
    },
    inflight: p.inflight,
    closeWebSockets(code, reason) {
      for (const ws of sockets) ws.close(code, reason);
    },
    abortInflight() {
      const reason = new Error("shutdown");
      p.hardStop.abort(reason);
      // Every running request's guard sees hardStop now rather than at the next tick.
      sweep();
    },
    balancer,
  };
}
