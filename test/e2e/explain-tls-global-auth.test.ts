// Explain, asked on the admin port of a real Portico (/debug/explain), says what that same
// process serves: for an HTTPS request, the TLS 1.2 cipher list, versions and key-exchange
// groups the listener negotiates for the SNI name (the Ingress's ssl-ciphers annotation, else
// ingress-nginx's ConfigMap ssl-ciphers, ssl-protocols and ssl-ecdh-curve), checked by real
// handshakes that offer one suite, version or group at a time; and for a request a global auth
// service guards (ConfigMap global-auth-url), that it is the global one and why, checked by a
// real request.
//
// ingress-nginx: nginx.tmpl writes `ssl_ciphers`, `ssl_protocols` and `ssl_ecdh_curve` in the
// http block from the ConfigMap and the host's `ssl_ciphers` (with `ssl_prefer_server_ciphers
// on`) in its server block from the annotation (annotations/sslcipher/main.go, the first
// Ingress of the host in controller.go createServers); template.go shouldApplyGlobalAuth gives
// a location the global auth location unless its Ingress has its own auth-url or sets
// enable-global-auth: "false" (annotations/authreqglobal/main.go), and no-auth-locations
// leaves auth_request out (kubernetes/ingress-nginx at dbb11b92).
//
// The auth services here are never reached: auth.invalid (RFC 6761 §6.4) resolves to nothing,
// so a request that asks one answers 500, as explain's cause says for "no answer".
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import tls from "node:tls";
import type { ExplainResult } from "../../src/compile/explain.ts";
import { rawRequest } from "../proxy/helpers.ts";
import { createCertificate } from "../tls/pki.ts";
import { allStarted, configMapManifests, startBackend, startPortico, waitReady, type Backend, type ConfigMapManifests, type Portico } from "./harness.ts";
import { ingress, ingressClass, service, slice, tlsSecret, yamlDocs } from "./objects.ts";

const N = "nginx.ingress.kubernetes.io/";
const AES128 = "ECDHE-RSA-AES128-GCM-SHA256";
const AES256 = "ECDHE-RSA-AES256-GCM-SHA384";
const CHACHA = "ECDHE-RSA-CHACHA20-POLY1305";
const CBC = "ECDHE-RSA-AES128-SHA";
/** The TLS 1.2 suites the client tries, one at a time and all together (RSA certificates throughout). */
const SUITES = [AES128, AES256, CHACHA, CBC];
/** The key-exchange groups the client tries, one at a time. */
const GROUPS = ["X25519", "P-256", "P-384"];
const LISTENER = `${CHACHA}:${AES128}`;

let pod: Backend;
let manifests: ConfigMapManifests;
let portico: Portico;
/** The same kind of objects behind --use-proxy-protocol (ConfigMap use-proxy-protocol). */
let ppManifests: ConfigMapManifests;
let pp: Portico;

