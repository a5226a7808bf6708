// kubectl's last-applied-configuration annotation is dropped at validation (docs/design.md
// "Sources at start-up"). The migration commands report and convert only the annotations of
// ingress-nginx and Portico, so their output is the same for the migration fixtures as they
// are and as `kubectl apply` leaves them (every object carrying its own JSON in that
// annotation): nothing reports, copies or needs it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { dump, loadAll } from "js-yaml";

const ROOT = join(import.meta.dir, "..", "..");
const cmd = process.env.PORTICO_BIN ? [process.env.PORTICO_BIN] : [process.execPath, join(ROOT, "src", "main.ts")];
const FIXTURES = join(ROOT, "test", "fixtures", "migrate", "manifests");
const LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration";
// In every annotation's text, so the output could not hide it behind a rewritten name.
const MARK = "applied-by-kubectl-marker";

let dir: string;
let applied: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "portico-lastapplied-"));
  applied = join(dir, "manifests");
  mkdirSync(applied);
  let objects = 0;
  for (const f of readdirSync(FIXTURES).sort()) {
    const docs = loadAll(readFileSync(join(FIXTURES, f), "utf8")).filter((d) => d !== null) as { metadata?: { annotations?: Record<string, string> } }[];
    const out = docs.map((d) => {
      objects++;
      const meta = d.metadata ?? {};
      // What `kubectl apply` writes: the applied object as JSON, one line.
      return { ...d, metadata: { ...meta, annotations: { ...meta.annotations, [LAST_APPLIED]: `${JSON.stringify({ ...d, note: MARK })}\n` } } };
    });
    writeFileSync(join(applied, f), out.map((d) => dump(d, { lineWidth: -1 })).join("---\n"));
  }
  expect(objects).toBeGreaterThan(10);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function run(args: string[]): Promise<{ code: number; stdout: string }> {
  const p = Bun.spawn([...cmd, ...args], { stdout: "pipe", stderr: "pipe", cwd: ROOT });
  const [stdout, code] = await Promise.all([new Response(p.stdout).text(), p.exited]);
  return { code, stdout };
}

describe("the migration commands' output does not change when every object carries last-applied-configuration", () => {
  const cases: [string, string[]][] = [
    ["migrate", ["migrate"]],
    ["migrate --output json", ["migrate", "--output", "json"]],
    ["migrate --to gateway-api", ["migrate", "--to", "gateway-api"]],
    ["migrate --to gateway-api --output json", ["migrate", "--to", "gateway-api", "--output", "json"]],
  ];
  for (const [name, args] of cases) {
    test(name, async () => {
      const plain = await run([...args, "--manifests", FIXTURES]);
      const withIt = await run([...args, "--manifests", applied]);
      // The fixtures' own annotations are reported (exit 3: some are carried by nothing).
      expect(plain.code).toBe(3);
      expect(plain.stdout).toContain("nginx.ingress.kubernetes.io/");
      expect(withIt.stdout).not.toContain(LAST_APPLIED);
      expect(withIt.stdout).not.toContain(MARK);
      expect({ code: withIt.code, stdout: withIt.stdout.replaceAll(applied, FIXTURES) }).toEqual({ code: plain.code, stdout: plain.stdout });
    });
  }
});
