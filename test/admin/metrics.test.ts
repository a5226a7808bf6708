import { describe, expect, test } from "bun:test";
import { Registry, OVERFLOW_METRIC } from "../../src/admin/registry.ts";
import { formatExposition, parseSnapshot, sumSnapshots } from "../../src/admin/exposition.ts";
import { parseExposition, sampleValue } from "./expo-parser.ts";

describe("registry exposition", () => {
  test("counter, gauge and histogram render exactly", () => {
    const r = new Registry();
    const c = r.counter({ name: "t_requests_total", help: "Requests.", labelNames: ["code"] });
    const g = r.gauge({ name: "t_temp", help: "Temp." });
    const h = r.histogram({ name: "t_latency_seconds", help: "Latency.", buckets: [0.1, 1] });
    c.inc(["200"]);
    c.inc(["200"], 2);
    c.inc(["500"]);
    c.inc(["500"], -5); // ignored: counters never go down
    g.set([], 3.5);
    h.observe([], 0.05);
    h.observe([], 0.1); // le is inclusive
    h.observe([], 0.5);
    h.observe([], 7);
    const text = r.expose();
    expect(text).toContain(
      [
        "# HELP t_latency_seconds Latency.",
        "# TYPE t_latency_seconds histogram",
        't_latency_seconds_bucket{le="0.1"} 2',
        't_latency_seconds_bucket{le="1"} 3',
        't_latency_seconds_bucket{le="+Inf"} 4',
        "t_latency_seconds_sum 7.65",
        "t_latency_seconds_count 4",
        "# HELP t_requests_total Requests.",
        "# TYPE t_requests_total counter",
        't_requests_total{code="200"} 3',
        't_requests_total{code="500"} 1',
        "# HELP t_temp Temp.",
        "# TYPE t_temp gauge",
        "t_temp 3.5",
        "",
      ].join("\n"),
    );
    const fams = parseExposition(text);
    expect(sampleValue(fams, "t_requests_total", { code: "200" })).toBe(3);
  });

  test("label values and help are escaped per text format 0.0.4", () => {
    const r = new Registry();
    const c = r.counter({ name: "t_total", help: 'back\\slash\nnewline "quote"', labelNames: ["v"] });
    const nasty = 'a"b\\c\nd} x="y';
    c.inc([nasty]);
    const text = r.expose();
    expect(text).toContain('# HELP t_total back\\\\slash\\nnewline "quote"\n');
    expect(text).toContain('t_total{v="a\\"b\\\\c\\nd} x=\\"y"} 1\n');
    const fams = parseExposition(text);
    expect(fams.get("t_total")?.help).toBe('back\\slash\nnewline "quote"');
    expect(sampleValue(fams, "t_total", { v: nasty })).toBe(1);
  });

  test("unlabelled metrics start at zero; names and labels are validated", () => {
    const r = new Registry();
    r.counter({ name: "t_zero_total", help: "z" });
    expect(r.expose()).toContain("t_zero_total 0\n");
    expect(() => r.counter({ name: "bad-name", help: "" })).toThrow();
    expect(() => r.counter({ name: "t_x", help: "", labelNames: ["__x"] })).toThrow();
    expect(() => r.histogram({ name: "t_h", help: "", labelNames: ["le"], buckets: [1] })).toThrow();
    expect(() => r.histogram({ name: "t_h2", help: "", buckets: [2, 1] })).toThrow();
    expect(() => r.counter({ name: "t_zero_total", help: "dup" })).toThrow();
    r.histogram({ name: "t_hh", help: "", buckets: [1] });
    expect(() => r.counter({ name: "t_hh_count", help: "clash" })).toThrow();
    const c = r.counter({ name: "t_two_total", help: "", labelNames: ["a", "b"] });
    expect(() => c.inc(["only-one"])).toThrow();
  });

  test("label cardinality is capped and the overflow is counted", () => {
    const r = new Registry();
    const c = r.counter({ name: "t_capped_total", help: "", labelNames: ["k"], maxSeries: 3 });
    for (let i = 0; i < 10; i++) c.inc([`v${i}`]);
    c.inc(["v0"]); // an existing series still counts
    const fams = parseExposition(r.expose());
    expect(fams.get("t_capped_total")?.samples.length).toBe(3);
    expect(sampleValue(fams, "t_capped_total", { k: "v0" })).toBe(2);
    expect(sampleValue(fams, OVERFLOW_METRIC, { metric: "t_capped_total" })).toBe(7);
  });

  test("label sets that differ only around a NUL stay distinct series", () => {
    const r = new Registry();
    const c = r.counter({ name: "t_nul_total", help: "", labelNames: ["a", "b"] });
    c.inc(["x\u0000y", "z"]);
    c.inc(["x", "y\u0000z"]);
    c.inc(["x", "y"]);
    expect(r.toJSON().families.find((f) => f.name === "t_nul_total")?.series.length).toBe(3);
    expect(c.get(["x", "y\u0000z"])).toBe(1);
  });

  test("the default bound is 10,000 label sets", () => {
    const r = new Registry();
    const c = r.counter({ name: "t_big_total", help: "", labelNames: ["k"] });
    for (let i = 0; i < 10_050; i++) c.inc([String(i)]);
    expect(r.toJSON().families.find((f) => f.name === "t_big_total")?.series.length).toBe(10_000);
    expect(r.overflow.get(["t_big_total"])).toBe(50);
  });

  test("gauge reset/remove and collectors", () => {
    const r = new Registry();
    const g = r.gauge({ name: "t_g", help: "", labelNames: ["k"] });
    let live = 0;
    r.onCollect(() => g.set(["live"], live));
    r.onCollect(() => {
      throw new Error("broken collector");
    });
    g.set(["a"], 1);
    g.set(["b"], 2);
    g.remove(["a"]);
    live = 42;
    let fams = parseExposition(r.expose());
    expect(sampleValue(fams, "t_g", { k: "a" })).toBeUndefined();
    expect(sampleValue(fams, "t_g", { k: "live" })).toBe(42);
    expect(sampleValue(fams, "portico_metrics_collect_errors_total")).toBe(1);
    g.reset();
    r.onCollect(() => {}); // harmless
    fams = parseExposition(r.expose());
    expect(sampleValue(fams, "t_g", { k: "b" })).toBeUndefined();
  });
});

