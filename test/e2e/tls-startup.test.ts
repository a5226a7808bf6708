// The HTTPS port from process start through readiness, through a real Portico process
// (--manifests, --default-ssl-certificate, one TLS Secret): the port is bound at start with a
// stand-in certificate, and the first table's set replaces it (docs/design.md, "Bun facts
// measured here"). Handshakes run back to back from the first instant; every one begun after
// /readyz answered 200 must complete with the first table's certificate (none reset, none
// the stand-in's), and the listener is rebuilt exactly once: later tables with the same
// certificates do not restart it. Bounded: a few start-ups, a fixed number of handshakes.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { X509Certificate } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import tls from "node:tls";
import { namedBackend, type RawBackend } from "../proxy/raw.ts";
import { createCertificate } from "../tls/pki.ts";
import { startPortico, type Portico } from "./harness.ts";
import { ingress, ingressClass, service, slice, tlsSecret, yamlDocs } from "./objects.ts";

const NS = "tls-startup";
const defaultCert = createCertificate({ subjectCN: "default", sans: ["*.default.test"] });
const hostCert = createCertificate({ subjectCN: "web.test", sans: ["web.test"] });
const STARTS = 3;
const AFTER_READY = 150;
const CLIENTS = 8;

let dir = "";
let echo: RawBackend;

beforeAll(async () => {
  echo = await namedBackend("echo");
  dir = mkdtempSync(join(tmpdir(), "portico-tls-startup-"));
  writeFileSync(join(dir, "all.yaml"), yamlDocs([
    ingressClass(), service(NS, "echo"), slice(NS, "echo", [echo.port]),
    tlsSecret(NS, "default", defaultCert.certPem, defaultCert.keyPem),
    tlsSecret(NS, "web", hostCert.certPem, hostCert.keyPem),
    ingress(NS, "web", [{ host: "web.test", paths: [{ path: "/", service: "echo" }] }], { tls: [{ hosts: ["web.test"], secretName: "web" }] }),
  ]));
});

afterAll(async () => {
  await echo?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** One handshake: the served leaf's fingerprint, or the error's code. */
function handshake(port: number, servername: string): Promise<string> {
  return new Promise((resolve) => {
    const s = tls.connect({ host: "127.0.0.1", port, servername, rejectUnauthorized: false }, () => {
      const fp = s.getPeerCertificate().fingerprint256;
      s.end();
      resolve(fp);
    });
    s.setTimeout(10_000, () => s.destroy(Object.assign(new Error("handshake timeout"), { code: "TIMEOUT" })));
    s.on("error", (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
  });
}

/** /readyz asked again as soon as each answer arrives; bounded by a deadline, fails if the process exits. */
async function waitFor200(p: Portico): Promise<void> {
  const end = performance.now() + 30_000;
  for (;;) {
    if (p.proc.exitCode !== null) throw new Error(`portico exited with ${p.proc.exitCode}:\n${p.lines.join("\n")}`);
    if (performance.now() > end) throw new Error(`not ready within 30 s:\n${p.lines.slice(-20).join("\n")}`);
    try {
      if ((await fetch(`${p.admin}/readyz`)).status === 200) return;
    } catch {
      await Bun.sleep(1); // the admin port is not bound yet
    }
  }
}

test("every handshake begun after /readyz said ready gets the first table's certificate, and the listener is rebuilt once", async () => {
  const want = { "web.test": new X509Certificate(hostCert.certPem).fingerprint256, other: new X509Certificate(defaultCert.certPem).fingerprint256 };
  for (let run = 0; run < STARTS; run++) {
    const p = await startPortico(["--manifests", dir, "--default-ssl-certificate", `${NS}/default`], { ready: false });
    try {
      let ready = false;
      let after = 0;
      const wrong: string[] = [];
      // Before ready anything goes (refused while not bound, the stand-in's certificate).
      const client = async (name: "web.test" | "other") => {
        while (after < AFTER_READY && p.proc.exitCode === null) {
          const begunReady = ready;
          const got = await handshake(p.ports.https, name);
          if (!begunReady) continue;
          after++;
          if (got !== want[name]) wrong.push(`${name}: ${got}`);
        }
      };
      const clients = Array.from({ length: CLIENTS }, (_, i) => client(i % 2 === 0 ? "web.test" : "other"));
      // Asked back to back rather than through waitReady's 10 ms polling: the first 200 is
      // seen as soon as the process says it, which is when a load balancer may start sending.
      await waitFor200(p);
      ready = true;
      await Promise.all(clients);
      expect(after).toBeGreaterThanOrEqual(AFTER_READY);
      expect(wrong).toEqual([]);
      // The stand-in replaced once; no later table restarted the listener.
      const metrics = await (await fetch(`${p.admin}/metrics`)).text();
      expect(metrics).toContain("portico_tls_rotations_total 1\n");
      expect(p.lines.filter((l) => l.includes("TLS listener started")).length).toBe(1);
    } finally {
      await p.stop();
    }
  }
});
