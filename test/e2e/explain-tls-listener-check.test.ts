// Explain's `certificate`, `tls` and answer for an HTTPS request, asked of a real Portico
// (/debug/explain) and held to a real TLS handshake with the same SNI name on its HTTPS port:
// - a Secret the listener's PEM check refuses (tls.key of another key pair) is not served: the
//   listener serves the default certificate (tls/sni.ts buildTlsEntries), and explain says so
//   and why, by the same check (model/pem-check.ts);
// - with --enable-ssl-passthrough, a host whose Ingress sets ssl-passthrough never reaches
//   Portico's TLS: the front copies the connection to the pod, whose own certificate answers
//   (ingress-nginx pkg/tcpproxy/tcp.go, controller.go getConfiguration), and explain says the
//   pod terminates TLS and no Ingress rule applies; a host without the annotation is
//   terminated by Portico as before.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect as tlsConnect } from "node:tls";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ExplainResult } from "../../src/compile/explain.ts";
import { createCertificate } from "../tls/pki.ts";
import { startPortico, type Portico } from "./harness.ts";
import { ingress, ingressClass, service, slice, tlsSecret, yamlDocs } from "./objects.ts";

const N = "nginx.ingress.kubernetes.io/";
const defPem = createCertificate({ subjectCN: "default.test", sans: ["default.test"] });
const goodPem = createCertificate({ subjectCN: "good.test", sans: ["good.test"] });
const badPem = createCertificate({ subjectCN: "bad.test", sans: ["bad.test"] });
const otherKey = createCertificate({ subjectCN: "bad.test", sans: ["bad.test"] }).keyPem;
const podPem = createCertificate({ subjectCN: "pass-pod", sans: ["pass.test"] });

/** The pod that terminates TLS itself, with its own certificate. */
const tlsPod = Bun.serve({ hostname: "127.0.0.1", port: 0, tls: { cert: podPem.certPem, key: podPem.keyPem }, fetch: () => new Response("pod") });
const webPod = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("web") });

let dir: string;
let portico: Portico;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "portico-explain-tls-check-"));
  const objs = [
    ingressClass(),
    service("web", "web"),
    slice("web", "web", [webPod.port as number]),
    service("web", "pass"),
    slice("web", "pass", [tlsPod.port as number]),
    service("web", "empty"),
    slice("web", "empty", []),
    tlsSecret("web", "default", defPem.certPem, defPem.keyPem),
    tlsSecret("web", "good", goodPem.certPem, goodPem.keyPem),
    // Parses, names bad.test, and its key is another pair's: the listener refuses it.
    tlsSecret("web", "bad", badPem.certPem, otherKey),
    ingress("web", "good", [{ host: "good.test", paths: [{ path: "/", service: "web" }] }], { tls: [{ hosts: ["good.test"], secretName: "good" }] }),
    ingress("web", "bad", [{ host: "bad.test", paths: [{ path: "/", service: "web" }] }], { tls: [{ hosts: ["bad.test"], secretName: "bad" }] }),
    ingress("web", "pass", [{ host: "pass.test", paths: [{ path: "/", service: "pass" }] }], { annotations: { [`${N}ssl-passthrough`]: "true" } }),
    ingress("web", "gone", [{ host: "gone.test", paths: [{ path: "/", service: "empty" }] }], { annotations: { [`${N}ssl-passthrough`]: "true" } }),
  ];
  writeFileSync(join(dir, "all.yaml"), yamlDocs(objs as Record<string, unknown>[]));
  portico = await startPortico(["--manifests", dir, "--enable-ssl-passthrough", "--default-ssl-certificate", "web/default", "--access-log", "off"]);
});

