// Structured logging (README.md, "Logs"): one line per record, fixed leading keys, then fields.
// This folder is the only place in src/ that writes to stdout/stderr.

export type LogLevel = "debug" | "info" | "warn" | "error";
export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /** A logger that adds `fields` to every record (record fields win on a clash). */
  child(fields: LogFields): Logger;
}

export interface LoggerOptions {
  level: LogLevel;
  format: "json" | "text";
  /** Receives one complete line without the trailing newline. */
  write?: (line: string) => void;
  /** Injected for tests; defaults to the wall clock. */
  now?: () => Date;
}

const RANK: Readonly<Record<LogLevel, number>> = { debug: 10, info: 20, warn: 30, error: 40 };
// Known keys come first in this order so lines from different areas read the same.
const KNOWN_KEYS = ["kind", "namespace", "name", "host", "path", "generation", "err"] as const;
const RESERVED = new Set(["time", "level", "msg"]);

function defaultWrite(line: string): void {
  process.stdout.write(`${line}\n`);
}

/** Errors serialise to their message (stack traces do not belong in one-line records). */
function normalise(value: unknown): unknown {
  if (value instanceof Error) return value.message;
  if (typeof value === "bigint") return value.toString();
  return value;
}

function orderedEntries(fields: LogFields): [string, unknown][] {
  const out: [string, unknown][] = [];
  for (const k of KNOWN_KEYS) {
    if (k in fields && fields[k] !== undefined) out.push([k, normalise(fields[k])]);
  }
  for (const [k, v] of Object.entries(fields)) {
    if (v === undefined || RESERVED.has(k) || (KNOWN_KEYS as readonly string[]).includes(k)) continue;
    out.push([k, normalise(v)]);
  }
  return out;
}

function safeJson(value: unknown): string {
  try {
    // JSON.stringify escapes control characters (RFC 8259 §7), so a value cannot break the line.
    // U+2028/U+2029 are valid in JSON but some line readers split on them: escape them too.
    return (JSON.stringify(value) ?? "null").replace(/[\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`);
  } catch {
    return JSON.stringify(String(value));
  }
}

// Control characters (C0, DEL, C1) and the Unicode line/paragraph separators.
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;
// Non-global twin for `.test` (a /g regex keeps lastIndex between calls).
const HAS_CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

function escapeControl(s: string): string {
  return s.replace(CONTROL, (c) => {
    switch (c) {
      case "\n":
        return "\\n";
      case "\r":
        return "\\r";
      case "\t":
        return "\\t";
      default:
        return `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;
    }
  });
}

function textValue(value: unknown): string {
  const s = typeof value === "string" ? value : value === null ? "null" : typeof value === "object" ? safeJson(value) : String(value);
  if (s === "" || /[\s"=\\]/.test(s) || HAS_CONTROL.test(s)) {
    return `"${escapeControl(s.replace(/\\/g, "\\\\").replace(/"/g, '\\"'))}"`;
  }
  return s;
}

function formatJson(time: string, level: LogLevel, msg: string, entries: [string, unknown][]): string {
  let line = `{"time":${safeJson(time)},"level":${safeJson(level)},"msg":${safeJson(msg)}`;
  for (const [k, v] of entries) line += `,${safeJson(k)}:${safeJson(v)}`;
  return `${line}}`;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v) && (Object.getPrototypeOf(v) === Object.prototype || Object.getPrototypeOf(v) === null);
const isScalar = (v: unknown) => v === null || (typeof v !== "object" && typeof v !== "function");

/**
 * For people, an object field reads as dotted keys (`config.httpPort=8080`) and a list of
 * plain values as one comma-separated value: an escaped JSON blob in quotes was unreadable
 * (the effective configuration at start-up). Deeper or mixed values stay JSON.
 */
function textEntries(key: string, value: unknown, depth: number, out: [string, unknown][]): void {
  if (isPlainObject(value) && depth < 4) {
    const keys = Object.keys(value);
    if (keys.length === 0) out.push([key, "{}"]);
    for (const k of keys) if (value[k] !== undefined) textEntries(`${key}.${k}`, normalise(value[k]), depth + 1, out);
    return;
  }
  if (Array.isArray(value) && value.every(isScalar)) {
    const items = value.map((x) => (x === null ? "null" : String(x)));
    // Items with spaces (route descriptions) read better apart; tokens (kinds, CIDRs) stay tight.
    out.push([key, items.length === 0 ? "[]" : items.join(items.some((x) => /\s/.test(x)) ? ", " : ",")]);
    return;
  }
  out.push([key, value]);
}

function formatText(time: string, level: LogLevel, msg: string, entries: [string, unknown][]): string {
  let line = `${time} ${level.toUpperCase()} ${escapeControl(msg)}`;
  const flat: [string, unknown][] = [];
  for (const [k, v] of entries) textEntries(k, v, 0, flat);
  for (const [k, v] of flat) line += ` ${escapeControl(k).replace(/[\s=]/g, "_")}=${textValue(v)}`;
  return line;
}

export function createLogger(opts: LoggerOptions): Logger {
  const min = RANK[opts.level];
  const write = opts.write ?? defaultWrite;
  const now = opts.now ?? (() => new Date());
  const format = opts.format === "text" ? formatText : formatJson;

  const make = (base: LogFields): Logger => {
    const emit = (level: LogLevel, msg: string, fields?: LogFields): void => {
      if (RANK[level] < min) return;
      const merged = fields ? { ...base, ...fields } : base;
      write(format(now().toISOString(), level, msg, orderedEntries(merged)));
    };
    return {
      debug: (msg, fields) => emit("debug", msg, fields),
      info: (msg, fields) => emit("info", msg, fields),
      warn: (msg, fields) => emit("warn", msg, fields),
      error: (msg, fields) => emit("error", msg, fields),
      child: (fields) => make({ ...base, ...fields }),
    };
  };
  return make({});
}

/** A logger that drops everything (tests, library defaults). */
export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child() {
    return silentLogger;
  },
};
