// ingress-nginx's use-proxy-protocol through the real Portico process (--manifests,
// --nginx-configmap), each connection opened with a PROXY protocol header written on a raw
// socket, in front of a raw-socket backend that logs the upstream request head. Ports of
// test/e2e/settings/proxy_protocol.go (kubernetes/ingress-nginx; the TCP services case is out of
// scope: Portico has no tcp-services ConfigMap). Facts from ingress-nginx:
// - nginx.tmpl: `listen 80 proxy_protocol` / `443 proxy_protocol`; real_ip_header proxy_protocol
//   (use-proxy-protocol alone); $pass_server_port is $proxy_protocol_server_port, sent as
//   X-Forwarded-Port; X-Forwarded-For and X-Real-IP are $remote_addr.
// - lua_ingress.lua rewrite(): with use_proxy_protocol, a server port of 443 makes
//   $pass_access_scheme (X-Forwarded-Proto, X-Scheme) https.
// - nginx.tmpl with use-forwarded-headers too: geo $proxy_protocol_addr against
//   proxy-real-ip-cidr (config.go default 0.0.0.0/0) decides whether the PROXY source's
//   X-Forwarded-For is believed; if not, the PROXY source is the client.
// - nginx closes a connection on a port with `proxy_protocol` whose first bytes are no PROXY
//   header ("broken header").
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import http2 from "node:http2";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import tls from "node:tls";
import { createCertificate } from "../tls/pki.ts";
import { namedBackend, readUntilClose, type RawBackend } from "../proxy/raw.ts";
import { startPortico, waitReady, type Portico } from "./harness.ts";
import { ingress, ingressClass, service, slice, tlsSecret, yamlDocs } from "./objects.ts";

const CM = { namespace: "ingress-nginx", name: "ingress-nginx-controller" };
const HOST = "proxy-protocol";
const pem = createCertificate({ subjectCN: HOST, sans: [HOST] });

let backend: RawBackend;
let sent = 0;
const dirs: string[] = [];

beforeAll(async () => {
  backend = await namedBackend("echo");
});
afterAll(async () => {
  await backend?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A Portico serving HOST (TLS too) to the backend, with this ingress-nginx ConfigMap. */
async function start(data: Record<string, string>, args: string[] = []): Promise<Portico> {
  const dir = mkdtempSync(join(tmpdir(), "portico-proxy-protocol-"));
  dirs.push(dir);
  mkdirSync(join(dir, "m"));
  writeFileSync(join(dir, "m", "all.yaml"), yamlDocs([
    ingressClass(), service("web", "echo"), slice("web", "echo", [backend.port]),
    tlsSecret("web", "pp-tls", pem.certPem, pem.keyPem),
    // Upstream's HTTP cases use an Ingress without tls, its HTTPS case one with tls; one Ingress
    // serves both here, with ssl-redirect off so that plain HTTP is answered, not redirected.
    ingress("web", "pp", [{ host: HOST, paths: [{ path: "/", service: "echo" }] }], {
      tls: [{ hosts: [HOST], secretName: "pp-tls" }], annotations: { "nginx.ingress.kubernetes.io/ssl-redirect": "false" },
    }),
    // A TLS host with the default ssl-redirect, for the redirect case.
    ingress("web", "redirect", [{ host: "redirect.test", paths: [{ path: "/", service: "echo" }] }], { tls: [{ hosts: ["redirect.test"], secretName: "pp-tls" }] }),
    // Only 203.0.113.7 may reach this host (nginx's allow/deny on $remote_addr).
    ingress("web", "allowed", [{ host: "allowed.test", paths: [{ path: "/", service: "echo" }] }], {
      annotations: { "nginx.ingress.kubernetes.io/whitelist-source-range": "203.0.113.7/32" },
    }),
    { apiVersion: "v1", kind: "ConfigMap", metadata: { ...CM }, data },
  ]));
  const p = await startPortico(["--manifests", join(dir, "m"), "--nginx-configmap", `${CM.namespace}/${CM.name}`, "--access-log", "off", "--proxy-protocol-header-timeout", "1s", ...args]);
  await waitReady(p);
  return p;
}

/** A connection to `port` that writes `header` first; resolves once connected. */
function dial(port: number, header: string | Uint8Array): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, "127.0.0.1", () => {
      s.write(header);
      resolve(s);
    });
    s.once("error", reject);
  });
}

const FIELDS = ["host", "x-forwarded-for", "x-real-ip", "x-forwarded-port", "x-forwarded-proto", "x-scheme"] as const;

