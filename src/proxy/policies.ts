// Runs a route's request-side policies (RouteOptions.stages) in the one stage order of
// table/policy.ts, with the proxy's own HTTPS redirect and no-endpoints check at their place
// between the stages. docs/design.md, "Annotations and policies": the handler calls the
// runner only when a route has policies, so a route without any pays one null check (and the
// handler makes those two checks itself).
import type { Config } from "../config/types.ts";
import type { Logger } from "../log/logger.ts";
import { ENDPOINTS_CHECK_AFTER, HTTPS_REDIRECT_AFTER, stageIndex, type PolicyStage, type StagePolicy } from "../table/policy.ts";
import type { Backend, Match, Route } from "../table/types.ts";
import type { EndpointChoice } from "./balancer.ts";
import type { ConnectionTls } from "./client-cert.ts";
import { ProxyError } from "./errors.ts";
import { BUILTIN_KINDS } from "./kinds.ts";
import { httpsRedirect, wantsHttpsRedirect } from "./redirect.ts";

/** What a policy sees of the request, and what a stage may change. */
export interface PolicyFlow {
  readonly req: Request;
  readonly route: Route;
  /** The lookup's answer (a regex host's carries the location and its captures: table/regex.ts). */
  readonly match: Match;
  /** The validated routing host name and normalised path the route was looked up with. */
  readonly hostname: string;
  readonly path: string;
  /** "" or "?…", as received. */
  readonly query: string;
  /** The client's scheme (X-Forwarded-Proto only from a trusted proxy). */
  readonly scheme: "http" | "https";
  /** The scheme of the connection the request came on (nginx's `$scheme`). */
  readonly connectionScheme: "http" | "https";
  /** The Host header as received (nginx's `$http_host`), "" when there is none. */
  readonly host: string;
  /** The Host header's port, or null. */
  readonly port: string | null;
  /** The port the connection came in on. */
  readonly localPort: number;
  readonly config: Config;
  /** The client's address: the peer, or what a trusted proxy reported (--trusted-proxies). */
  readonly clientIp: string;
  /**
   * Headers every answer Portico gives to this request carries (X-Request-ID...): spread them
   * into a Response a stage returns. A stage may add to them (CORS headers go on Portico's own
   * 401, 403 and 503 too).
   */
  readonly responseHeaders: Record<string, string>;
  /**
   * Headers set on the proxied response, replacing the backend's (a `vary` value is added to
   * the backend's Vary instead); null for none, so a route without them pays nothing.
   */
  upstreamResponseHeaders: Readonly<Record<string, string>> | null;
  /** This request's X-Request-ID. */
  readonly requestId: string;
  /** Whether the peer is a trusted proxy (--trusted-proxies): its X-Forwarded-* count. */
  readonly trusted: boolean;
  /** Forward header names containing "_" (--enable-underscores-in-headers). */
  readonly underscores: boolean;
  /** The route's connect and response-header deadlines, flags applied. */
  readonly connectTimeoutMs: number;
  readonly responseTimeoutMs: number;
  /** --max-response-header-size. */
  readonly maxResponseHeaderBytes: number;
  /**
   * Fields set on the upstream request after Portico's own (a null value removes the field);
   * null for none. External authentication copies the auth answer's fields here.
   */
  upstreamRequestHeaders: Readonly<Record<string, string | null>> | null;
  /**
   * Set-Cookie lines added to the client's answer, each its own field, next to the backend's
   * (nginx's `add_header Set-Cookie`): with `always` on every answer, otherwise only on the
   * statuses add_header covers (200, 201, 204, 206, 301, 302, 303, 304, 307, 308). Null for none.
   */
  setCookies: { readonly values: readonly string[]; readonly always: boolean } | null;
  /** Path and query sent upstream: the rewrite stage may change it. */
  pathAndQuery: string;
  /** Where the request goes: the backend stage may change it. */
  backend: Backend;
  /**
   * Request fields not to send upstream (lowercased), or null: basic authentication adds
   * `authorization`, as ingress-nginx clears it for the backend.
   */
  removeHeaders: string[] | null;
  /** The Host header sent upstream instead of the client's (forwarding stage), or null. */
  upstreamHost: string | null;
  /**
   * How the backend's endpoint is chosen: null is the balancer's round robin; the backend
   * stage sets one for `load-balance: ewma`, `upstream-hash-by` or cookie affinity.
   */
  choice: EndpointChoice | null;
  /**
   * Called once when the request ends, however it ends (answered by a later stage, proxied,
   * failed, the client gone): a stage that holds something for the request's lifetime (a
   * `limit-connections` slot) gives it back here. One per request; a second holder chains.
   */
  release: (() => void) | null;
  /** The request's TLS connection (SNI, the client's certificates), or null: plain HTTP, or a listener that cannot tell. */
  readonly tls: () => ConnectionTls | null;
  /** The process log, for what a policy must tell the operator (not per request: see each kind). */
  readonly log: Logger;
}

