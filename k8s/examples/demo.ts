// `bun run demo`: four tiny backends on 127.0.0.1:18081-18084 plus Portico serving
// k8s/examples/demo/*.yaml with no cluster. Ctrl-C stops everything.
import { join } from "node:path";

const here = import.meta.dir;
const root = join(here, "..", "..");
const backends = [
  { name: "web", port: 18081 },
  { name: "api", port: 18082 },
  { name: "blog", port: 18083 },
  { name: "fallback", port: 18084 },
];

const servers = backends.map(({ name, port }) =>
  Bun.serve({
    hostname: "127.0.0.1",
    port,
    fetch(req) {
      const url = new URL(req.url);
      const body = {
        backend: name,
        method: req.method,
        host: req.headers.get("host"),
        path: url.pathname + url.search,
        forwardedFor: req.headers.get("x-forwarded-for"),
        forwardedProto: req.headers.get("x-forwarded-proto"),
        requestId: req.headers.get("x-request-id"),
      };
      return Response.json(body);
    },
  }),
);

const httpPort = process.env.PORTICO_HTTP_PORT ?? "8080";
const httpsPort = process.env.PORTICO_HTTPS_PORT ?? "8443";
const adminPort = process.env.PORTICO_ADMIN_PORT ?? "10254";
const portico = Bun.spawn(
  [
    process.execPath,
    join(root, "src", "main.ts"),
    "--manifests",
    join(here, "demo"),
    "--http-port",
    httpPort,
    "--https-port",
    httpsPort,
    "--admin-port",
    adminPort,
    "--bind",
    "127.0.0.1",
    "--log-format",
    "text",
    // A demo stops at once on Ctrl-C; in a cluster the 5 s default lets endpoints update first.
    "--shutdown-delay",
    "0s",
    ...process.argv.slice(2),
  ],
  { stdout: "inherit", stderr: "inherit", stdin: "ignore" },
);

const h = `http://127.0.0.1:${httpPort}`;
console.log(`
demo backends on 127.0.0.1:18081-18084; Portico on :${httpPort} (http), :${httpsPort} (https), :${adminPort} (admin)
try:
  curl -s ${h}/ -H 'Host: shop.demo.localhost'                 # web (Prefix /)
  curl -s ${h}/api/orders -H 'Host: shop.demo.localhost'       # api (Prefix /api)
  curl -s ${h}/api/version -H 'Host: shop.demo.localhost'      # blog (Exact /api/version)
  curl -s ${h}/api/version/x -H 'Host: shop.demo.localhost'    # api (Exact does not match deeper paths)
  curl -s ${h}/reports -H 'Host: shop.demo.localhost'          # 503: no ready endpoint
  curl -s ${h}/ -H 'Host: alice.blog.demo.localhost'           # blog (wildcard, one label)
  curl -si ${h}/ -H 'Host: secure.demo.localhost'              # 308 to https
  curl -sk https://secure.demo.localhost:${httpsPort}/ --resolve secure.demo.localhost:${httpsPort}:127.0.0.1
  curl -s ${h}/anything -H 'Host: unknown.example'             # fallback (defaultBackend)
  curl -s 'http://127.0.0.1:${adminPort}/debug/explain?host=shop.demo.localhost&path=/api/version/x'
  curl -s http://127.0.0.1:${adminPort}/metrics | head
`);

let stopping = false;
function shutdown(code: number): void {
  if (stopping) return;
  stopping = true;
  portico.kill("SIGTERM");
  for (const s of servers) s.stop(true);
  const timer = setTimeout(() => {
    portico.kill("SIGKILL");
    process.exit(code);
  }, 8000);
  void portico.exited.then(() => {
    clearTimeout(timer);
    process.exit(code);
  });
}
process.on("SIGINT", () => shutdown(0));
process.on("SIGTERM", () => shutdown(0));
void portico.exited.then((code) => {
  if (!stopping) {
    for (const s of servers) s.stop(true);
    process.exit(code ?? 1);
  }
});
