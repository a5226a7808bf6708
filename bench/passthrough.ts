// What --enable-ssl-passthrough costs terminated HTTPS traffic: `bun bench/passthrough.ts`.
// Loopback only; every process it starts is stopped.
//
// With the flag, every HTTPS connection first meets the TCP front (src/serving/passthrough.ts):
// its ClientHello is read, then its bytes are copied to the terminating listener on a loopback
// port and back. The same build is run with and without the flag, side by side
// (bench/lib/side-by-side.ts). Keep-alive clients show the copy per byte; a new TLS connection
// per request shows the front's per-connection work (the ClientHello and one more connect).
import { makeCert } from "./lib/certs.ts";
import { sideBySide } from "./lib/side-by-side.ts";
import { writeManifests } from "./lib/systems.ts";

sideBySide({
  name: "passthrough",
  title: "--enable-ssl-passthrough: its cost for terminated HTTPS, measured side by side",
  clients: "HTTPS (HTTP/1.1, TLS 1.3)",
  scheme: "https",
  measured: "with the flag vs without",
  aaLabel: "A/A: without the flag, twice",
  async configs({ tools, dir, upstreams }) {
    const cert = await makeCert(tools.openssl, dir);
    const manifests = writeManifests(dir, upstreams, cert);
    return { on: { manifests, tls: true, extraArgs: ["--enable-ssl-passthrough"] }, off: { manifests, tls: true } };
  },
});
