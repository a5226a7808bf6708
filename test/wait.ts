// The one polling helper of the suites: wait on the condition a step stands for, never on a
// fixed sleep (docs/design.md, "How the code is tested"). The timeout is a bound on waiting on
// a loaded machine, not an assertion on speed; callers assert on answers, order and counters.

/**
 * Polls `check` every `stepMs` until it returns true; throws, naming `what`, once `timeoutMs`
 * has passed without it. A check that throws counts as not yet true (a server still starting).
 */
export async function eventually(
  check: () => boolean | Promise<boolean>,
  timeoutMs = 5_000,
  what = "condition",
  stepMs = 10,
): Promise<void> {
  const end = performance.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      if (await check()) return;
      last = undefined;
    } catch (e) {
      last = e;
    }
    if (performance.now() > end) {
      const cause = last === undefined ? "" : `; last error: ${last instanceof Error ? last.message : String(last)}`;
      throw new Error(`${what} not met within ${timeoutMs} ms${cause}`);
    }
    await Bun.sleep(stepMs);
  }
}
