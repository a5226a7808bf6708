// The `access` stage (nginx's access phase, after the limits): source ranges (403).
// annotations/access.ts and compile/access.ts produce them; docs/design.md, "Annotations and
// policies", says how stages run. Every kind of the stage is defined here.
import * as v from "valibot";
import { accessListMatcher, isIpLiteral, parseCidrList } from "../config/cidr.ts";
import type { StagePolicy } from "../policy/stages.ts";
import { defineKind } from "./define.ts";
import { refusal } from "./refusal.ts";
import { Strings } from "./schema.ts";

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
 * whitelist/denylist-source-range: at least one list (null for none).
 *
 * `{ allow: CIDRs | null, deny: CIDRs | null }`: deny entries first, then allow entries, then
 * deny-all when there is an allow list, the order ingress-nginx writes nginx's `deny` and
 * `allow` directives in, so a denied range inside an allowed one is refused. The client address
 * is flow.clientIp: the peer, or what a trusted proxy reported. One that is not an IP literal
 * (a trusted proxy's malformed X-Forwarded-For) is refused: it can be checked against nothing.
 */
export const SOURCE_RANGE = defineKind("source-range", "access", v.object({ allow: v.nullable(Strings), deny: v.nullable(Strings) }), (params) => {
  const allow = cidrs(params, "allow");
  const deny = cidrs(params, "deny");
  // Both keys present (null or a list) and at least one list, as sourceRangeStage writes
  // them: a policy without a list is not one the compiler made, and would check nothing.
  if (allow === null && deny === null) throw new TypeError("neither an allow nor a deny list");
  const allowed = allow === null ? null : accessListMatcher(allow);
  const denied = deny === null ? null : accessListMatcher(deny);
  return (flow) => {
    const ip = flow.clientIp;
    if (!isIpLiteral(ip) || denied?.(ip) === true || (allowed !== null && !allowed(ip))) return refusal(flow, 403, "forbidden\n");
    return null;
  };
});