/** The fields of the one upstream head that carries `id`. */
function upstreamFields(id: string): Record<string, string | null> {
  const heads = backend.hits.map((h) => h.head).filter((h) => h.toLowerCase().includes(`\r\nx-request-id: ${id}\r\n`));
  expect(heads.length).toBe(1);
  const out: Record<string, string | null> = {};
  for (const name of FIELDS) {
    const lines = (heads[0] as string).split("\r\n").slice(1).filter((l) => l.toLowerCase().startsWith(`${name}:`));
    expect(lines.length).toBeLessThanOrEqual(1);
    out[name] = lines[0] === undefined ? null : lines[0].slice(name.length + 1).trim();
  }
  return out;
}

/** The upstream's fields for one HTTP/1.1 GET written after `header` on the plain port. */
async function plainGet(p: Portico, header: string | Uint8Array, extra = ""): Promise<Record<string, string | null>> {
  const id = `pp-${++sent}`;
  const s = await dial(p.ports.http, header);
  const r = await readUntilClose(s, `GET / HTTP/1.1\r\nHost: ${HOST}\r\nX-Request-ID: ${id}\r\n${extra}Connection: close\r\n\r\n`);
  expect(r.data).toStartWith("HTTP/1.1 200 ");
  expect(r.data.endsWith("echo")).toBe(true);
  return upstreamFields(id);
}

/** A PROXY protocol version 2 header (HAProxy's proxy-protocol.txt §2.2): PROXY over TCP/IPv4, or LOCAL. */
function v2(src: number[], dst: number[], sport: number, dport: number, local = false): Uint8Array {
  const sig = [0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a];
  const addr = [...src, ...dst, sport >> 8, sport & 0xff, dport >> 8, dport & 0xff];
  return new Uint8Array([...sig, local ? 0x20 : 0x21, 0x11, 0, addr.length, ...addr]);
}

