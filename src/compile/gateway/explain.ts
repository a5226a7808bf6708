// explain() for the Gateway API part of the table (docs/design.md "Gateway API" and
// "Explain"): the rule a request gets, found the way table/gateway.ts findGatewayEntry finds
// it (the proxy's lookup), with the listener and route hostnames it was found under, the
// Gateway listeners that attach the route there, and what each weighted choice answers.
import { bestHostname, heldEntries, hostnameMatches, matchesRequest, startLookup } from "../../table/gateway.ts";
import type { GatewayEntry, GatewayRoutes, Match } from "../../table/types.ts";
import { predictAnswer, type AnswerConfig, type AnswerRequest, type PredictedAnswer } from "../answer.ts";
import type { ExplainGateway } from "../explain-types.ts";
import type { GatewayCompileResult } from "../types.ts";

/**
 * Explain's request has a method (GET unless asked), at most a Content-Type and no query
 * (compile/explain-types.ts ExplainRequest), so a rule that asks for another method, another
 * header or a query parameter does not match here.
 */
function assumed(method: string, contentType: string | null): string {
  return `${method}, ${contentType === null ? "no headers" : `content-type ${contentType} and no other header`}, no query string`;
}

/** The request's fields a Gateway API match reads. */
export interface GatewayAsked {
  readonly method: string;
  readonly contentType: string | null;
}

interface Found {
  readonly entry: GatewayEntry;
  readonly listenerHostname: string;
  readonly routeHostname: string;
}

/** findGatewayEntry's walk, telling where the entry was found. */
function find(routes: GatewayRoutes, https: boolean, host: string, path: string, asked: GatewayAsked): Found | null {
  const listeners = https ? routes.https : routes.http;
  const lkey = bestHostname(listeners.keys(), host);
  if (lkey === undefined) return null;
  const idx = listeners.get(lkey)!;
  const req = { host, method: asked.method, path, query: "", header: (name: string) => (name === "content-type" ? asked.contentType : null) };
  startLookup();
  // A host an Ingress names: its owners' routes only (table/gateway.ts heldEntries).
  const held = idx.held == null ? undefined : heldEntries(idx.held, host);
  if (held !== undefined) {
    for (const e of held) if (matchesRequest(e.match, req)) return { entry: e, listenerHostname: lkey, routeHostname: e.choices[0]?.match.route.host ?? "*" };
    return null;
  }
  const exact = idx.exact.get(host);
  if (exact !== undefined) for (const e of exact) if (matchesRequest(e.match, req)) return { entry: e, listenerHostname: lkey, routeHostname: host };
  for (const [p, l] of idx.wildcards) {
    if (!hostnameMatches(p, host)) continue;
    for (const e of l) if (matchesRequest(e.match, req)) return { entry: e, listenerHostname: lkey, routeHostname: p };
  }
  if (idx.any !== null) for (const e of idx.any) if (matchesRequest(e.match, req)) return { entry: e, listenerHostname: lkey, routeHostname: "*" };
  return null;
}

const oneWord = (r: PredictedAnswer): "proxied" | "depends" | `${number}` => (r.kind === "proxied" || r.kind === "depends" ? r.kind : `${r.status ?? 500}`);

/** What the proxy answers on an entry: one choice's answer, or the weighted mix of several. */
function entryAnswer(answers: readonly { match: Match; weight: number; answer: PredictedAnswer }[], totalWeight: number): PredictedAnswer {
  if (answers.length === 1) return answers[0]!.answer;
  const share = (w: number) => `${w}/${totalWeight}`;
  if (answers.every((a) => a.answer.kind === "proxied")) {
    const backends = [...new Set(answers.flatMap((a) => a.answer.backends ?? []))];
    // Each backendRef may have filters of its own: the upstream request is said when they agree.
    const ups = new Set(answers.map((a) => JSON.stringify(a.answer.upstream ?? null)));
    const upstream = ups.size === 1 ? answers[0]!.answer.upstream : undefined;
    return { kind: "proxied", status: null, cause: `proxied, the backend chosen by weight: ${answers.map((a) => `${a.match.route.backend.id} ${share(a.weight)}`).join(", ")}`, by: "proxy", backends, notes: [], ...(upstream === undefined ? {} : { upstream }) };
  }
  const first = answers[0]!.answer;
  if (answers.every((a) => a.answer.kind === first.kind && a.answer.status === first.status && a.answer.location === first.location)) return first;
  const proxied = answers.filter((a) => a.answer.kind === "proxied").flatMap((a) => a.answer.backends ?? []);
  return {
    kind: "depends",
    status: null,
    cause: `the weights decide: ${answers.map((a) => `${share(a.weight)} ${a.answer.kind === "proxied" ? `proxied to ${a.match.route.backend.id}` : `${a.answer.status ?? "?"} (${a.answer.cause})`}`).join(", ")}`,
    by: "weight",
    ...(proxied.length > 0 ? { backends: proxied } : {}),
    notes: [],
  };
}

