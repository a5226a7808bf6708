// explain(): compile the snapshot with a trace and say, for one request, which route wins
// and why every other relevant rule path lost (class, host, tier, path, precedence,
// conflict, invalid). Pure like compile(); another module serves it over HTTP and the CLI.
import type { Ingress } from "../model/schemas.ts";
import { normaliseRequestHost } from "../request/host.ts";
import { RejectedRequest } from "../request/rejected.ts";
import { normaliseTarget } from "../request/target.ts";
import type { Snapshot } from "../store/types.ts";
import { lookup, selectHost } from "../table/lookup.ts";
import { isSegmentPrefix, pathSegments } from "../table/segments.ts";
import type { Match, Route } from "../table/types.ts";
import { compileTraced } from "./compile.ts";
import type { CompileConfig } from "./config.ts";
import type { ExplainCandidate, ExplainCertificate, ExplainMatch, ExplainRequest, ExplainResult } from "./explain-types.ts";
import { normaliseHost, tlsCovers } from "./hosts.ts";
import { ingressKey } from "./order.ts";
import { validatePath } from "./paths.ts";
import { newTrace, type PathTrace } from "./trace.ts";
import type { CertificateBinding } from "./types.ts";

export type * from "./explain-types.ts";

/**
 * The request as the proxy routes it, through the proxy's own normaliser (src/request/), so
 * explain and the proxy agree on every input. `path` is the request target as sent, escapes
 * included; a query string is dropped (it never takes part in routing). Throws
 * RejectedRequest for a request the proxy answers with 400.
 */
export function normaliseRequest(req: ExplainRequest): ExplainRequest {
  // RFC 9110 §5.5: a field value's surrounding whitespace is not part of it (the proxy's
  // parser strips it from Host).
  const host = normaliseRequestHost(req.host.trim());
  if (host === null) throw new RejectedRequest("host");
  // RFC 9110 §4.2.3: an empty path is "/" for http and https URIs.
  const target = normaliseTarget(req.path === "" ? "/" : req.path);
  if (target === null) throw new RejectedRequest("path");
  return { host: host.hostname, path: target.path, scheme: req.scheme };
}

function hostRelation(ruleHost: string | null, host: string): "exact-host" | "wildcard-host" | "any-host" | null {
  if (ruleHost === null) return "any-host";
  if (ruleHost === host) return "exact-host";
  return tlsCovers(ruleHost, host) && ruleHost !== host ? "wildcard-host" : null;
}

function pathMatches(type: "Exact" | "Prefix", rulePath: string, path: string): boolean {
  return type === "Exact" ? rulePath === path : isSegmentPrefix(pathSegments(rulePath), pathSegments(path));
}

function outrankReason(winner: Route, loser: { path: string; pathType: "Exact" | "Prefix" }): string {
  if (winner.path.length > loser.path.length) {
    return `${winner.pathType} ${winner.path} is longer (${winner.path.length} > ${loser.path.length} characters)`;
  }
  if (winner.pathType === "Exact" && loser.pathType === "Prefix") return `Exact ${winner.path} beats Prefix at equal length`;
  return `${winner.pathType} ${winner.path} comes first at equal precedence`;
}

function describeMatch(m: Match): ExplainMatch {
  const r = m.route;
  const b = r.backend;
  return {
    ingress: r.ingress.name ? `${r.ingress.namespace}/${r.ingress.name}` : null,
    source: r.source,
    ruleIndex: r.ruleIndex,
    pathIndex: r.pathIndex,
    host: r.host,
    hostEntry: m.hostKey,
    via: m.via,
    path: r.path,
    pathType: r.pathType,
    declaredPathType: r.declaredPathType,
    backend: { id: b.id, status: b.status, scheme: b.scheme, endpoints: b.endpoints.map((u) => u.authority) },
    answers: b.endpoints.length > 0 ? "proxied" : "503",
    tls: r.tls,
  };
}

function selectCertificate(certs: readonly CertificateBinding[], host: string): ExplainCertificate {
  const view = (b: CertificateBinding, via: ExplainCertificate["via"]): ExplainCertificate => ({
    via,
    host: b.host,
    secret: b.secret,
    ingress: b.ingress,
    hasPem: b.cert !== null && b.key !== null,
  });
  const exact = certs.find((c) => c.host === host);
  if (exact) return view(exact, "exact");
  const wild = certs.find((c) => c.host.startsWith("*.") && tlsCovers(c.host, host));
  if (wild) return view(wild, "wildcard");
  const def = certs.find((c) => c.host === "");
  if (def) return view(def, "default");
  return { via: "generated-default", host: "", secret: null, ingress: "", hasPem: false };
}

