// ExternalName Services (src/proxy/upstream/external.ts, compile/backends.ts): off by default (503 and
// a diagnostic, nothing connected); with --allow-external-name-services, a name or IP literal
// that reaches loopback, link-local, an unspecified address or this host's own addresses is
// never connected to, whatever form it is written in. Backends here count every TCP connection
// they accept, so "refused" is asserted as zero connections, not as a status alone.
//
// What is real and what is injected: the refusal tests run the real compiler, the real proxy,
// the real resolver (getaddrinfo) and the real check against this host's interfaces. A positive
// test cannot use a real permitted address (every address this host can listen on is loopback
// or its own), so it injects the lookup (a name no DNS knows → 127.0.0.1) and a check that
// permits that one address: it proves the plumbing (fetch, the probe and the WebSocket client
// connect to the address the check saw, with the Service's name as SNI), while the policy
// itself is tested address by address against forbiddenReason.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import tls from "node:tls";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Socket, TCPSocketListener } from "bun";
import { compile } from "../../src/compile/compile.ts";
import { DEFAULT_COMPILE_CONFIG } from "../compile/config.ts";
import { fixedHostRefusal, METADATA_REASON } from "../../src/config/address-policy.ts";
import { createExternalResolver, forbiddenReason, ownAddresses, type ExternalResolver } from "../../src/proxy/upstream/external.ts";
import { createProxyHandler } from "../../src/proxy/pipeline/handler.ts";
import { startHttpListener } from "../../src/proxy/pipeline/listener.ts";
import type { AccessRecord } from "../../src/proxy/types.ts";
import { lookup } from "../../src/table/lookup.ts";
import type { RouteTable } from "../../src/table/types.ts";
import { generateDefaultCertificate } from "../../src/tls/default-cert.ts";
import { loadFixture } from "../compile/snapshot.ts";
import { startPortico } from "../e2e/harness.ts";
import { quietLog, rawRequest, statusLine, testConfig, wsFirstReply } from "./helpers.ts";
import { eventually } from "../wait.ts";

/** A raw TCP backend on `host` that records every connection and the bytes it received. */
function recordingBackend(host = "127.0.0.1", port = 0) {
  const connections: string[] = [];
  const listener: TCPSocketListener<{ buf: string }> = Bun.listen<{ buf: string }>({
    hostname: host,
    port,
    socket: {
      open(s) {
        s.data = { buf: "" };
        connections.push("");
      },
      data(s: Socket<{ buf: string }>, d) {
        s.data.buf += Buffer.from(d).toString("latin1");
        connections[connections.length - 1] = s.data.buf;
        if (s.data.buf.includes("\r\n\r\n")) {
          s.write("HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok");
          s.end();
        }
      },
    },
  });
  return { port: listener.port, connections, stop: () => listener.stop(true) };
}

function yamlFor(externalName: string, port: number, extra = "", host = "ext.test"): string {
  return `
kind: Service
apiVersion: v1
metadata: { name: partner, namespace: default }
spec: { type: ExternalName, externalName: ${JSON.stringify(externalName)}, ports: [{ name: http, port: ${port} }] }
---
kind: Ingress
apiVersion: networking.k8s.io/v1
metadata: { name: ext, namespace: default${extra} }
spec:
  ingressClassName: portico
  rules:
    - ${host ? `host: ${host}\n      ` : ""}http:
        paths:
          - { path: /, pathType: Prefix, backend: { service: { name: partner, port: { name: http } } } }
`;
}

function compiled(externalName: string, port: number, allow: boolean, extra = "", host = "ext.test") {
  const fx = loadFixture(yamlFor(externalName, port, extra, host));
  return compile(fx.snapshot, { ...DEFAULT_COMPILE_CONFIG, allowExternalNameServices: allow });
}

function startProxy(table: RouteTable, external?: ExternalResolver) {
  const records: AccessRecord[] = [];
  const errors: string[] = [];
  const upstreamErrors: string[] = [];
  const handler = createProxyHandler({
    config: testConfig({ connectTimeoutMs: 2_000, responseTimeoutMs: 5_000 }), table: () => table, lookup, scheme: "http",
    log: { ...quietLog, error: (m, f) => errors.push(`${m} ${JSON.stringify(f)}`) },
    hooks: { onRequestDone: (r) => records.push(r), onUpstreamError: (_id, reason) => upstreamErrors.push(reason) },
    external,
  });
  const server = startHttpListener({ hostname: "127.0.0.1", port: 0, handler });
  return { port: server.port as number, records, errors, upstreamErrors, stop: () => server.stop(true) };
}