beforeAll(async () => {
  pod = startBackend("echo");
  // RSA, so the ECDHE-RSA suites apply; the default certificate too (--default-ssl-certificate).
  const cert = createCertificate({ subjectCN: "own.test", sans: ["own.test", "plain.test", "bogus.test", "*.wild.test", "unknown.test"], keyAlgorithm: "rsa" });
  const tlsFor = (host: string) => ({ tls: [{ hosts: [host], secretName: "tls" }] });
  const web = (name: string, host: string, extra: Parameters<typeof ingress>[3] = {}) => ingress("web", name, [{ host, paths: [{ path: "/", service: "echo" }] }], extra);
  manifests = configMapManifests("portico-explain-tls-");
  manifests.writeObjects(
    yamlDocs([
      ingressClass(), service("web", "echo"), slice("web", "echo", [pod.port]), tlsSecret("web", "tls", cert.certPem, cert.keyPem),
      web("own", "own.test", { ...tlsFor("own.test"), annotations: { [`${N}ssl-ciphers`]: `${AES256}:${CBC}`, [`${N}enable-global-auth`]: "false" } }),
      web("plain", "plain.test", { ...tlsFor("plain.test"), annotations: { [`${N}enable-global-auth`]: "false" } }),
      // A word OpenSSL lacks is skipped, as OpenSSL skips it: the rest of the string serves the host.
      web("bogus", "bogus.test", { ...tlsFor("bogus.test"), annotations: { [`${N}ssl-ciphers`]: `${AES256}:BOGUS-CIPHER`, [`${N}enable-global-auth`]: "false" } }),
      // A wildcard host on the default certificate with a list of its own: its entry catches
      // a.wild.test, which has none of its own.
      web("wild", "*.wild.test", { annotations: { [`${N}ssl-ciphers`]: CBC, [`${N}enable-global-auth`]: "false" } }),
      // A rule host under it without a list: nginx has a server for it, which takes the
      // ConfigMap's ssl_ciphers (nginx picks an exact server_name before a wildcard).
      web("under", "b.wild.test", { annotations: { [`${N}enable-global-auth`]: "false" } }),
      // The global auth: taken, opted out, replaced by the Ingress's own auth-url.
      ingress("web", "guarded", [{ host: "guarded.test", paths: [{ path: "/", service: "echo" }, { path: "/open", service: "echo" }] }]),
      web("optout", "optout.test", { annotations: { [`${N}enable-global-auth`]: "false" } }),
      web("ownauth", "ownauth.test", { annotations: { [`${N}auth-url`]: "http://auth.invalid/own" } }),
    ]),
  );
  manifests.writeConfigMap({
    "ssl-ciphers": LISTENER,
    "ssl-protocols": "TLSv1.2",
    "ssl-ecdh-curve": "P-384:X25519",
    "global-auth-url": "http://auth.invalid/verify",
    "global-auth-signin": "https://login.test/start",
    "no-auth-locations": "/open",
  });
  ppManifests = configMapManifests("portico-explain-pp-");
  ppManifests.writeObjects(
    yamlDocs([
      ingressClass(), service("web", "echo"), slice("web", "echo", [pod.port]),
      // ipallowlist.go: only 10.0.0.0/8 (the PROXY header's source, nginx's realip $remote_addr).
      web("allowed", "allowed.test", { annotations: { [`${N}whitelist-source-range`]: "10.0.0.0/8" } }),
      // A spec.tls host: plain HTTP is redirected, unless the header's destination port is 443.
      web("secure", "secure.test", { tls: [{ hosts: ["secure.test"] }] }),
    ]),
  );
  ppManifests.writeConfigMap({ "use-proxy-protocol": "true" });
  [portico, pp] = await allStarted([
    startPortico([...manifests.args, "--default-ssl-certificate", "web/tls", "--access-log", "off"]),
    startPortico([...ppManifests.args, "--access-log", "off"]),
  ]);
  await Promise.all([waitReady(portico), waitReady(pp)]);
});

afterAll(async () => {
  await Promise.all([portico?.stop("SIGKILL"), pp?.stop("SIGKILL")]);
  pod?.stop();
  manifests?.remove();
  ppManifests?.remove();
});

async function explainOf(host: string, scheme: "http" | "https", path = "/", p: Portico = portico, client = "127.0.0.1"): Promise<ExplainResult> {
  const q = new URLSearchParams({ host, path, scheme, client });
  const res = await fetch(`${p.admin}/debug/explain?${q}`);
  expect(res.status).toBe(200);
  return (await res.json()) as ExplainResult;
}

interface Handshake {
  readonly ok: boolean;
  readonly cipher?: string;
}

/** One TLS handshake for `host` with these client options: whether it succeeded, and the suite agreed. */
function handshake(host: string, opts: tls.ConnectionOptions): Promise<Handshake> {
  return new Promise((resolve) => {
    let agreed: Handshake = { ok: false };
    const s = tls.connect({ host: "127.0.0.1", port: portico.ports.https, servername: host, rejectUnauthorized: false, ALPNProtocols: ["http/1.1"], ...opts }, () => {
      agreed = { ok: true, cipher: s.getCipher().name };
      s.end();
    });
    s.on("close", () => resolve(agreed));
    s.on("error", () => s.destroy());
  });
}

