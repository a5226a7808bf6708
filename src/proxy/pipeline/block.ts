// ingress-nginx's block-cidrs, block-user-agents and block-referers (--block-*): nginx.tmpl
// writes `deny <cidr>;` in the http block and, in every server (the catch-all one too),
// `if ($block_ua) { return 403; }` / `if ($block_ref) { return 403; }` over two `map`s
// (regex/block-pattern.ts). Checked once per request in the route step, after the client's
// address is known (realip runs before both in nginx), for every host and path. The lists are
// live (config/live.ts): their matchers are rebuilt when a list is another array, and a request
// with every list empty pays three length checks.
import { accessListMatcher } from "../../config/cidr.ts";
import type { Config } from "../../config/types.ts";
import { compileBlockList, type BlockTest } from "../../regex/block-pattern.ts";

let cidrList: readonly string[] | null = null;
let cidrTest: ((ip: string) => boolean) | null = null;
let uaList: readonly string[] | null = null;
let uaTest: BlockTest | null = null;
let refList: readonly string[] | null = null;
let refTest: BlockTest | null = null;

/** Is any --block-* list set? (Three length checks: the cost of the feature while it is off.) */
export function blockingOn(c: Config): boolean {
  return c.blockCidrs.length > 0 || c.blockUserAgents.length > 0 || c.blockReferers.length > 0;
}

/**
 * Does any --block-* list refuse this request? `clientIp` is the address realip would give.
 * The caller has checked blockingOn.
 */
export function isBlocked(c: Config, clientIp: string, headers: Headers): boolean {
  const cidrs = c.blockCidrs;
  const uas = c.blockUserAgents;
  const refs = c.blockReferers;
  // The server-level `if`s run in the rewrite phase, before `deny` (access phase); the answer
  // is 403 either way.
  if (uas.length > 0) {
    if (uas !== uaList) [uaList, uaTest] = [uas, compileBlockList(uas)];
    if (uaTest !== null && uaTest(headers.get("user-agent") ?? "")) return true;
  }
  if (refs.length > 0) {
    if (refs !== refList) [refList, refTest] = [refs, compileBlockList(refs)];
    if (refTest !== null && refTest(headers.get("referer") ?? "")) return true;
  }
  if (cidrs.length > 0) {
    if (cidrs !== cidrList) {
      cidrList = cidrs;
      try {
        cidrTest = accessListMatcher(cidrs);
      } catch {
        // A list that reached a worker unchecked: refuse every client rather than none.
        cidrTest = () => true;
      }
    }
    if (cidrTest !== null && cidrTest(clientIp)) return true;
  }
  return false;
}
