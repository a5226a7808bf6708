// portico.dev/deny-request-headers: a request whose header meets a rule is refused, as
// nginx's `if ($http_user_agent ~* "bot") { return 403; }` refuses it in the rewrite phase,
// before access and authentication (annotations/headers.ts reads the rules). The patterns run
// on the linear-time engine (regex/header-pattern.ts): no header value can make a match slow.
import { isDenyStatus, TOKEN } from "../../policy/headers.ts";
import { compileHeaderPattern, type HeaderPattern } from "../../regex/header-pattern.ts";
import { refusal } from "./access.ts";
import type { KindOf, PolicyKind } from "./types.ts";
import * as K from "../../policy/kinds.ts";


interface Rule {
  readonly status: number;
  readonly name: string;
  readonly negate: boolean;
  readonly re: HeaderPattern;
}

/**
 * `{ rules: [[status, name, op, pattern]...] }`, tried in order, the first met answering. nginx's `$http_<name>` is empty when the
 * header is absent, so a rule is tested against "" then (`!~ .` refuses a request without it).
 * A repeated header is tested as the values joined by ", " (the Fetch API's view of it).
 * Parameters that do not compile throw: the runner then answers 500, never lets a request by.
 */
export const HEADER_DENY: KindOf<typeof K.HEADER_DENY> = {
  contract: K.HEADER_DENY,
  build(params) {
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
  },
};