afterAll(async () => {
  await portico?.stop("SIGKILL");
  void tlsPod.stop(true);
  void webPod.stop(true);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function explainOf(host: string): Promise<ExplainResult> {
  const res = await fetch(`${portico.admin}/debug/explain?${new URLSearchParams({ host, path: "/", scheme: "https" })}`);
  expect(res.status).toBe(200);
  return (await res.json()) as ExplainResult;
}

/** One handshake with this SNI name: the certificate's CN (null when the connection closes first), and the answer's body. */
function handshake(servername: string): Promise<{ cn: string | null; body: string | null }> {
  return new Promise((resolve) => {
    let cn: string | null = null;
    let raw: string | null = null;
    const s = tlsConnect({ host: "127.0.0.1", port: portico.ports.https, servername, rejectUnauthorized: false, ALPNProtocols: ["http/1.1"] });
    const timer = setTimeout(() => s.destroy(), 10_000);
    s.on("secureConnect", () => {
      cn = String(s.getPeerCertificate().subject?.CN ?? "");
      raw = "";
      s.write(`GET / HTTP/1.1\r\nHost: ${servername}\r\nConnection: close\r\n\r\n`);
    });
    s.on("data", (d: Buffer) => void (raw += d.toString("latin1")));
    s.on("error", () => s.destroy());
    s.on("close", () => {
      clearTimeout(timer);
      resolve({ cn, body: raw === null ? null : raw.slice(raw.indexOf("\r\n\r\n") + 4) });
    });
  });
}

/** The CN of a Secret explain names (null: the generated certificate, which no Secret here is). */
const CN_OF: Readonly<Record<string, string>> = { "web/default": "default.test", "web/good": "good.test", "web/bad": "bad.test" };

describe("explain's certificate is the one the handshake gets", () => {
  test("a Secret whose key the listener refuses: the default certificate, and the reason", async () => {
    const e = await explainOf("bad.test");
    expect(e.certificate).toMatchObject({ via: "default", secret: "web/default", unusable: [{ secret: "web/bad", reason: "tls.key does not match the first certificate in tls.crt" }] });
    expect(e.tls?.entry).toEqual({ via: "default", host: "" });
    const got = await handshake("bad.test");
    expect(got.cn).toBe(CN_OF[e.certificate!.secret!]!);
    expect(got.body).toBe("web");
  });

  test("a Secret the listener takes: its own certificate", async () => {
    const e = await explainOf("good.test");
    expect(e.certificate).toMatchObject({ via: "exact", secret: "web/good" });
    expect(e.certificate?.unusable).toBeUndefined();
    expect(e.tls?.entry).toEqual({ via: "exact", host: "good.test" });
    expect((await handshake("good.test")).cn).toBe(CN_OF[e.certificate!.secret!]!);
  });
});

describe("--enable-ssl-passthrough: explain says the pod terminates TLS", () => {
  test("a passthrough host: the pod's own certificate and answer; no certificate or rule of Portico's", async () => {
    const e = await explainOf("pass.test");
    expect(e.outcome).toBe("passthrough");
    expect(e.response).toMatchObject({ kind: "proxied", status: null, by: "ssl-passthrough", backends: ["web/pass:80#https"] });
    expect(e.response.cause).toContain("no rule path, policy or certificate of Portico's applies");
    expect(e.certificate).toBeNull();
    expect(e.tls).toBeUndefined();
    expect(e.match).toMatchObject({ ingress: "web/pass", path: "/", answers: "proxied" });
    expect(e.candidates.filter((c) => c.verdict === "matched")).toEqual([]);
    const got = await handshake("pass.test");
    expect(got).toEqual({ cn: "pass-pod", body: "pod" });
  });

  test("a passthrough host without an endpoint: the connection is closed, no handshake", async () => {
    const e = await explainOf("gone.test");
    expect(e.outcome).toBe("passthrough");
    expect(e.response).toMatchObject({ kind: "refused", status: null, by: "ssl-passthrough" });
    expect(e.match?.answers).toBe("closed");
    expect(await handshake("gone.test")).toEqual({ cn: null, body: null });
  });

  test("over plain HTTP the same host is routed as any other (passthrough is the HTTPS port's)", async () => {
    const res = await fetch(`${portico.admin}/debug/explain?${new URLSearchParams({ host: "good.test", path: "/", scheme: "http" })}`);
    const e = (await res.json()) as ExplainResult;
    expect(e.outcome).toBe("route");
    const p = (await (await fetch(`${portico.admin}/debug/explain?${new URLSearchParams({ host: "pass.test", path: "/", scheme: "http" })}`)).json()) as ExplainResult;
    expect(p.outcome).toBe("route");
    expect(p.response.by).not.toBe("ssl-passthrough");
  });
});
