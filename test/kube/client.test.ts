// Kubeconfig resolution and every auth method against the fake API server over real sockets.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { startFakeApiServer, type FakeApiServer } from "../fake-apiserver.ts";
import { captureLogger } from "../fake-apiserver/fixtures.ts";
import { createKubeClient } from "../../src/kube/client.ts";
import { createCertificate } from "../tls/pki.ts";

const dir = `/tmp/portico-client-${process.pid}`;
mkdirSync(dir, { recursive: true });
const b64 = (s: string) => Buffer.from(s).toString("base64");
const ca = createCertificate({ subjectCN: "portico-test-ca", isCA: true });
const serverCert = createCertificate({ subjectCN: "fake-apiserver", sans: ["127.0.0.1", "localhost"], issuer: { cert: ca.certPem, key: ca.keyPem } });
const clientCert = createCertificate({ subjectCN: "portico", extKeyUsage: ["clientAuth"], issuer: { cert: ca.certPem, key: ca.keyPem } });

let plain: FakeApiServer; // token auth over http
let tls: FakeApiServer; // client-certificate or token auth over https
let open: FakeApiServer; // anonymous http, like `kubectl proxy`

beforeAll(async () => {
  plain = await startFakeApiServer({ token: "good-token" });
  tls = await startFakeApiServer({ token: "tls-token", tls: { cert: serverCert.certPem, key: serverCert.keyPem, clientCa: ca.certPem } });
  open = await startFakeApiServer({});
});
afterAll(async () => {
  await Promise.all([plain.stop(), tls.stop(), open.stop()]);
});

function kubeconfig(name: string, cluster: string, user: string, extra = ""): string {
  const path = `${dir}/${name}`;
  const text = `apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n${cluster}\nusers:\n- name: u\n  user:\n${user}\ncontexts:\n- name: ctx\n  context: { cluster: c, user: u }\n${extra}current-context: ctx\n`;
  writeFileSync(path, text);
  return path;
}

async function listStatus(path: string, log = captureLogger(), opts = {}): Promise<number> {
  const c = createKubeClient({ kubeconfig: path, context: null }, log, opts);
  const res = await c.request("GET", "/api/v1/services");
  await res.body?.cancel();
  return res.status;
}

