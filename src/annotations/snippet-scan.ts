// A read-only reader of ingress-nginx snippet annotations (configuration-snippet and friends)
// for the migration report: it splits the text into nginx directives and recognises the few
// common ones that a Portico annotation replaces. Nothing here executes, evaluates or passes on
// the text: it is tokenised (nginx's configuration syntax: words, quoted strings, `;`, `{ }`,
// `#` comments) and compared with fixed directive names. A snippet is never served.
import { checkHeader } from "./headers.ts";

/** What a recognised directive does, as a Portico annotation can do it. */
export type SnippetAction =
  | { readonly kind: "request-header"; readonly name: string; readonly value: string }
  | { readonly kind: "response-header"; readonly name: string; readonly value: string }
  /** `return <code> <url>` with a literal URL. */
  | { readonly kind: "redirect"; readonly code: number; readonly url: string }
  /** `return 30x https://$host$request_uri`: the HTTPS redirect. */
  | { readonly kind: "https-redirect"; readonly code: number };

export interface SnippetDirective {
  /** The directive as read, tokens joined by one space (quotes kept), shortened for display. */
  readonly text: string;
  /** What it does, when Portico annotations can do the same; empty when not understood. */
  readonly actions: readonly SnippetAction[];
  /** A difference from nginx that remains (recognised), or why it is not understood. */
  readonly note: string | null;
}

export interface SnippetScan {
  /** Top-level directives, in order (a block such as `if (...) { ... }` is one). */
  readonly directives: readonly SnippetDirective[];
  /** Set when the text is not well-formed nginx syntax (then no directive is understood). */
  readonly error: string | null;
}

/** Longest text scanned; annotations are small, this only bounds the work. */
export const SNIPPET_LIMIT = 65536;
const TEXT_SHOWN = 120;

interface Token {
  readonly t: "word" | ";" | "{" | "}";
  /** The word's value (quotes removed, escapes resolved). */
  readonly v: string;
  /** How it was written, for display. */
  readonly raw: string;
  readonly quoted: boolean;
}

/** nginx's lexical rules (ngx_conf_read_token), enough to find directive boundaries. */
function tokenize(text: string): Token[] | string {
  const out: Token[] = [];
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text[i] as string;
    if (c === " " || c === "\t" || c === "\n" || c === "\r") {
      i++;
      continue;
    }
    if (c === "#") {
      while (i < n && text[i] !== "\n") i++;
      continue;
    }
    if (c === ";" || c === "{" || c === "}") {
      out.push({ t: c, v: c, raw: c, quoted: false });
      i++;
      continue;
    }
    if (c === '"' || c === "'") {
      let v = "";
      let j = i + 1;
      for (;;) {
        if (j >= n) return "a quoted string is not closed";
        const d = text[j] as string;
        if (d === c) break;
        if (d === "\\" && j + 1 < n) {
          const e = text[j + 1] as string;
          v += e === c || e === "\\" ? e : `\\${e}`;
          j += 2;
          continue;
        }
        v += d;
        j++;
      }
      out.push({ t: "word", v, raw: text.slice(i, j + 1), quoted: true });
      i = j + 1;
      continue;
    }
    let j = i;
    while (j < n && !" \t\n\r;{}".includes(text[j] as string)) j++;
    const w = text.slice(i, j);
    out.push({ t: "word", v: w, raw: w, quoted: false });
    i = j;
  }
  return out;
}

interface Statement {
  readonly words: readonly Token[];
  /** The statements of its `{ }` block, or null for a simple directive ending with `;`. */
  readonly block: readonly Statement[] | null;
}

