// The `authentication` stage's satisfy-any kind: ingress-nginx's `satisfy: any` annotation,
// nginx's `satisfy any` (nginx.tmpl writes it in the location beside the source ranges'
// allow/deny, auth_basic and auth_request). nginx runs those three in its access phase, in
// that order, and with `satisfy any` (ngx_http_core_access_phase):
//
// - the first check that grants ends the phase: the request goes on, the later checks are not
//   run (no auth subrequest once the address or the password sufficed);
// - a check that refuses with 401 or 403 is noted and the next one runs; a source-range list
//   with no `allow` (deny entries only) that does not match the client declines: it neither
//   grants nor refuses (ngx_http_access_module returns NGX_DECLINED);
// - when none grants, the answer is 401 if any check said 401, else 403
//   (ngx_http_core_post_access_phase, `r->access_code`), and `error_page 401` (auth-signin)
//   turns that 401 into its redirect whichever check made it; when all declined, the request
//   goes on;
// - any other outcome (an auth service that failed, a password check refused for load) ends
//   the request at once, as nginx finalizes the request with any other code.
//
// The checks are the route's own source-range, basic-auth and external-auth policies, folded
// into this one by the compiler (compile/access.ts) and built here with their own kinds, so
// each keeps its own behaviour. A check's parameters that do not pass its kind's schema refuse
// the route (the runner answers 500): access control fails closed.
import * as v from "valibot";
import { SOURCE_RANGE } from "./access.ts";
import { BASIC_AUTH } from "./basic-auth.ts";
import { defineKind } from "./define.ts";
import { EXTERNAL_AUTH, signinOf } from "./external-auth.ts";
import type { PolicyCaps, PolicyFlow, PolicyKind, PolicyStep } from "./types.ts";

/** The kinds `satisfy any` spans, in nginx's access-phase order. */
export const SATISFY_KINDS: readonly PolicyKind[] = [SOURCE_RANGE, BASIC_AUTH, EXTERNAL_AUTH];
const BY_ID = new Map(SATISFY_KINDS.map((k) => [k.id, k]));

const Check = v.strictObject({
  kind: v.picklist(SATISFY_KINDS.map((k) => k.id)),
  params: v.record(v.string(), v.unknown()),
});

interface Built {
  readonly step: PolicyStep;
  /** A null answer only means "not refused" (a deny-only source range): it grants nothing. */
  readonly declines: boolean;
  /** Skipped on a no-auth-locations rule, as nginx.tmpl leaves auth_basic and auth_request out there. */
  readonly auth: boolean;
}

function buildCheck(kind: string, params: Record<string, unknown>, caps: PolicyCaps | undefined): Built {
  const k = BY_ID.get(kind);
  if (k === undefined) throw new TypeError(`satisfy any cannot combine ${kind}`);
  const parsed = v.safeParse(k.schema, params);
  if (!parsed.success) throw new TypeError(`${kind}: ${v.summarize(parsed.issues)}`);
  return {
    step: k.build(parsed.output, caps),
    declines: k === SOURCE_RANGE && (params as { allow?: unknown }).allow === null,
    auth: k !== SOURCE_RANGE,
  };
}

export const SATISFY_ANY = defineKind("satisfy-any", "authentication", v.strictObject({ checks: v.pipe(v.array(Check), v.minLength(2)) }), (params, caps) => {
  const all = params.checks.map((c) => buildCheck(c.kind, c.params, caps));
  const addressOnly = all.filter((c) => !c.auth);
  // nginx.tmpl clears Authorization for the backend wherever auth_basic is configured
  // (`proxy_set_header Authorization ""`), however the request was let in.
  const clearsAuthorization = params.checks.some((c) => c.kind === BASIC_AUTH.id);
  const ext = params.checks.find((c) => c.kind === EXTERNAL_AUTH.id);
  const signin = ext === undefined ? null : signinOf(ext.params as Parameters<typeof signinOf>[0]);
  return async (flow: PolicyFlow) => {
    const checks = flow.route.authExempt === true ? addressOnly : all;
    let unauthorized: Response | null = null;
    let forbidden: Response | null = null;
    const challenges: string[] = [];
    for (const c of checks) {
      const out = c.step(flow);
      const answer = out instanceof Promise ? await out : out;
      if (answer === null) {
        if (c.declines) continue;
        if (clearsAuthorization && flow.route.authExempt !== true && !(flow.removeHeaders ?? []).includes("authorization")) {
          (flow.removeHeaders ??= []).push("authorization");
        }
        return null;
      }
      // The external-auth check answers its own 401 as the auth-signin redirect.
      const s = answer.status === 302 && signin !== null && c.auth ? 401 : answer.status;
      if (s === 401) {
        unauthorized ??= answer;
        const w = answer.headers.get("www-authenticate");
        if (w !== null) challenges.push(w);
      } else if (s === 403) forbidden ??= answer;
      else return answer;
    }
    if (unauthorized !== null) {
      if (signin !== null) return signin(flow);
      // Every check's challenge, in the order they ran (each pushes its WWW-Authenticate).
      if (challenges.length > 1) {
        unauthorized.headers.delete("www-authenticate");
        for (const w of challenges) unauthorized.headers.append("www-authenticate", w);
      }
      return unauthorized;
    }
    return forbidden;
  };
});