export interface GatewayExplained {
  readonly gateway: ExplainGateway;
  /** The Match of the first choice: the one `match` describes. */
  readonly match: Match;
  readonly response: PredictedAnswer;
}

/** The Gateway API rule answering `req`, or null (the Ingress table decides). */
export function explainGatewayRequest(
  routes: GatewayRoutes,
  compiled: GatewayCompileResult | undefined,
  req: AnswerRequest,
  config: AnswerConfig,
  asked: GatewayAsked = { method: "GET", contentType: null },
  only: { readonly gateway: string; readonly declared: number } | null = null,
  /** Applied to each choice's answer before they are mixed (a gRPC call's Trailers-Only answers: compile/explain.ts). */
  shape: (a: PredictedAnswer) => PredictedAnswer = (a) => a,
): GatewayExplained | null {
  const https = req.scheme === "https";
  const found = find(routes, https, req.host, req.path, asked);
  if (found === null || found.entry.choices.length === 0) return null;
  const { entry } = found;
  const first = entry.choices[0]!.match;
  const route = first.route;
  const routeKey = `${route.ingress.namespace}/${route.ingress.name}`;
  const kind = route.ingress.kind ?? "HTTPRoute";
  const port = https ? ("https" as const) : ("http" as const);
  const listeners: { gateway: string; listener: string; port: number; protocol: string }[] = [];
  for (const r of compiled?.routes ?? []) {
    // An HTTPRoute and a GRPCRoute may share a name: only this kind's status entry.
    if (r.key !== routeKey || (r.kind ?? "HTTPRoute") !== kind) continue;
    for (const p of r.parents) {
      for (const a of p.state.attachments) {
        const l = a.listener;
        // On a Gateway's own port (--gateway-ports) only that Gateway's listeners on that port attach it there.
        if (only !== null && (l.gateway !== only.gateway || l.port !== only.declared)) continue;
        if (l.portClass !== port || (l.hostname ?? "*") !== found.listenerHostname || !a.hostnames.includes(found.routeHostname)) continue;
        if (!listeners.some((x) => x.gateway === l.gateway && x.listener === l.name)) listeners.push({ gateway: l.gateway, listener: l.name, port: l.port, protocol: l.protocol });
      }
    }
  }
  const answers = entry.choices.map((c) => ({ match: c.match, weight: c.weight, answer: shape(predictAnswer(c.match, req, config)) }));
  const m = entry.match;
  return {
    match: first,
    response: entryAnswer(answers, entry.totalWeight),
    gateway: {
      port,
      listenerHostname: found.listenerHostname,
      routeHostname: found.routeHostname,
      listeners,
      kind,
      route: routeKey,
      ruleIndex: route.ruleIndex,
      matchIndex: route.pathIndex,
      match: {
        pathType: m.pathType,
        path: route.path,
        method: m.method,
        headers: m.headers.map((h) => `${h.name}${h.regex === true ? " ~ " : ": "}${h.value}`),
        queryParams: m.query.map((q) => `${q.name}${q.regex === true ? "~" : "="}${q.value}`),
      },
      choices: answers.map((a) => ({ backend: a.match.route.backend.id, weight: a.weight, answers: oneWord(a.answer) })),
      assumed: assumed(asked.method, asked.contentType),
    },
  };
}