/** What a policy implementation may read besides its parameters: the process's configuration. */
export interface PolicyContext {
  readonly config: Config;
}

/** A Response ends the request with it (403, 401, a redirect, a preflight's 204); null goes on. */
export type PolicyStep = (flow: PolicyFlow) => Response | null | Promise<Response | null>;

/** An implementation of one kind of policy: the stage it belongs to and how its parameters become a step. */
export interface PolicyKind {
  readonly stage: PolicyStage;
  /**
   * Called once per policy object (the steps are cached with it); may throw on bad parameters.
   * `ctx` is always given by the runner the handler makes; a kind that needs it throws without.
   */
  build(params: StagePolicy["params"], ctx?: PolicyContext): PolicyStep;
}

export type PolicyKinds = ReadonlyMap<string, PolicyKind>;

/** The kinds Portico implements, by StagePolicy.kind (kinds.ts lists them). */
export const POLICY_KINDS: PolicyKinds = BUILTIN_KINDS;

export type PolicyRunner = (stages: readonly StagePolicy[], flow: PolicyFlow) => Promise<Response | null>;

/**
 * A policy that cannot run (unknown kind, a kind filed under another stage, parameters its
 * build refuses) answers 500 to every request of the route: access control fails closed.
 */
function refuse(why: string): PolicyStep {
  return () => {
    throw new ProxyError("Internal", why);
  };
}

/**
 * The HTTPS redirect, where ingress-nginx's Lua makes it: after the location's rewrite phase
 * (so `permanent-redirect` answers plain HTTP without going through HTTPS first), before the
 * backend choice, limits and access. The same check the handler makes for routes without
 * policies.
 */
const HTTPS_REDIRECT: PolicyStep = (flow) => {
  if (!wantsHttpsRedirect(flow.scheme, flow.route)) return null;
  const r = httpsRedirect(flow.config, flow.hostname, flow.path + flow.query, flow.route, flow.responseHeaders);
  if (r === null) throw new ProxyError("BadRequest", "no host to redirect to");
  return r;
};

/**
 * 503 for a backend without endpoints once it is chosen, before limits and access (ingress-nginx's
 * balancer.lua rewrite). A route with a default-backend fallback or custom error pages leaves
 * it to the handler's own check after the stages, which sends to the fallback or answers the
 * error page (docs/design.md, "Error pages"), as it did before the stages ran it.
 */
const ENDPOINTS_CHECK: PolicyStep = (flow) => {
  const b = flow.backend;
  if (b.status === "ok" && b.endpoints.length > 0) return null;
  if (flow.route.fallback !== undefined || flow.route.errorPages !== undefined) return null;
  throw new ProxyError("NoEndpoints", b.status);
};

function stepsOf(stages: readonly StagePolicy[], kinds: PolicyKinds, ctx: PolicyContext | undefined): readonly PolicyStep[] {
  // Ordered here too, so the order holds whoever built the table. A policy of an unknown stage
  // sorts first (index -1) and refuses, so nothing is skipped.
  const at = stages.map((p, i) => ({ at: stageIndex(p.stage), i, step: stepOf(p, kinds, ctx) }));
  at.push({ at: stageIndex(HTTPS_REDIRECT_AFTER) + 0.5, i: 0, step: HTTPS_REDIRECT });
  at.push({ at: stageIndex(ENDPOINTS_CHECK_AFTER) + 0.5, i: 0, step: ENDPOINTS_CHECK });
  return at.sort((a, b) => a.at - b.at || a.i - b.i).map((s) => s.step);
}

function stepOf(p: StagePolicy, kinds: PolicyKinds, ctx: PolicyContext | undefined): PolicyStep {
  const kind = kinds.get(p.kind);
  if (kind === undefined) return refuse(`no implementation for policy kind ${JSON.stringify(p.kind)}`);
  if (kind.stage !== p.stage) return refuse(`policy kind ${p.kind} belongs to stage ${kind.stage}, not ${p.stage}`);
  try {
    return kind.build(p.params, ctx);
  } catch (e) {
    return refuse(`policy ${p.kind}: ${String(e)}`);
  }
}

export function createPolicyRunner(kinds: PolicyKinds = POLICY_KINDS, ctx?: PolicyContext): PolicyRunner {
  // Keyed by the route's frozen stages array: built once per table generation, not per request.
  const cache = new WeakMap<readonly StagePolicy[], readonly PolicyStep[]>();
  return async (stages, flow) => {
    let steps = cache.get(stages);
    if (steps === undefined) {
      steps = stepsOf(stages, kinds, ctx);
      cache.set(stages, steps);
    }
    for (const step of steps) {
      const out = step(flow);
      const answer = out instanceof Promise ? await out : out;
      if (answer !== null) return answer;
    }
    return null;
  };
}
