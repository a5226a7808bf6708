// Open QUIC connections across a certificate rotation (--http3; docs/design.md "HTTP/2 and
// gRPC", hand-overs, and "Bun facts measured here"). A rotation starts the next Bun.serve on the
// same port with SO_REUSEPORT; once it has joined the UDP port group, the kernel hashes some of
// the previous server's open QUIC connections to it, and it does not know them. Each client
// here is a process of its own (one QUIC connection each, test/tls/h3-client.ts) holding a
// request in flight on the outgoing server when the rotation happens; every request it makes
// must be answered, none may wait out the client's bound. Both QUIC listeners that rotate are
// covered: Bun.serve's QUIC beside its HTTPS over TCP, and the SNI split's HTTP/3-only one
// (`http1: false`, as serving/tls-split.ts makes it). Loopback only, bounded counts and waits.
import { afterEach, expect, test } from "bun:test";
import { generateDefaultCertificate } from "../../src/tls/default-cert.ts";
import { createTlsListener, type ServeHandler, type TlsListener } from "../../src/tls/listener.ts";
import { createPemChecker } from "../../src/tls/pem.ts";
import { buildTlsEntries } from "../../src/tls/sni.ts";
import { eventually } from "../wait.ts";
import { binding, quietLog } from "./helpers.ts";
import { createCertificate, generateKeyPair } from "./pki.ts";

const HOST = "h3rot.test";
const CLIENTS = 4;
// A request without an answer within this is a stall (Bun's QUIC client otherwise waits for the
// connection's idle timeout); an answered one takes milliseconds on loopback.
const STALL_BOUND_MS = 5_000;
// Each loop of a client pauses PAUSE_MS between requests; MAX_REQUESTS bounds a client's run
// (at least a minute at that pace, far past the test's bounds).
const PAUSE_MS = 5;
const MAX_REQUESTS = 20_000;
// Two request loops per client on its one connection: one is held on the outgoing server across
// the rotation, the other keeps sending on the same connection meanwhile.
const STREAMS = 2;
// Each rotation moves some connections in the kernel's hash, not all: several make a run that
// misses every one unlikely.
const ROTATIONS = 3;

const settings = { minVersion: "1.2", ciphers: "ECDHE-ECDSA-AES128-GCM-SHA256" } as const;
const generated = generateDefaultCertificate();
const checker = createPemChecker();
const key = generateKeyPair("ecdsa");
const certFor = (cn: string) => createCertificate({ subjectCN: cn, sans: [HOST, "127.0.0.1"], keyPair: key });
function entries(cn: string) {
  const built = buildTlsEntries([binding(HOST, "ns/h3rot", certFor(cn), `uid/${cn}`)], generated, settings, { checker });
  expect(built.diagnostics).toEqual([]);
  return built;
}

interface Line {
  readonly i: number;
  readonly status?: number;
  readonly body?: string;
  readonly error?: string;
  readonly ms?: number;
}

interface Client {
  readonly proc: ReturnType<typeof Bun.spawn>;
  readonly lines: Line[];
  readonly done: Promise<void>;
}

function startClient(port: number, id: number): Client {
  const proc = Bun.spawn([process.execPath, `${import.meta.dir}/h3-client.ts`, String(port), String(STALL_BOUND_MS), String(MAX_REQUESTS), String(STREAMS), String(id), String(PAUSE_MS)], {
    stdin: "pipe", stdout: "pipe", stderr: "ignore",
  });
  const lines: Line[] = [];
  const done = (async () => {
    let buf = "";
    const dec = new TextDecoder();
    for await (const chunk of proc.stdout as ReadableStream<Uint8Array>) {
      buf += dec.decode(chunk, { stream: true });
      for (let n = buf.indexOf("\n"); n >= 0; n = buf.indexOf("\n")) {
        lines.push(JSON.parse(buf.slice(0, n)) as Line);
        buf = buf.slice(n + 1);
      }
    }
  })();
  return { proc, lines, done };
}

let listeners: TlsListener[] = [];
let clients: Client[] = [];
afterEach(async () => {
  for (const c of clients) void (c.proc.stdin as import("bun").FileSink).end();
  // Each client ends its loop at stdin's end; one still in a stalled request is killed.
  await Promise.race([Promise.all(clients.map((c) => c.proc.exited)), Bun.sleep(STALL_BOUND_MS + 2_000)]);
  for (const c of clients) c.proc.kill();
  await Promise.all(clients.map((c) => c.done));
  clients = [];
  await Promise.all(listeners.map((l) => l.stop(true)));
  listeners = [];
});

