// A load balancer stand-in for bench/proxy-protocol.ts: listens on 127.0.0.1, connects each
// client to `--to` on 127.0.0.1 and copies bytes both ways, first writing a PROXY protocol v1
// header naming the client when `--header` is given (as AWS NLB or HAProxy with send-proxy do).
// The same relay without `--header` stands in front of the other Portico, so both see the
// same extra hop and only the header and its reading differ. Prints its port, then serves until
// killed. Loopback only.
import type { Socket } from "bun";
import { parseArgs } from "node:util";

const { values } = parseArgs({ options: { to: { type: "string" }, header: { type: "boolean", default: false } } });
const to = Number(values.to);
if (!Number.isInteger(to) || to <= 0 || to > 65535) throw new Error("--to PORT is required");

interface Conn {
  client: Socket<Conn>;
  up: Socket<Conn> | null;
  toUp: Uint8Array[];
  toClient: Uint8Array[];
}

/** Writes what `s` takes now, keeps the rest in `q` (bytes are copied: Bun may reuse its buffer). */
function send(s: Socket<Conn> | null, q: Uint8Array[], chunk: Uint8Array): void {
  if (s === null || q.length > 0) {
    q.push(chunk.slice());
    return;
  }
  const n = s.write(chunk);
  if (n < chunk.length) q.push(chunk.slice(Math.max(n, 0)));
}
function flush(s: Socket<Conn>, q: Uint8Array[]): void {
  while (q.length > 0) {
    const head = q[0] as Uint8Array;
    const n = s.write(head);
    if (n < head.length) {
      q[0] = head.subarray(Math.max(n, 0));
      return;
    }
    q.shift();
  }
}

const upstream = {
  open(up: Socket<Conn>) {
    up.data.up = up;
    flush(up, up.data.toUp);
  },
  data(up: Socket<Conn>, chunk: Uint8Array) {
    send(up.data.client, up.data.toClient, chunk);
  },
  drain(up: Socket<Conn>) {
    flush(up, up.data.toUp);
  },
  close(up: Socket<Conn>) {
    up.data.client.end();
  },
  error() {},
};

const server = Bun.listen<Conn>({
  hostname: "127.0.0.1",
  port: 0,
  socket: {
    open(client) {
      const c: Conn = { client, up: null, toUp: [], toClient: [] };
      client.data = c;
      if (values.header) c.toUp.push(new TextEncoder().encode(`PROXY TCP4 192.0.2.10 127.0.0.1 ${client.remotePort} 80\r\n`));
      Bun.connect<Conn>({ hostname: "127.0.0.1", port: to, data: c, socket: upstream }).catch(() => client.end());
    },
    data(client, chunk) {
      send(client.data.up, client.data.toUp, chunk);
    },
    drain(client) {
      flush(client, client.data.toClient);
    },
    close(client) {
      client.data.up?.end();
    },
    error() {},
  },
});
console.log(server.port);
