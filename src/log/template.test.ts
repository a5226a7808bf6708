// --access-log-template's escaping and variables, as nginx's ngx_http_log_module writes them
// (escape=default: ngx_http_log_escape, `"` `\` and bytes < 0x20 or >= 0x7f as \xHH; json:
// ngx_escape_json; none: as is), and the format's reading (policy/log-format.ts, nginx's
// ngx_conf_read_token inside nginx.tmpl's single quotes).
import { describe, expect, test } from "bun:test";
import { fullGC, heapStats } from "bun:jsc";
import { parseLogFormat } from "../policy/log-format.ts";
import type { AccessRecord, RequestView } from "./access.ts";
import { compileLogTemplate } from "./template.ts";

const record = (view: RequestView | null): AccessRecord => ({
  time: Date.UTC(2026, 10, 28, 8, 0, 0), requestId: "rid", client: "127.0.0.1", method: "GET", host: "a.test", path: "/p", status: 200,
  bytesIn: 0, bytesOut: 5, durationMs: 1500, upstream: null, upstreamStatus: null, upstreamMs: null, ingress: null, service: null,
  websocket: false, error: null, scheme: "http", protocol: "h1", grpcStatus: null, logged: true, view,
});

const fieldBytes = (headers: Record<string, string>): number => Object.entries(headers).reduce((n, [k, v]) => n + k.length + 2 + v.length + 2, 2);

const view = (headers: Record<string, string>): RequestView => ({
  headBytes: fieldBytes(headers),
  req: new Request("http://a.test/p?q=1", { headers }), clientIp: "10.0.0.1", query: "?q=1", scheme: "http", localPort: 8080,
  connectionScheme: "http", remotePort: 50000, proxySource: null, locationPath: "/", tls: () => null, sentHeadBytes: -1, serverAddr: null,
});

// A header value as Bun gives it: one character per byte (Latin-1); "\xC3\xA9" is é's UTF-8 bytes.
const VALUE = 'a"b\\c\u0001\u00c3\u00a9';

describe("escaping a variable's value", () => {
  test.each([
    ["default", 'v=a\\x22b\\x5Cc\\x01\\xC3\\xA9 none=-'],
    ["json", 'v=a\\"b\\\\c\\u0001é none='],
    ["none", 'v=a"b\\c\\x01é none='],
  ] as const)("%s", (escape, line) => {
    const f = compileLogTemplate("v=$http_x_v none=$http_x_none", escape);
    expect(f(record(view({ "x-v": VALUE })))).toBe(line);
  });

  test("a line break in a value never ends the line, in every mode", () => {
    for (const escape of ["default", "json", "none"] as const) {
      const out = compileLogTemplate("$arg_q", escape)(record({ ...view({}), query: "?q=a%0Ab" }));
      expect(out).toBe("a%0Ab");
      const raw = compileLogTemplate("$request_time $remote_user", escape)(record({ ...view({ authorization: `Basic ${Buffer.from("x\ny:pw").toString("base64")}` }) }));
      expect(raw).not.toContain("\n");
      expect(raw.startsWith("1.500 x")).toBe(true);
    }
  });

  test("the literal text is written as is; unknown and request-less variables are not found", () => {
    expect(compileLogTemplate('[$status] "$no_such_var" ${status}x $remote_addr', "default")(record(null))).toBe('[200] "-" 200x -');
    expect(compileLogTemplate('[$status] "$no_such_var"', "json")(record(null))).toBe('[200] ""');
  });

  test("time and size variables", () => {
    const f = compileLogTemplate("$time_local|$time_iso8601|$msec|$request_time|$body_bytes_sent|$request|$uri|$args|$is_args|$host|$server_port", "default");
    expect(f(record(view({})))).toBe("28/Nov/2026:08:00:01 +0000|2026-11-28T08:00:01+00:00|1795852801.500|1.500|5|GET /p?q=1 HTTP/1.1|/p|q=1|?|a.test|8080");
  });
});

/**
 * How many JavaScript strings one call of `f` allocates: JSC's count of string cells, which
 * counts dead ones until a collection sweeps them, read before and after with no collection
 * between. A canary made in an earlier turn (a WeakRef keeps its target alive only to the end
 * of the turn that made it) dies if one ran; then the count is short and is taken again.
 */
async function stringsAllocatedBy(f: () => string): Promise<number> {
  for (let attempt = 0; attempt < 5; attempt++) {
    fullGC();
    const canary = new WeakRef({});
    await new Promise((resolve) => setImmediate(resolve));
    const before = heapStats().objectTypeCounts.string ?? 0;
    f();
    const after = heapStats().objectTypeCounts.string ?? 0;
    if (canary.deref() !== undefined) return after - before;
  }
  throw new Error("a collection ran during every count");
}

describe("the cost of escaping a long value", () => {
  // A client's header can be as long as its head (large-client-header-buffers), and the line is
  // formatted on the worker's thread: a value is escaped in one pass into a byte buffer, read
  // back as one string, not built a byte at a time (a string per byte: 16,384 and more here).
  const KIB16 = 16 * 1024;
  const values = {
    "control bytes": "\x01".repeat(KIB16),
    "bytes that are not UTF-8": "abc\xffdefg".repeat(KIB16 / 8),
    "UTF-8 bytes": Buffer.from("é€😀 ".repeat(KIB16 / 10)).toString("latin1"),
    "characters above 0xFF": "é€😀\u2028\x01 ".repeat(KIB16 / 8),
  };
  for (const escape of ["default", "json", "none"] as const) {
    test(`${escape}: a 16 KiB value allocates a few strings, not one per byte`, async () => {
      const line = compileLogTemplate("$uri", escape);
      for (const [kind, value] of Object.entries(values)) {
        const r = { ...record(view({})), path: value };
        line(r); // the first call's own allocations (compiling, buffers) are not counted
        const n = await stringsAllocatedBy(() => line(r));
        expect(n, `${escape}, ${kind}: strings allocated`).toBeLessThanOrEqual(8);
      }
    });
  }
});

describe("reading the format as nginx.tmpl's quoted word", () => {
  test("escapes nginx's reader takes, and variables", () => {
    const r = parseLogFormat("\\'a\\' \\\"b\\\" \\\\ \\t \\x $x${y}z");
    expect(r).toEqual({ ok: true, parts: ["'a' \"b\" \\ \t \\x ", { v: "x" }, { v: "y" }, "z"] });
  });

  test.each(["", "a'b", "a\nb", "a\rb", "a\\nb", "a\\rb", "cost $", "${unclosed", "end\\", "nul\0"])("refused: %p", (text) => {
    expect(parseLogFormat(text).ok).toBe(false);
  });
});