/** Rule paths of an Ingress we do not serve, for "not our class" candidates. */
function notOursCandidates(ing: Ingress, reason: string, host: string, path: string, out: ExplainCandidate[]): void {
  (ing.spec.rules ?? []).forEach((rule, ri) => {
    const h = normaliseHost(rule.host);
    (rule.http?.paths ?? []).forEach((p, pi) => {
      const vp = validatePath(p.path, p.pathType);
      const hostHit = h.ok && hostRelation(h.host, host) !== null;
      const pathHit = vp.ok && pathMatches(vp.type, vp.path, path);
      if (!hostHit && !pathHit) return;
      out.push({
        ingress: ingressKey(ing),
        ruleIndex: ri,
        pathIndex: pi,
        host: h.ok ? h.host : (rule.host ?? null),
        path: vp.ok ? vp.path : (p.path ?? ""),
        pathType: p.pathType,
        verdict: "not-our-class",
        reason,
      });
    });
  });
}

function ruleCandidate(t: PathTrace, req: ExplainRequest, match: Match | null, chosen: string | null): ExplainCandidate | null {
  const type = t.pathType;
  const rel = hostRelation(t.host, req.host);
  const pathHit = type !== null && pathMatches(type, t.path, req.path);
  const base = {
    ingress: ingressKey(t.ingress),
    ruleIndex: t.ruleIndex,
    pathIndex: t.pathIndex,
    host: t.outcome.kind === "invalid" && t.outcome.reason === "InvalidHost" ? t.rawHost : t.host,
    path: t.path,
    pathType: type ?? t.ingress.spec.rules?.[t.ruleIndex]?.http?.paths[t.pathIndex]?.pathType ?? "",
  };
  const o = t.outcome;
  if (o.kind === "invalid") return rel !== null || pathHit ? { ...base, verdict: "invalid", reason: `${o.reason}: ${o.message}` } : null;
  if (rel === null) return pathHit ? { ...base, verdict: "host-mismatch", reason: `host ${t.host} does not match ${req.host}` } : null;
  if (o.kind === "duplicate") return { ...base, verdict: "duplicate", reason: o.message };
  if (o.kind === "conflict") return { ...base, verdict: "conflict-loser", reason: o.message };
  const hostKey = t.host ?? "*";
  if (chosen !== hostKey) {
    return { ...base, verdict: "host-tier-lost", reason: `host entry ${chosen} was chosen first (exact host > wildcard > no host); there is no fallthrough` };
  }
  if (!pathHit) {
    const how = type === "Exact" ? "Exact needs the whole path, case and trailing slash included" : "Prefix matches whole path elements";
    return { ...base, verdict: "path-mismatch", reason: `${type} ${t.path} does not match ${req.path} (${how})` };
  }
  if (match?.route === o.route) return { ...base, verdict: "matched", reason: `host via ${match.via}, ${type} ${t.path} is the best path` };
  const winner = match?.route;
  return { ...base, verdict: "outranked", reason: winner ? outrankReason(winner, o.route) : "another route won" };
}

export function explain(snapshot: Snapshot, config: CompileConfig, request: ExplainRequest): ExplainResult {
  const req = normaliseRequest(request);
  const trace = newTrace();
  const result = compileTraced(snapshot, config, trace);
  const match = lookup(result.table, req.host, req.path);
  const entry = selectHost(result.table, req.host);
  const chosen = entry?.host ?? null;

  const candidates: ExplainCandidate[] = [];
  for (const { ingress, decision } of trace.classes) {
    if (!decision.served) notOursCandidates(ingress, `not our class (${decision.rule}): ${decision.reason}`, req.host, req.path, candidates);
  }
  for (const t of trace.paths) {
    const c = ruleCandidate(t, req, match, chosen);
    if (c) candidates.push(c);
  }
  for (const d of trace.defaults) {
    const base = { ingress: ingressKey(d.ingress), ruleIndex: -1, pathIndex: -1, host: null, path: "/", pathType: "defaultBackend" };
    const o = d.outcome;
    if (o.kind === "route") {
      const used = match?.route === o.route;
      candidates.push({ ...base, verdict: used ? "matched" : "outranked", reason: used ? "no rule matched; the winning spec.defaultBackend answers" : "spec.defaultBackend is used only when no rule matches" });
    } else if (o.kind === "conflict") candidates.push({ ...base, verdict: "conflict-loser", reason: o.message });
    else if (o.kind === "invalid") candidates.push({ ...base, verdict: "invalid", reason: `${o.reason}: ${o.message}` });
  }

  const involved = new Set(candidates.map((c) => c.ingress));
  if (match?.route.ingress.name) involved.add(`${match.route.ingress.namespace}/${match.route.ingress.name}`);
  const diagnostics = result.diagnostics.filter((d) => d.kind === "Ingress" && involved.has(`${d.namespace}/${d.name}`));
  return {
    request: req,
    outcome: match === null ? "404" : match.via === "default" ? "default" : "route",
    match: match ? describeMatch(match) : null,
    hostEntry: chosen,
    candidates,
    certificate: req.scheme === "https" ? selectCertificate(result.certificates, req.host) : null,
    diagnostics,
  };
}
