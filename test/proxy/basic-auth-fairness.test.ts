// Password checks of many routes share the process's hashing threads (proxy/crypt/hash-pool.ts): a
// flood of wrong passwords on many routes must not put another route's check behind all of
// theirs. The policy kind itself, on real Requests, hashing for real on the real threads; the
// order checks are handed to the threads is what is asserted, never a duration. docs/design.md, "Access control:
// source ranges and basic authentication".
import { describe, expect, test } from "bun:test";
import { MAX_SHA_CRYPT_ROUNDS } from "../../src/policy/htpasswd.ts";
import { BASIC_AUTH, CHECKS_IN_PROCESS, CHECKS_PER_ROUTE } from "../../src/kinds/basic-auth.ts";
import { shaCrypt } from "../../src/proxy/crypt/crypt.ts";
import type { PolicyFlow } from "../../src/kinds/types.ts";
import { policyCaps } from "../../src/proxy/policies/caps.ts";
import { testConfig } from "./helpers.ts";

/** The process's own capabilities: the real hashing threads, each check's password recorded as it is handed to them. */
const REAL = policyCaps(testConfig());
const handed: string[] = [];
const CAPS = {
  ...REAL,
  verifyPassword: (password: Uint8Array, hash: string, format: Parameters<typeof REAL.verifyPassword>[2]) => {
    handed.push(Buffer.from(password).toString("latin1"));
    return REAL.verifyPassword(password, hash, format);
  },
};

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`, "latin1").toString("base64")}`;
const flow = (authorization: string): PolicyFlow =>
  ({ req: new Request("http://a.test/", { headers: { authorization } }), route: {}, responseHeaders: {}, config: { ingressNginxCompat: false } }) as unknown as PolicyFlow;

describe("password checks across routes", () => {
  test("a check on a quiet route is taken in turn with the flooded routes, not after all of their checks", async () => {
    // The costliest hash accepted, so the checks queue on the threads.
    const hash = shaCrypt(Buffer.from("right"), `$6$rounds=${MAX_SHA_CRYPT_ROUNDS}$fairsalt$`, 512) as string;
    const ROUTES = 8;
    const build = () => BASIC_AUTH.build({ realm: "r", secret: "ns/users", users: [["alice", hash]] }, CAPS);
    const flooded = Array.from({ length: ROUTES }, build);
    const quiet = build();
    const order: string[] = [];
    const run = (step: ReturnType<typeof build>, name: string, password: string) =>
      Promise.resolve(step(flow(basic("alice", password)))).then((r) => {
        order.push(`${name}:${r?.status ?? "through"}`);
      });
    // Every flooded route runs its full share of checks at once.
    const flood = flooded.flatMap((step, i) => Array.from({ length: CHECKS_PER_ROUTE }, (_, n) => run(step, `flood${i}`, `wrong-${i}-${n}`)));
    const mine = run(quiet, "quiet", "right");
    await Promise.all([...flood, mine]);

    expect(order).toHaveLength(ROUTES * CHECKS_PER_ROUTE + 1);
    expect(order.filter((o) => o.startsWith("flood")).every((o) => o.endsWith(":401"))).toBe(true);
    // Round-robin: the quiet route's check is handed to the threads after the checks running
    // when it came (CHECKS_IN_PROCESS) and at most one turn of every flooded route; first come,
    // first served would hand it over after all 32. The hand-over order is decided on the event
    // loop, so it does not move with the machine's load (completion order does: the threads
    // finish checks out of their start order on busy cores).
    expect(handed).toHaveLength(ROUTES * CHECKS_PER_ROUTE + 1);
    const at = handed.indexOf("right");
    expect(at).toBeGreaterThanOrEqual(0);
    expect(at).toBeLessThanOrEqual(CHECKS_IN_PROCESS + ROUTES);
    expect(order).toContain("quiet:through");
  }, 120_000);
});
