// ingress-nginx's ConfigMap, read for the migration report: each key that changes traffic is
// honoured by a Portico flag (the report names the flag and its value), is what Portico does
// anyway, or is not honoured; and a few defaults of ingress-nginx that differ from Portico's
// are reported even when the key is absent. Behaviour and defaults as ingress-nginx v1.15.1 has
// them (internal/ingress/controller/config/config.go, the template and
// docs/user-guide/nginx-configuration/configmap.md; where they disagree, the code). Pure: the
// caller reads the object. This is the one table of key mappings: `portico migrate` prints it,
// and serving with --nginx-configmap applies the `flags` it names (runtime/nginx-settings.ts,
// docs/design.md "ingress-nginx's ConfigMap").
import * as v from "valibot";
import { BuffersNumber, ResponseBufferSize } from "../annotations/buffering.ts";
import { NGINX_HEADER_NAME } from "../annotations/external-auth.ts";
import { parseCidrList } from "../config/cidr.ts";
import { parseCipherList } from "../config/cipher-list.ts";
import { INGRESS_NGINX_LOG_FORMAT_NAME, parseLogFormat } from "../policy/log-format.ts";
import { BUN_MAX_HEADER_SIZE, clampHeaderBuffers, fitsBun, formatHeaderBuffers, parseHeaderBuffers } from "../config/header-buffers.ts";

export type ConfigMapKeyStatus =
  /** Run Portico with `flags` and it does the same. */
  | "flag"
  /** Portico does the same with no flag. */
  | "same"
  /** No Portico equivalent: traffic changes. */
  | "not-honoured"
  /** Read by the report itself (the snippet gates), no effect of its own. */
  | "read";

export interface ConfigMapKeyReport {
  readonly key: string;
  /** As written; null when absent (ingress-nginx's default applies and differs from Portico's). */
  readonly value: string | null;
  readonly status: ConfigMapKeyStatus;
  readonly text: string;
  /** `--name=value` (or a bare `--name`): serving applies exactly these, validated as the flag is. */
  readonly flags: readonly string[];
  /** The value is one ingress-nginx itself would not read: serving keeps the key's last good value. */
  readonly invalid?: true;
  /** Applied, but bounded to what Portico can serve (`text` says how): serving warns. */
  readonly bounded?: true;
}

export interface ConfigMapReport {
  /** `namespace/name`. */
  readonly configMap: string;
  readonly keys: readonly ConfigMapKeyReport[];
  /** Every flag named above, once, in key order: what to run Portico with. */
  readonly flags: readonly string[];
  readonly notHonoured: number;
}

/**
 * What ingress-nginx does with snippet annotations under this ConfigMap: every snippet is a
 * Critical-risk annotation (docs/user-guide/nginx-configuration/annotations-risk.md), an
 * annotation above annotations-risk-level (High by default since v1.12) rejects the Ingress, and
 * allow-snippet-annotations (false by default since v1.9) decides whether an accepted one runs.
 */
export type SnippetGate =
  /** allow-snippet-annotations true and annotations-risk-level Critical: the text runs. */
  | "executed"
  /** Risk level Critical, snippets not allowed: ingress-nginx removes them silently. */
  | "dropped"
  /** Risk level below Critical (the default, High): the whole Ingress is rejected. */
  | "rejected";

const ConfigMapSchema = v.object({
  metadata: v.object({ name: v.string(), namespace: v.optional(v.string()) }),
  data: v.optional(v.record(v.string(), v.string())),
});

export type NginxConfigMap = { readonly name: string; readonly namespace: string; readonly data: Readonly<Record<string, string>> };

/** A raw object as an ingress-nginx ConfigMap, or why it is not one. */
export function parseNginxConfigMap(raw: unknown): { ok: true; configMap: NginxConfigMap } | { ok: false; why: string } {
  const r = v.safeParse(ConfigMapSchema, raw);
  if (!r.success) return { ok: false, why: `not a ConfigMap with string data: ${r.issues[0]?.message ?? "invalid"}` };
  const m = r.output.metadata;
  return { ok: true, configMap: { name: m.name, namespace: m.namespace ?? "default", data: r.output.data ?? {} } };
}

// Go's strconv.ParseBool, as ingress-nginx's ConfigMap decoder reads booleans.
const TRUE = new Set(["1", "t", "T", "TRUE", "true", "True"]);
const FALSE = new Set(["0", "f", "F", "FALSE", "false", "False"]);
const bool = (s: string | undefined, dflt: boolean): boolean | null => (s === undefined ? dflt : TRUE.has(s) ? true : FALSE.has(s) ? false : null);
const seconds = (s: string): number | null => (/^\d{1,9}$/.test(s.trim()) ? Number(s.trim()) : null);
const SIZE = /^\d{1,15}[kKmMgG]?$/;

export function snippetGate(cm: NginxConfigMap | null): SnippetGate {
  if (cm === null) return "executed";
  const risk = (cm.data["annotations-risk-level"] ?? "High").trim();
  if (risk !== "Critical") return "rejected";
  return bool(cm.data["allow-snippet-annotations"], false) === true ? "executed" : "dropped";
}

type Judge = (value: string, data: Readonly<Record<string, string>>) => Omit<ConfigMapKeyReport, "key" | "value">;

const flag = (text: string, ...flags: string[]) => ({ status: "flag" as const, text, flags });
const same = (text: string) => ({ status: "same" as const, text, flags: [] });
const not = (text: string) => ({ status: "not-honoured" as const, text, flags: [] });
const bad = (what: string) => ({ ...not(`ingress-nginx would not read this value either (${what}) and would keep its default; check it`), invalid: true as const });

