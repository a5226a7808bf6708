// A TCP client for quic-bind.test.ts, in a process of its own: while the server's process is
// blocked building a Bun.serve (synchronous), the kernel still completes this process's TCP
// handshakes onto whichever listening socket of the port's SO_REUSEPORT group its hash picks,
// which a client in the server's own process could never do (its connect() waits on the same
// loop). Each request is a fresh TLS connection (`Connection: close`, RFC 9112 §9.6), so every
// one is a new pick, and a new one starts every millisecond while fewer than `concurrency` are
// open, without waiting for the others: connections the server's blocked process has not
// answered yet must not stop new ones from reaching the kernel meanwhile. It prints one JSON
// line per request until its stdin closes or `max` requests were made; a request without a
// full answer within `boundMs` is reported as failed.
import { connect } from "node:tls";

const port = Number(process.argv[2]);
const boundMs = Number(process.argv[3]);
const max = Number(process.argv[4]);
const concurrency = Number(process.argv[5] ?? 1);
let open = true;
void (async () => {
  for await (const _ of Bun.stdin.stream()) {
    // Nothing is ever written: the parent only closes stdin.
  }
  open = false;
})();

function once(): Promise<{ status?: number; error?: string }> {
  return new Promise((resolve) => {
    let data = "";
    let settled = false;
    const done = (r: { status?: number; error?: string }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      s.destroy();
      resolve(r);
    };
    const timer = setTimeout(() => done({ error: "no answer within the bound" }), boundMs);
    const s = connect({ host: "127.0.0.1", port, servername: "quicbind.test", rejectUnauthorized: false }, () => {
      s.write("GET / HTTP/1.1\r\nHost: quicbind.test\r\nConnection: close\r\n\r\n");
    });
    s.setEncoding("utf8");
    s.on("data", (d: string) => {
      data += d;
    });
    s.on("error", (e) => done({ error: String(e) }));
    s.on("close", () => {
      const status = Number(data.split(" ")[1]);
      done(data.endsWith("ok") && status === 200 ? { status } : { error: `incomplete answer: ${JSON.stringify(data.slice(0, 80))}` });
    });
  });
}

let next = 0;
let inflight = 0;
const tick = setInterval(() => {
  if (!open || next >= max) {
    if (inflight > 0) return;
    clearInterval(tick);
    process.exit(0);
  }
  if (inflight >= concurrency) return;
  const i = next++;
  inflight++;
  void once().then((r) => {
    inflight--;
    process.stdout.write(`${JSON.stringify({ i, ...r })}\n`);
  });
}, 1);
