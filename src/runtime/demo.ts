// `portico demo` (and `bun run demo`): four tiny backends on 127.0.0.1 plus Portico serving the
// demo manifests, in one process, from the single executable as from the sources. The
// manifests are compiled into the executable and written to a temporary folder at start, with
// the EndpointSlice ports set to the ports the backends really got, so a second demo (other
// --http-port) or a busy port never leaves routes pointing at nothing.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Server } from "bun";
import classYaml from "../../k8s/examples/demo/00-class.yaml" with { type: "text" };
import servicesYaml from "../../k8s/examples/demo/10-services.yaml" with { type: "text" };
import ingressesYaml from "../../k8s/examples/demo/20-ingresses.yaml" with { type: "text" };
import type { Config } from "../config/types.ts";
import type { Logger } from "../log/logger.ts";
import { run } from "./run.ts";

/** The demo backends and the EndpointSlice port each one has in k8s/examples/demo. */
export const DEMO_BACKENDS = [
  { name: "web", filePort: 18081 },
  { name: "api", filePort: 18082 },
  { name: "blog", filePort: 18083 },
  { name: "fallback", filePort: 18084 },
] as const;

export const DEMO_FILES: Readonly<Record<string, string>> = {
  "00-class.yaml": classYaml as string,
  "10-services.yaml": servicesYaml as string,
  "20-ingresses.yaml": ingressesYaml as string,
};

/**
 * The ports the backends try first: 10001-10004 above --http-port (18081-18084 with the
 * default 8080, the ports the shipped files name), so demos on different --http-ports do
 * not collide; out of range, none (the OS picks).
 */
export function preferredPorts(httpPort: number): (number | null)[] {
  return DEMO_BACKENDS.map((_, i) => (httpPort + 10_001 + i <= 65_535 ? httpPort + 10_001 + i : null));
}

/**
 * The demo files with each backend's EndpointSlice port replaced by the port it got. The
 * files are ours: each shipped port must appear exactly once, or the demo refuses to start.
 */
export function demoManifests(ports: readonly number[]): Record<string, string> {
  const out: Record<string, string> = {};
  const seen = new Map<number, number>();
  for (const [file, text] of Object.entries(DEMO_FILES)) {
    out[file] = text.replace(/\bport: (\d+)\b/g, (whole, p: string) => {
      const i = DEMO_BACKENDS.findIndex((b) => b.filePort === Number(p));
      if (i < 0) return whole;
      seen.set(i, (seen.get(i) ?? 0) + 1);
      return `port: ${ports[i]}`;
    });
  }
  for (let i = 0; i < DEMO_BACKENDS.length; i++) {
    if (seen.get(i) !== 1) throw new Error(`demo manifests: port ${DEMO_BACKENDS[i]!.filePort} of backend ${DEMO_BACKENDS[i]!.name} must appear once, found ${seen.get(i) ?? 0}`);
  }
  return out;
}

function backend(name: string, port: number): Server<undefined> {
  return Bun.serve({
    hostname: "127.0.0.1",
    port,
    development: false,
    // Off explicitly (Bun's default with development false is on): a port another demo holds
    // must fail here, so this one picks another instead of sharing it.
    reusePort: false,
    fetch(req) {
      const url = new URL(req.url);
      return Response.json({
        backend: name,
        method: req.method,
        host: req.headers.get("host"),
        path: url.pathname + url.search,
        forwardedFor: req.headers.get("x-forwarded-for"),
        forwardedProto: req.headers.get("x-forwarded-proto"),
        requestId: req.headers.get("x-request-id"),
      });
    },
  });
}

/** A backend on its preferred port, or on one the OS picks when that one is taken. */
function startBackend(name: string, preferred: number | null): Server<undefined> {
  if (preferred !== null) {
    try {
      return backend(name, preferred);
    } catch (err) {
      if ((err as { code?: unknown }).code !== "EADDRINUSE") throw err;
    }
  }
  return backend(name, 0);
}

function banner(config: Config, dir: string, ports: readonly number[]): string {
  const host = config.bind === "0.0.0.0" || config.bind === "::" ? "127.0.0.1" : config.bind.includes(":") ? `[${config.bind}]` : config.bind;
  const h = `http://${host}:${config.httpPort}`;
  const a = `http://${host}:${config.adminPort}`;
  const hp = config.httpsPort;
  return `
demo backends on 127.0.0.1:${ports.join(", ")}; Portico on :${config.httpPort} (http), :${hp} (https), :${config.adminPort} (admin)
manifests: ${dir} (edit them while the demo runs: Portico re-reads them; removed at exit)
try:
  curl -s ${h}/ -H 'Host: shop.demo.localhost'                 # web (Prefix /)
  curl -s ${h}/api/orders -H 'Host: shop.demo.localhost'       # api (Prefix /api)
  curl -s ${h}/api/version -H 'Host: shop.demo.localhost'      # blog (Exact /api/version)
  curl -s ${h}/api/version/x -H 'Host: shop.demo.localhost'    # api (Exact does not match deeper paths)
  curl -s ${h}/reports -H 'Host: shop.demo.localhost'          # 503: no ready endpoint
  curl -s ${h}/ -H 'Host: alice.blog.demo.localhost'           # blog (wildcard, one label)
  curl -si ${h}/ -H 'Host: secure.demo.localhost'              # 308 to https
  curl -sk https://secure.demo.localhost:${hp}/ --resolve secure.demo.localhost:${hp}:${host.replace(/^\[|\]$/g, "")}
  curl -s ${h}/anything -H 'Host: unknown.example'             # fallback (defaultBackend)
  curl -s '${a}/debug/routes?format=text'
  curl -s '${a}/debug/explain?host=shop.demo.localhost&path=/api/version/x'
  curl -s ${a}/metrics | head
`;
}

/** The demo's controller process (main.ts hands a worker process of the demo to runWorker). */
export async function runDemo(config: Config, log: Logger): Promise<void> {
  const servers = DEMO_BACKENDS.map((b, i) => startBackend(b.name, preferredPorts(config.httpPort)[i] ?? null));
  const ports = servers.map((s) => s.port as number);
  const dir = mkdtempSync(join(tmpdir(), "portico-demo-"));
  // The copy goes with the process, however it ends (run() exits on SIGTERM/SIGINT).
  process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
  for (const [file, text] of Object.entries(demoManifests(ports))) writeFileSync(join(dir, file), text);
  await run(Object.freeze({ ...config, manifests: dir }), log);
  process.stdout.write(banner(config, dir, ports));
}