describe("use-proxy-protocol (settings/proxy_protocol.go)", () => {
  let p: Portico;
  beforeAll(async () => {
    p = await start({ "use-proxy-protocol": "true" });
  });
  afterAll(async () => {
    await p?.stop("SIGKILL");
  });

  test("should respect port passed by the PROXY Protocol", async () => {
    expect(await plainGet(p, "PROXY TCP4 192.168.0.1 192.168.0.11 56324 1234\r\n")).toEqual({
      host: HOST, "x-forwarded-for": "192.168.0.1", "x-real-ip": "192.168.0.1", "x-forwarded-port": "1234", "x-forwarded-proto": "http", "x-scheme": "http",
    });
  });

  test("should respect proto passed by the PROXY Protocol server port", async () => {
    expect(await plainGet(p, "PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\n")).toEqual({
      host: HOST, "x-forwarded-for": "192.168.0.1", "x-real-ip": "192.168.0.1", "x-forwarded-port": "443", "x-forwarded-proto": "https", "x-scheme": "https",
    });
  });

  test("should enable PROXY Protocol for HTTPS", async () => {
    const id = `pp-${++sent}`;
    const raw = await dial(p.ports.https, "PROXY TCP4 192.168.0.1 192.168.0.11 56324 1234\r\n");
    const s = tls.connect({ socket: raw, servername: HOST, rejectUnauthorized: false });
    await new Promise<void>((resolve, reject) => (s.once("secureConnect", resolve), s.once("error", reject)));
    expect(String(s.getPeerCertificate().subject?.CN)).toBe(HOST);
    const r = await readUntilClose(s, `GET / HTTP/1.1\r\nHost: ${HOST}\r\nX-Request-ID: ${id}\r\nConnection: close\r\n\r\n`);
    expect(r.data).toStartWith("HTTP/1.1 200 ");
    expect(upstreamFields(id)).toEqual({
      host: HOST, "x-forwarded-for": "192.168.0.1", "x-real-ip": "192.168.0.1", "x-forwarded-port": "1234", "x-forwarded-proto": "https", "x-scheme": "https",
    });
  });

  test("a version 2 header works as version 1 does; LOCAL (a load balancer's health check) keeps the connection's own address", async () => {
    expect(await plainGet(p, v2([10, 1, 2, 3], [10, 9, 9, 9], 40000, 8000))).toEqual({
      host: HOST, "x-forwarded-for": "10.1.2.3", "x-real-ip": "10.1.2.3", "x-forwarded-port": "8000", "x-forwarded-proto": "http", "x-scheme": "http",
    });
    expect(await plainGet(p, v2([0, 0, 0, 0], [0, 0, 0, 0], 0, 0, true))).toEqual({
      host: HOST, "x-forwarded-for": "127.0.0.1", "x-real-ip": "127.0.0.1", "x-forwarded-port": "80", "x-forwarded-proto": "http", "x-scheme": "http",
    });
    // The header split across writes is read whole.
    const id = `pp-${++sent}`;
    const s = await dial(p.ports.http, "PROXY TCP4 192.168.7.7 ");
    s.write("192.168.0.11 1 99\r");
    const r = await readUntilClose(s, `\nGET / HTTP/1.1\r\nHost: ${HOST}\r\nX-Request-ID: ${id}\r\nConnection: close\r\n\r\n`);
    expect(r.data).toStartWith("HTTP/1.1 200 ");
    expect(upstreamFields(id)["x-forwarded-for"]).toBe("192.168.7.7");
  });

  test("HTTP/2 keeps working behind the header: h2c on the plain port, h2 by ALPN on the HTTPS port", async () => {
    const h2get = async (connect: () => net.Socket | tls.TLSSocket, authority: string) => {
      const id = `pp-${++sent}`;
      const session = http2.connect(authority, { createConnection: connect });
      try {
        const status = await new Promise<number>((resolve, reject) => {
          // Bounded: a front that never answers fails here, not at the suite's timeout.
          const timer = setTimeout(() => reject(new Error("no HTTP/2 answer in 10 s")), 10_000);
          session.on("error", (e) => (clearTimeout(timer), reject(e)));
          const req = session.request({ ":path": "/", ":authority": HOST, "x-request-id": id });
          req.on("response", (h) => (clearTimeout(timer), resolve(Number(h[":status"]))));
          req.on("error", reject);
          req.resume();
          req.end();
        });
        expect(status).toBe(200);
      } finally {
        session.destroy();
      }
      return upstreamFields(id);
    };
    const plain = () => {
      const s = net.connect(p.ports.http, "127.0.0.1");
      s.write("PROXY TCP4 192.168.0.5 192.168.0.11 56324 80\r\n");
      return s;
    };
    expect(await h2get(plain, `http://${HOST}`)).toEqual({
      host: HOST, "x-forwarded-for": "192.168.0.5", "x-real-ip": "192.168.0.5", "x-forwarded-port": "80", "x-forwarded-proto": "http", "x-scheme": "http",
    });
    const secure = () => {
      const raw = net.connect(p.ports.https, "127.0.0.1");
      raw.write("PROXY TCP4 192.168.0.6 192.168.0.11 56324 443\r\n");
      return tls.connect({ socket: raw, servername: HOST, rejectUnauthorized: false, ALPNProtocols: ["h2"] });
    };
    expect(await h2get(secure, `https://${HOST}`)).toEqual({
      host: HOST, "x-forwarded-for": "192.168.0.6", "x-real-ip": "192.168.0.6", "x-forwarded-port": "443", "x-forwarded-proto": "https", "x-scheme": "https",
    });
  });

  test("TLS ended at the load balancer: destination port 443 is not redirected to HTTPS again, port 80 is (lua_ingress.lua redirect_to_https reads $pass_access_scheme)", async () => {
    const first = async (dport: number) => {
      const s = await dial(p.ports.http, `PROXY TCP4 192.168.0.1 192.168.0.11 56324 ${dport}\r\n`);
      const r = await readUntilClose(s, "GET /a HTTP/1.1\r\nHost: redirect.test\r\nConnection: close\r\n\r\n");
      const head = r.data.slice(0, r.data.indexOf("\r\n\r\n"));
      return [head.split("\r\n")[0], /^location: (.*)$/im.exec(head)?.[1] ?? null, /^strict-transport-security: (.*)$/im.exec(head)?.[1] ?? null];
    };
    expect(await first(80)).toEqual(["HTTP/1.1 308 Permanent Redirect", "https://redirect.test/a", null]);
    // The client is on HTTPS: HSTS as for a trusted X-Forwarded-Proto (docs/design.md "PROXY protocol").
    expect(await first(443)).toEqual(["HTTP/1.1 200 OK", null, "max-age=31536000"]);
  });

  test("a connection without a valid PROXY header is closed unanswered on both ports, and the ports keep serving", async () => {
    for (const port of [p.ports.http, p.ports.https]) {
      // A plain request where the header belongs (nginx: "broken header").
      expect(await readUntilClose(await dial(port, `GET / HTTP/1.1\r\nHost: ${HOST}\r\n\r\n`))).toEqual({ data: "", closed: true });
      // Malformed version 1 lines: a bad address, a port out of range, no CRLF within 107 bytes.
      expect(await readUntilClose(await dial(port, "PROXY TCP4 192.168.0.300 192.168.0.11 1 2\r\n"))).toEqual({ data: "", closed: true });
      expect(await readUntilClose(await dial(port, "PROXY TCP4 192.168.0.1 192.168.0.11 1 65536\r\n"))).toEqual({ data: "", closed: true });
      expect(await readUntilClose(await dial(port, `PROXY TCP4 ${"1".repeat(120)}`))).toEqual({ data: "", closed: true });
      // A version 2 header of another version nibble.
      const bad = v2([1, 2, 3, 4], [5, 6, 7, 8], 1, 2);
      bad[12] = 0x31;
      expect(await readUntilClose(await dial(port, bad))).toEqual({ data: "", closed: true });
      // Half a header and then nothing: closed at --proxy-protocol-header-timeout (1 s here).
      expect(await readUntilClose(await dial(port, "PROXY TCP4 192.168"))).toEqual({ data: "", closed: true });
    }
    expect(await plainGet(p, "PROXY TCP4 192.168.0.1 192.168.0.11 56324 1234\r\n")).toMatchObject({ "x-forwarded-for": "192.168.0.1" });
    expect(p.proc.exitCode).toBeNull();
  });
});

