// `portico demo`: the whole demo from the executable (sources here; test/e2e/binary.test.ts runs
// the compiled one): backends on ports that follow --http-port or are free, manifests written
// with those ports, two demos side by side, the copy removed at exit.
import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { DEMO_BACKENDS, DEMO_FILES, demoManifests, preferredPorts } from "../../src/runtime/demo.ts";
import { get, startPortico, type Portico } from "./harness.ts";

describe("demo manifests", () => {
  test("each backend's EndpointSlice port is replaced by the port it got, once; nothing else changes", () => {
    const out = demoManifests([20001, 20002, 20003, 20004]);
    expect(Object.keys(out).sort()).toEqual(Object.keys(DEMO_FILES).sort());
    for (const b of DEMO_BACKENDS) expect(Object.values(out).join("\n")).not.toContain(`port: ${b.filePort} `);
    expect(out["10-services.yaml"]).toContain("ports: [{ name: http, port: 20001 }]");
    expect(out["10-services.yaml"]).toContain("ports: [{ name: http, port: 20004 }]");
    expect(out["20-ingresses.yaml"]).toBe(DEMO_FILES["20-ingresses.yaml"]!);
    // The same ports as the files: the copy is the files.
    expect(demoManifests(DEMO_BACKENDS.map((b) => b.filePort))).toEqual({ ...DEMO_FILES });
  });

  test("backend ports follow --http-port (18081-18084 with 8080), none when out of range", () => {
    expect(preferredPorts(8080)).toEqual([18081, 18082, 18083, 18084]);
    expect(preferredPorts(9080)).toEqual([19081, 19082, 19083, 19084]);
    expect(preferredPorts(55533)).toEqual([65534, 65535, null, null]);
  });
});

async function demoBackendsLine(p: Portico): Promise<number[]> {
  const line = await p.waitForLine(/^demo backends on 127\.0\.0\.1:/);
  return line.replace(/;.*$/, "").replace("demo backends on 127.0.0.1:", "").split(", ").map(Number);
}

describe("portico demo", () => {
  test("routes to its own backends; a second demo on other ports runs next to it; the copy goes at exit", async () => {
    const first = await startPortico([], { subcommand: "demo" });
    const second = await startPortico([], { subcommand: "demo" });
    try {
      for (const p of [first, second]) {
        const web = await get(p.http, "shop.demo.localhost", "/");
        expect(web.status).toBe(200);
        expect(JSON.parse(web.body)).toMatchObject({ backend: "web", host: "shop.demo.localhost", path: "/" });
        expect(JSON.parse((await get(p.http, "shop.demo.localhost", "/api/version")).body).backend).toBe("blog");
        expect(JSON.parse((await get(p.http, "unknown.example", "/x")).body).backend).toBe("fallback");
        expect((await get(p.http, "shop.demo.localhost", "/reports")).status).toBe(503);
        expect((await get(p.http, "secure.demo.localhost", "/")).status).toBe(308);
      }
      const a = await demoBackendsLine(first);
      const b = await demoBackendsLine(second);
      expect(a).toHaveLength(4);
      expect(new Set([...a, ...b]).size).toBe(8); // no shared backend port
      // The manifests copy is named, and edits to it are served.
      const copy = (await first.waitForLine(/^manifests: /)).split(" ")[1]!;
      expect(existsSync(copy)).toBe(true);
      expect(first.lines.some((l) => l.includes(`--resolve secure.demo.localhost:${first.ports.https}:127.0.0.1`))).toBe(true);
      expect(await first.stop()).toBe(0);
      expect(existsSync(copy)).toBe(false);
    } finally {
      await first.stop();
      await second.stop();
    }
  });

  test("with worker processes (they re-run the demo command and only serve)", async () => {
    const p = await startPortico(["--workers", "2"], { subcommand: "demo" });
    try {
      await p.waitForLine(/every worker is serving/);
      for (let i = 0; i < 4; i++) expect(JSON.parse((await get(p.http, "shop.demo.localhost", "/api/x")).body).backend).toBe("api");
      // One set of backends: the workers did not start their own.
      expect(p.lines.filter((l) => l.startsWith("demo backends on")).length).toBe(1);
    } finally {
      expect(await p.stop()).toBe(0);
    }
  });

  test("its defaults: loopback, text logs; and it takes no source of its own", async () => {
    const p = await startPortico([], { subcommand: "demo" });
    try {
      expect(p.lines.find((l) => / INFO starting /.test(l))).toContain("config.bind=127.0.0.1");
    } finally {
      await p.stop();
    }
    const r = Bun.spawnSync([process.execPath, "src/main.ts", "demo", "--manifests", "x"], { cwd: `${import.meta.dir}/../..` });
    expect(r.exitCode).toBe(2);
    expect(r.stderr.toString()).toContain("demo: --manifests cannot be used");
  });
});
