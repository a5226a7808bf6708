// --trusted-proxies through the parser and a real proxy: a rule the flag accepts is a rule the
// proxy applies. An IPv4-mapped rule (::ffff:127.0.0.0/104) must trust an IPv4 peer
// (127.0.0.1); the matcher that once sat beside the validator accepted it and then ignored it.
import { afterAll, expect, test } from "bun:test";
import { join } from "node:path";
import { parseArgs } from "../../src/config/parse.ts";
import { echoBackend, makeBackend, makeTable, startProxy } from "../proxy/helpers.ts";

const backend = echoBackend();
afterAll(() => backend.stop());

function trustedFrom(flag: string): readonly string[] {
  const o = parseArgs(["--trusted-proxies", flag], {});
  if (o.type !== "run") throw new Error(`flag refused: ${JSON.stringify(o)}`);
  return o.config.trustedProxies;
}

async function forwardedFor(trustedProxies: readonly string[]): Promise<string | undefined> {
  const proxy = startProxy(makeTable([{ path: "/", backend: makeBackend([backend.port]) }]), { trustedProxies });
  try {
    const res = await fetch(`${proxy.url}/x`, { headers: { "x-forwarded-for": "198.51.100.7" } });
    expect(res.status).toBe(200);
    return backend.seen.at(-1)?.headers["x-forwarded-for"];
  } finally {
    await proxy.stop();
  }
}

test("an IPv4-mapped CIDR trusts the IPv4 peer it covers: X-Forwarded-For is appended to", async () => {
  expect(await forwardedFor(trustedFrom("::ffff:127.0.0.0/104"))).toBe("198.51.100.7, 127.0.0.1");
});

test("a peer outside every rule is not trusted: X-Forwarded-For is replaced", async () => {
  expect(await forwardedFor(trustedFrom("::ffff:10.0.0.0/104,fd00::/8"))).toBe("127.0.0.1");
});

test("an entry the matcher cannot hold as written stops start-up: exit 2, the flag named", async () => {
  const proc = Bun.spawn([process.execPath, join(import.meta.dir, "..", "..", "src", "main.ts"), "--trusted-proxies", "10.0.0.0/8,fe80::1%eth0/64"], { stdout: "pipe", stderr: "pipe" });
  expect(await proc.exited).toBe(2);
  expect(await new Response(proc.stderr).text()).toStartWith('portico: --trusted-proxies: expected IPv4/IPv6 CIDRs separated by commas (e.g. 10.0.0.0/8,fd00::/8); "fe80::1%eth0/64" has a zone index');
});
