// ingress-nginx's defaults under --ingress-nginx-compat, as requests to the real process
// (config/nginx-defaults.ts; ingress-nginx v1.15.1 config.go NewDefault: ProxyBodySize "1m",
// HSTSIncludeSubdomains true): a 2 MiB body gets 413 where the Ingress does not raise the limit,
// an Ingress's proxy-body-size raises it, and HSTS carries includeSubDomains.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createCertificate } from "../tls/pki.ts";
import { get, startBackend, startPortico, type Backend, type Portico } from "./harness.ts";
import { ingress, service, slice, tlsSecret, yamlDocs } from "./objects.ts";

let web: Backend;
let dir: string;
const N = "nginx.ingress.kubernetes.io/";

beforeAll(() => {
  web = startBackend("web");
  dir = mkdtempSync(join(tmpdir(), "portico-nginx-defaults-"));
  const cert = createCertificate({ subjectCN: "tls.test", sans: ["tls.test"] });
  writeFileSync(join(dir, "objects.yaml"), yamlDocs([
    service("app", "web"),
    slice("app", "web", [web.port]),
    tlsSecret("app", "tls", cert.certPem, cert.keyPem),
    ingress("app", "plain", [{ host: "plain.test", paths: [{ path: "/", service: "web" }] }], { className: "nginx" }),
    ingress("app", "big", [{ host: "big.test", paths: [{ path: "/", service: "web" }] }], { className: "nginx", annotations: { [`${N}proxy-body-size`]: "8m" } }),
    ingress("app", "tls", [{ host: "tls.test", paths: [{ path: "/", service: "web" }] }], { className: "nginx", tls: [{ hosts: ["tls.test"], secretName: "tls" }] }),
  ]));
});

afterAll(() => {
  web.stop();
  rmSync(dir, { recursive: true, force: true });
});

const twoMiB = new Uint8Array(2 * 1024 * 1024);

async function hsts(p: Portico): Promise<string> {
  const curl = Bun.spawn(["curl", "-sk", "-o", "/dev/null", "-D", "-", "--resolve", `tls.test:${p.ports.https}:127.0.0.1`, `https://tls.test:${p.ports.https}/`], { stdout: "pipe", stderr: "pipe" });
  const head = await new Response(curl.stdout).text();
  expect(await curl.exited).toBe(0);
  return /^strict-transport-security: (.*)\r$/im.exec(head)?.[1] ?? "";
}

describe("--ingress-nginx-compat serves ingress-nginx's defaults", () => {
  let p: Portico;
  beforeAll(async () => {
    p = await startPortico(["--manifests", dir, "--ingress-nginx-compat", "--access-log", "off"]);
  });
  afterAll(async () => {
    await p.stop();
  });

  test("proxy-body-size 1m: a 2 MiB body gets 413 and never reaches the pod; an Ingress's 8m lets it through", async () => {
    const before = web.hits;
    expect((await get(p.http, "plain.test", "/upload", { method: "POST", body: twoMiB })).status).toBe(413);
    expect(web.hits).toBe(before);
    expect(await get(p.http, "big.test", "/upload", { method: "POST", body: twoMiB })).toMatchObject({ status: 200, body: "web /upload" });
  });

  test("hsts-include-subdomains true", async () => {
    expect(await hsts(p)).toBe("max-age=31536000; includeSubDomains");
  });
});

describe("without compat, Portico's defaults", () => {
  test("no body limit, and no includeSubDomains", async () => {
    const p = await startPortico(["--manifests", dir, "--ingress-class", "nginx", "--access-log", "off"]);
    try {
      expect(await get(p.http, "plain.test", "/upload", { method: "POST", body: twoMiB })).toMatchObject({ status: 200, body: "web /upload" });
      expect(await hsts(p)).toBe("max-age=31536000");
    } finally {
      await p.stop();
    }
  });
});
