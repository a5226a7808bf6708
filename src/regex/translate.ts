// PCRE → RE2 syntax, for the paths ingress-nginx users write.
//
// ingress-nginx puts a regex-mode path into nginx unchanged (`location ~* "^<path>"` and
// `rewrite "(?i)<path>" …`, template.go buildLocation/buildProxyPass; its quoting only escapes
// `\` and `"` for the config file, and nginx's config reader removes that again). nginx hands
// it to PCRE 8.45 (the controller image links Alpine's `pcre`, images/nginx/rootfs/build.sh)
// without the UTF option, so the language is PCRE1. Portico runs RE2 syntax (re2js), whose
// matcher is linear in the input: docs/design.md "Regular expressions".
//
// Most of the language is the same in both. This scanner walks the pattern once and
//  - rewrites what PCRE spells differently (`(?<n>` and `(?'n'` named groups, `\h \v \N \e \Z`,
//    `\s` with vertical tab, `\Q…\E`, `(?#…)` comments, octal and `\c` escapes, `[\b]`);
//  - refuses, with a reason, what RE2 cannot run in linear time or has no equivalent for
//    (backreferences, lookaround, atomic groups, possessive quantifiers, recursion,
//    conditionals, control verbs, `\K \G \R \X \C`, the `x` and `J` flags);
//  - leaves everything else to RE2's own parser, whose error becomes the reason.
// It never builds a pattern from anything but the pattern's own characters.

export type Translation =
  | {
      readonly ok: true;
      /** The pattern in RE2 syntax (no anchor added). */
      readonly source: string;
      /** A `|` outside every group: `^` then binds only the first alternative (see path-regex.ts). */
      readonly topLevelAlternation: boolean;
    }
  | { readonly ok: false; readonly reason: string };

const fail = (reason: string): Translation => ({ ok: false, reason });

/** Characters RE2 treats as syntax outside a class; quoting them makes a literal. */
const META = new Set(["\\", ".", "+", "*", "?", "(", ")", "|", "[", "]", "{", "}", "^", "$"]);
/** Characters that need quoting inside a class. */
const CLASS_META = new Set(["\\", "]", "[", "^", "-"]);

const hex = (code: number) => `\\x{${code.toString(16).toUpperCase()}}`;
const quote = (s: string, inClass: boolean) => {
  let out = "";
  for (const ch of s) out += (inClass ? CLASS_META : META).has(ch) ? `\\${ch}` : ch;
  return out;
};

// PCRE's whitespace classes in non-UTF mode (pcre_compile.c; `\s` has included VT since 8.34).
const SPACE = "\\t\\n\\x0B\\f\\r ";
const HSPACE = "\\t \\xA0";
const VSPACE = "\\n\\x0B\\f\\r\\x85";

/** Flags RE2 supports with PCRE's meaning. */
const FLAGS_OK = new Set(["i", "m", "s", "U"]);
const FLAG_REFUSED: Record<string, string> = {
  x: "the extended-syntax flag (?x) (whitespace and # comments in the pattern) is not supported",
  J: "the flag (?J) (duplicate group names) is not supported",
  X: "the flag (?X) is not supported",
};

/** PCRE escapes with no linear-time or RE2 equivalent. */
const ESCAPE_REFUSED: Record<string, string> = {
  K: "\\K (reset match start) is not supported",
  G: "\\G (match at previous end) is not supported",
  R: "\\R (any newline sequence) is not supported",
  X: "\\X (extended grapheme cluster) is not supported",
  C: "\\C (single code unit) is not supported",
};

const BACKREF = "uses a backreference, which no linear-time engine can run";

/** PCRE group names: a letter or underscore, then word characters, at most 32 (pcre_compile.c). */
const GROUP_NAME = /^[A-Za-z_]\w{0,31}$/;

export function translatePcre(pattern: string): Translation {
  let out = "";
  let i = 0;
  let depth = 0;
  let topLevelAlternation = false;
  const n = pattern.length;

  while (i < n) {
    const c = pattern[i]!;
    if (c === "\\") {
      const r = escapeOutside(pattern, i);
      if (typeof r === "string") return fail(r);
      out += r.text;
      i = r.next;
      continue;
    }
    if (c === "[") {
      const r = characterClass(pattern, i);
      if (typeof r === "string") return fail(r);
      out += r.text;
      i = r.next;
      continue;
    }
    if (c === "(") {
      const r = groupOpen(pattern, i);
      if (typeof r === "string") return fail(r);
      out += r.text;
      i = r.next;
      if (r.opens) depth++;
      continue;
    }
    if (c === ")") {
      depth = Math.max(0, depth - 1);
      out += c;
      i++;
      continue;
    }
    if (c === "|") {
      if (depth === 0) topLevelAlternation = true;
      out += c;
      i++;
      continue;
    }
    if (c === "*" || c === "+" || c === "?") {
      out += c;
      i++;
      if (pattern[i] === "+") return fail(`uses a possessive quantifier (${c}+), which is not supported`);
      if (pattern[i] === "?") {
        out += "?";
        i++;
      }
      continue;
    }
    if (c === "{") {
      const q = /^\{\d+(?:,\d*)?\}/.exec(pattern.slice(i));
      if (q === null) {
        // Not a quantifier: a literal brace in PCRE 8.x (this includes `{,n}`), and in RE2.
        out += "\\{";
        i++;
        continue;
      }
      out += q[0];
      i += q[0].length;
      if (pattern[i] === "+") return fail(`uses a possessive quantifier (${q[0]}+), which is not supported`);
      if (pattern[i] === "?") {
        out += "?";
        i++;
      }
      continue;
    }
    out += c;
    i++;
  }
  return { ok: true, source: out, topLevelAlternation };
}