/** Each suite, the server's pick among all of them, TLS 1.3, and each group: as `t` says. */
async function handshakesMatch(host: string, t: NonNullable<ExplainResult["tls"]>): Promise<void> {
  const tls12 = t.protocols.includes("TLSv1.2");
  for (const suite of SUITES) {
    expect((await handshake(host, { maxVersion: "TLSv1.2", ciphers: suite })).ok, `${host}: TLS 1.2 with ${suite} alone`).toBe(tls12 && t.ciphers.includes(suite));
  }
  // ssl_prefer_server_ciphers on: the first suite of the explained list that the client offers.
  const reversed = [...SUITES].reverse().join(":");
  expect((await handshake(host, { maxVersion: "TLSv1.2", ciphers: reversed })).cipher, `${host}: the server's order picks`).toBe(t.ciphers.find((c) => SUITES.includes(c)));
  expect((await handshake(host, { minVersion: "TLSv1.3" })).ok, `${host}: TLS 1.3`).toBe(t.protocols.includes("TLSv1.3"));
  for (const group of GROUPS) {
    expect((await handshake(host, { maxVersion: "TLSv1.2", ecdhCurve: group })).ok, `${host}: group ${group} alone`).toBe(t.groups === null || t.groups.includes(group));
  }
}

describe("explain's listener TLS for the SNI name is what the handshake gets", () => {
  type From = NonNullable<ExplainResult["tls"]>["ciphersFrom"];
  const CASES: { host: string; via: "exact" | "wildcard" | "default"; ciphers: string[]; from: From }[] = [
    // The annotation's list, in its order (sslcipher/main.go, nginx.tmpl server block).
    { host: "own.test", via: "exact", ciphers: [AES256, CBC], from: { source: "ssl-ciphers", ingress: "web/own" } },
    // No annotation: the ConfigMap's ssl-ciphers (nginx.tmpl http block).
    { host: "plain.test", via: "exact", ciphers: [CHACHA, AES128], from: { source: "tls-ciphers" } },
    { host: "bogus.test", via: "exact", ciphers: [AES256], from: { source: "ssl-ciphers", ingress: "web/bogus" } },
    { host: "a.wild.test", via: "wildcard", ciphers: [CBC], from: { source: "ssl-ciphers", ingress: "web/wild" } },
    { host: "b.wild.test", via: "exact", ciphers: [CHACHA, AES128], from: { source: "tls-ciphers" } },
    { host: "unknown.test", via: "default", ciphers: [CHACHA, AES128], from: { source: "tls-ciphers" } },
  ];
  for (const c of CASES) {
    test(`${c.host}: ${c.from.source}${"ingress" in c.from ? ` of ${c.from.ingress}` : ""}, the ${c.via} entry`, async () => {
      const e = await explainOf(c.host, "https");
      const t = e.tls!;
      expect(t).toBeDefined();
      expect({ via: t.entry.via, ciphers: t.ciphers, from: t.ciphersFrom }).toEqual({ via: c.via, ciphers: c.ciphers, from: c.from });
      // ssl-protocols TLSv1.2 (--tls-max-version=1.2), ssl-ecdh-curve P-384:X25519.
      expect({ protocols: t.protocols, tls13: t.tls13Ciphers, groups: t.groups }).toEqual({ protocols: ["TLSv1.2"], tls13: [], groups: ["P-384", "X25519"] });
      await handshakesMatch(c.host, t);
    });
  }
  // The routes view (/debug/routes?format=text, portico routes) shows a host's own list in its
  // TLS column where the listener applies it, as explain (held to the handshakes above) does.
  test("the routes view's TLS column: a host's own ssl-ciphers", async () => {
    const res = await fetch(`${portico.admin}/debug/routes?format=text`);
    expect(res.status).toBe(200);
    const admin = await res.text();
    // `portico routes` on the same objects prints the same table.
    const cli = Bun.spawnSync([process.execPath, join(import.meta.dir, "..", "..", "src", "main.ts"), "routes", ...manifests.args], { stdin: "ignore", env: { ...process.env, PORTICO_HTTP_PORT: "" } });
    expect(cli.exitCode).toBe(0);
    expect(cli.stdout.toString().split("\n").filter((l) => /\.test /.test(l))).toEqual(admin.split("\n").filter((l) => /\.test /.test(l)));
    const rows = admin.split("\n");
    const tlsOf = (host: string) => {
      const line = rows.find((l) => l.startsWith(`${host} `));
      // The cell between ENDPOINTS and INGRESS: "no" or "yes", and what follows up to the Ingress.
      return /\s(?:yes|no)(?:; [^\s].*?)?(?=\s{2,}web\/)/.exec(line ?? "")?.[0].trim() ?? null;
    };
    const own = await explainOf("own.test", "https");
    expect(tlsOf("own.test")).toBe(`yes; ciphers ${own.tls!.ciphers.join(":")} (ssl-ciphers of web/own)`);
    expect(tlsOf("plain.test")).toBe("yes");
    expect(tlsOf("bogus.test")).toBe(`yes; ciphers ${AES256} (ssl-ciphers of web/bogus)`);
    expect(tlsOf("*.wild.test")).toBe(`no; ciphers ${CBC} (ssl-ciphers of web/wild)`);
  });

  test("explain over plain HTTP says nothing of TLS", async () => {
    expect((await explainOf("plain.test", "http")).tls).toBeUndefined();
  });
});

