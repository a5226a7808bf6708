// The stage policies of the access and basic-auth families (policy/stages.ts), built in one
// place for parse.ts, which knows only the annotations, and compile/access.ts, which adds
// what lies outside them (the --*-source-range flags, the Secret's users). What parse.ts emits
// fails closed on its own: a basic-auth policy without its users refuses every request.
import type { StagePolicy } from "../policy/stages.ts";
import type { ParamsOf } from "../policy/contract.ts";
import type { UserEntry } from "../policy/htpasswd.ts";
import { stagePolicy } from "../policy/contract.ts";
import * as K from "../kinds/index.ts";

/** The answer to every request of a route whose access or authentication annotations cannot be applied. */
export const REFUSED_STATUS = 503;

/**
 * The kinds compile/access.ts rebuilds once it has resolved their inputs. Not "refuse": a
 * refusal parse.ts made (an invalid value, an access check Portico cannot run, an external-auth
 * configuration it refuses) is kept whatever else is resolved, so it can never be dropped.
 */
export const RESOLVED_STAGE_KINDS: ReadonlySet<string> = new Set(["source-range", "basic-auth", "client-cert"]);

/**
 * Refusals ingress-nginx makes the same way (its own "location denied" for the same cause), so
 * the migration report can say the 503 is no change. Kept beside the policies rather than in
 * their params, which /debug/routes shows.
 */
const SAME_IN_INGRESS_NGINX = new WeakSet<StagePolicy>();

/** Every request refused with 503 (ingress-nginx's "location denied"); `reason` is for /debug/routes. */
export function refuseStage(reason: string, sameInIngressNginx = false): StagePolicy {
  const stage = stagePolicy(K.REFUSE, { status: REFUSED_STATUS, reason });
  if (sameInIngressNginx) SAME_IN_INGRESS_NGINX.add(stage);
  return stage;
}

/** Was this refusal made where ingress-nginx refuses too (refuseStage's second argument)? */
export const refusedByIngressNginxToo = (stage: StagePolicy): boolean => SAME_IN_INGRESS_NGINX.has(stage);

/** 403 for clients in `deny`, or outside a non-empty `allow`; null when both lists are empty. */
export function sourceRangeStage(allow: readonly string[] | null, deny: readonly string[] | null): StagePolicy | null {
  const a = allow !== null && allow.length > 0 ? [...allow] : null;
  const d = deny !== null && deny.length > 0 ? [...deny] : null;
  if (a === null && d === null) return null;
  return stagePolicy(K.SOURCE_RANGE, { allow: a, deny: d });
}

/**
 * Basic authentication against `users` (null: the Secret is not resolved yet, and the proxy
 * refuses to run the policy). `secret` (`namespace/name`) is for /debug/routes, which shows
 * the user count instead of the users (table/serialize.ts).
 */
export function basicAuthStage(realm: string, secret: string, users: readonly UserEntry[] | null): StagePolicy {
  return stagePolicy(K.BASIC_AUTH, { realm, secret, users: users === null ? null : users.map((u) => [u.user, u.hash] as [string, string]) });
}

/** The CA Secret could not be read: ingress-nginx's server-level `return 403` (its AuthTLSError). */
export const CA_UNREADABLE_STATUS = 403;

/**
 * Client certificates checked against `ca` (PEM certificates; null: the Secret is not resolved
 * yet, and the proxy refuses to run the policy). In the first stage, as nginx checks the
 * certificate when the request is read, before any phase of its location.
 */
export function clientCertStage(
  p: Pick<ParamsOf<typeof K.CLIENT_CERT>, "verify" | "depth" | "errorPage" | "passCertificate" | "matchCn">,
  secret: string,
  ca: readonly string[] | null,
): StagePolicy {
  return stagePolicy(K.CLIENT_CERT, { verify: p.verify, depth: p.depth, errorPage: p.errorPage, passCertificate: p.passCertificate, matchCn: p.matchCn, secret, ca: ca === null ? null : [...ca] });
}