interface Piece {
  readonly text: string;
  readonly next: number;
}

/** An escape outside a character class, starting at the backslash. A string is a refusal. */
function escapeOutside(p: string, i: number): Piece | string {
  const d = p[i + 1];
  if (d === undefined) return "ends with a lone backslash";
  if (d >= "1" && d <= "9") return `${BACKREF} (\\${d})`;
  if (d === "g" || d === "k") return `${BACKREF} (\\${d})`;
  if (d in ESCAPE_REFUSED) return ESCAPE_REFUSED[d]!;
  switch (d) {
    case "Q":
      return quoted(p, i, false);
    case "E": // PCRE ignores an \E with no \Q before it
      return { text: "", next: i + 2 };
    case "s":
      return { text: `[${SPACE}]`, next: i + 2 };
    case "S":
      return { text: `[^${SPACE}]`, next: i + 2 };
    case "h":
      return { text: `[${HSPACE}]`, next: i + 2 };
    case "H":
      return { text: `[^${HSPACE}]`, next: i + 2 };
    case "v":
      return { text: `[${VSPACE}]`, next: i + 2 };
    case "V":
      return { text: `[^${VSPACE}]`, next: i + 2 };
    case "N":
      return { text: "[^\\n]", next: i + 2 };
    case "Z":
      // PCRE's \Z also matches before a final newline; RE2 has only \z (documented difference).
      return { text: "\\z", next: i + 2 };
    case "0":
      return octal(p, i + 1, 3);
    default:
      return common(p, i) ?? { text: `\\${d}`, next: i + 2 };
  }
}

/** Escapes spelled the same way inside and outside a class: `\x`, `\p`, `\e`, `\cX`, `\o{…}`. */
function common(p: string, i: number): Piece | string | null {
  const d = p[i + 1];
  if (d === "x") {
    if (p[i + 2] === "{") {
      const end = p.indexOf("}", i + 3);
      if (end < 0) return "has a \\x{ escape with no closing }";
      return { text: p.slice(i, end + 1), next: end + 1 }; // RE2 checks the digits
    }
    // PCRE reads up to two hex digits, and none means NUL; RE2 wants exactly two.
    const m = /^[0-9A-Fa-f]{0,2}/.exec(p.slice(i + 2))![0];
    return { text: hex(m === "" ? 0 : parseInt(m, 16)), next: i + 2 + m.length };
  }
  if (d === "p" || d === "P") {
    if (p[i + 2] !== "{") return { text: p.slice(i, i + 3), next: i + 3 };
    const end = p.indexOf("}", i + 3);
    if (end < 0) return `has a \\${d}{ escape with no closing }`;
    return { text: p.slice(i, end + 1), next: end + 1 }; // RE2 checks the property name
  }
  if (d === "e") return { text: "\\x1B", next: i + 2 };
  if (d === "c") {
    const x = p[i + 2];
    if (x === undefined || x.charCodeAt(0) > 0x7f) return "\\c must be followed by an ASCII character";
    return { text: hex(x.toUpperCase().charCodeAt(0) ^ 0x40), next: i + 3 };
  }
  if (d === "o") {
    const m = /^\{([0-7]+)\}/.exec(p.slice(i + 2));
    if (m === null) return "\\o must be followed by octal digits in braces";
    const code = parseInt(m[1]!, 8);
    if (code > 0xff) return `octal escape \\o{${m[1]}} is above \\377`;
    return { text: hex(code), next: i + 2 + m[0].length };
  }
  return null;
}

/** Up to `max` octal digits starting at `from` (PCRE reads \0 plus two more, or \ddd in a class). */
function octal(p: string, from: number, max: number): Piece {
  let j = from;
  while (j < p.length && j - from < max && p[j]! >= "0" && p[j]! <= "7") j++;
  return { text: hex(parseInt(p.slice(from, j), 8)), next: j };
}

