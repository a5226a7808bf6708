// A read-only reader of ingress-nginx snippet annotations (configuration-snippet and friends):
// for the migration report it splits the text into nginx directives and recognises the few
// common ones that a Portico annotation replaces; for serving it tells whether every directive
// is known to be harmless (restrictingDirectivesIn, at the end), else the route is refused.
// Nothing here executes, evaluates or passes on the text: it is tokenised (nginx's
// configuration syntax: words, quoted strings, `;`, `{ }`, `#` comments) and compared with
// fixed directive names. A snippet is never served.
import { compileHeaderPattern } from "../regex/header-pattern.ts";
import { checkHeader, isDenyStatus } from "../policy/headers.ts";

/** What a recognised directive does, as a Portico annotation can do it. */
export type SnippetAction =
  | { readonly kind: "request-header"; readonly name: string; readonly value: string }
  | { readonly kind: "response-header"; readonly name: string; readonly value: string }
  /** `return <code> <url>` with a literal URL. */
  | { readonly kind: "redirect"; readonly code: number; readonly url: string }
  /** `return 30x https://$host$request_uri`: the HTTPS redirect. */
  | { readonly kind: "https-redirect"; readonly code: number }
  /**
   * What only another Ingress on the same hosts can do: a `location` of a server-snippet, or a
   * `rewrite`, whose requests get their own answer (compile/migrate.ts writes that Ingress).
   */
  | { readonly kind: "companion"; readonly match: CompanionMatch; readonly effect: CompanionEffect }
  /**
   * `if ($http_<name> <op> <value>) { return <status>; }`: portico.dev/deny-request-headers.
   * `scope` as CompanionMatch's: a server-snippet's `if` ran for every request of the host.
   */
  | { readonly kind: "header-deny"; readonly name: string; readonly op: "~" | "~*" | "!~" | "!~*"; readonly pattern: string; readonly status: number; readonly scope: "server" | "ingress" };

/** The path of a companion Ingress, as ingress-nginx turns it into the same nginx location. */
export interface CompanionMatch {
  readonly path: string;
  readonly pathType: "Exact" | "Prefix" | "ImplementationSpecific";
  /** With use-regex: ingress-nginx's `location ~* "^<path>"`, case-insensitive, anchored at the start. */
  readonly regex: boolean;
  /** The path's characters up to its first regex operator (what a longer path could shadow). */
  readonly literal: string;
  /**
   * "server": the requests of the host, whatever location they would reach (a location or a
   * rewrite of a server-snippet); "ingress": only those reaching this Ingress's own paths
   * (a configuration-snippet runs inside them).
   */
  readonly scope: "server" | "ingress";
}

export type CompanionEffect =
  /** `deny all;` / `return 403;`: 403 for every client (denylist-source-range 0.0.0.0/0,::/0). */
  | { readonly kind: "deny" }
  /** A literal redirect (permanent-redirect or temporal-redirect, with its code). */
  | { readonly kind: "redirect"; readonly code: number; readonly url: string }
  /** `rewrite … break`: the path sent to the pod (rewrite-target, `$1`… the captures). */
  | { readonly kind: "rewrite"; readonly target: string };

export interface SnippetDirective {
  /** The directive as read, tokens joined by one space (quotes kept), shortened for display. */
  readonly text: string;
  /** What it does, when Portico annotations can do the same; empty when not understood. */
  readonly actions: readonly SnippetAction[];
  /** A difference from nginx that remains (recognised), or why it is not understood. */
  readonly note: string | null;
}

/** Where the snippet runs: server-snippet in the server block, the others in each location. */
export type SnippetContext = "server" | "location";

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
  /** The word's value (quotes removed, escapes resolved as nginx resolves them). */
  readonly v: string;
  /** How it was written, for display. */
  readonly raw: string;
  readonly quoted: boolean;
}

const isSpace = (c: string): boolean => c === " " || c === "\t" || c === "\n" || c === "\r";

