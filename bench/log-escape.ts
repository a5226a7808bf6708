// Micro-benchmark behind docs/design.md "The access log" (the cost of escaping a value): one
// --access-log-template variable escaped in each mode (default, json, none), for values of
// 100 B, 8 KiB and 60 KiB of each kind below, through the module's public compileLogTemplate
// ("$uri", whose value is the record's path as it is), so another tree's src/log/template.ts
// can be measured the same way (--module). Then a worst-case line: ingress-nginx's default
// format (log-format-upstream) with a head of `--head` bytes of control bytes spread over the
// variables a client writes ($request, $http_referer, $http_user_agent).
//   nice -n 10 bun bench/log-escape.ts [--module /tmp/portico-main/src/log/template.ts]
// CPU only, no sockets; under a minute. Each figure is the median of 5 rounds of a bounded
// number of calls (at least 20 calls or 100 ms a round): the machine is shared, read within a run.
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import type { AccessRecord, RequestView } from "../src/log/access.ts";
import { INGRESS_NGINX_LOG_FORMAT } from "../src/policy/log-format.ts";

const { values: flags } = parseArgs({
  options: {
    module: { type: "string" },
    head: { type: "string" },
    help: { type: "boolean", default: false },
  },
});
if (flags.help) {
  console.log(`bun bench/log-escape.ts [--module PATH/src/log/template.ts] [--head BYTES (default 32768)]`);
  process.exit(0);
}
const modulePath = resolve(flags.module ?? new URL("../src/log/template.ts", import.meta.url).pathname);
const { compileLogTemplate } = (await import(modulePath)) as typeof import("../src/log/template.ts");
const HEAD = Number(flags.head ?? 32 * 1024);
if (!Number.isInteger(HEAD) || HEAD < 1024 || HEAD > 1 << 20) throw new Error("--head: 1024..1048576");

/** A string of `n` characters, one per byte (as Bun gives a header value), repeating `unit`. */
function fill(unit: string, n: number): string {
  return unit.repeat(Math.ceil(n / unit.length)).slice(0, n);
}

// What each kind is: printable ASCII with nothing to escape; the same with a control byte, a
// `"` and a `\` in every 16 bytes; every byte a control byte (the most output per byte);
// bytes that are not UTF-8 (a lone 0xFF in every 8); valid multi-byte UTF-8 (é, €, 😀 as
// their bytes, one character per byte, as a header carries them); the same text as JavaScript
// characters above 0xFF (a value decoded from a URL).
const UTF8_TEXT = "abé€😀cd ";
const KINDS: Record<string, (n: number) => string> = {
  ascii: (n) => fill("Mozilla/5.0 (X11; Linux x86_64) ", n),
  control: (n) => fill('Mozilla/5.0 \x01X"\\11; Linux', n),
  "all-control": (n) => fill("\x01", n),
  "invalid-utf8": (n) => fill("abc\xffdefg", n),
  "utf8-bytes": (n) => fill(Buffer.from(UTF8_TEXT).toString("latin1"), n),
  "utf16-chars": (n) => fill(UTF8_TEXT, n).replace(/[\ud800-\udbff]$/, "x"),
};
const SIZES: [string, number][] = [
  ["100 B", 100],
  ["8 KiB", 8 * 1024],
  ["60 KiB", 60 * 1024],
];
const MODES = ["default", "json", "none"] as const;

const viewOf = (headers: Record<string, string>, target: string, headBytes: number): RequestView => ({
  headBytes,
  req: new Request(`http://a.test${target}`, { headers }), clientIp: "10.0.0.1", query: "", scheme: "http", localPort: 8080,
  connectionScheme: "http", remotePort: 50000, proxySource: null, locationPath: "/", tls: () => null, sentHeadBytes: -1, serverAddr: null,
});

const recordWith = (path: string, view: RequestView): AccessRecord => ({
  time: Date.UTC(2026, 10, 28, 8, 0, 0), requestId: "rid", client: "127.0.0.1", method: "GET", host: "a.test", path, status: 200,
  bytesIn: 0, bytesOut: 5, durationMs: 1, upstream: null, upstreamStatus: null, upstreamMs: null, ingress: null, service: null,
  websocket: false, error: null, scheme: "http", protocol: "h1", grpcStatus: null, logged: true, view,
});

/**
 * Median µs per call of `f` over 5 rounds, each at least 20 calls and 100 ms (bounded by 20 000
 * calls). Reading the line's last character makes JavaScriptCore flatten a string built by
 * concatenation, work the log's write would do otherwise.
 */
function usPer(f: () => string): number {
  let sink = 0;
  for (let i = 0; i < 5; i++) sink += f().length; // warm-up
  const rounds: number[] = [];
  for (let r = 0; r < 5; r++) {
    const t0 = Bun.nanoseconds();
    let calls = 0;
    while (calls < 20_000 && (calls < 20 || Bun.nanoseconds() - t0 < 100e6)) {
      {
      const s = f();
      sink += s.charCodeAt(s.length - 1);
    }
      calls++;
    }
    rounds.push((Bun.nanoseconds() - t0) / calls / 1000);
  }
  if (sink < 0) throw new Error("unreachable"); // keeps the calls from being optimised away
  rounds.sort((a, b) => a - b);
  return rounds[2]!;
}

const fmt = (us: number): string => (us >= 100 ? us.toFixed(0) : us >= 10 ? us.toFixed(1) : us.toFixed(2));

console.log(`module: ${modulePath}`);
console.log(`µs per call (one variable, its value escaped); median of 5 rounds\n`);
console.log(`| kind | size | ${MODES.join(" | ")} |`);
console.log(`|---|---|${MODES.map(() => "---:").join("|")}|`);
for (const [kind, make] of Object.entries(KINDS)) {
  for (const [label, n] of SIZES) {
    const record = recordWith(make(n), viewOf({}, "/", 2));
    const cells = MODES.map((mode) => {
      const line = compileLogTemplate("$uri", mode);
      return fmt(usPer(() => line(record)));
    });
    console.log(`| ${kind} | ${label} | ${cells.join(" | ")} |`);
  }
}

// The worst line a client can cause with ingress-nginx's default format: its head (at most
// large-client-header-buffers, 4 8k by default) spent on the three variables it writes: the
// referer and user agent every byte a control byte (the most work and output per byte; a
// header value cannot hold NUL, CR or LF, 0x01 stands for any control byte), the target
// printable ASCII (a request line carries no control byte).
const third = Math.floor((HEAD - 64) / 3);
const target = `/${fill("abcdefgh", third)}`;
const headers = { referer: fill("\x01", third), "user-agent": fill("\x01", third) };
const view = viewOf(headers, target, HEAD);
console.log(`\nworst line: ingress-nginx's default format, a ${HEAD}-byte head of control bytes over $request, $http_referer, $http_user_agent`);
console.log(`| mode | µs per line | line bytes |`);
console.log(`|---|---:|---:|`);
for (const mode of MODES) {
  const line = compileLogTemplate(INGRESS_NGINX_LOG_FORMAT, mode);
  const record = recordWith(target, view);
  console.log(`| ${mode} | ${fmt(usPer(() => line(record)))} | ${line(record).length} |`);
}
