// A strict parser of the Prometheus text exposition format 0.0.4, written for the tests:
// it throws on anything the format does not allow or that Portico must never produce
// (HELP after TYPE, split families, duplicate series, broken histograms, bad escapes).

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface Family {
  readonly name: string;
  help: string | null;
  type: "counter" | "gauge" | "histogram" | "summary" | "untyped" | null;
  readonly samples: Sample[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*/;
// Go's ParseFloat forms used by exporters: decimal/exponent numbers, NaN, +Inf, -Inf.
const VALUE = /^(?:[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|NaN|[+-]Inf)$/;

function fail(line: number, why: string): never {
  throw new Error(`exposition line ${line}: ${why}`);
}

function parseValue(s: string, line: number): number {
  if (!VALUE.test(s)) fail(line, `bad value ${JSON.stringify(s)}`);
  if (s === "NaN") return Number.NaN;
  if (s === "+Inf") return Infinity;
  if (s === "-Inf") return -Infinity;
  return Number(s);
}

function unescape(s: string, allowed: string, line: number): string {
  let out = "";
  for (let i = 0; i < s.length; i++) {
    const c = s[i] as string;
    if (c !== "\\") {
      out += c;
      continue;
    }
    const n = s[++i];
    if (n === undefined || !allowed.includes(n)) fail(line, `bad escape \\${n ?? ""}`);
    out += n === "n" ? "\n" : n;
  }
  return out;
}

function parseLabels(src: string, line: number): { labels: Record<string, string>; rest: string } {
  const labels: Record<string, string> = {};
  let s = src.slice(1); // past "{"
  if (s.startsWith("}")) return { labels, rest: s.slice(1) };
  for (;;) {
    const m = LABEL_NAME.exec(s);
    if (!m) fail(line, "bad label name");
    const name = m[0];
    if (name.startsWith("__")) fail(line, `reserved label name ${name}`);
    if (Object.hasOwn(labels, name)) fail(line, `duplicate label ${name}`);
    s = s.slice(name.length);
    if (!s.startsWith('="')) fail(line, `expected =" after ${name}`);
    s = s.slice(2);
    let raw = "";
    let i = 0;
    for (; i < s.length; i++) {
      const c = s[i] as string;
      if (c === "\\") {
        raw += c + (s[i + 1] ?? "");
        i++;
      } else if (c === '"') break;
      else if (c === "\n") fail(line, "raw line feed in label value");
      else raw += c;
    }
    if (i >= s.length) fail(line, "unterminated label value");
    labels[name] = unescape(raw, '\\"n', line);
    s = s.slice(i + 1);
    if (s.startsWith(",")) {
      s = s.slice(1);
      if (s.startsWith("}")) fail(line, "trailing comma in labels");
      continue;
    }
    if (s.startsWith("}")) return { labels, rest: s.slice(1) };
    fail(line, "expected , or } in labels");
  }
}

/** The family a sample belongs to: histogram suffixes map back to their base name. */
function familyOf(name: string, families: Map<string, Family>): string {
  for (const suffix of ["_bucket", "_sum", "_count"]) {
    if (name.endsWith(suffix)) {
      const base = name.slice(0, -suffix.length);
      const f = families.get(base);
      if (f && (f.type === "histogram" || f.type === "summary")) return base;
    }
  }
  return name;
}

export function parseExposition(text: string): Map<string, Family> {
  if (text.length > 0 && !text.endsWith("\n")) throw new Error("exposition must end with a line feed");
  const families = new Map<string, Family>();
  const seenSeries = new Set<string>();
  let current: Family | null = null;
  const lines = text.split("\n");
  lines.pop();
  const enter = (name: string, n: number): Family => {
    let f = families.get(name);
    if (f === undefined) {
      f = { name, help: null, type: null, samples: [] };
      families.set(name, f);
    } else if (current !== f) fail(n, `family ${name} is not contiguous`);
    current = f;
    return f;
  };
  lines.forEach((l, idx) => {
    const n = idx + 1;
    if (l === "") fail(n, "empty line");
    if (l.startsWith("#")) {
      const m = /^# (HELP|TYPE) ([^ ]+) (.*)$/.exec(l) ?? /^# (HELP) ([^ ]+)$/.exec(l);
      if (!m) fail(n, "comment lines other than HELP/TYPE are not produced by Portico");
      const [, kw, name = "", arg = ""] = m;
      if (!METRIC_NAME.test(name) || METRIC_NAME.exec(name)?.[0] !== name) fail(n, `bad metric name ${name}`);
      const f = enter(name, n);
      if (f.samples.length > 0) fail(n, `${kw} after samples of ${name}`);
      if (kw === "HELP") {
        if (f.help !== null) fail(n, `second HELP for ${name}`);
        if (f.type !== null) fail(n, `HELP after TYPE for ${name}`);
        f.help = unescape(arg, "\\n", n);
      } else {
        if (f.type !== null) fail(n, `second TYPE for ${name}`);
        if (!["counter", "gauge", "histogram", "summary", "untyped"].includes(arg)) fail(n, `bad type ${arg}`);
        f.type = arg as Family["type"];
      }
      return;
    }
    const nm = METRIC_NAME.exec(l);
    if (!nm) fail(n, "bad sample name");
    const name = nm[0];
    let rest = l.slice(name.length);
    let labels: Record<string, string> = {};
    if (rest.startsWith("{")) ({ labels, rest } = parseLabels(rest, n));
    if (!rest.startsWith(" ")) fail(n, "expected a space before the value");
    const parts = rest.slice(1).split(" ");
    if (parts.length > 2 || (parts.length === 2 && !/^-?\d+$/.test(parts[1] as string))) fail(n, "bad value/timestamp");
    const value = parseValue(parts[0] as string, n);
    const fam = enter(familyOf(name, families), n);
    if (fam.type === null) fail(n, `sample of ${fam.name} before its TYPE`);
    if (fam.type === "histogram" && name === fam.name) fail(n, "bare sample in a histogram family");
    if (fam.type === "counter" && !(value >= 0)) fail(n, "negative or NaN counter");
    const key = `${name}${JSON.stringify(Object.entries(labels).sort())}`;
    if (seenSeries.has(key)) fail(n, `duplicate series ${name}`);
    seenSeries.add(key);
    fam.samples.push({ name, labels, value });
  });
  for (const f of families.values()) {
    if (f.type === null) throw new Error(`family ${f.name} has no TYPE`);
    if (f.type === "histogram") checkHistogram(f);
  }
  return families;
}

function checkHistogram(f: Family): void {
  const groups = new Map<string, { buckets: Array<[number, number]>; sum?: number; count?: number }>();
  for (const s of f.samples) {
    const { le, ...rest } = s.labels;
    const key = JSON.stringify(Object.entries(rest).sort());
    const g = groups.get(key) ?? { buckets: [] };
    groups.set(key, g);
    if (s.name === `${f.name}_bucket`) {
      if (le === undefined) throw new Error(`${f.name}: bucket without le`);
      g.buckets.push([parseValue(le, 0), s.value]);
    } else if (le !== undefined) throw new Error(`${f.name}: le on ${s.name}`);
    else if (s.name === `${f.name}_sum`) g.sum = s.value;
    else g.count = s.value;
  }
  for (const [key, g] of groups) {
    const where = `${f.name}${key}`;
    if (g.sum === undefined || g.count === undefined) throw new Error(`${where}: missing _sum or _count`);
    const last = g.buckets.at(-1);
    if (last === undefined || last[0] !== Infinity) throw new Error(`${where}: last bucket is not +Inf`);
    if (last[1] !== g.count) throw new Error(`${where}: +Inf bucket ${last[1]} != _count ${g.count}`);
    for (let i = 1; i < g.buckets.length; i++) {
      const [le0, c0] = g.buckets[i - 1] as [number, number];
      const [le1, c1] = g.buckets[i] as [number, number];
      if (!(le1 > le0)) throw new Error(`${where}: le not increasing`);
      if (c1 < c0) throw new Error(`${where}: bucket counts decrease`);
    }
  }
}

/** The value of one series, or undefined; labels must match exactly. */
export function sampleValue(fams: Map<string, Family>, name: string, labels: Record<string, string> = {}): number | undefined {
  const want = JSON.stringify(Object.entries(labels).sort());
  for (const f of fams.values()) {
    for (const s of f.samples) {
      if (s.name === name && JSON.stringify(Object.entries(s.labels).sort()) === want) return s.value;
    }
  }
  return undefined;
}