describe("snapshots from several workers", () => {
  function worker(reqs: number, conns: number, gen: number, obs: number[]) {
    const r = new Registry();
    r.counter({ name: "w_requests_total", help: "", labelNames: ["m"] }).inc(["GET"], reqs);
    r.gauge({ name: "w_conns", help: "" }).set([], conns);
    r.gauge({ name: "w_generation", help: "", merge: "max" }).set([], gen);
    const h = r.histogram({ name: "w_seconds", help: "", buckets: [1, 2] });
    for (const o of obs) h.observe([], o);
    // Through JSON, as over IPC.
    return JSON.parse(JSON.stringify(r.toJSON())) as unknown;
  }

  test("counters and histograms add up, gauges follow their merge mode", () => {
    const snaps = [worker(3, 2, 7, [0.5, 3]), worker(4, 5, 9, [1.5])].map((s) => parseSnapshot(s));
    expect(snaps.every((s) => s !== null)).toBe(true);
    const text = formatExposition(sumSnapshots(snaps.filter((s) => s !== null)));
    const fams = parseExposition(text);
    expect(sampleValue(fams, "w_requests_total", { m: "GET" })).toBe(7);
    expect(sampleValue(fams, "w_conns")).toBe(7);
    expect(sampleValue(fams, "w_generation")).toBe(9);
    expect(sampleValue(fams, "w_seconds_bucket", { le: "1" })).toBe(1);
    expect(sampleValue(fams, "w_seconds_bucket", { le: "2" })).toBe(2);
    expect(sampleValue(fams, "w_seconds_bucket", { le: "+Inf" })).toBe(3);
    expect(sampleValue(fams, "w_seconds_sum")).toBe(5);
    expect(sampleValue(fams, "w_seconds_count")).toBe(3);
  });

  test("malformed snapshots are refused", () => {
    expect(parseSnapshot(null)).toBeNull();
    expect(parseSnapshot({ families: [{ name: "x", help: "", type: "counter", labelNames: ["a"], series: [{ labels: [], value: 1 }] }] })).toBeNull();
    expect(
      parseSnapshot({ families: [{ name: "h", help: "", type: "histogram", labelNames: [], buckets: [1], series: [{ labels: [], counts: [1], sum: 1, count: 1 }] }] }),
    ).toBeNull();
    expect(parseSnapshot({ families: [{ name: "bad name", help: "", type: "counter", labelNames: [], series: [] }] })).toBeNull();
  });
});

describe("the strict test parser itself", () => {
  const ok = "# HELP a_total x\n# TYPE a_total counter\na_total 1\n";
  test("accepts a well-formed exposition", () => {
    expect(parseExposition(ok).get("a_total")?.samples[0]?.value).toBe(1);
  });
  test.each([
    ["no final newline", ok.trimEnd()],
    ["HELP after TYPE", "# TYPE a_total counter\n# HELP a_total x\na_total 1\n"],
    ["sample before TYPE", "a_total 1\n"],
    ["duplicate series", `${ok}a_total 2\n`],
    ["split family", "# TYPE a gauge\na 1\n# TYPE b gauge\nb 1\na{x=\"1\"} 2\n"],
    ["bad escape", '# TYPE a gauge\na{x="\\t"} 1\n'],
    ["trailing comma", '# TYPE a gauge\na{x="1",} 1\n'],
    ["bad value", "# TYPE a gauge\na one\n"],
    ["+Inf != count", '# TYPE h histogram\nh_bucket{le="+Inf"} 2\nh_sum 1\nh_count 3\n'],
    ["decreasing buckets", '# TYPE h histogram\nh_bucket{le="1"} 3\nh_bucket{le="+Inf"} 2\nh_sum 1\nh_count 2\n'],
    ["missing +Inf", '# TYPE h histogram\nh_bucket{le="1"} 3\nh_sum 1\nh_count 3\n'],
  ])("rejects %s", (_why, text) => {
    expect(() => parseExposition(text)).toThrow();
  });
});