const get = (port: number, host = "ext.test", path = "/") =>
  rawRequest(port, `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);

// Every spelling of this host that plain fetch connects to 127.0.0.1 with (measured on Bun
// 1.4.5: each of these reached a 127.0.0.1 listener), plus IPv6 loopback.
const LOOPBACK_NAMES = ["localhost", "127.0.0.1", "127.1", "0x7f.1", "[::ffff:127.0.0.1]", "::ffff:127.0.0.1", "0.0.0.0", "::1", "0177.0.0.1", "2002:7f00:1::", "64:ff9b:1::7f00:1", "::ffff:0:7f00:1"];

describe("--allow-external-name-services off (the default)", () => {
  const backend = recordingBackend();
  afterAll(() => backend.stop());

  test("the route stays, answers 503, carries an ExternalNameNotAllowed diagnostic, connects nowhere", async () => {
    const result = compiled("localhost", backend.port, false);
    const b = lookup(result.table, "ext.test", "/")!.route.backend;
    expect(b.status).toBe("ExternalNameNotAllowed");
    expect(b.endpoints).toEqual([]);
    expect(result.diagnostics).toContainEqual({
      kind: "Ingress", namespace: "default", name: "ext", reason: "ExternalNameNotAllowed",
      message: "ExternalName Service default/partner is not proxied: --allow-external-name-services is off", severity: "warning",
    });
    const proxy = startProxy(result.table);
    try {
      expect(statusLine(await get(proxy.port))).toBe(503);
      expect(proxy.records.map((r) => [r.status, r.error, r.upstream])).toEqual([[503, "NoEndpoints", null]]);
    } finally {
      await proxy.stop();
    }
    expect(backend.connections).toEqual([]);
  });
});

describe("--allow-external-name-services on: forbidden addresses are never connected to", () => {
  const backend = recordingBackend();
  const backend6 = (() => {
    try {
      return recordingBackend("::1", backend.port);
    } catch {
      return null; // no IPv6 loopback here: ::1 then reaches nothing either way
    }
  })();
  let proxy: ReturnType<typeof startProxy>;
  afterAll(() => {
    backend.stop();
    backend6?.stop();
  });

  for (const name of LOOPBACK_NAMES) {
    test(`${name} → 502 UpstreamAddressForbidden, zero connections`, async () => {
      const result = compiled(name, backend.port, true);
      expect(lookup(result.table, "ext.test", "/")!.route.backend.status).toBe("ok");
      proxy = startProxy(result.table);
      try {
        const raw = await get(proxy.port);
        expect(statusLine(raw)).toBe(502);
        expect(raw).toEndWith("bad gateway\n");
        expect(proxy.records.map((r) => [r.status, r.error, r.upstream])).toEqual([[502, "UpstreamAddressForbidden", null]]);
        expect(proxy.upstreamErrors).toEqual(["forbidden"]); // portico_upstream_errors_total{reason}
        // A WebSocket upgrade takes its own connect path (websocket.ts): refused the same way.
        const ws = await rawRequest(
          proxy.port,
          "GET /ws HTTP/1.1\r\nHost: ext.test\r\nUpgrade: websocket\r\nConnection: Upgrade, close\r\n" +
            "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
        );
        expect(statusLine(ws)).toBe(502);
        expect(proxy.records.map((r) => r.error)).toEqual(["UpstreamAddressForbidden", "UpstreamAddressForbidden"]);
        expect(proxy.errors).toEqual([]);
      } finally {
        await proxy.stop();
      }
      expect(backend.connections).toEqual([]);
      expect(backend6?.connections ?? []).toEqual([]);
    });
  }

  // Metadata addresses cannot be listened on here, so the real policy decides and anything it
  // would permit is still refused by the test (no traffic leaves loopback); the policy's own
  // reason is what is asserted, with the 502 and the access record.
  for (const address of [
    "fd00:ec2::254", "fd00:ec2::23", "fd20:ce::254", "fd00:42::42", "100.100.100.200", "::ffff:100.100.100.200",
    "::100.100.100.200", "64:ff9b::6464:64c8", "192.0.0.192", "168.63.129.16", "64:ff9b::a83f:8110",
  ]) {
    test(`ExternalName ${address} (a cloud metadata service) → 502 UpstreamAddressForbidden`, async () => {
      const seen: [string, string | null][] = [];
      const resolver = createExternalResolver({
        check: (a) => {
          const why = forbiddenReason(a, ownAddresses());
          seen.push([a, why]);
          return why ?? "test: only loopback is connected to";
        },
      });
      proxy = startProxy(compiled(address, 80, true).table, resolver);
      try {
        const raw = await get(proxy.port);
        expect(statusLine(raw)).toBe(502);
        expect(proxy.records.map((r) => [r.status, r.error, r.upstream])).toEqual([[502, "UpstreamAddressForbidden", null]]);
        expect(seen).toEqual([[address, METADATA_REASON]]);
      } finally {
        await proxy.stop();
      }
    });
  }

  test("HTTPS backend-protocol: refused before any TLS handshake", async () => {
    const result = compiled("localhost", backend.port, true, ", annotations: { portico.dev/backend-protocol: HTTPS }");
    proxy = startProxy(result.table);
    try {
      expect(statusLine(await get(proxy.port))).toBe(502);
    } finally {
      await proxy.stop();
    }
    expect(backend.connections).toEqual([]);
  });

  test("a name that does not resolve: 502 UpstreamConnect, nothing connected", async () => {
    proxy = startProxy(compiled("no-such-name.invalid", backend.port, true).table);
    try {
      expect(statusLine(await get(proxy.port))).toBe(502);
      expect(proxy.records.map((r) => r.error)).toEqual(["UpstreamConnect"]);
      expect(proxy.upstreamErrors).toEqual(["dns"]);
    } finally {
      await proxy.stop();
    }
    expect(backend.connections).toEqual([]);
  });
});

describe("the address policy", () => {
  const own = new Set(["10.1.2.3", "fd00::2"]);
  const refused: [string, string][] = [
    ["127.0.0.1", "loopback"], ["127.255.255.254", "loopback"], ["::1", "loopback"],
    ["0.0.0.0", "unspecified"], ["0.1.2.3", "unspecified"], ["::", "unspecified"],
    ["169.254.169.254", "link-local"], ["169.254.0.1", "link-local"], ["fe80::1", "link-local"], ["febf:ffff::1", "link-local"],
    // IPv4-mapped, IPv4-compatible and NAT64 spellings of the same addresses
    ["::ffff:127.0.0.1", "loopback"], ["::ffff:7f00:1", "loopback"], ["::ffff:0.0.0.0", "unspecified"],
    ["::ffff:169.254.169.254", "link-local"], ["::127.0.0.1", "loopback"], ["64:ff9b::7f00:1", "loopback"],
    ["64:ff9b::a9fe:a9fe", "link-local"],
    // IPv4-translated (RFC 2765), 6to4 (RFC 3056) and local-use NAT64 (RFC 8215) in each of
    // RFC 6052's layouts (/48, /56, /64, /96)
    ["::ffff:0:7f00:1", "loopback"], ["::ffff:0:169.254.169.254", "link-local"],
    ["2002:7f00:1::", "loopback"], ["2002:a9fe:a9fe::1", "link-local"], ["2002::", "unspecified"], ["2002:6464:64c8:1::", METADATA_REASON],
    ["64:ff9b:1::a9fe:a9fe", "link-local"], ["64:ff9b:1::169.254.169.254", "link-local"], ["64:ff9b:1:a9fe:a9:fe00::", "link-local"],
    ["64:ff9b:1:7f:0:1::", "loopback"], ["64:ff9b:1:0:a9:fea9:fe00::", "link-local"], ["64:ff9b:1:0:64:6464:c800::", METADATA_REASON],
    // cloud metadata and credential services outside link-local (config/address-policy.ts)
    ...([
      "fd00:ec2::254", "fd00:ec2::23", "fd20:ce::254", "fd00:42::42",
      "100.100.100.200", "::ffff:100.100.100.200", "::ffff:6464:64c8", "::100.100.100.200", "64:ff9b::6464:64c8",
      "192.0.0.192", "::ffff:192.0.0.192", "::192.0.0.192", "64:ff9b::c000:c0",
      "168.63.129.16", "::ffff:168.63.129.16", "::168.63.129.16", "64:ff9b::a83f:8110",
    ].map((a) => [a, METADATA_REASON]) as [string, string][]),
    // this pod's own addresses, in any form
    ["10.1.2.3", "this pod's own address"], ["::ffff:10.1.2.3", "this pod's own address"], ["fd00::2", "this pod's own address"],
    ["::ffff:0:a01:203", "this pod's own address"], ["2002:a01:203::", "this pod's own address"], ["64:ff9b:1::a01:203", "this pod's own address"],
    // not an address at all (a zone id): refused rather than guessed at
    ["fe80::1%eth0", "not an IP address"], ["127.1", "not an IP address"],
  ];
  const allowed = [
    "10.0.0.1", "172.16.0.1", "192.168.1.1", "100.64.0.1", "fd00::1", "8.8.8.8", "2001:db8::1",
    "169.253.255.255", "169.255.0.1", "128.0.0.1", "1.0.0.0", "::ffff:10.0.0.1", "fec0::1", "fe00::1",
    // next to the metadata addresses, still ordinary
    "100.100.100.199", "100.100.100.201", "192.0.0.193", "168.63.129.17", "fd00:ec2::1", "fd00:ec2::255", "fd20:ce::253",
    // translated and tunnelled spellings of public addresses (zero fields of the other NAT64 layouts included)
    "2002:808:808::1", "64:ff9b:1::808:808", "64:ff9b:1:808:8:800::", "::ffff:0:808:808", "64:ff9b:2::a9fe:a9fe", "2003:a9fe:a9fe::",
  ];
  for (const [a, why] of refused) test(`${a}: refused (${why})`, () => expect(forbiddenReason(a, own)).toBe(why));
  test("private, VPC and public addresses are allowed", () => {
    expect(allowed.map((a) => [a, forbiddenReason(a, own)])).toEqual(allowed.map((a) => [a, null]));
  });
  test("an auth-url host as WHATWG URL gives it: refused before any lookup in every spelling", () => {
    const hosts: [string, string][] = [
      ["http://[2002:7f00:1::]/", "loopback"], ["http://[64:ff9b:1::a9fe:a9fe]/", "link-local"], ["http://[::ffff:0:127.0.0.1]/", "loopback"],
      ["http://localhost../", "loopback"], ["http://0x7f.1/", "loopback"], ["http://2852039166/", "link-local"], ["http://[::ffff:a9fe:a9fe]/", "link-local"],
    ];
    expect(hosts.map(([u]) => [u, fixedHostRefusal(new URL(u).hostname)])).toEqual(hosts);
  });
  test("this host's interfaces are read for real and include loopback", () => {
    const mine = ownAddresses();
    expect(mine.has("127.0.0.1")).toBe(true);
    expect(forbiddenReason("127.0.0.1", mine)).not.toBeNull();
  });
  test("a mixed answer uses only the permitted address", async () => {
    const r = createExternalResolver({ lookup: async () => ["127.0.0.1", "169.254.169.254", "10.9.8.7", "10.9.8.8"] });
    const u = { address: "mixed.test", port: 80, authority: "mixed.test:80", ready: true, serving: true, terminating: false };
    expect((await r.target(u, 1_000)).authority).toBe("10.9.8.7:80");
    const none = createExternalResolver({ lookup: async () => ["127.0.0.1", "::1", "169.254.169.254"] });
    const e = await none.target(u, 1_000).catch((x: unknown) => x);
    expect(e).toMatchObject({ code: "UpstreamAddressForbidden" });
    expect((e as { detail: string }).detail).toContain("127.0.0.1 (loopback)");
  });
});

describe("a permitted address: the connection goes to the address checked (injected lookup and check)", () => {
  // "partner.test" resolves nowhere (.test is reserved, RFC 6761): a request that reaches the
  // backend was connected to the address our lookup returned, not to a second resolution.
  const lookups: string[] = [];
  const checked: string[] = [];
  const injected = () =>
    createExternalResolver({
      lookup: async (name) => {
        lookups.push(name);
        if (name === "partner.test") return ["127.0.0.1"];
        throw Object.assign(new Error("not found"), { code: "ENOTFOUND" });
      },
      check: (a) => {
        checked.push(a);
        return a === "127.0.0.1" ? null : "test";
      },
    });

  test("HTTP: reaches the checked IP, Host as the client sent it, one lookup for several requests", async () => {
    const backend = recordingBackend();
    const proxy = startProxy(compiled("partner.test", backend.port, true).table, injected());
    try {
      for (let i = 0; i < 3; i++) expect(statusLine(await get(proxy.port, "ext.test", `/r${i}`))).toBe(200);
      // First the connect probe of a cold endpoint (probe.ts: it sends nothing), then one
      // connection per request (the backend closes after each answer): all to the checked IP.
      expect(backend.connections.map((c) => c.split("\r\n")[0])).toEqual(["", "GET /r0 HTTP/1.1", "GET /r1 HTTP/1.1", "GET /r2 HTTP/1.1"]);
      expect(backend.connections[1]).toMatch(/\r\nhost: ext\.test\r\n/i);
      expect(proxy.records.map((r) => r.upstream)).toEqual(Array(3).fill(`127.0.0.1:${backend.port}`));
      expect(lookups).toEqual(["partner.test"]); // answers are kept (30 s), not looked up per request
      expect(checked).toEqual(["127.0.0.1", "127.0.0.1", "127.0.0.1"]); // but checked on every use
    } finally {
      await proxy.stop();
      backend.stop();
    }
  });

  test("HTTP/1.0 without Host: the Service's name is sent as Host, not the IP", async () => {
    const backend = recordingBackend();
    // No Host: routed by the empty host, so the rule has none.
    const proxy = startProxy(compiled("partner.test", backend.port, true, "", "").table, injected());
    try {
      expect(statusLine(await rawRequest(proxy.port, "GET /old HTTP/1.0\r\n\r\n"))).toBe(200);
      expect(backend.connections).toHaveLength(2); // the probe, then the request
      expect(backend.connections[1]).toMatch(new RegExp(`\\r\\nhost: partner\\.test:${backend.port}\\r\\n`, "i"));
    } finally {
      await proxy.stop();
      backend.stop();
    }
  });

  test("HTTPS: TLS to the checked IP with the Service's name as SNI", async () => {
    const cert = generateDefaultCertificate();
    const sni: string[] = [];
    const server = tls.createServer({ cert: cert.cert, key: cert.key }, (s) => {
      sni.push(String((s as tls.TLSSocket & { servername?: string }).servername));
      s.on("data", () => s.end("HTTP/1.1 200 OK\r\ncontent-length: 3\r\nconnection: close\r\n\r\ntls"));
      s.on("error", () => {});
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as { port: number }).port;
    const proxy = startProxy(compiled("partner.test", port, true, ", annotations: { portico.dev/backend-protocol: HTTPS }").table, injected());
    try {
      const raw = await get(proxy.port);
      expect(statusLine(raw)).toBe(200);
      expect(raw).toEndWith("tls");
      expect(sni).toEqual(["partner.test"]);
    } finally {
      await proxy.stop();
      server.close();
    }
  });

  test("WebSocket: the upstream socket goes to the checked IP", async () => {
    const hosts: string[] = [];
    const ws = Bun.serve<object>({
      hostname: "127.0.0.1", port: 0,
      fetch(req, s) {
        hosts.push(req.headers.get("host") ?? "");
        return s.upgrade(req, { data: {} }) ? undefined : new Response("no", { status: 400 });
      },
      websocket: { message(w, m) { w.send(`echo:${m}`); } },
    });
    const proxy = startProxy(compiled("partner.test", ws.port as number, true).table, injected());
    try {
      const msg = await wsFirstReply(`ws://127.0.0.1:${proxy.port}/ws`, { host: "ext.test" });
      expect(msg).toBe("echo:hi");
      expect(hosts).toEqual(["ext.test"]);
    } finally {
      await proxy.stop();
      await ws.stop(true);
    }
  });
});