/** The trusted-proxy flag that matches ingress-nginx's use of X-Forwarded-For (§3.1, §4.2). */
function trusted(data: Readonly<Record<string, string>>): string {
  const cidrs = (data["proxy-real-ip-cidr"] ?? "0.0.0.0/0").split(",").map((c) => c.trim()).filter((c) => c !== "");
  // ingress-nginx's default proxy-real-ip-cidr is 0.0.0.0/0: every peer is believed.
  const all = cidrs.includes("0.0.0.0/0") ? [...cidrs, "::/0"] : cidrs;
  return `--trusted-proxies=${all.join(",")}`;
}

/**
 * The load balancers whose PROXY header's source is believed, as ingress-nginx's template
 * uses proxy-real-ip-cidr with use-proxy-protocol: one `set_real_ip_from` per entry
 * (configmap.go splits the value on commas and trims; absent, 0.0.0.0/0), matched by nginx's
 * realip module against the connection's own peer, whether real_ip_header is proxy_protocol or
 * (with use-forwarded-headers) the header built from `geo $proxy_protocol_addr`. Taken as
 * written: 0.0.0.0/0 covers no IPv6 peer there either, and an empty value trusts no peer.
 * Carried on use-proxy-protocol's own flags so that a value the flag refuses drops the PROXY
 * listener (nginx would refuse the configuration) instead of leaving every peer believed.
 */
function proxyProtocolTrusted(data: Readonly<Record<string, string>>): string {
  return `--proxy-protocol-trusted=${commaList(data["proxy-real-ip-cidr"] ?? "0.0.0.0/0")}`;
}

/** compute-full-forwarded-for as ingress-nginx reads it: only with use-forwarded-headers (nginx.tmpl), default false (config.go). */
const fullForwardedFor = (data: Readonly<Record<string, string>>): boolean =>
  bool(data["use-forwarded-headers"], false) === true && bool(data["compute-full-forwarded-for"], false) === true;

/**
 * The flags of ingress-nginx's forwarded-header keys together, so use-forwarded-headers,
 * enable-real-ip and compute-full-forwarded-for give the same values whichever is applied last:
 * the trusted ranges; what they are believed on (enable-real-ip alone: the address, nginx.tmpl
 * real_ip_header; use-forwarded-headers: also -Proto, -Host, -Port, lua_ingress.lua rewrite());
 * and X-Forwarded-For upstream ($full_x_forwarded_for or $remote_addr, nginx.tmpl).
 */
function forwarded(data: Readonly<Record<string, string>>): string[] {
  const all = bool(data["use-forwarded-headers"], false) === true;
  return [trusted(data), `--trusted-proxy-headers=${all ? "all" : "address"}`, `--compute-full-forwarded-for=${fullForwardedFor(data)}`];
}

/** A comma list without spaces, as the flags read it (each item is checked by the flag's own schema). */
const commaList = (val: string): string => val.split(",").map((c) => c.trim()).filter((c) => c !== "").join(",");

/** A status key whose value the flag takes as it is (400-599, checked by the flag's schema); 503 is both defaults. */
function statusFlag(val: string, text: string, name: string): Omit<ConfigMapKeyReport, "key" | "value"> {
  const s = val.trim();
  if (!/^\d{3}$/.test(s)) return bad("a status code");
  return s === "503" ? same("503, Portico's default too") : flag(text, `--${name}=${s}`);
}

/** A global-auth-* key other than the URL: its flag, checked by the compiler as the auth-url annotation of that name. */
function globalKey(val: string, text: string, name: string): Omit<ConfigMapKeyReport, "key" | "value"> {
  return val.trim() === "" ? same("empty: the default") : flag(`${text} (read with global-auth-url)`, `--${name}=${val.trim()}`);
}

/** disable-access-log and disable-http-access-log: either turns off the http block's access log (nginx.tmpl). */
const accessLogOff: Judge = (val) => (bool(val, false) === true ? flag("no access log", "--access-log=off") : same("access log on, as Portico"));

/**
 * A size in KiB (limit-rate, limit-rate-after: an integer, nginx.tmpl writes `<n>k`): the flag
 * of the same name in KiB above 0, Portico's default at 0 or below.
 */
function kibJudge(name: string, unit: string, text: string, zero: string): Judge {
  return (val, data) => {
    const n = val.trim();
    if (!/^[+-]?\d{1,15}$/.test(n)) return bad(`an integer (${unit})`);
    if (Number(n) <= 0) return same(zero);
    // ngx_http_upstream_send_response sets r->limit_rate = 0 for an unbuffered answer: with the
    // ConfigMap's proxy-buffering off (its default), only Ingresses that turn it on are paced,
    // and an answer the pod marks X-Accel-Buffering: yes, which nginx then buffers
    // (ngx_http_upstream_process_buffering; annotations/limit-rate.ts says the same).
    const off = (data["proxy-buffering"] ?? "off").trim().toLowerCase() !== "on";
    const note = off ? "; no effect while proxy-buffering is off, save on an answer the pod marks `X-Accel-Buffering: yes` (as in ingress-nginx, limit-rate paces only buffered answers: set proxy-buffering: on)" : "";
    return flag(`${text}${note}`, `--${name}=${Number(n)}k`);
  };
}

