// Password checks against a running Portico (the sources, --manifests): the caps on what a hash
// may cost (policy/htpasswd.ts), and a flood of wrong passwords for the costliest hash
// accepted that leaves another host served while it runs, with the number of checks one route
// runs at once bounded (kinds/basic-auth.ts, read back from /metrics). docs/design.md,
// "Access control: source ranges and basic authentication".
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MAX_BCRYPT_COST, MAX_SHA_CRYPT_ROUNDS } from "../../src/policy/htpasswd.ts";
import { CHECKS_PER_ROUTE, WAITING_PER_ROUTE } from "../../src/kinds/basic-auth.ts";
import { shaCrypt } from "../../src/proxy/crypt/crypt.ts";
import { get, startBackend, startPortico, type Backend, type Portico } from "./harness.ts";
import { ingress, ingressClass, service, slice, yamlDocs } from "./objects.ts";
import { eventually } from "../wait.ts";

const N = "nginx.ingress.kubernetes.io/";
const PASSWORD = "correct horse";
const basic = (user: string, password: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${password}`, "latin1").toString("base64")}` });

let dir: string;
let backend: Backend;
let portico: Portico;

async function metric(name: string): Promise<number | null> {
  const text = await (await fetch(`${portico.admin}/metrics`)).text();
  const m = new RegExp(`^${name} (\\S+)$`, "m").exec(text);
  return m === null ? null : Number(m[1]);
}

beforeAll(async () => {
  const pw = Buffer.from(PASSWORD);
  // alice and carol sit exactly at the caps (the most accepted); dave and erin one step over.
  const users = [
    `alice:${shaCrypt(pw, `$6$rounds=${MAX_SHA_CRYPT_ROUNDS}$floodsalt$`, 512)}`,
    `carol:${await Bun.password.hash(PASSWORD, { algorithm: "bcrypt", cost: MAX_BCRYPT_COST })}`,
    `dave:${await Bun.password.hash(PASSWORD, { algorithm: "bcrypt", cost: MAX_BCRYPT_COST + 1 })}`,
    `erin:${shaCrypt(pw, `$6$rounds=${MAX_SHA_CRYPT_ROUNDS + 1}$floodsalt$`, 512)}`,
  ];
  backend = startBackend("be");
  dir = mkdtempSync(join(tmpdir(), "portico-auth-flood-"));
  const objs = [
    ingressClass(),
    service("shop", "be"),
    slice("shop", "be", [backend.port]),
    ingress("shop", "vault", [{ host: "vault.test", paths: [{ path: "/", service: "be" }] }], {
      annotations: { [`${N}auth-type`]: "basic", [`${N}auth-secret`]: "users" },
    }),
    ingress("shop", "open", [{ host: "open.test", paths: [{ path: "/", service: "be" }] }]),
    { apiVersion: "v1", kind: "Secret", type: "Opaque", metadata: { name: "users", namespace: "shop" }, data: { auth: Buffer.from(`${users.join("\n")}\n`).toString("base64") } },
  ];
  writeFileSync(join(dir, "all.yaml"), yamlDocs(objs as Record<string, unknown>[]));
  portico = await startPortico(["--manifests", dir, "--log-level", "info", "--access-log", "off"]);
}, 60_000);

