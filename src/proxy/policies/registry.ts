// The stage policy kinds Portico implements, by StagePolicy.kind: every runner the modules of
// this folder export (one module per concern: redirects in redirect.ts, CORS in cors.ts, source
// ranges and refusals in access.ts...), collected from their exports, so a runner is written
// in its module and listed nowhere else; a new module is one import line here. The few kinds
// too small for a module of their own are here. A test holds the runners and the contracts of
// policy/kinds.ts equal (test/proxy/kinds-registry.test.ts).
import { normaliseRequestHost } from "../../request/host.ts";
import type { Backend } from "../../table/types.ts";
import { isKindContract } from "../../policy/contract.ts";
import * as access from "./access.ts";
import { refusal } from "./access.ts";
import * as affinity from "./affinity.ts";
import * as basicAuth from "./basic-auth.ts";
import { canaryKind } from "./canary.ts";
import * as clientCert from "./client-cert.ts";
import * as cors from "./cors.ts";
import { createExternalAuthKind } from "./external-auth.ts";
import * as gateway from "./gateway.ts";
import * as hashBy from "./hash-by.ts";
import * as headerDeny from "./header-deny.ts";
import * as headerPolicy from "./header-policy.ts";
import * as limits from "./limits.ts";
import * as redirect from "./redirect.ts";
import * as rewrite from "./rewrite.ts";
import type { KindOf, PolicyKind, PolicyKinds } from "./types.ts";
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

/** Is `x` a runner: an object with a contract defineKind made and a build? */
const isPolicyKind = (x: unknown): x is PolicyKind =>
  typeof x === "object" && x !== null && isKindContract((x as PolicyKind).contract) && typeof (x as PolicyKind).build === "function";

/** Every runner among the exports of `modules` (a list of runners counts too), each once. */
export function runnersIn(...modules: readonly object[]): PolicyKind[] {
  const out = new Set<PolicyKind>();
  for (const m of modules) {
    for (const x of Object.values(m)) {
      if (isPolicyKind(x)) out.add(x);
      else if (Array.isArray(x)) for (const y of x) if (isPolicyKind(y)) out.add(y);
    }
  }
  return [...out];
}

/**
 * The kinds Portico implements, by contract id: one runner per contract of policy/kinds.ts
 * (a test holds the two lists equal, so a kind the compiler can emit always has a runner).
 * canary and external-auth are made by a factory (their randomness and cache are injected in
 * tests), so their process-wide runner is made here.
 */
export const POLICY_KINDS: PolicyKinds = kindMap([
  ...runnersIn(access, affinity, basicAuth, clientCert, cors, gateway, hashBy, headerDeny, headerPolicy, limits, redirect, rewrite),
  ...runnersIn({ DENIED, AUTO_HTTP, UPSTREAM_VHOST }),
  canaryKind(),
  createExternalAuthKind(),
]);

/** `kinds` keyed by their contract's id; two runners for one id are a programming error. */
export function kindMap(kinds: readonly PolicyKind[]): PolicyKinds {
  const out = new Map<string, PolicyKind>();
  for (const k of kinds) {
    if (out.has(k.contract.id)) throw new Error(`two runners for the policy kind ${JSON.stringify(k.contract.id)}`);
    out.set(k.contract.id, k);
  }
  return out;
}
