// Hostile PROXY protocol input (HAProxy's proxy-protocol.txt §2.1 and §2.2) against the real
// Portico process with --use-proxy-protocol, on raw sockets: headers split into one-byte
// writes, v2 lengths past the reader's bound, LOCAL and UNSPEC, trailing bytes that are no
// HTTP, and many connections that never finish a header. What must hold: every broken header
// closes its connection unanswered (nginx's "broken header" in ngx_proxy_protocol_read), a
// header that never completes is closed at --proxy-protocol-header-timeout, and the port keeps
// serving. The ingress-nginx ports of the same feature are in proxy-protocol-nginx.test.ts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import tls from "node:tls";
import { createCertificate } from "../tls/pki.ts";
import { namedBackend, rawBackend, readUntilClose, type RawBackend } from "../proxy/raw.ts";
import { eventually } from "../wait.ts";
import { startPortico, waitReady, type Portico } from "./harness.ts";
import { ingress, ingressClass, service, slice, tlsSecret, yamlDocs } from "./objects.ts";

const HOST = "pp-hostile";
const pem = createCertificate({ subjectCN: HOST, sans: [HOST] });
let backend: RawBackend;
let hose: RawBackend;
/** What the streaming pod wrote, and whether its socket is full (a write held until 'drain'). */
const streams: { sent: number; waiting: boolean; socket: net.Socket }[] = [];
const STREAM_CAP = 160 * 1024 * 1024;
/** A pod answering with a chunked body of new bytes for as long as it is taken, up to STREAM_CAP. */
function stream(socket: net.Socket): void {
  const f = { sent: 0, waiting: false, socket };
  streams.push(f);
  socket.write("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n");
  const chunk = `10000\r\n${"z".repeat(0x10000)}\r\n`;
  const pump = () => {
    f.waiting = false;
    while (f.sent < STREAM_CAP && !socket.destroyed) {
      f.sent += chunk.length;
      if (!socket.write(chunk, "latin1")) {
        f.waiting = true;
        socket.once("drain", pump);
        return;
      }
    }
  };
  pump();
}
let p: Portico;
let dir: string;

beforeAll(async () => {
  backend = await namedBackend("echo");
  hose = await rawBackend((req) => (stream(req.socket), null));
  dir = mkdtempSync(join(tmpdir(), "portico-pp-hostile-"));
  mkdirSync(join(dir, "m"));
  writeFileSync(join(dir, "m", "all.yaml"), yamlDocs([
    ingressClass(), service("web", "echo"), slice("web", "echo", [backend.port]),
    tlsSecret("web", "pp-tls", pem.certPem, pem.keyPem),
    service("web", "hose"), slice("web", "hose", [hose.port]),
    ingress("web", "pp", [{ host: HOST, paths: [{ path: "/", service: "echo" }, { path: "/stream", service: "hose" }] }], {
      tls: [{ hosts: [HOST], secretName: "pp-tls" }], annotations: { "nginx.ingress.kubernetes.io/ssl-redirect": "false" },
    }),
  ]));
  p = await startPortico(["--manifests", join(dir, "m"), "--access-log", "off", "--use-proxy-protocol", "--proxy-protocol-header-timeout", "1s", "--client-header-timeout", "2s", "--workers", "1"]);
  await waitReady(p);
});
afterAll(async () => {
  await p?.stop("SIGKILL");
  await backend?.stop();
  await hose?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function connect(port = p.ports.http): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, "127.0.0.1", () => resolve(s));
    s.once("error", reject);
  });
}

/** Writes `bytes` one byte per write, each after the previous one was flushed. */
async function trickle(s: net.Socket, bytes: Uint8Array): Promise<void> {
  for (const b of bytes) await new Promise<void>((resolve) => s.write(new Uint8Array([b]), () => resolve()));
}

const enc = (t: string) => new TextEncoder().encode(t);
const SIG = [0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a];
/** A version 2 header with this version/command byte, family/protocol byte and body. */
const v2 = (verCmd: number, fam: number, body: number[], len = body.length) => new Uint8Array([...SIG, verCmd, fam, len >> 8, len & 0xff, ...body]);
const V4 = [203, 0, 113, 9, 10, 0, 0, 1, 0x30, 0x39, 0, 80];
const request = (id: string) => enc(`GET / HTTP/1.1\r\nHost: ${HOST}\r\nX-Request-ID: ${id}\r\nConnection: close\r\n\r\n`);

