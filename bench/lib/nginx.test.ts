import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { backendConf, grpcProxyConf, proxyConf, regexPath } from "./nginx.ts";

const dir = mkdtempSync(join(tmpdir(), "bench-nginx-test-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const nginx = Bun.which("nginx", { PATH: `${process.env.PATH ?? ""}:/usr/sbin` });

const ports = { keepalive: 18001, close: 18002, many: 18003, manyFirstOctet: 10, manyCount: 3, status: 18004 };

test("proxy config carries the ingress-nginx directives the comparison depends on", () => {
  const conf = proxyConf(dir, {
    httpPort: 18080, httpsPort: 18443, upstreams: [[1, 18001], [10, 18003]], certFile: join(dir, "c.crt"), keyFile: join(dir, "c.key"), workers: 1,
  });
  for (const d of ["keepalive 320;", "keepalive_requests 10000;", "proxy_http_version 1.1;", "access_log off;", "worker_processes 1;", "proxy_buffering off;"]) {
    expect(conf).toContain(d);
  }
  expect(conf).toContain("server 127.0.0.10:18003");
  expect(conf).toContain("proxy_set_header Connection $connection_upgrade;");
});

test("a backend without the many-endpoint listeners has no server block without listen (nginx would take *:80)", () => {
  const conf = backendConf(dir, dir, { ...ports, manyCount: 0 }, 1);
  const blocks = conf.split("server {").slice(1);
  expect(blocks).toHaveLength(3);
  for (const b of blocks) expect(b).toContain("listen 127.0.0.1:");
});

test("HTTP/2 variants: http2 on the TLS listener, and gRPC with grpc_pass", () => {
  const tls = { certFile: join(dir, "c.crt"), keyFile: join(dir, "c.key") };
  expect(proxyConf(dir, { httpPort: 18080, httpsPort: 18443, upstreams: [[1, 18001]], ...tls, workers: 1, http2: true })).toContain("ssl http2;");
  const g = grpcProxyConf(dir, { httpsPort: 18443, upstreamPort: 18005, ...tls });
  expect(g).toContain("grpc_pass grpc://upstream_grpc;");
  expect(g).toContain("ssl http2;");
});

test("only integers are substituted: anything else is refused", () => {
  expect(() => backendConf(dir, dir, { ...ports, keepalive: 1.5 }, 1)).toThrow();
  expect(() => backendConf(dir, dir, { ...ports, manyFirstOctet: 300 }, 1)).toThrow();
  expect(() => backendConf("/tmp/x;evil", dir, ports, 1)).toThrow();
});

test("regex paths: ingress-nginx's `location ~*` blocks in its order, each with the proxy directives, then the implicit /", () => {
  const conf = proxyConf(dir, {
    httpPort: 18080, httpsPort: 18443, upstreams: [[1, 18001]], certFile: join(dir, "c.crt"), keyFile: join(dir, "c.key"), workers: 1, regexPaths: 50,
  });
  const locations = [...conf.matchAll(/location ~\* "\^([^"]*)"/g)].map((m) => m[1]);
  expect(locations).toHaveLength(51);
  // Longest first (two-digit numbers), equal lengths in reverse byte order; "/" last.
  expect(locations.slice(0, 2)).toEqual([regexPath(49), regexPath(48)]);
  expect(locations.slice(-3)).toEqual([regexPath(1), regexPath(0), "/"]);
  expect(conf.match(/proxy_pass http:\/\/upstream_balancer;/g)).toHaveLength(50);
  expect(conf).not.toContain("location / {");
  expect(() => regexPath(1.5)).toThrow();
});

test.skipIf(!nginx)("nginx -t accepts both generated configs", () => {
  const cert = join(dir, "c.crt");
  const key = join(dir, "c.key");
  const r = Bun.spawnSync(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=t", "-keyout", key, "-out", cert], { stderr: "pipe" });
  expect(r.exitCode).toBe(0);
  const files = {
    backend: backendConf(dir, dir, ports, 1),
    proxy: proxyConf(dir, { httpPort: 18080, httpsPort: 18443, upstreams: [[1, 18001]], certFile: cert, keyFile: key, workers: 1 }),
    regex: proxyConf(dir, { httpPort: 18080, httpsPort: 18443, upstreams: [[1, 18001]], certFile: cert, keyFile: key, workers: 1, regexPaths: 50 }),
    h2proxy: proxyConf(dir, { httpPort: 18080, httpsPort: 18443, upstreams: [[1, 18001]], certFile: cert, keyFile: key, workers: 1, http2: true }),
    grpc: grpcProxyConf(dir, { httpsPort: 18443, upstreamPort: 18005, certFile: cert, keyFile: key }),
    lone: backendConf(dir, dir, { ...ports, manyCount: 0 }, 1),
  };
  for (const [name, text] of Object.entries(files)) {
    const f = join(dir, `${name}.conf`);
    writeFileSync(f, text);
    const t = Bun.spawnSync([nginx as string, "-t", "-p", dir, "-c", f, "-e", join(dir, "err.log")], { stderr: "pipe" });
    expect({ name, code: t.exitCode, err: t.exitCode === 0 ? "" : t.stderr.toString() }).toEqual({ name, code: 0, err: "" });
  }
});