describe("kubeconfig auth", () => {
  test("bearer token over plain http", async () => {
    expect(await listStatus(kubeconfig("token", `    server: ${plain.url}`, `    token: good-token`))).toBe(200);
  });

  test("a wrong token gives one clear error line naming the server, path and status", async () => {
    const log = captureLogger();
    expect(await listStatus(kubeconfig("bad", `    server: ${plain.url}`, `    token: wrong`), log)).toBe(401);
    const line = log.lines.find((l) => l.level === "error")!;
    expect(line.msg).toContain(plain.url);
    expect(line.msg).toContain("/api/v1/services");
    expect(line.msg).toContain("401");
  });

  test("client certificate over HTTPS with a private CA; without it 401; unknown CA fails", async () => {
    const cluster = `    server: ${tls.url}\n    certificate-authority-data: ${b64(ca.certPem)}`;
    const user = `    client-certificate-data: ${b64(clientCert.certPem)}\n    client-key-data: ${b64(clientCert.keyPem)}`;
    expect(await listStatus(kubeconfig("cert", cluster, user))).toBe(200);
    expect(await listStatus(kubeconfig("nocert", cluster, `    username: x\n    password: y`))).toBe(401);
    // Files instead of data, relative to the kubeconfig's directory.
    writeFileSync(`${dir}/ca.pem`, ca.certPem);
    writeFileSync(`${dir}/client.pem`, clientCert.certPem);
    writeFileSync(`${dir}/client.key`, clientCert.keyPem);
    expect(await listStatus(kubeconfig("certfiles", `    server: ${tls.url}\n    certificate-authority: ca.pem`, `    client-certificate: client.pem\n    client-key: client.key`))).toBe(200);
    // No CA: the server certificate does not verify...
    await expect(listStatus(kubeconfig("noca", `    server: ${tls.url}`, `    token: tls-token`))).rejects.toThrow();
    // ...unless insecure-skip-tls-verify says so.
    expect(await listStatus(kubeconfig("skip", `    server: ${tls.url}\n    insecure-skip-tls-verify: true`, `    token: tls-token`))).toBe(200);
  });

  test("exec plugin: runs the command with args and env, caches, refreshes before expiry, retries a 401", async () => {
    const script = `${dir}/cred.sh`;
    writeFileSync(
      script,
      `#!/bin/sh\necho "$1" >> "$COUNT_FILE"\nprintf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s","expirationTimestamp":"%s"}}' "$(cat "$TOKEN_FILE")" "$EXPIRY"\n`,
    );
    chmodSync(script, 0o755);
    writeFileSync(`${dir}/exec-token`, "good-token");
    const expiry = new Date(Date.now() + 100_000).toISOString();
    const path = kubeconfig(
      "exec",
      `    server: ${plain.url}`,
      `    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: ./cred.sh\n      args: [arg-one]\n      env:\n      - { name: COUNT_FILE, value: ${dir}/exec-count }\n      - { name: TOKEN_FILE, value: ${dir}/exec-token }\n      - { name: EXPIRY, value: "${expiry}" }\n      interactiveMode: Never`,
    );
    let now = Date.now();
    const c = createKubeClient({ kubeconfig: path, context: null }, captureLogger(), { authTimings: { tokenFileRefreshMs: 60_000, execTimeoutMs: 5000, now: () => now } });
    const calls = () => readFileSync(`${dir}/exec-count`, "utf8").trim().split("\n");
    expect((await c.request("GET", "/api/v1/services")).status).toBe(200);
    expect((await c.request("GET", "/api/v1/services")).status).toBe(200);
    expect(calls()).toEqual(["arg-one"]); // cached
    now += 85_000; // past 80% of the lifetime, still before expiry
    expect((await c.request("GET", "/api/v1/services")).status).toBe(200);
    expect(calls()).toHaveLength(2);
    // The server rotates its token; the plugin hands out the new one: a 401 refetches once.
    plain.setToken("rotated");
    writeFileSync(`${dir}/exec-token`, "rotated");
    expect((await c.request("GET", "/api/v1/services")).status).toBe(200);
    expect(calls()).toHaveLength(3);
    plain.setToken("good-token");
  });

  test("a missing exec plugin fails the request with its installHint", async () => {
    const path = kubeconfig("exec-missing", `    server: ${plain.url}`, `    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: portico-no-such-plugin\n      installHint: "install it with: brew install no-such-plugin"`);
    const c = createKubeClient({ kubeconfig: path, context: null }, captureLogger());
    await expect(c.request("GET", "/api/v1/services")).rejects.toThrow(/portico-no-such-plugin could not start.*brew install no-such-plugin/);
  });

  test("token-file is re-read after its refresh interval", async () => {
    writeFileSync(`${dir}/tok`, "good-token\n");
    const path = kubeconfig("tokfile", `    server: ${plain.url}`, `    token-file: tok`);
    let now = 0;
    const c = createKubeClient({ kubeconfig: path, context: null }, captureLogger(), { authTimings: { tokenFileRefreshMs: 60_000, execTimeoutMs: 5000, now: () => now } });
    expect((await c.request("GET", "/api/v1/services")).status).toBe(200);
    writeFileSync(`${dir}/tok`, "second-token\n");
    plain.setToken("second-token");
    now += 61_000;
    expect((await c.request("GET", "/api/v1/services")).status).toBe(200);
    plain.setToken("good-token");
  });

  test("auth-provider oidc: the id-token goes through client-node's authenticator", async () => {
    const part = (o: object) => Buffer.from(JSON.stringify(o)).toString("base64url");
    const jwt = `${part({ alg: "none" })}.${part({ exp: Math.floor(Date.now() / 1000) + 3600, sub: "me" })}.sig`;
    plain.setToken(jwt);
    try {
      const path = kubeconfig("oidc", `    server: ${plain.url}`, `    auth-provider:\n      name: oidc\n      config:\n        client-id: portico\n        id-token: ${jwt}\n        idp-issuer-url: https://issuer.invalid`);
      const c = createKubeClient({ kubeconfig: path, context: null }, captureLogger());
      expect(c.authKind).toBe("auth-provider:oidc");
      expect((await c.request("GET", "/api/v1/services")).status).toBe(200);
    } finally {
      plain.setToken("good-token");
    }
  });

  test("an unreachable server is named in Portico's words, not Bun's; an abort stays an abort", async () => {
    const port = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const url = `http://127.0.0.1:${port.port}`;
    port.stop(true); // nothing listens there now: connection refused
    const c = createKubeClient({ kubeconfig: kubeconfig("refused", `    server: ${url}`, `    token: t`), context: null }, captureLogger());
    const err = await c.request("GET", "/api/v1/services").then(() => null, (e: unknown) => e as Error);
    expect(err?.message).toBe(`cannot reach the Kubernetes API server ${url}: connection refused (nothing listens there, or the server is down) (ECONNREFUSED)`);
    expect(err?.message).not.toContain("Is the computer able");
    // The TLS variant: an https:// URL to a server without the CA in the kubeconfig.
    const noca = createKubeClient({ kubeconfig: kubeconfig("noca2", `    server: ${tls.url}`, `    token: tls-token`), context: null }, captureLogger());
    const tlsErr = await noca.request("GET", "/api/v1/services").then(() => null, (e: unknown) => e as Error);
    expect(tlsErr?.message).toStartWith(`cannot reach the Kubernetes API server ${tls.url}: `);
    const ac = new AbortController();
    ac.abort(new Error("stopping"));
    const aborted = await c.request("GET", "/api/v1/services", { signal: ac.signal }).then(() => null, (e: unknown) => e as Error);
    expect(aborted?.message).not.toContain("cannot reach");
  });

  test("plain http without credentials (kubectl proxy)", async () => {
    expect(await listStatus(kubeconfig("proxy", `    server: ${open.url}/`, `    {}`))).toBe(200);
  });

  test("$KUBECONFIG with several files (first wins) and --context", async () => {
    const a = `${dir}/a.yaml`;
    const b = `${dir}/b.yaml`;
    writeFileSync(a, `current-context: one\ncontexts:\n- name: one\n  context: { cluster: good, user: good }\nusers:\n- name: good\n  user: { token: good-token }\n`);
    writeFileSync(b, `current-context: two\ncontexts:\n- name: two\n  context: { cluster: good, user: bad }\nclusters:\n- name: good\n  cluster: { server: "${plain.url}" }\nusers:\n- name: good\n  user: { token: ignored }\n- name: bad\n  user: { token: nope }\n`);
    const env = { KUBECONFIG: `${a}:${dir}/missing.yaml:${b}`, HOME: dir };
    const one = createKubeClient({ kubeconfig: null, context: null }, captureLogger(), { env });
    expect((await one.request("GET", "/api/v1/services")).status).toBe(200);
    const two = createKubeClient({ kubeconfig: null, context: "two" }, captureLogger(), { env });
    expect((await two.request("GET", "/api/v1/services")).status).toBe(401);
    expect(() => createKubeClient({ kubeconfig: null, context: "three" }, captureLogger(), { env })).toThrow(/context "three" not found/);
  });

  test("in-cluster service account (token file, CA file, namespace)", async () => {
    const sa = `${dir}/sa`;
    mkdirSync(sa, { recursive: true });
    writeFileSync(`${sa}/token`, "tls-token");
    writeFileSync(`${sa}/ca.crt`, ca.certPem);
    writeFileSync(`${sa}/namespace`, "portico-system");
    const c = createKubeClient({ kubeconfig: null, context: null }, captureLogger(), {
      env: { KUBERNETES_SERVICE_HOST: "127.0.0.1", KUBERNETES_SERVICE_PORT: String(tls.port), HOME: `${dir}/nohome` },
      serviceAccountDir: sa,
    });
    expect(c.namespace).toBe("portico-system");
    expect((await c.request("GET", "/api/v1/services")).status).toBe(200);
  });
});
