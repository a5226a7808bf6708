import { describe, expect, test } from "bun:test";
import { createLogger, type LogLevel } from "./logger.ts";

const fixed = () => new Date("2026-01-02T03:04:05.678Z");

function capture(level: LogLevel, format: "json" | "text") {
  const lines: string[] = [];
  const log = createLogger({ level, format, write: (l) => lines.push(l), now: fixed });
  return { log, lines };
}

describe("json format", () => {
  test("fixed leading keys, then known keys in order, then the rest", () => {
    const { log, lines } = capture("info", "json");
    log.info("compiled", { extra: 1, name: "web", kind: "Ingress", namespace: "default" });
    expect(lines).toHaveLength(1);
    const line = lines[0]!;
    expect(line).toBe(
      '{"time":"2026-01-02T03:04:05.678Z","level":"info","msg":"compiled","kind":"Ingress","namespace":"default","name":"web","extra":1}',
    );
    expect(Object.keys(JSON.parse(line))).toEqual(["time", "level", "msg", "kind", "namespace", "name", "extra"]);
  });

  test("an Error in err serialises to its message", () => {
    const { log, lines } = capture("info", "json");
    log.error("watch failed", { err: new Error("connection refused") });
    expect(JSON.parse(lines[0]!).err).toBe("connection refused");
  });

  test("a newline in a value or message cannot break the line", () => {
    const { log, lines } = capture("info", "json");
    log.warn("bad\nmsg", { host: "a\nb\u2028c", path: "\r\u0000" });
    expect(lines).toHaveLength(1);
    expect(lines[0]!).not.toMatch(/[\n\r\u2028\u0000]/);
    const rec = JSON.parse(lines[0]!);
    expect(rec.msg).toBe("bad\nmsg");
    expect(rec.host).toBe("a\nb\u2028c");
  });

  test("reserved keys in fields do not override time/level/msg", () => {
    const { log, lines } = capture("info", "json");
    log.info("real", { msg: "fake", level: "error", time: "x" });
    const rec = JSON.parse(lines[0]!);
    expect(rec).toEqual({ time: "2026-01-02T03:04:05.678Z", level: "info", msg: "real" });
  });

  test("circular values do not throw", () => {
    const { log, lines } = capture("info", "json");
    const o: Record<string, unknown> = {};
    o.self = o;
    log.info("x", { o });
    expect(lines).toHaveLength(1);
    expect(() => JSON.parse(lines[0]!)).not.toThrow();
  });
});

describe("levels and children", () => {
  test("records below the level are dropped", () => {
    const { log, lines } = capture("warn", "json");
    log.debug("d");
    log.info("i");
    log.warn("w");
    log.error("e");
    expect(lines.map((l) => JSON.parse(l).level)).toEqual(["warn", "error"]);
  });

  test("child adds fields; record fields win", () => {
    const { log, lines } = capture("debug", "json");
    const c = log.child({ kind: "Service", component: "store" }).child({ namespace: "ns" });
    c.debug("applied", { kind: "Secret" });
    expect(JSON.parse(lines[0]!)).toEqual({
      time: "2026-01-02T03:04:05.678Z",
      level: "debug",
      msg: "applied",
      kind: "Secret",
      namespace: "ns",
      component: "store",
    });
  });
});

describe("text format", () => {
  test("TIME LEVEL msg k=v with quoting when needed", () => {
    const { log, lines } = capture("info", "text");
    log.info("route added", { host: "a.test", path: "/x y", n: 3, empty: "", err: new Error('said "no"') });
    expect(lines[0]).toBe('2026-01-02T03:04:05.678Z INFO route added host=a.test path="/x y" err="said \\"no\\"" n=3 empty=""');
  });

  test("control characters are escaped in message and values", () => {
    const { log, lines } = capture("info", "text");
    log.info("a\nb", { v: "x\ny\tz\u0007" });
    expect(lines[0]).toBe('2026-01-02T03:04:05.678Z INFO a\\nb v="x\\ny\\tz\\u0007"');
  });

  test("objects read as dotted keys, lists of plain values as one comma-separated value", () => {
    const { log, lines } = capture("info", "text");
    log.info("starting", { version: "1.0.0", config: { httpPort: 8080, bind: "0.0.0.0", manifests: null, tls: { min: "1.2" }, proxies: ["10.0.0.0/8", "fd00::/8"], none: [], empty: {} } });
    expect(lines[0]).toBe(
      "2026-01-02T03:04:05.678Z INFO starting version=1.0.0 config.httpPort=8080 config.bind=0.0.0.0 config.manifests=null config.tls.min=1.2 config.proxies=10.0.0.0/8,fd00::/8 config.none=[] config.empty={}",
    );
  });

  test("a list of items with spaces is separated by a comma and a space, and quoted", () => {
    const { log, lines } = capture("info", "text");
    log.info("m", { added: ["Ingress a/b", "Service a/c"] });
    expect(lines[0]).toBe('2026-01-02T03:04:05.678Z INFO m added="Ingress a/b, Service a/c"');
  });

  test("lists of objects, and values nested too deep, stay JSON (quoted)", () => {
    const { log, lines } = capture("info", "text");
    log.info("m", { l: [{ a: 1 }], d: { a: { b: { c: { d: { e: 1 } } } } } });
    expect(lines[0]).toBe('2026-01-02T03:04:05.678Z INFO m l="[{\\"a\\":1}]" d.a.b.c.d="{\\"e\\":1}"');
  });
});