function statements(tokens: readonly Token[]): Statement[] | string {
  let pos = 0;
  const level = (depth: number): Statement[] | string => {
    const list: Statement[] = [];
    let words: Token[] = [];
    while (pos < tokens.length) {
      const tok = tokens[pos++] as Token;
      if (tok.t === "word") words.push(tok);
      else if (tok.t === ";") {
        if (words.length === 0) return "an empty directive (`;` alone)";
        list.push({ words, block: null });
        words = [];
      } else if (tok.t === "{") {
        if (words.length === 0) return "a block with no directive name";
        if (depth >= 16) return "blocks nested too deep";
        const inner = level(depth + 1);
        if (typeof inner === "string") return inner;
        list.push({ words, block: inner });
        words = [];
      } else {
        if (depth === 0) return "a `}` closes no block";
        if (words.length > 0) return `directive "${words[0]!.v}" has no terminating \`;\``;
        return list;
      }
    }
    if (depth > 0) return "a `{` block is not closed";
    if (words.length > 0) return `directive "${words[0]!.v}" has no terminating \`;\``;
    return list;
  };
  return level(0);
}

function display(s: Statement): string {
  const head = s.words.map((w) => w.raw).join(" ");
  const text = s.block === null ? `${head};` : `${head} { … }`;
  return text.length > TEXT_SHOWN ? `${text.slice(0, TEXT_SHOWN - 1)}…` : text;
}

