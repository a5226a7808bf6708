// ingress-nginx's defaults where they differ from Portico's, and which one --ingress-nginx-compat
// serves. Facts from ingress-nginx v1.15.1: internal/ingress/controller/config/config.go
// (NewDefault), rootfs/etc/nginx/template/nginx.tmpl, and nginx's own defaults where the template
// sets nothing. One table: parse.ts applies the "ingress-nginx" rows' values under
// --ingress-nginx-compat (a flag, its PORTICO_* twin or a --nginx-configmap key still wins),
// the migration report names them when no ConfigMap is given, and the README's table is
// checked against it (test/readme.test.ts).
import type { Config } from "./types.ts";

export interface NginxDefault {
  /** ingress-nginx's ConfigMap key (or the nginx directive when no key sets it). */
  readonly setting: string;
  /** ingress-nginx's value, as its ConfigMap would spell it. */
  readonly nginx: string;
  /** The Portico flag for the same thing (Config field and flag name), or null when Portico has none. */
  readonly flag: keyof Config | null;
  readonly flagName: string | null;
  /** Portico's default, as --help says it. */
  readonly portico: string;
  /** Which default --ingress-nginx-compat serves. */
  readonly compat: "ingress-nginx" | "portico";
  /** With compat "ingress-nginx": the flag's text that does what ingress-nginx does. */
  readonly flagValue?: string;
  /** Why, in a sentence: what a request sees. */
  readonly note: string;
}

export const NGINX_DEFAULTS: readonly NginxDefault[] = Object.freeze([
  {
    setting: "proxy-body-size",
    nginx: "1m",
    flag: "maxBodySize",
    flagName: "max-body-size",
    portico: "unlimited",
    compat: "ingress-nginx",
    flagValue: "1m",
    note: "a request body over 1 MiB gets 413 (the proxy-body-size annotation raises it per Ingress, as in ingress-nginx)",
  },
  {
    setting: "hsts-include-subdomains",
    nginx: "true",
    flag: "hstsIncludeSubdomains",
    flagName: "hsts-include-subdomains",
    portico: "false",
    compat: "ingress-nginx",
    flagValue: "true",
    note: "Strict-Transport-Security carries includeSubDomains",
  },
  {
    setting: "client-body-timeout",
    nginx: "no minimum rate",
    flag: "clientBodyMinRate",
    flagName: "client-body-min-rate",
    portico: "500 bytes/s",
    compat: "ingress-nginx",
    flagValue: "0",
    note: "nginx's client_body_timeout bounds each wait between two reads and nothing else: a slow upload that never pauses that long is not cut",
  },
  {
    setting: "proxy-buffer-size",
    nginx: "4k",
    flag: "maxResponseHeaderSize",
    flagName: "max-response-header-size",
    portico: "64k",
    compat: "portico",
    note: "nginx answers 502 to a response whose status line and headers pass 4k; Portico reads the proxy-buffer-size annotation for the response buffers only (proxy-buffering), not for this limit, so a 4k limit would break routes whose Ingress raises it in ingress-nginx",
  },
  {
    // nginx's proxy_read_timeout re-arms between two reads of a body (ngx_http_upstream.c,
    // ngx_http_upstream_process_non_buffered_request; ngx_event_pipe.c) and on every event of a
    // WebSocket tunnel (ngx_http_upstream_process_upgraded); config.go NewDefault: 60.
    setting: "proxy-read-timeout",
    nginx: "60s, also between two reads of a response body and in a quiet WebSocket",
    flag: "streamIdleTimeoutMs",
    flagName: "stream-idle-timeout",
    portico: "5m",
    compat: "ingress-nginx",
    flagValue: "60s",
    note: "a response body with no bytes from the pod for 60 s is cut, a WebSocket quiet both ways for 60 s is closed; the proxy-read-timeout annotation and ConfigMap key set this idle time with the response deadline, as nginx's one timer, and a given --response-timeout does too",
  },
  {
    // config.go NewDefault: ShowServerTokens false; nginx.tmpl: `more_clear_headers Server`.
    setting: "server-tokens",
    nginx: "false (no Server header at all)",
    flag: "serverHeader",
    flagName: "server-header",
    portico: "backend",
    compat: "ingress-nginx",
    flagValue: "none",
    note: "no Server field on any answer: the pod's is dropped (nginx's proxy module hides it, and allow-backend-server-header is false by default) and Portico adds none, as ingress-nginx clears nginx's own",
  },
  {
    // ngx_http_proxy_module: proxy_hide_header's default list (ngx_http_proxy_hide_headers);
    // ingress-nginx's template adds only `proxy_pass_header Server` (allow-backend-server-header).
    setting: "proxy_hide_header (nginx)",
    nginx: "Date, Server, X-Pad, X-Accel-Expires, X-Accel-Redirect, X-Accel-Limit-Rate, X-Accel-Buffering, X-Accel-Charset",
    flag: null,
    flagName: null,
    portico: "every field of the pod's answer is passed on",
    compat: "ingress-nginx",
    note: "the pod's Date, X-Pad and those X-Accel-* fields do not reach the client and the Date is Portico's own, as nginx writes its own; Portico acts on X-Accel-Buffering (proxy-buffering, with or without this setting) and, for a buffered answer as nginx does, on X-Accel-Limit-Rate (limit-rate), and drops the others, where nginx also acts on X-Accel-Redirect (an internal redirect), X-Accel-Expires and X-Accel-Charset",
  },
  {
    // config.go NewDefault: ComputeFullForwardedFor false; nginx.tmpl: X-Forwarded-For $remote_addr.
    setting: "compute-full-forwarded-for",
    nginx: "false",
    flag: "computeFullForwardedFor",
    flagName: "compute-full-forwarded-for",
    portico: "true",
    compat: "ingress-nginx",
    flagValue: "false",
    note: "behind a --trusted-proxies peer, X-Forwarded-For upstream is the client address alone, not the peer's list with the peer appended",
  },
  {
    setting: "ssl-ciphers",
    nginx: "ECDHE and DHE with AES-GCM or CHACHA20-POLY1305",
    flag: "tlsCiphers",
    flagName: "tls-ciphers",
    portico: "ECDHE with AES-GCM or CHACHA20-POLY1305",
    compat: "portico",
    note: "Bun's TLS (BoringSSL) has no finite-field DHE suites; TLS 1.3 and every ECDHE client are served the same",
  },
] satisfies NginxDefault[]);

/** Flag values --ingress-nginx-compat applies unless the flag is given. */
export const NGINX_COMPAT_FLAG_DEFAULTS: Readonly<Partial<Record<keyof Config, string>>> = Object.freeze(
  Object.fromEntries(NGINX_DEFAULTS.flatMap((d) => (d.compat === "ingress-nginx" && d.flag !== null && d.flagValue !== undefined ? [[d.flag, d.flagValue]] : []))),
);