/** `\Q…\E` (or to the end): the characters as literals. */
function quoted(p: string, i: number, inClass: boolean): Piece {
  const end = p.indexOf("\\E", i + 2);
  const body = end < 0 ? p.slice(i + 2) : p.slice(i + 2, end);
  return { text: quote(body, inClass), next: end < 0 ? p.length : end + 2 };
}

/** A `[…]` class starting at `[`. */
function characterClass(p: string, start: number): Piece | string {
  let out = "[";
  let i = start + 1;
  if (p[i] === "^") {
    out += "^";
    i++;
  }
  // A `]` first in the class is a literal in PCRE.
  if (p[i] === "]") {
    out += "\\]";
    i++;
  }
  while (i < p.length) {
    const c = p[i]!;
    if (c === "]") return { text: `${out}]`, next: i + 1 };
    if (c === "[") {
      const posix = /^\[:(\^?)([A-Za-z<>]+):\]/.exec(p.slice(i));
      if (posix !== null) {
        if (posix[2] === "<" || posix[2] === ">") return "uses [[:<:]] or [[:>:]] (word start/end), which is not supported";
        out += posix[0];
        i += posix[0].length;
        continue;
      }
      out += "\\[";
      i++;
      continue;
    }
    if (c === "\\") {
      const r = escapeInClass(p, i);
      if (typeof r === "string") return r;
      out += r.text;
      i = r.next;
      continue;
    }
    out += c;
    i++;
  }
  return "has a character class with no closing ]";
}

function escapeInClass(p: string, i: number): Piece | string {
  const d = p[i + 1];
  if (d === undefined) return "ends with a lone backslash";
  if (d >= "0" && d <= "7") return octal(p, i + 1, 3); // in a class \1…\7 are octal in PCRE
  switch (d) {
    case "b": // backspace inside a class
      return { text: "\\x08", next: i + 2 };
    case "s":
      return { text: SPACE, next: i + 2 };
    case "h":
      return { text: HSPACE, next: i + 2 };
    case "v":
      return { text: VSPACE, next: i + 2 };
    case "H":
    case "V":
      return `\\${d} inside a character class is not supported`;
    case "Q":
      return quoted(p, i, true);
    case "E":
      return { text: "", next: i + 2 };
    default:
      return common(p, i) ?? { text: `\\${d}`, next: i + 2 };
  }
}

/** `(` and what follows it. `opens` is false when the construct is removed (a comment). */
function groupOpen(p: string, i: number): (Piece & { readonly opens: boolean }) | string {
  const rest = p.slice(i + 1, i + 4);
  if (rest.startsWith("*") && /^\*[A-Z]/.test(rest)) return "uses a PCRE control verb ((*…)), which is not supported";
  if (!rest.startsWith("?")) return { text: "(", next: i + 1, opens: true };
  const after = p.slice(i + 2);
  if (after.startsWith("#")) {
    const end = p.indexOf(")", i);
    if (end < 0) return "has a (?# comment with no closing )";
    return { text: "", next: end + 1, opens: false };
  }
  if (after.startsWith("=") || after.startsWith("!")) return "uses a lookahead ((?= or (?!), which is not supported";
  if (after.startsWith("<=") || after.startsWith("<!")) return "uses a lookbehind ((?<= or (?<!), which is not supported";
  if (after.startsWith(">")) return "uses an atomic group ((?>…)), which is not supported";
  if (after.startsWith("|")) return "uses a branch-reset group ((?|…)), which is not supported";
  if (after.startsWith("(")) return "uses a conditional group ((?(…)…)), which is not supported";
  if (after.startsWith("C")) return "uses a PCRE callout ((?C…)), which is not supported";
  if (after.startsWith("P=")) return `${BACKREF} ((?P=name))`;
  if (after.startsWith("P>") || after.startsWith("&") || /^(?:R|[+-]?\d)/.test(after)) {
    return "uses recursion or a subroutine call, which is not supported";
  }
  const named = /^(?:P?<([^>]*)>|'([^']*)')/.exec(after);
  if (named !== null) {
    const name = named[1] ?? named[2] ?? "";
    if (!GROUP_NAME.test(name)) return `has an invalid group name ${JSON.stringify(name)}`;
    return { text: `(?P<${name}>`, next: i + 2 + named[0].length, opens: true };
  }
  const flags = /^([A-Za-z]*)(?:-([A-Za-z]*))?([:)])/.exec(after);
  if (flags !== null) {
    for (const f of `${flags[1]}${flags[2] ?? ""}`) {
      if (FLAGS_OK.has(f)) continue;
      return FLAG_REFUSED[f] ?? `uses the unknown inline flag ${JSON.stringify(f)}`;
    }
    // `(?i)` changes flags without opening a group; `(?i:` opens one.
    return { text: `(?${flags[0]}`, next: i + 2 + flags[0].length, opens: flags[3] === ":" };
  }
  return `uses unsupported group syntax ${JSON.stringify(p.slice(i, i + 4))}`;
}