async function status(host: string, path: string): Promise<number> {
  const raw = await rawRequest(portico.ports.http, `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`, 10_000);
  return Number(/^HTTP\/1\.1 (\d{3}) /.exec(raw)?.[1] ?? 0);
}

describe("explain says where the auth service of a request comes from, and the request gets that answer", () => {
  test("global-auth-url from the ConfigMap: asked for an Ingress without auth-url (500: it cannot be reached)", async () => {
    const e = await explainOf("guarded.test", "http", "/x");
    expect(e.response).toMatchObject({ kind: "depends", by: "external-auth", location: "https://login.test/start?rd=$scheme://$http_host$escaped_request_uri" });
    expect(e.response.auth).toEqual({
      source: "global-auth-url",
      url: "http://auth.invalid/verify",
      signin: "https://login.test/start?rd=$scheme://$http_host$escaped_request_uri",
      ingress: "web/guarded",
      from: 'global-auth-url (--global-auth-url, ingress-nginx\'s ConfigMap key global-auth-url): web/guarded sets no auth-url and not enable-global-auth: "false"',
      responseHeaders: [],
      requestHeaders: [],
    });
    expect(e.response.cause).toContain("the global auth service decides (global-auth-url http://auth.invalid/verify)");
    // `portico explain` on the same files reads the ConfigMap's keys as the server does.
    const cli = Bun.spawnSync([process.execPath, join(import.meta.dir, "..", "..", "src", "main.ts"), "explain", ...manifests.args, "--host", "guarded.test", "--path", "/x", "--client", "127.0.0.1"], { stdin: "ignore", env: { ...process.env, PORTICO_HTTP_PORT: "" } });
    expect(cli.exitCode).toBe(0);
    expect((JSON.parse(cli.stdout.toString()) as ExplainResult).response).toEqual(e.response);
    expect(e.response.cause).toContain("anything else (or no answer) is 500");
    const before = pod.hits;
    expect(await status("guarded.test", "/x")).toBe(500);
    expect(pod.hits).toBe(before);
  });

  test("no-auth-locations: the path is proxied without asking it, as explain says", async () => {
    const e = await explainOf("guarded.test", "http", "/open");
    expect(e.response).toMatchObject({ kind: "proxied", by: "proxy" });
    expect(e.response.auth).toBeUndefined();
    expect(e.response.notes).toContain("no-auth-locations: external authentication (global-auth-url http://auth.invalid/verify) does not run on this path");
    const before = pod.hits;
    expect(await status("guarded.test", "/open")).toBe(200);
    expect(pod.hits).toBe(before + 1);
  });

  test('enable-global-auth: "false": proxied, and explain names the opt-out', async () => {
    const e = await explainOf("optout.test", "http", "/x");
    expect(e.response).toMatchObject({ kind: "proxied", by: "proxy" });
    expect(e.response.auth).toBeUndefined();
    expect(e.response.notes).toContain('enable-global-auth: "false" on web/optout: the global auth service (global-auth-url) is not asked');
    const before = pod.hits;
    expect(await status("optout.test", "/x")).toBe(200);
    expect(pod.hits).toBe(before + 1);
  });

  test("an Ingress's own auth-url replaces the global one", async () => {
    const e = await explainOf("ownauth.test", "http", "/x");
    expect(e.response).toMatchObject({ kind: "depends", by: "external-auth" });
    expect(e.response.auth).toMatchObject({ source: "auth-url", url: "http://auth.invalid/own", signin: null, ingress: "web/ownauth" });
    expect(e.response.notes).toContain("web/ownauth has its own auth-url, which replaces global-auth-url");
    expect(await status("ownauth.test", "/x")).toBe(500);
  });
});