describe("use-proxy-protocol with use-forwarded-headers (settings/proxy_protocol.go)", () => {
  const XFF = "X-Forwarded-For: 192.168.0.111\r\n";
  const header = "PROXY TCP4 192.168.0.1 192.168.0.11 56324 1234\r\n";

  test("should not trust X-Forwarded headers when the client IP address is not trusted", async () => {
    // Upstream runs this case under the default proxy-real-ip-cidr, 0.0.0.0/0, which holds the
    // PROXY source: nginx then believes its X-Forwarded-For (geo $proxy_protocol_addr → 1), and
    // upstream's assertion `Contains "x-forwarded-for=192.168.0.1"` passes on the echoed
    // "x-forwarded-for=192.168.0.111" as a prefix. The exact answer under that ConfigMap:
    const p = await start({ "use-proxy-protocol": "true", "use-forwarded-headers": "true" });
    try {
      expect(await plainGet(p, header, XFF)).toEqual({
        host: HOST, "x-forwarded-for": "192.168.0.111", "x-real-ip": "192.168.0.111", "x-forwarded-port": "1234", "x-forwarded-proto": "http", "x-scheme": "http",
      });
    } finally {
      await p.stop("SIGKILL");
    }
    // What the case's name says, with a proxy-real-ip-cidr that holds the load balancer but leaves
    // the PROXY source out. Upstream's peer is the e2e pod, whose cluster address (kind's pod
    // range 10.244.0.0/16) is in 10.0.0.0/8; the peer here is 127.0.0.1, so it is listed too.
    // $forwarded_for_proxy_protocol is then $proxy_protocol_addr: the X-Forwarded-For is not believed.
    const q = await start({ "use-proxy-protocol": "true", "use-forwarded-headers": "true", "proxy-real-ip-cidr": "10.0.0.0/8,127.0.0.1/32" });
    try {
      expect(await plainGet(q, header, XFF)).toEqual({
        host: HOST, "x-forwarded-for": "192.168.0.1", "x-real-ip": "192.168.0.1", "x-forwarded-port": "1234", "x-forwarded-proto": "http", "x-scheme": "http",
      });
    } finally {
      await q.stop("SIGKILL");
    }
    // And with the load balancer itself outside proxy-real-ip-cidr: set_real_ip_from does not
    // match the connection's peer, so nginx's realip leaves $remote_addr the peer's and neither
    // the PROXY source nor its X-Forwarded-For is believed; the destination port still is
    // ($proxy_protocol_server_port does not depend on realip).
    const r = await start({ "use-proxy-protocol": "true", "use-forwarded-headers": "true", "proxy-real-ip-cidr": "10.0.0.0/8" });
    try {
      expect(await plainGet(r, header, XFF)).toEqual({
        host: HOST, "x-forwarded-for": "127.0.0.1", "x-real-ip": "127.0.0.1", "x-forwarded-port": "1234", "x-forwarded-proto": "http", "x-scheme": "http",
      });
    } finally {
      await r.stop("SIGKILL");
    }
  });

  test("should trust X-Forwarded headers when the client IP address is trusted", async () => {
    // Upstream's list, plus this test's peer (127.0.0.1) standing for upstream's pod address in
    // 10.0.0.0/8: the load balancer is trusted, and so is the PROXY source 192.168.0.1.
    const p = await start({ "use-proxy-protocol": "true", "use-forwarded-headers": "true", "proxy-real-ip-cidr": "10.0.0.0/8,127.0.0.1/32,192.168.0.1/32" });
    try {
      expect(await plainGet(p, header, XFF)).toEqual({
        host: HOST, "x-forwarded-for": "192.168.0.111", "x-real-ip": "192.168.0.111", "x-forwarded-port": "1234", "x-forwarded-proto": "http", "x-scheme": "http",
      });
    } finally {
      await p.stop("SIGKILL");
    }
  });
});

