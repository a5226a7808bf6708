// The ClientHello reader behind --enable-ssl-passthrough (src/tls/client-hello.ts), on real
// ClientHellos captured from node:tls clients, refragmented as RFC 8446 §5.1 allows, and on
// hostile inputs: every truncation, seeded random corruption, lengths that lie. It must never
// throw, never ask for more than it was promised, and name only a well-formed host.
import { expect, test } from "bun:test";
import { connect } from "node:tls";
import { MAX_BUFFERED_BYTES, MAX_HELLO_BYTES, parseClientHello, type HelloResult } from "../../src/tls/client-hello.ts";
import { seeded } from "../proxy/seeded.ts";

/** The first bytes a node:tls client sends (its ClientHello), captured by a raw TCP listener. */
async function capture(servername: string | null, extra: Record<string, unknown> = {}): Promise<Uint8Array> {
  let resolve!: (b: Uint8Array) => void;
  const got = new Promise<Uint8Array>((r) => (resolve = r));
  let buf = new Uint8Array(0);
  const l = Bun.listen({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      data(s, chunk) {
        const next = new Uint8Array(buf.length + chunk.length);
        next.set(buf);
        next.set(chunk, buf.length);
        buf = next;
        const r = parseClientHello(buf);
        if (r.kind !== "more") {
          resolve(buf);
          s.end();
        }
      },
    },
  });
  const c = connect({ host: "127.0.0.1", port: l.port, rejectUnauthorized: false, ...(servername === null ? {} : { servername }), ...extra });
  c.on("error", () => {});
  try {
    return await got;
  } finally {
    c.destroy();
    l.stop(true);
  }
}


/** The same handshake bytes in records of at most `size` bytes. */
function refragment(hello: Uint8Array, size: number): Uint8Array {
  const len = ((hello[3] as number) << 8) | (hello[4] as number);
  const msg = hello.subarray(5, 5 + len);
  const out: number[] = [];
  for (let i = 0; i < msg.length; i += size) {
    const part = msg.subarray(i, Math.min(msg.length, i + size));
    out.push(22, 3, 1, part.length >> 8, part.length & 0xff, ...part);
  }
  return new Uint8Array(out);
}

function sane(r: HelloResult, input: Uint8Array): void {
  if (r.kind === "more") expect(r.need).toBeGreaterThan(input.length);
  if (r.kind === "hello" && r.serverName !== null) expect(r.serverName).toMatch(/^[a-z0-9_-]+(\.[a-z0-9_-]+)*$/);
}

test("a real ClientHello: the SNI it carries, lowercased; none when the client sends none", async () => {
  const hello = await capture("Pass.Example.test");
  expect(parseClientHello(hello)).toEqual({ kind: "hello", serverName: "pass.example.test" });
  // node:tls sends no SNI for an IP address (RFC 6066 §3: "Literal IPv4 and IPv6 addresses are not permitted").
  expect(parseClientHello(await capture(null))).toEqual({ kind: "hello", serverName: null });
  // TLS 1.2 only: the same answer.
  expect(parseClientHello(await capture("old.test", { maxVersion: "TLSv1.2" }))).toEqual({ kind: "hello", serverName: "old.test" });
});

test("fragmented over many records (RFC 8446 §5.1), the same name; every shorter prefix asks for more", async () => {
  const hello = await capture("frag.test");
  for (const size of [1, 7, 64, 300]) {
    const f = refragment(hello, size);
    expect(parseClientHello(f)).toEqual({ kind: "hello", serverName: "frag.test" });
    if (size === 7) {
      for (let n = 0; n < f.length; n++) {
        const r = parseClientHello(f.subarray(0, n));
        expect(r.kind).toBe("more");
        sane(r, f.subarray(0, n));
      }
    }
  }
});

test("not TLS, wrong versions, empty or oversized records, another handshake type: decided at once, never 'more' forever", () => {
  expect(parseClientHello(new TextEncoder().encode("GET / HTTP/1.1\r\n"))).toEqual({ kind: "not-tls" });
  expect(parseClientHello(new Uint8Array([22, 9, 1, 0, 5]))).toMatchObject({ kind: "invalid" });
  expect(parseClientHello(new Uint8Array([22, 3, 1, 0, 0]))).toMatchObject({ kind: "invalid" });
  expect(parseClientHello(new Uint8Array([22, 3, 1, 0x40, 0x01]))).toMatchObject({ kind: "invalid" }); // 16385 > 2^14
  expect(parseClientHello(new Uint8Array([22, 3, 1, 0, 4, 2, 0, 0, 0]))).toMatchObject({ kind: "invalid" }); // ServerHello
  // A handshake length past the bound is refused as soon as its header is in.
  expect(parseClientHello(new Uint8Array([22, 3, 1, 0, 4, 1, 0x10, 0, 0]))).toEqual({ kind: "invalid", reason: `ClientHello longer than ${MAX_HELLO_BYTES} bytes` });
  // An alert record between fragments of the ClientHello.
  expect(parseClientHello(new Uint8Array([22, 3, 1, 0, 2, 1, 0, 21, 3, 1, 0, 2, 2, 40]))).toMatchObject({ kind: "invalid" });
});