// proxy_protocol.go (settings): nginx.tmpl `listen 80 proxy_protocol` and `real_ip_header
// proxy_protocol`; lua_ingress.lua rewrite() makes $pass_access_scheme https for a server port
// of 443; nginx closes a connection whose first bytes are no PROXY header ("broken header").
describe("use-proxy-protocol: explain says a connection needs the header, and answers for the client it names", () => {
  const viaHeader = (source: string, destPort: number, host: string) =>
    rawRequest(pp.ports.http, `PROXY TCP4 ${source} 127.0.0.1 40000 ${destPort}\r\nGET / HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`, 10_000);
  const statusOf = (raw: string) => Number(/^HTTP\/1\.1 (\d{3}) /.exec(raw)?.[1] ?? 0);

  test("without a header the connection is closed unanswered", async () => {
    const e = await explainOf("allowed.test", "http", "/", pp, "10.1.2.3");
    expect(e.proxyProtocol).toEqual({ withoutHeader: "closed", trusted: ["0.0.0.0/0"], httpsPort: 443 });
    expect(e.response.notes.some((n) => n.startsWith("use-proxy-protocol: a connection that does not open with a PROXY header is closed without an answer"))).toBe(true);
    expect(await rawRequest(pp.ports.http, "GET / HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n", 10_000)).toBe("");
  });

  test("the header's source is the client the source range sees, as explain's client", async () => {
    for (const [client, expected] of [["10.1.2.3", 200], ["192.0.2.7", 403]] as const) {
      const e = await explainOf("allowed.test", "http", "/", pp, client);
      const real = statusOf(await viaHeader(client, 80, "allowed.test"));
      expect(real, `client ${client}`).toBe(expected);
      expect(e.response.kind === "proxied" ? 200 : e.response.status, `client ${client}: ${JSON.stringify(e.response)}`).toBe(real);
      expect(e.response.notes.some((n) => n.includes("this is the answer to one whose header names the client"))).toBe(true);
    }
  });

  test("a header's destination port 443 makes the request https: no redirect, as explain with scheme https says", async () => {
    const asHttp = await explainOf("secure.test", "http", "/", pp);
    const asHttps = await explainOf("secure.test", "https", "/", pp);
    // lua_ingress.lua's redirect drops the trailing slash of the URI ("/" leaves nothing).
    expect(asHttp.response).toMatchObject({ kind: "redirect", status: 308, location: "https://secure.test" });
    expect(asHttps.response).toMatchObject({ kind: "proxied" });
    expect(asHttp.proxyProtocol?.httpsPort).toBe(443);
    const redirected = await viaHeader("10.1.2.3", 80, "secure.test");
    expect(statusOf(redirected)).toBe(308);
    expect(/\r\nlocation: ([^\r]*)/i.exec(redirected)?.[1]).toBe(asHttp.response.location);
    expect(statusOf(await viaHeader("10.1.2.3", 443, "secure.test"))).toBe(200);
  });
});
