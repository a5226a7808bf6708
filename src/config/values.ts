// Valibot schemas that turn one flag/env string into a typed Config value. Each schema's
// issue message is "expected ..."; parse.ts prefixes the flag name and the rejected text.
import { blockPatternProblem } from "../regex/block-pattern.ts";
import { isIP } from "node:net";
import { getCiphers } from "node:tls";
import * as v from "valibot";
import { parseCipherList } from "./cipher-list.ts";
import { isIpv4MappedRange, parseCidrList } from "./cidr.ts";
import { INGRESS_NGINX_LOG_FORMAT, INGRESS_NGINX_LOG_FORMAT_NAME, parseLogFormat } from "../policy/log-format.ts";
import { compileHeaderPattern } from "../regex/header-pattern.ts";
import { MAX_DURATION_MS, parseDuration, parseSize } from "./units.ts";
import type { NamespacedName } from "./types.ts";
import { BUN_MAX_HEADER_SIZE, fitsBun, parseHeaderBuffers } from "./header-buffers.ts";

export type ValueSchema<T> = v.GenericSchema<string, T>;

/** A schema from a converter that returns undefined for text it rejects. */
export function convert<T>(expected: string, fn: (s: string) => T | undefined): ValueSchema<T> {
  return v.pipe(
    v.string(),
    v.rawTransform(({ dataset, addIssue, NEVER }) => {
      const out = fn(dataset.value);
      if (out === undefined) {
        addIssue({ message: `expected ${expected}` });
        return NEVER;
      }
      return out;
    }),
  );
}

/**
 * A schema from a checker that returns the value, or a whole message ("expected ..." or a
 * specific reason) for text it rejects: for values whose problem is more than a shape.
 */
export function check<T>(fn: (s: string) => { readonly value: T } | { readonly message: string }): ValueSchema<T> {
  return v.pipe(
    v.string(),
    v.rawTransform(({ dataset, addIssue, NEVER }) => {
      const out = fn(dataset.value);
      if ("message" in out) {
        addIssue({ message: out.message });
        return NEVER;
      }
      return out.value;
    }),
  );
}

export function integer(min: number, max: number): ValueSchema<number> {
  return convert(`an integer ${min}-${max}`, (s) => {
    if (!/^\d+$/.test(s)) return undefined;
    const n = Number(s);
    return n >= min && n <= max ? n : undefined;
  });
}

export const port = integer(1, 65535);

/** `FROM-TO`, both ports, FROM ≤ TO, at most 4096 ports (each is a listening socket per process). */
export const portRange = convert("a port range FROM-TO such as 10080-10179 (at most 4096 ports)", (s) => {
  const m = /^(\d{1,5})-(\d{1,5})$/.exec(s.trim());
  if (!m) return undefined;
  const from = Number(m[1]);
  const to = Number(m[2]);
  return from >= 1 && to <= 65535 && from <= to && to - from < 4096 ? Object.freeze({ from, to }) : undefined;
});

/** The statuses ingress-nginx's ConfigMap `http-redirect-code` accepts (template/configmap.go). */
export type RedirectCode = 301 | 302 | 307 | 308;
export const redirectCode = convert("301, 302, 307 or 308", (s): RedirectCode | undefined =>
  s === "301" || s === "302" || s === "307" || s === "308" ? (Number(s) as RedirectCode) : undefined,
);

// Only the two words the message names (any case): a flag that also took 1, yes or on would
// accept spellings its own error text never mentions, and "no" read as false hides typos.
export const bool = convert("true or false", (s) => {
  const l = s.toLowerCase();
  return l === "true" ? true : l === "false" ? false : undefined;
});

export function oneOf<const T extends string>(choices: readonly T[]): ValueSchema<T> {
  return convert(choices.join(", ").replace(/, ([^,]*)$/, " or $1"), (s) =>
    (choices as readonly string[]).includes(s) ? (s as T) : undefined,
  );
}

// MAX_DURATION_MS: a timer set further fires at once (Bun clamps setTimeout), so the message
// names the limit.
export function duration(minMs: number): ValueSchema<number> {
  return convert(`a duration like 500ms, 5s, 2m or 1h (${minMs > 0 ? "above zero, " : ""}at most 596h)`, (s) => {
    const ms = parseDuration(s);
    return ms !== null && ms >= minMs && ms <= MAX_DURATION_MS ? ms : undefined;
  });
}

/** Bytes; 0 means unlimited (null). */
export const bodySize = convert("a size like 1048576, 512k, 10m or 1g (0: unlimited)", (s) => {
  const n = parseSize(s);
  return n === null ? undefined : n === 0 ? null : n;
});

