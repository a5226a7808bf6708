// The gRPC Echo service (echo.proto) on @grpc/grpc-js, in this process or, run as a script, in
// a child process the suite can kill mid-stream (it prints its port on the first line).
import * as grpc from "@grpc/grpc-js";
import * as loader from "@grpc/proto-loader";
import { join } from "node:path";

export interface Msg {
  text?: string;
  n?: number;
  delayMs?: number;
  action?: string;
}

// biome-ignore lint: grpc-js builds the client and service types at run time.
type Any = any;

const def = loader.loadSync(join(import.meta.dir, "echo.proto"), { keepCase: false, defaults: true });
export const echoPackage = (grpc.loadPackageDefinition(def) as Any).portico.test;

export interface EchoServer {
  readonly port: number;
  /** Metadata of every call received, in order. */
  readonly seen: Array<{ method: string; metadata: Record<string, unknown> }>;
  /** Calls the client (or Portico) cancelled. */
  cancelled: number;
  stop(): Promise<void>;
}

/** A slow backend on purpose: a call's `delayMs` is the pace the test asks of the pod (deadlines, streaming). */
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function startEchoServer(creds: grpc.ServerCredentials = grpc.ServerCredentials.createInsecure(), tag = "echo"): Promise<EchoServer> {
  const server = new grpc.Server();
  const seen: EchoServer["seen"] = [];
  const state = { cancelled: 0 };
  const note = (method: string, call: { metadata: grpc.Metadata }) => seen.push({ method, metadata: call.metadata.getMap() });
  server.addService(echoPackage.Echo.service, {
    Unary: async (call: Any, cb: Any) => {
      note("Unary", call);
      const m: Msg = call.request;
      if (m.delayMs) await sleep(m.delayMs);
      if (m.action === "fail") return cb({ code: grpc.status.INVALID_ARGUMENT, details: `refused ${m.text}` });
      const trailer = new grpc.Metadata();
      trailer.set("x-served-by", tag);
      cb(null, { text: `${tag}:${m.text}`, n: m.n }, trailer);
    },
    ServerStream: async (call: Any) => {
      note("ServerStream", call);
      call.on("cancelled", () => state.cancelled++);
      const m: Msg = call.request;
      for (let i = 0; i < (m.n ?? 0); i++) {
        if (call.cancelled) return;
        call.write({ text: `${m.text}-${i}`, n: i });
        if (m.delayMs) await sleep(m.delayMs);
      }
      if (m.action === "hang") return; // never ends: the suite cuts or cancels it
      call.end();
    },
    ClientStream: (call: Any, cb: Any) => {
      note("ClientStream", call);
      let n = 0;
      const texts: string[] = [];
      call.on("data", (m: Msg) => {
        n++;
        texts.push(m.text ?? "");
      });
      call.on("end", () => cb(null, { text: texts.join(","), n }));
    },
    Bidi: (call: Any) => {
      note("Bidi", call);
      call.on("cancelled", () => state.cancelled++);
      call.on("data", (m: Msg) => call.write({ text: `bidi:${m.text}`, n: m.n }));
      call.on("end", () => call.end());
    },
  });
  return new Promise((resolve, reject) => {
    server.bindAsync("127.0.0.1:0", creds, (err, port) => {
      if (err) return reject(err);
      resolve({
        port, seen,
        get cancelled() { return state.cancelled; },
        set cancelled(v: number) { state.cancelled = v; },
        stop: () => new Promise<void>((r) => server.tryShutdown(() => r())).then(() => server.forceShutdown()),
      });
    });
  });
}

/** A client of the Echo service through Portico's HTTPS port, routed by `authority`. */
export function echoClient(port: number, authority: string): Any {
  // Portico's certificates are minted by the suite: not verified, the name still sent as SNI.
  const creds = grpc.credentials.createSsl(null, null, null, { rejectUnauthorized: false, checkServerIdentity: () => undefined } as grpc.VerifyOptions);
  return new echoPackage.Echo(`127.0.0.1:${port}`, creds, { "grpc.ssl_target_name_override": authority, "grpc.default_authority": authority });
}

/** A unary call as a promise of { err, res, trailers }. */
export function unary(client: Any, msg: Msg, o: { deadlineMs?: number; metadata?: Record<string, string> } = {}): Promise<{ err: grpc.ServiceError | null; res: Msg | null; trailers: grpc.Metadata | null }> {
  const md = new grpc.Metadata();
  for (const [k, v] of Object.entries(o.metadata ?? {})) md.set(k, v);
  const options = o.deadlineMs === undefined ? {} : { deadline: Date.now() + o.deadlineMs };
  return new Promise((resolve) => {
    let trailers: grpc.Metadata | null = null;
    const call = client.Unary(msg, md, options, (err: grpc.ServiceError | null, res: Msg | null) => {
      // 'status' (with the trailers) comes before the callback in grpc-js.
      setImmediate(() => resolve({ err, res, trailers }));
    });
    call.on("status", (s: grpc.StatusObject) => (trailers = s.metadata));
  });
}

/** A streaming call's messages and its final status (a failed call resolves too, with its status). */
export function collect(call: Any): Promise<{ msgs: Msg[]; status: grpc.StatusObject }> {
  const msgs: Msg[] = [];
  call.on("data", (m: Msg) => msgs.push(m));
  call.on("error", () => {});
  return new Promise((resolve) => call.on("status", (status: grpc.StatusObject) => resolve({ msgs, status })));
}

/**
 * A bidirectional call that writes one message per text and waits for its reply before the
 * next, so the two directions interleave on one stream; the replies' texts and the final code.
 */
export async function bidiExchange(client: Any, texts: readonly string[]): Promise<{ replies: string[]; code: grpc.status }> {
  const bidi = client.Bidi();
  const done = collect(bidi);
  const replies: string[] = [];
  for (const t of texts) {
    const reply = new Promise<Msg>((r) => bidi.once("data", r));
    bidi.write({ text: t });
    replies.push((await reply).text ?? "");
  }
  bidi.end();
  return { replies, code: (await done).status.code };
}

/** A client-streaming call that sends one message per text, as a promise of the answer. */
export function clientStream(client: Any, texts: readonly string[]): Promise<Msg> {
  return new Promise((resolve, reject) => {
    const call = client.ClientStream((err: Error | null, res: Msg) => (err ? reject(err) : resolve(res)));
    for (const t of texts) call.write({ text: t });
    call.end();
  });
}

if (import.meta.main) {
  const s = await startEchoServer(undefined, process.argv[2] ?? "child");
  process.stdout.write(`${s.port}\n`);
}
