// The access stage's policies: source ranges (403) and routes refused as a whole (503).
// annotations/access.ts and compile/access.ts produce them; docs/design.md, "Annotations and
// policies", says how stages run.
import { isIP } from "node:net";
import { accessListMatcher, parseCidrList } from "../../config/cidr.ts";
import type { StagePolicy } from "../../policy/stages.ts";
import type { KindOf, PolicyFlow, PolicyKind } from "./types.ts";
import { ownBody } from "../../http/status-page.ts";
import * as K from "../../policy/kinds.ts";

/**
 * A short fixed body (never anything from the request; nginx's page for the status under
 * --ingress-nginx-compat) with the headers every answer carries.
 */
export function refusal(flow: PolicyFlow, status: number, body: string, extra: Record<string, string> = {}, certificate: string | null = null): Response {
  const own = ownBody(status, body, flow.config.ingressNginxCompat, flow.req, certificate);
  return new Response(own.body, {
    status,
    headers: { ...flow.responseHeaders, "content-type": own.type, "cache-control": "no-store", ...extra },
  });
}

function cidrs(params: StagePolicy["params"], key: string): readonly string[] | null {
  const v = params[key];
  if (v === null) return null;
  if (!Array.isArray(v) || !v.every((x) => typeof x === "string")) throw new TypeError(`${key} is not a list of CIDRs`);
  // The compiler checked the list already; a list that no longer parses refuses the route
  // (the runner answers 500) instead of being applied narrower or wider than written. An
  // empty list is never written (sourceRangeStage gives null): taken as "no list", an empty
  // allow list would let every client in.
  const r = parseCidrList(v as string[]);
  if (!r.ok) throw new TypeError(`${key}: ${r.error}`);
  if (r.list.length === 0) throw new TypeError(`${key} is an empty list`);
  return r.list;
}

/**
 * `{ allow: CIDRs | null, deny: CIDRs | null }`: deny entries first, then allow entries, then
 * deny-all when there is an allow list, the order ingress-nginx writes nginx's `deny` and
 * `allow` directives in, so a denied range inside an allowed one is refused. The client address
 * is flow.clientIp: the peer, or what a trusted proxy reported. One that is not an IP literal
 * (a trusted proxy's malformed X-Forwarded-For) is refused: it can be checked against nothing.
 */
export const SOURCE_RANGE: KindOf<typeof K.SOURCE_RANGE> = {
  contract: K.SOURCE_RANGE,
  build(params) {
    const allow = cidrs(params, "allow");
    const deny = cidrs(params, "deny");
    // Both keys present (null or a list) and at least one list, as sourceRangeStage writes
    // them: a policy without a list is not one the compiler made, and would check nothing.
    if (allow === null && deny === null) throw new TypeError("neither an allow nor a deny list");
    const allowed = allow === null ? null : accessListMatcher(allow);
    const denied = deny === null ? null : accessListMatcher(deny);
    return (flow) => {
      const ip = flow.clientIp;
      if (isIP(ip) === 0 || denied?.(ip) === true || (allowed !== null && !allowed(ip))) return refusal(flow, 403, "forbidden\n");
      return null;
    };
  },
};

/**
 * `{ status: 503, reason }`: the route's access or authentication annotations cannot be
 * applied (a bad CIDR, a missing Secret...), so every request is refused, as ingress-nginx's
 * "location denied" answers 503. The reason is for /debug/routes and diagnostics, never the client.
 */
export const REFUSE: KindOf<typeof K.REFUSE> = {
  contract: K.REFUSE,
  build(params) {
    const status = params.status;
    if (typeof status !== "number" || !Number.isInteger(status) || status < 400 || status > 599) throw new TypeError("status is not an error status");
    return (flow) => refusal(flow, status, status === 503 ? "service unavailable\n" : "refused\n");
  },
};

/**
 * `{ status: 403, reason }`: the host's auth-tls-secret cannot be used, and ingress-nginx's
 * server block answers 403 before anything else (nginx.tmpl SERVER `return 403`, ahead of
 * app-root); REFUSE in the first stage.
 */
export const CERTIFICATE_REFUSE: KindOf<typeof K.CERTIFICATE_REFUSE> = { contract: K.CERTIFICATE_REFUSE, build: REFUSE.build };

export const ACCESS_KINDS: readonly PolicyKind[] = [SOURCE_RANGE, REFUSE, CERTIFICATE_REFUSE];