/** `<number> <size>` (nginx's large_client_header_buffers), the head at most BUN_MAX_HEADER_SIZE. */
export const headerBuffers = convert(`a number and a size like "4 8k" (size from 512 bytes, number × size at most ${BUN_MAX_HEADER_SIZE / 1024}k)`, (s) => {
  const b = parseHeaderBuffers(s);
  return b !== null && fitsBun(b) ? b : undefined;
});

/** Bytes per second; 0 means no minimum (null). */
export const byteRate = convert("a rate in bytes per second like 500, 1k or 64k (0: no minimum)", (s) => {
  const n = parseSize(s);
  return n === null ? undefined : n === 0 ? null : n;
});

/** Bytes; 0 is zero (nothing), not unlimited. */
export const byteSize = convert("a size like 65536, 512k, 1m or 64m (0: none)", (s) => parseSize(s) ?? undefined);
export const responseBufferSize = convert("a size of at least 1 byte like 4096, 4k or 16k", (s) => {
  const n = parseSize(s);
  return n !== null && n >= 1 ? n : undefined;
});

/** A header block size: 1 KiB to 16 MiB. */
export const headerSize = convert("a size from 1k to 16m like 16384, 32k or 1m", (s) => {
  const n = parseSize(s);
  return n !== null && n >= 1024 && n <= 16 * 1024 * 1024 ? n : undefined;
});