/**
 * large-client-header-buffers (`4 8k`, config.go; nginx.tmpl writes it as is into
 * large_client_header_buffers, so a value nginx refuses fails the reload and the last one stays):
 * the same flag, bounded by the parser limit Portico runs Bun with (config/header-buffers.ts).
 */
const headerBuffersJudge: Judge = (val) => {
  const b = parseHeaderBuffers(val);
  if (b === null) return bad("a number and a size such as 4 8k");
  const text = "the longest request line or header line, and the largest request head";
  if (fitsBun(b)) return b.number === 4 && b.size === 8192 ? same(`4 8k, Portico's default too: ${text}`) : flag(text, `--large-client-header-buffers=${formatHeaderBuffers(b)}`);
  const c = formatHeaderBuffers(clampHeaderBuffers(b));
  return { ...flag(`${text}; bounded to ${c}: Portico's parser takes a head of at most ${BUN_MAX_HEADER_SIZE / 1024}k`, `--large-client-header-buffers=${c}`), bounded: true as const };
};

const KEYS: Readonly<Record<string, Judge>> = {
  "large-client-header-buffers": headerBuffersJudge,
  "proxy-body-size": (val) =>
    SIZE.test(val.trim()) ? flag("largest request body (0: unlimited in both)", `--max-body-size=${val.trim().toLowerCase()}`) : bad("a size such as 8m"),
  "proxy-connect-timeout": (val) => {
    const s = seconds(val);
    if (s === null) return bad("whole seconds");
    return s === 5 ? same("5 s, Portico's --connect-timeout default too") : flag("upstream connect deadline", `--connect-timeout=${s}s`);
  },
  // nginx's proxy_read_timeout is the time between two reads from the pod: the wait for the
  // response head, every gap in a body and a quiet WebSocket (ngx_http_upstream.c; docs/design.md
  // "Upstream timeouts"), so the key sets both of Portico's flags, 60 s included (Portico's own
  // idle default is 5 min).
  "proxy-read-timeout": (val) => {
    const s = seconds(val);
    if (s === null) return bad("whole seconds");
    return flag("deadline for the response headers and idle time between two reads of a body or in a WebSocket", `--response-timeout=${s}s`, `--stream-idle-timeout=${s}s`);
  },
  "proxy-send-timeout": () => not("Portico has no deadline between two writes to the pod"),
  "client-body-timeout": (val) => {
    const s = seconds(val);
    return s === null ? bad("whole seconds") : flag("longest wait for the next bytes of a request body", `--client-body-timeout=${s}s`);
  },
  "client-header-timeout": (val) => {
    const s = seconds(val);
    // Enforced on the HTTPS listener's HTTP/1.1 side only (docs/design.md, "HTTP/2 and gRPC").
    return s === null ? bad("whole seconds") : flag("longest time to receive a request head (HTTP/1.1 over TLS only)", `--client-header-timeout=${s}s`);
  },
  hsts: (val) => {
    const b = bool(val, true);
    return b === null ? bad("a boolean") : b ? same("Strict-Transport-Security on HTTPS answers (--hsts, default true)") : flag("no Strict-Transport-Security", "--hsts=false");
  },
  "hsts-max-age": (val) => {
    const s = seconds(val);
    return s === null ? bad("whole seconds") : s === 31536000 ? same("the default max-age, 31536000") : flag("max-age of Strict-Transport-Security", `--hsts-max-age=${s}`);
  },
  "hsts-include-subdomains": (val) => {
    const b = bool(val, true);
    return b === null ? bad("a boolean") : b ? flag("includeSubDomains in Strict-Transport-Security", "--hsts-include-subdomains=true") : same("no includeSubDomains, Portico's default");
  },
  "hsts-preload": (val) => {
    const b = bool(val, false);
    return b === null ? bad("a boolean") : b ? flag("preload in Strict-Transport-Security", "--hsts-preload=true") : same("no preload, Portico's default");
  },
  // nginx.tmpl: `ssl_protocols {{ $cfg.SSLProtocols }};` (config.go default "TLSv1.2 TLSv1.3"):
  // the versions nginx's ssl_protocols names; any other word fails nginx's config test, so the
  // last good configuration stays.
  "ssl-protocols": (val) => {
    const p = new Set(val.split(/\s+/).filter((x) => x !== ""));
    if (p.size === 0 || [...p].some((x) => !["SSLv2", "SSLv3", "TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3"].includes(x))) return bad("versions among SSLv2 SSLv3 TLSv1 TLSv1.1 TLSv1.2 TLSv1.3");
    if (["SSLv2", "SSLv3", "TLSv1", "TLSv1.1"].some((x) => p.has(x))) return not("Portico accepts TLS 1.2 and 1.3 only (--tls-min-version, --tls-max-version): clients of the older versions are refused");
    if (!p.has("TLSv1.3")) return flag("TLS 1.2 only", "--tls-max-version=1.2");
    if (!p.has("TLSv1.2")) return flag("TLS 1.3 only", "--tls-min-version=1.3");
    return same("TLS 1.2 and 1.3, Portico's default");
  },
  // nginx.tmpl: `ssl_ecdh_curve {{ $cfg.SSLECDHCurve }};`, config.go default "auto".
  "ssl-ecdh-curve": (val) =>
    val.trim() === "auto" ? same("the TLS library's default key-exchange groups, as Portico") : flag("key-exchange groups offered (names Portico checks as --tls-ecdh-curve does)", `--tls-ecdh-curve=${val.trim()}`),
  // nginx.tmpl: `ssl_ciphers '{{ $cfg.SSLCiphers }}';`, an OpenSSL cipher string, which
  // --tls-ciphers reads with OpenSSL 3's rules over the suites Portico serves (config/cipher-list.ts).
  "ssl-ciphers": (val) => {
    const r = parseCipherList(val.trim());
    if ("message" in r) return r.syntax ? bad(`OpenSSL refuses it: ${r.message}`) : { ...not(`${r.message}; the listener keeps its last good list`), invalid: true as const };
    const skipped = r.unknown.length === 0 ? "" : `; ${r.unknown.join(", ")} select${r.unknown.length === 1 ? "s" : ""} nothing (OpenSSL skips names it lacks)`;
    return flag(`TLS 1.2 cipher suites, the string read as OpenSSL 3 reads it, in this order: ${r.value.split(":").join(", ")}${skipped}`, `--tls-ciphers=${val.trim()}`);
  },
  "use-forwarded-headers": (val, data) => {
    const b = bool(val, false);
    if (b === null) return bad("a boolean");
    return b
      ? flag(
          `the client address (X-Forwarded-For, right-most untrusted entry), X-Forwarded-Proto, the first X-Forwarded-Host (sent as Host and X-Forwarded-Host) and X-Forwarded-Port are believed from these peers (proxy-real-ip-cidr); X-Forwarded-For upstream is ${fullForwardedFor(data) ? "theirs with the peer appended (compute-full-forwarded-for)" : "the client address alone"}`,
          ...forwarded(data),
        )
      : same("client headers are not believed, as Portico without --trusted-proxies");
  },
  "enable-real-ip": (val, data) => {
    const b = bool(val, false);
    if (b === null) return bad("a boolean");
    if (!b) return same("off, as Portico without --trusted-proxies");
    // nginx.tmpl: with use-proxy-protocol and not use-forwarded-headers, real_ip_header is
    // proxy_protocol: the PROXY header's address, never X-Forwarded-For.
    if (bool(data["use-proxy-protocol"], false) === true && bool(data["use-forwarded-headers"], false) !== true) {
      return same("with use-proxy-protocol the client address is the PROXY header's (real_ip_header proxy_protocol), as Portico with --use-proxy-protocol");
    }
    if (bool(data["use-forwarded-headers"], false) === true) return flag("the client address comes from X-Forwarded-For sent by these peers (use-forwarded-headers also believes the other forwarded headers)", ...forwarded(data));
    return flag("the client address comes from X-Forwarded-For sent by these peers and is sent upstream as X-Forwarded-For and X-Real-IP; their X-Forwarded-Proto, -Host and -Port are not believed", ...forwarded(data));
  },
  "proxy-real-ip-cidr": (_val, data) => {
    const pp = bool(data["use-proxy-protocol"], false) === true;
    const fwd = bool(data["use-forwarded-headers"], false) === true || bool(data["enable-real-ip"], false) === true;
    if (pp && fwd) return same("read with use-proxy-protocol (the load balancers whose PROXY header is believed) and with use-forwarded-headers or enable-real-ip (their flags name these ranges)");
    if (pp) return same("read with use-proxy-protocol: only a peer in these ranges has its PROXY header's source believed (its flag names them)");
    return fwd ? same("read with use-forwarded-headers or enable-real-ip (their flag names these ranges)") : same("no effect without use-proxy-protocol, use-forwarded-headers or enable-real-ip");
  },
  "forwarded-for-header": (val) => (val.trim().toLowerCase() === "x-forwarded-for" ? same("X-Forwarded-For, as Portico") : not("Portico reads the client address from X-Forwarded-For only")),
  // nginx.tmpl: $full_x_forwarded_for only `if and $cfg.UseForwardedHeaders $cfg.ComputeFullForwardedFor`.
  "compute-full-forwarded-for": (val, data) => {
    const b = bool(val, false);
    if (b === null) return bad("a boolean");
    if (bool(data["use-forwarded-headers"], false) !== true) return same("no effect without use-forwarded-headers: X-Forwarded-For upstream is the client address");
    return b
      ? flag("X-Forwarded-For upstream is the one the trusted peer sent with the peer appended", "--compute-full-forwarded-for=true")
      : flag("X-Forwarded-For upstream is the client address alone", "--compute-full-forwarded-for=false");
  },
  "use-proxy-protocol": (val, data) => {
    const b = bool(val, false);
    if (b === null) return bad("a boolean");
    if (!b) return same("off, as Portico");
    // nginx refuses a set_real_ip_from that is no address or range: this key is then not
    // applied (no PROXY header believed), never applied with every peer trusted.
    if (!parseCidrList(commaList(data["proxy-real-ip-cidr"] ?? "0.0.0.0/0")).ok) return bad("proxy-real-ip-cidr, the load balancers it believes, is no list of IP ranges");
    const fwd = bool(data["use-forwarded-headers"], false) === true;
    return flag(
      `every connection on the HTTP and HTTPS ports must open with a PROXY header (v1 or v2; without one it is closed); its source is the client address${fwd ? " (or the X-Forwarded-For it sends when that source is in proxy-real-ip-cidr too)" : ""} when the connection's peer (the load balancer) is in proxy-real-ip-cidr, otherwise the peer is; its destination port is X-Forwarded-Port, and port 443 there makes X-Forwarded-Proto https; read at start (a change needs a restart)`,
      "--use-proxy-protocol",
      proxyProtocolTrusted(data),
    );
  },
  // configmap.go: time.ParseDuration, else the default (5s) with a warning.
  "proxy-protocol-header-timeout": (val) => {
    const s = val.trim();
    if (!/^[0-9]{1,9}(?:ms|s|m|h)$/.test(s)) return bad("a duration such as 5s");
    return s === "5s" ? same("5s, Portico's default (--proxy-protocol-header-timeout)") : flag("longest wait for a connection's PROXY header (with use-proxy-protocol)", `--proxy-protocol-header-timeout=${s}`);
  },
  // configmap.go: Atoi, then one of 301, 302, 307, 308 (anything else keeps 308 with a warning).
  "http-redirect-code": (val) => {
    const c = val.trim();
    if (c === "308") return same("308, Portico's default (--http-redirect-code)");
    return ["301", "302", "307"].includes(c)
      ? flag("status of the redirects to HTTPS and from the www name", `--http-redirect-code=${c}`)
      : bad("301, 302, 307 or 308");
  },
  "ssl-redirect": (val) => {
    const b = bool(val, true);
    return b === null ? bad("a boolean") : b ? same("on for TLS hosts, as Portico") : flag("no redirect to HTTPS on Ingresses without their own ssl-redirect", "--ssl-redirect=false");
  },
  "force-ssl-redirect": (val) => {
    const b = bool(val, false);
    return b === null ? bad("a boolean") : b ? flag("every host redirected to HTTPS on Ingresses without their own force-ssl-redirect", "--force-ssl-redirect=true") : same("off, as Portico");
  },
  "use-port-in-redirects": (val) => {
    const b = bool(val, false);
    return b === null ? bad("a boolean") : b ? flag("the port in the redirects Portico makes, on Ingresses without their own use-port-in-redirects", "--use-port-in-redirects=true") : same("no port in redirects, as Portico");
  },
  "preserve-trailing-slash": (val) => {
    const b = bool(val, false);
    return b === null ? bad("a boolean") : b ? flag("the HTTPS redirect keeps a trailing /, on Ingresses without their own preserve-trailing-slash", "--preserve-trailing-slash=true") : same("the HTTPS redirect cuts one trailing /, as Portico");
  },
  // config.go ProxySSLLocationOnly (default false); controller.go createServers copies the
  // first proxy-ssl-* with a CA into the server block unless it is true.
  "proxy-ssl-location-only": (val) => {
    const b = bool(val, false);
    return b === null ? bad("a boolean") : b ? flag("proxy-ssl-* applies to its own Ingress's paths only", "--proxy-ssl-location-only=true") : same("the host's first proxy-ssl-secret with ca.crt also covers its paths without proxy-ssl-*, as Portico");
  },
  "relative-redirects": (val) => {
    const b = bool(val, false);
    return b === null ? bad("a boolean") : b ? flag("permanent-redirect and temporal-redirect URLs starting with / are sent as written (absolute_redirect off)", "--relative-redirects=true") : same("such URLs are made absolute, as Portico");
  },
  // config.go: a string, split on commas by template.go isLocationInLocationList; nginx.tmpl
  // leaves auth_request (auth-url, global-auth-url) and auth_basic/auth_digest out of a location
  // whose path as written starts with an entry.
  "no-auth-locations": (val) => {
    const list = val.split(",").map((x) => x.trim()).filter((x) => x !== "");
    if (list.length === 1 && list[0] === "/.well-known/acme-challenge") return same("/.well-known/acme-challenge, Portico's default (--no-auth-locations)");
    return flag("rule paths starting with these run no basic or external authentication", `--no-auth-locations=${list.join(",")}`);
  },
  // configmap.go ReadConfig: the global auth location nginx.tmpl gives every location without
  // an auth-url of its own (compile/global-auth.ts reads the values as those annotations).
  "global-auth-url": (val) =>
    val.trim() === ""
      ? same("empty: no global authentication (ingress-nginx cannot parse it as a URL either)")
      : flag("every route whose Ingress sets no auth-url and not enable-global-auth: \"false\" asks this auth service first (no-auth-locations exempt)", `--global-auth-url=${val.trim()}`),
  "global-auth-method": (val) => globalKey(val, "method of the global auth request", "global-auth-method"),
  "global-auth-signin": (val) => globalKey(val, "a 401 of the global auth service becomes a 302 to this URL", "global-auth-signin"),
  "global-auth-signin-redirect-param": (val) => globalKey(val, "query parameter of global-auth-signin carrying the original URL", "global-auth-signin-redirect-param"),
  "global-auth-response-headers": (val) => globalKey(val, "fields of the global auth service's 2xx answer set on the upstream request", "global-auth-response-headers"),
  "global-auth-request-redirect": (val) => globalKey(val, "X-Auth-Request-Redirect sent to the global auth service", "global-auth-request-redirect"),
  "global-auth-cache-key": (val) => globalKey(val, "global auth answers are cached under this key, per host and path", "global-auth-cache-key"),
  "global-auth-cache-duration": (val) => globalKey(val, "how long a cached global auth answer is kept, per status", "global-auth-cache-duration"),
  "global-auth-always-set-cookie": (val) => {
    const b = bool(val, false);
    return b === null ? bad("a boolean") : flag(b ? "the global auth service's Set-Cookie is added to every answer" : "the global auth service's Set-Cookie is added to answers with status 200, 201, 204, 206, 301, 302, 303, 304, 307 or 308 only", `--global-auth-always-set-cookie=${b}`);
  },
  "global-auth-snippet": () => not("snippets are never applied: nginx configuration text (README, snippets)"),
  // config.go: a string, split on commas by template.go isLocationInLocationList.
  "no-tls-redirect-locations": (val) => {
    const list = val.split(",").map((x) => x.trim()).filter((x) => x !== "");
    if (list.length === 1 && list[0] === "/.well-known/acme-challenge") return same("/.well-known/acme-challenge, Portico's default (--no-tls-redirect-locations)");
    return flag("rule paths starting with these are never redirected to HTTPS", `--no-tls-redirect-locations=${list.join(",")}`);
  },
  // configmap.go: split on commas, trimmed, each kept if customheaders.ValidHeader.
  "global-allowed-response-headers": (val) => {
    const list = val.split(",").map((x) => x.trim()).filter((x) => x !== "");
    if (!list.every((x) => NGINX_HEADER_NAME.test(x))) return bad("header names separated by commas");
    return list.length === 0 ? same("none: custom-headers may set no header, as Portico") : flag("the response headers the custom-headers annotation may set", `--global-allowed-response-headers=${list.join(",")}`);
  },
  // nginx.go: store.GetConfigMap(value), a `namespace/name` key; a missing ConfigMap is a warning.
  "add-headers": (val) =>
    /^[^/\s]+\/[^/\s]+$/.test(val.trim()) ? flag("the ConfigMap's entries are set on every answer (variables expanded)", `--add-headers=${val.trim()}`) : bad("a ConfigMap as namespace/name"),
  "proxy-set-headers": (val) =>
    /^[^/\s]+\/[^/\s]+$/.test(val.trim()) ? flag("the ConfigMap's entries are set on every request sent to a pod (variables expanded)", `--proxy-set-headers=${val.trim()}`) : bad("a ConfigMap as namespace/name"),
  // configmap.go splitAndTrimSpace; nginx.tmpl: `deny` in the http block, `map`s checked by
  // every server. Each list is checked by its flag's own schema when applied.
  "block-cidrs": (val) => {
    const list = commaList(val);
    return list === "" ? same("empty: no client refused, as Portico") : flag("clients refused (403) on every host and path", `--block-cidrs=${list}`);
  },
  "block-user-agents": (val) => {
    const list = commaList(val);
    return list === "" ? same("empty: no User-Agent refused, as Portico") : flag("User-Agents refused (403) on every host and path (`~`/`~*`: regular expressions)", `--block-user-agents=${list}`);
  },
  "block-referers": (val) => {
    const list = commaList(val);
    return list === "" ? same("empty: no Referer refused, as Portico") : flag("Referers refused (403) on every host and path (`~`/`~*`: regular expressions)", `--block-referers=${list}`);
  },
  // ingress-nginx's ConfigMap lists apply to every Ingress without the annotation of the same kind, as these flags do.
  "whitelist-source-range": (val) => {
    const list = commaList(val);
    return list === "" ? same("empty: every client, as Portico") : flag("clients allowed on Ingresses without their own whitelist-source-range", `--allowlist-source-range=${list}`);
  },
  "denylist-source-range": (val) => {
    const list = commaList(val);
    return list === "" ? same("empty: no client refused, as Portico") : flag("clients refused on Ingresses without their own denylist-source-range", `--denylist-source-range=${list}`);
  },
  "limit-req-status-code": (val) => statusFlag(val, "status of a request over limit-rps or limit-rpm", "limit-req-status-code"),
  "limit-conn-status-code": (val) => statusFlag(val, "status of a request over limit-connections", "limit-conn-status-code"),
  // configmap.go: split on commas, Atoi, then filterErrors keeps 300-599 (others dropped with a warning).
  "custom-http-errors": (val) => {
    const codes = [...new Set(val.split(",").map((c) => c.trim()).filter((c) => /^\d{3}$/.test(c) && Number(c) >= 300 && Number(c) <= 599))];
    return codes.length === 0
      ? bad("status codes 300-599 separated by commas")
      : flag("these statuses are answered by --default-backend-service on routes without their own custom-http-errors", `--custom-http-errors=${codes.join(",")}`);
  },
  "load-balance": (val) => (val.trim() === "round_robin" ? same("round robin, as Portico") : not("Portico's global balancing is round robin")),
  "upstream-keepalive-connections": (val) =>
    val.trim() === "0" ? not("Portico keeps connections to the pods alive (ingress-nginx sends Connection: close with 0)") : same("connections to the pods are kept alive"),
  "upstream-keepalive-timeout": () => not("no setting in Portico: its HTTP client pools connections itself"),
  "upstream-keepalive-requests": () => not("no setting in Portico: its HTTP client pools connections itself"),
  // config.go ShowServerTokens; nginx.tmpl: server_tokens on (nginx names itself and its version) or off plus `more_clear_headers Server`.
  "server-tokens": (val) => {
    const b = bool(val, false);
    if (b === null) return bad("a boolean");
    return b
      ? flag("a Server field on every answer, the pod's replaced: Portico's name and version (portico/<version>), where nginx sends its own", "--server-header=portico")
      : flag("no Server field on any answer, the pod's dropped", "--server-header=none");
  },
  // config.go UseGzip, GzipLevel, GzipMinLength, GzipTypes, GzipDisable; nginx.tmpl's gzip block
  // (docs/design.md "Response compression").
  "use-gzip": (val) => {
    const b = bool(val, false);
    if (b === null) return bad("a boolean");
    return b ? flag("gzip answers of gzip-types, from gzip-min-length bytes, to clients whose Accept-Encoding allows it (Vary: Accept-Encoding)", "--gzip=true") : same("off, as Portico");
  },
  "gzip-level": (val) => {
    const n = val.trim();
    if (!/^[1-9]$/.test(n)) return bad("a level 1-9");
    return n === "1" ? same("1, Portico's --gzip-level default too") : flag("gzip level", `--gzip-level=${n}`);
  },
  "gzip-min-length": (val) => {
    const n = val.trim();
    if (!/^\d{1,9}$/.test(n)) return bad("a length in bytes");
    return n === "256" ? same("256, Portico's --gzip-min-length default too") : flag("answers declaring fewer bytes are not gzipped", `--gzip-min-length=${Number(n)}`);
  },
  // nginx.tmpl writes the value as gzip_types' arguments: types separated by spaces.
  "gzip-types": (val) => {
    const types = val.split(/\s+/).filter((t) => t !== "");
    if (types.length === 0) return bad("media types separated by spaces");
    return flag("media types gzipped (text/html always)", `--gzip-types=${types.join(",")}`);
  },
  "gzip-disable": (val) => {
    const t = val.trim();
    if (t === "") return same("none, as Portico");
    return flag("clients whose User-Agent matches are not sent gzip (case-insensitive; msie6: MSIE 4-6)", `--gzip-disable=${t}`);
  },
  // config.go EnableBrotli, BrotliLevel, BrotliMinLength, BrotliTypes; nginx.tmpl's brotli block.
  "enable-brotli": (val) => {
    const b = bool(val, false);
    if (b === null) return bad("a boolean");
    return b ? flag("brotli for answers of brotli-types, from brotli-min-length bytes, to clients whose Accept-Encoding has br (before gzip)", "--brotli=true") : same("off, as Portico");
  },
  "brotli-level": (val) => {
    const n = val.trim();
    if (!/^\d{1,2}$/.test(n) || Number(n) > 11) return bad("a level 0-11");
    return n === "4" ? same("4, Portico's --brotli-level default too") : flag("brotli quality", `--brotli-level=${Number(n)}`);
  },
  "brotli-min-length": (val) => {
    const n = val.trim();
    if (!/^\d{1,9}$/.test(n)) return bad("a length in bytes");
    return n === "20" ? same("20, Portico's --brotli-min-length default too") : flag("answers declaring fewer bytes are not brotli-compressed", `--brotli-min-length=${Number(n)}`);
  },
  "brotli-types": (val) => {
    const types = val.split(/\s+/).filter((t) => t !== "");
    if (types.length === 0) return bad("media types separated by spaces");
    return flag("media types brotli-compressed (text/html always)", `--brotli-types=${types.join(",")}`);
  },
  "enable-underscores-in-headers": (val) => (bool(val, false) === true ? flag("forward header names with underscores", "--enable-underscores-in-headers") : same("dropped, as Portico")),
  "worker-processes": (val) => (/^\d+$/.test(val.trim()) ? flag("data-plane processes", `--workers=${val.trim()}`) : same("auto: Portico also follows the CPUs")),
  // nginx.tmpl: `{{ if or $cfg.DisableAccessLog $cfg.DisableHTTPAccessLog }} access_log off;` in
  // the http block; the stream block (tcp-services, udp-services) has its own, and Portico
  // proxies no TCP or UDP services, so it has no stream access log to turn off.
  "disable-access-log": accessLogOff,
  "disable-http-access-log": accessLogOff,
  "disable-stream-access-log": (val) =>
    bool(val, false) === null ? bad("a boolean") : same("Portico proxies no TCP or UDP services (tcp-services, udp-services), so it writes no stream access log"),
  // defaults.Backend LimitRate / LimitRateAfter: the value of every location whose annotation is
  // absent or invalid (ratelimit/main.go); template.go writes `limit_rate <n>k;` only for n > 0.
  "limit-rate": kibJudge("limit-rate", "KiB per second", "each response body at most this many KiB per second (after limit-rate-after), for Ingresses without the annotation", "no limit, as Portico"),
  "limit-rate-after": kibJudge("limit-rate-after", "KiB", "KiB of each response sent before limit-rate applies, for Ingresses without the annotation", "0, as Portico"),
  // defaults.Backend ProxyBuffering "off", ProxyBufferSize "4k", ProxyBuffersNumber 4: nginx.tmpl
  // writes them into every location (proxy_buffering, proxy_buffer_size, proxy_buffers N size)
  // whose annotation does not say otherwise (annotations/proxy/main.go). nginx reads on/off in
  // any case (ngx_conf_set_flag_slot) and a size with k or m (ngx_parse_size); another value
  // fails the reload, so the last good configuration stays. The sizes and counts are read with
  // the annotations' own schemas (annotations/buffering.ts).
  "proxy-buffering": (val) => {
    const b = val.trim().toLowerCase();
    if (b !== "on" && b !== "off") return bad("on or off");
    return b === "on"
      ? flag("a streamed answer reaches the client a proxy-buffer-size buffer at a time, or at its end, for Ingresses without the annotation", "--proxy-buffering=true")
      : same("off, as Portico");
  },
  "proxy-buffer-size": (val) => {
    const r = v.safeParse(ResponseBufferSize, val);
    if (!r.success) return bad("a size such as 4k or 16k");
    const text = "the buffers' size with proxy-buffering on (at most 1m is held); the largest upstream header block stays --max-response-header-size";
    return r.output === 4096 ? same(`4k, Portico's default too: ${text}`) : flag(text, `--proxy-buffer-size=${val.trim().toLowerCase()}`);
  },
  "proxy-buffers-number": (val) => {
    if (!v.is(BuffersNumber, val)) return bad("a number of buffers");
    return same("changes nothing the client gets: nginx reads that many buffers ahead of a slow client (then a temp file), Portico holds one and reads the pod as the client takes the answer");
  },
  // nginx.tmpl: `log_format upstreaminfo {{ if $cfg.LogFormatEscapeNone }}escape=none {{ else if
  // $cfg.LogFormatEscapeJSON }}escape=json {{ end }}'{{ $cfg.LogFormatUpstream }}';`, the format
  // of every access-log line (log/template.ts). Without log-format-upstream Portico keeps its
  // own fields, where ingress-nginx would write its default format (config.go logFormatUpstream):
  // ABSENT below says so, and names the flag value for that format.
  "log-format-upstream": (val) => {
    // The flag reads this text as the name of ingress-nginx's default format, not as a format
    // that logs a constant line, as nginx would.
    if (val === INGRESS_NGINX_LOG_FORMAT_NAME) return not(`a format of the text "${INGRESS_NGINX_LOG_FORMAT_NAME}" alone: --access-log-template takes that as the name of ingress-nginx's default format`);
    const r = parseLogFormat(val);
    if (!r.ok) return bad(`an nginx log format: ${r.why}`);
    return flag("each access-log line is this format, nginx variables expanded (read at start)", `--access-log-template=${val}`);
  },
  "log-format-escape-none": (val) => {
    const b = bool(val, false);
    if (b === null) return bad("a boolean");
    return b ? flag("log-format-upstream's variables written unescaped (control characters still \\xHH)", "--access-log-escape=none") : same("nginx's default escaping, as Portico");
  },
  "log-format-escape-json": (val, data) => {
    const b = bool(val, false);
    if (b === null) return bad("a boolean");
    if (!b) return same("nginx's default escaping, as Portico");
    if (bool(data["log-format-escape-none"], false) === true) return same("log-format-escape-none wins, as nginx.tmpl checks it first");
    return flag("log-format-upstream's variables escaped as JSON strings", "--access-log-escape=json");
  },
  // config.go defaults (Backend): proxy-redirect-from/-to and proxy-cookie-domain/-path `off`;
  // proxy/main.go gives each to an Ingress whose annotation of the same name is absent or
  // invalid (compile/plan.ts, annotations/proxy-rewrite.ts parseProxyRewrite).
  "proxy-redirect-from": (val) => (val.trim() === "off" ? same("off, as Portico") : flag("proxy_redirect's first word for Ingresses without the annotation", `--proxy-redirect-from=${val.trim()}`)),
  "proxy-redirect-to": (val) => (val.trim() === "off" ? same("off, as Portico") : flag("proxy_redirect's second word for Ingresses without the annotation", `--proxy-redirect-to=${val.trim()}`)),
  "proxy-cookie-domain": (val) => (val.trim() === "off" ? same("off, as Portico") : flag("proxy_cookie_domain for Ingresses without the annotation", `--proxy-cookie-domain=${val.trim()}`)),
  "proxy-cookie-path": (val) => (val.trim() === "off" ? same("off, as Portico") : flag("proxy_cookie_path for Ingresses without the annotation", `--proxy-cookie-path=${val.trim()}`)),
  "allow-snippet-annotations": () => ({ status: "read", text: "read with annotations-risk-level: it decides whether ingress-nginx ran, dropped or refused snippets (see each snippet above)", flags: [] }),
  "annotations-risk-level": () => ({ status: "read", text: "read with allow-snippet-annotations (see each snippet above)", flags: [] }),
};

