// The proof of `portico migrate --to gateway-api` for a set of manifests, as the real command
// gives it (`--prove --output json`; src/runtime/prove.ts does the work: docs/design.md,
// "Converting to Gateway API"). The report adds what the command's JSON holds in other fields
// (objects, notes) and the conversion's own exit status (without the proof's).
//
// Used by test/migrate/to-gateway.test.ts and prove-report.ts, and run by hand:
//   bun test/migrate/prove.ts [--class NAME --controller-class S] [--out FILE.json] MANIFESTS
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ConversionNote } from "../../src/compile/to-gateway.ts";
import type { Obj, Proof, ProofDifference } from "../../src/runtime/prove.ts";

export type { ProofAnswer, ProofDifference, ProofRequest } from "../../src/runtime/prove.ts";

const ROOT = join(import.meta.dir, "..", "..");
const CMD = process.env.PORTICO_BIN ? [process.env.PORTICO_BIN] : [process.execPath, join(ROOT, "src", "main.ts")];

export interface ProofReport {
  readonly manifests: string;
  /** The command run on them (the class flags given). */
  readonly command: string;
  /** The command's exit status (the proof's differences included). */
  readonly commandExit: number;
  /** The conversion's own exit status, as without --prove: 1 not read, 3 a note carried by the extension or nothing, 0 otherwise. */
  readonly exitCode: number;
  /** Objects written, by kind. */
  readonly objects: Readonly<Record<string, number>>;
  /** Notes by carriedAs. */
  readonly notes: Readonly<Record<string, number>>;
  readonly notesList: readonly ConversionNote[];
  readonly objectsList: readonly Obj[];
  readonly asked: number;
  readonly same: number;
  readonly differing: readonly ProofDifference[];
}

export async function prove(manifests: string, classFlags: readonly string[] = []): Promise<ProofReport> {
  const args = ["migrate", "--to", "gateway-api", "--prove", "--output", "json", "--manifests", manifests, ...classFlags];
  const p = Bun.spawn([...CMD, ...args], { stdout: "pipe", stderr: "pipe", cwd: ROOT });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  let j: { objects: Obj[]; notes: ConversionNote[]; invalidObjects: unknown[]; proof?: Proof };
  try {
    j = JSON.parse(out);
  } catch {
    throw new Error(`portico ${args.join(" ")} exited ${code} without JSON: ${err}`);
  }
  if (j.proof === undefined) throw new Error(`portico ${args.join(" ")} exited ${code} without a proof: ${err}`);
  const count = <T,>(xs: readonly T[], f: (x: T) => string) => {
    const o: Record<string, number> = {};
    for (const x of xs) o[f(x)] = (o[f(x)] ?? 0) + 1;
    return o;
  };
  return {
    manifests,
    command: ["portico", "migrate", "--to", "gateway-api", "--manifests", "<set>", ...classFlags].join(" "),
    commandExit: code,
    exitCode: j.invalidObjects.length > 0 ? 1 : j.notes.some((n) => n.carriedAs === "not-expressible" || n.carriedAs === "portico-extension") ? 3 : 0,
    objects: count(j.objects, (o) => o.kind ?? "?"),
    notes: count(j.notes, (n) => n.carriedAs ?? "not read"),
    notesList: j.notes,
    objectsList: j.objects,
    asked: j.proof.asked,
    same: j.proof.same,
    differing: j.proof.differ,
  };
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const classFlags: string[] = [];
  let out: string | null = null;
  let path: string | null = null;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === "--class") classFlags.push("--ingress-class", args[++i]!);
    else if (a === "--controller-class") classFlags.push("--controller-class", args[++i]!);
    else if (a === "--out") out = args[++i]!;
    else path = a;
  }
  if (path === null) throw new Error("usage: bun test/migrate/prove.ts [--class NAME --controller-class S] [--out FILE.json] MANIFESTS");
  const r = await prove(path, classFlags);
  const text = `${JSON.stringify(r, null, 2)}\n`;
  if (out !== null) writeFileSync(out, text);
  else process.stdout.write(text);
  process.exit(0);
}