const VARIABLE = /\$[A-Za-z_{]/;
const REDIRECT_CODES = new Set([301, 302, 303, 307, 308]);
/** The HTTPS redirect idiom: the same host and URI, with https. */
const HTTPS_SAME_URI = /^https:\/\/\$(host|http_host|server_name)\$request_uri$/;

type Judged = { actions: SnippetAction[]; note: string | null };

const notUnderstood = (note: string): Judged => ({ actions: [], note });

/** A header directive's one field: a Portico header annotation takes it when checkHeader does. */
function header(kind: "request-header" | "response-header", name: string, value: string, note: string | null = null): Judged {
  if (VARIABLE.test(value)) return notUnderstood(`the value uses nginx variables (${value}); Portico sets literal values only`);
  const bad = checkHeader(name, value, kind === "request-header" ? "request" : "response");
  if (bad !== null) return notUnderstood(bad);
  return { actions: [{ kind, name, value }], note };
}

/** `"Name: value"` as more_set_headers writes it. */
function splitField(arg: string): [string, string] | null {
  const colon = arg.indexOf(":");
  if (colon <= 0) return null;
  return [arg.slice(0, colon).trim(), arg.slice(colon + 1).trim()];
}

function judgeReturn(args: readonly Token[]): Judged {
  const code = Number(args[0]?.v);
  if (args.length === 1 && /^https?:\/\//.test(args[0]!.v)) return judgeReturn([{ t: "word", v: "302", raw: "302", quoted: false }, args[0]!]);
  if (args.length !== 2 || !REDIRECT_CODES.has(code)) return notUnderstood("only `return <301|302|303|307|308> <url>` has a Portico equivalent");
  const url = args[1]!.v;
  if (HTTPS_SAME_URI.test(url)) return { actions: [{ kind: "https-redirect", code }], note: null };
  if (VARIABLE.test(url)) return notUnderstood(`the URL uses nginx variables (${url})`);
  return { actions: [{ kind: "redirect", code, url }], note: null };
}

/** One top-level statement: what it does, if a Portico annotation does the same. */
function judge(s: Statement): Judged {
  const name = s.words[0]!.v;
  const args = s.words.slice(1);
  if (s.block !== null) {
    // `if ($scheme = http) { return 30x https://$host$request_uri; }`: the HTTPS redirect.
    const cond = args.map((w) => w.v).join(" ");
    if (name === "if" && /^\(\s*\$(scheme|http_x_forwarded_proto)\s*=\s*http\s*\)$/.test(cond) && s.block.length === 1) {
      const inner = s.block[0]!;
      if (inner.block === null && inner.words[0]!.v === "return") {
        const r = judgeReturn(inner.words.slice(1));
        if (r.actions[0]?.kind === "https-redirect") return r;
      }
    }
    return notUnderstood(`a \`${name}\` block`);
  }
  switch (name) {
    case "more_set_headers":
    case "more_set_input_headers": {
      // headers-more: options (-s statuses, -t types, -r) narrow where it applies.
      if (args.length === 0) return notUnderstood(`${name} sets no field`);
      if (args.some((a) => !a.quoted && a.v.startsWith("-"))) return notUnderstood(`${name} with -s/-t/-r options applies to some answers only`);
      const kind = name === "more_set_headers" ? "response-header" : "request-header";
      const actions: SnippetAction[] = [];
      for (const a of args) {
        const field = splitField(a.v);
        if (field === null || field[1] === "") return notUnderstood(`${name} without a value clears the field; Portico cannot`);
        const one = header(kind, field[0], field[1]);
        if (one.actions.length === 0) return one;
        actions.push(...one.actions);
      }
      return { actions, note: null };
    }
    case "add_header": {
      const always = args.length === 3 && args[2]!.v === "always";
      if (args.length !== 2 && !always) return notUnderstood("add_header takes a name, a value and optionally `always`");
      // nginx adds the field only to 200, 201, 204, 206, 301, 302, 303, 304, 307 and 308
      // answers unless `always` is given; it adds rather than replaces.
      const note = always ? "nginx adds the field next to the pod's; Portico replaces the pod's" : "nginx adds it to 2xx and 3xx answers only (no `always`), next to the pod's field; Portico sets it on every relayed answer, replacing the pod's";
      return header("response-header", args[0]!.v, args[1]!.v, note);
    }
    case "proxy_set_header":
      if (args.length !== 2) return notUnderstood("proxy_set_header takes a name and a value");
      return header("request-header", args[0]!.v, args[1]!.v);
    case "return":
      return judgeReturn(args);
    default:
      return notUnderstood(`no Portico equivalent for \`${name}\``);
  }
}

/** Read a snippet's text. Never throws; malformed text is reported, not guessed at. */
export function scanSnippet(text: string): SnippetScan {
  if (text.length > SNIPPET_LIMIT) return { directives: [], error: `longer than ${SNIPPET_LIMIT} characters: not read` };
  const tokens = tokenize(text);
  if (typeof tokens === "string") return { directives: [], error: tokens };
  const list = statements(tokens);
  if (typeof list === "string") return { directives: [], error: list };
  return { directives: list.map((s) => ({ text: display(s), ...judge(s) })), error: null };
}

/**
 * nginx directives that decide who may reach a location. A snippet holding one guarded access
 * under ingress-nginx (where snippets ran); Portico never runs it, so serving the route without
 * it would open what the snippet closed.
 */
const ACCESS_DIRECTIVES: ReadonlySet<string> = new Set([
  "allow", "deny", "satisfy", "auth_basic", "auth_basic_user_file", "auth_request", "auth_jwt", "limit_except",
]);

/**
 * The access directives a snippet holds, at any depth (inside `if` and `location` blocks too),
 * or null when the text cannot be read (then none can be ruled out). A directive name is the
 * first word of a statement, unquoted, as nginx reads it.
 */
export function accessDirectivesIn(text: string): string[] | null {
  if (text.length > SNIPPET_LIMIT) return null;
  const tokens = tokenize(text);
  if (typeof tokens === "string") return null;
  const list = statements(tokens);
  if (typeof list === "string") return null;
  const found = new Set<string>();
  const walk = (ss: readonly Statement[]): void => {
    for (const s of ss) {
      const first = s.words[0];
      if (first !== undefined && !first.quoted && ACCESS_DIRECTIVES.has(first.v)) found.add(first.v);
      // `return 401` / `return 403` refuses requests too (often inside an `if`).
      if (first !== undefined && !first.quoted && first.v === "return" && /^40[13]$/.test(s.words[1]?.v ?? "")) found.add(`return ${s.words[1]!.v}`);
      if (s.block !== null) walk(s.block);
    }
  };
  walk(list);
  return [...found].sort();
}