test("lying lengths inside the ClientHello and odd server names never throw; only a well-formed host name is returned", async () => {
  const hello = await capture("x.test");
  const at = Buffer.from(hello).indexOf(Buffer.from("x.test"));
  expect(at).toBeGreaterThan(0);
  const withName = (name: number[]): Uint8Array => {
    const b = Uint8Array.from(hello);
    b.set(name, at);
    return b;
  };
  expect(parseClientHello(withName([0x78, 0x2e, 0x74, 0x65, 0x73, 0x00]))).toEqual({ kind: "hello", serverName: null }); // NUL
  expect(parseClientHello(withName([0x78, 0x2e, 0x2e, 0x65, 0x73, 0x74]))).toEqual({ kind: "hello", serverName: null }); // empty label
  expect(parseClientHello(withName([0x78, 0x2e, 0x74, 0x65, 0x73, 0x2e]))).toEqual({ kind: "hello", serverName: null }); // trailing dot
  expect(parseClientHello(withName([0x78, 0x2f, 0x74, 0x65, 0x73, 0x74]))).toEqual({ kind: "hello", serverName: null }); // "/"
  // The HostName length two bytes before the name, made to overrun its list.
  const over = Uint8Array.from(hello);
  over[at - 1] = 0xff;
  expect(parseClientHello(over)).toMatchObject({ kind: "invalid" });
});

test("seeded random corruption and truncation of real ClientHellos: no throw, every answer consistent", async () => {
  const seeds = [await capture("fuzz.example.test"), await capture(null), await capture("a.test", { maxVersion: "TLSv1.2" })];
  const rand = seeded(20261128); // seeded, so a failure is reproducible
  let decided = 0;
  for (let i = 0; i < 3000; i++) {
    const base = seeds[i % seeds.length] as Uint8Array;
    const b = Uint8Array.from(base.subarray(0, 1 + Math.floor(rand() * base.length)));
    const flips = 1 + Math.floor(rand() * 4);
    for (let k = 0; k < flips; k++) b[Math.floor(rand() * b.length)] = Math.floor(rand() * 256);
    const r = parseClientHello(b);
    sane(r, b);
    if (r.kind !== "more") decided++;
    else expect(r.need).toBeLessThanOrEqual(5 + 0xffff);
  }
  expect(decided).toBeGreaterThan(0);
  // Pure noise of every length up to the buffer bound.
  for (let i = 0; i < 300; i++) {
    const b = new Uint8Array(Math.floor(rand() * MAX_BUFFERED_BYTES));
    for (let k = 0; k < b.length; k++) b[k] = Math.floor(rand() * 256);
    sane(parseClientHello(b), b);
  }
});

/**
 * Feeds `b` one byte at a time as the TCP front does (front.ts: `choose` is called again only
 * once `need` bytes are in) and counts the calls until a decision.
 */
function callsFedBytewise(b: Uint8Array): { calls: number; result: HelloResult } {
  let need = 1;
  let calls = 0;
  for (let n = 1; n <= b.length; n++) {
    if (n < need) continue;
    calls++;
    const r = parseClientHello(b.subarray(0, n));
    if (r.kind !== "more") return { calls, result: r };
    need = r.need;
  }
  return { calls, result: { kind: "more", need } };
}

test("one-byte records sent a byte at a time: `need` spares the caller a call per byte (each call walks every record so far)", async () => {
  // A real ClientHello in one-byte records (six bytes on the wire per byte of it), and the
  // largest message that fits the front's bound in them. Asked once or twice per record, the
  // reader walked every record each time: quadratic, about a second of CPU for 24 KiB.
  const hello = refragment(await capture("slow.example.test"), 1);
  const r = callsFedBytewise(hello);
  expect(r.result).toEqual({ kind: "hello", serverName: "slow.example.test" });
  expect(r.calls).toBeLessThanOrEqual(64);
  const body = Math.floor(MAX_BUFFERED_BYTES / 6) - 4;
  const msg = new Uint8Array(4 + body);
  msg.set([1, 0, body >> 8, body & 0xff]);
  const tiny: number[] = [];
  for (const byte of msg) tiny.push(22, 3, 1, 0, 1, byte);
  const big = callsFedBytewise(new Uint8Array(tiny));
  // All zeros after the header: no valid ClientHello, but read whole before that is known.
  expect(big.result).toMatchObject({ kind: "invalid" });
  expect(big.calls).toBeLessThanOrEqual(64);
});

test("`need` never passes the bytes a complete ClientHello takes, however it is split into records", async () => {
  const hello = await capture("need.example.test");
  for (const size of [1, 2, 3, 4, 5, 13, 100, 16_384]) {
    const f = refragment(hello, size);
    for (let n = 0; n < f.length; n++) {
      const r = parseClientHello(f.subarray(0, n));
      expect(r.kind).toBe("more");
      if (r.kind === "more") expect(r.need).toBeLessThanOrEqual(f.length);
    }
    expect(parseClientHello(f)).toEqual({ kind: "hello", serverName: "need.example.test" });
  }
});