/**
 * nginx's escapes in a word (ngx_conf_read_token): `\"`, `\'`, `\\`, `\t`, `\r`, `\n` become
 * the character; any other backslash is kept with what follows it.
 */
function unescape(s: string): string {
  if (!s.includes("\\")) return s;
  let out = "";
  for (let i = 0; i < s.length; i++) {
    const c = s[i] as string;
    if (c !== "\\" || i + 1 >= s.length) {
      out += c;
      continue;
    }
    const e = s[i + 1] as string;
    if (e === '"' || e === "'" || e === "\\") out += e;
    else if (e === "t") out += "\t";
    else if (e === "r") out += "\r";
    else if (e === "n") out += "\n";
    else out += `\\${e}`;
    i++;
  }
  return out;
}

/**
 * nginx's lexical rules (ngx_conf_read_token in src/core/ngx_conf_file.c), one pass over the
 * text, so linear in its length whatever it holds:
 * - between words: blanks separate, `;` ends a directive, `{` opens its block, `}` closes one,
 *   `#` starts a comment to the end of the line;
 * - a word starting with `"` or `'` runs to the same quote not escaped by `\`, and must be
 *   followed by a blank, `;`, `{` or the `)` of an `if` condition (which starts a new word);
 * - any other word runs to a blank, `;` or `{`: `}`, `#` and quotes inside it are its own
 *   characters, `\` escapes the next one, and `{` right after `$` belongs to it (`${name}`).
 */