/** ingress-nginx defaults that differ from Portico's: reported when the key is absent. */
const ABSENT: Readonly<Record<string, Omit<ConfigMapKeyReport, "key" | "value">>> = {
  "proxy-body-size": flag("ingress-nginx's default limit is 1m; Portico has none unless told", "--max-body-size=1m"),
  "hsts-include-subdomains": flag("ingress-nginx adds includeSubDomains to Strict-Transport-Security by default; Portico does not unless told", "--hsts-include-subdomains=true"),
  "log-format-upstream": flag(
    "ingress-nginx writes its default access-log line (config.go logFormatUpstream) when the key is absent; Portico writes its own JSON fields unless told, and takes that format by name",
    `--access-log-template=${INGRESS_NGINX_LOG_FORMAT_NAME}`,
  ),
  "server-tokens": flag("ingress-nginx sends no Server field by default (the pod's dropped); Portico passes on the pod's unless told", "--server-header=none"),
};

/** Every key of the ConfigMap, and the defaults that differ, as the report states them. */
export function configMapReport(cm: NginxConfigMap): ConfigMapReport {
  const keys: ConfigMapKeyReport[] = [];
  for (const key of Object.keys(cm.data).sort()) {
    const value = cm.data[key] as string;
    const judge = KEYS[key];
    keys.push({ key, value, ...(judge ? judge(value, cm.data) : not("no Portico equivalent")) });
  }
  for (const [key, r] of Object.entries(ABSENT)) if (cm.data[key] === undefined) keys.push({ key, value: null, ...r });
  keys.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const flags = [...new Set(keys.flatMap((k) => k.flags))];
  return { configMap: `${cm.namespace}/${cm.name}`, keys, flags, notHonoured: keys.filter((k) => k.status === "not-honoured").length };
}
