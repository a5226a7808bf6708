// The stage policy kinds Portico implements, by StagePolicy.kind (policy/stages.ts names most of
// them; src/annotations/ produces them). The redirects live in redirect.ts, CORS in cors.ts,
// canary in canary.ts, source ranges and basic auth in access.ts and basic-auth.ts, external
// authentication in external-auth.ts, rewrite-target in rewrite.ts, limits, affinity, hashing
// and custom headers in their own files; the others are here.
import { normaliseRequestHost } from "../../request/host.ts";
import type { Backend } from "../../table/types.ts";
import { ACCESS_KINDS, refusal } from "./access.ts";
import { BASIC_AUTH } from "./basic-auth.ts";
import { canaryKind } from "./canary.ts";
import { CLIENT_CERT } from "./client-cert.ts";
import { CORS_POLICY_KIND } from "./cors.ts";
import { createExternalAuthKind } from "./external-auth.ts";
import { REWRITE_TARGET } from "./rewrite.ts";
import { AFFINITY_KIND } from "./affinity.ts";
import { EWMA_KIND, HASH_KIND } from "./hash-by.ts";
import { LIMITS_KIND } from "./limits.ts";
import { HEADER_DENY } from "./header-deny.ts";
import { HEADERS_POLICY } from "./header-policy.ts";
import type { KindOf, PolicyKind, PolicyKinds } from "./types.ts";
import { APP_ROOT, REDIRECT, WWW_REDIRECT } from "./redirect.ts";
import { GATEWAY_KINDS } from "./gateway.ts";
import * as K from "../../policy/kinds.ts";

/**
 * An Ingress ingress-nginx would refuse (a malformed redirect, upstream-vhost or server-alias
 * value): every request of its routes answers 503, as ingress-nginx answers a location denied
 * by an annotation error, rather than being served without the annotation. The reason is in
 * the params for /debug/routes and the diagnostic, never for the client.
 */
const DENIED: KindOf<typeof K.DENIED> = {
  contract: K.DENIED,
  build() {
    return (flow) => refusal(flow, 503, "service unavailable\n");
  },
};

// One HTTPS twin per Backend object, made on first use: the balancer keeps its round-robin
// cursor per Backend object (balancer.ts), so the twin must last as long as the table's
// Backend does. It takes the id an HTTPS backend of the same port has (compile/backends.ts).
const httpsTwins = new WeakMap<Backend, Backend>();

function httpsTwin(b: Backend): Backend {
  if (b.scheme === "https") return b;
  let t = httpsTwins.get(b);
  if (t === undefined) {
    t = Object.freeze({ ...b, id: `${b.id}#https`, scheme: "https" as const });
    httpsTwins.set(b, t);
  }
  return t;
}

/**
 * backend-protocol AUTO_HTTP: ingress-nginx writes `proxy_pass $scheme://upstream_balancer`
 * (template.go buildProxyPass), so the pods get HTTPS when the client's connection is TLS and
 * HTTP otherwise; `$scheme` is the connection's even behind a trusted proxy.
 */
const AUTO_HTTP: KindOf<typeof K.AUTO_HTTP> = {
  contract: K.AUTO_HTTP,
  build() {
    return (flow) => {
      if (flow.connectionScheme === "https") flow.backend = httpsTwin(flow.backend);
      return null;
    };
  },
};

/**
 * upstream-vhost: the Host header sent upstream (nginx.tmpl `proxy_set_header Host <value>`);
 * X-Forwarded-Host keeps the client's. The handler applies flow.upstreamHost.
 */
const UPSTREAM_VHOST: KindOf<typeof K.UPSTREAM_VHOST> = {
  contract: K.UPSTREAM_VHOST,
  build(params) {
    const host = params.host;
    if (typeof host !== "string" || host.includes("$") || normaliseRequestHost(host) === null) throw new Error("upstream-vhost: a host is expected");
    return (flow) => {
      flow.upstreamHost = host;
      return null;
    };
  },
};

/**
 * The kinds Portico implements, by contract id: one runner per contract of policy/kinds.ts
 * (a test holds the two lists equal, so a kind the compiler can emit always has a runner).
 */
export const POLICY_KINDS: PolicyKinds = kindMap([
  ...ACCESS_KINDS,
  BASIC_AUTH,
  CLIENT_CERT,
  CORS_POLICY_KIND,
  canaryKind(),
  createExternalAuthKind(),
  REWRITE_TARGET,
  LIMITS_KIND,
  AFFINITY_KIND,
  HASH_KIND,
  EWMA_KIND,
  HEADERS_POLICY,
  HEADER_DENY,
  APP_ROOT,
  WWW_REDIRECT,
  DENIED,
  REDIRECT,
  AUTO_HTTP,
  UPSTREAM_VHOST,
  ...GATEWAY_KINDS,
]);

/** `kinds` keyed by their contract's id. */
export function kindMap(kinds: readonly PolicyKind[]): PolicyKinds {
  return new Map(kinds.map((k) => [k.contract.id, k] as const));
}