function tokenize(text: string): Token[] | string {
  const out: Token[] = [];
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text[i] as string;
    if (isSpace(c)) {
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
      let j = i + 1;
      while (j < n && text[j] !== c) j += text[j] === "\\" ? 2 : 1;
      if (j >= n) return "a quoted string is not closed";
      const after = text[j + 1];
      if (after !== undefined && !isSpace(after) && after !== ";" && after !== "{" && after !== ")") return `unexpected ${JSON.stringify(after)} after a quoted string`;
      out.push({ t: "word", v: unescape(text.slice(i + 1, j)), raw: text.slice(i, j + 1), quoted: true });
      i = j + 1;
      continue;
    }
    let j = i;
    while (j < n) {
      const d = text[j] as string;
      if (d === "\\") {
        j += 2;
        continue;
      }
      if (d === "$" && text[j + 1] === "{") {
        j += 2;
        continue;
      }
      if (isSpace(d) || d === ";" || d === "{") break;
      j++;
    }
    if (j > n) j = n;
    const w = text.slice(i, j);
    out.push({ t: "word", v: unescape(w), raw: w, quoted: false });
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

// ---------------------------------------------------------------------------------------------
// Paths and rewrites a companion Ingress can carry. Only a small regular language is taken:
// `^/`, then path characters (a lone `.` included: any character in the regex, itself in a
// literal path), `\.`, groups of literal alternatives (`(a|b)`) and the wildcards `.*`, `.+`,
// `(.*)`, `(.+)`, `([^/]+)`, `([^/]*)`, then an optional `$`. Anything
// else stays not understood, so a regex Portico's RE2 would refuse (and so leave the path out,
// serving the request unchecked) is never written into an Ingress.

const LITERAL = /[A-Za-z0-9/_~.-]/;
const WILDCARDS = ["(.*)", "(.+)", "([^/]+)", "([^/]*)", ".*", ".+"] as const;

/** `re` (after `^`) in the language above: the literal part up to the first operator, or null. */
function simpleRegex(re: string): { literal: string; captures: number; plain: string | null } | null {
  if (!re.startsWith("/") || re.length > 256) return null;
  let i = 0;
  let literal = "";
  let operator = false;
  let captures = 0;
  let plain = "";
  while (i < re.length) {
    const c = re[i] as string;
    if (c === "$" && i === re.length - 1) break;
    const w = WILDCARDS.find((x) => re.startsWith(x, i));
    if (w !== undefined) {
      operator = true;
      if (w.startsWith("(")) captures++;
      i += w.length;
      continue;
    }
    if (LITERAL.test(c)) {
      if (!operator) literal += c;
      plain += c;
      i++;
      continue;
    }
    if (c === "\\" && re[i + 1] === ".") {
      if (!operator) literal += ".";
      plain += ".";
      i += 2;
      continue;
    }
    const alt = /^\((?:[A-Za-z0-9_~.-]+\|)+[A-Za-z0-9_~.-]+\)/.exec(re.slice(i));
    if (alt !== null && !alt[0].includes(".")) {
      operator = true;
      captures++;
      i += alt[0].length;
      continue;
    }
    return null;
  }
  return { literal, captures, plain: operator ? null : plain };
}

/** `location [= | ~ | ~* | ^~] path` as a companion Ingress's path, or why not. */
function locationMatch(args: readonly Token[]): CompanionMatch | string {
  const [a, b] = args;
  if (a === undefined || args.length > 2) return "a `location` with an unexpected form";
  const mod = args.length === 2 ? a.v : "";
  const path = args.length === 2 ? b!.v : a.v;
  if (mod === "=") {
    const r = simpleRegex(path);
    if (r === null || r.plain !== path) return "an exact `location` with characters a path may not carry";
    return { path, pathType: "Exact", regex: false, literal: path, scope: "server" };
  }
  if (mod === "" || mod === "^~") {
    // nginx's prefix location is a string prefix: `/x/` equals Kubernetes' Prefix `/x/`; any
    // other is written as the regex `^/x` (case-insensitive, so it takes more, never less).
    const r = simpleRegex(path);
    if (r === null || r.plain !== path) return "a prefix `location` with characters a path may not carry";
    if (path.endsWith("/")) return { path, pathType: "Prefix", regex: false, literal: path, scope: "server" };
    return { path: path.replaceAll(".", "\\."), pathType: "ImplementationSpecific", regex: true, literal: path, scope: "server" };
  }
  if (mod === "~" || mod === "~*") {
    if (!path.startsWith("^")) return "a regex `location` not anchored with `^/`";
    const r = simpleRegex(path.slice(1));
    if (r === null) return "a regex `location` beyond literal paths, `(a|b)` and `.*`";
    return { path: path.slice(1), pathType: "ImplementationSpecific", regex: true, literal: r.literal, scope: "server" };
  }
  return `a \`location\` with modifier ${mod}`;
}

/** What a location block of a server-snippet does, when a companion Ingress can do it. */
function judgeLocation(s: Statement): Judged {
  const match = locationMatch(s.words.slice(1));
  if (typeof match === "string") return notUnderstood(match);
  const body = s.block ?? [];
  if (body.length !== 1 || body[0]!.block !== null) return notUnderstood("a `location` block other than one `deny all;`, `return 403;` or literal `return 30x <url>;`");
  const inner = body[0]!;
  const verb = inner.words[0]!.v;
  const rest = inner.words.slice(1).map((w) => w.v);
  let effect: CompanionEffect | null = null;
  if ((verb === "deny" && rest.length === 1 && rest[0] === "all") || (verb === "return" && rest.length === 1 && rest[0] === "403")) effect = { kind: "deny" };
  else if (verb === "return") {
    const r = judgeReturn(inner.words.slice(1));
    const a = r.actions[0];
    if (a?.kind === "redirect" && REDIRECT_URL.test(a.url)) effect = { kind: "redirect", code: a.code, url: a.url };
  }
  if (effect === null) return notUnderstood("a `location` block other than one `deny all;`, `return 403;` or literal `return 30x <url>;`");
  return { actions: [{ kind: "companion", match, effect }], note: companionNote(match, effect) };
}

/** ingress-nginx's URL characters for permanent-redirect / temporal-redirect (annotations/redirects.ts). */
const REDIRECT_URL = /^[A-Za-z0-9\-._~/:,?&=]+$/;
/** ingress-nginx's rewrite-target characters, captures `$1`…`$9` only (annotations/regex-rewrite.ts). */
const REWRITE_TARGET_RE = /^\/(?:[A-Za-z0-9\-._~/:]|\$[1-9])*$/;

/**
 * `rewrite <regex> <replacement> <flag>`. `permanent`/`redirect` with a literal regex
 * (`^/old$`) is an Exact path that redirects; `break` inside a location (configuration-snippet)
 * is a regex path with rewrite-target. Others (`last`, no flag, a rewrite in the server block
 * that is not a redirect) pick another location with the new URI: not understood.
 */
function judgeRewrite(args: readonly Token[], context: SnippetContext): Judged {
  if (args.length !== 3) return notUnderstood("`rewrite` without a flag (`break`, `permanent`, `redirect`) picks a location again");
  const [re, to, flag] = args.map((w) => w.v) as [string, string, string];
  if (!re.startsWith("^")) return notUnderstood("a `rewrite` regex not anchored with `^/`");
  const r = simpleRegex(re.slice(1));
  if (r === null) return notUnderstood("a `rewrite` regex beyond literal paths, `(a|b)` and `.*`");
  const scope = context === "server" ? "server" : "ingress";
  if (flag === "permanent" || flag === "redirect") {
    if (r.plain === null || !re.endsWith("$")) return notUnderstood("a redirecting `rewrite` whose regex is not one literal path (`^/old$`)");
    if (!REDIRECT_URL.test(to)) return notUnderstood("a redirecting `rewrite` to a URL with nginx variables or characters ingress-nginx's redirect refuses");
    const match: CompanionMatch = { path: r.plain, pathType: "Exact", regex: false, literal: r.plain, scope };
    const effect: CompanionEffect = { kind: "redirect", code: flag === "permanent" ? 301 : 302, url: to };
    return { actions: [{ kind: "companion", match, effect }], note: companionNote(match, effect, true) };
  }
  if (flag === "break" && context === "location") {
    if (!REWRITE_TARGET_RE.test(to)) return notUnderstood("a `rewrite` target with nginx variables or characters rewrite-target refuses");
    const highest = Math.max(0, ...[...to.matchAll(/\$([1-9])/g)].map((m) => Number(m[1])));
    if (highest > r.captures) return notUnderstood("a `rewrite` target naming a capture its regex does not have");
    const match: CompanionMatch = { path: re.slice(1), pathType: "ImplementationSpecific", regex: true, literal: r.literal, scope };
    const effect: CompanionEffect = { kind: "rewrite", target: to };
    return { actions: [{ kind: "companion", match, effect }], note: companionNote(match, effect) };
  }
  return notUnderstood(`\`rewrite … ${flag}\` ${context === "server" ? "in the server block " : ""}picks a location again with the new URI`);
}

/** The differences a companion Ingress leaves (nginx behaviour cited in docs/design.md). */
function companionNote(m: CompanionMatch, e: CompanionEffect, rewrite = false): string | null {
  const notes: string[] = [];
  // ingress-nginx: one use-regex Ingress makes every location of its hosts `~* "^<path>"`
  // (docs/design.md, "Regular expressions"); Portico does the same.
  if (m.regex) notes.push("its use-regex puts every path of the host in regex mode (case-insensitive, anchored at the start only), in Portico as in ingress-nginx: check the host's other paths");
  // nginx's rewrite appends the request's arguments unless the replacement ends with `?`
  // (ngx_http_rewrite_module); permanent-redirect never carries the query.
  if (rewrite && e.kind === "redirect" && !e.url.endsWith("?")) notes.push("the query is not carried over (nginx's `rewrite` appended it)");
  return notes.length === 0 ? null : notes.join("; ");
}

/** PCRE's metacharacters, escaped to match `=`/`!=`'s literal value as a regex. */
const quoteRegex = (s: string) => s.replace(/[\\^$.|?*+()[\]{}]/g, (c) => `\\${c}`);

/**
 * `if ($http_<name> op value) { return <400-599>; }`, nginx's header check: `~`/`~*` (and
 * `!~`/`!~*`) a PCRE regex, `=`/`!=` a string compared whole (ngx_http_rewrite_module "if").
 * `$http_<name>` is the request header `<name>` with `_` for `-` (ngx_http_variables.c).
 */
function judgeHeaderIf(args: readonly Token[], body: readonly Statement[], context: SnippetContext): Judged | null {
  const words = args.map((w) => w.v);
  if (words.length === 0 || !words[0]!.startsWith("(")) return null;
  words[0] = words[0]!.slice(1);
  const last = words.length - 1;
  if (words[last] === ")") words.pop();
  else if (words[last]!.endsWith(")") && !args[last]!.quoted) words[last] = words[last]!.slice(0, -1);
  else return null;
  if (words.length !== 3) return null;
  const [variable, op, value] = words as [string, string, string];
  const v = /^\$http_([a-z0-9_]+)$/i.exec(variable);
  if (v === null) return null;
  if (body.length !== 1 || body[0]!.block !== null || body[0]!.words[0]!.v !== "return" || body[0]!.words.length !== 2) {
    return notUnderstood("an `if` on a request header whose block is not one `return <400-599>;`");
  }
  const status = Number(body[0]!.words[1]!.v);
  if (!isDenyStatus(status)) return notUnderstood("an `if` on a request header whose `return` is not a status from 400 to 599 (444, nginx's silent close, has no equivalent)");
  const name = v[1]!.split("_").map((p) => (p === "" ? p : p[0]!.toUpperCase() + p.slice(1))).join("-");
  let rule: { op: "~" | "~*" | "!~" | "!~*"; pattern: string };
  if (op === "=" || op === "!=") rule = { op: op === "=" ? "~" : "!~", pattern: `^${quoteRegex(value)}$` };
  else if (op === "~" || op === "~*" || op === "!~" || op === "!~*") rule = { op, pattern: value };
  else return notUnderstood(`an \`if\` with the operator ${op}`);
  if (VARIABLE.test(value) && op !== "~" && op !== "~*" && op !== "!~" && op !== "!~*") return notUnderstood(`the value uses nginx variables (${value})`);
  const c = compileHeaderPattern(rule.op.endsWith("*") ? `(?i)${rule.pattern}` : rule.pattern);
  if (!c.ok) return notUnderstood(`the regex ${c.reason}`);
  const note =
    context === "server"
      ? "nginx ran it for every request of the host, before any location; the annotation applies to this Ingress's paths"
      : null;
  return { actions: [{ kind: "header-deny", name, ...rule, status, scope: context === "server" ? "server" : "ingress" }], note };
}

/** One top-level statement: what it does, if a Portico annotation does the same. */
function judge(s: Statement, context: SnippetContext): Judged {
  const name = s.words[0]!.v;
  const args = s.words.slice(1);
  if (s.block !== null) {
    if (name === "location") return context === "server" ? judgeLocation(s) : notUnderstood("a `location` block inside a location");
    // `if ($scheme = http) { return 30x https://$host$request_uri; }`: the HTTPS redirect.
    const cond = args.map((w) => w.v).join(" ");
    if (name === "if" && /^\(\s*\$(scheme|http_x_forwarded_proto)\s*=\s*http\s*\)$/.test(cond) && s.block.length === 1) {
      const inner = s.block[0]!;
      if (inner.block === null && inner.words[0]!.v === "return") {
        const r = judgeReturn(inner.words.slice(1));
        if (r.actions[0]?.kind === "https-redirect") return r;
      }
    }
    if (name === "if") {
      const h = judgeHeaderIf(args, s.block, context);
      if (h !== null) return h;
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
      const note = always ? "nginx adds the field next to the pod's, and to its own answers (`always`); Portico replaces the pod's, and its own answers (redirects, errors) do not carry it" : "nginx adds it to 2xx and 3xx answers only (no `always`), next to the pod's field; Portico sets it on every relayed answer, replacing the pod's";
      return header("response-header", args[0]!.v, args[1]!.v, note);
    }
    case "proxy_set_header":
      if (args.length !== 2) return notUnderstood("proxy_set_header takes a name and a value");
      return header("request-header", args[0]!.v, args[1]!.v);
    case "return":
      return judgeReturn(args);
    case "rewrite":
      return judgeRewrite(args, context);
    default:
      return notUnderstood(`no Portico equivalent for \`${name}\``);
  }
}

/** Read a snippet's text. Never throws; malformed text is reported, not guessed at. */
export function scanSnippet(text: string, context: SnippetContext = "location"): SnippetScan {
  if (text.length > SNIPPET_LIMIT) return { directives: [], error: `longer than ${SNIPPET_LIMIT} characters: not read` };
  const tokens = tokenize(text);
  if (typeof tokens === "string") return { directives: [], error: tokens };
  const list = statements(tokens);
  if (typeof list === "string") return { directives: [], error: list };
  return { directives: list.map((s) => ({ text: display(s), ...judge(s, context) })), error: null };
}

// ---------------------------------------------------------------------------------------------
// Which snippets may be left out while the route is served. Under ingress-nginx a snippet ran
// inside the location or server block; Portico never runs one, so serving the route without it
// is only safe when nothing in it could have kept a request from the backend. That is decided
// by an allowlist, never by a list of known access rules: `if ($http_x_api_key != ...) { return
// 444; }`, `location ~ ^/actuator { return 404; }`, `internal;`, `access_by_lua_file`,
// `ssl_verify_client on;` and the like all refuse requests without being "access directives",
// and a module's directive Portico has never heard of may do the same. Access control fails
// closed (docs/design.md, "Annotations and policies").

/**
 * Directives whose only effect is on headers, buffering, timeouts, compression, caching
 * metadata or logging: none decides whether a request reaches the backend. Names as nginx
 * (http core, proxy, gzip, headers, log modules) and headers-more document them.
 */
const HARMLESS: ReadonlySet<string> = new Set([
  // Response headers (adding, replacing or hiding a field the client sees).
  "add_header", "add_trailer", "more_set_headers", "more_clear_headers", "proxy_hide_header", "proxy_pass_header",
  "expires", "etag", "charset", "default_type", "server_tokens", "proxy_cookie_domain", "proxy_cookie_path",
  "proxy_cookie_flags", "proxy_redirect",
  // Request headers with a value (the clearing forms are judged below).
  "proxy_set_header", "more_set_input_headers",
  // Buffering and body size.
  "proxy_buffering", "proxy_buffer_size", "proxy_buffers", "proxy_busy_buffers_size", "proxy_request_buffering",
  "proxy_max_temp_file_size", "proxy_temp_file_write_size", "client_body_buffer_size", "client_max_body_size",
  "chunked_transfer_encoding", "proxy_http_version",
  // Timeouts.
  "proxy_connect_timeout", "proxy_read_timeout", "proxy_send_timeout", "client_body_timeout", "send_timeout",
  "keepalive_timeout", "proxy_next_upstream", "proxy_next_upstream_tries", "proxy_next_upstream_timeout",
  // Compression.
  "gzip", "gzip_types", "gzip_min_length", "gzip_proxied", "gzip_comp_level", "gzip_vary", "gzip_disable",
  "gzip_http_version", "gzip_buffers",
  // Logging.
  "access_log", "log_not_found", "log_subrequest",
]);

/**
 * Request fields Portico writes itself on every proxied request (http/headers.ts
 * forwardHeaders) or never passes on as the client sent them (hop-by-hop, RFC 9110 §7.6.1):
 * whatever a snippet set them to, the client's own copy does not reach the backend here either.
 */
const WRITTEN_BY_PORTICO: ReadonlySet<string> = new Set([
  "host", "x-forwarded-for", "x-forwarded-proto", "x-forwarded-host", "x-forwarded-port", "x-real-ip", "x-request-id",
  "connection", "upgrade", "keep-alive", "te", "transfer-encoding", "proxy-connection",
]);

/**
 * nginx variables that are never empty and say only what the request line and Host already
 * said (ngx_http_variables.c; `best_http_host` and `pass_access_scheme` are ingress-nginx's
 * maps of the same, nginx.tmpl): a field set from them tells the backend nothing a client could
 * not have sent itself.
 */
const REQUEST_LINE_VARIABLES: ReadonlySet<string> = new Set([
  "host", "scheme", "request_uri", "uri", "document_uri", "request_method", "server_name", "server_port", "server_protocol",
  "best_http_host", "pass_access_scheme", "pass_server_port", "pass_port",
]);

/** The names of the nginx variables in a value (`$name`, `${name}`). */
const variablesIn = (value: string): string[] => [...value.matchAll(/\$\{?([A-Za-z0-9_]+)/g)].map((m) => m[1] as string);

/** Why setting request field `field` to `value` keeps something from the backend, or null. */
function replacesClientField(directive: string, field: string, value: string): string | null {
  // What Portico writes itself, the client never sets (`Connection ""`, `X-Real-IP $remote_addr`).
  // nginx: a proxy_set_header whose value is empty is not passed (the client's copy is
  // dropped); headers-more: `Name:` with no value clears the field. Removing a client's field
  // before the backend sees it (X-Remote-User, X-Forwarded-User...) is what stops a spoof, so
  // leaving it out could let a client claim an identity the backend trusts.
  if (WRITTEN_BY_PORTICO.has(field.toLowerCase())) return null;
  if (value === "") return `${directive} with an empty value removes a field the client sent`;
  // A value from variables is the same protection in another form: it is empty whenever the
  // variables are (`$remote_user` without a login, `$http_x` without that field, `$ssl_client_*`
  // without a certificate: the field is then not passed), and it hands the backend what nginx
  // established about the client (its login, its certificate, its address) in place of the
  // client's own claim. Without the snippet the client's copy arrives instead.
  const trusted = variablesIn(value).filter((v) => !REQUEST_LINE_VARIABLES.has(v));
  if (trusted.length > 0) return `${directive} ${field} from $${trusted[0]} replaces (or, when empty, removes) the field the client sent`;
  return null;
}

/** Why a harmless-looking directive is not, in the forms that replace or remove what a client sent. */
function clears(name: string, args: readonly Token[]): string | null {
  if (name === "proxy_set_header") {
    if (args.length < 2) return "proxy_set_header without a value removes a field the client sent";
    return replacesClientField(name, args[0]!.v, args[1]!.v);
  }
  if (name === "more_set_input_headers") {
    for (const a of args) {
      if (a.v.startsWith("-")) continue;
      const field = splitField(a.v);
      if (field === null) return "more_set_input_headers without a value removes a field the client sent";
      const why = replacesClientField(name, field[0], field[1]);
      if (why !== null) return why;
    }
  }
  return null;
}

/**
 * The directives of a snippet that are not known to be harmless, by name, in order of first
 * appearance (a block counts by its own name: `if`, `location`...), or null when the text
 * cannot be read (then nothing in it can be ruled out). An empty list: the route may be served
 * without the snippet. Never throws; linear in the text's length.
 */
export function restrictingDirectivesIn(text: string): string[] | null {
  if (text.length > SNIPPET_LIMIT) return null;
  const tokens = tokenize(text);
  if (typeof tokens === "string") return null;
  const list = statements(tokens);
  if (typeof list === "string") return null;
  const found = new Set<string>();
  for (const s of list) {
    // nginx looks directives up by the word's value, quoted or not (`"deny" all;` denies).
    const name = s.words[0]!.v;
    if (s.block !== null || !HARMLESS.has(name) || clears(name, s.words.slice(1)) !== null) found.add(name);
  }
  return [...found];
}