describe("the real process: an ExternalName pointing at Portico's own admin port", () => {
  // The reproduction from the security review: Service externalName 127.0.0.1, port = the
  // admin port, so GET /debug/routes through the traffic port read every tenant's routes.
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  for (const allow of [false, true]) {
    test(allow ? "flag on: 502 UpstreamAddressForbidden in the access log" : "flag off: 503", async () => {
      const dir = mkdtempSync(join(tmpdir(), "portico-extname-"));
      dirs.push(dir);
      const args = ["--manifests", dir, "--access-log", "stdout", "--log-level", "warn"];
      const p = await startPortico(allow ? [...args, "--allow-external-name-services"] : args);
      try {
        // The admin port is known once Portico runs; the folder is watched, so the Service
        // and Ingress are written now and served once the route exists (no longer 404).
        writeFileSync(join(dir, "all.yaml"), yamlFor("127.0.0.1", p.ports.admin));
        await eventually(async () => statusLine(await get(p.ports.http, "ext.test", "/healthz")) !== 404, 10_000);
        // Portico's own admin port does answer /debug/routes directly, so a 200 through the
        // traffic port would be the leak.
        expect((await fetch(`${p.admin}/debug/routes`)).status).toBe(200);
        const raw = await get(p.ports.http, "ext.test", "/debug/routes");
        expect(statusLine(raw)).toBe(allow ? 502 : 503);
        expect(raw).not.toContain("ext.test\"");
        const line = await p.waitForLine(/"path":"\/debug\/routes"/);
        expect(JSON.parse(line)).toMatchObject({ status: allow ? 502 : 503, error: allow ? "UpstreamAddressForbidden" : "NoEndpoints", upstream: null });
      } finally {
        await p.stop("SIGKILL");
      }
    });
  }
});