// nginx's realip module (ngx_http_realip_handler) replaces $remote_addr with the PROXY header's
// source only when the connection's own peer matches set_real_ip_from (ngx_cidr_match on
// c->sockaddr); ingress-nginx writes one set_real_ip_from per proxy-real-ip-cidr entry
// (nginx.tmpl at dbb11b92), default 0.0.0.0/0 (config.go NewDefault). Portico's
// --proxy-protocol-trusted is that list. The peer here is always 127.0.0.1.
describe("the PROXY header's source is believed only from a trusted peer", () => {
  const header = "PROXY TCP4 203.0.113.7 192.168.0.11 56324 80\r\n";
  const ask = async (p: Portico) => {
    const s = await dial(p.ports.http, header);
    return readUntilClose(s, "GET / HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n");
  };

  test("a peer outside --proxy-protocol-trusted naming an allow-listed address: 403, the header stripped, the port still served", async () => {
    const p = await start({ "use-proxy-protocol": "true" }, ["--proxy-protocol-trusted", "10.0.0.0/8"]);
    try {
      const r = await ask(p);
      // whitelist-source-range denies the peer's own address: nginx's access module answers 403.
      expect(r.data).toStartWith("HTTP/1.1 403 ");
      expect(r.closed).toBe(true);
      // The header was read and stripped (no 400 for "PROXY ..." as a request line), and the
      // client address is the peer's: X-Real-IP 127.0.0.1 on the host without a list.
      expect(await plainGet(p, header)).toEqual({
        host: HOST, "x-forwarded-for": "127.0.0.1", "x-real-ip": "127.0.0.1", "x-forwarded-port": "80", "x-forwarded-proto": "http", "x-scheme": "http",
      });
    } finally {
      await p.stop("SIGKILL");
    }
  });

  test("proxy-real-ip-cidr maps onto it: a peer outside 10.0.0.0/8 naming an allow-listed address gets 403", async () => {
    // nginx.tmpl with use-proxy-protocol: `set_real_ip_from 10.0.0.0/8` beside
    // `real_ip_header proxy_protocol`; the 127.0.0.1 peer does not match, so $remote_addr stays
    // 127.0.0.1 and whitelist-source-range's `deny all` answers 403.
    const p = await start({ "use-proxy-protocol": "true", "proxy-real-ip-cidr": "10.0.0.0/8" });
    try {
      const r = await ask(p);
      expect(r.data).toStartWith("HTTP/1.1 403 ");
      expect(await plainGet(p, header)).toEqual({
        host: HOST, "x-forwarded-for": "127.0.0.1", "x-real-ip": "127.0.0.1", "x-forwarded-port": "80", "x-forwarded-proto": "http", "x-scheme": "http",
      });
    } finally {
      await p.stop("SIGKILL");
    }
    // The same ConfigMap with the peer listed: the header's source is believed and allowed.
    const q = await start({ "use-proxy-protocol": "true", "proxy-real-ip-cidr": "10.0.0.0/8,127.0.0.1/32" });
    try {
      const r = await ask(q);
      expect(r.data).toStartWith("HTTP/1.1 200 ");
      expect(r.data.endsWith("echo")).toBe(true);
    } finally {
      await q.stop("SIGKILL");
    }
  });

  test("a proxy-real-ip-cidr that is no CIDR list fails closed: use-proxy-protocol is not applied, no header is believed", async () => {
    // nginx would refuse `set_real_ip_from 10.0.0.0/33` and keep no such configuration; Portico
    // drops the key (InvalidConfigKey) rather than believing every peer's header.
    const p = await start({ "use-proxy-protocol": "true", "proxy-real-ip-cidr": "10.0.0.0/33" });
    try {
      const r = await ask(p);
      expect(r.data).toStartWith("HTTP/1.1 400 ");
      expect(p.proc.exitCode).toBeNull();
    } finally {
      await p.stop("SIGKILL");
    }
  });

  test("by default (0.0.0.0/0, ingress-nginx's proxy-real-ip-cidr) the IPv4 peer is trusted: the allow-listed source gets through", async () => {
    const p = await start({ "use-proxy-protocol": "true" });
    try {
      const r = await ask(p);
      expect(r.data).toStartWith("HTTP/1.1 200 ");
      expect(r.data.endsWith("echo")).toBe(true);
    } finally {
      await p.stop("SIGKILL");
    }
  });
});
