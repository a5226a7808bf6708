// proxy-ssl-* for GRPCS pods (ingress-nginx's location block applies proxy_ssl_* to grpc_pass
// too: nginx.tmpl writes them for the location whatever its backend protocol): a grpc-js pod
// that requires a client certificate issued by the Secret's CA, through the h2 upstream pool.
import { afterAll, beforeAll, expect, test } from "bun:test";
import * as grpc from "@grpc/grpc-js";
import { createCertificate } from "../tls/pki.ts";
import { makeBackend, makeTable } from "../proxy/helpers.ts";
import { startTlsProxy, type TlsProxy } from "../http2/helpers.ts";
import { echoClient, startEchoServer, unary, type EchoServer } from "./server.ts";
import { parseAnnotations } from "../../src/compile/annotations.ts";
import { resolveUpstreamTls } from "../../src/compile/upstream-tls.ts";
import type { Ingress, Secret } from "../../src/model/schemas.ts";
import type { RouteOptions } from "../../src/table/types.ts";

const ca = createCertificate({ subjectCN: "Pod CA", isCA: true });
const otherCa = createCertificate({ subjectCN: "Other CA", isCA: true });
const pod = createCertificate({ subjectCN: "echo", sans: ["echo.grpc.svc"], issuer: { cert: ca.certPem, key: ca.keyPem } });
const client = createCertificate({ subjectCN: "client", extKeyUsage: ["clientAuth"], issuer: { cert: ca.certPem, key: ca.keyPem } });
const b64 = (s: string) => Buffer.from(s).toString("base64");
const secret = (name: string, caPem: string): Secret =>
  ({ metadata: { name, namespace: "grpc" }, type: "Opaque", data: { "tls.crt": b64(client.certPem), "tls.key": b64(client.keyPem), "ca.crt": b64(caPem) } }) as Secret;
const SECRETS = new Map([["grpc/good", secret("good", ca.certPem)], ["grpc/other", secret("other", otherCa.certPem)]]);
function optionsOf(a: Record<string, string>): RouteOptions {
  const annotations = Object.fromEntries(Object.entries(a).map(([k, v]) => [`nginx.ingress.kubernetes.io/${k}`, v]));
  const ing = { metadata: { name: "g", namespace: "grpc", annotations }, spec: { rules: [] } } as unknown as Ingress;
  return resolveUpstreamTls(parseAnnotations(annotations), ing, SECRETS).annotations.options;
}

let secure: EchoServer;
let proxy: TlsProxy;
beforeAll(async () => {
  // checkClientCertificate: the handshake fails without a certificate issued by `ca`.
  secure = await startEchoServer(grpc.ServerCredentials.createSsl(Buffer.from(ca.certPem), [{ private_key: Buffer.from(pod.keyPem), cert_chain: Buffer.from(pod.certPem) }], true), "secure");
  const backend = makeBackend([secure.port], { scheme: "grpcs", serverName: "echo.grpc.svc" });
  proxy = startTlsProxy(
    makeTable([
      { host: "plain.test", backend },
      { host: "cert.test", backend, options: optionsOf({ "proxy-ssl-secret": "grpc/good" }) },
      { host: "verify.test", backend, options: optionsOf({ "proxy-ssl-secret": "grpc/good", "proxy-ssl-verify": "on", "proxy-ssl-name": "echo.grpc.svc" }) },
      { host: "wrong-ca.test", backend, options: optionsOf({ "proxy-ssl-secret": "grpc/other", "proxy-ssl-verify": "on", "proxy-ssl-name": "echo.grpc.svc" }) },
    ]),
    { hosts: ["plain.test"], kind: "serving" },
  );
});
afterAll(async () => {
  await proxy.stop();
  await secure.stop();
});

async function call(host: string) {
  const c = echoClient(proxy.port, host);
  try {
    return await unary(c, { text: "hi", n: 1 }, { deadlineMs: 10_000 });
  } finally {
    c.close();
  }
}

test("without proxy-ssl-secret the pod refuses the handshake: UNAVAILABLE", async () => {
  expect((await call("plain.test")).err?.code).toBe(grpc.status.UNAVAILABLE);
});

test("proxy-ssl-secret: the client certificate is presented, the call succeeds", async () => {
  const r = await call("cert.test");
  expect(r.err).toBeNull();
  expect(r.res).toMatchObject({ text: "secure:hi", n: 1 });
});

test("proxy-ssl-verify on: the pod verified against ca.crt and proxy-ssl-name; another CA is UNAVAILABLE", async () => {
  const ok = await call("verify.test");
  expect(ok.err).toBeNull();
  expect(ok.res).toMatchObject({ text: "secure:hi" });
  expect((await call("wrong-ca.test")).err?.code).toBe(grpc.status.UNAVAILABLE);
});
