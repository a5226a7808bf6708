// A measurement prototype, not a product: an HTTP/1.1 upstream client on Bun.connect whose
// response parser is llhttp (Node's parser) compiled to WebAssembly, as the undici package
// ships it (node_modules/undici/lib/llhttp). Only the glue is ours: llhttp reads every byte
// of the answer and calls back with spans (status text, field names and values, body) and
// the events (headers complete, message complete). It exists to price an upstream client
// that is not Bun's fetch (bench/upstream-client.ts, bench/results/upstream-client.md); it
// does none of Portico's upstream duties (bounds, deadlines, aborts, request bodies, 1xx).
import { createRequire } from "node:module";
import { join } from "node:path";

const require = createRequire(join(import.meta.dir, "..", "..", "package.json"));
const wasm = require("undici/lib/llhttp/llhttp-wasm.js") as Uint8Array;
const C = require("undici/lib/llhttp/constants.js") as { TYPE: { RESPONSE: number }; ERROR: { OK: number } };

interface LlhttpExports {
  memory: WebAssembly.Memory;
  malloc(n: number): number;
  free(p: number): void;
  llhttp_alloc(type: number): number;
  llhttp_execute(p: number, at: number, len: number): number;
  llhttp_get_error_reason(p: number): number;
}

/** What the callbacks fill for the message being parsed. */
export interface Sink {
  status: number;
  /** Field names and values, alternating, as llhttp delivers them (one span each here: whole chunks). */
  fields: string[];
  body: Uint8Array[];
  done: boolean;
}

let current: Sink | null = null;
let mem: Uint8Array = new Uint8Array(0);
const latin1 = new TextDecoder("latin1");

function view(e: LlhttpExports): Uint8Array {
  if (mem.buffer !== e.memory.buffer) mem = new Uint8Array(e.memory.buffer);
  return mem;
}

const mod = new WebAssembly.Module(wasm);
let ex: LlhttpExports;
// A field name or value may arrive in several spans when it straddles two reads: append to
// the last entry while the same kind of span continues.
let lastKind = 0; // 1 name, 2 value
const inst = new WebAssembly.Instance(mod, {
  env: {
    wasm_on_url: () => 0,
    wasm_on_message_begin: () => {
      lastKind = 0;
      return 0;
    },
    wasm_on_status: () => 0,
    wasm_on_header_field: (_p: number, at: number, len: number) => {
      const s = latin1.decode(view(ex).subarray(at, at + len));
      const f = (current as Sink).fields;
      if (lastKind === 1) f[f.length - 1] += s;
      else f.push(s);
      lastKind = 1;
      return 0;
    },
    wasm_on_header_value: (_p: number, at: number, len: number) => {
      const s = latin1.decode(view(ex).subarray(at, at + len));
      const f = (current as Sink).fields;
      if (lastKind === 2) f[f.length - 1] += s;
      else f.push(s);
      lastKind = 2;
      return 0;
    },
    wasm_on_headers_complete: (_p: number, status: number) => {
      (current as Sink).status = status;
      return 0;
    },
    wasm_on_body: (_p: number, at: number, len: number) => {
      (current as Sink).body.push(view(ex).slice(at, at + len));
      return 0;
    },
    wasm_on_message_complete: () => {
      (current as Sink).done = true;
      return 0;
    },
  },
});
ex = inst.exports as unknown as LlhttpExports;

let bufPtr = 0;
let bufSize = 0;

/** One llhttp response parser (one per connection). */
export class Parser {
  readonly ptr = ex.llhttp_alloc(C.TYPE.RESPONSE);
  /** Feeds bytes; throws on a parse error (llhttp's error code). */
  execute(chunk: Uint8Array, sink: Sink): void {
    if (chunk.length > bufSize) {
      if (bufPtr !== 0) ex.free(bufPtr);
      bufSize = Math.ceil(chunk.length / 4096) * 4096;
      bufPtr = ex.malloc(bufSize);
    }
    view(ex).set(chunk, bufPtr);
    current = sink;
    let ret: number;
    try {
      ret = ex.llhttp_execute(this.ptr, bufPtr, chunk.length);
    } finally {
      current = null;
    }
    if (ret !== C.ERROR.OK) throw new Error(`llhttp error ${ret}`);
  }
}

interface Conn {
  parser: Parser;
  sink: Sink;
  resolve: ((s: Sink) => void) | null;
  reject: ((e: unknown) => void) | null;
}

/**
 * Keep-alive pool to one origin: one socket per request in flight, request bytes written in
 * one write, the answer parsed by llhttp. `get` resolves with the whole small answer.
 */
export class LlhttpPool {
  private idle: import("bun").Socket<Conn>[] = [];
  constructor(private host: string, private port: number) {}

  private open(): Promise<import("bun").Socket<Conn>> {
    return Bun.connect<Conn>({
      hostname: this.host,
      port: this.port,
      data: { parser: new Parser(), sink: newSink(), resolve: null, reject: null },
      socket: {
        data: (s, chunk) => {
          const c = s.data;
          try {
            c.parser.execute(chunk, c.sink);
          } catch (e) {
            c.reject?.(e);
            s.end();
            return;
          }
          if (c.sink.done) {
            const got = c.sink;
            const r = c.resolve;
            c.sink = newSink();
            c.resolve = null;
            c.reject = null;
            this.idle.push(s);
            r?.(got);
          }
        },
        close: (s) => {
          const i = this.idle.indexOf(s);
          if (i >= 0) this.idle.splice(i, 1);
          s.data.reject?.(new Error("closed"));
        },
        error: (s, e) => s.data.reject?.(e),
      },
    });
  }

  async request(head: string): Promise<Sink> {
    const s = this.idle.pop() ?? (await this.open());
    return new Promise<Sink>((resolve, reject) => {
      s.data.resolve = resolve;
      s.data.reject = reject;
      s.write(head);
    });
  }

  close(): void {
    for (const s of this.idle) s.end();
    this.idle = [];
  }
}

export function newSink(): Sink {
  return { status: 0, fields: [], body: [], done: false };
}