// RFC 9110 §8.3.1 media-type without parameters (type "/" subtype, tokens), or `*` (nginx's
// gzip_types any). Lowercased: nginx compares the response's type lowercased.
const MEDIA_TYPE = /^[!#$%&'*+.^_`|~0-9a-z-]+\/[!#$%&'*+.^_`|~0-9a-z-]+$/;
export const mediaTypeList = convert("media types such as text/plain,application/json separated by commas (or *)", (s) => {
  const list = s.split(",").map((t) => t.trim().toLowerCase()).filter((t) => t !== "");
  if (list.length === 0 || list.length > 1024 || !list.every((t) => t === "*" || MEDIA_TYPE.test(t))) return undefined;
  return Object.freeze([...new Set(list)]);
});

/** A User-Agent pattern for --gzip-disable: msie6, or a regular expression the linear-time engine runs. */
export const userAgentPattern: ValueSchema<string | null> = check<string | null>((s) => {
  const t = s.trim();
  if (t === "") return { message: "expected a regular expression or msie6" };
  if (t === "msie6") return { value: t };
  const r = compileHeaderPattern(t, true);
  return r.ok ? { value: t } : { message: `expected a regular expression Portico can run: it ${r.reason}` };
});

/** An nginx log_format as ingress-nginx's log-format-upstream writes it (policy/log-format.ts), kept as written. */
export const logFormatText: ValueSchema<string | null> = check<string | null>((s) => {
  // A name for ingress-nginx's default format (a format of that text alone would log a constant line).
  if (s === INGRESS_NGINX_LOG_FORMAT_NAME) return { value: INGRESS_NGINX_LOG_FORMAT };
  const r = parseLogFormat(s);
  return r.ok ? { value: s } : { message: `expected an nginx log format: ${r.why}` };
});

export const nonEmpty = convert("a non-empty value", (s) => (s.trim() === "" ? undefined : s.trim()));
/** Text checked by its reader, not here: trimmed, and null (unset) when empty. */
export const optionalText = convert("text", (s): string | null => (s.trim() === "" ? null : s.trim()));

// RFC 1123 label / DNS subdomain, as Kubernetes validates namespaces and object names.
const LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
export function isDnsLabel(s: string): boolean {
  return s.length <= 63 && LABEL.test(s);
}
export function isDnsSubdomain(s: string): boolean {
  return s.length > 0 && s.length <= 253 && s.split(".").every(isDnsLabel);
}

export const dnsLabel = convert("a lowercase RFC 1123 label", (s) => (isDnsLabel(s) ? s : undefined));
export const dnsSubdomain = convert("a lowercase RFC 1123 name", (s) => (isDnsSubdomain(s) ? s : undefined));

function splitNsName(s: string): NamespacedName | undefined {
  const parts = s.split("/");
  if (parts.length !== 2) return undefined;
  const [namespace, name] = parts as [string, string];
  return isDnsLabel(namespace) && isDnsSubdomain(name) ? { namespace, name } : undefined;
}

export const nsName = convert("NAMESPACE/NAME", (s) => {
  const r = splitNsName(s);
  return r && Object.freeze(r);
});

/** Comma-separated HTTP statuses within [min, max], blanks around them allowed; sorted, without repeats. */
export function statusList(min: number, max: number): ValueSchema<readonly number[]> {
  return convert(`status codes ${min}-${max} separated by commas, like 404,503`, (s) => {
    const out = new Set<number>();
    for (const part of s.split(",")) {
      const t = part.trim();
      if (t === "") continue;
      if (!/^\d{3}$/.test(t)) return undefined;
      const n = Number(t);
      if (n < min || n > max) return undefined;
      out.add(n);
    }
    return Object.freeze([...out].sort((a, b) => a - b));
  });
}

/** `NS/NAME:PORT` where PORT is a number or a port name (an IANA service name, RFC 6335 §5.1). */
export const nsNamePort = convert("NAMESPACE/NAME:PORT (a port number or name)", (s) => {
  const colon = s.lastIndexOf(":");
  if (colon < 0) return undefined;
  const base = splitNsName(s.slice(0, colon));
  const p = s.slice(colon + 1);
  if (!base) return undefined;
  if (/^\d+$/.test(p)) {
    const n = Number(p);
    return n >= 1 && n <= 65535 ? Object.freeze({ ...base, port: n }) : undefined;
  }
  return p.length <= 15 && isDnsLabel(p) && /[a-z]/.test(p) ? Object.freeze({ ...base, port: p }) : undefined;
});

/**
 * A listen address: an IP literal, or `localhost`. Any other name would be resolved by Bun at
 * listen time, and a name that does not resolve fails there with an unrelated errno
 * ("ENOTCONN ... listen" for `notanip`, measured on 1.4.5), after the start-up has begun.
 */
export const listenAddress = convert("an IP address of this host (0.0.0.0, ::, 127.0.0.1, ...) or localhost", (s) =>
  isIP(s) !== 0 || s === "localhost" ? s : undefined,
);

function isHostName(s: string): boolean {
  return s.length <= 253 && s.split(".").every((l) => /^[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?$/.test(l) && l.length <= 63);
}

/** One or more comma-separated IPs or host names, kept as written (ingress-nginx accepts a list). */
export const addressList = convert("IP addresses or host names separated by commas", (s) => {
  const items = s.split(",").map((x) => x.trim());
  return items.every((x) => isIP(x) !== 0 || isHostName(x)) ? items.join(",") : undefined;
});

/** IPv4/IPv6 CIDRs separated by commas, read by the same parser that matches them (cidr.ts). */
export function cidrList(example: string): ValueSchema<readonly string[]> {
  return v.pipe(
    v.string(),
    v.rawTransform(({ dataset, addIssue, NEVER }) => {
      const r = parseCidrList(dataset.value);
      if (r.ok) return r.list;
      addIssue({ message: `expected IPv4/IPv6 CIDRs separated by commas (e.g. ${example}); ${r.error}` });
      return NEVER;
    }),
  );
}

/**
 * cidrList for client source ranges, which also refuses IPv4-mapped IPv6 ranges: nginx's
 * allow/deny match them against no client (annotations/access.ts says why).
 */
export function sourceRangeList(example: string): ValueSchema<readonly string[]> {
  return v.pipe(
    cidrList(example),
    v.rawCheck(({ dataset, addIssue }) => {
      const mapped = dataset.typed ? dataset.value.find(isIpv4MappedRange) : undefined;
      if (mapped !== undefined) addIssue({ message: `${mapped} is an IPv4-mapped IPv6 range, which nginx matches against no client; write it as IPv4` });
    }),
  );
}

let known: ReadonlySet<string> | null = null;
/**
 * The TLS 1.2 suite names BoringSSL knows (Bun returns them lowercased), read once: the
 * listener's settings are checked against it (tls/sni.ts validateTlsSettings).
 */
export const knownCiphers = (): ReadonlySet<string> => (known ??= new Set(getCiphers()));

/**
 * An OpenSSL cipher string (`HIGH:!aNULL:!MD5`, or names separated by colons), evaluated as
 * OpenSSL 3 reads it over the TLS 1.2 suites Portico serves (config/cipher-list.ts): the value is
 * the resulting list of names, in the server's order, all of which BoringSSL has
 * (config/cipher-list.test.ts checks them against getCiphers()). A string nginx would refuse, or
 * one that leaves no suite, is refused.
 */
export const cipherList = check<string>((s) => {
  const parsed = parseCipherList(s);
  return "message" in parsed ? { message: parsed.message } : { value: parsed.value };
});

// Group names Bun 1.4.5's BoringSSL accepts as `ecdhCurve` (measured with Bun.serve and
// node:tls createSecureContext; it throws UNSUPPORTED_ELLIPTIC_CURVE on any other name). nginx's
// ssl_ecdh_curve takes the same colon-separated form, and `auto` for the library's defaults.
const ECDH_CURVES = new Set(["P-256", "P-384", "P-521", "X25519", "prime256v1", "secp384r1", "secp521r1", "X25519MLKEM768"]);

/** `auto`, or key-exchange group names separated by colons, each one BoringSSL knows. */
export const ecdhCurveList = check<string>((s) => {
  if (s === "auto") return { value: s };
  for (const name of s.split(":")) {
    if (!ECDH_CURVES.has(name)) return { message: `unknown key-exchange group ${JSON.stringify(name)}: expected auto or names among ${[...ECDH_CURVES].join(", ")} separated by colons` };
  }
  return { value: s };
});

/**
 * A ConfigMap default of proxy-redirect-from/-to (`words` 1) or proxy-cookie-domain/-path (2):
 * `off`, or what nginx's proxy_redirect / proxy_cookie_* would load and Portico can run. The
 * template writes the ConfigMap value unchecked (config.go Backend, nginx.tmpl), so nginx's own
 * reload fails on a value it cannot load and keeps the last good configuration; here such a value
 * is unreadable and the key keeps its last good value (docs/design.md "ingress-nginx's
 * ConfigMap"). No `$` variables (Portico has none), and a `~` pattern must compile on the
 * linear-time engine, as the annotations require (annotations/proxy-rewrite.ts).
 */
export function proxyRewriteValue(words: 1 | 2, expected: string): ValueSchema<string> {
  return check<string>((raw) => {
    const s = raw.trim();
    if (s === "off" || (words === 1 && s === "default")) return { value: s };
    const w = s.split(/\s+/).filter((x) => x !== "");
    if (w.length !== words) return { message: `expected ${expected}` };
    if (w.some((x) => x.includes("$") || /[\u0000-\u001f\u007f"';{}]/.test(x))) return { message: "nginx variables, quotes, semicolons, braces and control characters cannot be used" };
    if (w[0]!.startsWith("~")) {
      const caseless = w[0]!.startsWith("~*");
      const c = compileHeaderPattern(`${caseless ? "(?i)" : ""}${w[0]!.slice(caseless ? 2 : 1)}`);
      if (!c.ok) return { message: `the regular expression ${c.reason}` };
    }
    return { value: w.join(" ") };
  });
}

/** IngressClass spec.controller: a domain-prefixed path (networking/v1 validation). */
export const controllerName = convert("a domain-prefixed path like example.com/ingress-controller", (s) => {
  const slash = s.indexOf("/");
  if (slash <= 0 || s.length > 250) return undefined;
  return isDnsSubdomain(s.slice(0, slash)) && /^[A-Za-z0-9._~/-]+$/.test(s.slice(slash + 1)) ? s : undefined;
});

/**
 * Path prefixes separated by commas, as ingress-nginx reads no-tls-redirect-locations
 * (template.go isLocationInLocationList: split on ",", trimmed, empty entries skipped); "" is
 * none. Each is printable ASCII without spaces: it is compared with rule paths as written.
 */
export const locationList = convert("path prefixes separated by commas, such as /.well-known/acme-challenge", (s): readonly string[] | undefined => {
  const list = s.split(",").map((x) => x.trim()).filter((x) => x !== "");
  return list.every((x) => /^[\x21-\x7e]+$/.test(x)) ? Object.freeze(list) : undefined;
});

/**
 * Header names separated by commas, as ingress-nginx reads global-allowed-response-headers
 * (template/configmap.go: split on ",", trimmed, each checked with customheaders.ValidHeader
 * `^[a-zA-Z\d\-_]+$`); "" is none. A name it would drop makes the whole value unreadable here.
 */
export const headerNameList = convert("header names (letters, digits, - and _) separated by commas", (s): readonly string[] | undefined => {
  const list = s.split(",").map((x) => x.trim()).filter((x) => x !== "");
  return list.every((x) => /^[a-zA-Z\d_-]{1,256}$/.test(x)) ? Object.freeze(list) : undefined;
});

/**
 * block-user-agents / block-referers as ingress-nginx reads them (template/configmap.go
 * splitAndTrimSpace on ","; nginx.tmpl writes each as a key of a `map`): an entry starting with
 * `~` or `~*` is a regular expression (case-sensitive, any case), which must compile on the
 * linear-time engine (regex/header-pattern.ts); any other is an exact value. "" is none.
 */
export const blockPatternList = check<readonly string[]>((s) => {
  const list = s.split(",").map((x) => x.trim()).filter((x) => x !== "");
  for (const entry of list) {
    const why = blockPatternProblem(entry);
    if (why !== null) return { message: `${JSON.stringify(entry)}: ${why}` };
  }
  return { value: Object.freeze(list) };
});
