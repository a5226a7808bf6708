// The `denied` stage: routes and requests refused before anything else of the location runs
// (ingress-nginx's rewrite phase): a location denied for a bad annotation (503), access or
// authentication annotations that cannot be applied, a Gateway API rule that cannot be served,
// and portico.dev/deny-request-headers. Every kind of the stage is defined here.
//
// deny-request-headers: a request whose header meets a rule is refused, as nginx's
// `if ($http_user_agent ~* "bot") { return 403; }` refuses it in the rewrite phase, before
// access and authentication (annotations/headers.ts reads the rules). The patterns run on the
// linear-time engine (regex/header-pattern.ts): no header value can make a match slow.
import * as v from "valibot";
import { grpcErrorResponse, isGrpc } from "../http/grpc-status.ts";
import { isDenyStatus, TOKEN } from "../policy/headers.ts";
import { compileHeaderPattern, type HeaderPattern } from "../regex/header-pattern.ts";
import { defineKind } from "./define.ts";
import { refusal } from "./refusal.ts";
import { Str } from "./schema.ts";

interface Rule {
  readonly status: number;
  readonly name: string;
  readonly negate: boolean;
  readonly re: HeaderPattern;
}

/**
 * deny-request-headers: `[status, name, op, pattern]` rules tried in order.
 *
 * `{ rules: [[status, name, op, pattern]...] }`, tried in order, the first met answering. nginx's `$http_<name>` is empty when the
 * header is absent, so a rule is tested against "" then (`!~ .` refuses a request without it).
 * A repeated header is tested as the values joined by ", " (the Fetch API's view of it).
 * Parameters that do not compile throw: the runner then answers 500, never lets a request by.
 */
export const HEADER_DENY = defineKind("header-deny", "denied", v.object({ rules: v.pipe(v.array(v.tuple([v.number(), v.string(), v.picklist(["~", "~*", "!~", "!~*"]), v.string()])), v.minLength(1)) }), (params) => {
  const list = params.rules;
  if (!Array.isArray(list) || list.length === 0) throw new TypeError("no rules");
  const rules: Rule[] = list.map((r) => {
    if (!Array.isArray(r) || r.length !== 4 || !isDenyStatus(r[0] as number) || !r.slice(1).every((x) => typeof x === "string")) throw new TypeError("a rule is not [status, name, op, pattern]");
    const [status, name, op, pattern] = r as [number, string, string, string];
    // A name that is no RFC 9110 token would make Headers.get throw on every request: refused
    // here, when the route is built, as the other bad parameters are.
    if (!TOKEN.test(name)) throw new TypeError(`${JSON.stringify(name)} is not a header name`);
    if (!["~", "~*", "!~", "!~*"].includes(op)) throw new TypeError(`unknown operator ${op}`);
    const c = compileHeaderPattern(op.endsWith("*") ? `(?i)${pattern}` : pattern);
    if (!c.ok) throw new TypeError(`pattern ${c.reason}`);
    return { status, name, negate: op.startsWith("!"), re: c.re };
  });
  return (flow) => {
    for (const r of rules) {
      if (r.re.test(flow.req.headers.get(r.name) ?? "") !== r.negate) return refusal(flow, r.status, r.status === 403 ? "forbidden\n" : "refused\n");
    }
    return null;
  };
});

/**
 * An Ingress ingress-nginx would refuse (a malformed redirect, upstream-vhost or server-alias
 * value): every request of its routes answers 503, as ingress-nginx answers a location denied
 * by an annotation error, rather than being served without the annotation. The reason is in
 * the params for /debug/routes and the diagnostic, never for the client.
 */
export const DENIED = defineKind("denied", "denied", v.object({ reason: Str }), () => (flow) => refusal(flow, 503, "service unavailable\n"));

/**
 * Access or authentication annotations that cannot be applied: `status` for every request.
 *
 * `{ status: 503, reason }`: the route's access or authentication annotations cannot be
 * applied (a bad CIDR, a missing Secret...), so every request is refused, as ingress-nginx's
 * "location denied" answers 503. The reason is for /debug/routes and diagnostics, never the client.
 */
export const REFUSE = defineKind("refuse", "denied", v.object({ status: v.pipe(v.number(), v.integer(), v.minValue(400), v.maxValue(599)), reason: Str }), (params) => {
  const status = params.status;
  if (typeof status !== "number" || !Number.isInteger(status) || status < 400 || status > 599) throw new TypeError("status is not an error status");
  return (flow) => refusal(flow, status, status === 503 ? "service unavailable\n" : "refused\n");
});

/**
 * A rule, or a share of one, that cannot be served: 500 (HTTPBackendRef: invalid references).
 * A gRPC call gets Trailers-Only UNAVAILABLE instead, as Portico's own failures on gRPC
 * requests do (docs/design.md "HTTP/2 and gRPC"), which is what GRPCRouteRule.backendRefs asks
 * for a call that would have gone to an invalid backend.
 */
export const GATEWAY_ERROR = defineKind("gateway-error", "denied", v.object({ reason: Str }), () => {
  return (flow) => (isGrpc(flow.req.headers) ? grpcErrorResponse("NoEndpoints", flow.responseHeaders) : refusal(flow, 500, "internal server error\n"));
});