afterAll(async () => {
  await portico?.stop("SIGKILL");
  backend?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("caps on what a hash may cost", () => {
  test("entries at the caps authenticate; one step over, the right password is refused (401) and a diagnostic names the user", async () => {
    for (const user of ["alice", "carol"]) {
      const r = await get(portico.http, "vault.test", `/as-${user}`, { headers: basic(user, PASSWORD) });
      expect({ user, status: r.status, body: r.body }).toEqual({ user, status: 200, body: `be /as-${user}` });
      expect((await get(portico.http, "vault.test", "/", { headers: basic(user, "wrong") })).status).toBe(401);
    }
    for (const user of ["dave", "erin"]) {
      const r = await get(portico.http, "vault.test", "/", { headers: basic(user, PASSWORD) });
      expect({ user, status: r.status }).toEqual({ user, status: 401 });
      expect(r.headers.get("www-authenticate")).toBe('Basic realm=""');
    }
    const log = portico.lines.join("\n");
    expect(log).toContain(`user \\"dave\\" cannot log in: its bcrypt cost ${MAX_BCRYPT_COST + 1} is above ${MAX_BCRYPT_COST}`);
    expect(log).toContain(`user \\"erin\\" cannot log in: its ${MAX_SHA_CRYPT_ROUNDS + 1} SHA-crypt rounds are above ${MAX_SHA_CRYPT_ROUNDS}`);
  });
});

describe("a flood of wrong passwords", () => {
  test("another host answers every request while it runs; one route never runs more than its bound of checks at once", async () => {
    // alice logged in above: her login is remembered, so she keeps getting in during the flood.
    expect((await get(portico.http, "vault.test", "/", { headers: basic("alice", PASSWORD) })).status).toBe(200);
    const rememberedBefore = (await metric("portico_basic_auth_remembered_total")) ?? 0;

    // More flooders than the route's checks and waiting places, each sending a new wrong
    // password (or an unknown user, which costs the same) as soon as it has an answer. After a
    // 503 a flooder waits for some check to finish before trying again, so it does not spin.
    const FLOODERS = CHECKS_PER_ROUTE + WAITING_PER_ROUTE + 4;
    const statuses: number[] = [];
    let stop = false;
    let wake: () => void = () => {};
    let checked = new Promise<void>((r) => (wake = r));
    const finished = () => {
      wake();
      checked = new Promise<void>((r) => (wake = r));
    };
    const flooder = async (n: number) => {
      for (let i = 0; !stop; i++) {
        const user = i % 5 === 4 ? `mallory${n}` : "alice";
        const res = await fetch(`${portico.http}/`, { headers: { host: "vault.test", ...basic(user, `guess-${n}-${i}`) } });
        await res.arrayBuffer();
        statuses.push(res.status);
        if (res.status === 503) await checked;
        else finished();
      }
    };
    const flood = Array.from({ length: FLOODERS }, (_, n) => flooder(n));
    try {
      // The flood is hashing (the gauge counts checks running now) before the probes start.
      await eventually(async () => ((await metric("portico_basic_auth_checks_active")) ?? 0) >= 1, 15_000);
      // Probe the other host until the flood has had two answers per flooder: every probe
      // is answered, in full, while the checks go on (bounded: a flood that stalls fails).
      const until = statuses.length + 2 * FLOODERS;
      let probes = 0;
      for (; statuses.length < until; probes++) {
        expect(probes).toBeLessThan(20_000);
        const r = await get(portico.http, "open.test", `/probe-${probes}`);
        expect({ probes, status: r.status, body: r.body }).toEqual({ probes, status: 200, body: `be /probe-${probes}` });
      }
      expect(probes).toBeGreaterThan(0);
      // The remembered login is let in without waiting for the flooded checks.
      expect((await get(portico.http, "vault.test", "/mid-flood", { headers: basic("alice", PASSWORD) })).status).toBe(200);
    } finally {
      stop = true;
      wake();
      await Promise.all(flood);
    }

    // Wrong passwords only ever got 401, or 503 once the route's places were all taken.
    const counts = { 401: 0, 503: 0, other: 0 };
    for (const s of statuses) counts[s === 401 ? 401 : s === 503 ? 503 : "other"]++;
    expect(counts[503]).toBeGreaterThan(0);
    expect(counts.other).toBe(0);
    expect(counts[401]).toBeGreaterThan(0);
    // The bound, reached and never passed; every 503 counted; the remembered login counted.
    expect(await metric("portico_basic_auth_checks_peak_per_route")).toBe(CHECKS_PER_ROUTE);
    expect((await metric("portico_basic_auth_busy_total")) ?? 0).toBe(counts[503]);
    expect((await metric("portico_basic_auth_remembered_total")) ?? 0).toBeGreaterThan(rememberedBefore);
    await eventually(async () => (await metric("portico_basic_auth_checks_active")) === 0, 15_000);
    expect(portico.proc.exitCode).toBeNull();
  }, 60_000);
});
