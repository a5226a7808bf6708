// The image cannot be built here (no Docker engine), so the Dockerfile is checked statically:
// stages, pinned base images, non-root user, exec-form entrypoint at the path the build script
// writes, and a final stage that holds nothing but the binary.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join, posix } from "node:path";
import { OUTFILE } from "../../scripts/build.ts";
import { ROOT } from "./k8s.ts";

interface Instruction {
  op: string; // upper case
  args: string;
  line: number;
}
interface Stage {
  from: string;
  name: string | null;
  body: Instruction[];
}

/** Instructions with continuation lines joined and comments dropped (Dockerfile reference, "Format"). */
function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const start = i;
    let line = lines[i]!.trim();
    if (line === "" || line.startsWith("#")) continue;
    while (line.endsWith("\\") && i + 1 < lines.length) {
      line = line.slice(0, -1);
      const next = lines[++i]!.trim();
      if (!next.startsWith("#")) line += ` ${next}`;
    }
    const m = /^(\S+)\s*(.*)$/.exec(line)!;
    out.push({ op: m[1]!.toUpperCase(), args: m[2]!.trim(), line: start + 1 });
  }
  return out;
}

function stages(ins: readonly Instruction[]): Stage[] {
  const out: Stage[] = [];
  for (const i of ins) {
    if (i.op === "FROM") {
      const m = /^(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$/i.exec(i.args);
      if (!m) throw new Error(`line ${i.line}: cannot read FROM ${i.args}`);
      out.push({ from: m[1]!, name: m[2] ?? null, body: [] });
    } else if (out.length === 0) {
      if (i.op !== "ARG") throw new Error(`line ${i.line}: ${i.op} before the first FROM`);
    } else out.at(-1)!.body.push(i);
  }
  return out;
}

/** JSON (exec) form or null for shell form. */
function execForm(args: string): string[] | null {
  try {
    const v: unknown = JSON.parse(args);
    return Array.isArray(v) && v.every((x) => typeof x === "string") ? v : null;
  } catch {
    return null;
  }
}

const text = readFileSync(join(ROOT, "Dockerfile"), "utf8");
const all = stages(parseDockerfile(text));
const build = all[0]!;
const final = all.at(-1)!;
const only = (s: Stage, op: string) => s.body.filter((i) => i.op === op);

describe("Dockerfile", () => {
  test("two stages: the official Bun image of the CI version, then distroless cc nonroot", () => {
    expect(all.length).toBe(2);
    const ciBun = /^BUN_VERSION=(\S+)$/m.exec(readFileSync(join(ROOT, ".ci/run"), "utf8"))?.[1] ?? Bun.version;
    expect(build.from).toBe(`oven/bun:${ciBun}`);
    expect(build.name).toBe("build");
    expect(final.from).toBe("gcr.io/distroless/cc-debian12:nonroot");
  });

  test("every base image is pinned by a tag that is not latest (or by digest)", () => {
    for (const s of all) {
      const digest = /@sha256:[0-9a-f]{64}$/.test(s.from);
      const tag = /^[^@]+:([\w][\w.-]*)(@sha256:[0-9a-f]{64})?$/.exec(s.from)?.[1];
      expect(digest || (tag !== undefined && tag !== "latest"), s.from).toBe(true);
    }
  });

  test("the build stage installs from the lockfile and runs the build script", () => {
    const runs = only(build, "RUN").map((i) => execForm(i.args)?.join(" ") ?? i.args);
    expect(runs).toContain("bun install --frozen-lockfile");
    expect(runs).toContain("bun run build");
    const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> };
    expect(pkg.scripts.build).toBe("bun scripts/build.ts");
    // The commit reaches scripts/build.ts as a build argument (no .git in the context).
    expect(only(build, "ARG").map((i) => i.args)).toContain("PORTICO_BUILD_COMMIT=unknown");
  });

  test("the final stage copies only the build output, to the entrypoint path", () => {
    const copies = only(final, "COPY");
    expect(copies.length).toBe(1);
    const [flag, src, dst, ...rest] = copies[0]!.args.split(/\s+/);
    expect(rest).toEqual([]);
    expect(flag).toBe(`--from=${build.name}`);
    const workdir = only(build, "WORKDIR").at(-1)?.args ?? "/";
    expect(src).toBe(posix.join(workdir, OUTFILE));
    const entry = only(final, "ENTRYPOINT");
    expect(entry.length).toBe(1);
    const argv = execForm(entry[0]!.args);
    expect(argv).toEqual([dst!]);
    expect(dst).toBe("/portico");
  });

  test("the final stage runs nothing, uses exec forms only, and is not root", () => {
    expect(only(final, "RUN")).toEqual([]);
    expect(only(final, "ADD")).toEqual([]);
    for (const i of [...only(final, "ENTRYPOINT"), ...only(final, "CMD")]) expect(execForm(i.args), `line ${i.line}`).not.toBeNull();
    const users = only(final, "USER");
    expect(users.length).toBe(1);
    const user = users[0]!.args.split(":")[0]!;
    expect(["root", "0", ""]).not.toContain(user);
    // distroless "nonroot" is uid 65532, which k8s/deployment.yaml runs as; numeric, because the
    // kubelet refuses a non-numeric USER it cannot resolve when runAsUser is not set.
    expect(user).toBe("65532");
  });

  test("exposes the http, https and admin ports", () => {
    const ports = only(final, "EXPOSE").flatMap((i) => i.args.split(/\s+/));
    expect(ports.sort()).toEqual(["10254", "8080", "8443"]);
  });

  test("the parser sees shell forms and RUN lines (negative control)", () => {
    const bad = stages(parseDockerfile("FROM a:1 AS b\nFROM c:2\nRUN echo \\\n  hi\nENTRYPOINT /portico\n"));
    expect(only(bad[1]!, "RUN")[0]?.args).toBe("echo  hi");
    expect(execForm(only(bad[1]!, "ENTRYPOINT")[0]!.args)).toBeNull();
  });
});

describe(".dockerignore", () => {
  const patterns = readFileSync(join(ROOT, ".dockerignore"), "utf8")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("#"));

  test("keeps local state and heavy folders out of the build context", () => {
    for (const p of ["node_modules", "dist", ".git", "test", "bench", ".env"]) expect(patterns).toContain(p);
  });

  test("does not exclude anything the Dockerfile copies", () => {
    const copied = only(build, "COPY").flatMap((i) => i.args.split(/\s+/).slice(0, -1).filter((a) => !a.startsWith("--")));
    expect(copied.sort()).toEqual(["bun.lock", "k8s/examples/demo", "package.json", "scripts", "src", "tsconfig.json"]);
    for (const c of copied) {
      const excluded = patterns.some((p) => !p.startsWith("!") && new Bun.Glob(p).match(c));
      expect(excluded, c).toBe(false);
    }
  });
});