/** The X-Forwarded-For the pod saw for the request carrying `id`. */
function forwardedFor(id: string): string | undefined {
  const head = backend.heads().find((h) => h.includes(`\r\nX-Request-ID: ${id}\r\n`) || h.toLowerCase().includes(`\r\nx-request-id: ${id}\r\n`));
  return /\r\nx-forwarded-for: ([^\r]*)/i.exec(head ?? "")?.[1];
}

async function served(header: Uint8Array, id: string, oneByteWrites = false): Promise<string | undefined> {
  const s = await connect();
  const all = readUntilClose(s);
  const bytes = new Uint8Array([...header, ...request(id)]);
  if (oneByteWrites) await trickle(s, bytes);
  else s.write(bytes);
  const r = await all;
  expect(r.closed).toBe(true);
  expect(r.data).toStartWith("HTTP/1.1 200 ");
  return forwardedFor(id);
}

async function refused(bytes: Uint8Array): Promise<void> {
  const s = await connect();
  const all = readUntilClose(s);
  s.write(bytes);
  expect(await all).toEqual({ data: "", closed: true });
}

describe("PROXY protocol, hostile input", () => {
  test("a header split into one-byte writes is read whole (v1 and v2), and its client is used", async () => {
    expect(await served(enc("PROXY TCP4 198.51.100.7 10.0.0.1 4000 80\r\n"), "trickle-v1", true)).toBe("198.51.100.7");
    expect(await served(v2(0x21, 0x11, V4), "trickle-v2", true)).toBe("203.0.113.9");
  });

  test("on the HTTPS port: a v2 header in one-byte writes, then a TLS handshake and a request; its client is used", async () => {
    const raw = await connect(p.ports.https);
    await trickle(raw, v2(0x21, 0x11, V4));
    const s = tls.connect({ socket: raw, servername: HOST, rejectUnauthorized: false });
    await new Promise<void>((resolve, reject) => (s.once("secureConnect", resolve), s.once("error", reject)));
    const all = readUntilClose(s as unknown as net.Socket);
    s.write(request("tls-trickle"));
    const r = await all;
    expect(r.data).toStartWith("HTTP/1.1 200 ");
    expect(forwardedFor("tls-trickle")).toBe("203.0.113.9");
  });

  test("LOCAL, UNSPEC and UNKNOWN keep the connection's own address; TLVs after the addresses are skipped", async () => {
    expect(await served(v2(0x20, 0x11, V4), "local")).toBe("127.0.0.1");
    expect(await served(v2(0x21, 0x00, []), "unspec")).toBe("127.0.0.1");
    expect(await served(enc("PROXY UNKNOWN\r\n"), "unknown")).toBe("127.0.0.1");
    // A TLV (type 0x04, NOOP) of 3 bytes after the addresses, inside the header's length.
    expect(await served(v2(0x21, 0x11, [...V4, 0x04, 0, 3, 1, 2, 3]), "tlv")).toBe("203.0.113.9");
  });

  test("broken headers are closed unanswered: v2 lengths too large or too small, wrong version, a TLV past the length, v1 over 107 bytes", async () => {
    // §2.2 allows up to 65,535 bytes after the 16; the reader refuses more than its 4 KiB
    // bound at once rather than waiting for them.
    await refused(v2(0x21, 0x11, V4, 0xffff));
    // A length shorter than IPv4's 12 address bytes.
    await refused(v2(0x21, 0x11, V4.slice(0, 8)));
    await refused(v2(0x11, 0x11, V4));
    await refused(v2(0x2f, 0x11, V4));
    // The TLV says 200 bytes but the header's length ends after 3 of them: the rest is read
    // as the connection's first bytes, which are no HTTP request.
    const tlvPast = v2(0x21, 0x11, [...V4, 0x04, 0, 200, 1, 2, 3]);
    const s = await connect();
    const all = readUntilClose(s);
    s.write(new Uint8Array([...tlvPast, ...new Uint8Array(197).fill(0x41), 0x0d, 0x0a, 0x0d, 0x0a]));
    const r = await all;
    expect(r.closed).toBe(true);
    // Portico's own answer to a request line it cannot read (Bun.serve's 400), as nginx's 400.
    expect(r.data).toBe("HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n");
    // 108 bytes before the CRLF (§2.1: a line is at most 107 bytes with it).
    const long = `PROXY TCP4 198.51.100.7 10.0.0.1 4000 80${" ".repeat(108 - 40)}\r\n`;
    await refused(enc(long));
    // Not ASCII inside the line.
    await refused(new Uint8Array([...enc("PROXY TCP4 198.51.100.7 10.0.0.1 4000 8"), 0xff, 0x0d, 0x0a]));
    expect(await served(enc("PROXY TCP4 198.51.100.8 10.0.0.1 4000 80\r\n"), "after-broken")).toBe("198.51.100.8");
  });

  test("a header and then nothing, or one byte of a request and then nothing: closed unanswered, not held", async () => {
    // After the header the request's own bytes are under --client-header-timeout (2 s here;
    // nginx's client_header_timeout runs from the end of the PROXY header too), then under the
    // listener's idle timeout once they started.
    const ends = [new Uint8Array(0), enc("G")].map(async (after) => {
      const s = await connect();
      const all = readUntilClose(s);
      s.write(new Uint8Array([...enc("PROXY TCP4 198.51.100.7 10.0.0.1 4000 80\r\n"), ...after]));
      return all;
    });
    expect(await Promise.all(ends)).toEqual([{ data: "", closed: true }, { data: "", closed: true }]);
  });

  test("a client behind a PROXY header that stops reading a never-ending answer: the front holds the pod back", async () => {
    const before = streams.length;
    // No 'data' listener: nothing is taken off the client's socket past its small buffer.
    const s = await connect();
    s.write(new Uint8Array([...enc("PROXY TCP4 198.51.100.7 10.0.0.1 4000 80\r\n"), ...enc(`GET /stream HTTP/1.1\r\nHost: ${HOST}\r\n\r\n`)]));
    await eventually(() => streams.length > before, 10_000, "the pod got the request");
    const f = streams[before]!;
    // Held: the same count over 40 polls while the pod's writes wait. Socket buffers on
    // loopback hold a few MiB per hop (client, front, listener, pod); a front that kept reading
    // would take all STREAM_CAP bytes.
    let last = -1;
    let same = 0;
    await eventually(() => {
      same = f.waiting && f.sent === last ? same + 1 : 0;
      last = f.sent;
      return same >= 40 || f.sent >= STREAM_CAP;
    }, 120_000, "the pod's writes held, or all of them taken", 50);
    expect(f.sent).toBeLessThan(64 * 1024 * 1024);
    s.destroy();
    await eventually(() => f.socket.destroyed || f.socket.closed, 10_000, "the pod's connection closed after the client left");
  });

  test("200 connections that stop mid-header are all closed at the header timeout, and the port serves meanwhile", async () => {
    const partial = [enc("PROXY TCP4 1.2.3"), new Uint8Array(SIG.slice(0, 7)), v2(0x21, 0x11, V4).subarray(0, 20), enc("P")];
    // Half on each port.
    const socks = await Promise.all(Array.from({ length: 200 }, (_, i) => connect(i % 2 ? p.ports.https : p.ports.http)));
    const ends = socks.map((s, i) => {
      const all = readUntilClose(s);
      s.write(partial[i % partial.length] as Uint8Array);
      return all;
    });
    expect(await served(enc("PROXY TCP4 198.51.100.9 10.0.0.1 4000 80\r\n"), "meanwhile")).toBe("198.51.100.9");
    const results = await Promise.all(ends);
    expect(results.every((r) => r.closed && r.data === "")).toBe(true);
    expect(p.proc.exitCode).toBeNull();
    await eventually(async () => (await served(enc("PROXY TCP4 198.51.100.10 10.0.0.1 4000 80\r\n"), `after-${Date.now()}`)) === "198.51.100.10", 10_000, "the port serves");
  });
});
