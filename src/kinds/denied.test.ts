// portico.dev/deny-request-headers in the proxy: nginx's `if ($http_<name> op "regex") {
// return status; }` (ngx_http_rewrite_module), with `$http_<name>` empty when the header is
// absent. The policy kind alone, on real Requests; test/e2e/snippet-equivalents.test.ts serves it.
import { describe, expect, test } from "bun:test";
import { HEADER_DENY } from "./denied.ts";
import type { PolicyFlow } from "./types.ts";

const flow = (headers: [string, string][]): PolicyFlow => ({ req: new Request("http://a.test/", { headers }), responseHeaders: { "x-request-id": "r1" }, config: { ingressNginxCompat: false } }) as unknown as PolicyFlow;

async function answer(rules: unknown[], headers: [string, string][]): Promise<number | null> {
  const r = await HEADER_DENY.build({ rules: rules as never })(flow(headers));
  return r === null ? null : r.status;
}

describe("header-deny", () => {
  test("~* matches anywhere, in any case; ~ only in the case written", async () => {
    expect(await answer([[403, "User-Agent", "~*", "bot"]], [["user-agent", "Mozilla (compatible; GoogleBot)"]])).toBe(403);
    expect(await answer([[403, "User-Agent", "~", "bot"]], [["user-agent", "GoogleBot"]])).toBeNull();
    expect(await answer([[403, "User-Agent", "~*", "bot"]], [])).toBeNull();
  });

  test("an absent header is the empty value: `!~` refuses it, as nginx's empty $http_ variable does", async () => {
    const key: unknown[] = [[401, "X-Api-Key", "!~", "^s3cret$"]];
    expect(await answer(key, [])).toBe(401);
    expect(await answer(key, [["x-api-key", "wrong"]])).toBe(401);
    expect(await answer(key, [["x-api-key", "s3cret"]])).toBeNull();
  });

  test("a repeated header is tested as its values joined: a second copy never slips past `!~`", async () => {
    const key: unknown[] = [[401, "X-Api-Key", "!~", "^s3cret$"]];
    expect(await answer(key, [["x-api-key", "s3cret"], ["x-api-key", "other"]])).toBe(401);
    expect(await answer([[403, "User-Agent", "~*", "bot"]], [["user-agent", "Mozilla"], ["user-agent", "evilbot"]])).toBe(403);
  });

  test("the first rule met answers, with its status and the answer's own headers", async () => {
    const rules: unknown[] = [[451, "X-Country", "~", "^XX$"], [403, "User-Agent", "~*", "curl"]];
    const r = await HEADER_DENY.build({ rules: rules as never })(flow([["x-country", "XX"], ["user-agent", "curl/8"]]));
    expect(r!.status).toBe(451);
    expect(r!.headers.get("x-request-id")).toBe("r1");
    expect(await r!.text()).toBe("refused\n");
  });

  test("parameters it cannot apply throw (the runner answers 500), never let a request by", () => {
    for (const rules of [[], [[403, "User-Agent", "=~", "bot"]], [[444, "User-Agent", "~", "bot"]], [[403, "User-Agent", "~", "(a)\\1"]], [["403", "User-Agent", "~", "bot"]], [[403, "User Agent", "~", "bot"]], [[403, "", "!~", "x"]], [[403, "X-\u00e9", "!~", "x"]]]) {
      expect(() => HEADER_DENY.build({ rules: rules as never }), JSON.stringify(rules)).toThrow();
    }
  });
});
