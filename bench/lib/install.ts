// Installs the benchmark's external tools from Debian when they are missing.
// Argument arrays only (no shell), so nothing is ever interpreted by /bin/sh.

export interface Tools {
  readonly nginx: string;
  readonly wrk: string;
  readonly openssl: string;
  readonly taskset: string;
}

function find(name: string, extra: readonly string[] = []): string | null {
  const hit = Bun.which(name, { PATH: `${process.env.PATH ?? ""}:/usr/sbin:/sbin:/usr/bin` });
  if (hit) return hit;
  for (const p of extra) if (Bun.spawnSync(["test", "-x", p]).exitCode === 0) return p;
  return null;
}

async function run(cmd: readonly string[], env?: Record<string, string>): Promise<void> {
  const p = Bun.spawn([...cmd], {
    stdout: "inherit",
    stderr: "inherit",
    env: { ...process.env, ...env },
  });
  const code = await p.exited;
  if (code !== 0) throw new Error(`${cmd.join(" ")} exited ${code}`);
}

/** Debian packages to install for each missing tool (nginx-light is enough: no Lua needed). */
const PACKAGES: Record<keyof Tools, readonly string[]> = {
  nginx: ["nginx-light"],
  wrk: ["wrk"],
  openssl: ["openssl"],
  taskset: ["util-linux"],
};

/** Finds nginx, wrk, openssl and taskset; installs the missing ones with apt-get (Debian/Ubuntu). */
export async function ensureTools(log: (msg: string) => void): Promise<Tools> {
  const locate = (): Partial<Record<keyof Tools, string | null>> => ({
    nginx: find("nginx", ["/usr/sbin/nginx"]),
    wrk: find("wrk"),
    openssl: find("openssl"),
    taskset: find("taskset"),
  });
  let found = locate();
  const missing = (Object.keys(PACKAGES) as (keyof Tools)[]).filter((k) => !found[k]);
  if (missing.length > 0) {
    if (!find("apt-get")) throw new Error(`missing ${missing.join(", ")} and no apt-get: install them by hand`);
    const pkgs = missing.flatMap((k) => PACKAGES[k]);
    const sudo = process.getuid?.() === 0 ? [] : ["sudo"];
    log(`installing ${pkgs.join(" ")} with apt-get`);
    const env = { DEBIAN_FRONTEND: "noninteractive" };
    await run([...sudo, "apt-get", "update"], env);
    try {
      await run([...sudo, "apt-get", "install", "-y", "--no-install-recommends", ...pkgs], env);
    } catch {
      // Ubuntu 24.04+ dropped nginx-light: fall back to the full package.
      await run([...sudo, "apt-get", "install", "-y", "--no-install-recommends", ...pkgs.map((p) => (p === "nginx-light" ? "nginx" : p))], env);
    }
    found = locate();
  }
  const still = (Object.keys(PACKAGES) as (keyof Tools)[]).filter((k) => !found[k]);
  if (still.length > 0) throw new Error(`still missing after install: ${still.join(", ")}`);
  return found as Tools;
}

function firstLine(cmd: readonly string[]): string {
  const r = Bun.spawnSync([...cmd], { stdout: "pipe", stderr: "pipe" });
  const text = `${r.stdout.toString()}${r.stderr.toString()}`;
  return (text.split("\n").find((l) => l.trim() !== "") ?? "unknown").trim();
}

/** Version strings for the report header. */
export function versions(t: Tools): { bun: string; nginx: string; wrk: string; openssl: string } {
  return {
    bun: Bun.version,
    nginx: firstLine([t.nginx, "-v"]).replace(/^nginx version:\s*/, ""),
    wrk: firstLine([t.wrk, "-v"]).replace(/\s*Copyright.*$/, ""),
    openssl: firstLine([t.openssl, "version"]),
  };
}