type Options = Partial<Parameters<typeof createTlsListener>[0]>;
const beside: Options = { drainMs: 300 };
// As serving/tls-split.ts makes its QUIC listener.
const quicAlone: Options = { http1: false, drainMs: 0 };

for (const mode of [
  { name: "a rotation of Bun.serve's QUIC beside HTTPS over TCP", opts: beside, handOver: false },
  { name: "a rotation of the SNI split's HTTP/3-only listener", opts: quicAlone, handOver: false },
  // serving/https.ts: the next listener binds the port, then the previous one is stopped
  // gracefully (serving/retiring.ts), as between Bun.serve, the split and node:http2.
  { name: "a hand-over from Bun.serve's listener", opts: beside, handOver: true },
  { name: "a hand-over from the SNI split's HTTP/3-only listener", opts: quicAlone, handOver: true },
] as const) {
  test(`${mode.name}: every request of the open QUIC connections across ${ROTATIONS} of them is answered, none stalls`, async () => {
    // Each server holds one request of each client until the next server listens, so every
    // client has one in flight on the outgoing server then, while its other loop keeps
    // sending on the same connection. Bun's client sends a GET whose stream closed before any
    // answer again once, on a new connection (measured on 1.4.5), and fails it at a second
    // close; so the request held is one sent after this server answered that client 3 times (a
    // later index than any it answered), never one still in flight from the previous change.
    // The answer names its server.
    let generation = 0;
    const held: Map<string, () => void>[] = []; // per server: client id -> release
    const handler = (): ServeHandler => {
      const gen = ++generation;
      const mine = new Map<string, () => void>();
      const answered = new Map<string, { n: number; top: number }>();
      held[gen] = mine;
      return {
        async fetch(req) {
          const [, client = "", index = "0"] = new URL(req.url).pathname.split("/");
          const i = Number(index);
          const a = answered.get(client) ?? { n: 0, top: -1 };
          if (gen <= ROTATIONS && !mine.has(client) && a.n >= 3 && i > a.top) await new Promise<void>((resolve) => mine.set(client, resolve));
          answered.set(client, { n: a.n + 1, top: Math.max(a.top, i) });
          return new Response(`server-${gen}`);
        },
      };
    };
    const listen = (port: number, cn: string): TlsListener => {
      const l = createTlsListener({ hostname: "127.0.0.1", port, handler, log: quietLog, holdoffMs: 0, http2: true, http3: true, ...mode.opts });
      listeners.push(l);
      const e = entries(cn);
      l.update(e.entries, e.fingerprint);
      return l;
    };
    let live = listen(0, "gen-1.test");
    const port = live.port;
    clients = Array.from({ length: CLIENTS }, (_, id) => startClient(port, id));
    const failed = () => clients.flatMap((c) => c.lines.filter((x) => x.error !== undefined));

    for (let r = 1; r <= ROTATIONS && failed().length === 0; r++) {
      // Every client's connection is open and has a request waiting on server r (or a request
      // of one has failed, which the assertion below reports).
      const answeredBy = (c: Client) => c.lines.filter((x) => x.body === `server-${r}`).length;
      await eventually(() => ((held[r]?.size ?? 0) >= CLIENTS && clients.every((c) => answeredBy(c) >= 3)) || failed().length > 0, 20_000, `${CLIENTS} clients with a request in flight on server ${r}`);
      if (mode.handOver) {
        const old = live;
        live = listen(port, `gen-${r + 1}.test`);
        old.freeze();
        void old.stop(false);
      } else {
        const next = entries(`gen-${r + 1}.test`);
        live.update(next.entries, next.fingerprint);
        await eventually(() => live.rotations === r, 10_000, `rotation ${r}`);
      }
      // Released once every client is on the next server (or one failed): until then a
      // graceful stop of the outgoing one would still be waiting on them.
      await eventually(() => clients.every((c) => c.lines.some((x) => x.body === `server-${r + 1}`)) || failed().length > 0, 20_000, `clients on server ${r + 1}`);
      for (const release of held[r]?.values() ?? []) release();
    }
    // Every client gets 3 answers from the last server, or one of its requests fails (a stall
    // ends at the client's bound): whichever comes first.
    const last = `server-${ROTATIONS + 1}`;
    await eventually(() => clients.every((c) => c.lines.filter((x) => x.body === last).length >= 3) || failed().length > 0, 30_000, "every client answered by the last server");

    expect(failed()).toEqual([]);
    const tags = new Set(Array.from({ length: ROTATIONS + 1 }, (_, i) => `server-${i + 1}`));
    for (const c of clients) for (const x of c.lines) expect({ status: x.status, served: tags.has(x.body ?? "") }).toEqual({ status: 200, served: true });
  }, 120_000);
}

