// What a gRPC route costs plain HTTP/1.1 traffic: `bun bench/h2c-front.ts`. Loopback only;
// every process it starts is stopped.
//
// While the table holds a gRPC route, the plain HTTP port is behind a TCP front
// (src/serving/plain.ts): each connection's first bytes are read, then its bytes are copied to
// Bun.serve on a loopback port (or, for the HTTP/2 preface, to node:http2) and back. Two
// Porticos of the same build, one with an extra `backend-protocol: GRPC` Ingress on another
// host, run side by side (bench/lib/side-by-side.ts) with plain HTTP/1.1 to the same ordinary
// route.
import { appendFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { ingress, toYaml } from "./lib/cluster.ts";
import { sideBySide } from "./lib/side-by-side.ts";
import { writeManifests } from "./lib/systems.ts";

sideBySide({
  name: "h2c-front",
  title: "A gRPC route's cost for plain HTTP/1.1 (the h2c front), measured side by side",
  clients: "plain HTTP/1.1",
  scheme: "http",
  measured: "a gRPC route (front) vs none",
  aaLabel: "A/A: no gRPC route, twice",
  async configs({ dir, upstreams }) {
    const plainDir = join(dir, "plain");
    const grpcDir = join(dir, "grpc");
    mkdirSync(plainDir, { recursive: true });
    mkdirSync(grpcDir, { recursive: true });
    const plain = writeManifests(plainDir, upstreams, null);
    const withGrpc = writeManifests(grpcDir, upstreams, null);
    // The gRPC route only has to exist: its backend is never called.
    appendFileSync(withGrpc, `\n---\n${toYaml([ingress("bench", "grpc", "grpc.bench.local", [{ path: "/", pathType: "Prefix", service: "backend" }], null, "1", { "nginx.ingress.kubernetes.io/backend-protocol": "GRPC" })])}`);
    return { on: { manifests: withGrpc, tls: false }, off: { manifests: plain, tls: false } };
  },
});