test("the QUIC side is a server of its own: answers over TCP carry Bun.serve's Alt-Svc, the error handler's too, and QUIC answers", async () => {
  // What a Bun.serve with both http1 and http3 adds itself (measured on 1.4.5: to the error
  // handler's answers as well, after any the handler set; RFC 7838 §3, RFC 9114 §3.1.1).
  const l = createTlsListener({
    hostname: "127.0.0.1", port: 0, log: quietLog, http2: true, http3: true,
    handler: () => ({
      fetch(req) {
        if (new URL(req.url).pathname === "/throw") throw new Error("handler failed");
        return new Response("ok", { headers: { "alt-svc": "a=\":1\"" } });
      },
      error: () => new Response("error page", { status: 502 }),
    }),
  });
  listeners.push(l);
  const e = entries("alt.test");
  l.update(e.entries, e.fingerprint);
  const get = (path: string, protocol: string) =>
    fetch(`https://127.0.0.1:${l.port}${path}`, { protocol, tls: { rejectUnauthorized: false }, signal: AbortSignal.timeout(STALL_BOUND_MS) } as RequestInit);
  const ok = await get("/", "http1.1");
  expect([ok.status, await ok.text(), ok.headers.get("alt-svc")]).toEqual([200, "ok", `a=":1", h3=":${l.port}"; ma=86400`]);
  const failed = await get("/throw", "http1.1");
  expect([failed.status, await failed.text(), failed.headers.get("alt-svc")]).toEqual([502, "error page", `h3=":${l.port}"; ma=86400`]);
  const quic = await get("/", "http3");
  expect([quic.status, await quic.text(), quic.headers.get("alt-svc")]).toEqual([200, "ok", "a=\":1\""]);
  expect(l.servers.length).toBe(2);
});

test("a listener told of a QUIC port it does not run (the SNI split's Bun.serve side) advertises it the same way, never on a 421, and nothing while there is none", async () => {
  let quicPort: number | null = null;
  const l = createTlsListener({
    hostname: "127.0.0.1", port: 0, log: quietLog, http2: true, http3: false, advertiseH3: () => quicPort,
    handler: () => ({
      fetch(req) {
        const path = new URL(req.url).pathname;
        if (path === "/throw") throw new Error("handler failed");
        // The route step's answer for a host that needs node:http2 (RFC 9110 §15.5.20).
        if (path === "/misdirected") return new Response("misdirected request\n", { status: 421 });
        return new Response("ok", { headers: { "alt-svc": "a=\":1\"" } });
      },
      error: () => new Response("error page", { status: 502 }),
    }),
  });
  listeners.push(l);
  const e = entries("alt.test");
  l.update(e.entries, e.fingerprint);
  const get = async (path: string) => {
    const r = await fetch(`https://127.0.0.1:${l.port}${path}`, { tls: { rejectUnauthorized: false }, signal: AbortSignal.timeout(STALL_BOUND_MS) } as RequestInit);
    return [r.status, await r.text(), r.headers.get("alt-svc")];
  };
  // No QUIC listener yet: answers go out as the handler made them.
  expect(await get("/")).toEqual([200, "ok", "a=\":1\""]);
  quicPort = 4433;
  expect(await get("/")).toEqual([200, "ok", `a=":1", h3=":4433"; ma=86400`]);
  expect(await get("/throw")).toEqual([502, "error page", `h3=":4433"; ma=86400`]);
  expect(await get("/misdirected")).toEqual([421, "misdirected request\n", null]);
  // Only the one TCP server: this listener runs no QUIC of its own.
  expect(l.servers.length).toBe(1);
});
